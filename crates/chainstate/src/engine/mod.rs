//! The engine: the block index and the active chain (its shared record)
//! and the stages that work on them ([`crate::stages`]: chain selection,
//! connect, scripts, persistence), driven block by block (Core's
//! `ChainstateManager` and `Chainstate` in one). Only the engine touches
//! more than one stage; the modules here are its steps:
//!
//! - [`Chainstate::accept_block`] indexes a block and checks everything
//!   that does not need the coins (Core's `AcceptBlock`).
//! - [`Chainstate::activate_best_chain`] moves the tip to the most-work
//!   valid chain: disconnecting, connecting, marking invalid blocks (Core's
//!   `ActivateBestChain`), until no untried candidate with more work than
//!   the tip is left. On equal work the chain whose tip was met first
//!   stays ([`BlockIndexEntry::sequence`](crate::index::BlockIndexEntry)).
//!   [`Chainstate::advance_best_chain`] is its step within a stream of
//!   blocks, leaving the last blocks' scripts running; within an import of
//!   block files the tip follows only the best header's chain, as far as
//!   Core's import ends up connecting (`import_activation`).
//! - [`Chainstate::check_best_candidate`] states whether that fixed point
//!   holds (the startup and end-of-import check).
//! - [`Chainstate::invalidate_block`] and [`Chainstate::reconsider_block`]
//!   carry out an operator's verdict on a block (`invalidateblock`,
//!   `reconsiderblock`, see [`invalidate`]).
//! - [`Chainstate::flush`] makes it all durable in Core's order: block and
//!   undo files, then the block index, then the coins (see [`flush`]).
//!
//! On open, an interrupted coins flush is replayed ([`recovery`]); the
//! node then checks the last blocks ([`verify`], Core's `VerifyDB`).

pub mod accept;
mod activate;
pub mod api;
pub mod events;
pub mod fixed_point;
#[cfg(test)]
mod fixture_tests;
pub mod flush;
mod headers;
mod import_activation;
pub mod invalidate;
pub mod open;
pub mod read_api;
pub mod reader;
pub mod recovery;
pub mod service;
pub mod settle;
pub mod tips;
pub mod verify;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ibex_blockstore::Obfuscation;
use ibex_primitives::{BlockHash, Params};

pub use crate::vocabulary::ChainStatistics;
pub use api::BlockSource;
pub use events::{ChainEvent, ChainObserver, FlushReason, TipUpdate};
pub use fixed_point::{BestCandidateCheck, CandidateLeft};
pub use invalidate::ChainControlError;
pub use read_api::{
    BestChainBlocks, BlockAncestry, BlocksAtTip, CoinsAtTip, ForkPoint, IndexedBlock, ReadView,
    TipState, TxOutSetAtTip, MAX_TIP_AGE_SECONDS,
};
pub use reader::{ChainReader, ChainSnapshot, ReadError, TipSummary, READ_QUERIES_WAITING_MAX};
pub use service::{
    engine_service, ChainControlReply, EngineCommand, EngineNotice, EngineService, ServiceEnd,
    ENGINE_COMMANDS_WAITING_MAX, ENGINE_CONTROL_COMMANDS_WAITING_MAX, ENGINE_NOTICES_WAITING_MAX,
};

use crate::coins::cache::CoinsCache;
use crate::index::{ActiveChain, BlockIndex};
use crate::metrics::{ChainMetrics, PublishedLevels};
use crate::stages::connector::Connector;
use crate::stages::persistence::Persistence;
use crate::stages::script_queue::ScriptQueue;
use crate::stages::selection::ChainSelection;

/// Core's `DATABASE_WRITE_INTERVAL_MIN`: flush the coins at least this often
/// when nothing else forces it (Core picks 50-70 minutes at random).
pub const PERIODIC_FLUSH_INTERVAL: Duration = Duration::from_secs(60 * 60);

