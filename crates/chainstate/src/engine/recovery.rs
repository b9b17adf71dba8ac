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

use super::{ChainEvent, CoinsChain, Shared};
use crate::coins::cache::FlushMode;
use crate::coins::database::HeadBlocks;
use crate::error::ChainstateError;
use crate::index::{BlockIndex, EntryId};

impl CoinsChain {
    /// Replays an interrupted flush if there was one, then sets the chain
    /// to the coins' best block.
    pub(crate) fn recover(&mut self, shared: &mut Shared) -> Result<(), ChainstateError> {
        let database = self.connector.cache().database().clone();
        // A checkpoint a shutdown kept stays for the plan to resume from
        // (`crate::swiftsync`'s `checkpoint`); coins staged without one go.
        if let Some(record) = database.staging_record()? {
            if crate::swiftsync::PassCheckpoint::decode(&record).is_some() {
                shared.swiftsync_checkpoint_kept = true;
            } else {
                database.discard_staged()?;
                let event = crate::swiftsync::SwiftSyncEvent::UnfinishedDiscarded;
                shared.emit(ChainEvent::SwiftSync(event));
            }
        }
        if let Some(heads) = database.head_blocks()? {
            self.replay(shared, heads)?;
        }
        let tip = match database.best_block()? {
            None => None,
            Some(hash) => {
                Some(shared.index.get(&hash).ok_or(ChainstateError::UnknownBestBlock { hash })?)
            }
        };
        self.chain.set_tip(&shared.index, tip);
        Ok(())
    }

    /// Core's `ReplayBlocks`.
    fn replay(&mut self, shared: &mut Shared, heads: HeadBlocks) -> Result<(), ChainstateError> {
        let index = &shared.index;
        let new_tip = entry_for(index, &heads.new_tip)?;
        let old_tip = if heads.old_tip == BlockHash::ZERO {
            None
        } else {
            Some(entry_for(index, &heads.old_tip)?)
        };
        let fork = old_tip.and_then(|old| last_common_ancestor(index, old, new_tip));
        let mut rolled_back = 0;
        let mut walk = old_tip;
        while let Some(id) = walk {
            if Some(id) == fork {
                break;
            }
            self.roll_back(shared, id)?;
            rolled_back += 1;
            walk = shared.index.entry(id).parent;
        }
        let start = fork.map_or(0, |id| shared.index.entry(id).height + 1);
        let mut rolled_forward = 0;
        for height in start..=shared.index.entry(new_tip).height {
            let Some(id) = shared.index.ancestor(new_tip, height) else { break };
            self.roll_forward(shared, id)?;
            rolled_forward += 1;
        }
        self.connector.cache_mut().flush(heads.new_tip, FlushMode::EmptyCache)?;
        shared.emit(ChainEvent::Replayed { rolled_back, rolled_forward });
        Ok(())
    }

    /// Disconnects block `id` during replay, tolerating mismatches.
    fn roll_back(&mut self, shared: &Shared, id: EntryId) -> Result<(), ChainstateError> {
        let entry = shared.index.entry(id);
        let height = entry.height;
        if entry.parent.is_none() {
            return Ok(());
        }
        let block = self.load_block(shared, id)?;
        let undo = shared.load_undo(id)?;
        self.connector.disconnect(&block, &undo, height)?;
        Ok(())
    }

    /// Applies block `id`'s coin changes without checks (Core's `RollforwardBlock`).
    fn roll_forward(&mut self, shared: &Shared, id: EntryId) -> Result<(), ChainstateError> {
        let entry = shared.index.entry(id);
        let height = entry.height;
        if entry.parent.is_none() {
            return Ok(());
        }
        let block = self.load_block(shared, id)?;
        self.connector.roll_forward(&block, height)
    }
}

fn entry_for(index: &BlockIndex, hash: &BlockHash) -> Result<EntryId, ChainstateError> {
    index.get(hash).ok_or(ChainstateError::UnknownBestBlock { hash: *hash })
}

fn last_common_ancestor(index: &BlockIndex, first: EntryId, second: EntryId) -> Option<EntryId> {
    let height = index.entry(first).height.min(index.entry(second).height);
    let mut a = index.ancestor(first, height)?;
    let mut b = index.ancestor(second, height)?;
    while a != b {
        a = index.entry(a).parent?;
        b = index.entry(b).parent?;
    }
    Some(a)
}
