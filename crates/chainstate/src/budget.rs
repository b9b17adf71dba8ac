//! How `-dbcache` is shared among the node's large memory users, so that
//! everything that grows with the work is counted inside it, keeping the
//! bound: peak RSS at most `-dbcache` + 256 MiB, whatever the cache size.
//!
//! # The split ([`MemoryBudget::from_dbcache_bytes`])
//! | part | share of `-dbcache` | at 100 MiB | at 450 MiB |
//! |---|---|---:|---:|
//! | block index database (Core's) | an eighth, at most 2 MiB | 2.0 | 2.0 |
//! | coins database (RocksDB) | three memtables of 1 MiB (flushes go in as ingested tables: [`crate::coins::database::ingest`]; the memtables hold only `-dbcrashratio`'s batches), each with room for a flush batch landing in it whole (a quarter of a memtable), the batch being built, a block cache of a 64th (0.25-4 MiB), and a 7th for the order a flush sorts its coins in ([`FLUSH_ORDER_SHARE_DIVISOR`]), divided among the tables it is written as ([`DBCACHE_BYTES_PER_FLUSH_TABLE`]: 2 at 100, 8 at 450) | 12.7 | 16.0 |
//! | blocks read ahead of validation | an eighth (8-128 MiB) of memory, so half of that in serialised bytes: a prepared block takes about twice its size | 12.5 | 56.2 |
//! | UTXO maps | the rest: the live map, the frozen map a background flush is writing (each group of shards held until its table is in), and the coins database's table readers (bloom filters and indexes, held in the heap while the tables are open), charged as they grow | 72.8 | 375.7 |
//!
//! Blocks read ahead are the import's reader queue and the stored-block
//! read-ahead during `-reindex`/`-loadblock`, or the download window when
//! syncing from peers (which has its own floor of 8 largest blocks in
//! flight, 32 MiB, above the share below `-dbcache=512`); the import and
//! the download do not run at once.
//!
//! # Napkin math
//! At 26 M coins (the `utxo-heavy` chain) the table readers hold ~45 MiB
//! (RocksDB's `estimate-table-readers-mem`: 10 bits a key of bloom filter,
//! ~1.3 bytes a coin, and the index blocks, ~0.4): at `-dbcache=450` a
//! share of 212 MiB for the maps kept ~165-210 MiB as the readers grew
//! (290-320 MiB with memtables of a 32nd). A 180 M-coin mainnet set would need
//! ~310 MiB of table readers with filters at every level, more than
//! `-dbcache=450`'s share; without filters in the last level
//! (`crate::coins::database::LAST_LEVEL_FILTERS`) ~90 MiB, the index blocks
//! most of it. Past the share the maps keep a quarter of it and the rest
//! of the readers is not counted (partitioned indexes in a bounded block
//! cache are the way to count them there).
//!
//! Measured on the `utxo-heavy` chain to height 2,000 (scripts skipped), peak
//! RSS 356 MiB at `-dbcache=450` and 132 MiB at 100. With memtables of a 32nd,
//! at the peak at 450 (493 MiB, 480 MiB anonymous): maps 284 MiB, table readers
//! 31 MiB, memtables 11 MiB, block cache 3 MiB, blocks read ahead 27 MiB
//! serialised (~50 MiB in the heap): ~380 MiB counted, within the 450. Outside
//! it: glibc's free chunks (80-90 MiB on average, `mallinfo2`; capping the
//! arenas at two with `MALLOC_ARENA_MAX=2` made the peak worse, 532 MiB), the
//! script pipeline's blocks, thread stacks and the binary (12 MiB of file
//! pages): the 256 MiB margin covers them with ~200 MiB to spare.

