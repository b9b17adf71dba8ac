//! `gettxoutsetinfo` over coins walked in the database's key order: the
//! statistics of Core's `ComputeUTXOStats`, in Core's order (txid bytes
//! ascending, then output index ascending as a number; the database's
//! VARINT keys order indices of 16,512 and above differently, so each
//! txid's coins are gathered and sorted before hashing: [`GroupedHasher`]).
//!
//! The coins come from a stopped node's database ([`txoutset_stats`],
//! `ibex txoutsetinfo`) or from a [`CoinSetView`] of a running node (its
//! database as a snapshot saw it with the cache's unflushed changes over
//! it: [`crate::CoinSetView`]), walked on the asking thread while the
//! engine goes on.

use ibex_primitives::txoutset::{Coin as SetCoin, TxOutSetHashType, TxOutSetHasher, TxOutSetStats};
use ibex_primitives::{OutPoint, Txid};

use crate::coins::coin::Coin;
use crate::coins::database::CoinsDatabase;
use crate::coins::parallel_walk::{walk_in_parallel, WalkOutputs};
use crate::coins::view::CoinSetView;
use crate::error::ChainstateError;

/// Statistics and hash of every coin in `database` (a stopped node's, or
/// one whose cache was flushed).
pub fn txoutset_stats(
    database: &CoinsDatabase,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetStats, ChainstateError> {
    stats_of_coins(database.iter_coins(), hash_type)
}

/// Statistics and hash of `coins`, given in the database's key order.
pub fn stats_of_coins(
    coins: impl Iterator<Item = Result<(OutPoint, Coin), ChainstateError>>,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetStats, ChainstateError> {
    let mut hasher = GroupedHasher::new(hash_type);
    for item in coins {
        let (outpoint, coin) = item?;
        hasher.add(outpoint, coin)?;
    }
    hasher.finish()
}

/// A hasher fed coins in the database's key order that hashes each
/// transaction's coins in output index order, as Core's `ComputeUTXOStats`
/// does. Holds one transaction's coins at a time (bounded by the block
/// weight: ~111,000 outputs).
pub struct GroupedHasher {
    hasher: TxOutSetHasher,
    group: Vec<(OutPoint, Coin)>,
    group_txid: Option<Txid>,
}

impl std::fmt::Debug for GroupedHasher {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("GroupedHasher")
            .field("group", &self.group.len())
            .field("group_txid", &self.group_txid)
            .finish_non_exhaustive()
    }
}

impl GroupedHasher {
    /// A hasher of `hash_type` with no coin yet.
    pub fn new(hash_type: TxOutSetHashType) -> GroupedHasher {
        GroupedHasher {
            hasher: TxOutSetHasher::new(hash_type),
            group: Vec::new(),
            group_txid: None,
        }
    }

    /// Adds the coin at `outpoint`, after the last one in key order.
    pub fn add(&mut self, outpoint: OutPoint, coin: Coin) -> Result<(), ChainstateError> {
        if self.group_txid != Some(outpoint.txid) {
            self.hash_group()?;
            self.group_txid = Some(outpoint.txid);
        }
        self.group.push((outpoint, coin));
        Ok(())
    }

    /// The statistics of every coin added.
    pub fn finish(mut self) -> Result<TxOutSetStats, ChainstateError> {
        self.hash_group()?;
        Ok(self.hasher.finish())
    }

    fn hash_group(&mut self) -> Result<(), ChainstateError> {
        self.group.sort_unstable_by_key(|(outpoint, _)| outpoint.vout);
        for (outpoint, coin) in self.group.drain(..) {
            let set_coin = SetCoin::from_spent(outpoint, coin.as_spent_coin());
            self.hasher
                .add_coin(&set_coin)
                .map_err(|source| ChainstateError::CoinOrder { source })?;
        }
        Ok(())
    }
}

impl crate::coins::cache::CoinsCache {
    /// `gettxoutsetinfo` of the coin set this cache and its database hold
    /// now, without flushing: a walk of [`crate::CoinsCache::coin_set_view`].
    pub fn txoutset_stats(
        &self,
        hash_type: TxOutSetHashType,
    ) -> Result<TxOutSetStats, ChainstateError> {
        stats_of_view(&self.coin_set_view(), hash_type)
    }
}

/// Statistics and hash of the coins of `view`, walked on every core
/// (`coins::parallel_walk`).
pub fn stats_of_view(
    view: &CoinSetView,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetStats, ChainstateError> {
    let mut hasher = TxOutSetHasher::new(hash_type);
    walk_in_parallel(view, WalkOutputs { snapshot_records: false }, |chunk| {
        hasher
            .add_serialized(&chunk.serialized)
            .map_err(|source| ChainstateError::CoinOrder { source })
    })?;
    Ok(hasher.finish())
}
