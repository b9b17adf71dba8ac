//! The engine: Core's `ChainstateManager`, under the name callers know
//! ([`Chainstate`]). It holds what its chainstates share and the active
//! chainstate, and drives the stages ([`crate::stages`]: chain selection,
//! connect, scripts, persistence) block by block:
//!
//! ```text
//! Chainstate (the engine; Core's ChainstateManager)
//! ├── shared: Shared ── the block index and its invalid marks, the block
//! │                     and undo files, the index database, the best
//! │                     header, the blocks waiting for a parent's data,
//! │                     the script threads, the observer, readers, metrics
//! ├── active: CoinsChain ──────────── each a chainstate (Core's Chainstate):
//! └── background: Option<CoinsChain>  its chain, its coins (a cache over
//!                                     its own database directory), its
//!                                     candidates, its pending scripts,
//!                                     its coins flush schedule
//! ```
//!
//! A chainstate's steps (connect, disconnect, settle, flush, replay) are
//! methods of `CoinsChain` given the `Shared` record, so the same step runs
//! on the active chainstate or on a second one beside it (the seam of
//! AssumeUTXO's background validation, `Chainstate::open_background`).
//! Readers and events speak of the active chainstate. Only the engine
//! touches more than one stage; the modules here are its steps:
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
pub mod assumeutxo;
#[cfg(test)]
mod assumeutxo_tests;
pub(crate) mod coins_chain;
pub mod events;
pub mod fixed_point;
#[cfg(test)]
mod fixture_tests;
pub mod flush;
pub mod headers;
mod import_activation;
pub mod invalidate;
pub mod open;
pub mod prune;
#[cfg(test)]
mod prune_tests;
pub mod read_api;
pub mod reader;
pub mod recovery;
pub mod service;
pub mod settle;
pub(crate) mod shared;
pub mod swiftsync;
pub mod tips;
pub mod verify;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use ibex_blockstore::Obfuscation;
use ibex_primitives::{BlockHash, Params};

pub use crate::vocabulary::ChainStatistics;
pub use api::BlockSource;
pub use events::{ChainEvent, ChainObserver, FlushReason, SnapshotEvent, TipUpdate};
pub use fixed_point::{BestCandidateCheck, CandidateLeft};
pub use invalidate::ChainControlError;
pub use read_api::{
    BestChainBlocks, BlockAncestry, BlocksAtTip, CoinsAtTip, ForkPoint, IndexedBlock, ReadView,
    TipState, TxOutSetAtTip, MAX_TIP_AGE_SECONDS,
};
pub use reader::{
    AssumeUtxoSummary, ChainReader, ChainSnapshot, ReadError, TipSummary, READ_QUERIES_WAITING_MAX,
};
pub use service::{
    engine_service, ChainControlReply, EngineCommand, EngineNotice, EngineService, ServiceEnd,
    ENGINE_COMMANDS_WAITING_MAX, ENGINE_CONTROL_COMMANDS_WAITING_MAX, ENGINE_NOTICES_WAITING_MAX,
};

use crate::coins::cache::CoinsCache;
use crate::index::{ActiveChain, BlockIndex};
use crate::metrics::ChainMetrics;
pub(crate) use coins_chain::ChainRole;
pub(crate) use coins_chain::CoinsChain;
pub(crate) use shared::Shared;

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
    /// Whether block files are pruned (`-prune`).
    pub prune: crate::PruneMode,
    /// Core's `-fastprune` (testing): block files of
    /// 64 KiB (`FAST_PRUNE_FILE_BYTES_MAX`), grown in
    /// chunks of 16 KiB, so that short chains fill several.
    pub fast_prune: bool,
}

/// The engine (Core's `ChainstateManager`): what every chainstate shares
/// (the block index, the block and undo files, the best header) and the
/// active chainstate (the chain, its coins, its candidates), with room for
/// a second one beside it (`docs/architecture.md`, "The engine"). It keeps
/// the name callers know.
pub struct Chainstate {
    /// The block index, the files, the best header, the script threads,
    /// the observer and what is published to readers and monitoring.
    pub(crate) shared: Shared,
    /// The active chainstate: the chain the node serves and its coins.
    pub(crate) active: CoinsChain,
    /// A chainstate validated beside the active one, when one is open:
    /// AssumeUTXO's background validation ([`assumeutxo`]).
    pub(crate) background: Option<CoinsChain>,
    /// The snapshot the active chainstate was loaded from, if it was.
    pub(crate) snapshot: Option<assumeutxo::SnapshotBase>,
    /// A SwiftSync plan waiting for its blocks ([`swiftsync`]).
    pub(crate) swiftsync: Option<swiftsync::SwiftSyncState>,
}

impl std::fmt::Debug for Chainstate {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Chainstate")
            .field("height", &self.active.chain.height())
            .field("index_entries", &self.shared.index.len())
            .field("cache_entries", &self.active.connector.cache().entry_count())
            .finish()
    }
}

