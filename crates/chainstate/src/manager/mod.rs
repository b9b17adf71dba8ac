//! The chainstate manager: the block index, the active chain and the UTXO
//! cache together, with the block and undo files under them (Core's
//! `ChainstateManager` and `Chainstate` in one).
//!
//! - [`Chainstate::accept_block`] indexes a block and checks everything
//!   that does not need the coins (Core's `AcceptBlock`).
//! - [`Chainstate::activate_best_chain`] moves the tip to the most-work
//!   valid chain: disconnecting, connecting, marking invalid blocks (Core's
//!   `ActivateBestChain`), until no untried candidate with more work than
//!   the tip is left. On equal work the chain whose tip was met first
//!   stays ([`BlockIndexEntry::sequence`](crate::index::BlockIndexEntry)).
//!   [`Chainstate::advance_best_chain`] is its step within a stream of
//!   blocks, leaving the last blocks' scripts running.
//! - [`Chainstate::check_best_candidate`] states whether that fixed point
//!   holds (the startup and end-of-import check).
//! - [`Chainstate::flush`] makes it all durable in Core's order: block and
//!   undo files, then the block index, then the coins (see [`flush`]).
//!
//! On open, an interrupted coins flush is replayed ([`recovery`]).

pub mod accept;
mod activate;
pub mod events;
pub mod fixed_point;
pub mod flush;
mod headers;
pub mod open;
pub mod pipeline;
pub mod recovery;
pub mod tips;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use ibex_blockstore::{BlockFileWriter, Obfuscation, UndoFileWriter};
use ibex_primitives::{BlockHash, Params};

pub use events::{ChainEvent, ChainObserver, FlushReason, TipUpdate};
pub use fixed_point::{BestCandidateCheck, CandidateLeft};

use crate::cache::CoinsCache;
use crate::index::store::IndexStore;
use crate::index::{ActiveChain, BlockIndex, EntryId};
use crate::prepared::PreparedBlock;
use crate::scripts::ScriptThreads;
use crate::selection::ChainSelection;

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
    /// UTXO cache limit in bytes (`-dbcache`).
    pub cache_bytes_max: usize,
    /// Largest coins write batch in bytes (`-dbbatchsize`).
    pub flush_batch_bytes_max: usize,
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

/// The chainstate: index, active chain, UTXO cache and stores.
pub struct Chainstate {
    pub(crate) options: ChainstateOptions,
    pub(crate) index: BlockIndex,
    pub(crate) store: IndexStore,
    pub(crate) chain: ActiveChain,
    pub(crate) cache: CoinsCache,
    pub(crate) obfuscation: Obfuscation,
    pub(crate) block_writer: BlockFileWriter,
    pub(crate) undo_writer: UndoFileWriter,
    /// Candidates, blocks waiting for a parent, the best header.
    pub(crate) selection: ChainSelection,
    pub(crate) scripts: ScriptThreads,
    pub(crate) observer: Box<dyn ChainObserver>,
    /// The block accepted last, kept so connecting it needs no disk read.
    pub(crate) recent: Option<(EntryId, PreparedBlock)>,
    pub(crate) last_flush: Instant,
    pub(crate) statistics: ChainStatistics,
    pub(crate) undo_buffer: Vec<u8>,
    /// Connected blocks whose scripts are still being checked, oldest first
    /// (at most [`pipeline::SCRIPT_PIPELINE_BLOCKS`] + 1).
    pub(crate) pending: std::collections::VecDeque<pipeline::PendingBlock>,
    /// The coins flush being written on the writer thread.
    pub(crate) background_flush: Option<flush::BackgroundFlushInfo>,
    /// Stored blocks being read ahead of the tip for the current
    /// activation step (see [`crate::block_read_ahead`]).
    pub(crate) read_ahead: Option<crate::block_read_ahead::BlockReadAhead>,
}

impl std::fmt::Debug for Chainstate {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Chainstate")
            .field("height", &self.chain.height())
            .field("index_entries", &self.index.len())
            .field("cache_entries", &self.cache.entry_count())
            .finish()
    }
}

/// Counters since open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChainStatistics {
    /// Blocks connected.
    pub blocks_connected: u64,
    /// Blocks disconnected.
    pub blocks_disconnected: u64,
    /// Transactions in connected blocks.
    pub transactions_connected: u64,
    /// Inputs (excluding coinbases) in connected blocks.
    pub inputs_connected: u64,
    /// Inputs whose scripts were checked.
    pub scripts_checked: u64,
    /// Blocks found invalid.
    pub blocks_invalid: u64,
    /// Coins flushes.
    pub flushes: u64,
    /// Longest flush from start to written, in milliseconds.
    pub longest_flush_ms: u64,
    /// Longest time validation waited for a flush, in milliseconds (the
    /// shutdown flush excluded: no block waits for it).
    pub longest_flush_stall_ms: u64,
    /// The last shutdown flush, start to synced, in milliseconds.
    pub shutdown_flush_ms: u64,
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
        &self.cache
    }

    /// Network parameters.
    pub fn params(&self) -> &Params {
        &self.options.params
    }

    /// Counters since open.
    pub fn statistics(&self) -> ChainStatistics {
        self.statistics
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
        self.cache.database().set_crash_ratio(ratio);
    }

    /// Changes the `-stopatheight` height.
    pub fn set_stop_at_height(&mut self, height: Option<u32>) {
        self.options.stop_at_height = height;
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
        &self.obfuscation
    }

    /// The blocks directory.
    pub fn blocks_directory(&self) -> &std::path::Path {
        &self.options.blocks_directory
    }

    pub(crate) fn emit(&mut self, event: ChainEvent) {
        self.observer.on_event(&event);
    }
}
