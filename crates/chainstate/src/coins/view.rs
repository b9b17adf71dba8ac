//! A coin set frozen at one moment and walked later on any thread: the
//! coins database as a RocksDB snapshot saw it, with the cache's changes
//! since the last flush copied over it.
//!
//! # Why not walk on the engine's thread
//! `dumptxoutset` writes every coin (mainnet: ~165 M coins, ~7 GB) and
//! `gettxoutsetinfo` hashes them: minutes and seconds of work. Core holds
//! `cs_main` while it flushes, hashes and opens its cursor, so validation
//! waits for the hash walk. Here the engine only copies and sorts the
//! cache's DIRTY entries (one entry is ~90 bytes: at `-dbcache=450` at most
//! ~5 M entries, ~1 s) and takes a RocksDB snapshot (microseconds), then
//! goes on connecting blocks while another thread walks the view. Flushes meanwhile
//! do not change what the view sees: RocksDB keeps the snapshot's versions
//! of keys written later, and tables ingested later get sequence numbers
//! above the snapshot's (`IngestExternalFileOptions::snapshot_consistency`,
//! on by default).
//!
//! # Memory
//! The copy is of DIRTY entries only, so it is at most the coins cache's
//! size (`-dbcache`'s share for the maps): while a view lives, the coins
//! can take up to twice that. Core flushes instead, holding `cs_main`
//! meanwhile; a flush first when the DIRTY part is large would bound the
//! copy, at the cost of that pause.
//!
//! A view holds the snapshot, so RocksDB cannot drop the versions it sees
//! until it is dropped: compactions keep the old coins meanwhile (a few
//! percent of the database per minute of IBD). Drop a view when done.

#![allow(unsafe_code)]

use std::cmp::Ordering;
use std::sync::Arc;

use ibex_primitives::OutPoint;
use rocksdb::{SnapshotWithThreadMode, DB};

use crate::coins::cache::CoinsCache;
use crate::coins::coin::Coin;
use crate::coins::database::key_order::key_order;
use crate::coins::database::CoinsDatabase;
use crate::error::ChainstateError;

/// A coin change the database does not hold yet: the coin, or `None` when
/// it was spent.
pub type CoinChange = (OutPoint, Option<Coin>);

/// The coin set of one moment (see the module docs).
pub struct CoinSetView {
    // Declared before `database`, so dropped before it: it points into the
    // database `database` keeps alive.
    snapshot: SnapshotWithThreadMode<'static, DB>,
    database: Arc<CoinsDatabase>,
    /// Changes over the snapshot, in the database's key order, one per
    /// outpoint.
    changes: Vec<CoinChange>,
}

impl std::fmt::Debug for CoinSetView {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CoinSetView")
            .field("database", &self.database)
            .field("changes", &self.changes.len())
            .finish_non_exhaustive()
    }
}

impl CoinSetView {
    /// The coins `database` holds now, with `changes` (any order, one per
    /// outpoint) over them.
    pub fn new(database: Arc<CoinsDatabase>, mut changes: Vec<CoinChange>) -> CoinSetView {
        let raw: *const DB = database.raw();
        // SAFETY: `raw` points into the `CoinsDatabase` that the `Arc`
        // stored beside the snapshot keeps alive, at a fixed address (an
        // `Arc`'s value never moves), and the snapshot is dropped before
        // that `Arc` (field order). The `'static` never leaves this type:
        // iterators made from the snapshot borrow the view.
        let database_for_snapshot: &'static DB = unsafe { &*raw };
        let snapshot = database_for_snapshot.snapshot();
        changes.sort_unstable_by(|left, right| key_order(&left.0, &right.0));
        debug_assert!(changes.windows(2).all(|pair| pair[0].0 != pair[1].0));
        CoinSetView { snapshot, database, changes }
    }

