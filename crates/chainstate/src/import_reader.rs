//! The import's reader thread: streams block files record by record,
//! prepares records in parallel chunks ([`PreparedBlock`]: parse, hash,
//! txids, `CheckBlock`) and hands them to the connecting thread in file
//! order, never holding more than [`import_queue_bytes`] of blocks that the
//! connecting thread has not taken yet.
//!
//! # Memory
//! File data: one read window ([`READ_WINDOW_BYTES_DEFAULT`](ibex_blockstore::record_stream::READ_WINDOW_BYTES_DEFAULT), 8 MiB).
//! Blocks: at most [`import_queue_bytes`] of serialised bytes read, being
//! prepared or queued: the blocks' share of `-dbcache`
//! ([`MemoryBudget::incoming_blocks_bytes`]) counts them prepared, at
//! about twice their size (bytes, parsed view, txids: measured ~1.8x, 63
//! MiB of full blocks held ~115 MiB of heap). Unbounded, the reader would
//! hold a whole 128 MiB file and up to 80 prepared blocks (~240 MiB on
//! 1.4 MB blocks); bounded by a sixth of the coins cache instead (12-64
//! MiB, ~130 MiB prepared at `-dbcache=450`), it would sit outside
//! `-dbcache`.
//!
//! # Napkin math
//! At `-dbcache=450`, 28 MiB is ~20 full 1.4 MB blocks: ~4 s of work for
//! the connecting thread with every script checked, ~0.7 s with scripts
//! skipped, while preparing a chunk of 16 such blocks takes ~20 ms per
//! block across the worker threads: the reader keeps ahead with blocks to
//! spare.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use ibex_blockstore::{BlockPosition, Obfuscation, OwnedRecord, RecordStream};
use ibex_primitives::{BlockBuffers, Params};
use rayon::prelude::*;

use crate::budget::MemoryBudget;
use crate::error::ChainstateError;
pub use crate::import_diagnosis::CutOffBlockFile;
use crate::import_diagnosis::{diagnose, FileWithoutBlocks};
use crate::metrics::QueueGauge;
use crate::prepared::PreparedBlock;
use crate::vocabulary::{source_files, ImportSource};

/// Serialised bytes of blocks read but not yet taken by the connecting
/// thread, at most: the blocks' share of `-dbcache` in serialised bytes
/// (an eighth of `-dbcache` in memory, 8-128 MiB, so 4-64 MiB here; the
/// floor still holds one largest block, and one block larger than the
/// bound always passes alone).
pub fn import_queue_bytes(memory: &MemoryBudget) -> usize {
    memory.incoming_blocks_serialised_bytes()
}
/// Blocks queued at most (a second bound, for many tiny blocks).
pub(crate) const IMPORT_QUEUE_BLOCKS_MAX: usize = 1024;
/// Blocks prepared in parallel at a time.
const PREPARE_CHUNK_BLOCKS: usize = 16;

/// What the reader sends.
pub(crate) enum ReaderMessage {
    /// A prepared block and the bytes it holds of the budget.
    Block(PreparedBlock, usize),
    /// Reading failed; the import stops with this error.
    Failed(ChainstateError),
}

/// A count of bytes in flight with a limit: the reader takes bytes before
/// reading a record and the connecting thread gives them back when it
/// takes the block. What it holds is also counted in a [`QueueGauge`] for
/// monitoring (given back whole when it is dropped).
#[derive(Debug)]
pub(crate) struct InFlightBytes {
    state: Mutex<InFlightState>,
    changed: Condvar,
    bytes_max: usize,
    gauge: Arc<QueueGauge>,
}

#[derive(Debug, Default)]
struct InFlightState {
    bytes: usize,
    blocks: usize,
    closed: bool,
}

impl InFlightBytes {
    /// A budget of `bytes_max`, counted in a gauge of its own.
    #[cfg(test)]
    pub(crate) fn new(bytes_max: usize) -> Self {
        Self::with_gauge(bytes_max, Arc::default())
    }

    /// A budget of `bytes_max` whose blocks and bytes held are also
    /// counted in `gauge`.
    pub(crate) fn with_gauge(bytes_max: usize, gauge: Arc<QueueGauge>) -> Self {
        InFlightBytes { state: Mutex::default(), changed: Condvar::new(), bytes_max, gauge }
    }

    /// Takes `bytes` if that stays within the limit (or nothing is in
    /// flight, so one block larger than the limit still passes).
    fn try_acquire(&self, bytes: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        self.take_if_room(&mut state, bytes)
    }

