//! The fixed point of chain activation, stated and enforced: no block that
//! has its data, is not marked invalid and has more work than the tip may
//! be left untried at the end of an import, after a failure, or at startup.
//!
//! Core reaches it in `ActivateBestChain`, which goes on with the next
//! most-work candidate after each `InvalidChainFound` until none with more
//! work than the tip is left. [`Chainstate::check_best_candidate`] scans the
//! whole index (not the candidate set, which is what a bug would get wrong)
//! for such a block and says why it was left: `-stopatheight`, missing data
//! below it, scripts still pending, or nothing (a broken invariant).
//! [`Chainstate::activate_to_fixed_point`] activates, checks, and on a
//! broken invariant rebuilds the candidate set from the index and activates
//! again; if a block is still left untried it is an error, never a pass.
//!
//! # Cost
//! One pass over the index: ~900k entries on mainnet, a few milliseconds.
//! It runs once per import and once per start, never per block.

use ibex_primitives::{BlockHash, ChainWork};

use super::Chainstate;
pub use crate::error::CandidateLeft;
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};

/// What the fixed-point check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BestCandidateCheck {
    /// No block with data and not marked invalid has more work than the
    /// tip (`None`: no tip, and no block with data at all).
    Reached {
        /// The tip's hash and height.
        tip: Option<(BlockHash, u32)>,
    },
    /// The most-work such block, and why it is not the tip.
    Left {
        /// The block left.
        hash: BlockHash,
        /// Its height.
        height: u32,
        /// Why it was left.
        reason: CandidateLeft,
    },
}

impl BestCandidateCheck {
    /// Whether activation left nothing it should have tried.
    pub fn is_fixed_point(&self) -> bool {
        match self {
            BestCandidateCheck::Reached { .. } => true,
            BestCandidateCheck::Left { reason, .. } => {
                matches!(
                    reason,
                    CandidateLeft::StopHeight { .. } | CandidateLeft::MissingAncestorData { .. }
                )
            }
        }
    }
}

impl std::fmt::Display for BestCandidateCheck {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BestCandidateCheck::Reached { tip: Some((hash, height)) } => {
                write!(formatter, "best valid candidate reached: height={height} best={hash}")
            }
            BestCandidateCheck::Reached { tip: None } => {
                write!(formatter, "best valid candidate reached: no block to connect")
            }
            BestCandidateCheck::Left { hash, height, reason } => write!(
                formatter,
                "block {hash} at height {height} has more work than the tip and was left: {reason}"
            ),
        }
    }
}

impl Chainstate {
    /// Scans the index for the most-work block with data, not marked
    /// invalid, with more work than the tip, and says why it is not the
    /// tip (see the module docs).
    pub fn check_best_candidate(&self) -> BestCandidateCheck {
        let tip_work = self.active.chain.tip().map(|tip| self.shared.index.entry(tip).chain_work);
        let Some(best) = self.best_block_with_data(tip_work) else {
            return BestCandidateCheck::Reached { tip: self.tip() };
        };
        let entry = self.shared.index.entry(best);
        let reason = if let Some((hash, height)) = self.missing_ancestor_data(best) {
            CandidateLeft::MissingAncestorData { hash, height }
        } else if let Some(stop_height) =
            self.shared.options.stop_at_height.filter(|_| self.reached_stop_height())
        {
            CandidateLeft::StopHeight { stop_height }
        } else if !self.active.scripts.is_empty() {
            CandidateLeft::ScriptsPending
        } else {
            CandidateLeft::NotTried
        };
        BestCandidateCheck::Left { hash: entry.hash, height: entry.height, reason }
    }

    /// Activates the best chain to its fixed point and checks it. A block
    /// left untried (a broken invariant of the candidate set) makes it
    /// rebuild the candidates from the index and activate once more; if one
    /// is still left, that is [`ChainstateError::ActivationIncomplete`].
    /// Returns the check and how many candidates the rebuild added.
    pub fn activate_to_fixed_point(
        &mut self,
    ) -> Result<(BestCandidateCheck, usize), ChainstateError> {
        self.activate_best_chain()?;
        let check = self.check_best_candidate();
        // A SwiftSync plan holds the blocks back until all of them are
        // stored: not a fixed point yet, and nothing is wrong.
        if check.is_fixed_point() || self.swiftsync_pending() {
            return Ok((check, 0));
        }
        // Count only what chain selection can use: candidates better than
        // the tip (the rest are pruned again at once).
        let index = &self.shared.index;
        self.active.prune_candidates(index);
        let before = self.active.candidates.count();
        self.active.candidates.insert_from_index(index);
        self.active.prune_candidates(index);
        let restored = self.active.candidates.count().saturating_sub(before);
        self.activate_best_chain()?;
        let check = self.check_best_candidate();
        match check {
            BestCandidateCheck::Left { hash, height, reason } if !check.is_fixed_point() => {
                Err(ChainstateError::ActivationIncomplete { hash, height, reason })
            }
            _ => Ok((check, restored)),
        }
    }

