//! The map a background flush writes ([`crate::coins::background`]): the cache's
//! shards, each behind a lock, so the writer can free a shard as soon as
//! its coins are in the database while validation still reads the others.
//!
//! # Why it is safe to free a shard early
//! A shard is released only after every write of its entries has been
//! handed to RocksDB (whose writes are visible to reads at once). A lookup
//! that finds the shard released reads the database, which by then holds
//! the shard's final states; a lookup that finds it still held reads it.
//! Keys of other shards are not touched by freeing this one.
//!
//! # Memory
//! [`FrozenMap::held_bytes`] starts at the frozen map's size and falls by
//! each shard's table and its coins' script bytes as it is released, so
//! the cache can let the live map grow into what the writer gave back.
//! Writing ~2.3 M coins in 20 shards at ~0.3 M coins a second on one
//! thread frees a shard every ~0.4 s, while validation adds at most ~14 MB
//! of coins a second (scripts skipped): the live map grows into freed
//! memory instead of into memory of its own.
//!
//! # Cost
//! A lookup takes the shard's read lock: ~20 ns uncontended, and the
//! writer holds only a read lock while it encodes a shard, so the two
//! contend only for the instant of a release.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use ibex_primitives::OutPoint;

use crate::coins::coin::Coin;
use crate::coins::coin_map::{new_shard, shard_index, CoinMap, Shard};

/// A frozen map; a released shard is `None`.
#[derive(Debug)]
pub(crate) struct FrozenMap {
    shards: Box<[RwLock<Option<Shard>>]>,
    held_bytes: AtomicUsize,
    /// Releases begun: counted before a shard is taken, so a lookup that
    /// finds a shard released then reads a count that includes it
    /// ([`FrozenMap::release_count`]).
    releases: AtomicUsize,
}

impl FrozenMap {
    /// Freezes `map`, which holds `held_bytes` (its tables and scripts).
    pub(crate) fn new(map: CoinMap, held_bytes: usize) -> FrozenMap {
        let shards = map.into_shards().into_vec().into_iter().map(|shard| RwLock::new(Some(shard)));
        FrozenMap {
            shards: shards.collect(),
            held_bytes: AtomicUsize::new(held_bytes),
            releases: AtomicUsize::new(0),
        }
    }

    fn read(&self, index: usize) -> RwLockReadGuard<'_, Option<Shard>> {
        self.shards[index].read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Shards of the map.
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Bytes the shards not yet released hold.
    pub(crate) fn held_bytes(&self) -> usize {
        self.held_bytes.load(Ordering::Acquire)
    }

    /// Shard releases begun so far. A reader that keeps a database
    /// iterator across lookups ([`crate::coins::bip30_reader`]) must make a new
    /// one when this changes: a shard released after the iterator was made
    /// holds writes the iterator's snapshot does not see. The count rises
    /// after the shard's writes reach RocksDB and before the shard is
    /// taken, so a lookup that found the shard gone reads a count that
    /// includes its release.
    pub(crate) fn release_count(&self) -> usize {
        self.releases.load(Ordering::SeqCst)
    }

    /// `visit` of the entry for `outpoint` (its coin, `None` when spent),
    /// or `None` when the map does not hold it (never had it, or its shard
    /// is released and written).
    pub(crate) fn lookup<R>(
        &self,
        outpoint: &OutPoint,
        visit: impl FnOnce(Option<&Coin>) -> R,
    ) -> Option<R> {
        let shard = self.read(shard_index(outpoint, self.shards.len()));
        let entry = shard.as_ref()?.get(outpoint)?;
        Some(visit(entry.coin()))
    }

    /// `visit` of shard `index` (`None` once released), under its read lock.
    pub(crate) fn with_shard<R>(&self, index: usize, visit: impl FnOnce(Option<&Shard>) -> R) -> R {
        visit(self.read(index).as_ref())
    }

