//! Core's `IsBlockMutated` on a peer's block before it reaches the engine
//! (its `block` handler, net_processing.cpp): a block whose transactions
//! may be a mangled copy of its header's block (a bad or malleated merkle
//! root, a 64-byte "transaction" standing for an inner merkle node in a
//! block without a coinbase, a stripped or altered witness) says nothing
//! about the header. Its sender is punished ("mutated block"), the request
//! is released so another peer is asked for the block, and nothing is
//! offered or marked: a mutated copy never condemns a valid block.
//!
//! Cost: the merkle part reuses the `CheckBlock` verdict computed at parse
//! (its merkle root is checked there unless the proof of work or the signet
//! solution failed first); the witness part hashes every transaction with
//! its witness (~1 ms for a full block with SHA-NI) on the sync loop's
//! thread, and a match is recorded on the block
//! (`PreparedBlock::witness_checked`, Core's `m_checked_witness_commitment`)
//! so the engine does not hash the witnesses again.

use std::time::Instant;

use ibex_chainstate::PreparedBlock;
use ibex_consensus::{merkle_mutation, mutation_after_merkle, BlockError, BlockMutation};
use ibex_p2p::sync::{Misbehavior, PeerId};
use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::BlockHash;

use super::SyncLoop;

impl SyncLoop {
    /// `Some` when `block`, at `height` (its parent indexed), is mutated;
    /// otherwise a witness commitment checked with segwit active is
    /// recorded on the block.
    pub(super) fn mutation(&self, block: &mut PreparedBlock, height: u32) -> Option<BlockMutation> {
        let merkle = match block.check {
            Err(error @ (BlockError::BadMerkleRoot | BlockError::DuplicateTransactions)) => {
                return Some(BlockMutation::Merkle(error));
            }
            // `CheckBlock` stopped before its merkle check.
            Err(BlockError::HighHash | BlockError::BadSignetSolution(_)) => {
                merkle_mutation(block.view(), block.txids())
            }
            // Passed, or failed after the merkle root was found right.
            _ => None,
        };
        let segwit = self.params.deployment_active_at(BuriedDeployment::Segwit, height.into());
        let mutation = merkle.or_else(|| mutation_after_merkle(block.view(), segwit));
        // Recorded only for a block that passed `CheckBlock` (a coinbase
        // first, so the commitment was read): the engine skips its own
        // check on this word alone.
        block.witness_checked = mutation.is_none() && segwit && block.check.is_ok();
        mutation
    }

    /// Punishes `peer` for a mutated `hash` and asks another peer for it.
    pub(super) fn on_mutated_block(
        &mut self,
        peer: PeerId,
        hash: BlockHash,
        mutation: BlockMutation,
    ) {
        self.logger.log(&format!("Received mutated block from peer={}: {mutation}", peer.0));
        self.misbehaving(peer, Misbehavior::MutatedBlock { hash });
        self.download.forget_block(&hash, Instant::now());
        self.download_due = true;
    }
}
