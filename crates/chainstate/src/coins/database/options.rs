//! How the coins database is opened: the options a caller gives
//! ([`DatabaseOptions`], from the database's share of memory:
//! [`CoinsDatabaseMemory`]) and the tuning constants behind them. The
//! RocksDB options built from them are set in [`super::store`].

use rocksdb::DataBlockIndexType;

/// Core's `-dbbatchsize` default: 32 MiB.
pub const FLUSH_BATCH_BYTES_DEFAULT: usize = 32 << 20;
/// Smallest batch limit accepted (tests use small ones to force many batches).
pub const FLUSH_BATCH_BYTES_MIN: usize = 1;
/// Memtables of the coins database at once, the one being filled included
/// (RocksDB's `max_write_buffer_number`): writes wait for the older ones
/// to reach disk rather than grow memory.
pub const MEMTABLE_COUNT_MAX: usize = 3;
/// Full memtables RocksDB writes to one level-0 table together (its
/// `min_write_buffer_number_to_merge`): one memtable fills while the two
/// before it wait to be written as one.
///
/// # Why
/// Each level-0 table holds twice as much, so a compaction of level 0
/// carries more (the trigger counts tables:
/// [`super::levels::level0_file_triggers`]); a coin written by
/// one flush and erased by the next is dropped when both land in the same
/// table; and young coins stay readable from memory for two to three
/// memtables' lives instead of one to two. The profile by quarter shows
/// the saving in compaction (1.3 CPU s against 2.3 unmerged in the first
/// quarter, 9.5 against 11.9 in the last), not on the
/// connecting thread, whose reads cost the same. Measured on
/// the `utxo-heavy` chain to height 2,000, scripts skipped,
/// `-reindex-chainstate`, Ibex alone, three alternating runs each
/// (docs/utxo-heavy.md): at `-dbcache=100`, three memtables
/// of 11.1 MiB merged two at a time took 49.1, 50.2 and 50.7 s (93.2 CPU s
/// on average) against two of 16.7 MiB at 55.1, 52.8 and 53.6 s (100.5 CPU
/// s); at `-dbcache=450` (three of 42.7 MiB against two of 64) 46.6 s
/// against 46.9 s. Their size was measured again with the merge
/// (`crate::budget::MEMTABLE_SHARE_DIVISOR`).
pub const MEMTABLES_MERGED_PER_FLUSH: usize = 2;
/// Size of one RocksDB memtable (its `write_buffer_size`) by default, and
/// the most the budget of `-dbcache` gives one: all of them together hold
/// at most 128 MiB.
pub const MEMTABLE_BYTES_DEFAULT: usize = (128 << 20) / MEMTABLE_COUNT_MAX;
/// Bytes of a coin key's `'C' || txid` prefix (RocksDB's prefix extractor).
pub const COIN_TXID_PREFIX_BYTES: usize = 33;
/// Share of each memtable given to its whole-key bloom filter.
pub(super) const MEMTABLE_BLOOM_RATIO: f64 = 0.1;
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
pub(super) const DATA_BLOCK_INDEX: DataBlockIndexType = DataBlockIndexType::BinarySearch;
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
/// RocksDB block cache by default, and the most the budget of `-dbcache`
/// gives it (Core's LevelDB block cache at its largest: half of the 8 MiB
/// coins-database share).
pub const BLOCK_CACHE_BYTES_DEFAULT: usize = 4 << 20;

/// The coins database's (RocksDB's) share of memory: a plain value the
/// budget of `-dbcache` computes (`crate::budget::MemoryBudget`) and the
/// opener hands to [`DatabaseOptions::with_memory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoinsDatabaseMemory {
    /// One memtable (`write_buffer_size`); [`MEMTABLE_COUNT_MAX`] of them,
    /// written [`MEMTABLES_MERGED_PER_FLUSH`] to a level-0 table.
    pub memtable_bytes: usize,
    /// The largest write batch of a flush: it lands whole in one memtable,
    /// so each may hold this much beyond its size.
    pub flush_batch_bytes_max: usize,
    /// The block cache.
    pub block_cache_bytes: usize,
    /// One table's coins of a flush in key order (the budget's
    /// `FLUSH_ORDER_SHARE_DIVISOR`, divided among the tables).
    pub flush_order_bytes: usize,
    /// Tables a flush is written as (the budget's
    /// `DBCACHE_BYTES_PER_FLUSH_TABLE`).
    pub flush_table_count: usize,
}

impl CoinsDatabaseMemory {
    /// Everything together: the memtables with a batch landed in each,
    /// the batch being built and the block cache.
    pub fn total_bytes(&self) -> usize {
        MEMTABLE_COUNT_MAX * (self.memtable_bytes + self.flush_batch_bytes_max)
            + self.flush_batch_bytes_max
            + self.block_cache_bytes
            + self.flush_order_bytes
    }
}

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
    /// Tables a background flush is written as (one for each
    /// `crate::budget::DBCACHE_BYTES_PER_FLUSH_TABLE` of `-dbcache`); the
    /// level-0 compaction triggers are scaled by it.
    pub flush_table_count: usize,
    /// Open with RocksDB's read-only mode: no byte of the directory is
    /// changed (no `MANIFEST`, `OPTIONS`, `CURRENT` or info log written, no
    /// log flushed into a table, no compaction), and every write fails. For
    /// tools that read a stopped node's coins (`ibex txoutsetinfo`).
    pub read_only: bool,
}

impl DatabaseOptions {
    /// The options for the coins database's share of memory.
    pub fn with_memory(memory: &CoinsDatabaseMemory) -> DatabaseOptions {
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