//! # Floor
//! Each part has a minimum: below [`FLOOR_BYTES`] (24 MiB) the minimums
//! take more than `-dbcache` (at most that much: 1 MiB of UTXO maps, 8 MiB
//! for one largest block read ahead, ~4 MiB for RocksDB, up to 2 MiB for
//! the block index), and the process uses that much whatever `-dbcache`
//! says (Core's own floor is 4 MiB, for its caches alone).
//!
//! # A value handed down
//! The split is computed once, by whoever opens the chainstate (the node
//! from `-dbcache` and `-dbbatchsize`, tools and tests from their own
//! sizes), and travels as a plain [`MemoryBudget`] in
//! `ChainstateOptions::memory`; the engine hands each part down as a value
//! (the coins database its [`CoinsDatabaseMemory`], the cache its
//! `coins_bytes`, the read-ahead its bytes). This module sits above the
//! coins (`crate::coins`): it reads their structural constants (memtables,
//! shards, the table readers left uncounted), and nothing in them reads it.

use crate::coins::cache::TABLE_READERS_UNCOUNTED_BYTES_MAX;
use crate::coins::coin_map::SHARD_COUNT_MIN;
pub use crate::coins::database::{
    CoinsDatabaseMemory, MEMTABLES_MERGED_PER_FLUSH, MEMTABLE_COUNT_MAX,
};
use crate::coins::database::{BLOCK_CACHE_BYTES_DEFAULT, MEMTABLE_BYTES_DEFAULT};

/// One mebibyte.
pub const MEBIBYTE: usize = 1 << 20;

