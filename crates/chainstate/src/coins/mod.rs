//! The coins: Bitcoin Core's UTXO set in memory (the cache, with Core's
//! DIRTY/FRESH flags) over the coins database on RocksDB, flushed in the
//! background, and read ahead by the prefetch.
//!
//! # Layers
//! Each layer imports only the layers above it in this table (and
//! [`crate::error`]); none names one below it, so each can be read and
//! tested without the ones that use it.
//!
//! | layer | files | what they hold | may import |
//! |---|---|---|---|
//! | 0. the coin | `coin.rs`, `coin_script.rs`, `compress.rs` | [`coin::Coin`] with its script inline, Core's compression ([`compress`]) and the database's encoding | nothing in `coins` |
//! | 1. entry and packed containers | `entry.rs`, `hasher.rs`, `heap.rs`, `position_table.rs`, `coin_shard.rs`, `coin_map.rs`, `frozen_map.rs` | a cache slot and its flags (`entry`), the salted hasher ([`hasher`]), the heap's allocator and trim ([`heap`]), a shard's table of positions and its packed chunks of entries, the map of shards, the frozen map a background flush writes | 0 |
//! | 2. the database | `database/` | [`database::CoinsDatabase`] and its options; the batch protocol and the ingest protocol ([`database::ingest`]) apart; RocksDB's figures ([`database::io`]) | 0 |
//! | 3. the cache | `coin_reads.rs`, `cache/` | [`cache::CoinsCache`]: reads, the state table's transitions, the synchronous flush, the end of a background flush; where spends found their coins ([`coin_reads`]) | 0-2 |
//! | 4. the background flush | `background.rs` | the writer thread that writes a frozen map while validation goes on ([`background`]) | 0-3 |
//! | 5. readers over the cache | `prefetch.rs`, `bip30_reader.rs`, `txoutset.rs` | the parallel prevout prefetch ([`prefetch`]), BIP30's lookups ([`bip30_reader`]), `gettxoutsetinfo` ([`txoutset`]) | 0-4 |
//!
//! The database never sees the cache's entries: a flush hands it writes
//! (an outpoint and a coin, or an erasure), and the cache turns its
//! shards into them (`cache::flush`).
//!
//! # Memory: a value handed down
//! `-dbcache` is split once, when the chainstate opens, by
//! [`crate::budget::MemoryBudget`], which sits above this module and reads
//! its structural constants. The opener hands each layer its part as a
//! plain value: the database its
//! [`database::CoinsDatabaseMemory`] through
//! [`database::DatabaseOptions::with_memory`] (memtables, batch, block
//! cache, the tables a flush is written as), the cache its bytes
//! ([`cache::CoinsCache::new`]) and the table readers it leaves uncounted
//! ([`cache::CoinsCache::set_table_readers_uncounted_bytes`]); the
//! background flush writes as many tables as its database was opened
//! with. Nothing here reads the budget.
//!
//! # A block's path
//! The prefetch reads the coins a block spends into the live map;
//! connect spends them ([`cache::CoinsCache::spend`]) and adds the
//! block's outputs ([`cache::CoinsCache::add`]); when the cache is full
//! the engine freezes the map and a writer thread writes it as sorted
//! tables the database ingests, freeing each group of shards once its
//! table is in, while the next blocks go into a new live map.

pub mod background;
pub mod bip30_reader;
pub mod cache;
pub mod coin;
pub(crate) mod coin_map;
pub mod coin_reads;
mod coin_script;
mod coin_shard;
pub mod compress;
pub mod database;
mod entry;
mod frozen_map;
pub mod hasher;
pub mod heap;
pub mod parallel_walk;
mod position_table;
pub mod prefetch;
pub mod txoutset;
pub mod view;
