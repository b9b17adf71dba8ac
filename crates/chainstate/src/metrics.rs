//! What the engine publishes for monitoring (`ibexd -metrics`): counters
//! and levels as atomics in one [`ChainMetrics`] that any thread reads at
//! any time, without a lock and without a round trip to the engine.
//!
//! The engine already keeps its counters ([`crate::ChainStatistics`]) on
//! its own thread; it copies them here when it publishes a snapshot for
//! readers (after each settled block, each disconnected block, each new
//! best header) and after each flush. The two read-ahead queues count
//! their bytes and blocks here as they take and give back their budget
//! ([`QueueGauge`]). The coins database's I/O ([`crate::coins::database::io`]) is
//! not copied: a reader asks RocksDB for it when it wants it
//! ([`ChainMetrics::coins_database_io`]), through a weak reference that
//! keeps nothing open once the chainstate is gone.
//!
//! # Napkin math
//! A publish sums the cache's bytes and coins over its 16 shards (as each
//! `UpdateTip` already does) and stores 39 values with relaxed ordering
//! (26 of them the coin reads by age: [`crate::coins::coin_reads`]): uncontended
//! stores to lines no other thread writes. Together ~100-200 ns, against
//! the 0.1-8 ms a block takes to connect (at most a thousandth). A
//! read-ahead queue adds one atomic add when it takes a block's bytes and
//! one subtract when it gives them back, under the lock it takes anyway.
//!
//! # Consistency
//! Each value is as of a recent publish, but the values are not read at
//! one instant: a reader may see block N's `blocks_connected` beside block
//! N+1's `transactions_connected`. Counters never go down (they are the
//! engine's counters since open, copied, never reset).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use crate::coins::coin_reads::{CoinReadCounts, COIN_AGE_RANGES, COIN_SOURCES};
use crate::coins::database::io::CoinsDatabaseIo;
use crate::coins::database::CoinsDatabase;

/// Upper bounds of the flush duration histogram's buckets, milliseconds
/// (a flush of a few MiB takes tens of milliseconds, a mainnet flush of a
/// 16 GiB cache minutes; beyond the last bound a flush counts only in the
/// total).
pub const FLUSH_DURATION_BUCKETS_MS: [u64; 12] =
    [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000];

const _: () = {
    let mut index = 1;
    while index < FLUSH_DURATION_BUCKETS_MS.len() {
        assert!(FLUSH_DURATION_BUCKETS_MS[index - 1] < FLUSH_DURATION_BUCKETS_MS[index]);
        index += 1;
    }
};

/// Bytes and blocks a read-ahead queue holds now (read but not yet taken
/// by the connecting thread).
#[derive(Debug, Default)]
pub struct QueueGauge {
    bytes: AtomicU64,
    blocks: AtomicU64,
}

impl QueueGauge {
    /// Serialised bytes of the blocks held.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Blocks held.
    pub fn blocks(&self) -> u64 {
        self.blocks.load(Ordering::Relaxed)
    }

    /// One more block of `bytes` is held.
    pub(crate) fn add_block(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.blocks.fetch_add(1, Ordering::Relaxed);
    }

    /// `blocks` blocks of `bytes` in all are no longer held (the caller
    /// gives back only what it added, so neither count goes below zero).
    pub(crate) fn remove(&self, bytes: u64, blocks: u64) {
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.blocks.fetch_sub(blocks, Ordering::Relaxed);
    }
}

/// Flush durations in fixed buckets ([`FLUSH_DURATION_BUCKETS_MS`]).
#[derive(Debug, Default)]
pub struct FlushDurations {
    /// Flushes per bucket, not cumulative; the last one counts those longer
    /// than every bound.
    counts: [AtomicU64; FLUSH_DURATION_BUCKETS_MS.len() + 1],
    sum_ms: AtomicU64,
}

/// The histogram's values at one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushDurationReading {
    /// For each bound of [`FLUSH_DURATION_BUCKETS_MS`], the flushes that
    /// took at most that long (cumulative, as Prometheus' `le` buckets).
    pub cumulative_counts: [u64; FLUSH_DURATION_BUCKETS_MS.len()],
    /// Every flush (Prometheus' `+Inf` bucket and `_count`).
    pub count: u64,
    /// The durations added up, milliseconds.
    pub sum_ms: u64,
}

