//! Competing branches written into the same block files: a branch that is the
//! tip for a while and then loses to the main chain (a reorg), and a stale
//! block that is never the tip (a sibling seen after its rival).
//!
//! File order makes the story: at height F the two-block branch F+1, F+2 is
//! written first (a node following the files moves its tip there), then the
//! main chain's F+1.. follow, and at F+3 the main chain has more work, so the
//! node reorganises. The stale block at height S comes right after the main
//! chain's block S with equal work, so the first seen stays the tip.

use crate::chain::{BlockMaker, BuiltBlock, ChainState};
use crate::error::GeneratorError;
use crate::random::DeterministicRng;

/// Random stream of the branches (so the main chain is the same with and
/// without `--forks`).
const STREAM_FORKS: u64 = 4;
/// Blocks in the branch that gets reorganised away.
pub const REORG_BRANCH_BLOCKS: u32 = 2;
/// Fewest blocks a chain with forks can have.
pub const FORK_CHAIN_BLOCKS_MIN: u32 = 20;

/// Where the branches go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkPlan {
    /// Height the reorged branch builds on.
    pub reorg_base_height: u32,
    /// Height of the stale block (a sibling of the main chain's block there).
    pub stale_height: u32,
}

impl ForkPlan {
    /// Places the reorg at three fifths of the chain and the stale block at
    /// four fifths.
    pub fn for_blocks(blocks: u32) -> Result<ForkPlan, GeneratorError> {
        if blocks < FORK_CHAIN_BLOCKS_MIN {
            return Err(GeneratorError::InvalidOption("--forks needs at least 20 blocks"));
        }
        Ok(ForkPlan { reorg_base_height: blocks * 3 / 5, stale_height: blocks * 4 / 5 })
    }
}

/// Builds `length` blocks on a copy of `base` with the branches' own random
/// stream; `base` is unchanged.
pub fn build_branch(
    maker: &BlockMaker<'_>,
    base: &ChainState,
    length: u32,
    seed: u64,
) -> Result<Vec<BuiltBlock>, GeneratorError> {
    let mut state = base.clone();
    state.rng = DeterministicRng::new(seed ^ u64::from(base.height), STREAM_FORKS);
    (0..length).map(|_| maker.next_block(&mut state)).collect()
}
