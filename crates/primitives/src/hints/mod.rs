//! SwiftSync hints files (BIP 456 draft; btcd pull request 2478): for each
//! block from 1 to a terminal height `H`, which of its outputs are still
//! unspent at `H`.
//!
//! # Format
//! A header of magic `UTXO`, a version byte and `H` as a little-endian
//! `u32`, then exactly `H` records, one per block from height 1 (genesis
//! has none), each the sorted indices of the block's unspent outputs:
//! - version `0x00`: BIP 456's Elias-Fano record (module `elias_fano`);
//! - version `0x01`: btcd's length-prefixed gap list (module `gap_list`).
//!
//! Indices number a block's *spendable* outputs only, in block order
//! (transactions in order, then outputs in order), from 0 in every block
//! ([`HintNumbering`]). An output is not numbered when its script is
//! provably unspendable (Core's `CScript::IsUnspendable`: `OP_RETURN`
//! first, or over 10,000 bytes) or when it belongs to the coinbase of one
//! of the two mainnet blocks whose coinbases were overwritten (Core's
//! `IsBIP30Unspendable`). Outputs spent in their own block are numbered.
//!
//! The file names no network and carries no checksum: it is bound to a
//! chain by the SHA-256 of its bytes, committed per network as AssumeUTXO
//! hashes are, or named by the operator.
//!
//! # Checks
//! A hints file comes from strangers. [`HintsFile::parse`] reads every
//! record before it is used: a wrong magic, version or height, a record
//! truncated, not canonical or beyond any block, a count of records other
//! than `H`, or bytes after the last one are each an error naming the
//! block and the byte. Whether an index is below the block's spendable
//! outputs is known only with the block: [`HintNumbering::check`].
//!
//! # Napkin math
//! Mainnet at height 930,000: ~3.2 billion outputs, ~165 million unspent.
//! BIP 456 gives 119 MB for the Elias-Fano file, ~6 bits an unspent
//! index. Reading it whole is one pass (~1 s); the table of record
//! offsets is 4 bytes a block (3.7 MB); a block's indices are decoded when
//! it is connected, at most [`HINTS_BLOCK_INDICES_MAX`] of them.

mod aggregate;
mod elias_fano;
mod error;
mod gap_list;

pub use aggregate::{OutpointAggregate, OutpointHasher, PairedAggregate, AGGREGATE_SALT_BYTES};
pub use error::HintsError;

use crate::encode::Reader;
use crate::limits::{BLOCK_WEIGHT_MAX, WITNESS_SCALE_FACTOR};
use crate::params::is_bip30_unspendable;
use crate::transaction::OutputView;
use crate::txoutset::is_unspendable;
use crate::BlockHash;

/// The file's first four bytes.
pub const HINTS_MAGIC: [u8; 4] = *b"UTXO";
/// Bytes of the header: magic, version, height.
pub const HINTS_HEADER_BYTES: usize = 9;
/// Outputs a block can have at most, hence one more than any index: an
/// output takes 9 bytes at least (an amount and an empty script's length),
/// 36 weight units, in a block of 4,000,000.
pub const HINTS_BLOCK_INDICES_MAX: u32 = (BLOCK_WEIGHT_MAX / (9 * WITNESS_SCALE_FACTOR)) as u32 + 1;

/// How the records are coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HintsVersion {
    /// `0x00`: BIP 456's Elias-Fano records.
    EliasFano,
    /// `0x01`: btcd's length-prefixed gap lists.
    GapList,
}

impl HintsVersion {
    /// The version byte.
    pub fn byte(self) -> u8 {
        match self {
            HintsVersion::EliasFano => 0x00,
            HintsVersion::GapList => 0x01,
        }
    }

    /// The version a byte names, if this node reads it.
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0x00 => Some(HintsVersion::EliasFano),
            0x01 => Some(HintsVersion::GapList),
            _ => None,
        }
    }

    fn decode_block(
        self,
        reader: &mut Reader<'_>,
        height: u32,
        indices: &mut Vec<u32>,
    ) -> Result<(), HintsError> {
        match self {
            HintsVersion::EliasFano => elias_fano::decode_block(reader, height, indices),
            HintsVersion::GapList => gap_list::decode_block(reader, height, indices),
        }
    }

    fn encode_block(self, indices: &[u32], out: &mut Vec<u8>) {
        match self {
            HintsVersion::EliasFano => elias_fano::encode_block(indices, out),
            HintsVersion::GapList => gap_list::encode_block(indices, out),
        }
    }

    /// Bytes one block's record takes.
    pub fn encoded_len(self, indices: &[u32]) -> usize {
        match self {
            HintsVersion::EliasFano => elias_fano::encoded_len(indices),
            HintsVersion::GapList => gap_list::encoded_len(indices),
        }
    }
}

/// A hints file read and checked whole, answering per block.
#[derive(Debug, Clone)]
pub struct HintsFile {
    bytes: Vec<u8>,
    version: HintsVersion,
    terminal_height: u32,
    /// Where the record of block `h` starts, at `h - 1`.
    record_offsets: Vec<u32>,
    /// Unspent indices over all records.
    unspent_count: u64,
}

