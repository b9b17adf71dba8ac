//! The coins database on RocksDB, laid out like Core's chainstate LevelDB.
//!
//! Records: `'C' || txid || VARINT(vout)` -> compact coin (see [`crate::coin`]),
//! `'B'` -> best block hash (Core's `DB_BEST_BLOCK`), `'H'` -> the blocks an
//! unfinished flush covers (Core's `DB_HEAD_BLOCKS`: new tip, old tip).
//!
//! # Crash safety
//! A flush is written as sorted tables, each ingested atomically
//! ([`crate::database_ingest`]); the batch protocol below serves
//! `-dbcrashratio` and tests of it ([`CoinsDatabase::set_batch_flushes`]), and
//! its `'H'` record marks a flush of either kind cut short by a crash (a flush
//! in tables leaves `'H'` behind when it finishes, naming the tip `'B'` then
//! names: [`CoinsDatabase::head_blocks`]).
//!
//! A batch flush is a sequence of batches. The first erases `'B'` and writes `'H'`
//! = (new tip, old tip); the middle ones carry coins; the last erases `'H'`
//! and writes `'B'` = new tip. A crash between batches leaves `'H'` on disk
//! and no `'B'`: the database holds a mix of the two states, and
//! [`CoinsDatabase::head_blocks`] tells the restart which blocks to roll
//! back to (old tip) and replay up to (new tip). Replaying is idempotent
//! because a flush only writes final coin states, and the coin batches
//! between the first and the last may land in any order (the cache writes
//! them from several threads: [`CoinsDatabase::coin_batches`]).
//!
//! # No write-ahead log
//! Every write skips RocksDB's WAL ([`WriteOptions::disable_wal`]): what
//! reaches disk is what RocksDB's memtable flushes write, and with one
//! column family those persist the writes in sequence order, whole
//! memtables at a time. After a crash the database is therefore some
//! prefix of the batches ever written, which is exactly what the protocol
//! above already survives: a prefix that ends inside a flush has `'H'` and
//! is replayed, one that ends between flushes names an older tip and the
//! blocks after it are connected again (their block and undo files were
//! synced before the flush began: [`crate::engine`]'s flush order). No
//! write may ever use the WAL: a logged write replayed over lost unlogged
//! ones would not be a prefix. [`CoinsDatabase::persist_memtables`] makes everything
//! written so far durable (the memtables flushed and synced), for a
//! shutdown or a periodic flush; a flush because the cache is full is not
//! waited for, and a crash then costs at most three memtables of blocks
//! replayed. RocksDB writes two full memtables to one table
//! ([`crate::budget::MEMTABLES_MERGED_PER_FLUSH`]): still the oldest
//! first, and both or neither, so what survives is still a prefix.
//! Measured on the `utxo-heavy` chain to height 2,000 at
//! `-dbcache=100` (scripts skipped): the WAL was 2.2 GiB of the 2.3 GiB
//! written to the database again, and dropping it took the import from
//! 66.8 s to 62.6 s.
//!
//! # Napkin math
//! A flush of a full 450 MiB cache holds ~2.5 M dirty coins of ~70 bytes
//! (38-byte key, ~30-byte value, RocksDB's ~4 bytes of framing): ~175 MB, so
//! six batches of 32 MiB. RocksDB appends them to its WAL and memtable at
//! ~300-500 MB/s on one core: ~0.5 s, plus one fsync (~10 ms on SSD). A
//! batch is bounded by `flush_batch_bytes_max` so the memory a flush adds is
//! at most one batch beyond the cache itself.
//!
//! # Memory
//! RocksDB's own memory is bounded here, not left at its defaults (two
//! 64 MiB memtables and a 32 MiB block cache, which a full flush fills
//! while the cache it writes is still in memory), from the coins
//! database's share of `-dbcache` ([`crate::budget::CoinsDatabaseMemory`]):
//! memtables of 1 MiB, as flushes are ingested as tables (flushes through
//! the memtables would want a 12th of it:
//! [`crate::budget::MEMTABLE_SHARE_DIVISOR`]), at most
//! [`MEMTABLE_COUNT_MAX`](crate::budget::MEMTABLE_COUNT_MAX) of them, flush
//! batches of at most a quarter of a memtable (a batch lands whole in
//! one), the order a flush sorts its coins in, and a block cache of a 64th (at most 4 MiB: Core gives LevelDB
//! half of its coins-database share for the same purpose). The options are
//! set on the default column family itself: opened with `DB::open_cf`, it
//! would take RocksDB's defaults instead (64 MiB memtables, a 32 MiB block
//! cache and no bloom filter).
//!
//! The table readers are held by the process, outside the block cache:
//! each open table keeps its bloom filter (10 bits a key, ~1.3 bytes a
//! coin) and index block (~0.4 bytes a coin) in the heap. Measured with
//! `rocksdb.estimate-table-readers-mem` at the `utxo-heavy` chain's 26 M
//! coins: 45 MiB (1.8 bytes a coin); a 180 M-coin mainnet set would hold
//! ~310 MiB. The last level, ~90 % of the coins, has no filters
//! ([`LAST_LEVEL_FILTERS`]): ~0.5 bytes a coin, ~90 MiB for
//! mainnet. [`CoinsDatabase::table_readers_bytes`] reports it, and the
//! UTXO cache counts what passes
//! [`TABLE_READERS_UNCOUNTED_BYTES_MAX`](crate::cache::TABLE_READERS_UNCOUNTED_BYTES_MAX)
//! against its share of `-dbcache`
//! ([`crate::CoinsCache::set_table_readers_bytes`]). Once the readers take
//! half of that share from the maps ([`crate::engine::flush::WHOLE_KEY_FILTERS_SHARE_DIVISOR`]), tables written from then on hold transaction
//! id prefixes in their filters, not whole keys
//! ([`CoinsDatabase::drop_whole_key_filters`]): one filter entry a
//! transaction instead of one a coin and one a transaction, a tenth of
//! the entries on the `utxo-heavy` chain (~11 coins a transaction),
//! less of a saving on mainnet, whose transactions leave fewer coins.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ibex_primitives::encode::{write_compact_size, Reader};
use ibex_primitives::{BlockHash, OutPoint, Txid};
use rocksdb::{
    BlockBasedOptions, ColumnFamilyDescriptor, DBCompressionType, DataBlockIndexType, Options,
    ReadOptions, SliceTransform, WriteBatch, WriteOptions, DB,
};

