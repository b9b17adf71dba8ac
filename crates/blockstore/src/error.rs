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
    /// A position points inside a file's first record header, so no header precedes it.
    #[error("file {file_number}: position {data_offset} leaves no room for a record header")]
    PositionBeforeHeader {
        /// The file number.
        file_number: u32,
        /// The data offset asked for.
        data_offset: u64,
    },
    /// The 4 bytes before a block's length are not the network magic.
    #[error("blk file {file_number}: magic {found:02x?} before offset {data_offset}, expected {expected:02x?}")]
    BadMagic {
        /// The block file number.
        file_number: u32,
        /// The block's data offset.
        data_offset: u64,
        /// The bytes found.
        found: [u8; 4],
        /// The network magic.
        expected: [u8; 4],
    },
    /// A record's length field claims more than the limit for its kind.
    #[error("{path}: record at {data_offset} claims {length_bytes} bytes, over the limit of {length_bytes_max}")]
    RecordLengthOverLimit {
        /// The file.
        path: PathBuf,
        /// The record's data offset.
        data_offset: u64,
        /// The length the record claims.
        length_bytes: u64,
        /// The limit for this kind of record.
        length_bytes_max: u64,
    },
    /// A record runs past the end of its file.
    #[error("{path}: record at {data_offset} ends at byte {end_offset}, past the file's {file_bytes} bytes")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// The record's data offset.
        data_offset: u64,
        /// Where the record (with its checksum, for undo data) would end.
        end_offset: u64,
        /// The file's length.
        file_bytes: u64,
    },
    /// An undo record's checksum does not match the previous block hash and payload.
    #[error("rev file {file_number}: undo data at {data_offset} fails its checksum")]
    BadUndoChecksum {
        /// The undo file number.
        file_number: u32,
        /// The undo payload's offset.
        data_offset: u64,
    },
    /// A truncation would lengthen a file rather than shorten it.
    #[error("{path}: cannot truncate to {length_bytes} bytes, the file has {file_bytes}")]
    TruncateBeyondEnd {
        /// The file.
        path: PathBuf,
        /// The length asked for.
        length_bytes: u64,
        /// The file's length.
        file_bytes: u64,
    },
    /// Every block file number up to `u32::MAX` is taken.
    #[error("no block file number left")]
    FileNumbersExhausted,
}
