//! The coins database itself: the RocksDB handle opened with the
//! [`DatabaseOptions`], its reads (coins, the `'B'` and `'H'` records,
//! properties) and the directory where flush tables wait to be ingested.
//! Writes go through the two flush protocols beside it: write batches
//! ([`super::batch`]) and ingested tables ([`super::ingest`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ibex_primitives::encode::{write_compact_size, Reader};
use ibex_primitives::{BlockHash, OutPoint, Txid};
use rocksdb::{
    BlockBasedOptions, ColumnFamilyDescriptor, DBCompressionType, Options, ReadOptions,
    SliceTransform, DB,
};

use super::levels::set_level0_triggers;
use super::options::{
    DatabaseOptions, COIN_TXID_PREFIX_BYTES, COMPACTION_JOBS_MAX, DATA_BLOCK_INDEX,
    FLUSH_BATCH_BYTES_MIN, LAST_LEVEL_FILTERS, MEMTABLES_MERGED_PER_FLUSH, MEMTABLE_BLOOM_RATIO,
    MEMTABLE_COUNT_MAX, SUBCOMPACTIONS_MAX,
};
use crate::coins::coin::{Coin, CoinKey, COIN_KEY_PREFIX};
use crate::error::ChainstateError;

/// Directory, inside the coins database's, of tables written and not yet
/// ingested.
pub const TABLES_DIRECTORY: &str = "ibex-flush-tables";

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
    pub(super) db: DB,
    pub(super) flush_batch_bytes_max: usize,
    /// Core's `-dbcrashratio`: after each partial flush batch, exit at
    /// random with probability 1 / ratio (0: never). Only crash tests set it.
    pub(super) crash_ratio: AtomicU64,
    pub(super) crash_random: AtomicU64,
    /// Bytes of the write batches written since open (RocksDB's "user
    /// bytes", the denominator of write amplification: [`super::io`]).
    pub(super) written_bytes: AtomicU64,
    /// Whether tables written from now on put whole coin keys in their
    /// filters ([`CoinsDatabase::drop_whole_key_filters`]).
    pub(super) whole_key_filters: AtomicBool,
    /// Number of the next table a flush writes ([`super::ingest`]).
    pub(super) table_number: AtomicU64,
    /// Whether flushes go out as write batches instead of ingested tables
    /// ([`CoinsDatabase::set_batch_flushes`]).
    pub(super) batch_flushes: AtomicBool,
    /// Tables a background flush is written as (at least one).
    pub(super) flush_table_count: usize,
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
        let rocks = rocks_options(path, options)?;
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
        let flush_table_count = options.flush_table_count.max(1);
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

    /// Sets Core's `-dbcrashratio` (testing only): after each partial
    /// flush batch the process exits at random with probability `1 / ratio`,
    /// leaving an interrupted flush for the next start to replay.
    pub fn set_crash_ratio(&self, ratio: u64) {
        self.crash_ratio.store(ratio, Ordering::Relaxed);
    }

    /// Writes flushes as write batches through the memtables (`true`), as under
    /// `-dbcrashratio`, or as ingested tables (`false`, the default:
    /// [`crate::coins::database::ingest`]). For tests of the batch path.
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

    /// An iterator for `CoinPrefixSeeker::has_coin_of` questions
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

    /// The coins at `outpoints` as `snapshot` saw them, in order, with one
    /// RocksDB `MultiGet`.
    pub(crate) fn coins_in(
        &self,
        snapshot: &rocksdb::SnapshotWithThreadMode<'_, DB>,
        outpoints: &[OutPoint],
    ) -> Result<Vec<Option<Coin>>, ChainstateError> {
        let keys: Vec<CoinKey> = outpoints.iter().map(CoinKey::new).collect();
        let mut options = ReadOptions::default();
        options.set_snapshot(snapshot);
        let values = self.db.multi_get_opt(&keys, &options);
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
    /// range spans the coins of another ([`crate::coins::database::ingest`]). `'H'`
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
        self.iter_coins_in(None)
    }

    /// Every coin in key order as `snapshot` saw them (now when `None`).
    pub(crate) fn iter_coins_in<'a>(
        &'a self,
        snapshot: Option<&rocksdb::SnapshotWithThreadMode<'_, DB>>,
    ) -> impl Iterator<Item = Result<(OutPoint, Coin), ChainstateError>> + 'a {
        // Total order: the prefix extractor's domain is `'C' || txid`, and
        // a prefix iterator over the one byte `'C'` would not be.
        let mut options = ReadOptions::default();
        options.set_total_order_seek(true);
        if let Some(snapshot) = snapshot {
            options.set_snapshot(snapshot);
        }
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

    /// Where tables wait to be ingested.
    pub(crate) fn tables_directory(&self) -> PathBuf {
        self.path().join(TABLES_DIRECTORY)
    }

    /// Empties (or makes) [`TABLES_DIRECTORY`]: a table left there by a
    /// crash was never ingested.
    pub(crate) fn prepare_tables_directory(&self) -> Result<(), ChainstateError> {
        let path = self.tables_directory();
        let error = |source| ChainstateError::TableDirectory { path: path.clone(), source };
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(error)?;
        }
        std::fs::create_dir_all(&path).map_err(error)
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

/// The head-blocks record (`'H'`) of a flush from `old_tip` to `new_tip`:
/// Core's vector of the two hashes, the new one first.
pub(crate) fn head_blocks_record(new_tip: BlockHash, old_tip: BlockHash) -> Vec<u8> {
    let mut record = Vec::with_capacity(HEAD_BLOCKS_BYTES);
    write_compact_size(&mut record, 2);
    record.extend_from_slice(new_tip.as_bytes());
    record.extend_from_slice(old_tip.as_bytes());
    record
}

/// RocksDB's options for the coins database at `path` opened with
/// `options` (set on the default column family itself: see the [module
/// docs](super), "Memory").
fn rocks_options(path: &Path, options: &DatabaseOptions) -> Result<Options, ChainstateError> {
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
    // ([`MEMTABLES_MERGED_PER_FLUSH`]); small constants, so the casts
    // cannot truncate.
    rocks.set_max_write_buffer_number(MEMTABLE_COUNT_MAX as i32);
    rocks.set_min_write_buffer_number_to_merge(MEMTABLES_MERGED_PER_FLUSH as i32);
    set_level0_triggers(&mut rocks, options.memtable_bytes, options.flush_table_count.max(1));
    // Values are already compact; compression would cost CPU for little.
    rocks.set_compression_type(DBCompressionType::None);
    // Compactions in parallel with each other and split in two
    // ([`COMPACTION_JOBS_MAX`]).
    rocks.set_max_background_jobs(COMPACTION_JOBS_MAX as i32 + 1);
    rocks.set_max_subcompactions(SUBCOMPACTIONS_MAX);
    rocks.set_block_based_table_factory(&table);
    // No filters in the last level: see [`LAST_LEVEL_FILTERS`].
    rocks.set_optimize_filters_for_hits(!LAST_LEVEL_FILTERS);
    Ok(rocks)
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