/// Core's share for the block index database: an eighth of `-dbcache`, at
/// most this.
pub const BLOCK_INDEX_DATABASE_BYTES_MAX: usize = 2 << 20;
/// One RocksDB memtable of the coins database in the budget (since flushes
/// are ingested as tables: [`MEMTABLE_SHARE_DIVISOR`]) ...
pub const MEMTABLE_BYTES_MIN: usize = 1 << 20;
/// ... and at most, as for databases opened with their own options: all
/// of them together hold at most 128 MiB.
pub const MEMTABLE_BYTES_MAX: usize = MEMTABLE_BYTES_DEFAULT;
/// One memtable would be `-dbcache` / this if flushes went through the
/// memtables. They go in as ingested tables ([`crate::coins::database::ingest`]),
/// so the memtables hold only `-dbcrashratio`'s batches and are
/// [`MEMTABLE_BYTES_MIN`], their memory given to the UTXO maps.
///
/// # Why a 12th
/// With flushes through two memtables, memory in them bought more than
/// the same memory in the UTXO maps when the set is far larger than the
/// cache: measured on the `utxo-heavy` chain to height 2,000,
/// scripts skipped, `-reindex-chainstate`: at `-dbcache=100`, memtables of
/// 3.1 MiB (a 32nd) took 93.0 s and 16 MiB (maps of 28 MiB, 769 flushes)
/// 66.8 s. With three, two written to a table together, a 12th measured
/// best (at `-dbcache=100` a 9th took 50.2-53.2 s, a 12th
/// 48.8-49.4 s, a 16th 46.9 and 48.6 s; `docs/utxo-heavy.md`).
pub const MEMTABLE_SHARE_DIVISOR: usize = 12;
/// The order a flush sorts its coins in before writing them as a table
/// (`crate::coins::database::key_order::sort_in_key_order`: 32 bytes a dirty coin,
/// a number and two pointers) may take `-dbcache` / this. A flush of the
/// `utxo-heavy` chain at `-dbcache=100` writes ~330,000 changed coins from
/// ~55 MiB of maps: 10 MiB of order, a fifth of the maps' bytes, which a
/// 7th of `-dbcache` (14.3 MiB, against maps of 65.7) covers. A flush
/// sorts one table's coins at a time, so the share is divided by the
/// tables ([`DBCACHE_BYTES_PER_FLUSH_TABLE`]).
pub const FLUSH_ORDER_SHARE_DIVISOR: usize = 7;
/// A background flush is written as one table for each this much of
/// `-dbcache` (at least one, at most [`FLUSH_TABLE_COUNT_MAX`]): its
/// frozen map's shards in that many groups of neighbouring key ranges,
/// each group freed once its table is in (`crate::coins::background`).
///
/// # Why
/// Written as one table, a flush holds the whole frozen map until the table is
/// in (~1 s at `-dbcache=450`), while validation fills the live map's headroom
/// (a 16th of the maps) in ~0.2 s and then waits: measured on the `utxo-heavy`
/// chain to height 2,000, scripts skipped (docs/utxo-heavy.md), validation
/// waited 14.1 s of a 40.8 s import at `-dbcache=450` (15 waits of 0.8-1.3 s)
/// and 11.2 s of 45.2 s at 100 (119 waits). More tables free memory sooner but
/// make more level-0 files, each one whose key range a read's key falls in
/// probed by the read, and each counted by the compaction trigger (scaled by
/// the count: `crate::coins::database::levels`). The first and the last table of a
/// flush must not hold both the `'B'` and `'H'` records, which sort below and
/// above the coins: their ranges would span every coin key and every read would
/// probe their filters too (see [`crate::coins::database::ingest::TableFlush`]). One
/// run each: at 450, 1 table 40.8 s, 2 31.2, 4 31.7-32.1, 8 27.9-30.9; at 100,
/// 1 table 45.2 s, 2 40.3-41.5, 4 41.7-43.0, 8 43.9-44.6, 16 52.3-54.6 (a flush
/// there is ~12 MB, tables of a few MB).
pub const DBCACHE_BYTES_PER_FLUSH_TABLE: usize = 48 << 20;
/// Tables a flush is written as, at most, by default.
pub const FLUSH_TABLE_COUNT_MAX: usize = 8;
/// Tables a flush can be written as, at most: one a shard, and a map has
/// at least this many shards (`coin_map::SHARD_COUNT_MIN`), so every count up to
/// it is honoured, and the sort order's share divided by it covers a
/// table's coins.
pub const FLUSH_TABLE_COUNT_LIMIT: usize = SHARD_COUNT_MIN;
/// A flush batch is at most a memtable / this (and `-dbbatchsize`).
pub const FLUSH_BATCH_MEMTABLE_DIVISOR: usize = 4;
/// The coins database's block cache, at least ...
pub const BLOCK_CACHE_BYTES_MIN: usize = 256 << 10;
/// ... and at most (a 64th of `-dbcache` in between; Core gives LevelDB
/// half of its 8 MiB coins-database share).
pub const BLOCK_CACHE_BYTES_MAX: usize = BLOCK_CACHE_BYTES_DEFAULT;
/// Memory for blocks read ahead of validation, at least (one largest
/// block, 4 MB serialised, prepared) ...
pub const INCOMING_BLOCKS_BYTES_MIN: usize = 8 << 20;
/// ... and at most (an eighth of `-dbcache` in between).
pub const INCOMING_BLOCKS_BYTES_MAX: usize = 128 << 20;
/// How much more memory a prepared block takes than its serialised bytes
/// (the bytes, the parsed view, the txids; measured ~1.8 on full blocks).
pub const PREPARED_BLOCK_MEMORY_FACTOR: usize = 2;
/// The UTXO maps' share, at least.
pub const COINS_BYTES_MIN: usize = 1 << 20;
/// From this `-dbcache` up the parts add up to it exactly; below it they
/// take at most this much.
pub const FLOOR_BYTES: usize = 24 << 20;

/// How `-dbcache` is shared (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// `-dbcache`, in bytes.
    pub dbcache_bytes: usize,
    /// The block index database (Core's share).
    pub block_index_database_bytes: usize,
    /// The coins database.
    pub coins_database: CoinsDatabaseMemory,
    /// Blocks read or downloaded ahead of validation, in memory (prepared).
    pub incoming_blocks_bytes: usize,
    /// The UTXO maps (live and frozen) and the coins database's table
    /// readers together.
    pub coins_bytes: usize,
    /// Table-reader bytes left outside `coins_bytes`
    /// ([`TABLE_READERS_UNCOUNTED_BYTES_MAX`] unless a test
    /// changes it).
    pub table_readers_uncounted_bytes: usize,
}

