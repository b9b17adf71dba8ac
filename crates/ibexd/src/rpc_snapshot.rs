//! `dumptxoutset` over the running node: Core's checks of the path, a view
//! of the coins from the engine (which goes on validating), a rollback of
//! the view when the target is below the tip, then the walk that writes
//! the file on this (the RPC worker's) thread, into `<path>.incomplete`
//! renamed at the end, as Core does. A named pipe is written directly
//! (after a first walk that counts the coins for its header).

use std::fs::File;
use std::path::Path;

use ibex_chainstate::snapshot::{
    count_coins, roll_back_to_target, write_snapshot, SnapshotMetadata,
};
use ibex_chainstate::{ChainReader, ChainstateError, CoinSetTargetError, ReadView};

use crate::rpc_backend::unanswered;
use ibex_primitives::{BlockHash, Hash256, Params};
use ibex_rpc::backend::{BackendError, DumpedTxOutSet};

/// Writes the coins at `target` (the tip when `None`) to `path` (absolute).
pub fn dump_txoutset(
    reader: &ChainReader,
    view: ReadView<'_>,
    params: &Params,
    path: &Path,
    target: Option<BlockHash>,
) -> Result<DumpedTxOutSet, BackendError> {
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
