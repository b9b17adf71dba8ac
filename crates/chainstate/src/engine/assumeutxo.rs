//! AssumeUTXO's two chainstates (Core's `ActivateSnapshot`,
//! `MaybeValidateSnapshot`, `DetectSnapshotChainstate` and
//! `ValidatedSnapshotCleanup`).
//!
//! A snapshot's coins are loaded into their own database directory,
//! `chainstate_snapshot` beside `chainstate`, off the engine's thread
//! ([`crate::snapshot::load_snapshot`]). [`Chainstate::activate_snapshot`]
//! then makes that database the active chainstate, its chain ending at the
//! base block, and the chainstate that was active becomes the background
//! one, validating from where it stands towards the base and no further
//! ([`CandidateScope::Toward`]). Blocks above the base go to the snapshot
//! chainstate only ([`CandidateScope::Above`]): it has neither the coins
//! nor the undo data to reach any other block.
//!
//! When the background chainstate reaches the base, its coins are hashed
//! (`hash_serialized_3`) and compared with the AssumeUTXO entry's:
//! - equal: a marker file is written into the snapshot directory, the
//!   background chainstate is closed and its directory deleted; at the next
//!   start the snapshot directory is renamed `chainstate` (Core deletes and
//!   renames at the next start too: the active database is open);
//! - not equal: the node says so loudly with Core's words, the background
//!   chainstate becomes the active one again, the snapshot directory is
//!   renamed `chainstate_snapshot_INVALID` and the engine stops with
//!   [`ChainstateError::SnapshotValidationFailed`] (Core shuts down too).
//!
//! On disk, what each crash leaves is consistent:
//! - a snapshot directory without `base_blockhash` is a load that did not
//!   finish: it is deleted at open;
//! - with `base_blockhash` (written last, after the coins, their hash
//!   checked, and the block index are durable): both chainstates are
//!   opened again;
//! - with the validated marker: the cleanup above is (re)done.

use std::io::Write;
use std::path::{Path, PathBuf};

use ibex_primitives::params::AssumeUtxoEntry;
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, Hash256};

use super::coins_chain::ChainRole;
use super::reader::AssumeUtxoSummary;
use super::{ChainEvent, Chainstate, CoinsChain, Shared, SnapshotEvent};
use crate::coins::cache::FlushMode;
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::stages::selection::{CandidateScope, Candidates};
use crate::vocabulary::FlushReason;

/// The snapshot chainstate's directory name, beside `chainstate`.
pub const SNAPSHOT_CHAINSTATE_DIRECTORY: &str = "chainstate_snapshot";
/// The file in the snapshot directory naming its base block (Core's
/// `SNAPSHOT_BLOCKHASH_FILENAME`: the 32 bytes of the hash).
pub const BASE_BLOCKHASH_FILE: &str = "base_blockhash";
/// The file in the snapshot directory that says its background validation
/// succeeded: at the next start the directory becomes `chainstate`.
pub const VALIDATED_MARKER_FILE: &str = "snapshot_validated";
/// What an invalid snapshot's directory is renamed with (Core's suffix).
pub const INVALID_SUFFIX: &str = "_INVALID";

/// The snapshot chainstate's directory for the chainstate directory
/// `chainstate_directory` (its sibling, as Core's datadir layout has it).
pub fn snapshot_chainstate_directory(chainstate_directory: &Path) -> PathBuf {
    let parent = chainstate_directory.parent().unwrap_or_else(|| Path::new("."));
    parent.join(SNAPSHOT_CHAINSTATE_DIRECTORY)
}

/// The coins database a node started on `chainstate_directory` makes
/// active: the snapshot chainstate's, when one was activated (its base
/// block file is there), else `chainstate_directory` itself. For tools
/// that read the coins of a stopped node (`ibex txoutsetinfo`).
pub fn active_coins_directory(chainstate_directory: &Path) -> PathBuf {
    let snapshot = snapshot_chainstate_directory(chainstate_directory);
    if snapshot.join(BASE_BLOCKHASH_FILE).is_file() {
        snapshot
    } else {
        chainstate_directory.to_path_buf()
    }
}

/// The active chainstate's snapshot: its base block and AssumeUTXO entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SnapshotBase {
    /// The base block.
    pub(crate) base: EntryId,
    /// Its entry in the AssumeUTXO table.
    pub(crate) entry: AssumeUtxoEntry,
    /// Whether the background chainstate proved the snapshot's coins.
    pub(crate) validated: bool,
}

