//! Flushes that do not stop validation: the cache's whole map is frozen
//! (moved out in O(1)) and written to the database by a writer thread
//! while validation goes on in a fresh map on top of it.
//!
//! # Why it is safe
//! - Reads: a miss in the live map looks in the frozen map before the
//!   database. Every key the writer touches is in the frozen map, so the
//!   database is only read for keys whose records are not changing. A
//!   frozen unspent coin is copied into the live map as clean (the
//!   database will hold it once the write ends); a frozen spent entry means
//!   "no coin" (the database still has the coin until the erase lands).
//! - Prefetch: requests leave out frozen keys, and results read before the
//!   freeze are discarded (the flush epoch changes).
//! - Order: a new flush first waits for the previous writer, so "clean"
//!   always means "equal to the database once pending writes end", and a
//!   later put or erase of a key never overtakes an earlier one.
//! - Crash: the writer brackets its batches with the head-blocks record
//!   exactly as a synchronous flush does; replay does not care which
//!   thread wrote.
//!
//! # Memory
//! While a writer runs, the frozen map still counts, and the live map may
//! grow to [`CoinsCache::background_headroom_bytes`] before validation
//! waits for the writer: peak memory is the cache limit plus that headroom.
//!
//! # Napkin math
//! Freezing is a pointer swap. Writing costs ~3 us a coin (encode, RocksDB
//! memtable insert): a full 440 MiB cache of ~2.5 M dirty coins takes ~7 s
//! on the writer thread, during which ~100-200 MiB of new coins fit in the
//! headroom at 2017-era rates, so validation rarely waits.

use std::sync::Arc;
use std::thread::JoinHandle;

use hashbrown::hash_map::Entry as MapEntry;
use ibex_primitives::{BlockHash, OutPoint};

use crate::cache::{CacheEntry, CoinsCache, FlushMode};
use crate::coin_map::CoinMap;
use crate::database::{CoinsDatabase, FlushStats, FLUSH_BATCH_BYTES_MIN};
use crate::error::ChainstateError;

/// Most memory the live map may take while a writer runs (also bounded by a
/// quarter of the cache limit).
pub const BACKGROUND_HEADROOM_BYTES_MAX: usize = 128 << 20;

/// Threads that write a background flush.
pub const BACKGROUND_WRITER_THREADS: usize = 2;

/// A map being written by a background flush.
#[derive(Debug)]
pub(crate) struct FrozenCoins {
    pub(crate) map: CoinMap,
    pub(crate) memory_bytes: usize,
    pub(crate) mode: FlushMode,
}

/// A background flush in progress.
#[derive(Debug)]
pub(crate) struct BackgroundFlush {
    pub(crate) frozen: Arc<FrozenCoins>,
    pub(crate) writer: JoinHandle<Result<FlushStats, ChainstateError>>,
}

/// Writes every dirty entry of `frozen` as the state at `best_block`, on
/// [`BACKGROUND_WRITER_THREADS`] threads: the head record first, then each
/// thread's share of the coins (by the first byte of the transaction id),
/// then the best block, so the crash rules of [`crate::database`] hold
/// whatever the order of the batches between.
///
/// # Napkin math
/// One writer thread does ~1 M coins a second (encode, sort, RocksDB's
/// write-ahead log and memtable insert): a 440 MiB cache of ~3 M dirty
/// coins took 3-3.5 s, longer than the ~2 s validation needs to fill the
/// headroom when scripts are skipped on the `utxo-heavy` chain, so
/// validation waited for it. RocksDB inserts into a memtable from several
/// writers at once; each thread walks the whole map (~10 ns an entry) and
/// keeps its share, so two threads take about half as long.
fn write_frozen(
    database: &CoinsDatabase,
    frozen: &FrozenCoins,
    best_block: BlockHash,
) -> Result<FlushStats, ChainstateError> {
    let mut writer = database.begin_flush(best_block)?;
    writer.write_head()?;
    let batch_bytes_max =
        (database.flush_batch_bytes_max() / BACKGROUND_WRITER_THREADS).max(FLUSH_BATCH_BYTES_MIN);
    let results: Vec<Result<FlushStats, ChainstateError>> = std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(BACKGROUND_WRITER_THREADS);
        for share in 1..BACKGROUND_WRITER_THREADS {
            let spawned = std::thread::Builder::new()
                .name("ibex-flush".to_owned())
                .spawn_scoped(scope, move || write_share(database, frozen, share, batch_bytes_max));
            handles.push(spawned.map_err(|source| ChainstateError::FlushThread { source }));
        }
        let mut results = vec![write_share(database, frozen, 0, batch_bytes_max)];
        for handle in handles {
            results.push(handle.and_then(|handle| {
                handle.join().map_err(|_| ChainstateError::FlushThreadPanicked)?
            }));
        }
        results
    });
    for stats in results {
        writer.add_stats(stats?);
    }
    writer.finish()
}