use crate::coin::{Coin, CoinKey, COIN_KEY_PREFIX};
use crate::error::ChainstateError;

/// Core's `-dbbatchsize` default: 32 MiB.
pub const FLUSH_BATCH_BYTES_DEFAULT: usize = 32 << 20;
/// Smallest batch limit accepted (tests use small ones to force many batches).
pub const FLUSH_BATCH_BYTES_MIN: usize = 1;
/// Size of one RocksDB memtable (its `write_buffer_size`) by default.
pub const MEMTABLE_BYTES_DEFAULT: usize = crate::budget::MEMTABLE_BYTES_MAX;
/// Bytes of a coin key's `'C' || txid` prefix (RocksDB's prefix extractor).
pub const COIN_TXID_PREFIX_BYTES: usize = 33;
/// Share of each memtable given to its whole-key bloom filter.
const MEMTABLE_BLOOM_RATIO: f64 = 0.1;
/// How a point read finds its key in a data block: a binary search over
/// the restart points (RocksDB's default), not a hash index beside it.
///
/// # Why
/// A hash index spares a point read two or three key comparisons in a
/// 4 KiB block (~55 coins, a restart point every 16), but every table
/// written builds one, and compactions rewrite every coin several times;
/// BIP30's prefix seeks never use it. Measured on the `utxo-heavy` chain
/// to height 2,000 at `-dbcache=100`, scripts skipped (one invocation):
/// 68.5 s with the hash index, 64.2 s without (CPU 128 s against 120 s),
/// faster in every quarter.
const DATA_BLOCK_INDEX: DataBlockIndexType = DataBlockIndexType::BinarySearch;
/// Whether the last level's tables carry bloom filters.
///
/// # Why not
/// The last level holds ~90 % of the coins, and a read that reaches it
/// finds its coin there: the prefetch asks only for coins neither map
/// holds, spent by a block whose own transactions' coins it leaves out
/// ([`crate::stages`]' connector), and a coin no table holds is spent by
/// an invalid block only. The misses left are BIP30's where it is looked
/// up before each block (mainnet below BIP34's height 227,931, a set of a
/// few million coins; testnet3): each costs an index seek and a data
/// block read at the last level instead of a filter probe. Without the
/// filters, compactions into the last level build none (one hash a key),
/// and the table readers hold a tenth of the filter memory: ~0.13 bytes
/// a coin instead of ~1.3, ~23 MiB instead of ~230 MiB for mainnet's
/// 180 M coins, memory the UTXO maps keep ([`crate::CoinsCache::limit_bytes`]).
/// Measured on the `utxo-heavy` chain to height 2,000 at `-dbcache=100`,
/// scripts skipped, with BIP30 looked up only for failing blocks (three
/// runs each, alternating): 55.3 s mean against 57.5 s, 104 s of CPU
/// against 108 s. With BIP30 looked up before every block, whose misses
/// the last level's filters answer, it gains nothing.
pub const LAST_LEVEL_FILTERS: bool = false;
/// RocksDB's compaction threads for the coins database (one more thread
/// runs memtable flushes): RocksDB's default is one.
///
/// # Why
/// With one thread, a compaction from level 0 into the base level waits
/// while the base level is compacted further down, level 0 piles up (35
/// files at the end of the `utxo-heavy` import at `-dbcache=100`, where a
/// compaction starts at 15), and every read that misses the memtables
/// probes each file's filter. Three threads, and compactions split in
/// [`SUBCOMPACTIONS_MAX`] key ranges, keep level 0 down: measured on the
/// `utxo-heavy` chain to height 2,000 at `-dbcache=100`, scripts skipped
/// (one invocation), 68.5 s against 63.7 s, 0.82 of the time
/// in the last quarter, 118 s of CPU against 128 s.
pub const COMPACTION_JOBS_MAX: usize = 3;
/// Key ranges a compaction is split into, compacted in parallel.
pub const SUBCOMPACTIONS_MAX: u32 = 2;
/// RocksDB block cache by default (Core's LevelDB block cache at its
/// largest: half of the 8 MiB coins-database share).
pub const BLOCK_CACHE_BYTES_DEFAULT: usize = crate::budget::BLOCK_CACHE_BYTES_MAX;

