//! Settling script verdicts, oldest pending block first (the engine's side
//! of the script stage, [`crate::stages::script_queue`], whose docs say why
//! scripts overlap the next blocks).
//!
//! A block's undo data is written and its tip announced only once its
//! verdict is in; until then nothing is flushed and nothing disconnected
//! (every flush and every disconnect settles all pending blocks first). If
//! block N's scripts fail, every block connected on top of it is rolled
//! back with its in-memory undo data, newest first, then N, and N is marked
//! invalid (with those descendants), so the result is exactly that of
//! checking N before connecting N+1.

use super::{Chainstate, CoinsChain, Shared};
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::scripts::ScriptCheckError;
use crate::stages::script_queue::{PendingBlock, ScriptJob};

impl Chainstate {
    /// Settles the pending blocks, if any; true when the chain is unchanged
    /// by them (they were valid or there were none).
    pub fn settle(&mut self) -> Result<bool, ChainstateError> {
        self.settle_pending()
    }

    /// Settles every pending block of the active chainstate; false when
    /// one failed.
    pub(crate) fn settle_pending(&mut self) -> Result<bool, ChainstateError> {
        self.active.settle_pending(&mut self.shared)
    }
}

impl CoinsChain {
    /// Settles pending blocks, oldest first, until at most `left` remain.
    /// False when one failed (then it and every block above it were rolled
    /// back, and it was marked invalid).
    pub(crate) fn settle_pending_to(
        &mut self,
        shared: &mut Shared,
        left: usize,
    ) -> Result<bool, ChainstateError> {
        while self.scripts.len() > left {
            if !self.settle_oldest(shared)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Settles every pending block; false when one failed.
    pub(crate) fn settle_pending(&mut self, shared: &mut Shared) -> Result<bool, ChainstateError> {
        self.settle_pending_to(shared, 0)
    }

    /// Waits for the oldest pending block's verdict and finishes it: undo
    /// data, validity, tip announcement. On a script failure, rolls back
    /// the pending blocks above it (newest first) and it, and marks it
    /// invalid. True when it was valid.
    fn settle_oldest(&mut self, shared: &mut Shared) -> Result<bool, ChainstateError> {
        let Some((pending, verdict)) = self.scripts.next_verdict() else { return Ok(true) };
        match verdict {
            Ok(scripts_checked) => {
                self.finalize_connected(shared, pending.id, &pending.job, scripts_checked)?;
                Ok(true)
            }
            Err(ScriptCheckError::Broken(reason)) => {
                // Neither valid nor invalid: stop. The block stays
                // unverified (no undo data, no tip announcement, nothing
                // flushed: every flush settles first).
                let hash = shared.index.entry(pending.id).hash;
                Err(ChainstateError::ScriptCheckBroken { hash, reason })
            }
            Err(ScriptCheckError::Rejected(rejection)) => {
                // Their scripts may still be running: only their shared
                // copies are read there, so rolling back is safe.
                while let Some(above) = self.scripts.take_newest() {
                    self.roll_back_connected(shared, &above)?;
                }
                self.roll_back_connected(shared, &pending)?;
                self.connect_failed(shared, pending.id, rejection);
                Ok(false)
            }
        }
    }

    /// Undoes a connected block's coins and takes it off the chain.
    fn roll_back_connected(
        &mut self,
        shared: &Shared,
        pending: &PendingBlock,
    ) -> Result<(), ChainstateError> {
        let height = shared.index.entry(pending.id).height;
        self.connector.roll_back(&pending.job.block, &pending.job.connected, height)?;
        // Pending blocks are the chain's top, newest last.
        assert_eq!(self.chain.tip(), Some(pending.id), "rolled back block is not the tip");
        self.chain.pop();
        Ok(())
    }

    /// Writes a verified block's undo data, raises its validity and
    /// announces it.
    pub(crate) fn finalize_connected(
        &mut self,
        shared: &mut Shared,
        id: EntryId,
        job: &ScriptJob,
        scripts_checked: u64,
    ) -> Result<(), ChainstateError> {
        shared.write_undo(id, &job.connected)?;
        shared.index.entry_mut(id).status.raise_validity(BlockStatus::VALID_SCRIPTS);
        let statistics = &mut shared.statistics;
        statistics.blocks_connected += 1;
        statistics.transactions_connected += job.block.txids().len() as u64;
        statistics.inputs_connected += job.connected.input_count;
        statistics.coin_reads += &job.connected.coin_reads;
        statistics.scripts_checked += scripts_checked;
        self.announce_tip(shared, id, job.block.input_count());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::mpsc::sync_channel;

    use super::*;
    use crate::scripts::ScriptCheckBroken;
    use crate::test_chain::{accept, chain_and_chainstate};

    #[test]
    fn a_lost_verdict_is_an_error_not_a_valid_block() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = chain_and_chainstate(root.path());
        for bytes in &blocks {
            accept(&mut chainstate, bytes);
            chainstate.advance_best_chain().unwrap();
        }
        assert!(!chainstate.active.scripts.is_empty());
        // The script job's sender is gone before it answered.
        let (sender, receiver) = sync_channel(1);
        drop(sender);
        let oldest = chainstate.active.scripts.oldest_mut().unwrap();
        oldest.verdict = Some(receiver);
        let id = oldest.id;
        let hash = chainstate.shared.index.entry(id).hash;
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
        let entry = chainstate.shared.index.entry(id);
        assert!(entry.undo_position.is_none());
        assert!(!entry.status.is_valid(BlockStatus::VALID_SCRIPTS));
        assert!(!entry.status.is_failed());
    }
}
