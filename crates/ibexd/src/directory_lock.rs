//! One process per data directory: an exclusive lock on `<directory>/.lock`,
//! taken as Bitcoin Core takes it (`util::LockDirectory` in
//! `src/util/fs_helpers.cpp`, `fsbridge::FileLock` in `src/util/fs.cpp`).
//!
//! The lock is a POSIX record lock: `fcntl(F_SETLK)` with `F_WRLCK` over the
//! whole file, which does not wait. Because it is the same kind of lock on
//! the same file name, Ibex and a Core `bitcoind` on one directory exclude
//! each other. The kernel drops the lock when the process ends, however it
//! ends (a clean exit, a panic, `kill -9`), so a `.lock` file left behind
//! never blocks a restart; the file itself is kept, as Core keeps it.
//!
//! Who takes it:
//! - `ibexd` locks the network data directory (`<datadir>/regtest`, ...)
//!   and the blocks directory, as Core's `LockDirectories` does, right after
//!   its options are read and before it opens the log or touches any file.
//! - The offline tools that open a node's databases (`ibex txoutsetinfo`)
//!   take the same locks for their run: they refuse to read while a node
//!   writes (its databases would be read half-written, and its wipes would
//!   pull files from under the tool), and no node can start while they read.
//!
//! POSIX record locks belong to the process, not to the file descriptor: a
//! second `F_SETLK` from the same process succeeds, and closing *any*
//! descriptor of the file drops the lock. So, like Core's `dir_locks` map,
//! this module keeps the set of lock files the process holds, refuses a
//! second lock on one of them without opening the file, and closes a lock's
//! file before forgetting it.
#![allow(unsafe_code)]

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crate::options::NodeOptions;
use crate::version::CLIENT_NAME;

/// The lock file's name inside a locked directory (Core's).
pub const LOCK_FILE_NAME: &str = ".lock";

