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
//! billion lookups, of which ~165 million hit, ~3.3 us an output on one
//! thread (`docs/benchmarks.md`): ~3 hours. The blocks are spread over
//! every core, in batches whose records are then written in block order;
//! the engine goes on meanwhile, as for `dumptxoutset`.

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

/// Blocks handed out to the threads at a time: their unspent indices wait
/// in memory until written in block order (a few MB on mainnet).
const BATCH_BLOCKS: usize = 256;

/// One block's hints: the numbers of its outputs unspent at `H`, and how
/// many outputs it numbers.
struct BlockHints {
    unspent: Vec<u32>,
    numbered: usize,
}

/// Builds the hints file of `blocks` (the active chain from height 1 to
/// the terminal height, in order) against `view`, the coin set at the
/// terminal height, on every core.
pub fn build_hints(
    reader: &ChainReader,
    view: &CoinSetView,
    blocks: &[ChainBlock],
    version: HintsVersion,
) -> Result<WrittenHints, ChainstateError> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    build_hints_on(reader, view, blocks, version, Spread { threads, batch_blocks: BATCH_BLOCKS })
}

/// How the blocks are spread over threads.
#[derive(Debug, Clone, Copy)]
struct Spread {
    threads: usize,
    batch_blocks: usize,
}

/// As [`build_hints`], the blocks of each batch of `spread.batch_blocks`
/// spread over `spread.threads` threads, each reading and looking up its
/// own blocks.
fn build_hints_on(
    reader: &ChainReader,
    view: &CoinSetView,
    blocks: &[ChainBlock],
    version: HintsVersion,
    spread: Spread,
) -> Result<WrittenHints, ChainstateError> {
    let batch_blocks = spread.batch_blocks.max(1);
    let terminal_height = u32::try_from(blocks.len()).unwrap_or(u32::MAX);
    let mut writer = HintsWriter::new(version, terminal_height);
    let (mut outputs_numbered, mut unspent_count) = (0u64, 0u64);
    for (batch_number, batch) in blocks.chunks(batch_blocks).enumerate() {
        let first_height = (batch_number * batch_blocks + 1) as u32;
        for (expected_height, block) in (first_height..).zip(batch) {
            // A broken invariant of the caller's list, never a file to trust.
            assert_eq!(block.height, expected_height, "hints need the chain's blocks in order");
        }
        for hints in hints_of_batch(reader, view, batch, spread.threads)? {
            outputs_numbered += hints.numbered as u64;
            unspent_count += hints.unspent.len() as u64;
            writer.push_block(&hints.unspent);
        }
    }
    let bytes = writer.finish();
    assert!(bytes.is_some(), "one record was written for each block");
    let bytes = bytes.unwrap_or_default();
    Ok(WrittenHints { bytes, outputs_numbered, unspent_count })
}

/// The hints of `batch`'s blocks, in order, worked out on `threads`
/// threads taking the next block as they go.
fn hints_of_batch(
    reader: &ChainReader,
    view: &CoinSetView,
    batch: &[ChainBlock],
    threads: usize,
) -> Result<Vec<BlockHints>, ChainstateError> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut buffers = BlockBuffers::default();
        let mut outpoints = Vec::new();
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(block) = batch.get(at) else { return Ok(done) };
            let hints = block_hints(reader, view, block, &mut buffers, &mut outpoints)?;
            done.push((at, hints));
        }
    };
    let per_thread: Vec<Result<Vec<(usize, BlockHints)>, ChainstateError>> =
        std::thread::scope(|scope| {
            let workers: Vec<_> =
                (1..threads.min(batch.len())).map(|_| scope.spawn(work)).collect();
            let mut results = vec![work()];
            for worker in workers {
                results
                    .push(worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            }
            results
        });
    let mut all = Vec::with_capacity(batch.len());
    for done in per_thread {
        all.extend(done?);
    }
    all.sort_unstable_by_key(|(at, _)| *at);
    Ok(all.into_iter().map(|(_, hints)| hints).collect())
}

/// One block read, parsed and its numbered outputs looked up: an output
/// is unspent at `H` when the set holds a coin at its outpoint created at
/// its block's height (module docs).
fn block_hints(
    reader: &ChainReader,
    view: &CoinSetView,
    block: &ChainBlock,
    buffers: &mut BlockBuffers,
    outpoints: &mut Vec<OutPoint>,
) -> Result<BlockHints, ChainstateError> {
    let position = block.position.ok_or(ChainstateError::MissingBlockData { hash: block.hash })?;
    let bytes = reader.read_stored_block(position, &block.hash)?;
    let parsed = ParsedBlock::parse(bytes, buffers)
        .map_err(|reason| ChainstateError::CorruptBlock { hash: block.hash, reason })?;
    numbered_outpoints(&parsed, block, outpoints);
    let coins = view.coins_at(outpoints)?;
    let mut unspent = Vec::new();
    for (number, coin) in (0u32..).zip(&coins) {
        if coin.as_ref().is_some_and(|coin| coin.height() == block.height) {
            unspent.push(number);
        }
    }
    *buffers = parsed.into_parts().1;
    Ok(BlockHints { unspent, numbered: outpoints.len() })
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