impl FlushDurations {
    /// Counts one flush of `duration_ms`.
    pub fn observe(&self, duration_ms: u64) {
        let bucket = FLUSH_DURATION_BUCKETS_MS
            .iter()
            .position(|bound| duration_ms <= *bound)
            .unwrap_or(FLUSH_DURATION_BUCKETS_MS.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_ms.fetch_add(duration_ms, Ordering::Relaxed);
    }

    /// The cumulative counts, total and sum. The total is the sum of the
    /// buckets read, so it is never below a bucket's cumulative count.
    pub fn read(&self) -> FlushDurationReading {
        let mut cumulative_counts = [0; FLUSH_DURATION_BUCKETS_MS.len()];
        let mut running = 0u64;
        for (cumulative, count) in cumulative_counts.iter_mut().zip(&self.counts) {
            running += count.load(Ordering::Relaxed);
            *cumulative = running;
        }
        let over = self.counts[FLUSH_DURATION_BUCKETS_MS.len()].load(Ordering::Relaxed);
        FlushDurationReading {
            cumulative_counts,
            count: running + over,
            sum_ms: self.sum_ms.load(Ordering::Relaxed),
        }
    }
}

/// The engine's figures, published for other threads (see the module docs).
#[derive(Debug, Default)]
pub struct ChainMetrics {
    /// The settled tip's height plus one (0: no tip yet).
    tip_height_plus_one: AtomicU64,
    /// The best header's height plus one (0: none yet).
    best_header_height_plus_one: AtomicU64,
    blocks_connected: AtomicU64,
    blocks_disconnected: AtomicU64,
    blocks_invalid: AtomicU64,
    transactions_connected: AtomicU64,
    inputs_connected: AtomicU64,
    scripts_checked: AtomicU64,
    flushes: AtomicU64,
    coins_database_written_bytes: AtomicU64,
    cache_bytes: AtomicU64,
    cache_coins: AtomicU64,
    cache_bytes_max: AtomicU64,
    script_pipeline_blocks: AtomicU64,
    block_files_bytes: AtomicU64,
    /// The prune height plus one (0: nothing pruned).
    prune_height_plus_one: AtomicU64,
    /// [`CoinReadCounts::spends`], stored.
    coin_reads: [[AtomicU64; COIN_SOURCES]; COIN_AGE_RANGES],
    bip30_lookups: AtomicU64,
    bip30_database_lookups: AtomicU64,
    /// The coins database, read when asked (see the module docs).
    coins_database: OnceLock<Weak<CoinsDatabase>>,
    /// How long each coins flush took, start to written.
    pub flush_durations: FlushDurations,
    /// The import's reader queue (`-reindex`, `-loadblock`).
    pub import_queue: Arc<QueueGauge>,
    /// The stored-block read-ahead (`block_read_ahead`).
    pub stored_block_read_ahead: Arc<QueueGauge>,
}

/// [`ChainMetrics`]' plain values at one read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChainMetricsReading {
    /// The settled tip's height (`None` before the genesis block connects).
    pub tip_height: Option<u32>,
    /// The best header's height (`None` before any header is indexed).
    pub best_header_height: Option<u32>,
    /// Blocks connected since open.
    pub blocks_connected: u64,
    /// Blocks disconnected since open.
    pub blocks_disconnected: u64,
    /// Blocks found invalid since open.
    pub blocks_invalid: u64,
    /// Transactions of the blocks connected since open.
    pub transactions_connected: u64,
    /// Inputs (coinbases excluded) of the blocks connected since open.
    pub inputs_connected: u64,
    /// Inputs whose scripts were checked since open.
    pub scripts_checked: u64,
    /// Coins flushes since open.
    pub flushes: u64,
    /// Bytes of the write batches the coins flushes sent to the coins
    /// database since open.
    pub coins_database_written_bytes: u64,
    /// Bytes the UTXO cache uses.
    pub cache_bytes: u64,
    /// Coins (entries) in the UTXO cache.
    pub cache_coins: u64,
    /// The UTXO cache's limit in bytes (its share of `-dbcache`).
    pub cache_bytes_max: u64,
    /// Blocks connected whose scripts are still being checked.
    pub script_pipeline_blocks: u64,
    /// Bytes of block and undo data in the block files.
    pub block_files_bytes: u64,
    /// The highest block of the active chain pruned below the blocks kept
    /// (`getblockchaininfo`'s `pruneheight` minus one; `None`: none).
    pub prune_height: Option<u32>,
    /// Where the connected blocks' spent coins were found, by age, and
    /// their BIP30 lookups.
    pub coin_reads: CoinReadCounts,
}