impl MemoryBudget {
    /// Splits `dbcache_bytes`, with flush batches of at most
    /// `batch_bytes_max` (`-dbbatchsize`).
    pub fn from_dbcache_bytes(dbcache_bytes: usize, batch_bytes_max: usize) -> MemoryBudget {
        let flush_table_count =
            (dbcache_bytes / DBCACHE_BYTES_PER_FLUSH_TABLE).clamp(1, FLUSH_TABLE_COUNT_MAX);
        MemoryBudget::split(dbcache_bytes, batch_bytes_max, flush_table_count)
    }

    /// This budget with flushes written as `flush_table_count` tables (1 to
    /// [`FLUSH_TABLE_COUNT_LIMIT`]), the sort order's share changed to
    /// match.
    pub fn with_flush_table_count(&self, flush_table_count: usize) -> MemoryBudget {
        let batch_bytes_max = self.coins_database.flush_batch_bytes_max;
        let flush_table_count = flush_table_count.clamp(1, FLUSH_TABLE_COUNT_LIMIT);
        MemoryBudget::split(self.dbcache_bytes, batch_bytes_max, flush_table_count)
    }

    fn split(
        dbcache_bytes: usize,
        batch_bytes_max: usize,
        flush_table_count: usize,
    ) -> MemoryBudget {
        let block_index_database_bytes = (dbcache_bytes / 8).min(BLOCK_INDEX_DATABASE_BYTES_MAX);
        let coins_database =
            coins_database_memory(dbcache_bytes, batch_bytes_max, flush_table_count);
        let incoming_blocks_bytes =
            (dbcache_bytes / 8).clamp(INCOMING_BLOCKS_BYTES_MIN, INCOMING_BLOCKS_BYTES_MAX);
        let others =
            block_index_database_bytes + coins_database.total_bytes() + incoming_blocks_bytes;
        MemoryBudget {
            dbcache_bytes,
            block_index_database_bytes,
            coins_database,
            incoming_blocks_bytes,
            coins_bytes: dbcache_bytes.saturating_sub(others).max(COINS_BYTES_MIN),
            table_readers_uncounted_bytes: TABLE_READERS_UNCOUNTED_BYTES_MAX,
        }
    }

    /// A budget whose UTXO maps get `coins_bytes` (tests and tools that
    /// set the cache alone), the other parts at the smallest split's.
    pub fn for_coins_bytes(coins_bytes: usize, batch_bytes_max: usize) -> MemoryBudget {
        let smallest = MemoryBudget::from_dbcache_bytes(0, batch_bytes_max);
        MemoryBudget {
            dbcache_bytes: smallest.parts_bytes() - smallest.coins_bytes + coins_bytes,
            coins_bytes,
            ..smallest
        }
    }

    /// What every part takes together: `-dbcache` from [`FLOOR_BYTES`] up,
    /// at most that below.
    pub fn parts_bytes(&self) -> usize {
        self.block_index_database_bytes
            + self.coins_database.total_bytes()
            + self.incoming_blocks_bytes
            + self.coins_bytes
    }

    /// Serialised bytes of blocks read or downloaded ahead of validation.
    pub fn incoming_blocks_serialised_bytes(&self) -> usize {
        self.incoming_blocks_bytes / PREPARED_BLOCK_MEMORY_FACTOR
    }
}

