//! Accepting a block into the index (Core's `ProcessNewBlock`,
//! `AcceptBlockHeader` and `AcceptBlock`): proof of work, the header's
//! context, `CheckBlock`, `ContextualCheckBlock`, storing the data, and
//! linking it so that chain selection sees it.
//!
//! # Where a block is marked failed
//! A failed mark is forever (until `reconsiderblock`): the block is refused
//! as `duplicate-invalid` whoever sends it again. So a block is marked only
//! where Core marks it, and never on evidence a peer could have forged by
//! mangling a valid block's transactions:
//!
//! | where in Ibex | what fails | Core's line it mirrors |
//! |---|---|---|
//! | [`Chainstate::accept_block`] (`reject` with the new entry), blocks read from files (`-reindex`, `-loadblock`) | `CheckBlock` (signet solution included) and `ContextualCheckBlock`, except the mutations (`bad-txnmrklroot`, `bad-txns-duplicate`, `bad-witness-nonce-size`, `bad-witness-merkle-match`, `unexpected-witness`) | `AcceptBlock`: `InvalidBlockFound`, which skips `BLOCK_MUTATED` (`LoadExternalBlockFile` calls `AcceptBlock` without `CheckBlock` first) |
//! | [`Chainstate::accept_block`], blocks from peers and `submitblock` once `CheckBlock` passed | `ContextualCheckBlock` (`bad-txns-nonfinal`, `bad-cb-height`, `bad-blk-weight`), mutations excepted | the same `AcceptBlock` call, reached from `ProcessNewBlock` |
//! | `connect_failed` (`engine/activate.rs`) | a rule found while connecting: inputs, BIP30, fees, scripts, sigops, the coinbase amount | `ConnectTip` → `InvalidBlockFound` after `ConnectBlock` fails (`BLOCK_CONSENSUS`) |
//! | `invalidate_block` (`engine/invalidate.rs`) | an operator's `invalidateblock` | `Chainstate::InvalidateBlock` |
//! | a header indexed under a failed parent inherits failed-child (`BlockStatus::new_header`) | | `AddToBlockIndex` and `InvalidChainFound`'s descendants |
//!
//! Never marked:
//! - a block from a peer or `submitblock` that fails `CheckBlock`
//!   ([`Chainstate::process_new_block`]): Core's `ProcessNewBlock` runs
//!   `CheckBlock` before `AcceptBlock` and returns on failure without
//!   touching the index, because a mangled copy (CVE-2012-2459, the 64-byte
//!   transaction weakness of the merkle tree, a stripped witness) fails it
//!   too; the sender is punished by the node (`MaybePunishNodeForBlock`)
//!   and the block is fetched again from another peer. The node also runs
//!   Core's `IsBlockMutated` before a peer's block reaches the engine;
//! - a header that fails its checks (`high-hash`, `bad-diffbits`,
//!   `time-too-old`, `time-too-new`, `bad-version`, `bad-prevblk`): it is
//!   not indexed at all (`AcceptBlockHeader` returns before
//!   `AddToBlockIndex`).

use ibex_consensus::BlockError;
use ibex_primitives::{BlockHash, Header};

use super::{ChainEvent, Chainstate};
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::prepared::PreparedBlock;
use crate::stages::headers::{check_block_context, check_header_context};
use ibex_consensus::BlockRejection;

/// What became of an offered block.
#[derive(Debug)]
pub enum AcceptOutcome {
    /// Indexed with its data.
    Accepted(EntryId),
    /// Already indexed with data.
    AlreadyKnown(EntryId),
    /// Its parent is not indexed yet: offer it again once the parent is.
    UnknownParent(Box<PreparedBlock>),
    /// It breaks a rule (logged; marked invalid unless possibly mutated).
    Invalid(BlockRejection),
}

