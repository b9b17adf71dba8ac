//! Coins staged by a SwiftSync attempt ([`crate::swiftsync`]): written in
//! no particular order, as sorted runs, into a database that holds no
//! coins yet, and made the chainstate's only when the attempt's proof
//! holds.
//!
//! # Why buckets, not tables that overlap
//! The coins a SwiftSync attempt keeps arrive in block order, which is no
//! key order. Ingesting each worker's sorted run as a table makes tables
//! whose key ranges overlap, and RocksDB's compactions then rewrite every
//! coin once more: measured on the `utxo-heavy` chain (26 M coins), the
//! compactions took 70 CPU-seconds of a 32-second pass, half its CPU.
//! Instead each run is sorted, split by the first bits of its transaction
//! ids (uniform: they are hashes) and appended as a chunk to one file per
//! bucket ([`CoinBuckets`]); once the proof holds, each bucket is read back
//! whole, its chunks merged and written as tables that no other table
//! overlaps, so RocksDB puts them in its last level and never compacts
//! them. Sorting the runs while blocks are accounted, not the buckets after
//! the last one, moves that work off the serial end of the pass (where
//! every core waits for the tables) into the download, which leaves
//! cores idle. The buckets are
//! as many as needed for one to fit a worker's share of `-dbcache` (from
//! the hints' count of coins), at most [`BUCKET_COUNT_MAX`]. No coin key
//! is written twice (every outpoint is created once: the two mainnet
//! coinbases that were repeated are never numbered).
//!
//! # Crash safety
//! [`CoinsDatabase::begin_staging`] writes the `'S'` record and makes it
//! durable before the first run: from then on, a database with `'S'`
//! holds coins of an attempt that did not finish, and the next open
//! discards them ([`CoinsDatabase::discard_staged`]), bucket files with
//! them, unless `'S'` holds a checkpoint (`resume`: the
//! bucket files synced and their lengths recorded), which a pass with the
//! same hints resumes from. The attempt ends with one write that sets the
//! best block and erases `'S'` (and a finished flush's leftover `'H'`:
//! [`CoinsDatabase::commit_staged`]), made durable before the chain
//! moves. No write uses the WAL (the [module docs](super)).

use std::collections::binary_heap::{BinaryHeap, PeekMut};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ibex_primitives::{BlockHash, OutPoint};
use rocksdb::{WriteBatch, WriteOptions};

use super::store::{BEST_BLOCK_KEY, HEAD_BLOCKS_KEY};
use super::table_writer::{TableWriter, TableWrites};
use super::CoinsDatabase;
use crate::coins::coin::{Coin, CoinKey, COIN_KEY_BYTES_MAX, COIN_KEY_PREFIX};
use crate::error::ChainstateError;

mod resume;

pub(crate) use resume::STAGING_MARKER;

/// The record that says the database holds a SwiftSync attempt's coins.
pub(crate) const STAGING_KEY: &[u8] = b"S";

/// Directory, inside the coins database's, of the bucket files.
pub(crate) const BUCKETS_DIRECTORY: &str = "ibex-swiftsync-buckets";

/// Most bucket files (open at once while the pass runs): mainnet's ~165 M
/// coins, ~10 GB as staged, make buckets of ~80 MB.
pub(crate) const BUCKET_COUNT_MAX: usize = 128;

/// Bytes a staged coin takes in a bucket file, on average (a 37-byte key,
/// a ~30-byte value, three bytes of lengths): sizes the buckets.
pub(crate) const STAGED_COIN_BYTES: u64 = 70;

/// Coins in memory, in the order they came, to be sorted and written as
/// one table: each coin's key and its encoded value in one byte arena (no
/// allocation per coin).
#[derive(Debug, Default)]
pub(crate) struct CoinRun {
    /// Each coin's key and where its value lies in `values`.
    entries: Vec<(CoinKey, u32, u32)>,
    values: Vec<u8>,
}

/// Bytes a coin of the run holds beyond its value: its key and offsets.
const RUN_ENTRY_BYTES: usize = std::mem::size_of::<(CoinKey, u32, u32)>();

impl CoinRun {
    /// Adds `coin` at `outpoint`.
    pub(crate) fn push(&mut self, outpoint: &OutPoint, coin: &Coin) {
        let start = self.values.len();
        coin.encode_into(&mut self.values);
        // A run is written long before 4 GiB of values (a share of
        // `-dbcache`); a larger one is a broken caller.
        assert!(self.values.len() <= u32::MAX as usize, "a coin run outgrew its offsets");
        self.entries.push((CoinKey::new(outpoint), start as u32, self.values.len() as u32));
    }