    /// The shards' read locks, all at once (a released shard is `None`).
    pub(crate) fn read_all(&self) -> Vec<RwLockReadGuard<'_, Option<Shard>>> {
        self.read_range(0..self.shards.len())
    }

    /// The read locks of the shards in `indexes` (a released shard is
    /// `None`).
    pub(crate) fn read_range(
        &self,
        indexes: std::ops::Range<usize>,
    ) -> Vec<RwLockReadGuard<'_, Option<Shard>>> {
        indexes.map(|index| self.read(index)).collect()
    }

    /// Frees shard `index`, whose entries are all in the database now, and
    /// whose coins hold `script_heap_bytes` besides the table.
    pub(crate) fn release(&self, index: usize, script_heap_bytes: usize) {
        // Counted before the take (see `release_count`).
        self.releases.fetch_add(1, Ordering::SeqCst);
        let released = {
            let mut shard = self.shards[index].write().unwrap_or_else(PoisonError::into_inner);
            shard.take()
        };
        let Some(released) = released else { return };
        let freed_bytes = released.allocation_size() + script_heap_bytes;
        // Outside the lock: a large table is unmapped here.
        drop(released);
        let _ = self.held_bytes.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            Some(held.saturating_sub(freed_bytes))
        });
    }

    /// The map back, released shards empty.
    pub(crate) fn into_map(self) -> CoinMap {
        let shards = self.shards.into_vec().into_iter().map(|shard| {
            shard.into_inner().unwrap_or_else(PoisonError::into_inner).unwrap_or_else(new_shard)
        });
        CoinMap::from_shards(shards.collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coins::entry::CacheEntry;

    /// Script bytes the coins of `shard` hold on the heap.
    fn script_heap_bytes(shard: &Shard) -> usize {
        shard.values().map(CacheEntry::heap_bytes).sum()
    }
    use ibex_primitives::{Amount, Txid};

    fn outpoint(index: u32) -> OutPoint {
        let mut txid = [0u8; 32];
        txid[2..6].copy_from_slice(&index.to_le_bytes());
        txid[0] = index.wrapping_mul(7919) as u8;
        txid[1] = (index.wrapping_mul(104_729) >> 8) as u8;
        OutPoint { txid: Txid(txid), vout: 0 }
    }

    fn coin(script_bytes: usize) -> Coin {
        let script = vec![0x51u8; script_bytes];
        Coin::new(Amount::from_sat(5).unwrap_or(Amount::ZERO), script, 1, false)
            .unwrap_or_else(|_| unreachable!("valid coin"))
    }

    #[test]
    fn lookups_see_held_shards_and_releases_free_their_bytes() {
        let mut map = CoinMap::new(17);
        for index in 0..2000 {
            let entry = if index % 5 == 0 {
                CacheEntry::new(None, 1)
            } else {
                CacheEntry::new(Some(coin(if index % 2 == 0 { 100 } else { 20 })), 1)
            };
            map.insert(outpoint(index), entry);
        }
        let scripts: usize = map.iter().map(|(_, entry)| entry.heap_bytes()).sum();
        let held = map.allocation_size() + scripts;
        let frozen = FrozenMap::new(map, held);
        assert_eq!(frozen.held_bytes(), held);
        assert_eq!(frozen.lookup(&outpoint(5), |coin| coin.is_some()), Some(false), "spent");
        assert_eq!(frozen.lookup(&outpoint(7), |coin| coin.cloned()), Some(Some(coin(20))));
        assert_eq!(frozen.lookup(&outpoint(4000), |_| ()), None, "absent");
        let shard_of_seven = shard_index(&outpoint(7), 17);
        for index in 0..frozen.shard_count() {
            let heap = frozen.with_shard(index, |shard| shard.map_or(0, script_heap_bytes));
            frozen.release(index, heap);
            assert!(frozen.with_shard(index, |shard| shard.is_none()));
            if index == shard_of_seven {
                assert_eq!(frozen.lookup(&outpoint(7), |_| ()), None, "released");
            }
        }
        assert_eq!(frozen.held_bytes(), 0, "every byte given back, no more");
        frozen.release(0, 0);
        assert_eq!(frozen.into_map().len(), 0);
    }
}
