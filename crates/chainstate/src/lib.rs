//! Ibex's chainstate: coins in Bitcoin Core's compact encoding, the coins
//! database on RocksDB, the UTXO cache with Core's DIRTY/FRESH semantics, and
//! the parallel prevout prefetch.
//!
//! A block's path through this crate: [`CoinsCache::prefetch`] reads the
//! coins its inputs spend into memory; connect calls [`CoinsCache::spend`] per
//! input (keeping the coins for undo data) and [`CoinsCache::add`] per output;
//! when [`CoinsCache::is_full`] or periodically, [`CoinsCache::flush`] writes
//! the dirty coins to the [`CoinsDatabase`] in bounded batches, recording the
//! blocks it covers so a crash mid-flush is detected and replayed.

pub mod cache;
pub mod coin;
pub mod compress;
pub mod database;
pub mod error;
pub mod hasher;
pub mod prefetch;
pub mod undo;

pub use cache::{CoinsCache, FlushMode};
pub use coin::{Coin, CoinKey, COIN_HEIGHT_MAX};
pub use database::{
    CoinsDatabase, DatabaseOptions, FlushStats, FlushWriter, HeadBlocks, FLUSH_BATCH_BYTES_DEFAULT,
};
pub use error::{ChainstateError, CoinDecodeError};
pub use prefetch::{PrefetchRequest, PrefetchedCoins, PREFETCH_CHUNK_OUTPOINTS};
pub use undo::{BlockUndo, TransactionUndo, UndoDecodeError};
