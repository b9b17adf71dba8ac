//! A run of coins serialised on one thread and hashed on another: the
//! parallel `gettxoutsetinfo` and `dumptxoutset` walks split the coin set
//! into key ranges walked by several threads, each filling a
//! [`SerializedCoins`], and one thread adds the runs to a
//! [`TxOutSetHasher`] in key order ([`TxOutSetHasher::add_serialized`]).
//! `hash_serialized_3` is one SHA-256 stream over every coin, so only its
//! compression can not be split; the serialisation, the counts and the
//! order checks can.

use super::{bogo_size, serialize_coin, Coin, CoinOrderError};
use crate::transaction::OutPoint;

/// Coins in Core's database order, serialised as `TxOutSer` with their
/// statistics, for [`TxOutSetHasher::add_serialized`](super::TxOutSetHasher::add_serialized).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SerializedCoins {
    bytes: Vec<u8>,
    /// Where each coin's serialisation ends in `bytes` (MuHash hashes each
    /// coin apart).
    coin_ends: Vec<usize>,
    first: Option<OutPoint>,
    last: Option<OutPoint>,
    pub(super) transactions: u64,
    pub(super) txouts: u64,
    pub(super) bogosize: u64,
    /// `None` once the sum overflowed `i64`, as Core reports it.
    pub(super) total_amount: Option<i64>,
}

/// Whether `next`, following `previous` in database order, starts a new
/// transaction; an error when it does not follow it.
pub(super) fn starts_transaction(
    previous: Option<OutPoint>,
    next: OutPoint,
) -> Result<bool, CoinOrderError> {
    match previous {
        Some(previous) if next <= previous => Err(CoinOrderError {
            previous_txid: previous.txid,
            previous_vout: previous.vout,
            next_txid: next.txid,
            next_vout: next.vout,
        }),
        Some(previous) => Ok(previous.txid != next.txid),
        None => Ok(true),
    }
}

impl SerializedCoins {
    /// An empty run.
    pub fn new() -> SerializedCoins {
        SerializedCoins { total_amount: Some(0), ..SerializedCoins::default() }
    }

    /// Appends `coin`, which must follow the last one in database order
    /// (see [`TxOutSetHasher`](super::TxOutSetHasher)).
    pub fn push(&mut self, coin: &Coin<'_>) -> Result<(), CoinOrderError> {
        let new_transaction = starts_transaction(self.last, coin.outpoint)?;
        self.first.get_or_insert(coin.outpoint);
        self.last = Some(coin.outpoint);
        self.transactions += u64::from(new_transaction);
        self.txouts += 1;
        self.bogosize += bogo_size(coin.script_pubkey);
        self.total_amount =
            self.total_amount.and_then(|total| total.checked_add(coin.value.to_sat()));
        serialize_coin(coin, &mut self.bytes);
        self.coin_ends.push(self.bytes.len());
        Ok(())
    }

    /// Coins in the run.
    pub fn len(&self) -> u64 {
        self.txouts
    }

    /// Whether the run has no coin.
    pub fn is_empty(&self) -> bool {
        self.txouts == 0
    }

    /// The first and last coins' outpoints, `None` for an empty run.
    pub fn bounds(&self) -> Option<(OutPoint, OutPoint)> {
        Some((self.first?, self.last?))
    }

    /// Every coin's serialisation, one after another.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Each coin's serialisation in turn.
    pub fn coins(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.coin_ends.iter().copied());
        starts.zip(self.coin_ends.iter().copied()).map(|(start, end)| &self.bytes[start..end])
    }
}
