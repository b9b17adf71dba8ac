//! The blocks below a block of the fully validating mode's pass whose
//! created coins its claimed coins left out (`crate::swiftsync`'s
//! `recent`), found in the block index.

use crate::index::{BlockIndex, BlockStatus};
use crate::swiftsync::RunBlock;

/// The stored blocks from `cutoff` to the block below `block`, newest
/// first; `None` while one of them is not stored. At most
/// `SPENT_COINS_RECENT_BLOCKS` blocks: the engine takes no coins asked
/// with a lower cutoff.
pub(super) fn recent_runs(
    index: &BlockIndex,
    block: &RunBlock,
    cutoff: u32,
) -> Option<Vec<RunBlock>> {
    let mut runs = Vec::with_capacity(block.height.saturating_sub(cutoff) as usize);
    let mut walk = index.entry(block.id).parent;
    while let Some(id) = walk {
        let entry = index.entry(id);
        if entry.height < cutoff {
            break;
        }
        if !entry.status.has(BlockStatus::HAVE_DATA) {
            return None;
        }
        let position = entry.block_position?;
        runs.push(RunBlock { id, height: entry.height, hash: entry.hash, position });
        walk = entry.parent;
    }
    Some(runs)
}
