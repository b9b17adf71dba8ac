//! Flushes that do not stop validation: the cache's whole map is frozen
//! (moved out in O(1)) and written to the database by a writer thread
//! while validation goes on in a fresh map on top of it.
//!
//! # Why it is safe
//! - Reads: a miss in the live map looks in the frozen map before the
//!   database. Every key the writer touches is in the frozen map until
//!   its shard is written and freed, so the database is only read for
//!   keys whose records are not changing or have their final state
//!   (`frozen_map`). A
//!   frozen unspent coin is copied into the live map as clean (the
//!   database will hold it once the write ends); a frozen spent entry means
//!   "no coin" (the database still has the coin until the erase lands).
//! - Prefetch: a block's frozen unspent coins are copied into the live
//!   map first (clean, as a spend's read would), so a shard freed before
//!   the spend costs no read; database requests leave out frozen keys, and
//!   results read before the freeze are discarded (the flush epoch
//!   changes).
//! - Order: a new flush first waits for the previous writer, so "clean"
//!   always means "equal to the database once pending writes end", and a
//!   later put or erase of a key never overtakes an earlier one.
//! - Crash: the writer writes the flush as tables ingested one after
//!   another, the head-blocks record put by the first and erased by the
//!   last, as a synchronous flush does ([`crate::coins::database::ingest::TableFlush`]);
//!   on the batch path (`-dbcrashratio`) it brackets its batches with the
//!   same record. Replay does not care which thread wrote.
//!
//! # Memory
//! The live map and the frozen map share the cache's limit
//! ([`CoinsCache::limit_bytes`]). A flush starts when the live map
//! reaches the limit less [`CoinsCache::flush_headroom_bytes`] (a
//! sixteenth); the writer frees the frozen map a shard at a time as each
//! is written (`frozen_map`), and validation waits only while the
//! live map would pass what the writer has not given back yet
//! ([`CoinsCache::needs_room`]): the two maps together stay within the
//! limit. A periodic flush that keeps its coins ([`FlushMode::KeepCoins`])
//! frees nothing until it ends, so it is only made while the cache is at
//! most half full. A frozen map held whole until the writer ended, with
//! the live map growing by a quarter of the limit (at most 128 MiB)
//! meanwhile, would peak the maps at 1.25x the limit.
//!
//! Flushes are ingested as tables, and a shard's coins are readable nowhere
//! else until its table is in. Written as one table, the frozen map would be
//! held whole for the ~1 s the writer takes at `-dbcache=450`, and validation
//! would wait for room at every flush (14 s of a 40 s import). So the writer
//! writes the shards in groups of neighbouring key ranges, one table each
//! ([`crate::budget::DBCACHE_BYTES_PER_FLUSH_TABLE`]), and frees each group
//! once its table is in: at 450, eight tables, the waits come to 2.6 s in all,
//! the longest 0.5 s (docs/utxo-heavy.md).
//!
//! # Napkin math
//! Freezing is a pointer swap. On the batch path, writing costs ~3 us a coin (encode, RocksDB
//! memtable insert): a cache of ~2.3 M coins (~290 MiB at `-dbcache=450`)
//! takes ~7 s on the writer thread and frees a shard every ~0.35 s, while
//! validation adds ~14 MB of coins a second with scripts skipped (less
//! with them checked): the live map grows into the freed shards, and
//! validation waits only when the writer falls behind.

use std::sync::Arc;

use ibex_primitives::BlockHash;

use crate::coins::cache::flush::{sorted_dirty_writes, table_shards};
use crate::coins::cache::{BackgroundFlush, CoinsCache, FlushMode, FrozenCoins};
use crate::coins::coin_map::Shard;
use crate::coins::database::ingest::TableFlush;
use crate::coins::database::{CoinsDatabase, FlushStats, FlushWriter};
use crate::coins::entry::CacheEntry;
use crate::coins::frozen_map::FrozenMap;
use crate::error::ChainstateError;

