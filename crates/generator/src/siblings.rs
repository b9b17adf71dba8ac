//! Competing children of one parent at the end of the chain: invalid
//! siblings of the chain's last valid block, written around it in the file,
//! optionally with a valid child of that block after them all.
//!
//! This is the shape of a chain recorded from Bitcoin Core's functional
//! tests: several blocks at the same height, all children of the tip, the
//! first ones invalid in file order and the valid one later. A node must end
//! at the valid one (or its child), whatever the order, as Core's
//! `ActivateBestChain` goes on to the next most-work candidate after each
//! failure (ties broken by the order in which blocks were received).
//!
//! The valid chain is exactly the chain generated without the siblings
//! (each sibling is built on a copy of the parent's state with its own
//! random stream), so "the UTXO set of the valid chain alone" is that of
//! the same options without [`SiblingTail`].

use ibex_primitives::BlockHash;
use serde::Serialize;

use crate::chain::{BlockMaker, ChainState};
use crate::error::GeneratorError;
use crate::invalid::{build_invalid_block, InvalidClass};
use crate::random::DeterministicRng;

/// Random stream of the first sibling; sibling `i` uses this plus `i`, so
/// two siblings of one class are still different blocks.
const STREAM_SIBLINGS: u64 = 64;

/// A mix of the classes that fail only when connected (two script
/// failures first, as in the chain recorded from Core's functional tests,
/// then a coinbase paying too much, a missing input, a third script
/// failure, a double spend): tests take the first k as their invalid
/// siblings.
pub const MIXED_SIBLING_CLASSES: [InvalidClass; 6] = [
    InvalidClass::InvalidSignature,
    InvalidClass::InvalidSignature,
    InvalidClass::CoinbaseOverpays,
    InvalidClass::MissingCoin,
    InvalidClass::InvalidSignature,
    InvalidClass::DoubleSpend,
];

/// Fewest blocks a chain with siblings can have: the invalid classes spend
/// mature coinbase outputs (100 blocks deep) below the siblings' parent.
pub const SIBLING_CHAIN_BLOCKS_MIN: u32 = 122;

/// Invalid siblings of the chain's last valid block (or of the one below
/// it, with [`SiblingTail::valid_child`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiblingTail {
    /// The invalid siblings, in file order, each broken as its class.
    pub invalid: Vec<InvalidClass>,
    /// Where the valid sibling goes among them: 0 before all of them,
    /// `invalid.len()` after all of them.
    pub valid_position: usize,
    /// Whether the valid sibling's own valid child follows them all.
    pub valid_child: bool,
}

impl SiblingTail {
    /// Blocks of the valid chain above the siblings' parent.
    pub fn valid_blocks(&self) -> u32 {
        if self.valid_child {
            2
        } else {
            1
        }
    }

    /// Checks the tail against a chain of `block_count` blocks.
    pub fn validate(&self, block_count: u32) -> Result<(), GeneratorError> {
        if self.invalid.is_empty() {
            return Err(GeneratorError::InvalidOption("--invalid-siblings needs a class"));
        }
        if self.valid_position > self.invalid.len() {
            return Err(GeneratorError::InvalidOption(
                "--valid-sibling-position is past the last invalid sibling",
            ));
        }
        if block_count < SIBLING_CHAIN_BLOCKS_MIN {
            return Err(GeneratorError::InvalidOption(
                "--invalid-siblings needs at least 122 blocks",
            ));
        }
        Ok(())
    }

    /// The siblings on `parent` (the state below the valid sibling), each
    /// with its own random stream; `parent` is unchanged.
    pub fn build(
        &self,
        maker: &BlockMaker<'_>,
        parent: &ChainState,
        seed: u64,
    ) -> Result<Vec<Sibling>, GeneratorError> {
        let mut siblings = Vec::with_capacity(self.invalid.len());
        for (number, class) in self.invalid.iter().enumerate() {
            let mut state = parent.clone();
            state.rng = DeterministicRng::new(seed, STREAM_SIBLINGS + number as u64);
            let block = build_invalid_block(maker, &state, *class)?;
            siblings.push(Sibling {
                class: *class,
                hash: block.block_hash(),
                bytes: block.encode(),
            });
        }
        Ok(siblings)
    }

    /// What the manifest records of the tail.
    pub fn record(&self) -> SiblingTailRecord {
        SiblingTailRecord {
            invalid: self.invalid.iter().map(|class| class.name().to_owned()).collect(),
            valid_position: self.valid_position,
            valid_child: self.valid_child,
        }
    }
}

/// One invalid sibling, ready to write.
#[derive(Debug, Clone)]
pub struct Sibling {
    /// How it is broken.
    pub class: InvalidClass,
    /// Its hash.
    pub hash: BlockHash,
    /// Its serialisation.
    pub bytes: Vec<u8>,
}

/// The tail as the manifest records it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct SiblingTailRecord {
    /// The invalid siblings' classes, in file order.
    pub invalid: Vec<String>,
    /// Where the valid sibling is among them.
    pub valid_position: usize,
    /// Whether its valid child follows.
    pub valid_child: bool,
}

/// Parses `--invalid-siblings`: class names separated by commas.
pub fn parse_classes(text: &str) -> Result<Vec<InvalidClass>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(|name| {
            InvalidClass::from_name(name).ok_or_else(|| format!("unknown invalid class {name:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_lists_parse_and_unknown_names_are_refused() {
        assert_eq!(
            parse_classes("invalid_signature, coinbase_overpays,missing_coin").unwrap(),
            vec![
                InvalidClass::InvalidSignature,
                InvalidClass::CoinbaseOverpays,
                InvalidClass::MissingCoin
            ]
        );
        assert!(parse_classes("invalid_signature,nonsense").is_err());
    }

    #[test]
    fn tails_are_checked_against_the_chain() {
        let tail = SiblingTail {
            invalid: vec![InvalidClass::InvalidSignature],
            valid_position: 1,
            valid_child: true,
        };
        assert!(tail.validate(260).is_ok());
        assert!(tail.validate(121).is_err());
        assert!(SiblingTail { valid_position: 2, ..tail.clone() }.validate(260).is_err());
        assert!(SiblingTail { invalid: Vec::new(), valid_position: 0, ..tail }
            .validate(260)
            .is_err());
    }
}
