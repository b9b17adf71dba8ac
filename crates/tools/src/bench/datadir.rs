//! The runs' data directories: made fresh for each run from the chain's
//! files (linked, the last one copied: see the [module docs](super)) or
//! from a prepared directory, their logs saved, then removed.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use ibex_primitives::Network;

use super::chain_input::{ChainInput, KEY_FILE_NAME};
use super::{io_error, BenchError};
use crate::plot::command::READ_BUFFER_BYTES;
use crate::plot::parse::{parse_line, read_bounded_line, LineEvent};

/// The deepest directory tree copied from a prepared data directory (a
/// block index database is one level deep).
pub const COPY_DEPTH_MAX: usize = 8;
/// Each node's lock file, never copied.
const LOCK_FILE_NAME: &str = ".lock";

/// `<datadir>/<chain>`: where the node keeps this network's files.
pub fn network_directory(datadir: &Path, network: Network) -> PathBuf {
    datadir.join(network.data_dir_name())
}

/// `<datadir>/<chain>/blocks`.
pub fn blocks_directory(datadir: &Path, network: Network) -> PathBuf {
    network_directory(datadir, network).join("blocks")
}

/// `<datadir>/<chain>/chainstate`: the coins database, Core's and Ibex's.
pub fn chainstate_directory(datadir: &Path, network: Network) -> PathBuf {
    network_directory(datadir, network).join("chainstate")
}

/// Bytes of the regular files under `directory`, its subdirectories
/// included; links are not followed (a node's database holds none), and
/// a directory that does not exist holds nothing.
pub fn directory_bytes(directory: &Path) -> Result<u64, BenchError> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(io_error(directory)(error)),
    };
    let mut bytes = 0u64;
    for entry in entries {
        let entry = entry.map_err(io_error(directory))?;
        let path = entry.path();
        let metadata = std::fs::symlink_metadata(&path).map_err(io_error(&path))?;
        if metadata.is_dir() {
            bytes = bytes.saturating_add(directory_bytes(&path)?);
        } else if metadata.is_file() {
            bytes = bytes.saturating_add(metadata.len());
        }
    }
    Ok(bytes)
}

/// `<datadir>/<chain>/debug.log`.
pub fn debug_log(datadir: &Path, network: Network) -> PathBuf {
    network_directory(datadir, network).join("debug.log")
}

/// Copies `from` to `to`, writable by its owner whatever `from`'s mode
/// (nodes open their last block file for writing).
fn copy_writable(from: &Path, to: &Path) -> Result<(), BenchError> {
    std::fs::copy(from, to).map_err(io_error(from))?;
    let permissions = std::os::unix::fs::PermissionsExt::from_mode(0o644);
    std::fs::set_permissions(to, permissions).map_err(io_error(to))
}

fn symlink(target: &Path, link: &Path) -> Result<(), BenchError> {
    std::os::unix::fs::symlink(target, link).map_err(io_error(link))
}

/// Makes `datadir` (which must not exist) a fresh data directory whose
/// blocks directory holds the chain: `xor.dat` copied first, links to the
/// block files, the last block file copied.
pub fn prepare_from_chain(datadir: &Path, chain: &ChainInput) -> Result<(), BenchError> {
    let blocks = blocks_directory(datadir, chain.network);
    std::fs::create_dir_all(&blocks).map_err(io_error(&blocks))?;
    if let Some(key_file) = &chain.key_file {
        copy_writable(key_file, &blocks.join(KEY_FILE_NAME))?;
    }
    let source = std::fs::canonicalize(&chain.directory).map_err(io_error(&chain.directory))?;
    let Some((last, linked)) = chain.block_files.split_last() else {
        return Ok(());
    };
    for path in linked {
        let Some(name) = path.file_name() else { continue };
        symlink(&source.join(name), &blocks.join(name))?;
    }
    if let Some(name) = last.file_name() {
        copy_writable(last, &blocks.join(name))?;
    }
    Ok(())
}

/// Copies directory `from` into new directory `to`, links as links.
fn copy_tree(from: &Path, to: &Path, depth: usize) -> Result<(), BenchError> {
    if depth > COPY_DEPTH_MAX {
        let reason = format!("deeper than {COPY_DEPTH_MAX} levels");
        return Err(BenchError::Chain { directory: from.to_path_buf(), reason });
    }
    std::fs::create_dir_all(to).map_err(io_error(to))?;
    for entry in std::fs::read_dir(from).map_err(io_error(from))? {
        let entry = entry.map_err(io_error(from))?;
        let (path, name) = (entry.path(), entry.file_name());
        let kind = entry.file_type().map_err(io_error(&path))?;
        if name == LOCK_FILE_NAME {
            continue;
        }
        if kind.is_symlink() {
            symlink(&std::fs::read_link(&path).map_err(io_error(&path))?, &to.join(&name))?;
        } else if kind.is_dir() {
            copy_tree(&path, &to.join(&name), depth + 1)?;
        } else {
            copy_writable(&path, &to.join(&name))?;
        }
    }
    Ok(())
}

/// Makes `datadir` (which must not exist) a copy of the blocks directory
/// of `prepared` (a data directory a `-reindex` built): `xor.dat` first,
/// then the block index and undo files copied, the links to the chain's
/// block files as links, the copied last block file copied. The coins
/// database is not copied: `-reindex-chainstate` rebuilds it.
pub fn prepare_from_prepared(
    datadir: &Path,
    prepared: &Path,
    network: Network,
) -> Result<(), BenchError> {
    let (from, to) = (blocks_directory(prepared, network), blocks_directory(datadir, network));
    std::fs::create_dir_all(&to).map_err(io_error(&to))?;
    let key_file = from.join(KEY_FILE_NAME);
    if key_file.is_file() {
        copy_writable(&key_file, &to.join(KEY_FILE_NAME))?;
    }
    copy_tree(&from, &to, 0)
}