/// How to open a chainstate.
#[derive(Debug, Clone)]
pub struct ChainstateOptions {
    /// Network parameters.
    pub params: Params,
    /// Block and undo files (`<chain>/blocks`); the index is in `index/` below it.
    pub blocks_directory: PathBuf,
    /// The coins database (`<chain>/chainstate`).
    pub chainstate_directory: PathBuf,
    /// How `-dbcache` is shared: the UTXO cache's limit, RocksDB's
    /// memtables, block cache and flush batches (`-dbbatchsize` within
    /// them), the blocks read ahead ([`crate::budget`]).
    pub memory: crate::budget::MemoryBudget,
    /// Script check threads (`-par`).
    pub script_threads: usize,
    /// Scripts of this block's ancestors are not checked (`-assumevalid`);
    /// `None` checks every script.
    pub assume_valid: Option<BlockHash>,
    /// Coins flush interval when the cache never fills.
    pub periodic_flush_interval: Duration,
    /// Stop connecting at this height (`-stopatheight`).
    pub stop_at_height: Option<u32>,
}

/// The chainstate: the block index and active chain, and the stages.
pub struct Chainstate {
    pub(crate) options: ChainstateOptions,
    /// Every known block header and its state (shared record).
    pub(crate) index: BlockIndex,
    /// The blocks connected, genesis to tip (shared record).
    pub(crate) chain: ActiveChain,
    /// Headers and chain selection: candidates, blocks waiting for a
    /// parent, the best header, invalid marks.
    pub(crate) selection: ChainSelection,
    /// Connect: the UTXO cache and the blocks ready ahead of the tip.
    pub(crate) connector: Connector,
    /// Scripts: the threads and the blocks pending on them.
    pub(crate) scripts: ScriptQueue,
    /// Block and undo files, the index database, the flush schedule.
    pub(crate) persistence: Persistence,
    pub(crate) observer: Box<dyn ChainObserver>,
    pub(crate) statistics: ChainStatistics,
    /// Snapshots published for readers and their queries.
    pub(crate) reads: reader::ReadService,
    /// Counters and levels published for monitoring.
    pub(crate) metrics: Arc<ChainMetrics>,
    /// Set by the node on shutdown: connecting stops between two blocks
    /// ([`Chainstate::set_interrupt`]).
    pub(crate) interrupt: Option<Arc<AtomicBool>>,
    /// The clock's reading for header checks, when the node pretends the
    /// time (`-mocktime`, [`Chainstate::set_mock_time`]).
    pub(crate) mock_time_seconds: Option<i64>,
}

impl std::fmt::Debug for Chainstate {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Chainstate")
            .field("height", &self.chain.height())
            .field("index_entries", &self.index.len())
            .field("cache_entries", &self.connector.cache().entry_count())
            .finish()
    }
}

impl Chainstate {
    /// The block index.
    pub fn index(&self) -> &BlockIndex {
        &self.index
    }

    /// The active chain.
    pub fn chain(&self) -> &ActiveChain {
        &self.chain
    }

    /// The UTXO cache.
    pub fn cache(&self) -> &CoinsCache {
        self.connector.cache()
    }

    /// The unspent coin at `outpoint` as of the tip the cache is at (the
    /// cache, then the database; nothing is cached by the lookup).
    pub fn coin(
        &self,
        outpoint: &ibex_primitives::OutPoint,
    ) -> Result<Option<crate::Coin>, crate::ChainstateError> {
        self.connector.cache().coin(outpoint)
    }

    /// The stored block `id`, read back from its block file and parsed.
    pub fn read_block(
        &self,
        id: crate::EntryId,
    ) -> Result<crate::PreparedBlock, crate::ChainstateError> {
        self.persistence.read_block(self.index.entry(id))
    }

    /// The undo data of the connected block `id`, read back from its undo file.
    pub fn read_undo(
        &self,
        id: crate::EntryId,
    ) -> Result<crate::BlockUndo, crate::ChainstateError> {
        self.persistence.read_undo(self.index.entry(id))
    }