/// Why a snapshot cannot be activated, in Core's words (`ActivateSnapshot`).
#[derive(Debug, thiserror::Error)]
pub enum SnapshotActivationError {
    /// A snapshot chainstate exists already.
    #[error("Can't activate a snapshot-based chainstate more than once")]
    AlreadyActive,
    /// The base block is not in the network's AssumeUTXO table.
    #[error("assumeutxo block hash in snapshot metadata not recognized (hash: {hash}). The following snapshot heights are available: {}", heights.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))]
    UnknownBase {
        /// The snapshot's base block.
        hash: BlockHash,
        /// The heights the table has.
        heights: Vec<u32>,
    },
    /// The base block's header is not indexed.
    #[error("The base block header ({hash}) must appear in the headers chain. Make sure all headers are syncing, and call loadtxoutset again")]
    BaseHeaderMissing {
        /// The base block.
        hash: BlockHash,
    },
    /// The base block is marked invalid.
    #[error("The base block header ({hash}) is part of an invalid chain")]
    BaseInvalid {
        /// The base block.
        hash: BlockHash,
    },
    /// The best header is not a descendant of the base.
    #[error("A forked headers-chain with more work than the chain with the snapshot base block header exists. Please proceed to sync without AssumeUtxo.")]
    ForkedHeaders,
    /// The active tip has as much work as the base already.
    #[error("work does not exceed active chainstate")]
    WorkNotExceeding,
    /// The loaded database does not end at the base block.
    #[error("the loaded coins database ends at {found:?}, not at the base block {base}")]
    NotLoaded {
        /// The base block.
        base: BlockHash,
        /// The database's best block.
        found: Option<BlockHash>,
    },
    /// Storage failed.
    #[error(transparent)]
    Chainstate(#[from] ChainstateError),
    /// The engine stopped before it could answer.
    #[error("the engine has stopped")]
    EngineStopped,
}

impl Chainstate {
    /// Core's checks before a snapshot of `base_hash` is loaded: no
    /// snapshot chainstate yet, the block in the AssumeUTXO table, its
    /// header indexed, not invalid, and on the best header's chain. Run
    /// before loading (from a reader's query) and again at activation.
    pub fn check_snapshot_base(
        &self,
        base_hash: &BlockHash,
    ) -> Result<AssumeUtxoEntry, SnapshotActivationError> {
        if self.snapshot.is_some() {
            return Err(SnapshotActivationError::AlreadyActive);
        }
        let params = self.params();
        let Some(entry) = params.assumeutxo.iter().find(|entry| entry.block_hash == *base_hash)
        else {
            let heights = params.assumeutxo.iter().map(|entry| entry.height).collect();
            return Err(SnapshotActivationError::UnknownBase { hash: *base_hash, heights });
        };
        let index = &self.shared.index;
        let Some(base) = index.get(base_hash) else {
            return Err(SnapshotActivationError::BaseHeaderMissing { hash: *base_hash });
        };
        if index.entry(base).status.has(BlockStatus::FAILED_VALID) {
            return Err(SnapshotActivationError::BaseInvalid { hash: *base_hash });
        }
        let best_header = self.shared.selection.best_header();
        if !best_header.is_some_and(|best| index.is_ancestor(base, best)) {
            return Err(SnapshotActivationError::ForkedHeaders);
        }
        Ok(*entry)
    }

