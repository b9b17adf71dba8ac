//! What the chainstate tells the node as it works: the node turns these
//! into Core-style `debug.log` lines and the progress display.

use ibex_primitives::BlockHash;

use crate::coins::database::io::CoinsDatabaseIo;
use crate::coins::database::FlushStats;
use crate::import_diagnosis::FileWithoutBlocks;
pub use crate::vocabulary::FlushReason;
use crate::vocabulary::ImportPlan;

/// The new tip after a block is connected or disconnected (the fields of
/// Core's `UpdateTip` log line).
#[derive(Debug, Clone, PartialEq)]
pub struct TipUpdate {
    /// The tip's hash.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Its header's version.
    pub version: i32,
    /// log2 of the chain's total work.
    pub log2_work: f64,
    /// Transactions in the chain up to the tip.
    pub chain_transaction_count: u64,
    /// The tip's header time.
    pub time: u32,
    /// Bytes the UTXO cache uses.
    pub cache_bytes: usize,
    /// Coins (entries) in the UTXO cache.
    pub cache_coin_count: usize,
    /// Inputs of the tip block (coinbase included).
    pub input_count: usize,
    /// The best header's height (Core's `m_best_header`; the tip's own
    /// height when there is none), for Core's progress estimate.
    pub best_header_height: u32,
}

/// What AssumeUTXO's chainstates did, as the lines Core logs with its
/// `[snapshot]` prefix (the [`std::fmt::Display`] of each is the line).
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotEvent {
    /// A snapshot chainstate was activated.
    Activated {
        /// Its base block.
        base: BlockHash,
    },
    /// A start found a snapshot chainstate and opened it with the
    /// chainstate validating towards its base.
    Detected {
        /// Its base block.
        base: BlockHash,
    },
    /// A start found a snapshot directory without its base block file (a
    /// load that did not finish) and removed it.
    UnfinishedRemoved {
        /// The directory.
        directory: std::path::PathBuf,
    },
    /// A start found a validated snapshot chainstate and made it the
    /// chainstate directory.
    ValidatedPromoted {
        /// The chainstate directory.
        directory: std::path::PathBuf,
    },
    /// The background chainstate reached the base; its coins are hashed.
    Hashing,
    /// The background chainstate's coins hash to the entry's value.
    Validated {
        /// The base block.
        base: BlockHash,
    },
    /// They do not (the engine stops with
    /// [`crate::ChainstateError::SnapshotValidationFailed`]).
    HashMismatch {
        /// Their hash.
        actual: ibex_primitives::Hash256,
        /// The AssumeUTXO entry's.
        expected: ibex_primitives::Hash256,
    },
    /// The invalid snapshot's directory was renamed aside.
    Renamed {
        /// The directory.
        from: std::path::PathBuf,
        /// Its new name.
        to: std::path::PathBuf,
    },
    /// `-checkblocks` stopped at the base: no data below it.
    VerificationStopped {
        /// The base block's height.
        height: u32,
    },
}

impl SnapshotEvent {
    /// Whether Core logs it as an error or warning.
    pub fn is_warning(&self) -> bool {
        matches!(self, SnapshotEvent::HashMismatch { .. } | SnapshotEvent::Renamed { .. })
    }
}

impl std::fmt::Display for SnapshotEvent {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotEvent::Activated { base } => {
                write!(formatter, "[snapshot] successfully activated snapshot {base}")
            }
            SnapshotEvent::Detected { base } => write!(
                formatter,
                "[snapshot] detected active snapshot chainstate (based on {base}) - loading"
            ),
            SnapshotEvent::UnfinishedRemoved { directory } => write!(
                formatter,
                "[snapshot] removed {}: a snapshot load that did not finish",
                directory.display()
            ),
            SnapshotEvent::ValidatedPromoted { directory } => write!(
                formatter,
                "[snapshot] the validated snapshot chainstate is now {}",
                directory.display()
            ),
            SnapshotEvent::Hashing => formatter.write_str(
                "[snapshot] computing UTXO stats for background chainstate to validate snapshot - this could take a few minutes",
            ),
            SnapshotEvent::Validated { base } => write!(
                formatter,
                "[snapshot] snapshot beginning at {base} has been fully validated"
            ),
            SnapshotEvent::HashMismatch { actual, expected } => write!(
                formatter,
                "[snapshot] hash mismatch: actual={actual}, expected={expected}"
            ),
            SnapshotEvent::Renamed { from, to } => write!(
                formatter,
                "[snapshot] renaming snapshot datadir {} to {}",
                from.display(),
                to.display()
            ),
            SnapshotEvent::VerificationStopped { height } => write!(
                formatter,
                "Block verification stopping at height {height} (no data). This could be due to pruning or use of an assumeutxo snapshot."
            ),
        }
    }
}