    /// Coins held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no coin.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Memory held, in bytes (capacity, as the allocator sees it).
    pub(crate) fn bytes(&self) -> usize {
        self.entries.capacity() * RUN_ENTRY_BYTES + self.values.capacity()
    }
}

impl CoinsDatabase {
    /// Marks the database as holding a SwiftSync attempt's coins (durable
    /// before this returns) and readies the tables' directory. The
    /// database must hold no coin.
    pub(crate) fn begin_staging(&self) -> Result<(), ChainstateError> {
        self.prepare_tables_directory()?;
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        self.raw().put_opt(STAGING_KEY, STAGING_MARKER, &options)?;
        self.persist_memtables()
    }

    /// Whether the database holds coins of an attempt that did not finish.
    #[cfg(test)]
    pub(crate) fn holds_staged(&self) -> Result<bool, ChainstateError> {
        Ok(self.raw().get_pinned(STAGING_KEY)?.is_some())
    }

    /// The bucket files' directory.
    pub(crate) fn buckets_directory(&self) -> PathBuf {
        self.path().join(BUCKETS_DIRECTORY)
    }

    /// Makes the staged coins the database's, at `best_block`: one write
    /// that sets `'B'` and erases `'S'`, durable before this returns.
    pub(crate) fn commit_staged(&self, best_block: &BlockHash) -> Result<(), ChainstateError> {
        let mut batch = WriteBatch::default();
        batch.put(BEST_BLOCK_KEY, best_block.as_bytes());
        // A flush of several tables leaves its `'H'` behind, finished
        // because it names the block `'B'` names (`store::head_blocks`):
        // one made while the attempt waited (a shutdown's, at genesis)
        // would read as interrupted once `'B'` moves here. The staged coins
        // are the whole set at `best_block`: no flush is unfinished.
        batch.delete(HEAD_BLOCKS_KEY);
        batch.delete(STAGING_KEY);
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        self.raw().write_opt(batch, &options)?;
        self.persist_memtables()
    }

    /// Erases every coin and `'S'` (an attempt that failed or did not
    /// finish), durable before this returns, and compacts the coins' range
    /// away. The best block stays what it was: the attempt never moved it.
    pub(crate) fn discard_staged(&self) -> Result<(), ChainstateError> {
        let first = [COIN_KEY_PREFIX];
        let after = [COIN_KEY_PREFIX + 1];
        let mut batch = WriteBatch::default();
        batch.delete_range(first, after);
        batch.delete(STAGING_KEY);
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        self.raw().write_opt(batch, &options)?;
        self.persist_memtables()?;
        self.raw().compact_range(Some(first), Some(after));
        remove_directory(&self.buckets_directory())?;
        self.prepare_tables_directory()
    }
}

fn remove_directory(path: &Path) -> Result<(), ChainstateError> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(ChainstateError::TableDirectory { path: path.to_path_buf(), source }),
    }
}

/// Coins split by the first bits of their transaction ids into files,
/// each written as tables once the attempt's proof holds (module docs).
/// Workers append from several threads.
pub(crate) struct CoinBuckets {
    directory: PathBuf,
    /// log2 of the bucket count.
    bits: u32,
    /// Each bucket's file, open for appending until the buckets are
    /// written (closed then, so that removing it frees its pages).
    files: Vec<Mutex<Option<BufWriter<File>>>>,
}

impl std::fmt::Debug for CoinBuckets {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("CoinBuckets").field("bits", &self.bits).finish_non_exhaustive()
    }
}

impl CoinBuckets {
    /// Bucket files for `coin_count` coins, each to fit `bucket_bytes_max`
    /// once read back, in `database`'s buckets directory (emptied first).
    pub(crate) fn create(
        database: &CoinsDatabase,
        coin_count: u64,
        bucket_bytes_max: usize,
    ) -> Result<CoinBuckets, ChainstateError> {
        let directory = database.buckets_directory();
        remove_directory(&directory)?;
        let error = |source| ChainstateError::TableDirectory { path: directory.clone(), source };
        std::fs::create_dir_all(&directory).map_err(error)?;
        let wanted = coin_count.saturating_mul(STAGED_COIN_BYTES) / bucket_bytes_max.max(1) as u64;
        let count = (wanted as usize + 1).next_power_of_two().min(BUCKET_COUNT_MAX);
        let bits = count.trailing_zeros();
        let mut files = Vec::with_capacity(count);
        for bucket in 0..count {
            let file = File::create(directory.join(format!("bucket-{bucket}"))).map_err(error)?;
            files.push(Mutex::new(Some(BufWriter::with_capacity(64 << 10, file))));
        }
        Ok(CoinBuckets { directory, bits, files })
    }

