//! An operator's verdicts on a block: `invalidateblock` and
//! `reconsiderblock` (Core's `Chainstate::InvalidateBlock` and
//! `ResetBlockFailureFlags`, each followed by `ActivateBestChain`).
//!
//! [`Chainstate::invalidate_block`] marks a block failed (itself
//! [`BlockStatus::FAILED_VALID`](crate::BlockStatus::FAILED_VALID), every
//! descendant [`BlockStatus::FAILED_CHILD`](crate::BlockStatus::FAILED_CHILD),
//! on the active chain or not), disconnects the active chain down to its
//! parent if it is on it, puts back as candidates every usable block that
//! could beat the new tip (they may have been pruned against the old one),
//! and activates the best chain left: the parent, or a competing branch
//! with more work. [`Chainstate::reconsider_block`] clears the marks of the
//! block, its descendants and its ancestors, makes those better than the
//! tip candidates again and activates the best chain.
//!
//! # Crash safety
//! Pending verdicts are settled first, so only verified blocks are
//! disconnected, with their undo data (the one undo path,
//! [`crate::disconnect`]). The marks are written to the block index
//! database (synced) *before* any coin moves: a crash at any later moment
//! restarts with the marks and the coins at their last flushed tip, and
//! activation at startup disconnects a marked tip as it would any block
//! that is not the best candidate. A crash before that write loses the
//! verdict and nothing else. Core writes the marks at its next flush; Ibex
//! writes them at once so an `invalidateblock` answered survives a crash.
//!
//! # Cost
//! One pass over the index to mark (or clear) and one to restore the
//! candidates (~900k entries on mainnet: milliseconds), then one disconnect
//! per block above the invalidated one (each a block and an undo read).

use ibex_primitives::BlockHash;

use super::{ChainEvent, Chainstate};
use crate::error::ChainstateError;

/// Why `invalidateblock` or `reconsiderblock` did nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChainControlError {
    /// The block is not in the block index (Core's "Block not found").
    #[error("block {hash} is not in the block index")]
    UnknownBlock {
        /// The hash asked for.
        hash: BlockHash,
    },
    /// The genesis block cannot be invalidated (Core refuses it silently).
    #[error("the genesis block {hash} cannot be invalidated")]
    GenesisBlock {
        /// The genesis block's hash.
        hash: BlockHash,
    },
    /// The block is on the active chain at or below a block connected
    /// without undo data (a SwiftSync sync's terminal block, or a
    /// snapshot's base): the chain cannot be rolled back past it.
    #[error("block {hash} at height {height} cannot be disconnected: the block at height {without_undo_height} has no undo data")]
    NoUndoData {
        /// The block asked for.
        hash: BlockHash,
        /// Its height.
        height: u32,
        /// The highest block of the way down without undo data.
        without_undo_height: u32,
    },
    /// The engine failed while changing the chain; it stops with this
    /// error.
    #[error(transparent)]
    Chainstate(#[from] ChainstateError),
    /// The engine failed while changing the chain and stopped (the answer
    /// through the engine service: the error itself ends the service and
    /// goes to the node's log).
    #[error("the chain engine failed and stopped")]
    EngineStopped,
}

impl Chainstate {
    /// Marks block `hash` invalid with its descendants, disconnects the
    /// active chain down to its parent if the block is on it, and activates
    /// the best valid chain left (see the module docs). The marks are
    /// durable before any coin moves.
    pub fn invalidate_block(&mut self, hash: &BlockHash) -> Result<(), ChainControlError> {
        let id =
            self.shared.index.get(hash).ok_or(ChainControlError::UnknownBlock { hash: *hash })?;
        let height = self.shared.index.entry(id).height;
        if self.shared.index.entry(id).parent.is_none() {
            return Err(ChainControlError::GenesisBlock { hash: *hash });
        }
        // Only settled blocks are disconnected; a pending one that fails is
        // marked (and rolled back) by its own verdict first.
        self.settle_pending()?;
        if let Some(without_undo_height) = self.highest_without_undo_down_to(id, height) {
            return Err(ChainControlError::NoUndoData { hash: *hash, height, without_undo_height });
        }
        let candidates = &mut self.active.candidates;
        self.shared.selection.mark_invalid(&mut self.shared.index, candidates, id);
        self.shared.persistence.write_index(&mut self.shared.index)?;
        let mut disconnected_count = 0u32;
        while self.active.chain.contains(id, height) {
            self.active.disconnect_tip(&mut self.shared)?;
            disconnected_count += 1;
            // A deep invalidation keeps readers answered between blocks
            // (nothing is pending: they see each settled step).
            self.serve_reads()?;
        }
        self.restore_candidates();
        self.emit(ChainEvent::BlockInvalidated { hash: *hash, height, disconnected_count });
        self.publish(self.active.chain.tip());
        self.activate_best_chain()?;
        Ok(())
    }