/// The lock files this process holds, by canonical path (see the module
/// docs for why a process-wide set is needed).
static HELD_LOCK_FILES: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn held_lock_files() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    // The set stays consistent even if a holder panicked: take it back.
    HELD_LOCK_FILES.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Why a directory could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DirectoryLockError {
    /// The directory could not be created.
    #[error("Cannot create directory {}: {source}", .directory.display())]
    CreateDirectory {
        /// The directory.
        directory: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The directory does not exist or cannot be resolved.
    #[error("Cannot lock directory {}: {source}", .directory.display())]
    Directory {
        /// The directory.
        directory: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The lock file cannot be created or opened for writing (Core's
    /// `LockResult::ErrorWrite`, with Core's message).
    #[error("Cannot write to directory '{}'; check permissions.", .directory.display())]
    CannotWrite {
        /// The directory.
        directory: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Another process holds the lock (Core's `LockResult::ErrorLock`, with
    /// Core's message and our client name).
    #[error(
        "Cannot obtain a lock on directory {}. {CLIENT_NAME} is probably already running.",
        .directory.display()
    )]
    HeldElsewhere {
        /// The directory.
        directory: PathBuf,
    },
    /// This process already holds the lock (Core refuses this too).
    #[error("Cannot obtain a lock on directory {}: this process already holds it", .directory.display())]
    HeldByThisProcess {
        /// The directory.
        directory: PathBuf,
    },
    /// `fcntl` failed for another reason than a holder (a file system
    /// without locks, say).
    #[error("Cannot obtain a lock on directory {}: {source}", .directory.display())]
    LockFailed {
        /// The directory.
        directory: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// An exclusive lock on a directory, held until this value is dropped (or
/// the process ends).
#[derive(Debug)]
pub struct DirectoryLock {
    directory: PathBuf,
    /// The canonical lock file path: the key in [`HELD_LOCK_FILES`].
    lock_file: PathBuf,
    /// `None` only while dropping, once the file is closed.
    file: Option<File>,
}

impl DirectoryLock {
    /// Locks `directory`, which must exist: creates `<directory>/.lock` if
    /// missing and takes a write lock on it without waiting.
    pub fn acquire(directory: &Path) -> Result<DirectoryLock, DirectoryLockError> {
        let canonical = directory.canonicalize().map_err(|source| {
            DirectoryLockError::Directory { directory: directory.to_owned(), source }
        })?;
        let lock_file = canonical.join(LOCK_FILE_NAME);
        // Held across the open and the lock so that two threads cannot both
        // pass the check; never across a wait, since F_SETLK does not wait.
        let mut held = held_lock_files();
        if held.contains(&lock_file) {
            return Err(DirectoryLockError::HeldByThisProcess { directory: directory.to_owned() });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_file)
            .map_err(|source| DirectoryLockError::CannotWrite {
                directory: directory.to_owned(),
                source,
            })?;
        lock_whole_file(&file).map_err(|source| match source.raw_os_error() {
            // POSIX allows either for a lock held by another process.
            Some(libc::EACCES | libc::EAGAIN) => {
                DirectoryLockError::HeldElsewhere { directory: directory.to_owned() }
            }
            _ => DirectoryLockError::LockFailed { directory: directory.to_owned(), source },
        })?;
        held.insert(lock_file.clone());
        Ok(DirectoryLock { directory: directory.to_owned(), lock_file, file: Some(file) })
    }

    /// The locked directory, as given.
    pub fn directory(&self) -> &Path {
        &self.directory
    }
}

impl Drop for DirectoryLock {
    fn drop(&mut self) {
        let mut held = held_lock_files();
        // Close first (which releases the lock): forgetting the file first
        // would let another thread of this process lock it, and this close
        // would then release that thread's lock.
        drop(self.file.take());
        held.remove(&self.lock_file);
    }
}

/// `fcntl(F_SETLK)` with a write lock from offset 0 to the end of the file,
/// however long it grows (Core's `FileLock::TryLock`).
fn lock_whole_file(file: &File) -> std::io::Result<()> {
    // SAFETY: `flock` is a plain C struct of integers; all zeros is a valid
    // value, and the fields that matter are set below.
    let mut request: libc::flock = unsafe { std::mem::zeroed() };
    request.l_type = libc::F_WRLCK as _;
    request.l_whence = libc::SEEK_SET as _;
    request.l_start = 0;
    request.l_len = 0;
    // SAFETY: the descriptor is open for as long as `file` is borrowed, and
    // `request` is a valid `flock` that F_SETLK only reads.
    let result = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &request) };
    if result == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Locks each of `directories` in order (Core's `LockDirectories`); a
/// directory given twice (the same directory by two paths included) is
/// locked once. On an error the locks already taken are released.
pub fn lock_directories(directories: &[&Path]) -> Result<Vec<DirectoryLock>, DirectoryLockError> {
    let mut locks = Vec::with_capacity(directories.len());
    for directory in directories {
        lock_unless_held(&mut locks, directory)?;
    }
    Ok(locks)
}

/// Locks `directory` into `locks` unless one of them locks it already.
fn lock_unless_held(
    locks: &mut Vec<DirectoryLock>,
    directory: &Path,
) -> Result<(), DirectoryLockError> {
    let already_locked = directory.canonicalize().is_ok_and(|canonical| {
        let lock_file = canonical.join(LOCK_FILE_NAME);
        locks.iter().any(|lock| lock.lock_file == lock_file)
    });
    if !already_locked {
        locks.push(DirectoryLock::acquire(directory)?);
    }
    Ok(())
}

/// What a node locks, as Core's `LockDirectories`: the network data
/// directory, then the blocks directory (wherever `-blocksdir` puts it).
fn node_directories(options: &NodeOptions) -> [&Path; 2] {
    [&options.chain_directory, &options.blocks_directory]
}

/// `ibexd`'s locks: creates the network data directory if missing (Core's
/// `GetDataDirNet` creates it before Core locks it) and locks it, then the
/// same for the blocks directory. Each directory is locked before anything
/// is created inside it, so a refused start leaves a held data directory as
/// it was.
pub fn lock_node_directories(
    options: &NodeOptions,
) -> Result<Vec<DirectoryLock>, DirectoryLockError> {
    let mut locks = Vec::with_capacity(2);
    for directory in node_directories(options) {
        std::fs::create_dir_all(directory).map_err(|source| {
            DirectoryLockError::CreateDirectory { directory: directory.to_owned(), source }
        })?;
        lock_unless_held(&mut locks, directory)?;
    }
    Ok(locks)
}

/// An offline tool's locks: the same as a node's, but only on the
/// directories that exist (a tool creates none; one with nothing to read
/// says so itself).
pub fn lock_existing_node_directories(
    options: &NodeOptions,
) -> Result<Vec<DirectoryLock>, DirectoryLockError> {
    let existing: Vec<&Path> =
        node_directories(options).into_iter().filter(|directory| directory.is_dir()).collect();
    lock_directories(&existing)
}

// Exclusion between processes (`ibexd` against the test process, both
// ways, and against `ibex txoutsetinfo`) is tested in `tests/ibexd_lock.rs`:
// within one process F_SETLK always succeeds, so these tests cover the rest.
#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn creates_the_lock_file_and_keeps_it() {
        let directory = tempfile::tempdir().unwrap();
        let lock = DirectoryLock::acquire(directory.path()).unwrap();
        assert_eq!(lock.directory(), directory.path());
        assert!(directory.path().join(LOCK_FILE_NAME).is_file());
        drop(lock);
        // Core keeps the file: the lock, not the file, says who runs.
        assert!(directory.path().join(LOCK_FILE_NAME).is_file());
    }

    #[test]
    fn an_unheld_lock_file_does_not_block() {
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(directory.path().join(LOCK_FILE_NAME), b"left by a crash").unwrap();
        let lock = DirectoryLock::acquire(directory.path()).unwrap();
        drop(lock);
        // Contents are left alone (Core writes none, and never truncates).
        let contents = std::fs::read(directory.path().join(LOCK_FILE_NAME)).unwrap();
        assert_eq!(contents, b"left by a crash");
    }

    #[test]
    fn a_second_lock_in_this_process_is_refused_until_the_first_is_dropped() {
        let directory = tempfile::tempdir().unwrap();
        let first = DirectoryLock::acquire(directory.path()).unwrap();
        // Another spelling of the same directory is the same lock.
        let other_spelling = directory.path().join(".");
        let error = DirectoryLock::acquire(&other_spelling).unwrap_err();
        assert!(matches!(error, DirectoryLockError::HeldByThisProcess { .. }), "{error}");
        assert!(error.to_string().contains(&other_spelling.display().to_string()));
        drop(first);
        DirectoryLock::acquire(&other_spelling).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("missing");
        let error = DirectoryLock::acquire(&missing).unwrap_err();
        assert!(matches!(error, DirectoryLockError::Directory { .. }), "{error}");
        assert!(error.to_string().contains(&missing.display().to_string()), "{error}");
        assert!(!missing.exists());
    }

    #[test]
    fn lock_directories_locks_each_once_and_releases_on_error() {
        let root = tempfile::tempdir().unwrap();
        let first = root.path().join("first");
        let second = root.path().join("second");
        std::fs::create_dir(&first).unwrap();
        std::fs::create_dir(&second).unwrap();
        let locks = lock_directories(&[&first, &second, &first.join(".")]).unwrap();
        assert_eq!(locks.len(), 2);
        drop(locks);

        let held = DirectoryLock::acquire(&second).unwrap();
        let error = lock_directories(&[&first, &second]).unwrap_err();
        assert!(matches!(error, DirectoryLockError::HeldByThisProcess { .. }), "{error}");
        // The first lock was given back when the second failed.
        drop(DirectoryLock::acquire(&first).unwrap());
        drop(held);
    }

    #[test]
    fn messages_are_cores() {
        let directory = PathBuf::from("/data/regtest");
        let held = DirectoryLockError::HeldElsewhere { directory: directory.clone() };
        assert_eq!(
            held.to_string(),
            "Cannot obtain a lock on directory /data/regtest. Ibex is probably already running."
        );
        let source = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let write = DirectoryLockError::CannotWrite { directory, source };
        assert_eq!(
            write.to_string(),
            "Cannot write to directory '/data/regtest'; check permissions."
        );
    }
}
