//! Reading ahead of the tip the stored blocks that activation is about to
//! connect: `-reindex-chainstate`, a restart that catches up from the
//! block files, a long reorganisation. A thread reads each block at its
//! index position, removes the obfuscation and parses it
//! ([`PreparedBlock::accepted`]: one parse, no `CheckBlock` again), in
//! chain order, while the connecting thread connects the ones before it.
//!
//! # Napkin math
//! Reading a full 1.4 MB block (page cache) takes ~0.3 ms and parsing it
//! ~0.25 ms; with scripts skipped the connecting thread spends ~4 ms per
//! full block on coins and undo data. Done on the connecting thread, the
//! read and parse are ~12 % of its time; on this thread they overlap it,
//! and one thread keeps ahead with room to spare.
//!
//! # Memory
//! At most [`read_ahead_bytes`] of serialised blocks read but not taken (a
//! block takes about twice its size once parsed), and at most
//! [`READ_AHEAD_BLOCKS_MAX`] blocks. One thread reading and parsing a full
//! block in ~0.6 ms keeps ahead of a connecting thread that needs ~8 ms
//! for it, so a few blocks of read-ahead are enough: a quarter of the
//! import's bound (7 MiB at `-dbcache=450`, ~5 full blocks), inside the
//! blocks' share of `-dbcache` ([`crate::budget`]; the two rarely run at
//! once: a reorganisation during an import). Measured on the bench chain,
//! the import's whole bound of the time (64 MiB, ~130 MiB parsed) raised
//! the peak RSS of `-reindex-chainstate` from 612 to 708 MiB.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;

use ibex_blockstore::{read_block_once, BlockPosition, Obfuscation};
use ibex_primitives::{BlockBuffers, BlockHash};

use crate::error::ChainstateError;
use crate::import_reader::InFlightBytes;
use crate::index::EntryId;
use crate::metrics::QueueGauge;
use crate::prepared::PreparedBlock;

/// Serialised bytes of blocks read ahead at most: a quarter of the
/// blocks' share of `-dbcache` (the import's bound; one block larger than
/// it always passes alone).
pub(crate) fn read_ahead_bytes(memory: &crate::budget::MemoryBudget) -> usize {
    crate::import_reader::import_queue_bytes(memory) / 4
}

/// Blocks read ahead at most (a second bound, for many tiny blocks).
pub(crate) const READ_AHEAD_BLOCKS_MAX: usize = 256;
/// Blocks of a path given to one reading thread: a longer path is read in
/// segments, a thread each (the list costs ~48 bytes a block; a new thread
/// per 4,096 blocks costs nothing measurable).
pub(crate) const READ_AHEAD_SEGMENT_BLOCKS: u32 = 4096;
/// Fewest blocks to connect for which reading ahead is worth a thread.
pub(crate) const READ_AHEAD_BLOCKS_MIN: usize = 4;

/// A stored block to read, in the order it will be connected.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockToRead {
    pub(crate) id: EntryId,
    pub(crate) hash: BlockHash,
    pub(crate) position: BlockPosition,
}

/// Where the blocks are and how they are framed.
#[derive(Debug, Clone)]
pub(crate) struct BlockFiles {
    pub(crate) directory: PathBuf,
    pub(crate) magic: [u8; 4],
    pub(crate) obfuscation: Obfuscation,
}

/// A block read ahead, and the bytes of the budget it holds.
type ReadBlock = (EntryId, Result<PreparedBlock, ChainstateError>, usize);

/// The reading thread and the blocks it has read.
pub(crate) struct BlockReadAhead {
    receiver: Option<Receiver<ReadBlock>>,
    /// A block received but not asked for yet.
    next: Option<ReadBlock>,
    in_flight: Arc<InFlightBytes>,
    thread: Option<JoinHandle<()>>,
}

impl BlockReadAhead {
    /// Starts reading `blocks` in order, holding at most `bytes_max` of
    /// them at a time (counted in `gauge` too).
    pub(crate) fn start(
        files: BlockFiles,
        blocks: Vec<BlockToRead>,
        bytes_max: usize,
        gauge: Arc<QueueGauge>,
    ) -> Result<BlockReadAhead, ChainstateError> {
        let (sender, receiver) = sync_channel(READ_AHEAD_BLOCKS_MAX);
        let in_flight = Arc::new(InFlightBytes::with_gauge(bytes_max, gauge));
        let budget = in_flight.clone();
        let thread = std::thread::Builder::new()
            .name("ibex-read-ahead".to_owned())
            .spawn(move || {
                let mut buffers = BlockBuffers::default();
                for block in blocks {
                    let (result, bytes) = read_one(&files, block, &mut buffers);
                    let failed = result.is_err();
                    if !budget.acquire(bytes) || sender.send((block.id, result, bytes)).is_err() {
                        return;
                    }
                    if failed {
                        return;
                    }
                }
            })
            .map_err(|source| ChainstateError::ReadAheadThread { source })?;
        Ok(BlockReadAhead { receiver: Some(receiver), next: None, in_flight, thread: Some(thread) })
    }

    /// Block `id` if it is the next one read; `None` when it is not (the
    /// caller reads it itself) or the thread has stopped.
    pub(crate) fn take(&mut self, id: EntryId) -> Option<Result<PreparedBlock, ChainstateError>> {
        if self.next.is_none() {
            self.next = self.receiver.as_ref()?.recv().ok();
        }
        match self.next.take() {
            Some((read_id, result, bytes)) if read_id == id => {
                self.in_flight.release(bytes);
                Some(result)
            }
            other => {
                self.next = other;
                None
            }
        }
    }
}

impl Drop for BlockReadAhead {
    fn drop(&mut self) {
        // Wake the thread if it waits for room, make its sends fail, and
        // wait for it so no file stays open behind the caller.
        self.in_flight.close();
        self.receiver = None;
        self.next = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads and parses one block; its serialised size (0 on failure).
pub(crate) fn read_one(
    files: &BlockFiles,
    block: BlockToRead,
    buffers: &mut BlockBuffers,
) -> (Result<PreparedBlock, ChainstateError>, usize) {
    // Read once: its pages leave the page cache (`ibex_blockstore::page_cache`).
    let bytes =
        match read_block_once(&files.directory, block.position, files.magic, &files.obfuscation) {
            Ok(bytes) => bytes,
            Err(error) => return (Err(error.into()), 0),
        };
    let size = bytes.len();
    let hash = block.hash;
    let result = PreparedBlock::accepted(bytes, block.position, buffers)
        .map_err(|error| ChainstateError::CorruptBlock { hash, reason: error.reason })
        .and_then(|prepared| {
            if prepared.hash() == hash {
                Ok(prepared)
            } else {
                Err(ChainstateError::WrongBlockInFile { expected: hash, found: prepared.hash() })
            }
        });
    (result, size)
}