    /// The bucket of a coin key (`'C'`, then the transaction id).
    fn bucket_of(&self, key: &[u8]) -> usize {
        if self.bits == 0 {
            return 0;
        }
        let high = u16::from_be_bytes([key[1], key[2]]);
        usize::from(high >> (16 - self.bits))
    }

    /// Appends `run`'s coins to their buckets and empties it (keeping its
    /// memory): the run is sorted by key, so each bucket gets one chunk in
    /// key order, a `u64` (little-endian) of its bytes, then its records.
    /// Each record: key length (1 byte), key, value length (2 bytes,
    /// little-endian: a script is at most 10,000 bytes), value.
    pub(crate) fn append(&self, run: &mut CoinRun) -> Result<(), ChainstateError> {
        run.entries.sort_unstable_by(|left, right| key_order(&left.0, &right.0));
        let io = |source| ChainstateError::TableDirectory { path: self.directory.clone(), source };
        let mut rest = &run.entries[..];
        while let Some(first) = rest.first() {
            let bucket = self.bucket_of(first.0.as_ref());
            let length =
                rest.iter().take_while(|entry| self.bucket_of(entry.0.as_ref()) == bucket).count();
            let (same, after) = rest.split_at(length);
            let record_bytes = |(key, start, end): &(CoinKey, u32, u32)| {
                (1 + key.as_ref().len() + 2 + (end - start) as usize) as u64
            };
            let records_bytes: u64 = same.iter().map(record_bytes).sum();
            let mut file =
                self.files[bucket].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let closed = || ChainstateError::TableDirectory {
                path: self.directory.clone(),
                source: std::io::Error::other("bucket appended to after its tables were written"),
            };
            let file = file.as_mut().ok_or_else(closed)?;
            file.write_all(&records_bytes.to_le_bytes()).map_err(io)?;
            for (key, start, end) in same {
                let value = &run.values[*start as usize..*end as usize];
                let key = key.as_ref();
                let value_length =
                    u16::try_from(value.len()).map_err(|_| ChainstateError::CorruptRecord {
                        record: "staged coin",
                        length_bytes: value.len(),
                    })?;
                file.write_all(&[key.len() as u8]).map_err(io)?;
                file.write_all(key).map_err(io)?;
                file.write_all(&value_length.to_le_bytes()).map_err(io)?;
                file.write_all(value).map_err(io)?;
            }
            rest = after;
        }
        run.entries.clear();
        run.values.clear();
        Ok(())
    }