/// Writes every dirty entry of `frozen` as the state at `best_block`, a
/// shard at a time; a flush that empties the cache frees each shard once
/// all its writes are in the database.
fn write_frozen(
    database: &CoinsDatabase,
    frozen: &FrozenCoins,
    best_block: BlockHash,
) -> Result<FlushStats, ChainstateError> {
    if database.ingests_flushes() {
        return ingest_frozen(database, frozen, best_block);
    }
    let mut writer = database.begin_flush(best_block)?;
    let release = frozen.mode == FlushMode::EmptyCache;
    for index in 0..frozen.map.shard_count() {
        let script_heap_bytes =
            frozen.map.with_shard(index, |shard| write_shard(&mut writer, shard))?;
        if release {
            writer.write_pending()?;
            frozen.map.release(index, script_heap_bytes);
        }
    }
    writer.finish()
}

/// Writes every dirty entry of `frozen` as the database's
/// [`CoinsDatabase::flush_table_count`] tables (at most one a shard),
/// one for each group of neighbouring shards, sorted, and ingests them
/// one after another, the highest keys first ([`TableFlush`]); a flush
/// that empties the cache frees each group's shards once its table is in
/// (their coins are readable nowhere else before).
fn ingest_frozen(
    database: &CoinsDatabase,
    frozen: &FrozenCoins,
    best_block: BlockHash,
) -> Result<FlushStats, ChainstateError> {
    let shard_count = frozen.map.shard_count();
    let table_count = database.flush_table_count().clamp(1, shard_count);
    let release = frozen.mode == FlushMode::EmptyCache;
    let mut flush = TableFlush::begin(database, best_block, table_count)?;
    for table in (0..table_count).rev() {
        let group = table_shards(table, table_count, shard_count);
        let script_heap_bytes: Vec<usize> = {
            let guards = frozen.map.read_range(group.clone());
            let held = || guards.iter().filter_map(|shard| shard.as_ref());
            flush.ingest_part(&sorted_dirty_writes(held()))?;
            let heap_bytes = |shard: Option<&Shard>| {
                shard.map_or(0, |shard| shard.values().map(CacheEntry::heap_bytes).sum())
            };
            guards.iter().map(|shard| heap_bytes(shard.as_ref())).collect()
        };
        if release {
            for (index, heap_bytes) in group.zip(script_heap_bytes) {
                frozen.map.release(index, heap_bytes);
            }
        }
    }
    flush.finish()
}

/// Writes `shard`'s dirty entries; returns the script bytes its coins hold
/// on the heap.
fn write_shard(
    writer: &mut FlushWriter<'_>,
    shard: Option<&Shard>,
) -> Result<usize, ChainstateError> {
    let Some(shard) = shard else { return Ok(0) };
    let mut script_heap_bytes = 0;
    for (outpoint, entry) in shard.iter() {
        script_heap_bytes += entry.heap_bytes();
        if !entry.is_dirty() {
            continue;
        }
        // A spent entry here is never FRESH: it is an erasure to write.
        debug_assert!(entry.is_in_state_table(), "{entry:?}");
        match entry.coin() {
            Some(coin) => writer.put(outpoint, coin)?,
            None => writer.erase(outpoint)?,
        }
    }
    Ok(script_heap_bytes)
}

impl CoinsCache {
    /// Whether a background flush is running or finished but not collected.
    pub fn has_background_flush(&self) -> bool {
        self.background.is_some()
    }

    /// Freezes the map and starts writing it as the state at `best_block`
    /// on a writer thread; waits for a previous one first. Returns the
    /// previous flush's statistics if one was collected.
    pub fn start_background_flush(
        &mut self,
        best_block: BlockHash,
        mode: FlushMode,
    ) -> Result<Option<FlushStats>, ChainstateError> {
        let previous = self.finish_background_flush()?;
        self.flush_epoch += 1;
        let live_bytes = self.live_memory_bytes();
        let fresh = self.new_map();
        let map = std::mem::replace(&mut self.map, fresh);
        self.script_heap_bytes = 0;
        self.dirty_count = 0;
        let frozen = Arc::new(FrozenCoins { map: FrozenMap::new(map, live_bytes), mode });
        let shared = frozen.clone();
        let database = self.database.clone();
        let writer = std::thread::Builder::new()
            .name("ibex-flush".to_owned())
            .spawn(move || write_frozen(&database, &shared, best_block))
            .map_err(|source| ChainstateError::FlushThread { source })?;
        self.background = Some(BackgroundFlush { frozen, writer });
        Ok(previous)
    }

