//! A durable record of an unfinished `-reindex`, so a crash at any point
//! of it is finished by the next start (Core keeps a reindex flag in its
//! block index database for the same reason).
//!
//! The file `<blocks>/reindex.state` holds `wiping` while the index, the
//! coins and the undo files are being deleted, and `importing` while the
//! block files are being read again; it is removed when the import is
//! done and flushed. It is written to a temporary file and renamed, so it
//! is always one of the two states or absent.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Where a reindex stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReindexState {
    /// No reindex under way.
    None,
    /// Deleting what a reindex rebuilds.
    Wiping,
    /// Reading the block files again.
    Importing,
}

const MARKER_FILE: &str = "reindex.state";

fn marker_path(blocks_directory: &Path) -> PathBuf {
    blocks_directory.join(MARKER_FILE)
}

/// The state recorded in `blocks_directory` (unreadable text counts as
/// `Wiping`: starting over is always safe).
pub fn read_state(blocks_directory: &Path) -> ReindexState {
    match std::fs::read_to_string(marker_path(blocks_directory)) {
        Err(_) => ReindexState::None,
        Ok(text) if text.trim() == "importing" => ReindexState::Importing,
        Ok(_) => ReindexState::Wiping,
    }
}

/// Records `state` durably (file synced, then renamed into place, then the
/// directory synced).
pub fn write_state(blocks_directory: &Path, state: ReindexState) -> std::io::Result<()> {
    let path = marker_path(blocks_directory);
    let text = match state {
        ReindexState::None => {
            return match std::fs::remove_file(&path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
                _ => sync_directory(blocks_directory),
            }
        }
        ReindexState::Wiping => "wiping\n",
        ReindexState::Importing => "importing\n",
    };
    std::fs::create_dir_all(blocks_directory)?;
    let temporary = blocks_directory.join(format!("{MARKER_FILE}.new"));
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, &path)?;
    sync_directory(blocks_directory)
}

fn sync_directory(directory: &Path) -> std::io::Result<()> {
    std::fs::File::open(directory)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_and_absent_is_none() {
        let directory = tempfile::tempdir().unwrap();
        assert_eq!(read_state(directory.path()), ReindexState::None);
        write_state(directory.path(), ReindexState::Wiping).unwrap();
        assert_eq!(read_state(directory.path()), ReindexState::Wiping);
        write_state(directory.path(), ReindexState::Importing).unwrap();
        assert_eq!(read_state(directory.path()), ReindexState::Importing);
        write_state(directory.path(), ReindexState::None).unwrap();
        assert_eq!(read_state(directory.path()), ReindexState::None);
        std::fs::write(directory.path().join(MARKER_FILE), "garbage").unwrap();
        assert_eq!(read_state(directory.path()), ReindexState::Wiping);
    }
}
