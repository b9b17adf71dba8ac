//! `-swiftsync=<file>`: the hints file read, checked whole (and against
//! the network's committed hash when it has one), and handed to the
//! engine before any block is connected.

use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use ibex_chainstate::{Chainstate, SwiftSyncMode, SwiftSyncPlan};
use ibex_primitives::hints::{HintsError, HintsFile};
use ibex_primitives::params::HintsCommitmentMismatch;
use ibex_primitives::Params;

use crate::logging::Logger;
use crate::options::values::AssumeValid;
use crate::options::NodeOptions;

/// Why `-swiftsync` cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SwiftSyncFileError {
    /// The file could not be read.
    #[error("cannot read the SwiftSync hints file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a hints file, or a broken one.
    #[error("the SwiftSync hints file {path} is not usable: {source}")]
    Hints {
        /// The file.
        path: PathBuf,
        /// Why.
        source: HintsError,
    },
    /// The network commits to another file.
    #[error("the SwiftSync hints file {path} is not this network's: {source}")]
    Commitment {
        /// The file.
        path: PathBuf,
        /// The hashes.
        source: HintsCommitmentMismatch,
    },
    /// A gzip-compressed file does not decompress, or holds more than a
    /// hints file may (4 GiB).
    #[error("the SwiftSync hints file {path} does not decompress: {source}")]
    Gzip {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Pruning deletes blocks the sync must read.
    #[error("-swiftsync cannot be used with -prune: the sync reads every block up to the hints' height before pruning could start")]
    Pruned,
}

