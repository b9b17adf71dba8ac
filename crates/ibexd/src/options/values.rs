//! Values of `ibexd`'s options read as Bitcoin Core reads them: block hashes
//! and chain work in `uint256::FromUserHex`'s syntax, byte strings in
//! `TryParseHex`'s, and what `-assumevalid` names.

use ibex_primitives::params::Params;
use ibex_primitives::{BlockHash, ChainWork, U256};

/// Which block `-assumevalid` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssumeValid {
    /// Not given: the chain's built-in block (`Params::default_assume_valid`).
    Default,
    /// `-assumevalid=0` (or `-noassumevalid`): check every script.
    Disabled,
    /// This block and its ancestors skip script checks.
    Block(BlockHash),
}

impl AssumeValid {
    /// The block whose ancestors skip script checks on the chain of
    /// `params`, if any: [`AssumeValid::Default`] is the chain's built-in
    /// block (none on regtest).
    pub fn resolve(self, params: &Params) -> Option<BlockHash> {
        match self {
            AssumeValid::Disabled => None,
            AssumeValid::Block(hash) => Some(hash),
            AssumeValid::Default => params.default_assume_valid,
        }
    }
}

/// Core's `uint256::FromUserHex`: an optional `0x`, then up to 64 hex
/// digits; the 64 digits, left-padded with zeros, most significant first.
fn user_hex_digits(text: &str) -> Option<String> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.len() > 64 || !digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return None;
    }
    Some(format!("{digits:0>64}"))
}

/// `-assumevalid` as Core's `uint256::FromUserHex` reads it. Zero disables.
pub fn parse_assume_valid(text: &str) -> Option<AssumeValid> {
    let hash = BlockHash::from_hex(&user_hex_digits(text)?).ok()?;
    Some(if hash == BlockHash::ZERO { AssumeValid::Disabled } else { AssumeValid::Block(hash) })
}

/// `-minimumchainwork` as Core's `uint256::FromUserHex` reads it: up to 64
/// hex digits, an optional `0x` (`-nominimumchainwork` is zero).
pub fn parse_minimum_chain_work(text: &str) -> Option<ChainWork> {
    let value = U256::from_hex(&user_hex_digits(text)?).ok()?;
    Some(ChainWork::from_u256(value))
}

/// `-testassumeutxo=<height>:<block hash>:<hash_serialized_3>:<chain
/// transaction count>` (regtest only): an AssumeUTXO entry for tests, the
/// hashes in display order as `getblockhash` and `dumptxoutset` print them.
pub fn parse_assumeutxo_entry(text: &str) -> Option<ibex_primitives::params::AssumeUtxoEntry> {
    let mut fields = text.split(':');
    let height = fields.next()?.parse::<u32>().ok()?;
    let block_hash = BlockHash::from_hex(fields.next()?).ok()?;
    let hash_serialized = ibex_primitives::Hash256(BlockHash::from_hex(fields.next()?).ok()?.0);
    let chain_transaction_count = fields.next()?.parse::<u64>().ok()?;
    if fields.next().is_some() || chain_transaction_count == 0 {
        return None;
    }
    Some(ibex_primitives::params::AssumeUtxoEntry {
        height,
        block_hash,
        hash_serialized,
        chain_transaction_count,
    })
}

/// Core's `TryParseHex`: pairs of hex digits (either case), whitespace
/// skipped between pairs but not inside one; `None` for anything else or a
/// lone digit. The empty string is the empty script.
pub fn parse_hex_like_core(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut parsed = Vec::with_capacity(bytes.len() / 2);
    let mut position = 0;
    while position < bytes.len() {
        if matches!(bytes[position], b' ' | b'\x0c' | b'\n' | b'\r' | b'\t' | b'\x0b') {
            position += 1;
            continue;
        }
        let high = hex_digit(bytes[position])?;
        let low = hex_digit(*bytes.get(position + 1)?)?;
        parsed.push(high << 4 | low);
        position += 2;
    }
    Some(parsed)
}

fn hex_digit(byte: u8) -> Option<u8> {
    char::from(byte).to_digit(16).map(|digit| digit as u8)
}