    /// Changes over the database applied on top of the view's, in place:
    /// a rolled-back view ([`crate::snapshot`]'s rollback) is the tip's
    /// view with the undo of each block after the target over it.
    pub fn apply_changes(&mut self, changes: Vec<CoinChange>) {
        let mut newer = changes;
        newer.sort_unstable_by(|left, right| key_order(&left.0, &right.0));
        let older = std::mem::take(&mut self.changes);
        let mut merged = Vec::with_capacity(older.len() + newer.len());
        let mut older = older.into_iter().peekable();
        for change in newer {
            while let Some(old) =
                older.next_if(|old| key_order(&old.0, &change.0) == Ordering::Less)
            {
                merged.push(old);
            }
            // The newer change replaces an older one at the same outpoint.
            older.next_if(|old| old.0 == change.0);
            merged.push(change);
        }
        merged.extend(older);
        self.changes = merged;
    }

    /// Every coin of the view in the database's key order (Core's cursor
    /// order: transaction id bytes, then the output index's VARINT).
    pub fn coins(&self) -> impl Iterator<Item = Result<(OutPoint, Coin), ChainstateError>> + '_ {
        let stored = self.database.iter_coins_in(Some(&self.snapshot));
        MergedCoins { stored: stored.peekable(), changes: self.changes.iter().peekable() }
    }

    /// The coins at `outpoints` in this view, in order (one database
    /// `MultiGet`, the view's changes over it).
    pub fn coins_at(&self, outpoints: &[OutPoint]) -> Result<Vec<Option<Coin>>, ChainstateError> {
        let mut coins = self.database.coins_in(&self.snapshot, outpoints)?;
        if self.changes.is_empty() {
            return Ok(coins);
        }
        for (outpoint, coin) in outpoints.iter().zip(coins.iter_mut()) {
            let found = self.changes.binary_search_by(|change| key_order(&change.0, outpoint));
            if let Ok(position) = found {
                coin.clone_from(&self.changes[position].1);
            }
        }
        Ok(coins)
    }

    /// The database under the view.
    pub fn database(&self) -> &Arc<CoinsDatabase> {
        &self.database
    }

    /// The RocksDB snapshot under the view's changes.
    pub(crate) fn snapshot(&self) -> &SnapshotWithThreadMode<'static, DB> {
        &self.snapshot
    }

    /// The view's changes whose transaction ids start with a 16-bit prefix
    /// in `prefixes` (big-endian first two bytes), in key order.
    pub(crate) fn changes_with_prefixes(&self, prefixes: std::ops::Range<u32>) -> &[CoinChange] {
        let prefix = |change: &CoinChange| {
            u32::from(u16::from_be_bytes([change.0.txid.0[0], change.0.txid.0[1]]))
        };
        // Key order sorts by transaction id first, so the prefixes ascend.
        let start = self.changes.partition_point(|change| prefix(change) < prefixes.start);
        let end = self.changes.partition_point(|change| prefix(change) < prefixes.end);
        &self.changes[start..end]
    }
}

/// The stored coins with the changes merged over them, in key order.
struct MergedCoins<'a, S: Iterator<Item = Result<(OutPoint, Coin), ChainstateError>>> {
    stored: std::iter::Peekable<S>,
    changes: std::iter::Peekable<std::slice::Iter<'a, CoinChange>>,
}

impl<S: Iterator<Item = Result<(OutPoint, Coin), ChainstateError>>> Iterator
    for MergedCoins<'_, S>
{
    type Item = Result<(OutPoint, Coin), ChainstateError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let stored_outpoint = match self.stored.peek() {
                Some(Ok((outpoint, _))) => Some(*outpoint),
                Some(Err(_)) => return self.stored.next(),
                None => None,
            };
            let change_first = match (stored_outpoint, self.changes.peek()) {
                (_, None) => return self.stored.next(),
                (None, Some(_)) => Ordering::Less,
                (Some(stored), Some((changed, _))) => key_order(changed, &stored),
            };
            if change_first == Ordering::Greater {
                return self.stored.next();
            }
            // The change replaces the stored coin at the same outpoint.
            if change_first == Ordering::Equal {
                self.stored.next();
            }
            let (outpoint, coin) = self.changes.next()?;
            if let Some(coin) = coin {
                return Some(Ok((*outpoint, coin.clone())));
            }
        }
    }
}

