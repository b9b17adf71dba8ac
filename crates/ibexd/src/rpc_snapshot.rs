//! `dumptxoutset` and `loadtxoutset` over the running node.
//!
//! `dumptxoutset`: Core's checks of the path, a view
//! of the coins from the engine (which goes on validating), on a pruning
//! node Core's check that every block the rollback undoes still has its
//! data and undo data, a rollback of
//! the view when the target is below the tip, then the walk that writes
//! the file on this (the RPC worker's) thread, into `<path>.incomplete`
//! renamed at the end, as Core does. A named pipe is written directly
//! (after a first walk that counts the coins for its header).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::SyncSender;

use ibex_chainstate::snapshot::{
    count_coins, load_snapshot, roll_back_to_target, write_snapshot, SnapshotError,
    SnapshotMetadata, SnapshotReader, METADATA_BYTES,
};
use ibex_chainstate::{
    snapshot_chainstate_directory, BlockStatus, ChainReader, ChainstateError, CoinSetAtTip,
    CoinSetTargetError, CoinsDatabase, DatabaseOptions, EngineCommand, ReadView,
    SnapshotActivationError,
};

use crate::rpc_backend::unanswered;
use crate::rpc_control::send_and_wait;
use ibex_primitives::params::AssumeUtxoEntry;
use ibex_primitives::{BlockHash, Hash256, Height, Params};
use ibex_rpc::backend::{BackendError, DumpedTxOutSet, LoadedTxOutSet};

/// How the node dumps: its chain and whether it prunes.
pub struct SnapshotDump<'a> {
    /// The node's parameters (the snapshot's network magic).
    pub params: &'a Params,
    /// Whether `-prune` is on (Core then checks the rollback's blocks).
    pub pruning: bool,
}

/// Writes the coins at `target` (the tip when `None`) to `path` (absolute).
pub fn dump_txoutset(
    reader: &ChainReader,
    view: ReadView<'_>,
    dump: &SnapshotDump<'_>,
    path: &Path,
    target: Option<BlockHash>,
) -> Result<DumpedTxOutSet, BackendError> {
    let params = dump.params;
    let is_fifo = path_is_fifo(path);
    if path.exists() && !is_fifo {
        return Err(BackendError::SnapshotPathExists { path: path.display().to_string() });
    }
    let temporary = if is_fifo {
        path.to_path_buf()
    } else {
        let mut name = path.as_os_str().to_owned();
        name.push(".incomplete");
        name.into()
    };
    let mut at = view.coin_set(target.as_ref()).map_err(unanswered)?.map_err(target_error)?;
    let file = File::create(&temporary).map_err(|_| BackendError::SnapshotPathUnwritable {
        path: temporary.display().to_string(),
    })?;
    // Core checks after opening the file, before rolling back.
    if dump.pruning && !rollback_blocks_stored(&at) {
        drop(file);
        if !is_fifo {
            let _ = std::fs::remove_file(&temporary);
        }
        return Err(BackendError::RollbackDataPruned);
    }
    let written = (|| {
        roll_back_to_target(reader, &mut at)?;
        let coin_count = if is_fifo { count_coins(&at.view)? } else { 0 };
        let metadata = SnapshotMetadata {
            message_start: params.message_start,
            base_block: at.target.hash,
            coin_count,
        };
        let written = write_snapshot(&at.view, metadata, file, !is_fifo)?;
        if !is_fifo {
            std::fs::rename(&temporary, path).map_err(|source| {
                ChainstateError::Snapshot(ibex_chainstate::snapshot::SnapshotError::Io { source })
            })?;
        }
        Ok::<_, ChainstateError>(written)
    })();
    let written = match written {
        Ok(written) => written,
        Err(error) => {
            if !is_fifo {
                // Nothing half-written is left where a user could load it.
                let _ = std::fs::remove_file(&temporary);
            }
            return Err(BackendError::Storage { source: Box::new(error) });
        }
    };
    Ok(DumpedTxOutSet {
        coins_written: written.coins_written,
        base_hash: at.target.hash,
        base_height: at.target.height,
        path: path.display().to_string(),
        txoutset_hash: written.stats.hash.unwrap_or(Hash256([0; 32])),
        chain_transaction_count: at.target.chain_transaction_count,
    })
}

/// Core's check on a pruning node: a rollback below the tip needs every
/// block from the target up (the target included, as Core's
/// `GetFirstBlock` of the tip's stored run must not lie above it) to have
/// its data and undo data.
fn rollback_blocks_stored(at: &CoinSetAtTip) -> bool {
    if at.target.hash == at.tip.hash {
        return true;
    }
    let stored = |status: BlockStatus| {
        status.has(BlockStatus::HAVE_DATA) && status.has(BlockStatus::HAVE_UNDO)
    };
    stored(at.target.status) && at.blocks_above_target.iter().all(|block| stored(block.status))
}

#[cfg(unix)]
fn path_is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|metadata| metadata.file_type().is_fifo())
}

#[cfg(not(unix))]
fn path_is_fifo(_path: &Path) -> bool {
    false
}

