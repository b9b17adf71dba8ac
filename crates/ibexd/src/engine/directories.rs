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

/// Deletes what `-reindex` rebuilds: the block index, the undo files
/// (Core overwrites them from the start) and the coins. Block files are
/// kept, except that a pruning node keeps only those the reindex reads
/// ([`unusable_block_files`]; the rest come from peers).
fn wipe_for_reindex(options: &NodeOptions, logger: &Logger) -> Result<(), EngineError> {
    let index = options.blocks_directory.join(INDEX_DIRECTORY);
    logger.log(&format!("Wiping LevelDB in {}", index.display()));
    remove(&index)?;
    let pruning = options.prune.is_enabled();
    if pruning {
        logger.log(REINDEX_PRUNE_CLEANUP_LINE);
    }
    let names = regular_file_names(&options.blocks_directory);
    let doomed: Vec<&str> = if pruning {
        unusable_block_files(names.iter().map(String::as_str))
    } else {
        names.iter().map(String::as_str).filter(|name| is_undo_file(name)).collect()
    };
    for name in doomed {
        remove(&options.blocks_directory.join(name))?;
    }
    wipe_chainstate(options, logger)
}

/// Core's line when a pruning node's `-reindex` removes block files
/// (`CleanupBlockRevFiles`).
pub(super) const REINDEX_PRUNE_CLEANUP_LINE: &str =
    "Removing unusable blk?????.dat and rev?????.dat files for -reindex with -prune";

/// The names of the regular files in `directory` (following symbolic
/// links, as Core's `is_regular_file`); none when it cannot be listed.
fn regular_file_names(directory: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(directory) else { return Vec::new() };
    entries
        .flatten()
        .filter(|entry| entry.path().is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect()
}

/// Whether `name` is an undo file's (`rev?????.dat`).
fn is_undo_file(name: &str) -> bool {
    name.starts_with("rev") && name.ends_with(".dat")
}

/// The number a `blk?????.dat` name carries, read as Core reads it (the
/// leading digits of its five characters; none reads as 0), or `None`
/// when `name` is not twelve bytes of `blk` and `.dat`.
fn block_file_number(name: &str) -> Option<(&str, u32)> {
    if name.len() != 12 || !name.ends_with(".dat") {
        return None;
    }
    let key = name.strip_prefix("blk")?.get(..5)?;
    let digits = key.bytes().take_while(u8::is_ascii_digit).count();
    Some((key, key[..digits].parse().unwrap_or(0)))
}

/// Core's `CleanupBlockRevFiles` as a choice over the file names of a
/// blocks directory: for a pruning node's `-reindex`, which reads block
/// files from `blk00000.dat` on until one is missing, every undo file
/// (`rev` and `.dat`, twelve bytes) goes, and every block file but those
/// numbered from 0 without a gap; so when `blk00000.dat` was pruned, all
/// of them. The blocks gone come from peers. Other files stay.
pub(super) fn unusable_block_files<'a>(names: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut doomed = Vec::new();
    let mut block_files = Vec::new();
    for name in names {
        if name.len() == 12 && is_undo_file(name) {
            doomed.push(name);
        } else if let Some((key, number)) = block_file_number(name) {
            block_files.push((key, number, name));
        }
    }
    // In the order of their five characters, as Core's map of them.
    block_files.sort_unstable_by_key(|(key, _, _)| *key);
    let mut next_number = 0u32;
    for (_, number, name) in block_files {
        if number == next_number {
            next_number += 1;
        } else {
            doomed.push(name);
        }
    }
    doomed
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

#[cfg(test)]
mod tests {
    use super::*;

    fn doomed(names: &[&'static str]) -> Vec<&'static str> {
        let mut doomed = unusable_block_files(names.iter().copied());
        doomed.sort_unstable();
        doomed
    }

    #[test]
    fn a_pruned_reindex_keeps_the_block_files_numbered_from_zero_without_a_gap() {
        let names = [
            "blk00000.dat",
            "blk00001.dat",
            "blk00003.dat",
            "blk00004.dat",
            "rev00000.dat",
            "rev00003.dat",
            "xor.dat",
            "reindex.state",
            "blk00002.tmp",
        ];
        assert_eq!(
            doomed(&names),
            ["blk00003.dat", "blk00004.dat", "rev00000.dat", "rev00003.dat"]
        );
    }

    #[test]
    fn without_the_first_block_file_every_block_file_goes() {
        let names = ["blk00001.dat", "blk00002.dat", "rev00001.dat", "rev00002.dat"];
        assert_eq!(doomed(&names), names);
        assert!(doomed(&["blk00000.dat", "blk00001.dat", "xor.dat"]).is_empty());
        assert!(doomed(&[]).is_empty());
    }

    #[test]
    fn only_twelve_byte_names_are_block_and_undo_files() {
        // Core looks only at names of twelve bytes ending in `.dat`.
        assert!(doomed(&["blk000000.dat", "rev0000.dat", "blk00000.dat"]).is_empty());
        assert_eq!(block_file_number("blk00042.dat"), Some(("00042", 42)));
        assert_eq!(block_file_number("blk0004x.dat"), Some(("0004x", 4)));
        assert_eq!(block_file_number("blkxxxxx.dat"), Some(("xxxxx", 0)));
        assert_eq!(block_file_number("rev00042.dat"), None);
        assert_eq!(block_file_number("blk00042.datx"), None);
    }
}