    /// Waits until `bytes` fit and takes them; false once closed.
    pub(crate) fn acquire(&self, bytes: usize) -> bool {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if state.closed {
                return false;
            }
            if self.take_if_room(&mut state, bytes) {
                return true;
            }
            state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Takes one block's `bytes` if they fit (see [`Self::try_acquire`]).
    fn take_if_room(&self, state: &mut InFlightState, bytes: usize) -> bool {
        if state.bytes == 0 || state.bytes + bytes <= self.bytes_max {
            state.bytes += bytes;
            state.blocks += 1;
            self.gauge.add_block(bytes as u64);
            return true;
        }
        false
    }

    /// Gives back one block's `bytes` taken by [`InFlightBytes::acquire`].
    pub(crate) fn release(&self, bytes: usize) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let released = bytes.min(state.bytes);
        let blocks = usize::from(state.blocks > 0);
        state.bytes -= released;
        state.blocks -= blocks;
        self.gauge.remove(released as u64, blocks as u64);
        self.changed.notify_all();
    }

    /// Wakes and stops a waiting reader (the connecting thread is done).
    pub(crate) fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.closed = true;
        self.changed.notify_all();
    }

    /// Bytes in flight now.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).bytes
    }
}

impl Drop for InFlightBytes {
    /// Blocks still held (read but never taken) leave the gauge with it.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        self.gauge.remove(state.bytes as u64, state.blocks as u64);
    }
}

/// Where the reader sends its blocks, and what bounds it.
pub(crate) struct ReaderOutput<'a> {
    pub(crate) sender: SyncSender<ReaderMessage>,
    pub(crate) in_flight: &'a InFlightBytes,
    pub(crate) shutdown: &'a AtomicBool,
}

/// Records found and blocks decoded in one file.
#[derive(Debug, Clone, Copy, Default)]
struct FileCounts {
    records: u64,
    blocks: u64,
}

/// What the reader found wrong with the files it read to their end.
#[derive(Debug, Default)]
pub(crate) struct ReaderReport {
    /// Files in which no block was found, with the likely cause.
    pub(crate) files_without_blocks: Vec<FileWithoutBlocks>,
    /// Files whose last record is cut off.
    pub(crate) cut_off_records: Vec<CutOffBlockFile>,
}

/// The reader thread: `source`'s files in order. Returns what it found
/// wrong with the files it read to their end.
pub(crate) fn read_source(
    source: &ImportSource,
    directory: &Path,
    obfuscation: Obfuscation,
    params: &Params,
    output: &ReaderOutput<'_>,
) -> ReaderReport {
    let mut report = ReaderReport::default();
    for (file_number, path) in source_files(source, directory) {
        let key = if file_number.is_some() { obfuscation } else { Obfuscation::default() };
        let mut counts = FileCounts::default();
        let mut cut_off = None;
        let result = RecordStream::open(&path, params.message_start, key)
            .map_err(ChainstateError::from)
            .and_then(|mut stream| {
                let read = send_file_blocks(&mut stream, file_number, params, output, &mut counts);
                cut_off = stream.cut_off_record();
                read
            });
        match result {
            Ok(true) => {}
            Ok(false) => break,
            Err(error) => {
                let _ = output.sender.send(ReaderMessage::Failed(error));
                break;
            }
        }
        if let Some(record) = cut_off {
            report.cut_off_records.push(CutOffBlockFile { path: path.clone(), record });
        }
        if counts.blocks == 0 {
            report.files_without_blocks.extend(diagnose(&path, params, key, counts.records));
        }
    }
    report
}

/// Prepares and sends one file's blocks; `Ok(false)` when the import stopped.
fn send_file_blocks(
    stream: &mut RecordStream<std::fs::File>,
    file_number: Option<u32>,
    params: &Params,
    output: &ReaderOutput<'_>,
    counts: &mut FileCounts,
) -> Result<bool, ChainstateError> {
    let mut chunk: Vec<OwnedRecord> = Vec::with_capacity(PREPARE_CHUNK_BLOCKS);
    // The stream checks the shutdown flag before each read: a file with no
    // record (`/dev/zero`) stops as soon as the flag is set.
    while let Some(record) = stream.next_record_unless(output.shutdown)? {
        counts.records += 1;
        if output.shutdown.load(Ordering::Relaxed) {
            return Ok(false);
        }
        if !output.in_flight.try_acquire(record.bytes.len()) {
            // Send what is held first, so the connecting thread can free bytes.
            if !send_chunk(&mut chunk, file_number, params, output, counts) {
                return Ok(false);
            }
            if !output.in_flight.acquire(record.bytes.len()) {
                return Ok(false);
            }
        }
        chunk.push(record);
        if chunk.len() == PREPARE_CHUNK_BLOCKS
            && !send_chunk(&mut chunk, file_number, params, output, counts)
        {
            return Ok(false);
        }
    }
    if output.shutdown.load(Ordering::Relaxed) {
        return Ok(false);
    }
    Ok(send_chunk(&mut chunk, file_number, params, output, counts))
}

