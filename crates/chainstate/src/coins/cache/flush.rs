//! Flushes on the connecting thread: a map's DIRTY entries written as
//! the state at a block, through the database's ingest protocol (sorted
//! tables) or its batch protocol; and the end of a background flush,
//! which a flush waits for first so that later writes never overtake it.

use std::ops::Range;
use std::sync::Arc;

use ibex_primitives::BlockHash;

use super::{CoinsCache, FlushMode};
use crate::coins::coin_map::{CoinMap, Entry as MapEntry, Shard};
use crate::coins::database::ingest::TableFlush;
use crate::coins::database::key_order::{keyed, sort_in_key_order, KeyedCoinWrite};
use crate::coins::database::{CoinsDatabase, FlushStats};
use crate::coins::entry::CacheEntry;
use crate::error::ChainstateError;

impl CoinsCache {
    /// Writes every DIRTY entry to the database as the state at `best_block`,
    /// in batches, then erases spent entries and, per `mode`, keeps the
    /// unspent ones clean or empties the cache.
    pub fn flush(
        &mut self,
        best_block: BlockHash,
        mode: FlushMode,
    ) -> Result<FlushStats, ChainstateError> {
        self.finish_background_flush()?;
        self.flush_epoch += 1;
        let stats = write_dirty_in_parallel(&self.database, &self.map, best_block)?;
        match mode {
            FlushMode::EmptyCache => {
                self.map = self.new_map();
                self.script_heap_bytes = 0;
            }
            FlushMode::KeepCoins => {
                self.map.retain(|_, entry| entry.coin().is_some());
                self.map.values_mut().for_each(|entry| entry.set_flags(0));
            }
        }
        self.dirty_count = 0;
        crate::coins::heap::release_free_memory();
        Ok(stats)
    }

    /// Waits for the background flush, if any, and drops (or, for
    /// [`FlushMode::KeepCoins`], takes back as clean entries) its coins.
    pub fn finish_background_flush(&mut self) -> Result<Option<FlushStats>, ChainstateError> {
        let Some(flush) = self.background.take() else { return Ok(None) };
        let stats = flush.writer.join().map_err(|_| ChainstateError::FlushThreadPanicked)??;
        if let Ok(frozen) = Arc::try_unwrap(flush.frozen) {
            if frozen.mode == FlushMode::KeepCoins {
                self.absorb(frozen.map.into_map());
            }
        }
        // The frozen table and the writer's batches are free now: given
        // back if the process holds more than its bound.
        crate::coins::heap::release_free_memory();
        Ok(Some(stats))
    }

    /// Takes back a written map's unspent coins where the live map has none.
    fn absorb(&mut self, map: CoinMap) {
        for (outpoint, entry) in map {
            let Some(coin) = entry.into_coin() else { continue };
            if let MapEntry::Vacant(slot) = self.map.entry(outpoint) {
                self.script_heap_bytes += coin.heap_bytes();
                slot.insert(CacheEntry::new(Some(coin), 0));
            }
        }
    }
}

impl Drop for CoinsCache {
    fn drop(&mut self) {
        // A clean shutdown lets the writer finish; its result is only
        // lost if it failed, which the next start's replay repairs.
        let _ = self.finish_background_flush();
    }
}

/// Writes `map`'s dirty entries as one flush to `best_block`, encoding and
/// writing coin batches on every thread of the global pool (the head
/// record is written first and the best block last, so the crash rules of
/// [`crate::coins::database`] hold whatever the order of the batches between).
///
/// # Napkin math
/// A whole-cache flush is ~3 us a coin on one thread (encoding, RocksDB's
/// write-ahead log and memtable): 2 M coins take ~6.5 s. RocksDB inserts
/// into its memtable from several writers at once, so two threads take
/// ~3.5 s. Each thread's batches are at most `-dbbatchsize` divided by the
/// thread count, so the batches in memory at once stay within one
/// `-dbbatchsize`.
fn write_dirty_in_parallel(
    database: &CoinsDatabase,
    map: &CoinMap,
    best_block: BlockHash,
) -> Result<FlushStats, ChainstateError> {
    use rayon::prelude::*;
    if database.ingests_flushes() {
        return ingest_map(database, map, best_block);
    }
    let mut writer = database.begin_flush(best_block)?;
    writer.write_head()?;
    let batch_bytes_max = database.flush_batch_bytes_max() / rayon::current_num_threads().max(1);
    let stats = map
        .par_iter()
        .filter(|(_, entry)| entry.is_dirty())
        .try_fold(
            || database.coin_batches(batch_bytes_max),
            |mut batches, (outpoint, entry)| {
                match entry.coin() {
                    Some(coin) => batches.put(outpoint, coin)?,
                    None => {
                        assert!(!entry.is_fresh(), "spent FRESH entries are erased at spend");
                        batches.erase(outpoint)?;
                    }
                }
                Ok::<_, ChainstateError>(batches)
            },
        )
        .map(|batches| batches.and_then(|batches| batches.finish()))
        .try_reduce(FlushStats::default, |mut total, stats| {
            total += stats;
            Ok(total)
        })?;
    writer.add_stats(stats);
    writer.finish()
}

/// The shards table `table` of `table_count` holds, among `shard_count`:
/// neighbouring shards, so neighbouring key ranges
/// ([`crate::coins::coin_map::shard_index`]).
pub(in crate::coins) fn table_shards(
    table: usize,
    table_count: usize,
    shard_count: usize,
) -> Range<usize> {
    let table_count = table_count.max(1);
    table * shard_count / table_count..(table + 1) * shard_count / table_count
}

/// The dirty entries of `shards` as writes in key order
/// ([`sort_in_key_order`]).
pub(in crate::coins) fn sorted_dirty_writes<'a>(
    shards: impl Iterator<Item = &'a Shard>,
) -> Vec<KeyedCoinWrite<'a>> {
    let mut writes: Vec<KeyedCoinWrite<'a>> = shards
        .flat_map(|shard| shard.iter())
        .filter(|(_, entry)| entry.is_dirty())
        .map(|(outpoint, entry)| {
            // A spent entry here is never FRESH: it is an erasure to write.
            debug_assert!(entry.is_in_state_table(), "{entry:?}");
            keyed((outpoint, entry.coin()))
        })
        .collect();
    sort_in_key_order(&mut writes);
    writes
}

/// Writes the dirty entries of `map` as one flush to `new_tip` in the
/// database's [`CoinsDatabase::flush_table_count`] tables (a synchronous
/// flush: the map is kept, and only one table's order is in memory at a
/// time).
pub(in crate::coins) fn ingest_map(
    database: &CoinsDatabase,
    map: &CoinMap,
    new_tip: BlockHash,
) -> Result<FlushStats, ChainstateError> {
    let shards = map.shards();
    let table_count = database.flush_table_count().clamp(1, shards.len());
    let mut flush = TableFlush::begin(database, new_tip, table_count)?;
    for table in 0..table_count {
        let group = &shards[table_shards(table, table_count, shards.len())];
        flush.ingest_part(&sorted_dirty_writes(group.iter()))?;
    }
    flush.finish()
}
