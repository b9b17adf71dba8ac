//! Importing blocks from block files: `-reindex` (the node's own
//! `blk?????.dat`, positions known) and `-loadblock` (any file of framed
//! blocks, appended to the node's own files as they are accepted).
//!
//! # Pipeline
//! A reader thread ([`crate::import_reader`]) streams the files a window at
//! a time, removes the obfuscation, splits them into records and prepares
//! them ([`PreparedBlock`]: parse, block hash, txids, merkle root,
//! `CheckBlock`) in parallel chunks, then hands them over in file order,
//! holding at most [`import_queue_bytes`] of blocks not yet taken (their
//! share of `-dbcache`: [`crate::budget`]). The calling thread accepts
//! each block and connects it as soon as it extends the best header's
//! chain, while the reader is already preparing the next ones; other
//! branches are left to the activation once every file is read, as Core's
//! `ImportBlocks` leaves them (see `engine::import_activation`). Blocks
//! met before their parent wait in a map keyed by the parent's hash (only
//! their position when they can be read again; bounded by
//! [`ORPHAN_BYTES_MAX`] otherwise).

use std::collections::HashMap;
use std::panic::resume_unwind;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};

use ibex_blockstore::{read_block, Obfuscation, RecordHeaders};
use ibex_primitives::{BlockBuffers, BlockHash, Header};

use crate::engine::accept::AcceptOutcome;
use crate::engine::{BlockSource, ChainEvent, Chainstate};
use crate::error::ChainstateError;
use crate::import_plan::build_import_plan;
use crate::import_reader::{
    import_queue_bytes, read_source, InFlightBytes, ReaderMessage, ReaderOutput,
    IMPORT_QUEUE_BLOCKS_MAX,
};
use crate::prepared::PreparedBlock;
pub(crate) use crate::vocabulary::source_files;
pub use crate::vocabulary::ImportSource;

/// Bytes of orphan blocks kept in memory (those without a file position).
pub const ORPHAN_BYTES_MAX: usize = 256 << 20;

/// What an import did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Blocks read from the files.
    pub blocks_read: u64,
    /// Blocks newly indexed.
    pub blocks_accepted: u64,
    /// Blocks found invalid when offered.
    pub blocks_rejected: u64,
    /// Blocks still waiting for an unknown parent at the end.
    pub orphans_left: u64,
    /// Whether it stopped before the source's end: a shutdown, or
    /// `-stopatheight` reached with blocks left to read.
    pub interrupted: bool,
}

/// A block waiting for its parent.
enum Orphan {
    /// In one of the node's own files: read and prepared again when its
    /// parent arrives.
    InFile {
        /// Where.
        position: ibex_blockstore::BlockPosition,
        /// Its hash (the block read again must have it).
        hash: BlockHash,
    },
    /// Kept whole (counted against [`ORPHAN_BYTES_MAX`]).
    InMemory(PreparedBlock),
}

/// Every block header in a block file, read with small reads (no block is
/// read whole): the headers-first pass of an import. Stops at the first gap
/// ([`RecordHeaders`]), as Core's pre-allocated zero tails end the records.
fn scan_headers(
    path: &Path,
    magic: [u8; 4],
    obfuscation: Obfuscation,
    records: &mut Vec<(Header, u32)>,
) -> Result<(), ChainstateError> {
    for record in RecordHeaders::open(path, magic, obfuscation)? {
        let record = record?;
        // A record's length is its frame's 32-bit field.
        records.push((record.header, u32::try_from(record.block_bytes).unwrap_or(u32::MAX)));
    }
    Ok(())
}

/// Indexes every header of `source` before its blocks are read, then tells
/// the observer what the import is about to connect
/// ([`ChainEvent::ImportPlanned`]).
fn index_headers_first(
    chainstate: &mut Chainstate,
    source: &ImportSource,
    shutdown: &AtomicBool,
) -> Result<usize, ChainstateError> {
    let directory = chainstate.blocks_directory().to_path_buf();
    let magic = chainstate.params().message_start;
    let mut records = Vec::new();
    for (file_number, path) in source_files(source, &directory) {
        // Between files: a shutdown need not wait for thousands of them.
        if shutdown.load(Ordering::Relaxed) {
            break;
        }
        // Readers (the RPC) get a turn between files: mainnet's ~5,000
        // files take minutes to scan, a file some 10 ms.
        chainstate.serve_reads()?;
        let key =
            if file_number.is_some() { *chainstate.obfuscation() } else { Obfuscation::default() };
        scan_headers(&path, magic, key, &mut records)?;
    }
    let headers: Vec<Header> = records.iter().map(|(header, _)| *header).collect();
    let added = chainstate.offer_headers(&headers)?;
    drop(headers);
    if let Some(plan) = build_import_plan(chainstate, &records) {
        chainstate.emit(ChainEvent::ImportPlanned(plan));
    }
    Ok(added)
}