/// One RocksDB iterator seeking `'C' || txid` prefixes, one question after
/// another: BIP30's lookups for a block's transactions.
///
/// # Why one iterator for many seeks
/// Making an iterator builds a child for each memtable, each level-0 table
/// and each level (with an index iterator each), and a merging heap over
/// them, all on the heap; a seek on a fresh one then asks each table's
/// prefix bloom filter. `perf` on the `utxo-heavy` chain at `-dbcache=100`
/// (scripts skipped, ~1,200 transactions a block, one iterator each) put
/// the script threads' BIP30 lookups at 21 % of all samples, of which
/// `malloc`/`free` were 7 points and building and dropping iterators about
/// 5, against 5 for the bloom probes that answer the question.
pub struct CoinPrefixSeeker<'a> {
    iterator: rocksdb::DBRawIteratorWithThreadMode<'a, DB>,
}

impl CoinPrefixSeeker<'_> {
    /// Whether the database (as of this seeker's making) has an unspent
    /// coin of any output of `txid`.
    pub fn has_coin_of(&mut self, txid: &Txid) -> Result<bool, ChainstateError> {
        let mut prefix = [0u8; COIN_TXID_PREFIX_BYTES];
        prefix[0] = COIN_KEY_PREFIX;
        prefix[1..].copy_from_slice(txid.as_bytes());
        self.iterator.seek(prefix);
        let found = self.iterator.key().is_some_and(|key| key.starts_with(&prefix));
        self.iterator.status()?;
        Ok(found)
    }
}

impl std::fmt::Debug for CoinPrefixSeeker<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("CoinPrefixSeeker").finish_non_exhaustive()
    }
}

/// Whether directory `path` holds RocksDB data: tables (`*.sst`, `*.blob`)
/// or a write-ahead log (`*.log`; the info log is `LOG`).
///
/// A database is created only where there is none. RocksDB's
/// `create_if_missing` looks only at `CURRENT`: with `CURRENT` lost, it
/// writes a new, empty database over the old tables (refusing once if a
/// log is left, then opening the empty database at the next start), and a
/// chainstate would then claim its tip with no coins. Without
/// `create_if_missing`, the open fails instead, and the node says which
/// database to rebuild.
pub fn holds_database_files(path: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        [".sst", ".blob", ".log"].iter().any(|suffix| name.ends_with(suffix))
    })
}
/// Key of the best block record (`'B'`, the smallest key).
pub(crate) const BEST_BLOCK_KEY: &[u8] = b"B";
/// Key of the head blocks record (`'H'`, the largest key).
pub(crate) const HEAD_BLOCKS_KEY: &[u8] = b"H";
/// Compact-size count 2 and two hashes, as Core's `std::vector<uint256>`.
const HEAD_BLOCKS_BYTES: usize = 1 + 32 + 32;

/// How to open the coins database.
#[derive(Debug, Clone)]
pub struct DatabaseOptions {
    /// Largest write batch of a flush, in bytes (`-dbbatchsize`).
    pub flush_batch_bytes_max: usize,
    /// Create the database when missing.
    pub create_if_missing: bool,
    /// RocksDB block cache, in bytes.
    pub block_cache_bytes: usize,
    /// One memtable, in bytes.
    pub memtable_bytes: usize,
    /// Tables a background flush is written as
    /// ([`crate::budget::DBCACHE_BYTES_PER_FLUSH_TABLE`]); the level-0
    /// compaction triggers are scaled by it.
    pub flush_table_count: usize,
    /// Open with RocksDB's read-only mode: no byte of the directory is
    /// changed (no `MANIFEST`, `OPTIONS`, `CURRENT` or info log written, no
    /// log flushed into a table, no compaction), and every write fails. For
    /// tools that read a stopped node's coins (`ibex txoutsetinfo`).
    pub read_only: bool,
}