/// A height plus one (0 for none), as stored.
fn height_plus_one(height: Option<u32>) -> u64 {
    height.map_or(0, |height| u64::from(height) + 1)
}

fn height_from(stored: u64) -> Option<u32> {
    stored.checked_sub(1).and_then(|height| u32::try_from(height).ok())
}

/// The engine's values for one publish.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PublishedLevels {
    pub(crate) tip_height: Option<u32>,
    pub(crate) best_header_height: Option<u32>,
    pub(crate) cache_bytes: usize,
    pub(crate) cache_coins: usize,
    pub(crate) cache_bytes_max: usize,
    pub(crate) script_pipeline_blocks: usize,
    pub(crate) block_files_bytes: u64,
}

impl ChainMetrics {
    /// Stores the engine's counters and levels.
    pub(crate) fn publish(
        &self,
        statistics: &crate::vocabulary::ChainStatistics,
        levels: &PublishedLevels,
    ) {
        let store = |target: &AtomicU64, value: u64| target.store(value, Ordering::Relaxed);
        let as_u64 = |value: usize| u64::try_from(value).unwrap_or(u64::MAX);
        store(&self.tip_height_plus_one, height_plus_one(levels.tip_height));
        store(&self.best_header_height_plus_one, height_plus_one(levels.best_header_height));
        store(&self.blocks_connected, statistics.blocks_connected);
        store(&self.blocks_disconnected, statistics.blocks_disconnected);
        store(&self.blocks_invalid, statistics.blocks_invalid);
        store(&self.transactions_connected, statistics.transactions_connected);
        store(&self.inputs_connected, statistics.inputs_connected);
        store(&self.scripts_checked, statistics.scripts_checked);
        store(&self.flushes, statistics.flushes);
        store(&self.cache_bytes, as_u64(levels.cache_bytes));
        store(&self.cache_coins, as_u64(levels.cache_coins));
        store(&self.cache_bytes_max, as_u64(levels.cache_bytes_max));
        store(&self.script_pipeline_blocks, as_u64(levels.script_pipeline_blocks));
        store(&self.block_files_bytes, levels.block_files_bytes);
        let coin_reads = &statistics.coin_reads;
        for (stored, counted) in
            self.coin_reads.iter().flatten().zip(coin_reads.spends.iter().flatten())
        {
            store(stored, *counted);
        }
        store(&self.bip30_lookups, coin_reads.bip30_lookups);
        store(&self.bip30_database_lookups, coin_reads.bip30_database_lookups);
    }

    /// Reads the coins database's I/O from `database` from now on (the
    /// first call counts), without keeping it open.
    pub(crate) fn watch_coins_database(&self, database: &Arc<CoinsDatabase>) {
        let _ = self.coins_database.set(Arc::downgrade(database));
    }

    /// The coins database's I/O and shape now, asked of RocksDB (tens of
    /// microseconds: see [`crate::coins::database::io`]); `None` before the
    /// chainstate opened it or once it closed it.
    pub fn coins_database_io(&self) -> Option<CoinsDatabaseIo> {
        let database = self.coins_database.get()?.upgrade()?;
        Some(database.io())
    }

    /// Stores the block files' bytes and the prune height after a prune.
    pub(crate) fn pruned(&self, block_files_bytes: u64, prune_height: Option<u32>) {
        self.block_files_bytes.store(block_files_bytes, Ordering::Relaxed);
        self.prune_height_plus_one.store(height_plus_one(prune_height), Ordering::Relaxed);
    }

    /// Counts a finished coins flush: its duration and the bytes it wrote.
    pub(crate) fn flush_finished(&self, flushes: u64, duration_ms: u64, written_bytes: u64) {
        self.flush_durations.observe(duration_ms);
        self.coins_database_written_bytes.fetch_add(written_bytes, Ordering::Relaxed);
        self.flushes.store(flushes, Ordering::Relaxed);
    }

