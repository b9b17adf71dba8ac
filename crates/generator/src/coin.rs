//! A coin the generated chain created and its wallet can spend: the one
//! record the wallet, the planners and the signer pass between them.

use ibex_primitives::{Amount, Height, OutPoint, SpentCoin};

use crate::keys::KeyPool;
use crate::script_kind::ScriptKind;

/// Core's COINBASE_MATURITY: blocks before a coinbase output may be spent.
pub const COINBASE_MATURITY_BLOCKS: u32 = ibex_consensus::limits::COINBASE_MATURITY;

/// An unspent output the wallet can sign for: an outpoint and a
/// [`SpentCoin`]'s fields, with the key that locks it in place of the
/// script (the key pool derives the script, [`Coin::spent_coin`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coin {
    /// Where it is.
    pub outpoint: OutPoint,
    /// Its value.
    pub value: Amount,
    /// How it is locked.
    pub kind: ScriptKind,
    /// Key pool index of its (first) key.
    pub key_index: u32,
    /// Height of the block that created it.
    pub height: u32,
    /// Whether a coinbase created it.
    pub is_coinbase: bool,
}

impl Coin {
    /// The coin as an input spending it sees it (what the signer hashes),
    /// its script from `keys`.
    pub fn spent_coin<'a>(&self, keys: &'a KeyPool) -> SpentCoin<'a> {
        SpentCoin {
            value: self.value,
            script_pubkey: keys.script_pubkey(self.kind, self.key_index),
            height: Height::new(self.height),
            is_coinbase: self.is_coinbase,
        }
    }
}