/// Something worth logging.
#[derive(Debug, Clone, PartialEq)]
pub enum ChainEvent {
    /// AssumeUTXO's chainstates changed (see [`SnapshotEvent`]).
    Snapshot(SnapshotEvent),
    /// A SwiftSync attempt moved on (see [`crate::swiftsync`]).
    SwiftSync(crate::swiftsync::SwiftSyncEvent),
    /// The background chainstate (AssumeUTXO's, validating towards the
    /// snapshot's base) settled a block: its new tip. Nothing is published
    /// to readers for it (they read the active chainstate).
    BackgroundTipUpdated(TipUpdate),
    /// The tip moved.
    TipUpdated(TipUpdate),
    /// A block broke a rule; it and its descendants are marked invalid.
    BlockInvalid {
        /// The block.
        hash: BlockHash,
        /// Its height.
        height: u32,
        /// Core's reject reason.
        reason: String,
        /// Whether it was only rejected (a possibly mutated copy), not marked.
        marked: bool,
    },
    /// An operator marked a block invalid (`invalidateblock`): it and its
    /// descendants are marked, and the active chain was disconnected down
    /// to its parent if it was on it (activation follows).
    BlockInvalidated {
        /// The block.
        hash: BlockHash,
        /// Its height.
        height: u32,
        /// Blocks disconnected from the active chain.
        disconnected_count: u32,
    },
    /// An operator cleared the failure marks of a block, its descendants
    /// and its ancestors (`reconsiderblock`; activation follows).
    BlockReconsidered {
        /// The block.
        hash: BlockHash,
        /// Its height.
        height: u32,
        /// Blocks whose marks were cleared.
        cleared_count: usize,
    },
    /// The chain switched branches.
    Reorganization {
        /// Blocks disconnected.
        disconnected_count: u32,
        /// Height of the last common block.
        fork_height: u32,
        /// The tip being switched to.
        new_best: BlockHash,
    },
    /// A coins flush began (its block and undo files and its block index
    /// records are already written): what it will write. [`ChainEvent::Flushed`]
    /// follows once it is written; a crash in between leaves an interrupted
    /// flush for the next start to replay.
    FlushStarted {
        /// Why.
        reason: FlushReason,
        /// The height of the tip the coins are written as.
        height: u32,
        /// Changed coins to write: created, changed or spent since the last
        /// flush (the cache's dirty entries).
        changed_coin_count: usize,
        /// Bytes of the cache being written.
        cache_bytes: usize,
        /// Whether it is written by the writer thread while validation goes
        /// on (see `crate::coins::background`), rather than with validation stopped.
        background: bool,
    },
    /// The coins and index were written.
    Flushed {
        /// What the coins flush wrote.
        stats: FlushStats,
        /// Block index records written.
        index_records: usize,
        /// How long it took from start to written, in milliseconds.
        duration_ms: u64,
        /// How long validation waited for it, in milliseconds.
        stall_ms: u64,
        /// Why.
        reason: FlushReason,
    },
    /// What the coins database did since it was opened, and its shape now
    /// (RocksDB's figures, [`crate::coins::database::io`]): sent after each
    /// [`ChainEvent::Flushed`] (boxed: ~500 bytes, once a flush).
    CoinsDatabaseMeasured(Box<CoinsDatabaseIo>),
    /// The coins database's table readers passed
    /// 1/`WHOLE_KEY_FILTERS_SHARE_DIVISOR`
    /// of the UTXO cache's share of `-dbcache`: tables written from now on
    /// filter on transaction ids only
    /// ([`crate::coins::database::CoinsDatabase::drop_whole_key_filters`]).
    WholeKeyFiltersDropped {
        /// What the table readers held, in bytes.
        table_readers_bytes: usize,
        /// The share of `-dbcache` the maps and the readers live in, in bytes.
        share_bytes: usize,
    },
    /// A restart found an interrupted flush and replayed blocks.
    Replayed {
        /// Blocks rolled back.
        rolled_back: u32,
        /// Blocks rolled forward.
        rolled_forward: u32,
    },
    /// An import read a block file to its end and found no block in it (a
    /// wrong `xor.dat` key, a file that is not a block file...).
    BlockFileWithoutBlocks(FileWithoutBlocks),
    /// An import read a block file whose last record is cut off: the file
    /// ends inside the block its frame announces, which is not imported.
    BlockFileCutOff(crate::import_diagnosis::CutOffBlockFile),
    /// An import indexed its files' headers and is about to read their
    /// blocks: what it will connect, for progress estimates.
    ImportPlanned(ImportPlan),
    /// Pruning looked for files to remove (Core's `[prune]` debug line
    /// for an automatic look, its `Prune (Manual)` line for a manual one).
    PruneLooked(crate::vocabulary::PruneReport),
    /// Block and undo file pairs were removed (each is Core's
    /// `Prune: UnlinkPrunedFiles deleted blk/rev (NNNNN)` debug line).
    PrunedFilesRemoved {
        /// Their numbers.
        files: Vec<u32>,
    },
}

/// Receives [`ChainEvent`]s.
pub trait ChainObserver: Send {
    /// Called for each event, on the connecting thread: keep it cheap.
    fn on_event(&mut self, event: &ChainEvent);
}

impl<F: FnMut(&ChainEvent) + Send> ChainObserver for F {
    fn on_event(&mut self, event: &ChainEvent) {
        self(event)
    }
}