impl Chainstate {
    /// A block from a peer or a local submission (Core's `ProcessNewBlock`):
    /// `CheckBlock` first, and a failure there is reported without indexing
    /// or marking anything (see the module docs); then
    /// [`Chainstate::accept_block`].
    pub fn process_new_block(
        &mut self,
        block: PreparedBlock,
    ) -> Result<AcceptOutcome, ChainstateError> {
        if let Err(error) = block.check {
            return Ok(self.reject(&block, None, error.into()));
        }
        self.accept_block(block)
    }

    /// Indexes `block` and stores its data if it is not in a block file yet
    /// (Core's `AcceptBlock`, as `LoadExternalBlockFile` calls it for blocks
    /// read from files: a `CheckBlock` failure marks the block unless it may
    /// be a mutation).
    pub fn accept_block(&mut self, block: PreparedBlock) -> Result<AcceptOutcome, ChainstateError> {
        if let Some(id) = self.shared.index.get(&block.hash()) {
            let status = self.shared.index.entry(id).status;
            if status.has(BlockStatus::HAVE_DATA) {
                return Ok(AcceptOutcome::AlreadyKnown(id));
            }
            // Core's AcceptBlockHeader refuses a known header marked failed
            // (itself or an ancestor) before any check.
            if status.is_failed() {
                return Ok(self.reject(&block, Some(id), BlockRejection::DuplicateInvalid));
            }
        }
        let is_genesis = block.hash() == self.shared.options.params.genesis_hash;
        let parent = if is_genesis {
            None
        } else {
            self.shared.index.get(&block.header().previous_block_hash)
        };
        if parent.is_none() && !is_genesis {
            if let Err(error) = &block.check {
                if *error == BlockError::HighHash {
                    return Ok(self.reject(&block, None, BlockRejection::Block(*error)));
                }
            }
            return Ok(AcceptOutcome::UnknownParent(Box::new(block)));
        }
        if let Err(BlockError::HighHash) = block.check {
            return Ok(self.reject(&block, None, BlockRejection::Block(BlockError::HighHash)));
        }
        if let Some(parent) = parent {
            if let Err(error) = self.check_header_context(block.header(), parent) {
                return Ok(self.reject(&block, None, error.into()));
            }
        }
        // Core's AcceptBlockHeader: a child of a failed block is refused
        // (`bad-prevblk`) and not indexed.
        if parent.is_some_and(|parent| self.shared.index.entry(parent).status.is_failed()) {
            return Ok(self.reject(&block, None, BlockRejection::InvalidParent));
        }
        let id = self.shared.index.insert_header(block.header(), block.hash())?;
        self.consider_best_header(id);
        if let Err(error) = block.check {
            return Ok(self.reject(&block, Some(id), error.into()));
        }
        if let Some(parent) = parent {
            let params = &self.shared.options.params;
            let witness_checked = block.witness_checked;
            let context = check_block_context(
                &self.shared.index,
                params,
                block.view(),
                parent,
                witness_checked,
            );
            if let Err(error) = context {
                return Ok(self.reject(&block, Some(id), error.into()));
            }
        }
        self.store_block_data(id, &block)?;
        // A SwiftSync pass takes its blocks as they come, parsed.
        if let Some(block) = self.swiftsync_take(id, block) {
            self.active.connector.keep_recent(id, block);
        }
        Ok(AcceptOutcome::Accepted(id))
    }

    /// `ContextualCheckBlockHeader` against the parent `parent`.
    pub(crate) fn check_header_context(
        &self,
        header: &Header,
        parent: EntryId,
    ) -> Result<(), BlockError> {
        let now = crate::stages::headers::now_seconds(self.shared.mock_time_seconds);
        check_header_context(&self.shared.index, &self.shared.options.params, header, parent, now)
    }

