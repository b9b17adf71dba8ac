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

/// What pruning allows one chainstate: the lowest height it may remove
/// (above a snapshot's base while the background chainstate validates
/// below it) and how many chainstates share the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PruneShare {
    /// Lowest height a file it prunes may hold.
    pub(crate) floor_height: u32,
    /// Chainstates the target is divided among.
    pub(crate) chainstates: u64,
}

impl Default for PruneShare {
    fn default() -> PruneShare {
        PruneShare { floor_height: 0, chainstates: 1 }
    }
}

/// One look at pruning (Core's `[prune]` debug line for an automatic one,
/// its `Prune (Manual)` line for a manual one), and the files it removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PruneReport {
    /// Core's name of the chainstate's role: `normal`, `assumedvalid`
    /// (the snapshot chainstate) or `background`.
    pub role: &'static str,
    /// Whether the operator asked (`pruneblockchain`).
    pub manual: bool,
    /// The target in bytes (`u64::MAX` in manual mode).
    pub target_bytes: u64,
    /// Bytes of block and undo data left.
    pub usage_bytes: u64,
    /// Lowest height a pruned file could hold.
    pub height_min: u32,
    /// Highest height a pruned file could hold.
    pub height_max: u32,
    /// The file pairs chosen.
    pub files: Vec<u32>,
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
