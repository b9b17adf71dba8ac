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

pub mod background;
pub mod bip30_reader;
mod block_read_ahead;
pub mod budget;
pub mod cache;
pub mod coin;
mod coin_map;
pub mod coin_reads;
mod coin_script;
mod coin_shard;
pub mod compress;
pub mod connect;
pub mod database;
pub mod database_ingest;
pub mod database_io;
pub mod database_levels;
pub mod disconnect;
pub mod engine;
pub mod error;
mod frozen_map;
pub mod hasher;
pub mod heap;
pub mod import;
pub mod import_diagnosis;
pub mod import_plan;
pub mod import_reader;
pub mod index;
pub mod metrics;
mod position_table;
pub mod prefetch;
pub mod prepared;
pub mod scripts;
pub mod stages;
pub mod table_writer;
#[cfg(test)]
mod test_chain;
pub mod txoutset;
pub mod undo;

pub use budget::{CoinsDatabaseMemory, MemoryBudget};
pub use cache::{CoinsCache, FlushMode, OutputsLookup};
pub use coin::{Coin, CoinKey, COIN_HEIGHT_MAX};
pub use coin_reads::{
    CoinReadCounts, CoinSource, COIN_AGE_RANGES, COIN_AGE_RANGE_HIGHS_BLOCKS, COIN_AGE_RANGE_NAMES,
    COIN_SOURCES,
};
pub use database::{
    CoinBatches, CoinsDatabase, DatabaseOptions, FlushStats, FlushWriter, HeadBlocks,
    FLUSH_BATCH_BYTES_DEFAULT,
};
pub use database_io::{CoinsDatabaseIo, GibibyteText, WriteAmplification, DATABASE_LEVELS};
pub use engine::accept::AcceptOutcome;
pub use engine::tips::ChainTip;
pub use engine::{
    engine_service, BestCandidateCheck, BlockSource, CandidateLeft, ChainControlError,
    ChainControlReply, ChainEvent, ChainObserver, ChainReader, ChainSnapshot, ChainStatistics,
    Chainstate, ChainstateOptions, EngineCommand, EngineNotice, EngineService, FlushReason,
    ReadError, ServiceEnd, TipSummary, TipUpdate, ENGINE_COMMANDS_WAITING_MAX,
    ENGINE_CONTROL_COMMANDS_WAITING_MAX, ENGINE_NOTICES_WAITING_MAX, PERIODIC_FLUSH_INTERVAL,
    READ_QUERIES_WAITING_MAX,
};
pub use error::{ChainstateError, CoinDecodeError, DatabaseKind};
pub use heap::bound_heap_retention;
pub use ibex_consensus::BlockRejection;
pub use import::{import_blocks, ImportSource, ImportSummary};
pub use import_diagnosis::{FileWithoutBlocks, NoBlocksCause};
pub use import_plan::ImportPlan;
pub use index::{ActiveChain, BlockIndex, BlockIndexEntry, BlockStatus, EntryId};
pub use metrics::{
    ChainMetrics, ChainMetricsReading, FlushDurationReading, QueueGauge, FLUSH_DURATION_BUCKETS_MS,
};
pub use prefetch::{PrefetchRequest, PrefetchedCoins, PREFETCH_CHUNK_OUTPOINTS};
pub use prepared::PreparedBlock;
pub use stages::script_queue::SCRIPT_PIPELINE_BLOCKS;
pub use txoutset::{txoutset_stats, txoutset_stats_with_pending, PendingCoin};
pub use undo::{BlockUndo, TransactionUndo, UndoDecodeError};