fn target_error(error: CoinSetTargetError) -> BackendError {
    match error {
        CoinSetTargetError::UnknownBlock { hash } => {
            BackendError::BlockNotFound { block_hash: hash }
        }
        CoinSetTargetError::NotInActiveChain { hash } => {
            BackendError::NotInActiveChain { block_hash: hash }
        }
        _ => BackendError::NoTip,
    }
}

/// Why a snapshot was not loaded, after its metadata was read: Core's
/// reasons, which `loadtxoutset` puts after "Unable to load UTXO
/// snapshot: ".
#[derive(Debug, thiserror::Error)]
enum LoadFailure {
    /// The coins could not be read, stored or did not hash to the entry's.
    #[error("Population failed: {source}")]
    Population {
        /// What failed.
        source: ChainstateError,
    },
    /// The engine refused the base block or the activation.
    #[error(transparent)]
    Activation(#[from] SnapshotActivationError),
}

/// Where and how `loadtxoutset` loads.
pub struct SnapshotLoad<'a> {
    /// The node's parameters (with its AssumeUTXO table).
    pub params: &'a Params,
    /// The chainstate directory: the snapshot's goes beside it.
    pub chainstate_directory: &'a Path,
    /// The coins database's share of `-dbcache` while loading.
    pub database_options: &'a DatabaseOptions,
    /// The engine's operator channel.
    pub control: &'a SyncSender<EngineCommand>,
    /// The node's stop flag.
    pub shutdown: &'a AtomicBool,
}

/// `loadtxoutset` of `path` (absolute): Core's checks of the file, its
/// metadata and its base block (asked of the engine), then the coins
/// loaded on this (the RPC worker's) thread into the snapshot directory
/// and the snapshot chainstate activated by the engine. On any failure
/// the snapshot directory is removed.
pub fn load_txoutset(
    view: ReadView<'_>,
    load: &SnapshotLoad<'_>,
    path: &Path,
) -> Result<LoadedTxOutSet, BackendError> {
    let shown = path.display().to_string();
    let unreadable = || BackendError::SnapshotUnreadable { path: shown.clone() };
    let mut file = File::open(path).map_err(|_| unreadable())?;
    let file_bytes = file.metadata().map_err(|_| unreadable())?.len();
    let mut header = Vec::with_capacity(METADATA_BYTES);
    let read = (&mut file).take(METADATA_BYTES as u64).read_to_end(&mut header);
    let metadata = read
        .map_err(|source| SnapshotError::Io { source })
        .and_then(|_| SnapshotMetadata::decode(&header, load.params))
        .map_err(|source| BackendError::SnapshotMetadataUnparsable { source: Box::new(source) })?;
    let not_loaded = |failure: LoadFailure| BackendError::SnapshotNotLoaded {
        path: shown.clone(),
        source: Box::new(failure),
    };
    let entry = view
        .check_snapshot_base(&metadata.base_block)
        .map_err(unanswered)?
        .map_err(|refusal| not_loaded(refusal.into()))?;
    let directory = snapshot_chainstate_directory(load.chainstate_directory);
    // Left by a load that failed without cleaning up (no snapshot
    // chainstate is active: the engine said so above).
    remove_snapshot_directory(&directory);
    let coins_loaded = match populate(file, file_bytes, load, &entry, &directory) {
        Ok(coins_loaded) => coins_loaded,
        Err(source) => {
            remove_snapshot_directory(&directory);
            return Err(not_loaded(LoadFailure::Population { source }));
        }
    };
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    let command = EngineCommand::ActivateSnapshot {
        directory: directory.clone(),
        base: entry.block_hash,
        reply,
    };
    let activated = send_and_wait(load.control, command, &answer, load.shutdown);
    let (tip_hash, base_height) = match activated {
        Ok(Ok(base)) => base,
        Ok(Err(refusal)) => {
            remove_snapshot_directory(&directory);
            return Err(not_loaded(refusal.into()));
        }
        Err(error) => {
            remove_snapshot_directory(&directory);
            return Err(error);
        }
    };
    Ok(LoadedTxOutSet { coins_loaded, tip_hash, base_height, path: shown })
}

/// Reads every coin of the snapshot in `file` into a new coins database
/// in `directory` and checks their hash against `entry`'s; the database
/// is closed when it returns.
fn populate(
    file: File,
    file_bytes: u64,
    load: &SnapshotLoad<'_>,
    entry: &AssumeUtxoEntry,
    directory: &Path,
) -> Result<u64, ChainstateError> {
    let mut file = file;
    file.seek(SeekFrom::Start(0))
        .map_err(|source| ChainstateError::Snapshot(SnapshotError::Io { source }))?;
    let reader =
        SnapshotReader::new(file, load.params, Some(file_bytes), Height::new(entry.height))?;
    let database = CoinsDatabase::open(directory, load.database_options)?;
    let loaded = load_snapshot(reader, &database, entry, |_| {})?;
    Ok(loaded.coins_loaded)
}

fn remove_snapshot_directory(directory: &Path) {
    // Nothing there is a success; anything else is retried by the next
    // load and by the next start (a directory without `base_blockhash`).
    let _ = std::fs::remove_dir_all(directory);
}
