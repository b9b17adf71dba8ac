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
//! coins live in `coins`, in layers (its module docs); the block index in
//! `index`; the engine that drives both in `engine` and its `stages`.
//!
//! Other threads read the chainstate through a [`ChainReader`]: published
//! snapshots, and the read API's typed questions ([`ReadView`]: index
//! entries as [`IndexedBlock`]s, locators, headers after a locator, coins,
//! chain tips, the initial block download state), answered on the engine's
//! thread with owned values; block and undo bytes are read on the asking
//! thread ([`ChainReader::read_stored_block`],
//! [`ChainReader::read_stored_undo`]).

mod block_read_ahead;
mod block_source;
pub mod budget;
pub(crate) mod coins;
pub(crate) mod connect;
pub(crate) mod disconnect;
pub(crate) mod engine;
pub(crate) mod error;
pub mod hints_writer;
pub(crate) mod import;
pub(crate) mod import_diagnosis;
pub(crate) mod import_plan;
pub(crate) mod import_reader;
pub(crate) mod index;
pub(crate) mod metrics;
pub(crate) mod prepared;
pub(crate) mod scripts;
pub mod snapshot;
pub(crate) mod stages;
pub mod swiftsync;
#[cfg(test)]
mod test_chain;
pub(crate) mod undo;
pub(crate) mod vocabulary;

pub use budget::MemoryBudget;
pub use coins::bip30_reader::OutputsLookup;
pub use coins::cache::{CoinsCache, FlushMode, TABLE_READERS_UNCOUNTED_BYTES_MAX};
pub use coins::coin::{Coin, CoinKey, COIN_HEIGHT_MAX};
pub use coins::coin_reads::{
    CoinReadCounts, CoinSource, COIN_AGE_RANGES, COIN_AGE_RANGE_HIGHS_BLOCKS, COIN_AGE_RANGE_NAMES,
    COIN_SOURCES,
};
pub use coins::database::io::{CoinsDatabaseIo, GibibyteText, WriteAmplification, DATABASE_LEVELS};
pub use coins::database::levels::level0_file_triggers;
pub use coins::database::{
    CoinBatches, CoinsDatabase, CoinsDatabaseMemory, DatabaseOptions, FlushStats, FlushWriter,
    HeadBlocks, COMPACTION_JOBS_MAX, FLUSH_BATCH_BYTES_DEFAULT, SUBCOMPACTIONS_MAX,
};
pub use coins::hasher::salted_hash_builder;
pub use coins::heap::bound_heap_retention;
pub use coins::prefetch::{
    PrefetchInFlight, PrefetchRequest, PrefetchedCoins, PREFETCH_CHUNK_OUTPOINTS,
};
pub use coins::txoutset::{stats_of_coins, stats_of_view, txoutset_stats, GroupedHasher};
// The coins' modules at the crate root, where other crates (the fuzz
// checks, the node's docs) name them.
pub use coins::database::{ingest as database_ingest, io as database_io};
pub use coins::view::{CoinChange, CoinSetView};
pub use coins::{coin_reads, compress, heap, txoutset};
pub use engine::accept::AcceptOutcome;
pub use engine::assumeutxo::{
    active_coins_directory, snapshot_chainstate_directory, SnapshotActivationError,
    BASE_BLOCKHASH_FILE, SNAPSHOT_CHAINSTATE_DIRECTORY,
};
pub use engine::headers::HeaderRefusal;
pub use engine::open::INDEX_DIRECTORY;
pub use engine::prune::PRUNE_TARGET_BYTES_MIN;
pub use engine::read_api::{
    BlockStorage, ChainBlock, ChainToHeight, ChainstatesAnswer, CoinSetAtTip, CoinSetTargetError,
    LOCATOR_ENTRIES_MAX, LOCATOR_HASHES_READ_MAX,
};
pub use engine::service::{PruneBlockFilesReply, PruneRefusal};
pub use engine::tips::ChainTip;
pub use engine::verify::{BlockCheckError, CHECK_LEVEL_DONE_MAX};
pub use engine::{
    engine_service, AssumeUtxoSummary, BestCandidateCheck, BestChainBlocks, BlockAncestry,
    BlockSource, BlocksAtTip, CandidateLeft, ChainControlError, ChainControlReply, ChainEvent,
    ChainObserver, ChainReader, ChainSnapshot, ChainStatistics, Chainstate, ChainstateOptions,
    CoinsAtTip, EngineCommand, EngineNotice, EngineService, FlushReason, ForkPoint, IndexedBlock,
    ReadError, ReadView, ServiceEnd, SnapshotEvent, TipState, TipSummary, TipUpdate, TxOutSetAtTip,
    ENGINE_COMMANDS_WAITING_MAX, ENGINE_CONTROL_COMMANDS_WAITING_MAX, ENGINE_NOTICES_WAITING_MAX,
    MAX_TIP_AGE_SECONDS, PERIODIC_FLUSH_INTERVAL, READ_QUERIES_WAITING_MAX,
};
pub use error::{ChainstateError, CoinDecodeError, DatabaseKind};
pub use ibex_consensus::BlockRejection;
pub use import::{import_blocks, ImportSource, ImportSummary};
pub use import_diagnosis::{FileWithoutBlocks, NoBlocksCause};
pub use import_plan::ImportPlan;
pub use index::{ActiveChain, BlockIndex, BlockIndexEntry, BlockStatus, EntryId};
pub use vocabulary::{PruneMode, PruneReport};
// The block index database's records, where the fuzz checks and the
// node's read-only tools name them.
pub use index::store as index_store;
pub use metrics::{
    ChainMetrics, ChainMetricsReading, FlushDurationReading, QueueGauge, FLUSH_DURATION_BUCKETS_MS,
};
pub use prepared::PreparedBlock;
pub use stages::script_queue::SCRIPT_PIPELINE_BLOCKS;
pub use swiftsync::{
    spent_coins_cutoff, ClaimMismatch, ClaimedSpentCoins, SpentCoinsRefusal, SwiftSyncEvent,
    SwiftSyncFailure, SwiftSyncMode, SwiftSyncPassStart, SwiftSyncPlan,
    SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX, SPENT_COINS_REFUSALS_PER_BLOCK_MAX,
};
pub use undo::{BlockUndo, TransactionUndo, UndoDecodeError};
