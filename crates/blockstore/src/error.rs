//! Errors of the block store.

use std::path::PathBuf;
use thiserror::Error;

/// What went wrong reading or writing block files.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BlockStoreError {
    /// An operating-system error on a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// `xor.dat` is not exactly 8 bytes.
    #[error("{path}: obfuscation key must be 8 bytes, found {length}")]
    BadObfuscationKey {
        /// The key file.
        path: PathBuf,
        /// Its length.
        length: u64,
    },
    /// A record does not fit in a block file.
    #[error(
        "block of {length} bytes does not fit in a block file of at most {file_bytes_max} bytes"
    )]
    RecordTooLarge {
        /// The block's length.
        length: usize,
        /// The file size limit.
        file_bytes_max: u64,
    },
    /// A block file is larger than any Core writes.
    #[error("{path}: {length} bytes is over the block file limit of {file_bytes_max}")]
    FileTooLarge {
        /// The file.
        path: PathBuf,
        /// Its length.
        length: u64,
        /// The limit.
        file_bytes_max: u64,
    },
}