    /// The most-work block with data, not marked invalid, with more work
    /// than `tip_work`; on equal work the first met (Core's order).
    fn best_block_with_data(&self, tip_work: Option<ChainWork>) -> Option<EntryId> {
        self.shared
            .index
            .ids()
            .filter(|&id| {
                let entry = self.shared.index.entry(id);
                entry.status.has(BlockStatus::HAVE_DATA)
                    && !entry.status.is_failed()
                    && tip_work.is_none_or(|work| entry.chain_work > work)
            })
            .max_by_key(|&id| {
                let entry = self.shared.index.entry(id);
                (entry.chain_work, std::cmp::Reverse(entry.sequence), std::cmp::Reverse(id))
            })
    }

    /// The lowest ancestor of `id` (itself included) above the active chain
    /// whose block data is missing, if any.
    fn missing_ancestor_data(&self, id: EntryId) -> Option<(BlockHash, u32)> {
        let mut lowest = None;
        let mut current = Some(id);
        while let Some(at) = current {
            let entry = self.shared.index.entry(at);
            // Chain data (a chain transaction count) means every ancestor
            // has its data.
            if entry.has_chain_data() {
                break;
            }
            if !entry.status.has(BlockStatus::HAVE_DATA) {
                lowest = Some((entry.hash, entry.height));
            }
            current = entry.parent;
        }
        lowest
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ibex_primitives::{BlockView, Header};

    use super::*;
    use crate::test_chain::{accept, accepted_chain, chain_and_chainstate};

    fn hash_of(bytes: &[u8]) -> BlockHash {
        BlockView::parse(bytes).unwrap().header().block_hash()
    }

    #[test]
    fn lost_candidates_are_found_in_the_index_and_connected() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = accepted_chain(root.path());
        // What a bug in the candidate set would leave: blocks with data
        // that chain selection no longer sees.
        chainstate.active.candidates.clear();
        let check = chainstate.check_best_candidate();
        let top = hash_of(&blocks[5]);
        assert_eq!(
            check,
            BestCandidateCheck::Left { hash: top, height: 5, reason: CandidateLeft::NotTried }
        );
        assert!(!check.is_fixed_point());
        let (check, restored) = chainstate.activate_to_fixed_point().unwrap();
        assert_eq!(restored, 6);
        assert_eq!(check, BestCandidateCheck::Reached { tip: Some((top, 5)) });
        assert_eq!(chainstate.tip(), Some((top, 5)));
    }

    #[test]
    fn a_block_left_for_missing_data_or_the_stop_height_says_why() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = chain_and_chainstate(root.path());
        let headers: Vec<Header> =
            blocks.iter().map(|bytes| *BlockView::parse(bytes).unwrap().header()).collect();
        chainstate.accept_headers(&headers).unwrap();
        chainstate.set_stop_at_height(Some(1));
        for bytes in &blocks[..3] {
            accept(&mut chainstate, bytes);
        }
        let (check, _) = chainstate.activate_to_fixed_point().unwrap();
        let stopped = CandidateLeft::StopHeight { stop_height: 1 };
        assert_eq!(
            check,
            BestCandidateCheck::Left { hash: hash_of(&blocks[2]), height: 2, reason: stopped }
        );
        assert!(check.is_fixed_point());
        chainstate.set_stop_at_height(None);
        // Block 3 never arrives: 4 and 5 wait for it.
        for bytes in &blocks[4..] {
            accept(&mut chainstate, bytes);
        }
        let (check, _) = chainstate.activate_to_fixed_point().unwrap();
        let missing = CandidateLeft::MissingAncestorData { hash: hash_of(&blocks[3]), height: 3 };
        assert_eq!(
            check,
            BestCandidateCheck::Left { hash: hash_of(&blocks[5]), height: 5, reason: missing }
        );
        assert!(check.is_fixed_point());
        assert_eq!(chainstate.tip().map(|(_, height)| height), Some(2));
        assert!(check.to_string().contains("at height 3 is missing"), "{check}");
    }
}
