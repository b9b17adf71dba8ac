//! Ibex's chainstate: coins in Bitcoin Core's compact encoding, the coins
//! database on RocksDB, the UTXO cache with Core's DIRTY/FRESH semantics, and
//! the parallel prevout prefetch.
//!
//! A block's path through this crate: [`CoinsCache::prefetch`] reads the
//! coins its inputs spend into memory; connect calls [`CoinsCache::spend`] per
//! input (keeping the coins for undo data) and [`CoinsCache::add`] per output;
//! when [`CoinsCache::is_full`] or periodically, [`CoinsCache::flush`] writes
//! the dirty coins to the [`CoinsDatabase`] in bounded batches, recording the
//! blocks it covers so a crash mid-flush is detected and replayed. The
//! coins live in [`coins`], in layers (its module docs); the block index in
//! [`index`]; the engine that drives both in [`engine`] and its [`stages`].

mod block_read_ahead;
pub mod budget;
pub mod coins;
pub mod connect;
pub mod disconnect;
pub mod engine;
pub mod error;
pub mod import;
pub mod import_diagnosis;
pub mod import_plan;
pub mod import_reader;
pub mod index;
pub mod metrics;
pub mod prepared;
pub mod scripts;
pub mod stages;
#[cfg(test)]
mod test_chain;
pub mod undo;
pub mod vocabulary;

pub use budget::MemoryBudget;
pub use coins::bip30_reader::OutputsLookup;
pub use coins::cache::{CoinsCache, FlushMode};
pub use coins::coin::{Coin, CoinKey, COIN_HEIGHT_MAX};
pub use coins::coin_reads::{
    CoinReadCounts, CoinSource, COIN_AGE_RANGES, COIN_AGE_RANGE_HIGHS_BLOCKS, COIN_AGE_RANGE_NAMES,
    COIN_SOURCES,
};
pub use coins::database::io::{CoinsDatabaseIo, GibibyteText, WriteAmplification, DATABASE_LEVELS};
pub use coins::database::{
    CoinBatches, CoinsDatabase, CoinsDatabaseMemory, DatabaseOptions, FlushStats, FlushWriter,
    HeadBlocks, FLUSH_BATCH_BYTES_DEFAULT,
};
pub use coins::heap::bound_heap_retention;
pub use coins::prefetch::{PrefetchRequest, PrefetchedCoins, PREFETCH_CHUNK_OUTPOINTS};
pub use coins::txoutset::{txoutset_stats, txoutset_stats_with_pending, PendingCoin};
// The coins' modules at the crate root, where other crates (the fuzz
// checks, the node's docs) name them.
pub use coins::database::{ingest as database_ingest, io as database_io};
pub use coins::{coin_reads, compress, heap, txoutset};
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
pub use ibex_consensus::BlockRejection;
pub use import::{import_blocks, ImportSource, ImportSummary};
pub use import_diagnosis::{FileWithoutBlocks, NoBlocksCause};
pub use import_plan::ImportPlan;
pub use index::{ActiveChain, BlockIndex, BlockIndexEntry, BlockStatus, EntryId};
pub use metrics::{
    ChainMetrics, ChainMetricsReading, FlushDurationReading, QueueGauge, FLUSH_DURATION_BUCKETS_MS,
};
pub use prepared::PreparedBlock;
pub use stages::script_queue::SCRIPT_PIPELINE_BLOCKS;
pub use undo::{BlockUndo, TransactionUndo, UndoDecodeError};
