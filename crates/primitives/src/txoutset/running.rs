//! Statistics kept up to date as blocks add and spend coins (what Core's coin
//! statistics index stores per block).

use super::{bogo_size, serialize_coin, Coin};
use crate::hash::Hash256;
use crate::muhash::MuHash3072;

/// The order-independent part of `gettxoutsetinfo`, updated coin by coin:
/// `muhash`, `txouts`, `bogosize` and `total_amount`. (`transactions` needs to
/// know whether other coins of the same txid remain, so it is not kept here.)
///
/// Adding a coin twice or removing one never added is not detected: the caller's
/// UTXO set decides what exists.
#[derive(Debug, Clone)]
pub struct RunningTxOutSetStats {
    muhash: MuHash3072,
    txouts: u64,
    bogosize: u64,
    total_amount: Option<i64>,
    buffer: Vec<u8>,
}

impl Default for RunningTxOutSetStats {
    fn default() -> Self {
        Self::new()
    }
}

impl RunningTxOutSetStats {
    /// The empty set.
    pub fn new() -> Self {
        Self {
            muhash: MuHash3072::new(),
            txouts: 0,
            bogosize: 0,
            total_amount: Some(0),
            buffer: Vec::with_capacity(128),
        }
    }

    /// A coin was created.
    pub fn add_coin(&mut self, coin: &Coin<'_>) {
        self.buffer.clear();
        serialize_coin(coin, &mut self.buffer);
        self.muhash.insert(&self.buffer);
        self.txouts = self.txouts.saturating_add(1);
        self.bogosize = self.bogosize.saturating_add(bogo_size(coin.script_pubkey));
        self.total_amount =
            self.total_amount.and_then(|total| total.checked_add(coin.value.to_sat()));
    }

    /// A coin was spent.
    pub fn remove_coin(&mut self, coin: &Coin<'_>) {
        self.buffer.clear();
        serialize_coin(coin, &mut self.buffer);
        self.muhash.remove(&self.buffer);
        self.txouts = self.txouts.saturating_sub(1);
        self.bogosize = self.bogosize.saturating_sub(bogo_size(coin.script_pubkey));
        self.total_amount =
            self.total_amount.and_then(|total| total.checked_sub(coin.value.to_sat()));
    }

    /// The set's MuHash3072 digest (one modular inverse, ~30 µs).
    pub fn muhash(&self) -> Hash256 {
        self.muhash.finalize()
    }

    /// The running MuHash3072 state, for storing or combining.
    pub fn muhash_state(&self) -> &MuHash3072 {
        &self.muhash
    }

    /// Coins in the set.
    pub fn txouts(&self) -> u64 {
        self.txouts
    }

    /// Sum of [`bogo_size`] over the set.
    pub fn bogosize(&self) -> u64 {
        self.bogosize
    }

    /// Sum of the values in satoshis; `None` once it left `i64`.
    pub fn total_amount(&self) -> Option<i64> {
        self.total_amount
    }
}
