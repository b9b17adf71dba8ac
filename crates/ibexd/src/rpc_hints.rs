//! `dumphints` over the running node: a view of the coins and the active
//! chain from the engine (which goes on validating), the view rolled back
//! to the height with the undo data when it is below the tip, then the
//! file built on this (the RPC worker's) thread and written through
//! `<path>.incomplete` ([`ibex_chainstate::hints_writer`]), as
//! `dumptxoutset` writes; gzip-compressed when the path ends in `.gz`.

use std::path::Path;

use ibex_chainstate::hints_writer::{build_hints, write_hints_file};
use ibex_chainstate::snapshot::roll_back_to_target;
use ibex_chainstate::{ChainReader, ChainstateError, CoinSetTargetError, ReadView};
use ibex_primitives::hints::HintsVersion;
use ibex_rpc::backend::{BackendError, DumpedHints};
use sha2::{Digest, Sha256};

use crate::engine::swiftsync_file::shipped_hints_bytes;
use crate::rpc_backend::unanswered;

/// Writes the hints of the active chain at `height` (the tip when `None`)
/// to `path` (absolute). `pruning`: whether the node prunes (a block
/// without data is then a pruned one, Core's "pruned data").
pub fn dump_hints(
    reader: &ChainReader,
    view: ReadView<'_>,
    path: &Path,
    height: Option<u32>,
    version: HintsVersion,
    pruning: bool,
) -> Result<DumpedHints, BackendError> {
    if path.exists() {
        return Err(BackendError::SnapshotPathExists { path: path.display().to_string() });
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".incomplete");
    let temporary = std::path::PathBuf::from(temporary);
    let mut source = view.chain_to_height(height).map_err(unanswered)?.map_err(target_error)?;
    // As `dumptxoutset`: an unwritable path is refused before the walk.
    std::fs::File::create(&temporary).map_err(|_| BackendError::SnapshotPathUnwritable {
        path: temporary.display().to_string(),
    })?;
    let built = (|| {
        roll_back_to_target(reader, &mut source.at)?;
        let mut written = build_hints(reader, &source.at.view, &source.blocks, version)?;
        let io = |source| {
            ChainstateError::Snapshot(ibex_chainstate::snapshot::SnapshotError::Io { source })
        };
        // The file is its shipped bytes: the plain ones are not kept.
        let plain = std::mem::take(&mut written.bytes);
        let shipped = shipped_hints_bytes(path, plain).map_err(io)?;
        write_hints_file(path, &shipped).map_err(io)?;
        Ok::<_, ChainstateError>((written, shipped))
    })();
    let (written, shipped) = match built {
        Ok(written) => written,
        Err(error) => {
            // Nothing half-written is left where a user could use it.
            let _ = std::fs::remove_file(&temporary);
            return Err(match error {
                // Core's `CheckBlockDataAvailability` words for a block
                // the hints need and the node no longer (or never) had.
                ChainstateError::MissingBlockData { hash } => {
                    BackendError::BlockDataUnavailable { block_hash: hash, pruned: pruning }
                }
                other => BackendError::Storage { source: Box::new(other) },
            });
        }
    };
    Ok(DumpedHints {
        path: path.display().to_string(),
        height: source.at.target.height,
        hash: source.at.target.hash,
        version: version.byte(),
        outputs: written.outputs_numbered,
        unspent: written.unspent_count,
        bytes: shipped.len() as u64,
        sha256: Sha256::digest(&shipped).into(),
    })
}

fn target_error(error: CoinSetTargetError) -> BackendError {
    match error {
        CoinSetTargetError::HeightAboveTip { height, tip_height } => {
            BackendError::HeightAboveTip { height, tip_height }
        }
        _ => BackendError::NoTip,
    }
}