impl Chainstate {
    /// The block index.
    pub fn index(&self) -> &BlockIndex {
        &self.shared.index
    }

    /// The active chain.
    pub fn chain(&self) -> &ActiveChain {
        &self.active.chain
    }

    /// The UTXO cache.
    pub fn cache(&self) -> &CoinsCache {
        self.active.connector.cache()
    }

    /// The unspent coin at `outpoint` as of the tip the cache is at (the
    /// cache, then the database; nothing is cached by the lookup).
    pub fn coin(
        &self,
        outpoint: &ibex_primitives::OutPoint,
    ) -> Result<Option<crate::Coin>, crate::ChainstateError> {
        self.active.connector.cache().coin(outpoint)
    }

    /// The stored block `id`, read back from its block file and parsed.
    pub fn read_block(
        &self,
        id: crate::EntryId,
    ) -> Result<crate::PreparedBlock, crate::ChainstateError> {
        self.shared.persistence.read_block(self.shared.index.entry(id))
    }

    /// The undo data of the connected block `id`, read back from its undo file.
    pub fn read_undo(
        &self,
        id: crate::EntryId,
    ) -> Result<crate::BlockUndo, crate::ChainstateError> {
        self.shared.persistence.read_undo(self.shared.index.entry(id))
    }

    /// Network parameters.
    pub fn params(&self) -> &Params {
        &self.shared.options.params
    }

    /// Counters since open.
    pub fn statistics(&self) -> ChainStatistics {
        self.shared.statistics
    }

    /// The counters and levels this engine publishes for other threads
    /// (see `crate::metrics`).
    pub fn metrics(&self) -> Arc<ChainMetrics> {
        self.shared.metrics.clone()
    }

    /// The shared record and the chainstate in `role`, borrowed apart so
    /// that a chainstate's step can be given the record; `None` when the
    /// engine has no chainstate in that role.
    pub(crate) fn parts(&mut self, role: ChainRole) -> Option<(&mut Shared, &mut CoinsChain)> {
        match role {
            ChainRole::Active => Some((&mut self.shared, &mut self.active)),
            ChainRole::Background => {
                self.background.as_mut().map(|background| (&mut self.shared, background))
            }
        }
    }

    /// The tip's hash and height.
    pub fn tip(&self) -> Option<(BlockHash, u32)> {
        let id = self.active.chain.tip()?;
        let entry = self.shared.index.entry(id);
        Some((entry.hash, entry.height))
    }

    /// Core's `-dbcrashratio` (crash tests): see
    /// [`CoinsDatabase::set_crash_ratio`](crate::CoinsDatabase::set_crash_ratio).
    /// Every chainstate's database takes it, those opened later too.
    pub fn set_flush_crash_ratio(&mut self, ratio: u64) {
        self.shared.flush_crash_ratio = ratio;
        self.active.connector.cache().database().set_crash_ratio(ratio);
        if let Some(background) = &self.background {
            background.connector.cache().database().set_crash_ratio(ratio);
        }
    }

    /// Changes the `-stopatheight` height.
    pub fn set_stop_at_height(&mut self, height: Option<u32>) {
        self.shared.options.stop_at_height = height;
    }

    /// Makes connecting stop between two blocks once `flag` is set (the
    /// node's shutdown signal), as Core's `ActivateBestChain` checks for a
    /// shutdown between steps: a long activation (the stored blocks of a
    /// `-reindex-chainstate`) ends at the next block, the chain consistent.
    pub fn set_interrupt(&mut self, flag: Arc<AtomicBool>) {
        self.shared.interrupt = Some(flag);
    }

    /// Header times are checked against `seconds` (Unix time) instead of
    /// the clock: Core's `-mocktime`, which sets the `NodeClock` its
    /// `time-too-new` rule reads. `None` goes back to the clock.
    pub fn set_mock_time(&mut self, seconds: Option<i64>) {
        self.shared.mock_time_seconds = seconds;
    }

    /// Whether the flag given to [`Self::set_interrupt`] is set.
    pub fn interrupted(&self) -> bool {
        self.shared.interrupted()
    }

    /// Whether `-stopatheight` has been reached.
    pub fn reached_stop_height(&self) -> bool {
        self.active.reached_stop_height(&self.shared)
    }

    /// The blocks directory's obfuscation key.
    pub fn obfuscation(&self) -> &Obfuscation {
        self.shared.persistence.obfuscation()
    }

    /// The blocks directory.
    pub fn blocks_directory(&self) -> &std::path::Path {
        self.shared.persistence.blocks_directory()
    }

    pub(crate) fn emit(&mut self, event: ChainEvent) {
        self.shared.emit(event);
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
        self.active.connector.cache().txoutset_stats(hash_type)
    }
}
