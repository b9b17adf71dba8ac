//! The pipeline's last stage: a thread that writes finished blocks to the
//! block files and counts them for the manifest while the next block is
//! planned and signed.
//!
//! Napkin math: a full bench block is ~1.4 MB; XOR, framing and the write
//! system call cost ~1 ms, counting it ~1 ms. Done inline that is ~5% of a
//! block's ~40 ms; on its own thread it overlaps with planning, which is
//! sequential. The queue holds at most four blocks (~6 MB).

use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use crate::chain::BuiltBlock;
use crate::error::GeneratorError;
use crate::output::ChainWriter;
use crate::statistics::ChainStatistics;

/// Blocks waiting to be written, at most.
const WRITE_QUEUE_BLOCKS_MAX: usize = 4;

/// A block for the files.
#[derive(Debug)]
pub enum WriteRecord {
    /// A block of the best chain: written and counted in the manifest.
    Counted(Box<BuiltBlock>),
    /// A fork or invalid block: written only.
    Uncounted(Vec<u8>),
}

type StageResult = Result<(ChainWriter, ChainStatistics), GeneratorError>;

/// The writing thread and the queue to it.
#[derive(Debug)]
pub struct WriterStage {
    sender: Option<SyncSender<WriteRecord>>,
    handle: Option<JoinHandle<StageResult>>,
}

impl WriterStage {
    /// Starts the thread, which owns `writer` until [`WriterStage::finish`].
    pub fn start(mut writer: ChainWriter) -> WriterStage {
        let (sender, receiver) = sync_channel::<WriteRecord>(WRITE_QUEUE_BLOCKS_MAX);
        let handle = std::thread::spawn(move || -> StageResult {
            let mut statistics = ChainStatistics::default();
            for record in receiver {
                match record {
                    WriteRecord::Counted(built) => {
                        writer.append(&built.bytes)?;
                        statistics.add(&built);
                    }
                    WriteRecord::Uncounted(bytes) => writer.append(&bytes)?,
                }
            }
            Ok((writer, statistics))
        });
        WriterStage { sender: Some(sender), handle: Some(handle) }
    }

    /// Queues a block (waits while the queue is full). If the thread stopped
    /// on an error, returns that error.
    pub fn send(&mut self, record: WriteRecord) -> Result<(), GeneratorError> {
        let sent = self.sender.as_ref().is_some_and(|sender| sender.send(record).is_ok());
        if sent {
            return Ok(());
        }
        self.join().and(Err(GeneratorError::WriterStopped))
    }

    fn join(&mut self) -> StageResult {
        self.sender = None;
        let handle = self.handle.take().ok_or(GeneratorError::WriterStopped)?;
        handle.join().map_err(|_| GeneratorError::WriterStopped)?
    }

    /// Waits for every queued block to be written; returns the writer and
    /// the counts.
    pub fn finish(mut self) -> StageResult {
        self.join()
    }
}