/// The coins database's share of `dbcache_bytes` (see the module docs),
/// flushes written as `flush_table_count` tables.
fn coins_database_memory(
    dbcache_bytes: usize,
    batch_bytes_max: usize,
    flush_table_count: usize,
) -> CoinsDatabaseMemory {
    let memtable_bytes = MEMTABLE_BYTES_MIN;
    CoinsDatabaseMemory {
        memtable_bytes,
        // Keys are uniform, so each group of shards holds about its
        // share of the changed coins (a miner grinding txids into one
        // range brings back at most the one table's order).
        flush_order_bytes: dbcache_bytes / FLUSH_ORDER_SHARE_DIVISOR / flush_table_count,
        flush_table_count,
        flush_batch_bytes_max: batch_bytes_max
            .clamp(1, memtable_bytes / FLUSH_BATCH_MEMTABLE_DIVISOR),
        block_cache_bytes: (dbcache_bytes / 64).clamp(BLOCK_CACHE_BYTES_MIN, BLOCK_CACHE_BYTES_MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BATCH: usize = 32 << 20;

    fn mebibytes(bytes: usize) -> f64 {
        bytes as f64 / MEBIBYTE as f64
    }

    #[test]
    fn default_cache_split() {
        let budget = MemoryBudget::from_dbcache_bytes(450 * MEBIBYTE, BATCH);
        assert_eq!(budget.block_index_database_bytes, 2 * MEBIBYTE);
        assert_eq!(budget.coins_database.flush_batch_bytes_max, MEBIBYTE / 4);
        assert_eq!(MEMTABLE_COUNT_MAX * MEMTABLE_BYTES_MAX, (128 << 20) - 2);
        assert_eq!(budget.coins_database.memtable_bytes, MEMTABLE_BYTES_MIN);
        assert_eq!(budget.coins_database.flush_table_count, FLUSH_TABLE_COUNT_MAX);
        assert_eq!(budget.coins_database.flush_order_bytes, 450 * MEBIBYTE / 7 / 8);
        assert!((mebibytes(budget.coins_database.total_bytes()) - 16.04).abs() < 0.01);
        assert_eq!(budget.coins_database.block_cache_bytes, 4 * MEBIBYTE);
        assert_eq!(budget.incoming_blocks_bytes, 450 * MEBIBYTE / 8);
        assert_eq!(budget.incoming_blocks_serialised_bytes(), 450 * MEBIBYTE / 16);
        assert!((mebibytes(budget.coins_bytes) - 375.71).abs() < 0.01, "{}", budget.coins_bytes);
        assert_eq!(budget.parts_bytes(), 450 * MEBIBYTE);
        let budget = MemoryBudget::from_dbcache_bytes(100 * MEBIBYTE, BATCH);
        assert_eq!(budget.coins_database.memtable_bytes, MEMTABLE_BYTES_MIN);
        assert_eq!(budget.coins_database.flush_table_count, 2);
        assert!((mebibytes(budget.coins_database.total_bytes()) - 12.71).abs() < 0.01);
        assert_eq!(budget.incoming_blocks_bytes, 25 * MEBIBYTE / 2);
        assert!((mebibytes(budget.coins_bytes) - 72.79).abs() < 0.01, "{}", budget.coins_bytes);
    }

    #[test]
    fn flushes_in_more_tables_sort_less_at_a_time() {
        let table_counts = |mebibytes: usize| {
            MemoryBudget::from_dbcache_bytes(mebibytes * MEBIBYTE, BATCH)
                .coins_database
                .flush_table_count
        };
        assert_eq!(
            [4, 47, 48, 100, 200, 384, 450, 16000].map(table_counts),
            [1, 1, 1, 2, 4, 8, 8, 8]
        );
        let budget = MemoryBudget::from_dbcache_bytes(100 * MEBIBYTE, BATCH);
        let one = budget.with_flush_table_count(1);
        let four = budget.with_flush_table_count(4);
        assert_eq!(one.coins_database.flush_order_bytes, 100 * MEBIBYTE / 7);
        assert_eq!(four.coins_database.flush_order_bytes, 100 * MEBIBYTE / 7 / 4);
        // The order's memory goes to the maps, or comes from them.
        for other in [one, four, budget.with_flush_table_count(0)] {
            assert_eq!(other.parts_bytes(), 100 * MEBIBYTE);
            let order_change = budget.coins_database.flush_order_bytes as isize
                - other.coins_database.flush_order_bytes as isize;
            assert_eq!(other.coins_bytes as isize - budget.coins_bytes as isize, order_change);
        }
        assert_eq!(budget.with_flush_table_count(0).coins_database.flush_table_count, 1);
        let most = budget.with_flush_table_count(usize::MAX).coins_database.flush_table_count;
        assert_eq!(most, FLUSH_TABLE_COUNT_LIMIT);
    }

    #[test]
    fn parts_fit_the_total_and_their_bounds() {
        // Every MiB from 1 to 2 GiB, then up to 64 GiB in coarse steps.
        let sizes = (1..=2048).chain((2048..=65536).step_by(509)).map(|mib| mib * MEBIBYTE);
        for dbcache_bytes in sizes {
            for batch_bytes_max in [1, 1 << 20, BATCH] {
                let budget = MemoryBudget::from_dbcache_bytes(dbcache_bytes, batch_bytes_max);
                let database = budget.coins_database;
                assert!(budget.block_index_database_bytes <= BLOCK_INDEX_DATABASE_BYTES_MAX);
                assert!(
                    (MEMTABLE_BYTES_MIN..=MEMTABLE_BYTES_MAX).contains(&database.memtable_bytes)
                );
                assert!(database.flush_batch_bytes_max <= batch_bytes_max);
                assert!(database.flush_batch_bytes_max <= database.memtable_bytes / 4);
                assert!(database.flush_batch_bytes_max >= 1);
                let block_cache = BLOCK_CACHE_BYTES_MIN..=BLOCK_CACHE_BYTES_MAX;
                assert!(block_cache.contains(&database.block_cache_bytes));
                let incoming = INCOMING_BLOCKS_BYTES_MIN..=INCOMING_BLOCKS_BYTES_MAX;
                assert!(incoming.contains(&budget.incoming_blocks_bytes));
                assert!(budget.coins_bytes >= COINS_BYTES_MIN);
                if dbcache_bytes >= FLOOR_BYTES {
                    // Above the floor the parts add up to `-dbcache` exactly.
                    assert_eq!(budget.parts_bytes(), dbcache_bytes, "{dbcache_bytes}");
                } else {
                    assert!(budget.parts_bytes() <= FLOOR_BYTES, "{dbcache_bytes}");
                }
            }
        }
    }

    #[test]
    fn the_maps_get_most_of_a_large_cache() {
        // The database's share grows only by the flush order's share.
        for (mebibytes_total, share_percent) in [(450, 70), (1000, 72), (4000, 82), (16000, 84)] {
            let budget = MemoryBudget::from_dbcache_bytes(mebibytes_total * MEBIBYTE, BATCH);
            let coins_percent = budget.coins_bytes * 100 / budget.dbcache_bytes;
            assert!(coins_percent >= share_percent, "{mebibytes_total}: {coins_percent} %");
        }
        let budget = MemoryBudget::from_dbcache_bytes(16000 * MEBIBYTE, BATCH);
        assert_eq!(budget.coins_database.memtable_bytes, MEMTABLE_BYTES_MIN);
        assert_eq!(budget.incoming_blocks_bytes, INCOMING_BLOCKS_BYTES_MAX);
    }

    #[test]
    fn the_floor_is_small_and_known() {
        let tiny = MemoryBudget::from_dbcache_bytes(4 * MEBIBYTE, BATCH);
        assert_eq!(tiny.coins_bytes, COINS_BYTES_MIN);
        assert_eq!(tiny.block_index_database_bytes, MEBIBYTE / 2);
        assert_eq!(tiny.incoming_blocks_bytes, INCOMING_BLOCKS_BYTES_MIN);
        // Half a MiB of block index, three 1 MiB memtables with a quarter
        // MiB batch landing in each, a batch being built and a quarter MiB
        // block cache, a 7th of 4 MiB for a flush's order, one largest
        // block read ahead, 1 MiB of maps.
        assert!((mebibytes(tiny.parts_bytes()) - 14.32).abs() < 0.01, "{}", tiny.parts_bytes());
        // Just above it, the maps get what is left.
        let small = MemoryBudget::from_dbcache_bytes(FLOOR_BYTES, BATCH);
        assert!(small.coins_bytes > COINS_BYTES_MIN);
    }

    #[test]
    fn a_budget_for_a_given_cache() {
        let budget = MemoryBudget::for_coins_bytes(1 << 15, 1 << 16);
        assert_eq!(budget.coins_bytes, 1 << 15);
        assert_eq!(budget.coins_database.flush_batch_bytes_max, 1 << 16);
        assert_eq!(budget.parts_bytes(), budget.dbcache_bytes);
    }
}
