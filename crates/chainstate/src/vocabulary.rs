//! Words the engine, its stages, the import and the monitoring share:
//! defined here, below all of them, so that no lower module reaches up
//! into the engine for a type (the stages' flush reason, the statistics
//! the metrics publish, what an import reads and plans). The engine and
//! the import re-export them where callers have always found them.

use std::path::{Path, PathBuf};

use ibex_blockstore::block_file_path;

/// Why a flush happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushReason {
    /// The cache reached `-dbcache`.
    CacheFull,
    /// The periodic interval passed.
    Periodic,
    /// Shutdown, or the end of an import.
    Shutdown,
    /// A snapshot chainstate is activated or its background validation
    /// ended (AssumeUTXO): the chainstates change roles.
    Snapshot,
    /// Block files are about to be pruned: the coins must be durable past
    /// their blocks first.
    Prune,
}

/// Whether and how block and undo files are removed (Core's `-prune`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PruneMode {
    /// Every block is kept (`-prune=0`).
    #[default]
    Disabled,
    /// Files are removed only when the operator asks (`-prune=1`,
    /// `pruneblockchain`).
    Manual,
    /// Files are removed to keep block and undo data under a target
    /// (`-prune=N`, N MiB; at least 550).
    Automatic {
        /// The target in bytes.
        target_bytes: u64,
    },
}

impl PruneMode {
    /// Whether blocks may be removed at all (Core's `IsPruneMode`).
    pub fn is_enabled(self) -> bool {
        self != PruneMode::Disabled
    }

    /// The automatic target, if pruning is automatic.
    pub fn target_bytes(self) -> Option<u64> {
        match self {
            PruneMode::Automatic { target_bytes } => Some(target_bytes),
            PruneMode::Disabled | PruneMode::Manual => None,
        }
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
    /// Time validation waited for flushes in all, in milliseconds (the
    /// shutdown flush excluded).
    pub flush_stall_ms_total: u64,
    /// The last shutdown flush, start to synced, in milliseconds.
    pub shutdown_flush_ms: u64,
    /// Times a reader's query settled pending blocks before their turn (a
    /// pipeline bubble each; [`crate::ChainReader::unsettled`] reads make none).
    pub reads_settled: u64,
    /// Times the engine service settled pending blocks because no command
    /// came for [`crate::EngineService::pause_before_settle`].
    pub pauses_settled: u64,
    /// Milliseconds the engine service waited for commands (the engine
    /// starved: nothing to connect).
    pub command_wait_ms: u64,
    /// Where the connected blocks' spent coins were found, by age, and
    /// their BIP30 lookups ([`crate::coins::coin_reads`]): the spends add up to
    /// [`Self::inputs_connected`].
    pub coin_reads: crate::coins::coin_reads::CoinReadCounts,
}

/// Where blocks come from.
#[derive(Debug, Clone)]
pub enum ImportSource {
    /// The node's own blocks directory, from `blk00000.dat` on (`-reindex`).
    OwnBlockFiles,
    /// A file of framed, unobfuscated blocks (`-loadblock`).
    ExternalFile(PathBuf),
}

/// The files of `source`, with their `blk` number when they are the
/// node's own (then obfuscated with the directory's key).
pub(crate) fn source_files(source: &ImportSource, directory: &Path) -> Vec<(Option<u32>, PathBuf)> {
    match source {
        ImportSource::OwnBlockFiles => (0u32..)
            .map(|number| (Some(number), block_file_path(directory, number)))
            .take_while(|(_, path)| path.exists())
            .collect(),
        ImportSource::ExternalFile(path) => vec![(None, path.clone())],
    }
}

/// The best header chain's blocks an import's files hold, by height.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportPlan {
    /// The best header's height once the import's headers are indexed.
    pub best_header_height: u32,
    /// The height of `block_bytes[0]`: one above the active tip (0 without
    /// a tip).
    pub first_height: u32,
    /// The size in bytes of each block of the best header chain from
    /// `first_height` to `best_header_height`, as the files' records give it
    /// (0 for a block the files do not hold).
    pub block_bytes: Vec<u32>,
}

impl ImportPlan {
    /// Bytes of every block in the plan.
    pub fn total_bytes(&self) -> u64 {
        self.block_bytes.iter().map(|&bytes| u64::from(bytes)).sum()
    }
}