impl DatabaseOptions {
    /// The options for the coins database's share of memory.
    pub fn with_memory(memory: &crate::budget::CoinsDatabaseMemory) -> DatabaseOptions {
        DatabaseOptions {
            flush_batch_bytes_max: memory.flush_batch_bytes_max,
            create_if_missing: true,
            block_cache_bytes: memory.block_cache_bytes,
            memtable_bytes: memory.memtable_bytes,
            flush_table_count: memory.flush_table_count,
            read_only: false,
        }
    }
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        DatabaseOptions {
            flush_batch_bytes_max: FLUSH_BATCH_BYTES_DEFAULT,
            create_if_missing: true,
            block_cache_bytes: BLOCK_CACHE_BYTES_DEFAULT,
            memtable_bytes: MEMTABLE_BYTES_DEFAULT,
            flush_table_count: 1,
            read_only: false,
        }
    }
}

/// The blocks an unfinished flush covers (Core's `DB_HEAD_BLOCKS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadBlocks {
    /// The tip the flush was writing.
    pub new_tip: BlockHash,
    /// The tip the database had before it ([`BlockHash::ZERO`] for none).
    pub old_tip: BlockHash,
}

/// What a flush wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlushStats {
    /// Coins written (created or changed).
    pub coins_written: u64,
    /// Coins erased (spent).
    pub coins_erased: u64,
    /// Write batches.
    pub batch_count: u64,
    /// Bytes of all batches.
    pub batch_bytes: u64,
}

impl std::ops::AddAssign for FlushStats {
    fn add_assign(&mut self, other: FlushStats) {
        self.coins_written += other.coins_written;
        self.coins_erased += other.coins_erased;
        self.batch_count += other.batch_count;
        self.batch_bytes += other.batch_bytes;
    }
}

/// The coins database.
pub struct CoinsDatabase {
    db: DB,
    flush_batch_bytes_max: usize,
    /// Core's `-dbcrashratio`: after each partial flush batch, exit at
    /// random with probability 1 / ratio (0: never). Only crash tests set it.
    crash_ratio: AtomicU64,
    crash_random: AtomicU64,
    /// Bytes of the write batches written since open (RocksDB's "user
    /// bytes", the denominator of write amplification: [`crate::database_io`]).
    written_bytes: AtomicU64,
    /// Whether tables written from now on put whole coin keys in their
    /// filters ([`CoinsDatabase::drop_whole_key_filters`]).
    pub(crate) whole_key_filters: AtomicBool,
    /// Number of the next table a flush writes ([`crate::database_ingest`]).
    table_number: AtomicU64,
    /// Whether flushes go out as write batches instead of ingested tables
    /// ([`CoinsDatabase::set_batch_flushes`]).
    pub(crate) batch_flushes: AtomicBool,
    /// Tables a background flush is written as (at least one).
    flush_table_count: usize,
}

impl std::fmt::Debug for CoinsDatabase {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CoinsDatabase")
            .field("path", &self.db.path())
            .field("flush_batch_bytes_max", &self.flush_batch_bytes_max)
            .finish()
    }
}

