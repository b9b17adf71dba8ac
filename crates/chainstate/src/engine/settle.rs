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

use super::{ChainEvent, Chainstate};
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::scripts::ScriptCheckError;
use crate::stages::script_queue::{PendingBlock, ScriptJob};

impl Chainstate {
    /// Settles pending blocks, oldest first, until at most `left` remain.
    /// False when one failed (then it and every block above it were rolled
    /// back, and it was marked invalid).
    pub(crate) fn settle_pending_to(&mut self, left: usize) -> Result<bool, ChainstateError> {
        while self.active.scripts.len() > left {
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
        let Some((pending, verdict)) = self.active.scripts.next_verdict() else { return Ok(true) };
        match verdict {
            Ok(scripts_checked) => {
                self.finalize_connected(pending.id, &pending.job, scripts_checked)?;
                Ok(true)
            }
            Err(ScriptCheckError::Broken(reason)) => {
                // Neither valid nor invalid: stop. The block stays
                // unverified (no undo data, no tip announcement, nothing
                // flushed: every flush settles first).
                let hash = self.shared.index.entry(pending.id).hash;
                Err(ChainstateError::ScriptCheckBroken { hash, reason })
            }
            Err(ScriptCheckError::Rejected(rejection)) => {
                // Their scripts may still be running: only their shared
                // copies are read there, so rolling back is safe.
                while let Some(above) = self.active.scripts.take_newest() {
                    self.roll_back_connected(&above)?;
                }
                self.roll_back_connected(&pending)?;
                self.connect_failed(pending.id, rejection);
                Ok(false)
            }
        }
    }

    /// Undoes a connected block's coins and takes it off the chain.
    fn roll_back_connected(&mut self, pending: &PendingBlock) -> Result<(), ChainstateError> {
        let height = self.shared.index.entry(pending.id).height;
        self.active.connector.roll_back(&pending.job.block, &pending.job.connected, height)?;
        // Pending blocks are the chain's top, newest last.
        assert_eq!(self.active.chain.tip(), Some(pending.id), "rolled back block is not the tip");
        self.active.chain.pop();
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
        self.shared.index.entry_mut(id).status.raise_validity(BlockStatus::VALID_SCRIPTS);
        self.shared.statistics.blocks_connected += 1;
        self.shared.statistics.transactions_connected += job.block.txids().len() as u64;
        self.shared.statistics.inputs_connected += job.connected.input_count;
        self.shared.statistics.coin_reads += &job.connected.coin_reads;
        self.shared.statistics.scripts_checked += scripts_checked;
        let update = self.tip_update_for(id, job.block.input_count());
        self.emit(ChainEvent::TipUpdated(update));
        self.publish(Some(id));
        Ok(())
    }

    /// Writes block `id`'s undo data unless it already has some.
    pub(crate) fn write_undo(
        &mut self,
        id: EntryId,
        connected: &crate::connect::ConnectedBlock,
    ) -> Result<(), ChainstateError> {
        let entry = self.shared.index.entry(id);
        if entry.undo_position.is_some() {
            return Ok(());
        }
        let position = self.shared.persistence.append_undo(entry, &connected.undo)?;
        let entry = self.shared.index.entry_mut(id);
        entry.undo_position = Some(position);
        entry.status.set_have_undo();
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