/// Writes the dirty entries of `frozen` whose transaction id's first byte
/// falls in `share` of [`BACKGROUND_WRITER_THREADS`].
fn write_share(
    database: &CoinsDatabase,
    frozen: &FrozenCoins,
    share: usize,
    batch_bytes_max: usize,
) -> Result<FlushStats, ChainstateError> {
    let mut batches = database.coin_batches(batch_bytes_max);
    let mine = |outpoint: &OutPoint| {
        usize::from(outpoint.txid.as_bytes()[0]) % BACKGROUND_WRITER_THREADS == share
    };
    for (outpoint, entry) in frozen.map.iter() {
        if !entry.is_dirty() || !mine(outpoint) {
            continue;
        }
        match &entry.coin {
            Some(coin) => batches.put(outpoint, coin)?,
            None => batches.erase(outpoint)?,
        }
    }
    batches.finish()
}

impl CoinsCache {
    /// How far the live map may grow while a background flush runs.
    pub fn background_headroom_bytes(&self) -> usize {
        (self.cache_bytes_max() / 4).min(BACKGROUND_HEADROOM_BYTES_MAX)
    }

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
        let map = std::mem::take(&mut self.map);
        self.script_heap_bytes = 0;
        self.dirty_count = 0;
        let frozen = Arc::new(FrozenCoins { map, memory_bytes: live_bytes, mode });
        let shared = frozen.clone();
        let database = self.database.clone();
        let writer = std::thread::Builder::new()
            .name("ibex-flush".to_owned())
            .spawn(move || write_frozen(&database, &shared, best_block))
            .map_err(|source| ChainstateError::FlushThread { source })?;
        self.background = Some(BackgroundFlush { frozen, writer });
        Ok(previous)
    }

    /// Collects a finished background flush without waiting; `None` if
    /// there is none or it is still writing.
    pub fn poll_background_flush(&mut self) -> Result<Option<FlushStats>, ChainstateError> {
        match &self.background {
            Some(flush) if flush.writer.is_finished() => self.finish_background_flush(),
            _ => Ok(None),
        }
    }

    /// Waits for the background flush, if any, and drops (or, for
    /// [`FlushMode::KeepCoins`], takes back as clean entries) its coins.
    pub fn finish_background_flush(&mut self) -> Result<Option<FlushStats>, ChainstateError> {
        let Some(flush) = self.background.take() else { return Ok(None) };
        let stats = flush.writer.join().map_err(|_| ChainstateError::FlushThreadPanicked)??;
        if let Ok(frozen) = Arc::try_unwrap(flush.frozen) {
            if frozen.mode == FlushMode::KeepCoins {
                self.absorb(frozen.map);
            }
        }
        // The frozen table and the writer's batches are free now.
        crate::heap::release_free_memory();
        Ok(Some(stats))
    }

    /// Takes back a written map's unspent coins where the live map has none.
    fn absorb(&mut self, map: CoinMap) {
        for (outpoint, entry) in map {
            let Some(coin) = entry.coin else { continue };
            if let MapEntry::Vacant(slot) = self.map.entry(outpoint) {
                self.script_heap_bytes += coin.heap_bytes();
                slot.insert(CacheEntry { coin: Some(coin), flags: 0 });
            }
        }
    }

    /// The frozen map's entry for `outpoint`: `Some(None)` for a spent
    /// entry, `None` when the frozen map does not have it (or there is none).
    pub(crate) fn frozen_lookup(&self, outpoint: &OutPoint) -> Option<Option<&crate::coin::Coin>> {
        let flush = self.background.as_ref()?;
        flush.frozen.map.get(outpoint).map(|entry| entry.coin.as_ref())
    }

    /// Bytes of the frozen map still held by a background flush.
    pub(crate) fn frozen_memory_bytes(&self) -> usize {
        self.background.as_ref().map_or(0, |flush| flush.frozen.memory_bytes)
    }
}

impl Drop for CoinsCache {
    fn drop(&mut self) {
        // A clean shutdown lets the writer finish; its result is only
        // lost if it failed, which the next start's replay repairs.
        let _ = self.finish_background_flush();
    }
}