    /// Network parameters.
    pub fn params(&self) -> &Params {
        &self.options.params
    }

    /// Counters since open.
    pub fn statistics(&self) -> ChainStatistics {
        self.statistics
    }

    /// The counters and levels this engine publishes for other threads
    /// (see `crate::metrics`).
    pub fn metrics(&self) -> Arc<ChainMetrics> {
        self.metrics.clone()
    }

    /// Copies the counters and levels to [`Self::metrics`], with the
    /// settled tip at `tip_height` (a few relaxed stores: see
    /// [`crate::metrics`]).
    pub(crate) fn publish_metrics(&self, tip_height: Option<u32>) {
        let cache = self.connector.cache();
        let levels = PublishedLevels {
            tip_height,
            best_header_height: self.selection.best_header().map(|id| self.index.entry(id).height),
            cache_bytes: cache.memory_bytes(),
            cache_coins: cache.entry_count(),
            cache_bytes_max: cache.cache_bytes_max(),
            script_pipeline_blocks: self.scripts.len(),
        };
        self.metrics.publish(&self.statistics, &levels);
    }

    /// The tip's hash and height.
    pub fn tip(&self) -> Option<(BlockHash, u32)> {
        let id = self.chain.tip()?;
        let entry = self.index.entry(id);
        Some((entry.hash, entry.height))
    }

    /// Core's `-dbcrashratio` (crash tests): see
    /// [`CoinsDatabase::set_crash_ratio`](crate::CoinsDatabase::set_crash_ratio).
    pub fn set_flush_crash_ratio(&self, ratio: u64) {
        self.connector.cache().database().set_crash_ratio(ratio);
    }

    /// Changes the `-stopatheight` height.
    pub fn set_stop_at_height(&mut self, height: Option<u32>) {
        self.options.stop_at_height = height;
    }

    /// Makes connecting stop between two blocks once `flag` is set (the
    /// node's shutdown signal), as Core's `ActivateBestChain` checks for a
    /// shutdown between steps: a long activation (the stored blocks of a
    /// `-reindex-chainstate`) ends at the next block, the chain consistent.
    pub fn set_interrupt(&mut self, flag: Arc<AtomicBool>) {
        self.interrupt = Some(flag);
    }

    /// Header times are checked against `seconds` (Unix time) instead of
    /// the clock: Core's `-mocktime`, which sets the `NodeClock` its
    /// `time-too-new` rule reads. `None` goes back to the clock.
    pub fn set_mock_time(&mut self, seconds: Option<i64>) {
        self.mock_time_seconds = seconds;
    }

    /// Whether the flag given to [`Self::set_interrupt`] is set.
    pub fn interrupted(&self) -> bool {
        self.interrupt.as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed))
    }

    /// Whether `-stopatheight` has been reached.
    pub fn reached_stop_height(&self) -> bool {
        match (self.options.stop_at_height, self.chain.height()) {
            (Some(stop), Some(height)) => height >= stop,
            _ => false,
        }
    }

    /// The blocks directory's obfuscation key.
    pub fn obfuscation(&self) -> &Obfuscation {
        self.persistence.obfuscation()
    }

    /// The blocks directory.
    pub fn blocks_directory(&self) -> &std::path::Path {
        self.persistence.blocks_directory()
    }

    pub(crate) fn emit(&mut self, event: ChainEvent) {
        self.observer.on_event(&event);
    }
}

impl Chainstate {
    /// `gettxoutsetinfo` of the coins at the tip, cache included (no flush;
    /// see [`crate::CoinsCache::txoutset_stats`]). Run it from a reader's
    /// query to see a settled tip.
    pub fn txoutset_stats(
        &self,
        hash_type: ibex_primitives::txoutset::TxOutSetHashType,
    ) -> Result<ibex_primitives::txoutset::TxOutSetStats, crate::ChainstateError> {
        self.connector.cache().txoutset_stats(hash_type)
    }
}