/// Prepares `chunk`'s records in parallel and sends them in order; false
/// when the connecting thread is gone.
fn send_chunk(
    chunk: &mut Vec<OwnedRecord>,
    file_number: Option<u32>,
    params: &Params,
    output: &ReaderOutput<'_>,
    counts: &mut FileCounts,
) -> bool {
    let prepared: Vec<_> = chunk
        .par_drain(..)
        .map_init(BlockBuffers::default, |buffers, record| {
            let position = file_number
                .map(|file_number| BlockPosition { file_number, data_offset: record.data_offset });
            let bytes = record.bytes.len();
            (PreparedBlock::prepare(record.bytes, position, params, buffers), bytes)
        })
        .collect();
    for (block, bytes) in prepared {
        match block {
            Ok(block) => {
                counts.blocks += 1;
                if output.sender.send(ReaderMessage::Block(block, bytes)).is_err() {
                    return false;
                }
            }
            // An undecodable record is skipped, as Core's reindex skips
            // records it cannot deserialise.
            Err(_) => output.in_flight.release(bytes),
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_bytes_block_until_released_and_stop_when_closed() {
        let in_flight = Arc::new(InFlightBytes::new(100));
        assert!(in_flight.try_acquire(60));
        assert!(!in_flight.try_acquire(50), "60 + 50 is over the limit");
        assert!(in_flight.try_acquire(40));
        let waiter = {
            let in_flight = in_flight.clone();
            std::thread::spawn(move || in_flight.acquire(50))
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(in_flight.bytes(), 100, "the waiter must not take bytes yet");
        in_flight.release(60);
        assert!(waiter.join().unwrap());
        assert_eq!(in_flight.bytes(), 40 + 50);
        let blocked = {
            let in_flight = in_flight.clone();
            std::thread::spawn(move || in_flight.acquire(90))
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        in_flight.close();
        assert!(!blocked.join().unwrap(), "closing stops a waiting reader");
    }

    #[test]
    fn read_ahead_is_the_blocks_share_of_dbcache_in_serialised_bytes() {
        let budget = |mebibytes: usize| MemoryBudget::from_dbcache_bytes(mebibytes << 20, 1 << 20);
        // An eighth of -dbcache in memory, half of it serialised: 4-64 MiB.
        assert_eq!(import_queue_bytes(&budget(4)), 4 << 20);
        assert_eq!(import_queue_bytes(&budget(100)), 100 << 16);
        assert_eq!(import_queue_bytes(&budget(450)), 450 << 16);
        assert_eq!(import_queue_bytes(&budget(4000)), 64 << 20);
        // The stored-block read-ahead takes a quarter of it.
        assert_eq!(crate::block_read_ahead::read_ahead_bytes(&budget(450)), 450 << 14);
    }

    #[test]
    fn the_gauge_counts_blocks_held_until_taken_or_dropped() {
        let gauge = Arc::new(QueueGauge::default());
        let in_flight = InFlightBytes::with_gauge(100, gauge.clone());
        assert!(in_flight.try_acquire(30));
        assert!(in_flight.try_acquire(20));
        assert_eq!((gauge.bytes(), gauge.blocks()), (50, 2));
        in_flight.release(30);
        assert_eq!((gauge.bytes(), gauge.blocks()), (20, 1));
        // A second budget on the same gauge adds to it.
        let other = InFlightBytes::with_gauge(100, gauge.clone());
        assert!(other.try_acquire(7));
        assert_eq!((gauge.bytes(), gauge.blocks()), (27, 2));
        drop(in_flight);
        assert_eq!((gauge.bytes(), gauge.blocks()), (7, 1));
        drop(other);
        assert_eq!((gauge.bytes(), gauge.blocks()), (0, 0));
    }

    #[test]
    fn one_block_larger_than_the_limit_passes_when_nothing_is_in_flight() {
        let in_flight = InFlightBytes::new(10);
        assert!(in_flight.try_acquire(4_000_000));
        assert!(!in_flight.try_acquire(1));
        in_flight.release(4_000_000);
        assert!(in_flight.try_acquire(1));
    }
}