    /// Whether a background flush's writer has ended (its result not yet
    /// collected).
    pub(crate) fn background_flush_finished(&self) -> bool {
        self.background.as_ref().is_some_and(|flush| flush.writer.is_finished())
    }

    /// Collects a finished background flush without waiting; `None` if
    /// there is none or it is still writing.
    pub fn poll_background_flush(&mut self) -> Result<Option<FlushStats>, ChainstateError> {
        match &self.background {
            Some(flush) if flush.writer.is_finished() => self.finish_background_flush(),
            _ => Ok(None),
        }
    }

    /// Whether validation must wait for the writer: the live map, grown for
    /// the next inserts, and what the writer still holds pass the limit.
    pub fn needs_room(&self) -> bool {
        self.background.is_some()
            && self.projected_live_bytes() + self.frozen_memory_bytes() > self.limit_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coins::coin::Coin;
    use crate::coins::database::DatabaseOptions;
    use ibex_primitives::{Amount, OutPoint, Txid};

    /// A cache of `limit_bytes` over a new database in `directory`.
    fn cache_in(directory: &std::path::Path, limit_bytes: usize) -> CoinsCache {
        let database = CoinsDatabase::open(directory, &DatabaseOptions::default()).unwrap();
        CoinsCache::new(Arc::new(database), limit_bytes)
    }

    fn outpoint(index: u32) -> OutPoint {
        let mut txid = [0u8; 32];
        txid[2..6].copy_from_slice(&index.to_le_bytes());
        // Spread over the shards as real txids are.
        txid[..2].copy_from_slice(&(index.wrapping_mul(40_503) as u16).to_be_bytes());
        OutPoint { txid: Txid(txid), vout: 0 }
    }

    fn coin(index: u32) -> Coin {
        Coin::new(Amount::from_sat_u32(index + 1), [0x51u8; 22], 7, false).unwrap()
    }

    /// Adds coins from `first` on until the cache asks for a flush;
    /// returns the next index.
    fn fill(cache: &mut CoinsCache, first: u32) -> u32 {
        let mut index = first;
        while !cache.is_full() {
            cache.add(&outpoint(index), coin(index), false).unwrap();
            index += 1;
        }
        index
    }

    fn wait_for_writer(cache: &CoinsCache) {
        while !cache.background_flush_finished() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    #[test]
    fn a_full_cache_flushes_before_its_tables_pass_the_trigger() {
        let directory = tempfile::tempdir().unwrap();
        for limit_bytes in [1 << 20, 6 << 20, 24 << 20] {
            let mut cache = cache_in(directory.path(), limit_bytes);
            fill(&mut cache, 0);
            let trigger = cache.limit_bytes() - cache.flush_headroom_bytes();
            let live = cache.live_memory_bytes();
            // Never past the trigger (a doubling ahead counts), and the
            // shards' count makes the table fill most of it.
            assert!(live <= trigger, "{limit_bytes}: {live} > {trigger}");
            assert!(live >= trigger * 3 / 4, "{limit_bytes}: {live} of {trigger}");
        }
    }

    #[test]
    fn a_flush_in_one_table_writes_erasures_and_frees_its_shards_once_in() {
        let directory = tempfile::tempdir().unwrap();
        let mut cache = cache_in(directory.path(), 4 << 20);
        assert!(cache.database().ingests_flushes());
        let count = fill(&mut cache, 0);
        // Half of them spent after a first flush: the second writes erasures.
        cache.flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        for index in (0..count).step_by(2) {
            cache.spend(&outpoint(index)).unwrap();
        }
        cache.start_background_flush(BlockHash([2; 32]), FlushMode::EmptyCache).unwrap();
        wait_for_writer(&cache);
        // One table (the default options): every shard held until it is
        // in, then all given back before the flush is collected.
        assert_eq!(cache.frozen_release_count(), cache.map.shard_count());
        assert_eq!(cache.frozen_memory_bytes(), 0);
        let stats = cache.finish_background_flush().unwrap().unwrap();
        assert_eq!(stats.coins_erased, u64::from(count.div_ceil(2)));
        assert_eq!(stats.batch_count, 1, "one table");
        let database = cache.database();
        assert_eq!(database.best_block().unwrap(), Some(BlockHash([2; 32])));
        assert_eq!(database.head_blocks().unwrap(), None);
        for index in 0..count {
            let expected = (index % 2 == 1).then(|| coin(index));
            assert_eq!(database.coin(&outpoint(index)).unwrap(), expected, "{index}");
        }
        let tables = std::fs::read_dir(database.tables_directory()).unwrap().count();
        assert_eq!(tables, 0, "each table moved into the database");
    }

    #[test]
    fn a_flush_in_tables_frees_each_group_of_shards_once_its_table_is_in() {
        let directory = tempfile::tempdir().unwrap();
        let options = DatabaseOptions { flush_table_count: 4, ..DatabaseOptions::default() };
        let database = CoinsDatabase::open(directory.path(), &options).unwrap();
        let mut cache = CoinsCache::new(Arc::new(database), 4 << 20);
        let count = fill(&mut cache, 0);
        let shard_count = cache.map.shard_count();
        cache.start_background_flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        wait_for_writer(&cache);
        // Every shard given back by the writer, group by group, before the
        // flush is collected.
        assert_eq!(cache.frozen_release_count(), shard_count);
        assert_eq!(cache.frozen_memory_bytes(), 0);
        for index in (0..count).step_by(89) {
            assert_eq!(cache.coin(&outpoint(index)).unwrap(), Some(coin(index)));
        }
        let stats = cache.finish_background_flush().unwrap().unwrap();
        assert_eq!(stats.batch_count, 4, "one table a group");
        assert_eq!(stats.coins_written, u64::from(count));
        let database = cache.database();
        assert_eq!(database.best_block().unwrap(), Some(BlockHash([1; 32])));
        assert_eq!(database.head_blocks().unwrap(), None);
        assert_eq!(std::fs::read_dir(database.tables_directory()).unwrap().count(), 0);
    }

    #[test]
    fn an_emptying_flush_gives_its_shards_back_as_it_writes_them() {
        let directory = tempfile::tempdir().unwrap();
        let mut cache = cache_in(directory.path(), 4 << 20);
        cache.database().set_batch_flushes(true);
        let count = fill(&mut cache, 0);
        let live = cache.live_memory_bytes();
        cache.start_background_flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        assert!(cache.frozen_memory_bytes() <= live);
        assert_eq!(cache.live_memory_bytes(), 0);
        wait_for_writer(&cache);
        // Every shard written and freed before the flush is collected; the
        // coins read from the database now.
        assert_eq!(cache.frozen_memory_bytes(), 0);
        assert!(!cache.needs_room());
        for index in (0..count).step_by(97) {
            assert_eq!(cache.coin(&outpoint(index)).unwrap(), Some(coin(index)));
        }
        let stats = cache.finish_background_flush().unwrap().unwrap();
        assert_eq!(stats.coins_written, u64::from(count));
        assert_eq!(cache.database().best_block().unwrap(), Some(BlockHash([1; 32])));
    }

    #[test]
    fn a_flush_keeping_its_coins_holds_them_and_validation_waits_for_room() {
        let directory = tempfile::tempdir().unwrap();
        let mut cache = cache_in(directory.path(), 4 << 20);
        let count = fill(&mut cache, 0);
        let live = cache.live_memory_bytes();
        cache.start_background_flush(BlockHash([2; 32]), FlushMode::KeepCoins).unwrap();
        wait_for_writer(&cache);
        assert_eq!(cache.frozen_memory_bytes(), live, "nothing freed while coins are kept");
        assert!(!cache.needs_room(), "the new live map has its headroom");
        // The live map grows into the limit the frozen map leaves.
        let mut index = count;
        while !cache.needs_room() {
            cache.add(&outpoint(index), coin(index), false).unwrap();
            index += 1;
        }
        assert!(cache.projected_live_bytes() + live > cache.limit_bytes());
        assert!(cache.live_memory_bytes() + live <= cache.limit_bytes() + cache.limit_bytes() / 8);
        cache.finish_background_flush().unwrap();
        assert!(!cache.needs_room(), "nothing to wait for once collected");
        // The kept coins came back clean beside the new ones.
        assert_eq!(cache.entry_count(), index as usize);
        assert_eq!(cache.dirty_count(), (index - count) as usize);
    }
}