    /// Makes the coins loaded into `directory` (a completed
    /// [`crate::snapshot::load_snapshot`] of `base_hash`, the database
    /// closed) the active chainstate, and the chainstate that was active
    /// the background one validating towards the base. Returns the base
    /// block. On an error nothing changed and the caller deletes
    /// `directory`.
    pub fn activate_snapshot(
        &mut self,
        directory: &Path,
        base_hash: &BlockHash,
    ) -> Result<EntryId, SnapshotActivationError> {
        let entry = self.check_snapshot_base(base_hash)?;
        let base = self
            .shared
            .index
            .get(base_hash)
            .ok_or(SnapshotActivationError::BaseHeaderMissing { hash: *base_hash })?;
        // The chainstate that was active settles and is made durable: it
        // is the background chainstate from here on.
        self.activate_best_chain()?;
        self.flush(FlushReason::Snapshot, FlushMode::KeepCoins)?;
        // Core's final check: a snapshot below the tip would be useless.
        if let Some(tip) = self.active.chain.tip() {
            let index = &self.shared.index;
            if index.entry(tip).chain_work >= index.entry(base).chain_work {
                return Err(SnapshotActivationError::WorkNotExceeding);
            }
        }
        let mut snapshot = CoinsChain::open(
            &mut self.shared,
            directory,
            ChainRole::Active,
            CandidateScope::Above(base),
        )?;
        if snapshot.chain.tip() != Some(base) {
            let found = snapshot.chain.tip().map(|id| self.shared.index.entry(id).hash);
            return Err(SnapshotActivationError::NotLoaded { base: *base_hash, found });
        }
        // Only once nothing can fail: the blocks above the base linked on
        // its assumed count are the snapshot chainstate's candidates alone
        // (the chainstate that was active has no coins to reach them).
        let linked = self.shared.selection.assume_chain_data(
            &mut self.shared.index,
            base,
            entry.chain_transaction_count,
        );
        for id in linked {
            snapshot.candidates.insert(&self.shared.index, id);
        }
        let mut validating = std::mem::replace(&mut self.active, snapshot);
        validating.role = ChainRole::Background;
        validating.candidates =
            Candidates::from_index(&self.shared.index, CandidateScope::Toward(base));
        self.background = Some(validating);
        self.snapshot = Some(SnapshotBase { base, entry, validated: false });
        self.shared.metrics.watch_coins_database(self.active.connector.cache().database());
        // The headers down to the base are durable before the directory
        // says it is a snapshot chainstate.
        self.flush_index()?;
        write_base_blockhash(directory, base_hash)?;
        self.emit(ChainEvent::Snapshot(SnapshotEvent::Activated { base: *base_hash }));
        self.publish(Some(base));
        self.publish_assumeutxo();
        self.rebalance_caches();
        Ok(base)
    }

    /// The block the active chainstate's snapshot is based on, and whether
    /// the background chainstate validated it.
    pub fn snapshot_base(&self) -> Option<(BlockHash, u32, bool)> {
        let snapshot = self.snapshot.as_ref()?;
        let entry = self.shared.index.entry(snapshot.base);
        Some((entry.hash, entry.height, snapshot.validated))
    }

    /// The background chainstate's tip (hash and height), while one
    /// validates.
    pub fn background_tip(&self) -> Option<(BlockHash, u32)> {
        let id = self.background.as_ref()?.chain.tip()?;
        let entry = self.shared.index.entry(id);
        Some((entry.hash, entry.height))
    }

    /// Connects at most `blocks_max` blocks of the background chainstate
    /// towards the snapshot's base; at the base, checks the snapshot
    /// (hashes its coins against the AssumeUTXO entry). Whether work
    /// remains.
    pub fn advance_background(&mut self, blocks_max: u32) -> Result<bool, ChainstateError> {
        let Some(snapshot) = self.snapshot else { return Ok(false) };
        if self.background.is_none() || self.shared.interrupted() {
            return Ok(false);
        }
        self.rebalance_caches();
        let Some((shared, background)) = self.parts(ChainRole::Background) else {
            return Ok(false);
        };
        let tip = background.chain.tip();
        if tip == Some(snapshot.base) {
            if !background.settle_pending(shared)? {
                return Ok(true);
            }
            if background.chain.tip() == Some(snapshot.base) {
                self.validate_snapshot()?;
                return Ok(false);
            }
            return Ok(true);
        }
        let Some(best) = background.candidates.best_valid(&shared.index) else {
            return settle_if_pending(shared, background);
        };
        if Some(best) == tip {
            return settle_if_pending(shared, background);
        }
        // Towards the best block, `blocks_max` at a time: the reading
        // ahead goes on from one step to the next.
        self.connect_toward(ChainRole::Background, best, blocks_max)?;
        self.publish_assumeutxo();
        Ok(true)
    }

    /// Settles the background chainstate's pending blocks (at a stop).
    pub fn settle_background(&mut self) -> Result<(), ChainstateError> {
        if let Some((shared, background)) = self.parts(ChainRole::Background) {
            background.settle_pending(shared)?;
        }
        Ok(())
    }

