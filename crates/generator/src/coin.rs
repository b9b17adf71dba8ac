//! A coin the generated chain created and its wallet can spend: the one
//! record the wallet, the planners and the signer pass between them.

use ibex_primitives::{Amount, OutPoint};

use crate::script_kind::ScriptKind;

/// Core's COINBASE_MATURITY: blocks before a coinbase output may be spent.
pub const COINBASE_MATURITY_BLOCKS: u32 = ibex_consensus::limits::COINBASE_MATURITY;

/// An unspent output the wallet can sign for.
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
