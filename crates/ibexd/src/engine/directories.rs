//! The data directory before the chainstate opens: what `-reindex` (or an
//! unfinished one) and `-reindex-chainstate` rebuild is wiped here, with
//! the reindex marker kept up to date so a crash in between is finished at
//! the next start, and nothing half-deleted is ever left under a
//! database's real name.

use std::path::Path;

use ibex_chainstate::INDEX_DIRECTORY;

use super::{unfinished_reindex_line, EngineError};
use crate::logging::Logger;
use crate::options::NodeOptions;
use crate::reindex_marker::{read_state, write_state, ReindexState};

pub(super) fn wipe_error(path: &Path) -> impl FnOnce(std::io::Error) -> EngineError + '_ {
    move |source| EngineError::Wipe { path: path.to_path_buf(), source }
}

/// Removes a file or directory. A directory is first renamed to
/// `<name>.wiping` (atomic), so a crash never leaves a half-deleted
/// database under its real name; leftovers go at the next start.
fn remove(path: &Path) -> Result<(), EngineError> {
    if path.is_dir() {
        let mut doomed = path.as_os_str().to_owned();
        doomed.push(".wiping");
        let doomed = std::path::PathBuf::from(doomed);
        std::fs::rename(path, &doomed).map_err(wipe_error(path))?;
        return std::fs::remove_dir_all(&doomed).map_err(wipe_error(&doomed));
    }
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(wipe_error(path)(error)),
        _ => Ok(()),
    }
}

/// Removes `*.wiping` directories a crash left behind.
pub(super) fn remove_leftovers(options: &NodeOptions) -> Result<(), EngineError> {
    for directory in [&options.chain_directory, &options.blocks_directory] {
        let Ok(entries) = std::fs::read_dir(directory) else { continue };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().ends_with(".wiping") {
                let path = entry.path();
                std::fs::remove_dir_all(&path).map_err(wipe_error(&path))?;
            }
        }
    }
    Ok(())
}

/// Deletes what `-reindex` rebuilds: the block index, the coins and the
/// undo files (Core overwrites them from the start; block files are kept).
fn wipe_for_reindex(options: &NodeOptions, logger: &Logger) -> Result<(), EngineError> {
    let index = options.blocks_directory.join(INDEX_DIRECTORY);
    logger.log(&format!("Wiping LevelDB in {}", index.display()));
    remove(&index)?;
    wipe_chainstate(options, logger)?;
    let Ok(entries) = std::fs::read_dir(&options.blocks_directory) else { return Ok(()) };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("rev") && name.ends_with(".dat") {
            remove(&entry.path())?;
        }
    }
    Ok(())
}

/// Deletes the coins, and an AssumeUTXO snapshot chainstate with them, as
/// Core's `LoadChainstate` deletes it when the chainstate is wiped: a
/// rebuilt chainstate validates from genesis.
fn wipe_chainstate(options: &NodeOptions, logger: &Logger) -> Result<(), EngineError> {
    let chainstate = options.chain_directory.join("chainstate");
    let snapshot = ibex_chainstate::snapshot_chainstate_directory(&chainstate);
    if snapshot.exists() {
        logger.log("[snapshot] deleting snapshot chainstate due to reindexing");
        remove(&snapshot)?;
    }
    logger.log(&format!("Wiping LevelDB in {}", chainstate.display()));
    remove(&chainstate)
}

/// Wipes what `-reindex` (or an unfinished one) and `-reindex-chainstate`
/// rebuild, keeping the reindex marker up to date; the reindex state the
/// chainstate opens with.
pub(super) fn prepare_directories(
    options: &NodeOptions,
    logger: &Logger,
) -> Result<ReindexState, EngineError> {
    let blocks = &options.blocks_directory;
    let marker = |state| write_state(blocks, state).map_err(wipe_error(blocks));
    let reindex_state = read_state(blocks);
    if let Some(line) = unfinished_reindex_line(reindex_state, options.reindex) {
        logger.log(line);
    }
    if options.reindex || reindex_state == ReindexState::Wiping {
        marker(ReindexState::Wiping)?;
        wipe_for_reindex(options, logger)?;
        marker(ReindexState::Importing)?;
        return Ok(ReindexState::Importing);
    }
    if options.reindex_chainstate {
        wipe_chainstate(options, logger)?;
    }
    Ok(reindex_state)
}