/// Reads and checks `path` for `params`' network.
pub fn read_plan(path: &Path, params: &Params) -> Result<SwiftSyncPlan, SwiftSyncFileError> {
    let bytes = std::fs::read(path)
        .map_err(|source| SwiftSyncFileError::Read { path: path.to_path_buf(), source })?;
    let expected_height = params.swiftsync_hints.map(|entry| entry.terminal_height);
    if let Some(entry) = params.swiftsync_hints {
        entry.check(&bytes).map_err(|source| SwiftSyncFileError::Commitment {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let bytes = decompressed(bytes)
        .map_err(|source| SwiftSyncFileError::Gzip { path: path.to_path_buf(), source })?;
    let hints = HintsFile::parse(bytes, expected_height)
        .map_err(|source| SwiftSyncFileError::Hints { path: path.to_path_buf(), source })?;
    Ok(SwiftSyncPlan::new(hints))
}

/// gzip's magic bytes.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The most bytes a hints file may take once decompressed (the reader's
/// own limit).
const HINTS_BYTES_MAX: u64 = u32::MAX as u64;

/// `bytes` decompressed when they are gzip (btcd's shipped files are;
/// members after the first are read too, as `gzip -d` does), else as they
/// are. The network's commitment covers the file as distributed, so it is
/// checked before this.
fn decompressed(bytes: Vec<u8>) -> Result<Vec<u8>, std::io::Error> {
    if !bytes.starts_with(&GZIP_MAGIC) {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    // One byte past the limit tells a file that is too large.
    MultiGzDecoder::new(bytes.as_slice()).take(HINTS_BYTES_MAX + 1).read_to_end(&mut out)?;
    if out.len() as u64 > HINTS_BYTES_MAX {
        return Err(std::io::Error::other("more than 4 GiB decompressed"));
    }
    Ok(out)
}

/// The bytes of a hints file to write at `path`: gzip-compressed when
/// its name ends in `.gz` (as btcd ships its files, and as `-swiftsync`
/// reads them), else `bytes` as they are. A network's commitment and the
/// writers' answers (`sha256`, `bytes`) are over these bytes, the file as
/// shipped.
pub fn shipped_hints_bytes(path: &Path, bytes: Vec<u8>) -> Result<Vec<u8>, std::io::Error> {
    use std::io::Write;
    if path.extension().is_none_or(|extension| extension != "gz") {
        return Ok(bytes);
    }
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 2),
        flate2::Compression::best(),
    );
    encoder.write_all(&bytes)?;
    encoder.finish()
}

/// Hands `-swiftsync`'s plan to `chainstate`, when the option is given.
pub fn set_plan(
    chainstate: &mut Chainstate,
    options: &NodeOptions,
    logger: &Logger,
) -> Result<(), SwiftSyncFileError> {
    let Some(path) = &options.swiftsync_file else { return Ok(()) };
    if options.prune.is_enabled() {
        return Err(SwiftSyncFileError::Pruned);
    }
    let plan = read_plan(path, &options.params)?;
    logger.log(&format!(
        "[swiftsync] hints file {}: terminal height {}, {} outputs unspent there ({} coding)",
        path.display(),
        plan.terminal_height(),
        plan.hints().unspent_count(),
        match plan.hints().version() {
            ibex_primitives::hints::HintsVersion::EliasFano => "BIP 456",
            ibex_primitives::hints::HintsVersion::GapList => "btcd",
        }
    ));
    // `-assumevalid=0`: every script is checked, with the coins peers
    // serve (BIP 455), in the fully validating mode.
    let plan = if options.assume_valid == AssumeValid::Disabled {
        logger.log("[swiftsync] fully validating: spent coins are fetched from peers (BIP 455)");
        plan.with_mode(SwiftSyncMode::FullyValidating)
    } else {
        plan
    };
    chainstate.set_swiftsync(plan);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hash::{sha256, Hash256};
    use ibex_primitives::hints::{HintsVersion, HintsWriter};
    use ibex_primitives::params::SwiftSyncHintsEntry;

    fn file_bytes(terminal_height: u32) -> Vec<u8> {
        let mut writer = HintsWriter::new(HintsVersion::EliasFano, terminal_height);
        for height in 0..terminal_height {
            writer.push_block(&[height % 3]);
        }
        writer.finish().unwrap()
    }

    #[test]
    fn a_file_is_read_whole_and_checked_against_the_network() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("hints.dat");
        let bytes = file_bytes(5);
        std::fs::write(&path, &bytes).unwrap();
        let mut params = Params::regtest();
        assert_eq!(read_plan(&path, &params).unwrap().terminal_height(), 5);

        let missing = directory.path().join("missing.dat");
        assert!(matches!(read_plan(&missing, &params), Err(SwiftSyncFileError::Read { .. })));
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(matches!(read_plan(&path, &params), Err(SwiftSyncFileError::Hints { .. })));

        std::fs::write(&path, &bytes).unwrap();
        let committed = Hash256(sha256(&bytes));
        params.swiftsync_hints =
            Some(SwiftSyncHintsEntry { terminal_height: 5, file_sha256: committed });
        assert_eq!(read_plan(&path, &params).unwrap().terminal_height(), 5);
        let other = file_bytes(6);
        std::fs::write(&path, &other).unwrap();
        let error = read_plan(&path, &params).unwrap_err();
        assert!(matches!(error, SwiftSyncFileError::Commitment { .. }), "{error}");
    }

    #[test]
    fn a_gzip_file_is_read_decompressed_and_committed_as_shipped() {
        use std::io::Write;
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("hints.dat.gz");
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(&file_bytes(7)).unwrap();
        let compressed = encoder.finish().unwrap();
        std::fs::write(&path, &compressed).unwrap();
        let mut params = Params::regtest();
        let plan = read_plan(&path, &params).unwrap();
        assert_eq!(plan.terminal_height(), 7);
        assert_eq!(plan.hints().unspent_count(), 7);
        params.swiftsync_hints = Some(SwiftSyncHintsEntry {
            terminal_height: 7,
            file_sha256: Hash256(sha256(&compressed)),
        });
        assert_eq!(read_plan(&path, &params).unwrap().terminal_height(), 7);
        params.swiftsync_hints = None;
        // A stream cut short is an error of its own, not a broken hints file.
        std::fs::write(&path, &compressed[..compressed.len() - 9]).unwrap();
        let error = read_plan(&path, &params).unwrap_err();
        assert!(matches!(error, SwiftSyncFileError::Gzip { .. }), "{error}");
    }
}
