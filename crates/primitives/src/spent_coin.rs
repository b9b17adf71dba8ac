//! The coin an input spends, as every rule that reads one sees it:
//! [`SpentCoin`] borrowed (validation, sighash, the JSON writers) and
//! [`SpentCoinBuf`] owned (undo data handed across threads, a replayed UTXO
//! set).
//!
//! It is Core's `Coin` (the output, the height that created it, whether a
//! coinbase did) without its place: where the coin sits is the spending
//! input's outpoint. The types that store coins keep their own layouts and
//! convert here in one function each: the chainstate's compressed cache
//! entry (`Coin::as_spent_coin`), [`crate::txoutset::Coin`] (a coin with
//! its outpoint, for the UTXO-set hashes), the generator's wallet coin (a
//! key instead of a script).
//!
//! # Cost
//! [`SpentCoin`] is 32 bytes (value 8, script slice 16, height 4, flag 1,
//! padding) and borrows the script: building one from a stored coin copies
//! no script byte and allocates nothing.

use crate::amount::Amount;
use crate::height::Height;

/// A coin an input spends, borrowing its script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpentCoin<'a> {
    /// Its value. A coin is an output that passed CheckTransaction, so its
    /// value is in the money range; the storage that hands it in checks
    /// that when it decodes it.
    pub value: Amount,
    /// The locking script.
    pub script_pubkey: &'a [u8],
    /// Height of the block that created it.
    pub height: Height,
    /// Whether a coinbase created it.
    pub is_coinbase: bool,
}

impl SpentCoin<'_> {
    /// An owned copy (copies the script).
    pub fn to_buf(&self) -> SpentCoinBuf {
        SpentCoinBuf {
            value: self.value,
            script_pubkey: self.script_pubkey.to_vec(),
            height: self.height,
            is_coinbase: self.is_coinbase,
        }
    }
}

/// A coin an input spends, owning its script: for coins read from undo data
/// or kept in a map, which outlive the bytes they were decoded from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpentCoinBuf {
    /// Its value (in the money range, as [`SpentCoin::value`]).
    pub value: Amount,
    /// The locking script.
    pub script_pubkey: Vec<u8>,
    /// Height of the block that created it.
    pub height: Height,
    /// Whether a coinbase created it.
    pub is_coinbase: bool,
}

impl SpentCoinBuf {
    /// The borrowed form the rules and writers take.
    #[inline]
    pub fn as_spent_coin(&self) -> SpentCoin<'_> {
        SpentCoin {
            value: self.value,
            script_pubkey: &self.script_pubkey,
            height: self.height,
            is_coinbase: self.is_coinbase,
        }
    }
}

impl From<SpentCoin<'_>> for SpentCoinBuf {
    fn from(coin: SpentCoin<'_>) -> SpentCoinBuf {
        coin.to_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owned_form_round_trips() {
        let script = [0x51u8];
        let coin = SpentCoin {
            value: Amount::from_sat_u32(5),
            script_pubkey: &script,
            height: Height::new(3),
            is_coinbase: true,
        };
        let owned = SpentCoinBuf::from(coin);
        assert_eq!(owned.as_spent_coin(), coin);
        if cfg!(target_pointer_width = "64") {
            assert_eq!(std::mem::size_of::<SpentCoin<'_>>(), 32);
        }
    }
}
