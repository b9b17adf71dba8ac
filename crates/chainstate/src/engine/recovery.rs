//! Repairing the coins after a crash in the middle of a flush (Core's
//! `ReplayBlocks`).
//!
//! The coins database then holds `'H'` = (new tip, old tip) and a mix of
//! both states: some coins as of the old tip, some as of the new. Replaying
//! makes every coin the new tip's: blocks from the old tip back to the fork
//! are disconnected with their undo data (mismatches are expected and
//! tolerated), then blocks from the fork to the new tip are rolled forward
//! (inputs spent if present, outputs written, overwriting). Each step writes
//! final values, so the result is the same whichever coins the interrupted
//! flush had written.

use ibex_primitives::BlockHash;

use super::{ChainEvent, Chainstate};
use crate::coins::cache::FlushMode;
use crate::coins::database::HeadBlocks;
use crate::error::ChainstateError;
use crate::index::EntryId;

impl Chainstate {
    /// Replays an interrupted flush if there was one, then sets the active
    /// chain to the coins' best block.
    pub(crate) fn recover(&mut self) -> Result<(), ChainstateError> {
        let database = self.active.connector.cache().database().clone();
        if let Some(heads) = database.head_blocks()? {
            self.replay(heads)?;
        }
        let tip = match database.best_block()? {
            None => None,
            Some(hash) => Some(
                self.shared.index.get(&hash).ok_or(ChainstateError::UnknownBestBlock { hash })?,
            ),
        };
        self.active.chain.set_tip(&self.shared.index, tip);
        Ok(())
    }

    fn entry_for(&self, hash: &BlockHash) -> Result<EntryId, ChainstateError> {
        self.shared.index.get(hash).ok_or(ChainstateError::UnknownBestBlock { hash: *hash })
    }

    /// Core's `ReplayBlocks`.
    fn replay(&mut self, heads: HeadBlocks) -> Result<(), ChainstateError> {
        let new_tip = self.entry_for(&heads.new_tip)?;
        let old_tip = if heads.old_tip == BlockHash::ZERO {
            None
        } else {
            Some(self.entry_for(&heads.old_tip)?)
        };
        let fork = old_tip.and_then(|old| self.last_common_ancestor(old, new_tip));
        let mut rolled_back = 0;
        let mut walk = old_tip;
        while let Some(id) = walk {
            if Some(id) == fork {
                break;
            }
            self.roll_back(id)?;
            rolled_back += 1;
            walk = self.shared.index.entry(id).parent;
        }
        let start = fork.map_or(0, |id| self.shared.index.entry(id).height + 1);
        let mut rolled_forward = 0;
        for height in start..=self.shared.index.entry(new_tip).height {
            let Some(id) = self.shared.index.ancestor(new_tip, height) else { break };
            self.roll_forward(id)?;
            rolled_forward += 1;
        }
        self.active.connector.cache_mut().flush(heads.new_tip, FlushMode::EmptyCache)?;
        self.emit(ChainEvent::Replayed { rolled_back, rolled_forward });
        Ok(())
    }

    fn last_common_ancestor(&self, first: EntryId, second: EntryId) -> Option<EntryId> {
        let height =
            self.shared.index.entry(first).height.min(self.shared.index.entry(second).height);
        let mut a = self.shared.index.ancestor(first, height)?;
        let mut b = self.shared.index.ancestor(second, height)?;
        while a != b {
            a = self.shared.index.entry(a).parent?;
            b = self.shared.index.entry(b).parent?;
        }
        Some(a)
    }

    /// Disconnects block `id` during replay, tolerating mismatches.
    fn roll_back(&mut self, id: EntryId) -> Result<(), ChainstateError> {
        let entry = self.shared.index.entry(id);
        let height = entry.height;
        if entry.parent.is_none() {
            return Ok(());
        }
        let block = self.load_block(id)?;
        let undo = self.load_undo(id)?;
        self.active.connector.disconnect(&block, &undo, height)?;
        Ok(())
    }

    /// Applies block `id`'s coin changes without checks (Core's `RollforwardBlock`).
    fn roll_forward(&mut self, id: EntryId) -> Result<(), ChainstateError> {
        let entry = self.shared.index.entry(id);
        let height = entry.height;
        if entry.parent.is_none() {
            return Ok(());
        }
        let block = self.load_block(id)?;
        self.active.connector.roll_forward(&block, height)
    }
}
