//! Script checks that overlap the next blocks (Ibex's pipeline; Core waits
//! for every block's checks before starting the next one).
//!
//! Block N's coins are applied and N is pushed on the chain, then its
//! scripts are handed to the script threads while this thread reads,
//! prefetches and connects the next blocks. Up to
//! [`SCRIPT_PIPELINE_BLOCKS`] blocks are *pending* (their scripts queued or
//! being checked) while the next one connects; the oldest is settled
//! (its verdict awaited) when one more would exceed that. Until it is
//! settled a block's undo data is not written, its tip is not announced,
//! and nothing is flushed (every flush and every disconnect settles all
//! pending blocks first). If N's scripts fail, every block connected on top
//! of it is rolled back with its in-memory undo data, newest first, then N,
//! and N is marked invalid (with those descendants), so the result is
//! exactly that of checking N before connecting N+1.
//!
//! # Napkin math
//! With every script checked, connect work (coins, undo, parsing) is
//! ~5-20 % of a block's time and script checks the rest. Without the
//! overlap the script threads idle during that part; with it, the cores are
//! busy for both. With only one block pending, each block still ended with
//! a bubble: the last transactions keep one thread while the other has
//! nothing to steal, then both wait for this thread to wake, write the undo
//! data and hand over the next block (~5 ms of a ~200 ms full block, measured
//! with `perf sched` on the bench chain: ~6 % of two cores idle). With the
//! next block's job already queued, a thread that runs out of work takes it
//! at once.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

/// Blocks whose scripts may be queued or checked while the next block
/// connects.
pub const SCRIPT_PIPELINE_BLOCKS: usize = 2;

use ibex_script::VerifyFlags;

use super::{ChainEvent, Chainstate};
use crate::connect::{rollback, ConnectedBlock};
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::prepared::PreparedBlock;
use crate::scripts::{verify_block_scripts, ScriptCheckBroken, ScriptCheckError};

/// What the script threads need of a block: owned, shared with the job.
#[derive(Debug)]
pub(crate) struct ScriptJob {
    pub(crate) block: PreparedBlock,
    pub(crate) connected: ConnectedBlock,
}

/// A connected block whose scripts are queued or being checked.
#[derive(Debug)]
pub(crate) struct PendingBlock {
    pub(crate) id: EntryId,
    pub(crate) job: Arc<ScriptJob>,
    /// `None` when no scripts are checked (the verdict is known: valid).
    pub(crate) verdict: Option<Receiver<Result<u64, ScriptCheckError>>>,
}

impl Chainstate {
    /// Starts checking `job`'s scripts (if `flags` is `Some`) and adds it
    /// as the newest pending block.
    pub(crate) fn start_pending(
        &mut self,
        id: EntryId,
        job: ScriptJob,
        flags: Option<VerifyFlags>,
    ) {
        let job = Arc::new(job);
        let verdict = flags.map(|flags| {
            let (sender, receiver) = sync_channel(1);
            let shared = job.clone();
            let threads = self.scripts.clone();
            self.scripts.spawn(move || {
                let result = verify_block_scripts(
                    shared.block.view(),
                    shared.block.txids(),
                    &shared.connected.undo,
                    flags,
                    &threads,
                );
                let _ = sender.send(result);
            });
            receiver
        });
        self.pending.push_back(PendingBlock { id, job, verdict });
    }