/// Imports every block of `source` into `chainstate`, connecting as it
/// goes, after indexing all their headers (so `-assumevalid` applies).
pub fn import_blocks(
    chainstate: &mut Chainstate,
    source: &ImportSource,
    shutdown: &AtomicBool,
) -> Result<ImportSummary, ChainstateError> {
    // Core prunes nothing while it reindexes (`m_blockfiles_indexed`):
    // the files being read, and blocks met before their parents that are
    // known only by their place in a file, must stay. Pruning looks again
    // once the import ends.
    chainstate.shared.importing_files = true;
    let summary = import_with_files_kept(chainstate, source, shutdown);
    chainstate.shared.importing_files = false;
    summary
}

fn import_with_files_kept(
    chainstate: &mut Chainstate,
    source: &ImportSource,
    shutdown: &AtomicBool,
) -> Result<ImportSummary, ChainstateError> {
    index_headers_first(chainstate, source, shutdown)?;
    if matches!(source, ImportSource::OwnBlockFiles) {
        // An unfinished `-reindex` left blocks indexed with their file
        // positions: connect those first, read from where the index says
        // (the stored-block read-ahead), instead of streaming and preparing
        // every record before them again only to find them known. With
        // `-stopatheight` at or below them, no file is streamed at all.
        // Only the best header's chain, as while streaming.
        chainstate.advance_along_best_header()?;
        if shutdown.load(Ordering::Relaxed) {
            chainstate.settle()?;
            return Ok(ImportSummary { interrupted: true, ..ImportSummary::default() });
        }
        if chainstate.reached_stop_height() {
            chainstate.activate_best_chain()?;
            return Ok(ImportSummary { interrupted: true, ..ImportSummary::default() });
        }
    }
    let params = chainstate.params().clone();
    let directory = chainstate.blocks_directory().to_path_buf();
    let obfuscation = *chainstate.obfuscation();
    let (sender, receiver) = sync_channel(IMPORT_QUEUE_BLOCKS_MAX);
    let in_flight = InFlightBytes::with_gauge(
        import_queue_bytes(&chainstate.shared.options.memory),
        chainstate.shared.metrics.import_queue.clone(),
    );
    std::thread::scope(|scope| {
        let reader_params = &params;
        let output = ReaderOutput { sender, in_flight: &in_flight, shutdown };
        let reader = scope
            .spawn(move || read_source(source, &directory, obfuscation, reader_params, &output));
        let mut importer = Importer {
            chainstate,
            orphans: HashMap::new(),
            orphan_bytes: 0,
            summary: ImportSummary::default(),
        };
        let result = importer.run(&receiver, &in_flight, shutdown);
        // Let the reader finish: closing wakes it if it waits for bytes,
        // and dropping the receiver makes its sends fail.
        in_flight.close();
        drop(receiver);
        // Files in which the reader found no block or a cut-off last
        // record, said once it is done.
        let report = reader.join().unwrap_or_else(|panic| resume_unwind(panic));
        for file in report.files_without_blocks {
            importer.chainstate.emit(ChainEvent::BlockFileWithoutBlocks(file));
        }
        for file in report.cut_off_records {
            importer.chainstate.emit(ChainEvent::BlockFileCutOff(file));
        }
        result
    })
}

struct Importer<'a> {
    chainstate: &'a mut Chainstate,
    orphans: HashMap<BlockHash, Vec<Orphan>>,
    orphan_bytes: usize,
    summary: ImportSummary,
}

