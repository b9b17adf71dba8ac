//! The fully validating mode's waits before a block goes to a worker: a
//! block for its claimed coins, coins for their block, and both for the
//! blocks from the coins' cutoff up to be stored (`super::recent`: the
//! worker takes the coins left out from them).

use std::collections::{BTreeMap, HashMap};

use ibex_primitives::BlockHash;

use super::claimed::ClaimedSpentCoins;
use super::job::{PassJob, RunBlock};
use crate::block_source::BlockSource;
use crate::prepared::PreparedBlock;

/// The stored blocks from `cutoff` to the block before `block`, newest
/// first; `None` while one of them is not stored. The engine answers from
/// its block index.
pub(crate) type RecentRuns<'a> = &'a dyn Fn(&RunBlock, u32) -> Option<Vec<RunBlock>>;

/// Blocks, coins and jobs waiting, by height.
#[derive(Debug, Default)]
pub(super) struct Holds {
    /// Blocks waiting for their coins (read back from their files once
    /// the coins come).
    blocks: HashMap<u32, RunBlock>,
    /// Coins waiting for their blocks, with the block hash they were
    /// claimed for and who sent them.
    coins: HashMap<u32, (BlockHash, ClaimedSpentCoins, BlockSource)>,
    /// Blocks with their coins, waiting for the blocks below them.
    waiting_stored: BTreeMap<u32, (RunBlock, ClaimedSpentCoins, BlockSource)>,
}

impl Holds {
    /// `block` came (parsed when `parsed` is given): its job when its
    /// coins are here and the blocks below it are stored; else it waits.
    pub(super) fn block(
        &mut self,
        block: RunBlock,
        parsed: Option<PreparedBlock>,
        recent_runs: RecentRuns<'_>,
    ) -> Option<PassJob> {
        if self.waiting_stored.contains_key(&block.height) {
            return None;
        }
        match self.coins.remove(&block.height) {
            Some((hash, coins, source)) if hash == block.hash => {
                self.ready(block, parsed, (coins, source), recent_runs)
            }
            // Coins claimed for another block at this height (a header
            // chain that moved) are dropped. The block waits unparsed: the
            // coins may come after many more blocks, and reading it back
            // costs ~1 ms against its scripts' 100.
            _ => {
                self.blocks.insert(block.height, block);
                None
            }
        }
    }

    /// Coins claimed for block `hash` at `height` came from `source`: the
    /// job when the block is here and the blocks below it are stored;
    /// else they wait.
    pub(super) fn coins(
        &mut self,
        (height, hash): (u32, BlockHash),
        coins: ClaimedSpentCoins,
        source: BlockSource,
        recent_runs: RecentRuns<'_>,
    ) -> Option<PassJob> {
        if self.waiting_stored.contains_key(&height) {
            return None;
        }
        match self.blocks.remove(&height) {
            Some(block) if block.hash == hash => {
                self.ready(block, None, (coins, source), recent_runs)
            }
            held => {
                if let Some(held) = held {
                    self.blocks.insert(height, held);
                }
                self.coins.insert(height, (hash, coins, source));
                None
            }
        }
    }

    /// The jobs waiting for blocks below them that are all stored now.
    pub(super) fn release(&mut self, recent_runs: RecentRuns<'_>) -> Vec<PassJob> {
        let waiting = std::mem::take(&mut self.waiting_stored);
        let mut jobs = Vec::new();
        for (_, (block, coins, source)) in waiting {
            jobs.extend(self.ready(block, None, (coins, source), recent_runs));
        }
        jobs
    }

    /// A refused block: it waits for coins again.
    pub(super) fn reopen(&mut self, block: RunBlock) {
        self.blocks.insert(block.height, block);
    }

    /// Blocks stored and waiting here (for coins, or with them).
    pub(super) fn block_count(&self) -> usize {
        self.blocks.len() + self.waiting_stored.len()
    }

    fn ready(
        &mut self,
        block: RunBlock,
        parsed: Option<PreparedBlock>,
        (coins, source): (ClaimedSpentCoins, BlockSource),
        recent_runs: RecentRuns<'_>,
    ) -> Option<PassJob> {
        let recent = match coins.cutoff_height {
            0 => Vec::new(),
            cutoff => match recent_runs(&block, cutoff) {
                Some(recent) => recent,
                None => {
                    self.waiting_stored.insert(block.height, (block, coins, source));
                    return None;
                }
            },
        };
        Some(PassJob { block, parsed, spent: Some((coins, source)), recent })
    }
}