    /// Writes every bucket into `database` as tables that overlap no other
    /// (a bucket at a time on each of `thread_count` threads), removing the
    /// files; the coins written.
    pub(crate) fn write_into(
        &self,
        database: &CoinsDatabase,
        thread_count: usize,
    ) -> Result<u64, ChainstateError> {
        let io = |source| ChainstateError::TableDirectory { path: self.directory.clone(), source };
        for file in &self.files {
            let taken = file.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
            if let Some(mut file) = taken {
                file.flush().map_err(io)?;
            }
        }
        // Past the page cache (the tables are written once and read only
        // as the chain spends their coins) where the file system allows it.
        let writes = if TableWriter::direct_writes_work(&database.tables_directory()) {
            TableWrites::Direct
        } else {
            TableWrites::PageCache
        };
        let next = AtomicUsize::new(0);
        let written = AtomicUsize::new(0);
        let results: Vec<Result<(), ChainstateError>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..thread_count.max(1))
                .map(|_| {
                    scope.spawn(|| {
                        // One buffer a thread, reused: a fresh one a bucket
                        // would fault its pages in anew each time.
                        let mut bytes = Vec::new();
                        loop {
                            let bucket = next.fetch_add(1, Ordering::Relaxed);
                            if bucket >= self.files.len() {
                                return Ok(());
                            }
                            let count = self.write_bucket(database, bucket, &mut bytes, writes)?;
                            written.fetch_add(count, Ordering::Relaxed);
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|worker| {
                    worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>, _>>()?;
        remove_directory(&self.directory)?;
        Ok(written.into_inner() as u64)
    }

    /// One bucket read back, its chunks merged into tables; its coin
    /// count.
    /// The file is removed once read, before any table is written: its
    /// page cache is freed at once, for the tables where they go through
    /// the page cache (on the VMs measured, writing 1.2 GB into page cache
    /// not used for a few seconds took 3.0 s, into pages just freed 0.2 s;
    /// where direct writes work the tables bypass it altogether).
    fn write_bucket(
        &self,
        database: &CoinsDatabase,
        bucket: usize,
        bytes: &mut Vec<u8>,
        writes: TableWrites,
    ) -> Result<usize, ChainstateError> {
        let path = self.directory.join(format!("bucket-{bucket}"));
        let io = |source| ChainstateError::TableDirectory { path: path.clone(), source };
        bytes.clear();
        File::open(&path).map_err(io)?.read_to_end(bytes).map_err(io)?;
        std::fs::remove_file(&path).map_err(io)?;
        let bytes = &bytes[..];
        let corrupt =
            || ChainstateError::CorruptRecord { record: "staged coin", length_bytes: bytes.len() };
        let mut heads = BinaryHeap::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let (header, after) = rest.split_at_checked(CHUNK_HEADER_BYTES).ok_or_else(corrupt)?;
            let records_bytes = u64::from_le_bytes(header.try_into().map_err(|_| corrupt())?);
            let records_bytes = usize::try_from(records_bytes).map_err(|_| corrupt())?;
            let (records, after) = after.split_at_checked(records_bytes).ok_or_else(corrupt)?;
            if let Some(head) = ChunkHead::first(records).ok_or_else(corrupt)? {
                heads.push(head);
            }
            rest = after;
        }
        let mut tables = database.table_sequence(writes);
        let mut count = 0;
        // The smallest head of all chunks next, each chunk's next record
        // taking its place (a k-way merge: chunks are sorted already).
        while let Some(mut head) = heads.peek_mut() {
            tables.put_encoded(head.key, head.value)?;
            count += 1;
            match ChunkHead::first(head.rest).ok_or_else(corrupt)? {
                Some(next) => *head = next,
                None => {
                    PeekMut::pop(head);
                }
            }
        }
        tables.finish()?;
        Ok(count)
    }
}

/// Bytes of a chunk's header in a bucket file: its records' length.
const CHUNK_HEADER_BYTES: usize = 8;

/// Bytes of a coin key before the output index: `'C'` and the txid.
const KEY_TXID_END: usize = 33;

/// A coin key as five big-endian integers (the transaction id after
/// `'C'`, then the output index's encoding zero-padded), compared in
/// registers: comparing key slices made `memcmp` a quarter of the pass's
/// CPU on the `utxo-heavy` chain. Core's output-index encoding (`VARINT`)
/// is prefix-free, so zero padding keeps the byte order of one
/// transaction's keys. `padded` holds the key then zeros.
fn key_words(padded: &[u8; COIN_KEY_BYTES_MAX]) -> [u64; 5] {
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        let end = (at + 8).min(COIN_KEY_BYTES_MAX);
        bytes[..end - at].copy_from_slice(&padded[at..end]);
        u64::from_be_bytes(bytes)
    };
    [word(1), word(9), word(17), word(25), word(KEY_TXID_END)]
}

/// Two coin keys in byte order.
fn key_order(left: &CoinKey, right: &CoinKey) -> std::cmp::Ordering {
    key_words(left.padded_bytes()).cmp(&key_words(right.padded_bytes()))
}

/// A chunk's next record in a bucket being merged: its key as integers
/// (the heap's order, smallest first), its key and value, and the records
/// after it.
struct ChunkHead<'a> {
    words: [u64; 5],
    key: &'a [u8],
    value: &'a [u8],
    rest: &'a [u8],
}

impl<'a> ChunkHead<'a> {
    /// The first record of `records`: `Some(None)` when there is none,
    /// `None` when it is cut short or its key is no coin's.
    fn first(records: &'a [u8]) -> Option<Option<ChunkHead<'a>>> {
        let Some((&key_length, after)) = records.split_first() else { return Some(None) };
        let (key, after) = after.split_at_checked(usize::from(key_length))?;
        let (length, after) = after.split_at_checked(2)?;
        let value_length = usize::from(u16::from_le_bytes([length[0], length[1]]));
        let (value, rest) = after.split_at_checked(value_length)?;
        if !(KEY_TXID_END + 1..=COIN_KEY_BYTES_MAX).contains(&key.len()) {
            return None;
        }
        let mut padded = [0u8; COIN_KEY_BYTES_MAX];
        padded[..key.len()].copy_from_slice(key);
        Some(Some(ChunkHead { words: key_words(&padded), key, value, rest }))
    }
}

impl PartialEq for ChunkHead<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.words == other.words
    }
}

impl Eq for ChunkHead<'_> {}

impl PartialOrd for ChunkHead<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ChunkHead<'_> {
    /// Reversed: `BinaryHeap` is a max-heap, the merge wants the smallest.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.words.cmp(&self.words)
    }
}

#[cfg(test)]
mod tests;