    /// The background chainstate reached the base: compares its coins'
    /// hash with the AssumeUTXO entry's (Core's `MaybeValidateSnapshot`).
    fn validate_snapshot(&mut self) -> Result<(), ChainstateError> {
        let Some(snapshot) = self.snapshot else { return Ok(()) };
        self.shared.emit(ChainEvent::Snapshot(SnapshotEvent::Hashing));
        let Some(background) = self.background.as_mut() else { return Ok(()) };
        let stats =
            background.connector.cache().txoutset_stats(TxOutSetHashType::HashSerialized3)?;
        let got = stats.hash.unwrap_or(Hash256([0; 32]));
        if got != snapshot.entry.hash_serialized {
            return self.snapshot_invalid(snapshot, got);
        }
        let base = snapshot.entry.block_hash;
        self.emit(ChainEvent::Snapshot(SnapshotEvent::Validated { base }));
        let snapshot_directory = self.snapshot_directory();
        write_marker(&snapshot_directory)?;
        let mut background = self.background.take().ok_or(ChainstateError::SnapshotStateLost)?;
        background.collect_background_flush(&mut self.shared, super::flush::Collect::Wait)?;
        drop(background);
        let chainstate_directory = self.shared.options.chainstate_directory.clone();
        remove_directory(&chainstate_directory)?;
        if let Some(state) = self.snapshot.as_mut() {
            state.validated = true;
        }
        self.publish_assumeutxo();
        self.rebalance_caches();
        Ok(())
    }

    /// The background chainstate's coins do not hash to the entry's: the
    /// snapshot was wrong. Core's words, the background chainstate active
    /// again, the snapshot's directory kept aside, and the engine stops.
    fn snapshot_invalid(
        &mut self,
        snapshot: SnapshotBase,
        got: Hash256,
    ) -> Result<(), ChainstateError> {
        let snapshot_height = self.active.chain.height().unwrap_or(0);
        let base_height = snapshot.entry.height;
        let expected = snapshot.entry.hash_serialized;
        self.emit(ChainEvent::Snapshot(SnapshotEvent::HashMismatch { actual: got, expected }));
        let failure = ChainstateError::SnapshotValidationFailed { snapshot_height, base_height };
        self.settle()?;
        let mut validated = self.background.take().ok_or(ChainstateError::SnapshotStateLost)?;
        validated.flush(&mut self.shared, FlushReason::Snapshot, FlushMode::KeepCoins)?;
        validated.role = ChainRole::Active;
        validated.candidates =
            Candidates::from_index(&self.shared.index, CandidateScope::Everything);
        let mut invalid = std::mem::replace(&mut self.active, validated);
        invalid.collect_background_flush(&mut self.shared, super::flush::Collect::Wait)?;
        drop(invalid);
        self.snapshot = None;
        self.shared.metrics.watch_coins_database(self.active.connector.cache().database());
        let directory = self.snapshot_directory();
        let mut invalid_name = directory.as_os_str().to_owned();
        invalid_name.push(INVALID_SUFFIX);
        let to = PathBuf::from(&invalid_name);
        self.emit(ChainEvent::Snapshot(SnapshotEvent::Renamed { from: directory.clone(), to }));
        std::fs::rename(&directory, &invalid_name)
            .map_err(|source| ChainstateError::Io { path: directory.clone(), source })?;
        let tip = self.active.chain.tip();
        self.publish(tip);
        self.publish_assumeutxo();
        self.rebalance_caches();
        Err(failure)
    }

    /// Shares the UTXO cache's part of `-dbcache` between the chainstates
    /// as Core's `MaybeRebalanceCaches` does: all to the only one; with
    /// two, 95% to the snapshot chainstate while it catches up with the
    /// best header, then 95% to the background one (5% to the other).
    pub(crate) fn rebalance_caches(&mut self) {
        self.share_pruning();
        let total = self.shared.options.memory.coins_bytes;
        let Some(background) = self.background.as_mut() else {
            self.active.connector.cache_mut().set_cache_bytes_max(total);
            return;
        };
        let small = total / 20;
        let large = total - small;
        let best_header = self.shared.selection.best_header();
        let catching_up = self.active.chain.tip() != best_header;
        let (active, other) = if catching_up { (large, small) } else { (small, large) };
        self.active.connector.cache_mut().set_cache_bytes_max(active);
        background.connector.cache_mut().set_cache_bytes_max(other);
    }

