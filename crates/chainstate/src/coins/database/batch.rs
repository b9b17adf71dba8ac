//! The batch protocol of a flush: coin writes and erasures in write
//! batches through RocksDB's memtables, the first batch erasing `'B'` and
//! putting `'H'`, the last erasing `'H'` and putting `'B'` (the crash rules
//! are the [module docs](super)'). Flushes go in as ingested tables
//! ([`super::ingest`]) but under `-dbcrashratio`, whose simulated crashes
//! fall between batches, and in the tests of this path
//! ([`CoinsDatabase::set_batch_flushes`]).

use std::sync::atomic::Ordering;

use ibex_primitives::{BlockHash, OutPoint};
use rocksdb::{WriteBatch, WriteOptions};

use super::options::FLUSH_BATCH_BYTES_MIN;
use super::store::{
    head_blocks_record, CoinsDatabase, FlushStats, BEST_BLOCK_KEY, HEAD_BLOCKS_KEY,
};
use crate::coins::coin::{Coin, CoinKey};
use crate::error::ChainstateError;

impl CoinsDatabase {
    /// Starts a flush to `new_tip`: records the head blocks in the first batch.
    ///
    /// If an earlier flush was interrupted, the new one must be to the same
    /// tip (Core asserts this; here it is [`ChainstateError::InconsistentHeadBlocks`])
    /// and keeps that flush's old tip, since the disk may still hold coins of it.
    pub fn begin_flush(&self, new_tip: BlockHash) -> Result<FlushWriter<'_>, ChainstateError> {
        let old_tip = self.check_head_blocks(new_tip)?;
        let record = head_blocks_record(new_tip, old_tip);
        let mut batches = CoinBatches::new(self, self.flush_batch_bytes_max);
        batches.batch.delete(BEST_BLOCK_KEY);
        batches.batch.put(HEAD_BLOCKS_KEY, &record);
        Ok(FlushWriter { batches, new_tip })
    }

    /// Another writer of coin batches for the flush in progress, for another
    /// thread, with batches of at most `batch_bytes_max`. Its batches are
    /// neither the first nor the last of the flush: call
    /// [`FlushWriter::write_head`] before and [`FlushWriter::add_stats`] with
    /// its result before [`FlushWriter::finish`].
    pub fn coin_batches(&self, batch_bytes_max: usize) -> CoinBatches<'_> {
        CoinBatches::new(self, batch_bytes_max)
    }

    /// Simulates a crash per [`CoinsDatabase::set_crash_ratio`].
    fn maybe_simulate_crash(&self) {
        let ratio = self.crash_ratio.load(Ordering::Relaxed);
        if ratio == 0 {
            return;
        }
        // xorshift64: cheap, and good enough to pick crash points.
        let mut value = self.crash_random.load(Ordering::Relaxed);
        value ^= value << 13;
        value ^= value >> 7;
        value ^= value << 17;
        self.crash_random.store(value, Ordering::Relaxed);
        if value % ratio == 0 {
            // The crash comes after this batch reached the disk, as with
            // a flush larger than a memtable: without a write-ahead log
            // (module docs) the batches would otherwise die with the
            // memtable, and the crash would leave no flush to replay.
            let _ = self.db.flush();
            eprintln!("Simulating a crash. Goodbye.");
            std::process::exit(0);
        }
    }
}

/// A flush in progress: coin writes and erasures go out in batches of at most
/// `flush_batch_bytes_max`. Dropping it without [`FlushWriter::finish`] is a
/// crash: the batches already written stay, and `'H'` says which blocks to replay.
pub struct FlushWriter<'a> {
    batches: CoinBatches<'a>,
    new_tip: BlockHash,
}

impl<'a> FlushWriter<'a> {
    /// Writes (creates or replaces) the coin at `outpoint`.
    pub fn put(&mut self, outpoint: &OutPoint, coin: &Coin) -> Result<(), ChainstateError> {
        self.batches.put(outpoint, coin)
    }

    /// Erases the coin at `outpoint`.
    pub fn erase(&mut self, outpoint: &OutPoint) -> Result<(), ChainstateError> {
        self.batches.erase(outpoint)
    }

    /// Writes what is batched so far (the head-blocks record at least), so
    /// that [`CoinsDatabase::coin_batches`] writers on other threads may
    /// follow: every coin they write then lands after `'H'`.
    pub fn write_head(&mut self) -> Result<(), ChainstateError> {
        self.batches.write_batch()
    }

    /// Writes what is batched so far (unsynced): every put and erase made
    /// before is then in the database, visible to its reads (a background
    /// flush frees a shard of its map after this).
    pub fn write_pending(&mut self) -> Result<(), ChainstateError> {
        self.batches.write_batch()
    }

    /// Counts what a [`CoinBatches`] writer of this flush wrote.
    pub fn add_stats(&mut self, stats: FlushStats) {
        self.batches.stats += stats;
    }

    /// Writes the last batch: erases `'H'` and sets `'B'` to the new tip
    /// (durable with the memtable that holds it, or at
    /// [`CoinsDatabase::persist_memtables`]: see the module docs).
    pub fn finish(mut self) -> Result<FlushStats, ChainstateError> {
        self.batches.fill_batch();
        self.batches.batch.delete(HEAD_BLOCKS_KEY);
        self.batches.batch.put(BEST_BLOCK_KEY, self.new_tip.as_bytes());
        let batch = std::mem::take(&mut self.batches.batch);
        self.batches.stats.batch_count += 1;
        self.batches.stats.batch_bytes += batch.size_in_bytes() as u64;
        let batch_bytes = batch.size_in_bytes() as u64;
        self.batches.database.db.write_opt(batch, &unlogged_write())?;
        self.batches.database.written_bytes.fetch_add(batch_bytes, Ordering::Relaxed);
        Ok(self.batches.stats)
    }
}

