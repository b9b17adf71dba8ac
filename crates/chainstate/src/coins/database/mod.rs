//! The coins database on RocksDB, laid out like Core's chainstate LevelDB.
//!
//! Records: `'C' || txid || VARINT(vout)` -> compact coin (see [`crate::coins::coin`]),
//! `'B'` -> best block hash (Core's `DB_BEST_BLOCK`), `'H'` -> the blocks an
//! unfinished flush covers (Core's `DB_HEAD_BLOCKS`: new tip, old tip),
//! `'S'` -> the coins are a SwiftSync attempt's, not yet proven ([`staged`]).
//!
//! # Files
//! Each imports only the ones above it in this table (and the coin below
//! the database, [`crate::coins::coin`]); nothing here imports the cache.
//!
//! | file | what it holds |
//! |---|---|
//! | `options.rs` | [`DatabaseOptions`], [`CoinsDatabaseMemory`], the tuning constants |
//! | `levels.rs` | the level-0 triggers and the levels' size ratio ([`levels`]) |
//! | `store.rs` | [`CoinsDatabase`]: open, reads, the `'B'` and `'H'` records, the tables' directory |
//! | `batch.rs` | the batch protocol: [`FlushWriter`], [`CoinBatches`] |
//! | `key_order.rs` | a flush's writes in key order ([`key_order`]) |
//! | `table_writer.rs` | RocksDB's table writer through the C++ shim ([`table_writer`]) |
//! | `ingest.rs` | the ingest protocol: [`ingest::TableFlush`] |
//! | `staged.rs` | a SwiftSync attempt's coins: unsorted runs, the `'S'` record ([`staged`]) |
//! | `io.rs` | what RocksDB did, from its properties ([`io`]) |
//!
//! # Crash safety
//! A flush is written as sorted tables, each ingested atomically
//! ([`ingest`]); the batch protocol below (`batch.rs`) serves
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
//! Every write skips RocksDB's WAL ([`rocksdb::WriteOptions::disable_wal`]): what
//! reaches disk is what RocksDB's memtable flushes write, and with one
//! column family those persist the writes in sequence order, whole
//! memtables at a time. After a crash the database is therefore some
//! prefix of the batches ever written, which is exactly what the protocol
//! above already survives: a prefix that ends inside a flush has `'H'` and
//! is replayed, one that ends between flushes names an older tip and the
//! blocks after it are connected again (their block and undo files were
//! synced before the flush began: [`crate::engine`]'s flush order). No
//! write may ever use the WAL: a logged write replayed over lost unlogged
//! ones would not be a prefix. [`CoinsDatabase::persist_memtables`] makes
//! everything written so far durable (the memtables flushed and synced), for a
//! shutdown or a periodic flush; a flush because the cache is full is not
//! waited for, and a crash then costs at most three memtables of blocks
//! replayed. RocksDB writes two full memtables to one table
//! ([`MEMTABLES_MERGED_PER_FLUSH`]): still the oldest
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
//! database's share of `-dbcache` ([`CoinsDatabaseMemory`], handed down by
//! the budget of `-dbcache`, [`crate::budget`]):
//! memtables of 1 MiB, as flushes are ingested as tables (flushes through
//! the memtables would want a 12th of it:
//! [`crate::budget::MEMTABLE_SHARE_DIVISOR`]), at most
//! [`MEMTABLE_COUNT_MAX`] of them, flush
//! batches of at most a quarter of a memtable (a batch lands whole in
//! one), the order a flush sorts its coins in, and a block cache of a
//! 64th (at most 4 MiB: Core gives LevelDB half of its coins-database share for the same purpose). The options are
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
//! [`TABLE_READERS_UNCOUNTED_BYTES_MAX`](crate::coins::cache::TABLE_READERS_UNCOUNTED_BYTES_MAX)
//! against its share of `-dbcache`
//! ([`crate::CoinsCache::set_table_readers_bytes`]). Once the readers take
//! half of that share from the maps
//! ([`crate::engine::flush::WHOLE_KEY_FILTERS_SHARE_DIVISOR`]), tables
//! written from then on hold transaction id prefixes in their filters, not whole keys
//! ([`CoinsDatabase::drop_whole_key_filters`]): one filter entry a
//! transaction instead of one a coin and one a transaction, a tenth of
//! the entries on the `utxo-heavy` chain (~11 coins a transaction),
//! less of a saving on mainnet, whose transactions leave fewer coins.

mod batch;
pub mod bulk;
pub mod ingest;
pub mod io;
pub mod key_order;
pub mod levels;
mod options;
pub(crate) mod staged;
mod store;
pub mod table_writer;

pub use batch::{CoinBatches, FlushWriter};
pub use options::{
    CoinsDatabaseMemory, DatabaseOptions, BLOCK_CACHE_BYTES_DEFAULT, COMPACTION_JOBS_MAX,
    FLUSH_BATCH_BYTES_DEFAULT, MEMTABLES_MERGED_PER_FLUSH, MEMTABLE_BYTES_DEFAULT,
    MEMTABLE_COUNT_MAX, SUBCOMPACTIONS_MAX,
};
pub use store::{holds_database_files, CoinPrefixSeeker, CoinsDatabase, FlushStats, HeadBlocks};
