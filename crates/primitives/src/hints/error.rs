//! Why a hints file was refused.

use thiserror::Error;

use crate::error::DecodeError;

/// A hints file that cannot be used, with where in it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HintsError {
    /// The file does not start with the magic `UTXO`.
    #[error("not a hints file: the first four bytes are {found:02x?}, not \"UTXO\"")]
    BadMagic {
        /// The bytes found.
        found: [u8; 4],
    },
    /// A version this node does not read.
    #[error(
        "hints file version {version} is not one this node reads (0 for BIP 456, 1 for btcd's)"
    )]
    UnknownVersion {
        /// The version byte.
        version: u8,
    },
    /// The header names a height other than the one expected.
    #[error("hints file ends at height {found}, expected {expected}")]
    WrongHeight {
        /// The height in the file.
        found: u32,
        /// The height asked for.
        expected: u32,
    },
    /// The file is too large for this reader (over 4 GiB).
    #[error("hints file of {bytes} bytes is larger than 4 GiB")]
    TooLarge {
        /// Its size.
        bytes: u64,
    },
    /// The file cannot hold one record per height: each takes a byte at least.
    #[error("hints file ends at height {height} but has {bytes} bytes after its header")]
    TooFewBytes {
        /// The height in the header.
        height: u32,
        /// Bytes after the header.
        bytes: usize,
    },
    /// A field of the record for `height` could not be read.
    #[error("hints for block {height}: {source}")]
    Decode {
        /// The block the record is for.
        height: u32,
        /// What was wrong, with its offset in the file.
        #[source]
        source: DecodeError,
    },
    /// A record's count or largest index is beyond any block's outputs.
    #[error("hints for block {height} at byte {offset}: {count} indices up to {largest} is beyond any block")]
    BlockIndicesOutOfRange {
        /// The block the record is for.
        height: u32,
        /// Where the record starts.
        offset: usize,
        /// The count (or payload bytes) it declares.
        count: u64,
        /// The largest index it declares.
        largest: u64,
    },
    /// A record no encoder writes: indices not increasing, a wrong largest
    /// index, bits set in padding, a missing or extra element, a value
    /// crossing the end of its record.
    #[error("hints for block {height} at byte {offset} are not a canonical record")]
    MalformedRecord {
        /// The block the record is for.
        height: u32,
        /// Where the record starts.
        offset: usize,
    },
    /// Bytes after the last record.
    #[error("{count} bytes after the record for the last block, at byte {offset}")]
    TrailingBytes {
        /// Where they start.
        offset: usize,
        /// How many.
        count: usize,
    },
    /// Hints asked for a block the file does not cover.
    #[error("no hints for block {height}: the file covers blocks 1 to {terminal_height}")]
    HeightNotCovered {
        /// The block asked for.
        height: u32,
        /// The file's last block.
        terminal_height: u32,
    },
    /// A hint names an output the block does not have.
    #[error("hints for block {height} name output {index}, but the block has {spendable_count} spendable outputs")]
    IndexBeyondBlock {
        /// The block.
        height: u32,
        /// The index named.
        index: u32,
        /// The block's spendable outputs.
        spendable_count: u32,
    },
}

impl HintsError {
    /// A field of the record for `height` could not be read.
    pub(crate) fn at(height: u32, source: DecodeError) -> Self {
        HintsError::Decode { height, source }
    }
}