impl CoinsCache {
    /// The coin set this cache and its database hold now, as a view other
    /// threads can walk while the cache goes on (module docs): every entry
    /// that differs from the database (DIRTY in the live map, or in a
    /// background flush's frozen map and not changed again since) copied
    /// over a snapshot of the database.
    pub fn coin_set_view(&self) -> CoinSetView {
        let mut changes: Vec<CoinChange> = self
            .map
            .iter()
            .filter(|(_, entry)| entry.is_dirty())
            .map(|(outpoint, entry)| (*outpoint, entry.coin().cloned()))
            .collect();
        // The frozen shards still held (a released one is in the database
        // already), locked until the snapshot is taken: the writer cannot
        // release one between the copy and the snapshot.
        let frozen_shards = self.background.as_ref().map(|flush| flush.frozen.map.read_all());
        for shard in frozen_shards.iter().flatten().filter_map(|shard| shard.as_ref()) {
            // A live clean entry equals the frozen one; a live DIRTY entry
            // is newer than it.
            let frozen = shard.iter().filter(|(outpoint, entry)| {
                entry.is_dirty() && !self.map.get(outpoint).is_some_and(|live| live.is_dirty())
            });
            changes.extend(frozen.map(|(outpoint, entry)| (*outpoint, entry.coin().cloned())));
        }
        let view = CoinSetView::new(Arc::clone(&self.database), changes);
        drop(frozen_shards);
        view
    }
}

#[cfg(test)]
mod tests {
    use ibex_primitives::{Amount, BlockHash, Txid};

    use super::*;
    use crate::coins::cache::FlushMode;
    use crate::coins::database::DatabaseOptions;

    fn outpoint(byte: u8) -> OutPoint {
        OutPoint { txid: Txid([byte; 32]), vout: u32::from(byte) }
    }

    fn coin(satoshis: u32) -> Coin {
        Coin::new(Amount::from_sat_u32(satoshis), [0x51u8; 22], 5, false).unwrap()
    }

    fn walk(view: &CoinSetView) -> Vec<(OutPoint, Coin)> {
        view.coins().collect::<Result<Vec<_>, _>>().unwrap()
    }

    #[test]
    fn a_view_keeps_the_coins_of_its_moment_while_the_cache_flushes_on() {
        let directory = tempfile::tempdir().unwrap();
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        let mut cache = CoinsCache::new(Arc::new(database), 8 << 20);
        for byte in [1, 2, 3] {
            cache.add(&outpoint(byte), coin(u32::from(byte)), false).unwrap();
        }
        cache.flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        // Unflushed changes: one spent, one added, one replaced.
        cache.spend(&outpoint(2)).unwrap();
        cache.add(&outpoint(4), coin(4), false).unwrap();
        cache.spend(&outpoint(3)).unwrap();
        cache.add(&outpoint(3), coin(33), false).unwrap();
        let view = cache.coin_set_view();
        let expected =
            vec![(outpoint(1), coin(1)), (outpoint(3), coin(33)), (outpoint(4), coin(4))];
        assert_eq!(walk(&view), expected);

        // The cache goes on: spends and flushes, in batches and in tables.
        cache.spend(&outpoint(1)).unwrap();
        cache.add(&outpoint(5), coin(5), false).unwrap();
        cache.flush(BlockHash([2; 32]), FlushMode::EmptyCache).unwrap();
        cache.database().set_batch_flushes(true);
        cache.spend(&outpoint(4)).unwrap();
        cache.flush(BlockHash([3; 32]), FlushMode::EmptyCache).unwrap();
        assert_eq!(walk(&view), expected);
        let now = cache.coin_set_view();
        assert_eq!(walk(&now), vec![(outpoint(3), coin(33)), (outpoint(5), coin(5))]);

        // Changes applied over the view win over its own.
        let mut rolled_back = view;
        rolled_back.apply_changes(vec![
            (outpoint(4), None),
            (outpoint(2), Some(coin(2))),
            (outpoint(6), Some(coin(6))),
        ]);
        assert_eq!(
            walk(&rolled_back),
            vec![
                (outpoint(1), coin(1)),
                (outpoint(2), coin(2)),
                (outpoint(3), coin(33)),
                (outpoint(6), coin(6)),
            ]
        );
    }
}
