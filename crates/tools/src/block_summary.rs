//! `ibex block FILE`: a JSON summary of one serialised block.
//!
//! The file is read up to one byte past the largest block it can hold
//! ([`BLOCK_BYTES_MAX`], twice that and some whitespace as hex), so
//! `/dev/zero` or a huge file is refused after a few megabytes instead of
//! being read whole.

use std::io::Read;
use std::path::{Path, PathBuf};

use ibex_primitives::hex::HexError;
use ibex_primitives::{check_witness_commitment, BlockDecodeError, BlockView};
use serde_json::{json, Value};

/// Core's `MAX_BLOCK_SERIALIZED_SIZE`: no valid block is longer (each byte
/// weighs at least one weight unit).
pub const BLOCK_BYTES_MAX: usize = ibex_primitives::limits::BLOCK_WEIGHT_MAX;
/// Whitespace allowed around a block's hex text (a trailing newline, say).
const HEX_WHITESPACE_BYTES_MAX: usize = 64;
/// The longest hex text of a block: two digits a byte, and whitespace.
pub const HEX_TEXT_BYTES_MAX: usize = 2 * BLOCK_BYTES_MAX + HEX_WHITESPACE_BYTES_MAX;

/// Why `ibex block` could not summarise a file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlockFileError {
    /// The file could not be opened or read.
    #[error("{}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file holds more bytes than any block (read stopped one byte past).
    #[error(
        "{}: longer than {bytes_max} bytes, more than any block can take (MAX_BLOCK_SERIALIZED_SIZE)",
        .path.display()
    )]
    TooLong {
        /// The file.
        path: PathBuf,
        /// The most bytes a block's file may hold in this format.
        bytes_max: usize,
    },
    /// The hex text does not decode.
    #[error("{}: {source}", .path.display())]
    Hex {
        /// The file.
        path: PathBuf,
        /// Why.
        source: HexError,
    },
    /// The bytes are not a block.
    #[error("{}: invalid block: {source}", .path.display())]
    InvalidBlock {
        /// The file.
        path: PathBuf,
        /// Why.
        source: BlockDecodeError,
    },
}

/// Reads `path` (raw bytes, or hex text when `hex`) and summarises the
/// block in it ([`block_summary`]); at most one byte more than a block's
/// largest size is read.
pub fn block_file_summary(path: &Path, hex: bool) -> Result<Value, BlockFileError> {
    let bytes_max = if hex { HEX_TEXT_BYTES_MAX } else { BLOCK_BYTES_MAX };
    let read_error = |source| BlockFileError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut contents = Vec::new();
    file.take(bytes_max as u64 + 1).read_to_end(&mut contents).map_err(read_error)?;
    if contents.len() > bytes_max {
        return Err(BlockFileError::TooLong { path: path.to_owned(), bytes_max });
    }
    let bytes = if hex {
        let text = String::from_utf8_lossy(&contents);
        ibex_primitives::hex::decode(text.trim())
            .map_err(|source| BlockFileError::Hex { path: path.to_owned(), source })?
    } else {
        contents
    };
    block_summary(&bytes)
        .map_err(|source| BlockFileError::InvalidBlock { path: path.to_owned(), source })
}

/// Summarises a block the way `getblockheader` and `getblock` name things, plus
/// whether its merkle root and witness commitment check out.
///
/// - `merkle_root_valid`: the txids' merkle root equals the header's and the tree
///   has no duplicated siblings (Core rejects both, `bad-txnmrklroot` and
///   `bad-txns-duplicate`).
/// - `witness_commitment_valid`: `null` when no transaction has witness data;
///   otherwise whether Core's witness commitment check passes.
pub fn block_summary(bytes: &[u8]) -> Result<Value, BlockDecodeError> {
    let block = BlockView::parse(bytes)?;
    let header = block.header();
    let merkle = block.compute_merkle_root();
    let witness_commitment_valid = if block.has_witness() {
        Value::Bool(check_witness_commitment(&block).is_ok())
    } else {
        Value::Null
    };
    Ok(json!({
        "hash": block.block_hash().to_hex(),
        "version": header.version,
        "previousblockhash": header.previous_block_hash.to_hex(),
        "merkleroot": header.merkle_root.to_hex(),
        "merkle_root_valid": merkle.root == header.merkle_root && !merkle.mutated,
        "time": header.time,
        "bits": format!("{:08x}", header.bits),
        "nonce": header.nonce,
        "tx_count": block.transaction_count(),
        "size": block.size(),
        "strippedsize": block.stripped_size(),
        "weight": block.weight(),
        "witness_commitment_valid": witness_commitment_valid,
    }))
}
