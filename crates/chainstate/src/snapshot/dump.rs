//! `dumptxoutset`'s work once the engine has handed out a view: roll the
//! view back to the target block if it is not the tip, then write every
//! coin in one walk that also hashes them.
//!
//! # One walk, on every core
//! Core walks the coins twice: `ComputeUTXOStats` for the count and
//! `hash_serialized_3`, then the cursor again to write. Here one walk
//! (`coins::parallel_walk`: workers walk ranges of the key space,
//! this thread hashes and writes them in order) writes each transaction's
//! coins in the database's key order (the file's order) and hashes them
//! sorted by output index (the hash's order; the two differ only past
//! output 16,511); the coin count, known only at the end, is written into
//! the header last.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};

use ibex_primitives::txoutset::{TxOutSetHashType, TxOutSetHasher, TxOutSetStats};
use ibex_primitives::{BlockBuffers, ParsedBlock};

use super::metadata::{SnapshotMetadata, COIN_COUNT_OFFSET};
use super::rollback::RollbackChanges;
use crate::coins::parallel_walk::{walk_in_parallel, WalkOutputs};
use crate::coins::view::CoinSetView;
use crate::engine::read_api::CoinSetAtTip;
use crate::engine::reader::ChainReader;
use crate::error::ChainstateError;

/// Bytes buffered between the walk and the file.
pub const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// What a written snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenSnapshot {
    /// Coins written (the header's count).
    pub coins_written: u64,
    /// `gettxoutsetinfo`'s figures of the coins written, with
    /// `hash_serialized_3`.
    pub stats: TxOutSetStats,
}

/// Rolls `at`'s view back to its target: undoes each block above it, read
/// with its undo data on this thread, from the tip down. Nothing to do
/// when the target is the tip.
pub fn roll_back_to_target(
    reader: &ChainReader,
    at: &mut CoinSetAtTip,
) -> Result<(), ChainstateError> {
    if at.blocks_above_target.is_empty() {
        return Ok(());
    }
    let mut changes = RollbackChanges::default();
    let mut buffers = BlockBuffers::default();
    for block in &at.blocks_above_target {
        let position =
            block.position.ok_or(ChainstateError::MissingBlockData { hash: block.hash })?;
        let bytes = reader.read_stored_block(position, &block.hash)?;
        let undo = reader.read_stored_undo(block)?;
        let parsed = ParsedBlock::parse(bytes, &mut buffers)
            .map_err(|reason| ChainstateError::CorruptBlock { hash: block.hash, reason })?;
        changes.undo_block(parsed.view(), parsed.txids(), &block.hash, &undo)?;
        buffers = parsed.into_parts().1;
    }
    at.view.apply_changes(changes.into_changes());
    Ok(())
}

/// How many coins `view` holds (a walk): the header's count for a file
/// that cannot be sought back into (a named pipe).
pub fn count_coins(view: &CoinSetView) -> Result<u64, ChainstateError> {
    let mut count = 0u64;
    walk_in_parallel(view, WalkOutputs { snapshot_records: false }, |chunk| {
        count += chunk.serialized.len();
        Ok(())
    })?;
    Ok(count)
}

/// Writes every coin of `view` as a snapshot with `metadata` to `file`,
/// opened for writing at its start. With `seekable` the header's count is
/// written at the end (one walk) and the file synced; without (a named
/// pipe), `metadata`'s count must be the view's ([`count_coins`]).
pub fn write_snapshot(
    view: &CoinSetView,
    metadata: SnapshotMetadata,
    file: File,
    seekable: bool,
) -> Result<WrittenSnapshot, ChainstateError> {
    let mut buffered = BufWriter::with_capacity(WRITE_BUFFER_BYTES, file);
    buffered.write_all(&metadata.encode()).map_err(snapshot_io)?;
    let mut hasher = TxOutSetHasher::new(TxOutSetHashType::HashSerialized3);
    let mut coins_written = 0u64;
    walk_in_parallel(view, WalkOutputs { snapshot_records: true }, |chunk| {
        buffered.write_all(&chunk.records).map_err(snapshot_io)?;
        hasher
            .add_serialized(&chunk.serialized)
            .map_err(|source| ChainstateError::CoinOrder { source })?;
        coins_written += chunk.serialized.len();
        Ok(())
    })?;
    let mut file = buffered.into_inner().map_err(|error| snapshot_io(error.into_error()))?;
    if seekable {
        file.seek(SeekFrom::Start(COIN_COUNT_OFFSET)).map_err(snapshot_io)?;
        file.write_all(&coins_written.to_le_bytes()).map_err(snapshot_io)?;
        file.sync_all().map_err(snapshot_io)?;
    } else {
        // The view does not change: two walks count the same coins.
        assert_eq!(metadata.coin_count, coins_written, "snapshot coin count changed");
    }
    let stats = hasher.finish();
    // Both counts come from the same walk: a difference is a bug.
    assert_eq!(stats.txouts, coins_written, "snapshot coins written and hashed differ");
    Ok(WrittenSnapshot { coins_written, stats })
}

fn snapshot_io(source: std::io::Error) -> ChainstateError {
    ChainstateError::Snapshot(super::SnapshotError::Io { source })
}