impl CoinsDatabase {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: &Path, options: &DatabaseOptions) -> Result<CoinsDatabase, ChainstateError> {
        // RocksDB makes the directory of any database it opens.
        if options.read_only && !path.is_dir() {
            return Err(ChainstateError::NoDatabase { path: path.to_path_buf() });
        }
        let mut table = BlockBasedOptions::default();
        // Most prefetch misses are absent keys only during BIP30 checks; a
        // bloom filter makes those and cold lookups skip most table reads.
        table.set_bloom_filter(10.0, false);
        table.set_block_cache(&rocksdb::Cache::new_lru_cache(options.block_cache_bytes));
        // No hash index in the data blocks (RocksDB's `BinaryAndHash`):
        // see [`DATA_BLOCK_INDEX`].
        table.set_data_block_index_type(DATA_BLOCK_INDEX);
        let mut rocks = Options::default();
        rocks.set_env(&background_env()?);
        // A bloom filter over each memtable's whole keys: nearly every
        // point read misses the memtables (BIP30's lookups of new outputs,
        // prefetches of coins flushed earlier), and a miss in a 16 MiB
        // skip list is ~20 key comparisons with cache misses (~1-2 us).
        rocks.set_memtable_whole_key_filtering(true);
        rocks.set_memtable_prefix_bloom_ratio(MEMTABLE_BLOOM_RATIO);
        // Filters also hold each coin key's `'C' || txid` prefix, so that
        // BIP30 asks once per transaction whether any of its outputs
        // exists ([`CoinPrefixSeeker::has_coin_of`]). Point reads use the
        // whole-key filters until they are dropped
        // ([`CoinsDatabase::drop_whole_key_filters`]); walks use
        // total-order iterators.
        rocks.set_prefix_extractor(SliceTransform::create_fixed_prefix(COIN_TXID_PREFIX_BYTES));
        rocks.create_if_missing(
            options.create_if_missing && !options.read_only && !holds_database_files(path),
        );
        rocks.set_write_buffer_size(options.memtable_bytes);
        // Three memtables, two written to a table together
        // ([`crate::budget::MEMTABLES_MERGED_PER_FLUSH`]); small constants,
        // so the casts cannot truncate.
        rocks.set_max_write_buffer_number(crate::budget::MEMTABLE_COUNT_MAX as i32);
        rocks
            .set_min_write_buffer_number_to_merge(crate::budget::MEMTABLES_MERGED_PER_FLUSH as i32);
        let flush_table_count = options.flush_table_count.max(1);
        crate::database_levels::set_level0_triggers(
            &mut rocks,
            options.memtable_bytes,
            flush_table_count,
        );
        // Values are already compact; compression would cost CPU for little.
        rocks.set_compression_type(DBCompressionType::None);
        // Compactions in parallel with each other and split in two
        // ([`COMPACTION_JOBS_MAX`]).
        rocks.set_max_background_jobs(COMPACTION_JOBS_MAX as i32 + 1);
        rocks.set_max_subcompactions(SUBCOMPACTIONS_MAX);
        rocks.set_block_based_table_factory(&table);
        // No filters in the last level: see [`LAST_LEVEL_FILTERS`].
        rocks.set_optimize_filters_for_hits(!LAST_LEVEL_FILTERS);
        // Listing the default family gives `batched_multi_get_cf` its handle.
        // It is listed with these options: `DB::open_cf` would give it
        // RocksDB's defaults (no bloom filter, 64 MiB memtables, a 32 MiB
        // block cache), silently, as it did here until the `utxo-heavy`
        // profile showed skip-list searches for keys that cannot exist.
        let family =
            ColumnFamilyDescriptor::new(rocksdb::DEFAULT_COLUMN_FAMILY_NAME, rocks.clone());
        let db = if options.read_only {
            // The write-ahead log is replayed into memory only.
            DB::open_cf_descriptors_read_only(&rocks, path, [family], false)?
        } else {
            DB::open_cf_descriptors(&rocks, path, [family])?
        };
        let flush_batch_bytes_max = options.flush_batch_bytes_max.max(FLUSH_BATCH_BYTES_MIN);
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |elapsed| elapsed.as_nanos() as u64 | 1);
        let database = CoinsDatabase {
            db,
            flush_batch_bytes_max,
            crash_ratio: AtomicU64::new(0),
            flush_table_count,
            crash_random: AtomicU64::new(seed),
            written_bytes: AtomicU64::new(0),
            whole_key_filters: AtomicBool::new(true),
            table_number: AtomicU64::new(0),
            batch_flushes: AtomicBool::new(false),
        };
        if !options.read_only {
            database.prepare_tables_directory()?;
        }
        Ok(database)
    }

    /// Writes flushes as write batches through the memtables (`true`), as under
    /// `-dbcrashratio`, or as ingested tables (`false`, the default:
    /// [`crate::database_ingest`]). For tests of the batch path.
    pub fn set_batch_flushes(&self, batches: bool) {
        self.batch_flushes.store(batches, Ordering::Relaxed);
    }

    /// Tables a background flush is written as
    /// ([`DatabaseOptions::flush_table_count`]).
    pub fn flush_table_count(&self) -> usize {
        self.flush_table_count
    }

    /// The `-dbcrashratio` set (0: none).
    pub(crate) fn crash_ratio(&self) -> u64 {
        self.crash_ratio.load(Ordering::Relaxed)
    }

    /// The database's directory.
    pub(crate) fn path(&self) -> &Path {
        self.db.path()
    }

    /// The RocksDB handle.
    pub(crate) fn raw(&self) -> &DB {
        &self.db
    }

    /// A number for a new table file, unique since open.
    pub(crate) fn next_table_number(&self) -> u64 {
        self.table_number.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts `bytes` written to the database by the chainstate.
    pub(crate) fn add_written_bytes(&self, bytes: u64) {
        self.written_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Sets Core's `-dbcrashratio` (testing only): after each partial
    /// flush batch the process exits at random with probability `1 / ratio`,
    /// leaving an interrupted flush for the next start to replay.
    pub fn set_crash_ratio(&self, ratio: u64) {
        self.crash_ratio.store(ratio, Ordering::Relaxed);
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

    /// The capacity of the block cache RocksDB uses for the coins, in
    /// bytes, as RocksDB reports it.
    pub fn block_cache_capacity_bytes(&self) -> Option<u64> {
        self.db.property_int_value("rocksdb.block-cache-capacity").ok().flatten()
    }

    /// A RocksDB text property of the coins (`rocksdb.cfstats`...); `None`
    /// when RocksDB does not know it or fails.
    pub fn property_text(&self, name: &str) -> Option<String> {
        self.db.property_value(name).ok().flatten()
    }

    /// A RocksDB integer property of the coins
    /// (`rocksdb.total-sst-files-size`...); `None` when unknown.
    pub fn property_integer(&self, name: &str) -> Option<u64> {
        self.db.property_int_value(name).ok().flatten()
    }

    /// Bytes of the write batches written since open.
    pub fn written_bytes(&self) -> u64 {
        self.written_bytes.load(Ordering::Relaxed)
    }

    /// The batch limit of flushes, in bytes.
    pub fn flush_batch_bytes_max(&self) -> usize {
        self.flush_batch_bytes_max
    }

    /// Whether the database has an unspent coin at `outpoint` (no decoding).
    pub fn has_coin(&self, outpoint: &OutPoint) -> Result<bool, ChainstateError> {
        Ok(self.db.get_pinned(CoinKey::new(outpoint))?.is_some())
    }

    /// An iterator for [`CoinPrefixSeeker::has_coin_of`] questions
    /// (BIP30's: whether any output of a transaction is an unspent coin,
    /// one prefix seek answered by the prefix bloom filters for nearly
    /// every new transaction, instead of one point read per output). It
    /// reads the database as it was when made: writes that land later are
    /// not seen (make a new one to see them).
    pub fn prefix_seeker(&self) -> CoinPrefixSeeker<'_> {
        let mut options = ReadOptions::default();
        options.set_prefix_same_as_start(true);
        CoinPrefixSeeker { iterator: self.db.raw_iterator_opt(options) }
    }

    /// The coin at `outpoint`, if unspent.
    pub fn coin(&self, outpoint: &OutPoint) -> Result<Option<Coin>, ChainstateError> {
        let value = self.db.get_pinned(CoinKey::new(outpoint))?;
        value.map(|bytes| decode_coin(outpoint, &bytes)).transpose()
    }

    /// The coins at `outpoints`, in order, with one RocksDB `MultiGet`.
    pub fn coins(&self, outpoints: &[OutPoint]) -> Result<Vec<Option<Coin>>, ChainstateError> {
        let keys: Vec<CoinKey> = outpoints.iter().map(CoinKey::new).collect();
        let Some(family) = self.db.cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME) else {
            let values = self.db.multi_get(&keys);
            return decode_all(outpoints, values);
        };
        let values = self.db.batched_multi_get_cf(family, &keys, false);
        decode_all(outpoints, values)
    }

    /// The best block the coins reflect, `None` for a new database or after
    /// a flush in batches was interrupted (a flush in tables leaves the old
    /// tip here until its last table: [`CoinsDatabase::head_blocks`] tells
    /// whether one was interrupted).
    pub fn best_block(&self) -> Result<Option<BlockHash>, ChainstateError> {
        let Some(bytes) = self.db.get_pinned(BEST_BLOCK_KEY)? else {
            return Ok(None);
        };
        let hash: [u8; 32] = bytes[..].try_into().map_err(|_| ChainstateError::CorruptRecord {
            record: "best block",
            length_bytes: bytes.len(),
        })?;
        Ok(Some(BlockHash(hash)))
    }

    /// The blocks an interrupted flush covered, if one was interrupted.
    ///
    /// A flush in several tables leaves its `'H'` record behind: its last
    /// table puts `'B'` and does not erase `'H'`, so that no table's key
    /// range spans the coins of another ([`crate::database_ingest`]). `'H'`
    /// naming as its new tip the block `'B'` names is a finished flush.
    pub fn head_blocks(&self) -> Result<Option<HeadBlocks>, ChainstateError> {
        let Some(heads) = self.head_blocks_record()? else { return Ok(None) };
        if self.best_block()? == Some(heads.new_tip) {
            return Ok(None);
        }
        Ok(Some(heads))
    }

    /// The `'H'` record as written, finished flush or not.
    fn head_blocks_record(&self) -> Result<Option<HeadBlocks>, ChainstateError> {
        let Some(bytes) = self.db.get_pinned(HEAD_BLOCKS_KEY)? else {
            return Ok(None);
        };
        let corrupt =
            || ChainstateError::CorruptRecord { record: "head blocks", length_bytes: bytes.len() };
        let mut reader = Reader::new(&bytes);
        if reader.read_compact_size().map_err(|_| corrupt())? != 2 {
            return Err(corrupt());
        }
        let new_tip = BlockHash(*reader.take_array::<32>().map_err(|_| corrupt())?);
        let old_tip = BlockHash(*reader.take_array::<32>().map_err(|_| corrupt())?);
        reader.finish().map_err(|_| corrupt())?;
        Ok(Some(HeadBlocks { new_tip, old_tip }))
    }

    /// Every coin in key order (Core's iteration order), for set hashes and tests.
    pub fn iter_coins(
        &self,
    ) -> impl Iterator<Item = Result<(OutPoint, Coin), ChainstateError>> + '_ {
        // Total order: the prefix extractor's domain is `'C' || txid`, and
        // a prefix iterator over the one byte `'C'` would not be.
        let mut options = ReadOptions::default();
        options.set_total_order_seek(true);
        let start = [COIN_KEY_PREFIX];
        let mode = rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward);
        self.db
            .iterator_opt(mode, options)
            .take_while(|item| match item {
                Ok((key, _)) => key.first() == Some(&COIN_KEY_PREFIX),
                Err(_) => true,
            })
            .map(|item| {
                let (key, value) = item?;
                let outpoint = CoinKey::decode(&key)
                    .map_err(|source| ChainstateError::CorruptKey { source })?;
                let coin = decode_coin(&outpoint, &value)?;
                Ok((outpoint, coin))
            })
    }

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

    /// The old tip of a flush to `new_tip`: the one an interrupted flush
    /// recorded (which must have been to `new_tip` too), else the best block.
    pub(crate) fn check_head_blocks(
        &self,
        new_tip: BlockHash,
    ) -> Result<BlockHash, ChainstateError> {
        Ok(match self.head_blocks()? {
            Some(heads) if heads.new_tip != new_tip => {
                return Err(ChainstateError::InconsistentHeadBlocks {
                    interrupted: heads.new_tip,
                    requested: new_tip,
                })
            }
            Some(heads) => heads.old_tip,
            None => self.best_block()?.unwrap_or(BlockHash::ZERO),
        })
    }

    /// Another writer of coin batches for the flush in progress, for another
    /// thread, with batches of at most `batch_bytes_max`. Its batches are
    /// neither the first nor the last of the flush: call
    /// [`FlushWriter::write_head`] before and [`FlushWriter::add_stats`] with
    /// its result before [`FlushWriter::finish`].
    pub fn coin_batches(&self, batch_bytes_max: usize) -> CoinBatches<'_> {
        CoinBatches::new(self, batch_bytes_max)
    }

    /// The bytes of every table file of the database (Core's `disk_size`
    /// in `gettxoutsetinfo`, LevelDB's size of the tables holding coins).
    /// RocksDB's `estimate-live-data-size` would leave out each table whose
    /// keys a table of a lower level also covers: level-0 tables of recent
    /// flushes over older ones, most of a node's database after a sync.
    pub fn estimated_size_bytes(&self) -> Result<u64, ChainstateError> {
        Ok(self.db.property_int_value("rocksdb.live-sst-files-size")?.unwrap_or(0))
    }

    /// Bytes RocksDB's open tables hold in the heap outside the block
    /// cache (bloom filters and index blocks: `estimate-table-readers-mem`).
    pub fn table_readers_bytes(&self) -> Result<usize, ChainstateError> {
        let bytes = self.db.property_int_value("rocksdb.estimate-table-readers-mem")?;
        Ok(usize::try_from(bytes.unwrap_or(0)).unwrap_or(usize::MAX))
    }

    /// Whether tables written from now on put whole coin keys in their
    /// filters (see [`CoinsDatabase::drop_whole_key_filters`]).
    pub fn has_whole_key_filters(&self) -> bool {
        self.whole_key_filters.load(Ordering::Acquire)
    }

    /// From now on, tables are written with filters of `'C' || txid`
    /// prefixes only, not of whole coin keys too; tables already written
    /// keep theirs until compactions rewrite them. Returns whether this
    /// call made the change (false if it was made before).
    ///
    /// # Why, and why it is safe
    /// A whole-key filter costs ~1.25 bytes a coin in the table readers
    /// (10 bits a key), which the UTXO maps' share pays for
    /// ([`crate::CoinsCache::set_table_readers_bytes`]); a prefix filter
    /// costs that per transaction id in a table, a tenth as much on the
    /// `utxo-heavy` chain (~11 outputs a transaction). Point reads of coins
    /// then match on the transaction id, so a table holding other outputs
    /// (or their erasures) of the same transaction is read for nothing:
    /// measured on `utxo-heavy` to height 2,000 (scripts skipped), prefix
    /// filters only were 8 % faster at `-dbcache=100`, where the whole-key
    /// filters took the maps' share, and 4.7 % slower at `-dbcache=450`,
    /// where they took a fifth of it (docs/utxo-heavy.md). The
    /// change goes through RocksDB's `SetOptions` on a clone of the table
    /// factory (every other table option kept). Each table records in its
    /// properties whether it holds whole keys, and RocksDB's table reader
    /// only probes whole keys in tables that say so (`BlockBasedTable::Open`
    /// ands its option with the property); the prefixes are in every
    /// table's filter (the prefix extractor is unchanged). So no read can
    /// miss a coin, whatever mix of tables a restart finds.
    pub fn drop_whole_key_filters(&self) -> Result<bool, ChainstateError> {
        if !self.has_whole_key_filters() {
            return Ok(false);
        }
        // The flag follows the option only once RocksDB has taken it.
        self.db.set_options(&[("block_based_table_factory", "{whole_key_filtering=false;}")])?;
        Ok(self.whole_key_filters.swap(false, Ordering::AcqRel))
    }

    /// Writes RocksDB's memtables to table files and waits until they are
    /// synced and recorded: every write so far is durable then (nothing is
    /// logged: see the module docs), and reads come from the files as after
    /// a restart. ~0.1-0.5 s for a full 64 MiB memtable.
    pub fn persist_memtables(&self) -> Result<(), ChainstateError> {
        self.db.flush()?;
        Ok(())
    }

    /// Persists the memtables and compacts every table into the last
    /// level, waiting for it: the layout a long import converges to, at
    /// once (tests and tools; an import never calls it).
    pub fn compact_all(&self) -> Result<(), ChainstateError> {
        self.persist_memtables()?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }
}