    /// Settles pending blocks, oldest first, until at most `left` remain.
    /// False when one failed (then it and every block above it were rolled
    /// back, and it was marked invalid).
    pub(crate) fn settle_pending_to(&mut self, left: usize) -> Result<bool, ChainstateError> {
        while self.pending.len() > left {
            if !self.settle_oldest()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Settles every pending block; false when one failed.
    pub(crate) fn settle_pending(&mut self) -> Result<bool, ChainstateError> {
        self.settle_pending_to(0)
    }

    /// Waits for the oldest pending block's verdict and finishes it: undo
    /// data, validity, tip announcement. On a script failure, rolls back
    /// the pending blocks above it (newest first) and it, and marks it
    /// invalid. True when it was valid.
    fn settle_oldest(&mut self) -> Result<bool, ChainstateError> {
        let Some(pending) = self.pending.pop_front() else { return Ok(true) };
        let verdict = match &pending.verdict {
            None => Ok(0),
            // A verdict that never comes is not a pass.
            Some(receiver) => receiver
                .recv()
                .unwrap_or(Err(ScriptCheckError::Broken(ScriptCheckBroken::VerdictLost))),
        };
        match verdict {
            Ok(scripts_checked) => {
                self.finalize_connected(pending.id, &pending.job, scripts_checked)?;
                Ok(true)
            }
            Err(ScriptCheckError::Broken(reason)) => {
                // Neither valid nor invalid: stop. The block stays
                // unverified (no undo data, no tip announcement, nothing
                // flushed: every flush settles first).
                let hash = self.index.entry(pending.id).hash;
                Err(ChainstateError::ScriptCheckBroken { hash, reason })
            }
            Err(ScriptCheckError::Rejected(rejection)) => {
                // Their scripts may still be running: only their shared
                // copies are read there, so rolling back is safe.
                while let Some(above) = self.pending.pop_back() {
                    self.roll_back_connected(&above.job.block, &above.job.connected)?;
                }
                self.roll_back_connected(&pending.job.block, &pending.job.connected)?;
                self.connect_failed(pending.id, rejection);
                Ok(false)
            }
        }
    }

    /// Undoes a connected block's coins and takes it off the chain.
    fn roll_back_connected(
        &mut self,
        block: &PreparedBlock,
        connected: &ConnectedBlock,
    ) -> Result<(), ChainstateError> {
        let view = block.view();
        let transaction_count = view.transaction_count();
        rollback(&mut self.cache, view, block.txids(), &connected.undo, transaction_count)?;
        self.chain.pop();
        Ok(())
    }

    /// Writes a verified block's undo data, raises its validity and
    /// announces it.
    pub(crate) fn finalize_connected(
        &mut self,
        id: EntryId,
        job: &ScriptJob,
        scripts_checked: u64,
    ) -> Result<(), ChainstateError> {
        self.write_undo(id, &job.connected)?;
        self.index.entry_mut(id).status.raise_validity(BlockStatus::VALID_SCRIPTS);
        self.statistics.blocks_connected += 1;
        self.statistics.transactions_connected += job.block.txids().len() as u64;
        self.statistics.inputs_connected += job.connected.input_count;
        self.statistics.scripts_checked += scripts_checked;
        let update = self.tip_update_for(id, job.block.input_count());
        self.emit(ChainEvent::TipUpdated(update));
        Ok(())
    }

    /// Settles the pending blocks, if any; true when the chain is unchanged
    /// by them (they were valid or there were none).
    pub fn settle(&mut self) -> Result<bool, ChainstateError> {
        self.settle_pending()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::mpsc::sync_channel;

    use super::*;
    use crate::test_chain::{accept, chain_and_chainstate};

    #[test]
    fn a_lost_verdict_is_an_error_not_a_valid_block() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = chain_and_chainstate(root.path());
        for bytes in &blocks {
            accept(&mut chainstate, bytes);
            chainstate.advance_best_chain().unwrap();
        }
        assert!(!chainstate.pending.is_empty());
        // The script job's sender is gone before it answered.
        let (sender, receiver) = sync_channel(1);
        drop(sender);
        let oldest = chainstate.pending.front_mut().unwrap();
        oldest.verdict = Some(receiver);
        let id = oldest.id;
        let hash = chainstate.index.entry(id).hash;
        let error = chainstate.settle().unwrap_err();
        assert!(
            matches!(
                error,
                ChainstateError::ScriptCheckBroken { hash: failed, reason: ScriptCheckBroken::VerdictLost }
                    if failed == hash
            ),
            "{error}"
        );
        // Neither valid nor invalid: no undo data, scripts not marked checked.
        let entry = chainstate.index.entry(id);
        assert!(entry.undo_position.is_none());
        assert!(!entry.status.is_valid(BlockStatus::VALID_SCRIPTS));
        assert!(!entry.status.is_failed());
    }
}
