//! `gettxoutsetinfo` over the coins database: the walk of Core's
//! `ComputeUTXOStats`, in Core's order (txid bytes ascending, then output
//! index ascending as a number; the database's VARINT keys order indices
//! of 16,512 and above differently, so each txid's coins are gathered and
//! sorted before hashing).
//!
//! Two callers share the one walk ([`txoutset_stats_with_pending`]):
//! - a stopped node's database ([`txoutset_stats`], `ibex txoutsetinfo`);
//! - a running node at its tip ([`crate::CoinsCache::txoutset_stats`], the
//!   `gettxoutsetinfo` RPC), where the coins changed since the last flush
//!   are still in the cache: the walk merges the cache's DIRTY entries
//!   (sorted by outpoint) over the database's coins instead of flushing
//!   first, as Core does. A RocksDB iterator reads one point in time, so a
//!   background flush writing meanwhile cannot tear the walk: whatever part
//!   of the frozen map has landed, the frozen map's entries (merged too)
//!   give the same coins.

use ibex_primitives::txoutset::{Coin as SetCoin, TxOutSetHashType, TxOutSetHasher, TxOutSetStats};
use ibex_primitives::{OutPoint, Txid};

use crate::coins::coin::Coin;
use crate::coins::database::CoinsDatabase;
use crate::error::ChainstateError;

/// A coin state the database does not hold yet: the coin, or `None` when
/// it was spent (a cache entry that differs from the database).
pub type PendingCoin<'a> = (&'a OutPoint, Option<&'a Coin>);

/// Statistics and hash of every coin in `database` (a stopped node's, or
/// one whose cache was flushed).
pub fn txoutset_stats(
    database: &CoinsDatabase,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetStats, ChainstateError> {
    txoutset_stats_with_pending(database, &[], hash_type)
}

/// Statistics and hash of the coin set `database` holds with `pending`
/// applied over it. `pending` must be sorted by outpoint, each outpoint at
/// most once.
pub fn txoutset_stats_with_pending(
    database: &CoinsDatabase,
    pending: &[PendingCoin<'_>],
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetStats, ChainstateError> {
    debug_assert!(pending.windows(2).all(|pair| pair[0].0 < pair[1].0));
    let mut walk = MergedWalk { hasher: TxOutSetHasher::new(hash_type), pending, next_pending: 0 };
    let mut group: Vec<(OutPoint, Coin)> = Vec::new();
    let mut group_txid: Option<Txid> = None;
    for item in database.iter_coins() {
        let (outpoint, coin) = item?;
        if group_txid != Some(outpoint.txid) {
            walk.add_group(&mut group)?;
            group_txid = Some(outpoint.txid);
        }
        group.push((outpoint, coin));
    }
    walk.add_group(&mut group)?;
    walk.add_pending_below(None)?;
    Ok(walk.hasher.finish())
}

/// The hasher fed the database's coins and the pending ones in outpoint
/// order, a pending state replacing the database's.
struct MergedWalk<'a> {
    hasher: TxOutSetHasher,
    pending: &'a [PendingCoin<'a>],
    next_pending: usize,
}

impl MergedWalk<'_> {
    /// Hashes one txid's database coins in output index order, with the
    /// pending states ordered before and among them, and empties `group`.
    fn add_group(&mut self, group: &mut Vec<(OutPoint, Coin)>) -> Result<(), ChainstateError> {
        group.sort_unstable_by_key(|(outpoint, _)| outpoint.vout);
        for (outpoint, coin) in group.drain(..) {
            self.add_pending_below(Some(&outpoint))?;
            match self.pending.get(self.next_pending) {
                // The cache's state (a changed coin, or none when spent)
                // replaces the database's.
                Some((pending_outpoint, pending_coin)) if **pending_outpoint == outpoint => {
                    if let Some(pending_coin) = pending_coin {
                        add_coin(&mut self.hasher, &outpoint, pending_coin)?;
                    }
                    self.next_pending += 1;
                }
                _ => add_coin(&mut self.hasher, &outpoint, &coin)?,
            }
        }
        Ok(())
    }

    /// Hashes the pending coins ordered before `limit` (every one left when
    /// `limit` is `None`); spent ones are skipped.
    fn add_pending_below(&mut self, limit: Option<&OutPoint>) -> Result<(), ChainstateError> {
        while let Some((outpoint, coin)) = self.pending.get(self.next_pending) {
            if limit.is_some_and(|limit| *outpoint >= limit) {
                break;
            }
            if let Some(coin) = coin {
                add_coin(&mut self.hasher, outpoint, coin)?;
            }
            self.next_pending += 1;
        }
        Ok(())
    }
}

fn add_coin(
    hasher: &mut TxOutSetHasher,
    outpoint: &OutPoint,
    coin: &Coin,
) -> Result<(), ChainstateError> {
    let set_coin = SetCoin::from_spent(*outpoint, coin.as_spent_coin());
    hasher.add_coin(&set_coin).map_err(|source| ChainstateError::CoinOrder { source })
}

impl crate::coins::cache::CoinsCache {
    /// `gettxoutsetinfo` of the coin set this cache and its database hold
    /// now: the database's coins with every entry that differs from them
    /// (DIRTY in the live map, or in a background flush's frozen map and
    /// not changed again since) merged over them, without flushing.
    ///
    /// The extra memory is one 16-byte reference per DIRTY entry; the time
    /// is a walk of the whole database (see
    /// `ibex_primitives::txoutset` for the per-coin cost).
    pub fn txoutset_stats(
        &self,
        hash_type: TxOutSetHashType,
    ) -> Result<TxOutSetStats, ChainstateError> {
        let mut pending: Vec<PendingCoin<'_>> = self
            .map
            .iter()
            .filter(|(_, entry)| entry.is_dirty())
            .map(|(outpoint, entry)| (outpoint, entry.coin()))
            .collect();
        // The frozen shards still held (a released one is in the database
        // already), locked until the walk ends: the writer cannot free one
        // under it.
        let frozen_shards = self.background.as_ref().map(|flush| flush.frozen.map.read_all());
        for shard in frozen_shards.iter().flatten().filter_map(|shard| shard.as_ref()) {
            // A live clean entry equals the frozen one; a live DIRTY entry
            // is newer than it.
            let frozen = shard.iter().filter(|(outpoint, entry)| {
                entry.is_dirty() && !self.map.get(outpoint).is_some_and(|live| live.is_dirty())
            });
            pending.extend(frozen.map(|(outpoint, entry)| (outpoint, entry.coin())));
        }
        pending.sort_unstable_by(|a, b| a.0.cmp(b.0));
        txoutset_stats_with_pending(&self.database, &pending, hash_type)
    }
}