    /// The highest block of the active chain from its tip down to `id` (at
    /// `height`) that has no undo data, when `id` is on it.
    fn highest_without_undo_down_to(&self, id: crate::EntryId, height: u32) -> Option<u32> {
        if !self.active.chain.contains(id, height) {
            return None;
        }
        let tip_height = self.active.chain.height()?;
        (height..=tip_height).rev().find(|&at| {
            self.active
                .chain
                .at(at)
                .is_some_and(|block| self.shared.index.entry(block).undo_position.is_none())
        })
    }

    /// Clears the failure marks of block `hash`, its descendants and its
    /// ancestors, makes those better than the tip candidates again, and
    /// activates the best valid chain (Core's `reconsiderblock`). The
    /// cleared marks are durable before any coin moves.
    pub fn reconsider_block(&mut self, hash: &BlockHash) -> Result<(), ChainControlError> {
        let id =
            self.shared.index.get(hash).ok_or(ChainControlError::UnknownBlock { hash: *hash })?;
        let height = self.shared.index.entry(id).height;
        self.settle_pending()?;
        let cleared = self.shared.index.reset_failure_flags(id);
        let tip = self.active.chain.tip();
        let candidates = &mut self.active.candidates;
        self.shared.selection.reconsider(&self.shared.index, candidates, &cleared, tip);
        self.shared.persistence.write_index(&mut self.shared.index)?;
        let cleared_count = cleared.len();
        self.emit(ChainEvent::BlockReconsidered { hash: *hash, height, cleared_count });
        self.publish(self.active.chain.tip());
        self.activate_best_chain()?;
        Ok(())
    }

    /// Makes every usable block a candidate again and drops those worse
    /// than the tip (Core's last pass of `InvalidateBlock`): blocks pruned
    /// against a tip that is gone may beat the new one.
    fn restore_candidates(&mut self) {
        self.active.candidates.insert_from_index(&self.shared.index);
        self.active.prune_candidates(&self.shared.index);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::index::BlockStatus;
    use crate::test_chain::accepted_chain;

    #[test]
    fn invalidating_then_reconsidering_moves_the_tip_down_and_back() {
        let root = tempfile::tempdir().unwrap();
        let (_, mut chainstate) = accepted_chain(root.path());
        chainstate.activate_best_chain().unwrap();
        let (tip, tip_height) = chainstate.tip().unwrap();
        assert!(tip_height >= 3, "the test chain is too short");
        let middle_height = tip_height / 2 + 1;
        let above: Vec<_> = (middle_height..=tip_height)
            .map(|at| chainstate.active.chain.at(at).unwrap())
            .collect();
        let middle = chainstate.shared.index.entry(above[0]).hash;
        let parent = chainstate.active.chain.at(middle_height - 1).unwrap();

        chainstate.invalidate_block(&middle).unwrap();
        assert_eq!(chainstate.active.chain.tip(), Some(parent));
        let statuses: Vec<BlockStatus> =
            above.iter().map(|&id| chainstate.shared.index.entry(id).status).collect();
        assert!(statuses[0].has(BlockStatus::FAILED_VALID));
        assert!(statuses[1..].iter().all(|status| status.has(BlockStatus::FAILED_CHILD)));
        assert_eq!(chainstate.active.candidates.best(), Some(parent));
        assert_eq!(chainstate.best_header(), Some(chainstate.shared.index.entry(parent).hash));

        chainstate.reconsider_block(&middle).unwrap();
        assert_eq!(chainstate.tip(), Some((tip, tip_height)));
        assert!(above.iter().all(|&id| !chainstate.shared.index.entry(id).status.is_failed()));
        assert_eq!(chainstate.best_header(), Some(tip));
    }
}