    /// The values now.
    pub fn read(&self) -> ChainMetricsReading {
        let load = |source: &AtomicU64| source.load(Ordering::Relaxed);
        ChainMetricsReading {
            tip_height: height_from(load(&self.tip_height_plus_one)),
            best_header_height: height_from(load(&self.best_header_height_plus_one)),
            blocks_connected: load(&self.blocks_connected),
            blocks_disconnected: load(&self.blocks_disconnected),
            blocks_invalid: load(&self.blocks_invalid),
            transactions_connected: load(&self.transactions_connected),
            inputs_connected: load(&self.inputs_connected),
            scripts_checked: load(&self.scripts_checked),
            flushes: load(&self.flushes),
            coins_database_written_bytes: load(&self.coins_database_written_bytes),
            cache_bytes: load(&self.cache_bytes),
            cache_coins: load(&self.cache_coins),
            cache_bytes_max: load(&self.cache_bytes_max),
            script_pipeline_blocks: load(&self.script_pipeline_blocks),
            block_files_bytes: load(&self.block_files_bytes),
            prune_height: height_from(load(&self.prune_height_plus_one)),
            coin_reads: self.read_coin_reads(),
        }
    }

    fn read_coin_reads(&self) -> CoinReadCounts {
        let mut counts = CoinReadCounts {
            bip30_lookups: self.bip30_lookups.load(Ordering::Relaxed),
            bip30_database_lookups: self.bip30_database_lookups.load(Ordering::Relaxed),
            ..CoinReadCounts::default()
        };
        for (read, stored) in
            counts.spends.iter_mut().flatten().zip(self.coin_reads.iter().flatten())
        {
            *read = stored.load(Ordering::Relaxed);
        }
        counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_durations_fall_in_cumulative_buckets() {
        let durations = FlushDurations::default();
        for duration_ms in [0, 10, 11, 700, 60_000, 60_001, 3_600_000] {
            durations.observe(duration_ms);
        }
        let reading = durations.read();
        assert_eq!(reading.count, 7);
        assert_eq!(reading.sum_ms, 10 + 11 + 700 + 60_000 + 60_001 + 3_600_000);
        // At most 10 ms: 0 and 10 (a bound includes its value).
        assert_eq!(reading.cumulative_counts[0], 2);
        // At most 25 ms: also 11.
        assert_eq!(reading.cumulative_counts[1], 3);
        // At most 1 s: also 700.
        assert_eq!(reading.cumulative_counts[6], 4);
        // At most 60 s: also 60,000; two are longer than every bound.
        assert_eq!(reading.cumulative_counts[FLUSH_DURATION_BUCKETS_MS.len() - 1], 5);
        assert!(reading.cumulative_counts.windows(2).all(|pair| pair[0] <= pair[1]));
    }

    #[test]
    fn heights_distinguish_none_from_zero() {
        let metrics = ChainMetrics::default();
        assert_eq!(metrics.read().tip_height, None);
        let statistics = crate::ChainStatistics { blocks_connected: 3, ..Default::default() };
        let levels = PublishedLevels {
            tip_height: Some(0),
            best_header_height: Some(u32::MAX),
            cache_bytes: 100,
            cache_coins: 2,
            cache_bytes_max: 1_000,
            script_pipeline_blocks: 1,
            block_files_bytes: 5 << 20,
        };
        metrics.publish(&statistics, &levels);
        let reading = metrics.read();
        assert_eq!(reading.block_files_bytes, 5 << 20);
        assert_eq!(reading.prune_height, None);
        metrics.pruned(4 << 20, Some(0));
        assert_eq!(
            (metrics.read().block_files_bytes, metrics.read().prune_height),
            (4 << 20, Some(0))
        );
        assert_eq!(reading.tip_height, Some(0));
        assert_eq!(reading.best_header_height, Some(u32::MAX));
        assert_eq!(reading.blocks_connected, 3);
        assert_eq!(
            (reading.cache_bytes, reading.cache_coins, reading.cache_bytes_max),
            (100, 2, 1_000)
        );
        metrics.flush_finished(1, 40, 4_096);
        metrics.flush_finished(2, 4, 1_024);
        let reading = metrics.read();
        assert_eq!((reading.flushes, reading.coins_database_written_bytes), (2, 5_120));
        assert_eq!(metrics.flush_durations.read().count, 2);
    }

    #[test]
    fn queue_gauges_count_what_is_held() {
        let gauge = QueueGauge::default();
        gauge.add_block(1_000);
        gauge.add_block(500);
        assert_eq!((gauge.bytes(), gauge.blocks()), (1_500, 2));
        gauge.remove(1_000, 1);
        assert_eq!((gauge.bytes(), gauge.blocks()), (500, 1));
    }
}