impl Importer<'_> {
    fn run(
        &mut self,
        receiver: &Receiver<ReaderMessage>,
        in_flight: &InFlightBytes,
        shutdown: &AtomicBool,
    ) -> Result<ImportSummary, ChainstateError> {
        for message in receiver {
            // `-stopatheight` ends the import only when a block is left
            // unread: a source whose last block reaches it was read whole.
            // A tip there whose verdicts are pending may still fall back
            // below it (an invalid block at that height, with a valid
            // sibling further on): they are settled first.
            if self.chainstate.reached_stop_height() {
                self.chainstate.activate_best_chain()?;
            }
            if self.chainstate.reached_stop_height() {
                if let ReaderMessage::Block(_, bytes) = &message {
                    in_flight.release(*bytes);
                }
                self.summary.interrupted = true;
                break;
            }
            let block = match message {
                ReaderMessage::Block(block, bytes) => {
                    in_flight.release(bytes);
                    block
                }
                ReaderMessage::Failed(error) => return Err(error),
            };
            self.summary.blocks_read += 1;
            self.offer(block)?;
            if shutdown.load(Ordering::Relaxed) {
                self.summary.interrupted = true;
                break;
            }
        }
        // The reader also ends, without a block, when a shutdown stops its
        // search of a file that holds none.
        if shutdown.load(Ordering::Relaxed) {
            self.summary.interrupted = true;
        }
        if shutdown.load(Ordering::Relaxed) {
            // The pending blocks' verdicts; whatever they are, the next
            // start activates the best chain again.
            self.chainstate.settle()?;
        } else {
            // Every block is read: run to the fixed point, where no
            // candidate with more work than the tip is left untried (a
            // pending block that fails moves the best chain; with
            // `-stopatheight` reached it stays there).
            self.chainstate.activate_best_chain()?;
        }
        self.summary.orphans_left = self.orphans.values().map(|list| list.len() as u64).sum();
        Ok(self.summary)
    }

    /// Accepts `block`, connects what it makes best, then offers the
    /// orphans that were waiting for it.
    fn offer(&mut self, block: PreparedBlock) -> Result<(), ChainstateError> {
        let mut pending = vec![block];
        while let Some(block) = pending.pop() {
            let hash = block.hash();
            match self.chainstate.offer_block(block, BlockSource::File)? {
                AcceptOutcome::Accepted(_) => {
                    self.summary.blocks_accepted += 1;
                }
                AcceptOutcome::AlreadyKnown(_) => {}
                AcceptOutcome::UnknownParent(block) => {
                    self.keep_orphan(*block);
                    continue;
                }
                AcceptOutcome::Invalid(_) => {
                    self.summary.blocks_rejected += 1;
                    continue;
                }
            }
            for orphan in self.orphans.remove(&hash).unwrap_or_default() {
                pending.push(self.restore_orphan(orphan)?);
            }
        }
        Ok(())
    }

    fn keep_orphan(&mut self, block: PreparedBlock) {
        let parent = block.header().previous_block_hash;
        let orphan = match block.position {
            // It can be read again from its file: keep only the position.
            Some(position) => Orphan::InFile { position, hash: block.hash() },
            None => {
                let bytes = block.bytes().len();
                if self.orphan_bytes + bytes > ORPHAN_BYTES_MAX {
                    return;
                }
                self.orphan_bytes += bytes;
                Orphan::InMemory(block)
            }
        };
        self.orphans.entry(parent).or_default().push(orphan);
    }

    fn restore_orphan(&mut self, orphan: Orphan) -> Result<PreparedBlock, ChainstateError> {
        let (position, hash) = match orphan {
            Orphan::InMemory(block) => {
                self.orphan_bytes -= block.bytes().len();
                return Ok(block);
            }
            Orphan::InFile { position, hash } => (position, hash),
        };
        let chainstate = &self.chainstate;
        let params = chainstate.params();
        let bytes = read_block(
            chainstate.blocks_directory(),
            position,
            params.message_start,
            chainstate.obfuscation(),
        )?;
        let mut buffers = BlockBuffers::default();
        let block = PreparedBlock::prepare(bytes, Some(position), params, &mut buffers)
            .map_err(|error| ChainstateError::CorruptBlock { hash, reason: error.reason })?;
        if block.hash() != hash {
            return Err(ChainstateError::WrongBlockInFile { expected: hash, found: block.hash() });
        }
        Ok(block)
    }
}