impl HintsFile {
    /// Reads `bytes` as a hints file, checking every record (see the module
    /// docs); `expected_height`, when given, must be the file's.
    pub fn parse(bytes: Vec<u8>, expected_height: Option<u32>) -> Result<Self, HintsError> {
        if bytes.len() as u64 > u64::from(u32::MAX) {
            return Err(HintsError::TooLarge { bytes: bytes.len() as u64 });
        }
        let (version, terminal_height) = parse_header(&bytes)?;
        if let Some(expected) = expected_height.filter(|&expected| expected != terminal_height) {
            return Err(HintsError::WrongHeight { found: terminal_height, expected });
        }
        let body_bytes = bytes.len() - HINTS_HEADER_BYTES;
        if (body_bytes as u64) < u64::from(terminal_height) {
            return Err(HintsError::TooFewBytes { height: terminal_height, bytes: body_bytes });
        }
        let mut record_offsets = Vec::with_capacity(terminal_height as usize);
        let mut reader = Reader::new(&bytes);
        reader.take(HINTS_HEADER_BYTES).map_err(|source| HintsError::at(0, source))?;
        let mut indices = Vec::new();
        let mut unspent_count = 0u64;
        for height in 1..=terminal_height {
            record_offsets.push(reader.position() as u32);
            version.decode_block(&mut reader, height, &mut indices)?;
            unspent_count += indices.len() as u64;
        }
        if reader.remaining() > 0 {
            return Err(HintsError::TrailingBytes {
                offset: reader.position(),
                count: reader.remaining(),
            });
        }
        Ok(HintsFile { bytes, version, terminal_height, record_offsets, unspent_count })
    }

    /// How the records are coded.
    pub fn version(&self) -> HintsVersion {
        self.version
    }

    /// The last block the file covers: `H`.
    pub fn terminal_height(&self) -> u32 {
        self.terminal_height
    }

    /// Outputs the file says are unspent at `H`, over all blocks.
    pub fn unspent_count(&self) -> u64 {
        self.unspent_count
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The indices of block `height`'s unspent outputs, into `indices`
    /// (cleared first), in increasing order.
    pub fn unspent_indices(&self, height: u32, indices: &mut Vec<u32>) -> Result<(), HintsError> {
        let not_covered =
            || HintsError::HeightNotCovered { height, terminal_height: self.terminal_height };
        let position = height.checked_sub(1).ok_or_else(not_covered)?;
        let &offset = self.record_offsets.get(position as usize).ok_or_else(not_covered)?;
        let mut reader = Reader::new(&self.bytes);
        reader.take(offset as usize).map_err(|source| HintsError::at(height, source))?;
        self.version.decode_block(&mut reader, height, indices)
    }
}

/// Reads the header: version and terminal height.
fn parse_header(bytes: &[u8]) -> Result<(HintsVersion, u32), HintsError> {
    let mut reader = Reader::new(bytes);
    let magic = *reader.take_array::<4>().map_err(|source| HintsError::at(0, source))?;
    if magic != HINTS_MAGIC {
        return Err(HintsError::BadMagic { found: magic });
    }
    let version_byte = reader.read_u8().map_err(|source| HintsError::at(0, source))?;
    let version = HintsVersion::from_byte(version_byte)
        .ok_or(HintsError::UnknownVersion { version: version_byte })?;
    let height = reader.read_u32_le().map_err(|source| HintsError::at(0, source))?;
    Ok((version, height))
}

/// Writes a hints file one block at a time, from block 1 to `H`.
#[derive(Debug)]
pub struct HintsWriter {
    bytes: Vec<u8>,
    version: HintsVersion,
    terminal_height: u32,
    blocks_written: u32,
}

impl HintsWriter {
    /// A file ending at `terminal_height`, coded as `version`.
    pub fn new(version: HintsVersion, terminal_height: u32) -> Self {
        let mut bytes = Vec::with_capacity(HINTS_HEADER_BYTES + terminal_height as usize);
        bytes.extend_from_slice(&HINTS_MAGIC);
        bytes.push(version.byte());
        bytes.extend_from_slice(&terminal_height.to_le_bytes());
        HintsWriter { bytes, version, terminal_height, blocks_written: 0 }
    }

    /// The next block's unspent indices, strictly increasing.
    ///
    /// # Panics
    /// When all `H` blocks were written already, or `indices` is not
    /// strictly increasing: both are the caller's broken invariants.
    pub fn push_block(&mut self, indices: &[u32]) {
        assert!(self.blocks_written < self.terminal_height, "a record past the terminal height");
        self.version.encode_block(indices, &mut self.bytes);
        self.blocks_written += 1;
    }

    /// Blocks written so far.
    pub fn blocks_written(&self) -> u32 {
        self.blocks_written
    }

    /// The file, once every block has its record; `None` before.
    pub fn finish(self) -> Option<Vec<u8>> {
        (self.blocks_written == self.terminal_height).then_some(self.bytes)
    }
}

/// Which outputs of a block hints number: every output but the provably
/// unspendable ones and the overwritten BIP30 coinbases' (module docs).
#[derive(Debug, Clone, Copy)]
pub struct HintNumbering {
    /// The block's first transaction is a BIP30-overwritten coinbase.
    skip_coinbase: bool,
}

impl HintNumbering {
    /// The numbering of the block `hash` at `height`.
    pub fn for_block(height: u32, hash: &BlockHash) -> Self {
        HintNumbering { skip_coinbase: is_bip30_unspendable(height, hash) }
    }

    /// Whether output `output` of transaction `transaction_index` is
    /// numbered.
    pub fn numbers(&self, transaction_index: usize, output: &OutputView<'_>) -> bool {
        let overwritten_coinbase = self.skip_coinbase && transaction_index == 0;
        !overwritten_coinbase && !is_unspendable(output.script_pubkey)
    }

    /// Fails unless every index of `indices` (increasing) is below
    /// `spendable_count`, the outputs the block numbers.
    pub fn check(height: u32, indices: &[u32], spendable_count: u32) -> Result<(), HintsError> {
        match indices.last() {
            Some(&index) if index >= spendable_count => {
                Err(HintsError::IndexBeyondBlock { height, index, spendable_count })
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