/// Coin writes and erasures of a flush, written in batches of at most a
/// given size, unsynced (the flush's last batch syncs them all).
///
/// # Napkin math
/// A cache hands its coins over in hash order. Inserted in that order,
/// every key lands at a random place in RocksDB's skip-list memtable: ~2 us
/// a coin of pointer chasing (`RecomputeSpliceLevels` was 7 % of an
/// import's CPU with scripts skipped, ~4 s for 2 M coins). A batch's keys
/// are therefore sorted before they go into the `WriteBatch` (~0.1 us a
/// key), so each insert starts from where the previous one ended.
pub struct CoinBatches<'a> {
    database: &'a CoinsDatabase,
    batch: WriteBatch,
    batch_bytes_max: usize,
    stats: FlushStats,
    /// Writes not yet in `batch`, sorted by key when the batch is built.
    pending: Vec<PendingWrite>,
    /// Encoded values of `pending`, back to back.
    values: Vec<u8>,
    pending_bytes: usize,
}

/// A coin write (or an erasure: `value_length == ERASE`) waiting to be sorted.
struct PendingWrite {
    key: CoinKey,
    value_offset: u32,
    value_length: u32,
}

const ERASE: u32 = u32::MAX;
/// `WriteBatch`'s framing per record: a tag and two length prefixes.
const RECORD_OVERHEAD_BYTES: usize = 3;

impl<'a> CoinBatches<'a> {
    fn new(database: &'a CoinsDatabase, batch_bytes_max: usize) -> Self {
        CoinBatches {
            database,
            batch: WriteBatch::default(),
            batch_bytes_max: batch_bytes_max.max(FLUSH_BATCH_BYTES_MIN),
            stats: FlushStats::default(),
            pending: Vec::new(),
            values: Vec::new(),
            pending_bytes: 0,
        }
    }

    /// Writes (creates or replaces) the coin at `outpoint`.
    pub fn put(&mut self, outpoint: &OutPoint, coin: &Coin) -> Result<(), ChainstateError> {
        let value_offset = self.values.len();
        coin.encode_into(&mut self.values);
        let value_length = self.values.len() - value_offset;
        let key = CoinKey::new(outpoint);
        self.pending_bytes += key.as_ref().len() + value_length + RECORD_OVERHEAD_BYTES;
        self.pending.push(PendingWrite {
            key,
            value_offset: value_offset as u32,
            value_length: value_length as u32,
        });
        self.stats.coins_written += 1;
        self.write_if_full()
    }

    /// Erases the coin at `outpoint`.
    pub fn erase(&mut self, outpoint: &OutPoint) -> Result<(), ChainstateError> {
        let key = CoinKey::new(outpoint);
        self.pending_bytes += key.as_ref().len() + RECORD_OVERHEAD_BYTES;
        self.pending.push(PendingWrite { key, value_offset: 0, value_length: ERASE });
        self.stats.coins_erased += 1;
        self.write_if_full()
    }

    /// The sorted writes and the batch built from them exist together while
    /// a batch is built: each may take half of the limit.
    fn write_if_full(&mut self) -> Result<(), ChainstateError> {
        let pending_memory_bytes =
            self.pending.len() * std::mem::size_of::<PendingWrite>() + self.values.len();
        let half = self.batch_bytes_max / 2;
        if self.batch.size_in_bytes() + self.pending_bytes < half && pending_memory_bytes < half {
            return Ok(());
        }
        self.write_batch()
    }

    /// Moves the pending writes into the batch in key order.
    fn fill_batch(&mut self) {
        self.pending.sort_unstable_by(|left, right| left.key.as_ref().cmp(right.key.as_ref()));
        for write in &self.pending {
            if write.value_length == ERASE {
                self.batch.delete(write.key);
            } else {
                let start = write.value_offset as usize;
                let value = &self.values[start..start + write.value_length as usize];
                self.batch.put(write.key, value);
            }
        }
        self.pending.clear();
        self.values.clear();
        self.pending_bytes = 0;
    }

    /// Writes the batch so far, without the WAL (see the module docs: a
    /// crash keeps a prefix of the batches, which the protocol survives).
    fn write_batch(&mut self) -> Result<(), ChainstateError> {
        self.fill_batch();
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        let batch_bytes = batch.size_in_bytes() as u64;
        self.stats.batch_count += 1;
        self.stats.batch_bytes += batch_bytes;
        self.database.db.write_opt(batch, &unlogged_write())?;
        self.database.written_bytes.fetch_add(batch_bytes, Ordering::Relaxed);
        self.database.maybe_simulate_crash();
        Ok(())
    }

    /// Writes the rest and returns what this writer wrote.
    pub fn finish(mut self) -> Result<FlushStats, ChainstateError> {
        self.write_batch()?;
        Ok(self.stats)
    }
}

/// Options of every write to the coins database: without the WAL (see the
/// module docs, "No write-ahead log").
fn unlogged_write() -> WriteOptions {
    let mut options = WriteOptions::default();
    options.disable_wal(true);
    options
}
