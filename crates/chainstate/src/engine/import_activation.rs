//! Moving the tip while block files are imported (`-reindex`,
//! `-loadblock`) only as far as Core's import ends up connecting.
//!
//! Core's `LoadExternalBlockFile` (`validation.cpp`) only accepts the
//! blocks it reads (`AcceptBlock`); it activates the genesis block alone,
//! and `ImportBlocks` (`node/blockstorage.cpp`) calls `ActivateBestChains`
//! once every file is read. So Core connects only the chain of the
//! most-work block of all the files: a branch written before the main chain
//! overtook it (a stale block met before its rival, a branch the node that
//! wrote the files reorganised away from) is never connected, and
//! `getchaintips` calls it `valid-headers`, not `valid-fork`.
//!
//! Ibex connects while it reads, so that connecting overlaps reading and
//! preparing, and a block is connected from memory; it indexes every header
//! of the files first, so the end of Core's target is known from the start:
//! the best header (Core's `m_best_header`). Within the stream the tip
//! moves only along the best header's chain, up to its highest block whose
//! chain's data is all here ([`Chainstate::advance_along_best_header`]).
//! Once the files are read, [`Chainstate::activate_best_chain`] does what
//! `ActivateBestChains` does, and only then do other branches compete: when
//! a block of the best header's chain fails, the next best chain is tried
//! as Core's `ActivateBestChain` tries it after `InvalidChainFound`.
//!
//! # Cost
//! Per block offered, a fork search and a skip-list lookup (`ancestor`,
//! O(log n)); per block connected, one more lookup. The same blocks are
//! connected at the same moments as by [`Chainstate::advance_best_chain`]
//! whenever the best candidate is on the best header's chain (every block
//! of a file without branches).

use super::{ChainRole, Chainstate};
use crate::error::ChainstateError;
use crate::index::EntryId;

impl Chainstate {
    /// [`Self::advance_best_chain`] for blocks read from files: connects
    /// towards the highest block of the best header's chain whose chain's
    /// data is all here and none of it marked invalid, never to another
    /// branch (see the module docs). A block found invalid on the way moves
    /// the best header, and the next best header's chain is followed.
    pub(crate) fn advance_along_best_header(&mut self) -> Result<(), ChainstateError> {
        if !self.swiftsync_gate()? {
            return Ok(());
        }
        loop {
            if self.reached_stop_height() || self.interrupted() {
                return Ok(());
            }
            let Some(target) = self.best_header_frontier() else {
                return Ok(());
            };
            if !self.has_more_work_than_tip(target) {
                return Ok(());
            }
            self.activate_step(ChainRole::Active, target)?;
        }
    }

    /// The highest block of the best header's chain above its fork with the
    /// active chain whose chain's data is all here and not marked invalid.
    fn best_header_frontier(&self) -> Option<EntryId> {
        let best_header = self.shared.selection.best_header()?;
        let fork = self.active.chain.find_fork(&self.shared.index, best_header);
        let start_height = fork.map_or(0, |id| self.shared.index.entry(id).height + 1);
        let mut frontier = None;
        for height in start_height..=self.shared.index.entry(best_header).height {
            let Some(id) = self.shared.index.ancestor(best_header, height) else { break };
            let entry = self.shared.index.entry(id);
            // Chain data on a block means every ancestor has its data.
            if !entry.has_chain_data() || entry.status.is_failed() {
                break;
            }
            frontier = Some(id);
        }
        frontier
    }

    /// Whether `id` has more work than the tip: only then does the stream
    /// move to it. A branch with as much work as the tip is left to the
    /// activation at the end, which orders equal work as Core does (the
    /// block whose data came first).
    fn has_more_work_than_tip(&self, id: EntryId) -> bool {
        self.active.chain.tip().is_none_or(|tip| {
            self.shared.index.entry(id).chain_work > self.shared.index.entry(tip).chain_work
        })
    }
}