    /// Logs a rejected block and, unless it may be a mutated copy of a valid
    /// one, marks it (indexed as `id`) and its descendants failed.
    fn reject(
        &mut self,
        block: &PreparedBlock,
        id: Option<EntryId>,
        rejection: BlockRejection,
    ) -> AcceptOutcome {
        let marked = id.is_some()
            && !rejection.is_possible_mutation()
            && rejection != BlockRejection::DuplicateInvalid;
        // A block refused before it is indexed is logged at its parent's
        // height plus one where the parent is known.
        let parent = || self.shared.index.get(&block.header().previous_block_hash);
        let height = match id {
            Some(id) => self.shared.index.entry(id).height,
            None => parent().map_or(0, |parent| self.shared.index.entry(parent).height + 1),
        };
        if let (Some(id), true) = (id, marked) {
            self.mark_invalid(id);
        }
        self.emit(ChainEvent::BlockInvalid {
            hash: block.hash(),
            height,
            reason: rejection.reject_reason(),
            marked,
        });
        AcceptOutcome::Invalid(rejection)
    }

    /// Marks `id` failed with its descendants and drops them as the active
    /// chainstate's candidates.
    pub(crate) fn mark_invalid(&mut self, id: EntryId) {
        self.shared.mark_invalid(&mut self.active.candidates, id);
    }

    /// Makes `id` the best header if it has more work than the current one.
    pub(crate) fn consider_best_header(&mut self, id: EntryId) {
        self.shared.selection.consider_header(&self.shared.index, id);
    }

    /// Writes the block to a block file if needed, records its data, and
    /// links it (and any blocks waiting on it) into chain selection: each
    /// chainstate's candidates.
    fn store_block_data(
        &mut self,
        id: EntryId,
        block: &PreparedBlock,
    ) -> Result<(), ChainstateError> {
        let height = self.shared.index.entry(id).height;
        let position = match block.position {
            Some(position) => {
                self.shared.persistence.count_stored_block(position, height);
                position
            }
            None => self.shared.persistence.append_block(block.bytes(), height)?,
        };
        let entry = self.shared.index.entry_mut(id);
        entry.block_position = Some(position);
        entry.transaction_count = u32::try_from(block.txids().len()).unwrap_or(u32::MAX);
        entry.status.set_have_data();
        entry.status.raise_validity(BlockStatus::VALID_TRANSACTIONS);
        let linked = self.shared.selection.block_data_arrived(&mut self.shared.index, id);
        self.make_candidates(&linked);
        Ok(())
    }

    /// Makes the blocks just linked candidates of each chainstate whose
    /// scope admits them (Core's `TryAddBlockIndexCandidate` for each).
    pub(crate) fn make_candidates(&mut self, linked: &[EntryId]) {
        let index = &self.shared.index;
        for &id in linked {
            self.active.candidates.insert(index, id);
            if let Some(background) = self.background.as_mut() {
                background.candidates.insert(index, id);
            }
        }
    }

    /// The hash of the most-work valid header (Core's `m_best_header`).
    pub fn best_header(&self) -> Option<BlockHash> {
        self.shared.selection.best_header().map(|id| self.shared.index.entry(id).hash)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::test_chain::chain_and_chainstate;
    use ibex_primitives::BlockBuffers;

    #[test]
    fn header_times_are_checked_against_the_mock_time() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = chain_and_chainstate(root.path());
        let params = chainstate.params().clone();
        let prepare = |bytes: &[u8]| {
            let mut buffers = BlockBuffers::default();
            PreparedBlock::prepare(bytes.to_vec(), None, &params, &mut buffers).unwrap()
        };
        let genesis_time = i64::from(params.genesis.header.time);
        chainstate.accept_block(prepare(&blocks[0])).unwrap();
        let first = prepare(&blocks[1]);
        let first_hash = first.hash();
        // Three hours before genesis, block 1 is more than two hours ahead.
        chainstate.set_mock_time(Some(genesis_time - 3 * 60 * 60));
        match chainstate.accept_block(first).unwrap() {
            AcceptOutcome::Invalid(BlockRejection::Block(BlockError::TimeTooNew { .. })) => {}
            other => panic!("{other:?}"),
        }
        assert!(chainstate.shared.index.get(&first_hash).is_none(), "not indexed, not marked");
        chainstate.set_mock_time(None);
        let outcome = chainstate.accept_block(prepare(&blocks[1])).unwrap();
        assert!(matches!(outcome, AcceptOutcome::Accepted(_)), "{outcome:?}");
    }
}