/// Copies the run's `debug.log` to `destination` (an empty file if the
/// node wrote none).
pub fn save_log(datadir: &Path, network: Network, destination: &Path) -> Result<(), BenchError> {
    let log = debug_log(datadir, network);
    match std::fs::copy(&log, destination) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::write(destination, b"").map_err(io_error(destination))
        }
        Err(error) => Err(io_error(&log)(error)),
    }
}

/// The height of the last `UpdateTip` line of the log at `path`.
pub fn final_height(path: &Path) -> Result<Option<u32>, BenchError> {
    let file = File::open(path).map_err(io_error(path))?;
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    let mut line = Vec::with_capacity(1024);
    let mut height = None;
    while let Some(truncated) = read_bounded_line(&mut reader, &mut line).map_err(io_error(path))? {
        let text = String::from_utf8_lossy(&line);
        if let (false, Some((_, LineEvent::Tip(tip)))) = (truncated, parse_line(&text)) {
            height = Some(tip.height);
        }
    }
    Ok(height)
}

/// Removes a run's data directory (links are removed, not followed).
pub fn remove(datadir: &Path) -> Result<(), BenchError> {
    match std::fs::remove_dir_all(datadir) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(io_error(datadir)(error)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::Params;

    fn chain_with_two_files(directory: &Path) -> ChainInput {
        let mut record = Params::for_network(Network::Regtest).message_start.to_vec();
        record.extend_from_slice(&[0; 4]);
        for name in ["blk00000.dat", "blk00001.dat"] {
            std::fs::write(directory.join(name), &record).expect("write");
        }
        std::fs::write(directory.join(KEY_FILE_NAME), [0u8; 8]).expect("write");
        ChainInput::open(directory, None).expect("chain")
    }

    #[test]
    fn links_all_but_the_last_block_file_and_copies_the_rest() {
        let root = tempfile::tempdir().expect("temporary directory");
        let chain_directory = root.path().join("chain");
        std::fs::create_dir(&chain_directory).expect("mkdir");
        let chain = chain_with_two_files(&chain_directory);
        let run = root.path().join("run");
        prepare_from_chain(&run, &chain).expect("prepared");
        let blocks = blocks_directory(&run, Network::Regtest);
        let metadata = |name: &str| std::fs::symlink_metadata(blocks.join(name)).expect("exists");
        assert!(metadata("blk00000.dat").file_type().is_symlink());
        assert!(metadata("blk00001.dat").file_type().is_file());
        assert!(metadata(KEY_FILE_NAME).file_type().is_file());
        // What a node would append lands in the copy only.
        std::fs::write(blocks.join("blk00001.dat"), b"appended").expect("write");
        chain.check_unchanged("a-1").expect("the chain's files are untouched");

        std::fs::create_dir_all(blocks.join("index")).expect("mkdir");
        std::fs::write(blocks.join("index/000001.log"), b"index").expect("write");
        std::fs::write(blocks.join(LOCK_FILE_NAME), b"").expect("write");
        let copy = root.path().join("copy");
        prepare_from_prepared(&copy, &run, Network::Regtest).expect("copied");
        let copied = blocks_directory(&copy, Network::Regtest);
        assert_eq!(std::fs::read(copied.join("index/000001.log")).expect("read"), b"index");
        assert!(std::fs::symlink_metadata(copied.join("blk00000.dat"))
            .expect("exists")
            .file_type()
            .is_symlink());
        assert!(!copied.join(LOCK_FILE_NAME).exists());
        remove(&copy).expect("removed");
        remove(&run).expect("removed");
        assert!(!run.exists() && chain_directory.join("blk00000.dat").exists());
    }

    #[test]
    fn counts_the_files_under_a_directory_without_following_links() {
        let root = tempfile::tempdir().expect("temporary directory");
        let chainstate = chainstate_directory(root.path(), Network::Regtest);
        assert_eq!(directory_bytes(&chainstate).expect("absent"), 0);
        std::fs::create_dir_all(chainstate.join("ibex-flush-tables")).expect("mkdir");
        std::fs::write(chainstate.join("000004.sst"), [7u8; 1000]).expect("write");
        std::fs::write(chainstate.join("ibex-flush-tables/1.sst"), [7u8; 24]).expect("write");
        let outside = root.path().join("outside");
        std::fs::write(&outside, [7u8; 5000]).expect("write");
        std::os::unix::fs::symlink(&outside, chainstate.join("link")).expect("link");
        assert_eq!(directory_bytes(&chainstate).expect("counted"), 1024);
    }

    #[test]
    fn reads_the_final_height_of_a_log() {
        let root = tempfile::tempdir().expect("temporary directory");
        let log = root.path().join("debug.log");
        let tip = |height: u32| {
            format!("2026-11-24T00:00:0{height}Z UpdateTip: new best=00 height={height} version=0x20000000 log2_work=1.0 tx=1 date='x' progress=1.000000 cache=0.1MiB(1txo)\n")
        };
        std::fs::write(&log, format!("{}{}2026-11-24T00:00:09Z Shutdown: done\n", tip(1), tip(2)))
            .expect("write");
        assert_eq!(final_height(&log).expect("read"), Some(2));
        std::fs::write(&log, "2026-11-24T00:00:00Z nothing\n").expect("write");
        assert_eq!(final_height(&log).expect("read"), None);
    }
}
