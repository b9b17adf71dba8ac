//! Decoding errors: every way untrusted bytes can fail to be a block or a transaction.

use thiserror::Error;

/// Why a byte string is not a valid encoding. `offset` is the byte position in the
/// input being decoded at which the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before a field was complete.
    #[error("truncated at byte {offset}: needed {needed} more bytes, {remaining} left")]
    Truncated {
        /// Where the field starts.
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A compact size used a longer form than its value needs (Core: "non-canonical ReadCompactSize()").
    #[error("non-canonical compact size {value} at byte {offset}")]
    NonCanonicalCompactSize {
        /// Where the compact size starts.
        offset: usize,
        /// The value it encodes.
        value: u64,
    },
    /// A compact size above Core's MAX_SIZE of 0x02000000 (Core: "ReadCompactSize(): size too large").
    #[error("compact size {value} at byte {offset} exceeds the limit of 33554432")]
    CompactSizeTooLarge {
        /// Where the compact size starts.
        offset: usize,
        /// The value it encodes.
        value: u64,
    },
    /// A count of items that the remaining bytes cannot possibly hold.
    #[error("{what} count {count} at byte {offset} needs at least {minimum_bytes} bytes, {remaining} left")]
    CountTooLarge {
        /// What is being counted.
        what: Field,
        /// Where the count starts.
        offset: usize,
        /// The count read.
        count: u64,
        /// Bytes that many items need at the very least.
        minimum_bytes: u64,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A segwit flag was set but every input's witness is empty (Core: "Superfluous witness record").
    #[error("segwit flag set at byte {offset} but all witnesses are empty")]
    SuperfluousWitnessRecord {
        /// Where the flag byte is.
        offset: usize,
    },
    /// The segwit flag byte had bits other than 1 set (Core: "Unknown transaction optional data").
    #[error("unknown transaction optional data flags {flags:#04x} at byte {offset}")]
    UnknownOptionalData {
        /// Where the flag byte is.
        offset: usize,
        /// The flag bits left over.
        flags: u8,
    },
    /// Bytes were left after a complete object.
    #[error("{count} trailing bytes after byte {offset}")]
    TrailingBytes {
        /// Where the trailing bytes start.
        offset: usize,
        /// How many bytes are left.
        count: usize,
    },
    /// A Core VARINT does not fit in 64 bits.
    #[error("VARINT at byte {offset} overflows 64 bits")]
    VarIntOverflow {
        /// Where the VARINT starts.
        offset: usize,
    },
}

/// A counted field of a transaction or block, named in [`DecodeError::CountTooLarge`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// Transactions in a block.
    Transactions,
    /// Inputs of a transaction.
    Inputs,
    /// Outputs of a transaction.
    Outputs,
    /// Items of one input's witness stack.
    WitnessItems,
    /// Bytes of a script or witness item.
    Bytes,
}

impl std::fmt::Display for Field {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Field::Transactions => "transaction",
            Field::Inputs => "input",
            Field::Outputs => "output",
            Field::WitnessItems => "witness item",
            Field::Bytes => "byte",
        })
    }
}

/// Why a block failed to decode: the transaction it failed in, if any, and the cause.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BlockDecodeError {
    /// The 80-byte header or the transaction count is bad.
    #[error("block header or transaction count: {0}")]
    Header(DecodeError),
    /// Transaction `index` of the block is bad.
    #[error("transaction {index}: {source}")]
    Transaction {
        /// Position of the transaction in the block.
        index: usize,
        /// What is wrong with it.
        source: DecodeError,
    },
    /// Bytes were left after the last transaction.
    #[error("{count} trailing bytes after the block at byte {offset}")]
    TrailingBytes {
        /// Where the trailing bytes start.
        offset: usize,
        /// How many bytes are left.
        count: usize,
    },
}