fn decode_all<V: AsRef<[u8]>>(
    outpoints: &[OutPoint],
    values: Vec<Result<Option<V>, rocksdb::Error>>,
) -> Result<Vec<Option<Coin>>, ChainstateError> {
    outpoints
        .iter()
        .zip(values)
        .map(|(outpoint, value)| {
            value?.map(|bytes| decode_coin(outpoint, bytes.as_ref())).transpose()
        })
        .collect()
}

fn decode_coin(outpoint: &OutPoint, bytes: &[u8]) -> Result<Coin, ChainstateError> {
    Coin::decode(bytes)
        .map_err(|source| ChainstateError::CorruptCoin { outpoint: *outpoint, source })
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

/// The head-blocks record (`'H'`) of a flush from `old_tip` to `new_tip`:
/// Core's vector of the two hashes, the new one first.
pub(crate) fn head_blocks_record(new_tip: BlockHash, old_tip: BlockHash) -> Vec<u8> {
    let mut record = Vec::with_capacity(HEAD_BLOCKS_BYTES);
    write_compact_size(&mut record, 2);
    record.extend_from_slice(new_tip.as_bytes());
    record.extend_from_slice(old_tip.as_bytes());
    record
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

/// RocksDB's environment with its compaction and flush threads at the
/// lowest CPU priority (nice 19).
///
/// # Why
/// The process uses both cores of the machines measured, and the
/// connecting thread and its prefetch readers are the import's critical
/// path: a compaction that takes a core from them delays every block,
/// while a compaction delayed by them only runs later, in the gaps (a
/// flush waits for a prefetch, a block for the disk). RocksDB slows and
/// stops writes when compactions fall far behind, which bounds the debt.
/// Measured on the `utxo-heavy` chain to height 2,000 at `-dbcache=100`,
/// scripts skipped, with flushes ingested as tables (docs/utxo-heavy.md):
/// the prefetch readers waited 17 s each to run; with the compactions
/// reniced the import took 44.8-47.7 s against 47.6-51.4 s. With memtable
/// flushes it gains nothing: compactions have no gaps to fill there.
fn background_env() -> Result<rocksdb::Env, ChainstateError> {
    let mut env = rocksdb::Env::new()?;
    env.lower_thread_pool_cpu_priority();
    env.lower_high_priority_thread_pool_cpu_priority();
    Ok(env)
}

/// Options of every write to the coins database: without the WAL (see the
/// module docs, "No write-ahead log").
fn unlogged_write() -> WriteOptions {
    let mut options = WriteOptions::default();
    options.disable_wal(true);
    options
}
