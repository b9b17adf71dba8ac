//! Making the chainstate durable, in Core's order (`FlushStateToDisk`):
//!
//! 1. block and undo files are synced, so everything the index will name exists;
//! 2. the changed block index records are written (synced);
//! 3. the coins are flushed: the head-blocks record first, then the coins in
//!    bounded batches, then the new best block (see [`crate::database`]).
//!
//! A crash between any two steps leaves a state the next open repairs:
//! before 3 the coins still name the old tip (blocks after it are connected
//! again); during 3 the head-blocks record makes [`super::recovery`] replay.

use std::time::Instant;

use super::{ChainEvent, Chainstate, FlushReason};
use crate::cache::FlushMode;
use crate::error::ChainstateError;

impl Chainstate {
    /// Writes everything: files, index, coins (as of the current tip).
    pub fn flush(&mut self, reason: FlushReason, mode: FlushMode) -> Result<(), ChainstateError> {
        // Only verified state is written: settle the pipeline first.
        self.settle_pending(None)?;
        let started = Instant::now();
        self.block_writer.sync()?;
        self.undo_writer.sync()?;
        let index_records = self.store.write_dirty(&mut self.index)?;
        let stats = match self.chain.tip() {
            Some(tip) => {
                let hash = self.index.entry(tip).hash;
                self.cache.flush(hash, mode)?
            }
            None => Default::default(),
        };
        self.last_flush = Instant::now();
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.statistics.flushes += 1;
        self.statistics.longest_flush_ms = self.statistics.longest_flush_ms.max(duration_ms);
        self.emit(ChainEvent::Flushed { stats, index_records, duration_ms, reason });
        Ok(())
    }

    /// Writes only the block index (and syncs the files it names): cheap,
    /// used while importing so found blocks survive a crash.
    pub fn flush_index(&mut self) -> Result<usize, ChainstateError> {
        self.block_writer.sync()?;
        self.undo_writer.sync()?;
        self.store.write_dirty(&mut self.index)
    }
}