    /// Publishes the snapshot and the background chainstate's tip to
    /// readers ([`crate::ChainSnapshot::assumeutxo`]).
    pub(crate) fn publish_assumeutxo(&mut self) {
        let summary = self.snapshot.map(|snapshot| {
            let base = self.shared.index.entry(snapshot.base);
            AssumeUtxoSummary {
                base_hash: base.hash,
                base_height: base.height,
                background_tip: self.background_tip(),
                validated: snapshot.validated,
            }
        });
        self.shared.reads.publish_assumeutxo(summary);
    }

    /// The snapshot chainstate's directory.
    pub(crate) fn snapshot_directory(&self) -> PathBuf {
        snapshot_chainstate_directory(&self.shared.options.chainstate_directory)
    }
}

/// Settles a background chainstate with nothing left to connect; whether
/// work remains.
fn settle_if_pending(
    shared: &mut Shared,
    background: &mut CoinsChain,
) -> Result<bool, ChainstateError> {
    if background.scripts.is_empty() {
        return Ok(false);
    }
    background.settle_pending(shared)?;
    Ok(true)
}

/// Opens what the snapshot directory beside `chainstate_directory` holds:
/// finishes a validated snapshot's cleanup, deletes an unfinished load,
/// and returns the base block of a snapshot chainstate to open.
pub(crate) fn prepare_snapshot_directory(
    shared: &mut Shared,
    chainstate_directory: &Path,
) -> Result<Option<BlockHash>, ChainstateError> {
    let directory = snapshot_chainstate_directory(chainstate_directory);
    // A marker left in `chainstate` by a cleanup interrupted after its
    // rename means nothing any more.
    for stale in [VALIDATED_MARKER_FILE, BASE_BLOCKHASH_FILE] {
        remove_file_if_present(&chainstate_directory.join(stale))?;
    }
    if !directory.exists() {
        return Ok(None);
    }
    if directory.join(VALIDATED_MARKER_FILE).exists() {
        remove_directory(chainstate_directory)?;
        std::fs::rename(&directory, chainstate_directory)
            .map_err(|source| ChainstateError::Io { path: directory.clone(), source })?;
        for stale in [VALIDATED_MARKER_FILE, BASE_BLOCKHASH_FILE] {
            remove_file_if_present(&chainstate_directory.join(stale))?;
        }
        let promoted = chainstate_directory.to_path_buf();
        let event = SnapshotEvent::ValidatedPromoted { directory: promoted };
        shared.emit(ChainEvent::Snapshot(event));
        return Ok(None);
    }
    let base_file = directory.join(BASE_BLOCKHASH_FILE);
    // At most one byte more than a hash: a longer file is refused below
    // without being read whole.
    let read = std::fs::File::open(&base_file).and_then(|file| {
        let mut bytes = Vec::with_capacity(33);
        std::io::Read::read_to_end(&mut std::io::Read::take(file, 33), &mut bytes)?;
        Ok(bytes)
    });
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            remove_directory(&directory)?;
            let event = SnapshotEvent::UnfinishedRemoved { directory };
            shared.emit(ChainEvent::Snapshot(event));
            return Ok(None);
        }
        Err(source) => return Err(ChainstateError::Io { path: base_file, source }),
    };
    let hash: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| ChainstateError::CorruptSnapshotBase { path: base_file.clone() })?;
    Ok(Some(BlockHash(hash)))
}

/// Writes `base_blockhash` (durably, with its directory entry).
fn write_base_blockhash(directory: &Path, hash: &BlockHash) -> Result<(), ChainstateError> {
    write_durably(&directory.join(BASE_BLOCKHASH_FILE), &hash.0)
}

/// Writes the validated marker (durably).
fn write_marker(directory: &Path) -> Result<(), ChainstateError> {
    write_durably(&directory.join(VALIDATED_MARKER_FILE), b"validated\n")
}

fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), ChainstateError> {
    let io = |source| ChainstateError::Io { path: path.to_path_buf(), source };
    let mut file = std::fs::File::create(path).map_err(io)?;
    file.write_all(bytes).map_err(io)?;
    file.sync_all().map_err(io)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent).and_then(|directory| directory.sync_all()).map_err(io)?;
    }
    Ok(())
}

fn remove_directory(path: &Path) -> Result<(), ChainstateError> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(ChainstateError::Io { path: path.to_path_buf(), source }),
    }
}

fn remove_file_if_present(path: &Path) -> Result<(), ChainstateError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(ChainstateError::Io { path: path.to_path_buf(), source }),
    }
}
