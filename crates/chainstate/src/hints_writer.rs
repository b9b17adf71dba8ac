//! Writing a SwiftSync hints file (`dumphints`, `ibex hints`) from a
//! node's active chain: for each block from 1 to the terminal height `H`,
//! the numbers of its outputs still unspent at `H`
//! ([`ibex_primitives::hints`] has the format and the numbering).
//!
//! # How "unspent at H" is decided
//! The coin set at the tip is rolled back to `H` in memory with the undo
//! data of the blocks above it (as `dumptxoutset rollback` does). An
//! output of block `h` is unspent at `H` exactly when that set holds a
//! coin at its outpoint *created at height `h`*: the height tells apart
//! the two mainnet coinbases whose transaction ids were repeated (BIP30),
//! where the set holds the later block's coin.
//!
//! # Napkin math
//! Each block is read and parsed once, and its numbered outputs are looked
//! up in one RocksDB `MultiGet` (whole-key bloom filters answer most
//! absent keys without a data block read). Mainnet to 930,000: ~3.2
//! billion lookups, of which ~165 million hit. Measured rates are in
//! `docs/swiftsync.md`; the work is one pass on the calling thread (the
//! engine goes on meanwhile, as for `dumptxoutset`).

use ibex_primitives::hints::{HintNumbering, HintsVersion, HintsWriter};
use ibex_primitives::{BlockBuffers, OutPoint, ParsedBlock};

use crate::coins::view::CoinSetView;
use crate::engine::read_api::ChainBlock;
use crate::engine::reader::ChainReader;
use crate::error::ChainstateError;

/// A hints file built, with its figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenHints {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Outputs numbered over all blocks (the spendable ones).
    pub outputs_numbered: u64,
    /// Outputs unspent at the terminal height.
    pub unspent_count: u64,
}

/// Builds the hints file of `blocks` (the active chain from height 1 to
/// the terminal height, in order) against `view`, the coin set at the
/// terminal height.
pub fn build_hints(
    reader: &ChainReader,
    view: &CoinSetView,
    blocks: &[ChainBlock],
    version: HintsVersion,
) -> Result<WrittenHints, ChainstateError> {
    let terminal_height = u32::try_from(blocks.len()).unwrap_or(u32::MAX);
    let mut writer = HintsWriter::new(version, terminal_height);
    let mut buffers = BlockBuffers::default();
    let mut outpoints = Vec::new();
    let mut indices = Vec::new();
    let (mut outputs_numbered, mut unspent_count) = (0u64, 0u64);
    for (expected_height, block) in (1u32..).zip(blocks) {
        // A broken invariant of the caller's list, never a file to trust.
        assert_eq!(block.height, expected_height, "hints need the chain's blocks in order");
        let position =
            block.position.ok_or(ChainstateError::MissingBlockData { hash: block.hash })?;
        let bytes = reader.read_stored_block(position, &block.hash)?;
        let parsed = ParsedBlock::parse(bytes, &mut buffers)
            .map_err(|reason| ChainstateError::CorruptBlock { hash: block.hash, reason })?;
        numbered_outpoints(&parsed, block, &mut outpoints);
        let coins = view.coins_at(&outpoints)?;
        indices.clear();
        for (number, coin) in (0u32..).zip(&coins) {
            if coin.as_ref().is_some_and(|coin| coin.height() == block.height) {
                indices.push(number);
            }
        }
        outputs_numbered += outpoints.len() as u64;
        unspent_count += indices.len() as u64;
        writer.push_block(&indices);
        buffers = parsed.into_parts().1;
    }
    let bytes = writer.finish();
    assert!(bytes.is_some(), "one record was written for each block");
    let bytes = bytes.unwrap_or_default();
    Ok(WrittenHints { bytes, outputs_numbered, unspent_count })
}

/// The outpoints of `parsed`'s numbered outputs, in hint order, into
/// `outpoints` (cleared first).
fn numbered_outpoints(parsed: &ParsedBlock, block: &ChainBlock, outpoints: &mut Vec<OutPoint>) {
    outpoints.clear();
    let numbering = HintNumbering::for_block(block.height, &block.hash);
    for ((transaction_index, transaction), txid) in
        parsed.view().transactions().enumerate().zip(parsed.txids())
    {
        for (vout, output) in (0u32..).zip(transaction.outputs()) {
            if numbering.numbers(transaction_index, output) {
                outpoints.push(OutPoint { txid: *txid, vout });
            }
        }
    }
}

/// Writes `bytes` to `<path>.incomplete`, syncs it and renames it to
/// `path`, so no half-written file is ever where a user would take it;
/// the temporary file is removed when a step fails.
pub fn write_hints_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".incomplete");
    let temporary = std::path::PathBuf::from(temporary);
    let written = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests;
