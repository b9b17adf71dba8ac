//! The difficulty a new block must meet (Core's `GetNextWorkRequired`,
//! `CalculateNextWorkRequired` and `PermittedDifficultyTransition`), as pure
//! functions of the previous blocks' heights, bits and times.

use super::compact::CompactTarget;
use super::u256::U256;
use crate::params::Params;

/// The facts about a block header the difficulty rules read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSummary {
    /// Height in its chain (genesis is 0).
    pub height: u32,
    /// The header's `nBits`.
    pub bits: CompactTarget,
    /// The header's `nTime`, seconds since the Unix epoch.
    pub time: u32,
}

/// A block the rules need is not on the chain the caller can see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RetargetError {
    /// The ancestor lookup found no block at this height.
    #[error("no ancestor at height {height} of the block at height {tip_height}")]
    MissingAncestor {
        /// The height asked for.
        height: u32,
        /// The height of the new block's parent.
        tip_height: u32,
    },
}

/// The `nBits` the block after `last` must carry, given its own time
/// (Core's `GetNextWorkRequired`).
///
/// `ancestor(height)` gives the block at `height` on the chain ending in
/// `last` (for heights at most `last.height`). It is asked for the first
/// block of the retarget period at a period's end, and, on chains that allow
/// min-difficulty blocks, for the blocks before `last` back to the last one
/// that is not a min-difficulty block (testnet's rule).
pub fn next_work_required(
    params: &Params,
    last: BlockSummary,
    new_block_time: u32,
    mut ancestor: impl FnMut(u32) -> Option<BlockSummary>,
) -> Result<CompactTarget, RetargetError> {
    let interval = params.difficulty_adjustment_interval();
    let mut lookup = |height: u32| {
        ancestor(height).ok_or(RetargetError::MissingAncestor { height, tip_height: last.height })
    };
    if (u64::from(last.height) + 1) % u64::from(interval) != 0 {
        if !params.allow_min_difficulty_blocks {
            return Ok(last.bits);
        }
        let pow_limit_bits = params.pow_limit.to_compact();
        // Testnet: a block more than twice the target spacing after its
        // parent may (and then must) use the minimum difficulty.
        let min_difficulty_after = i64::from(last.time) + params.pow_target_spacing_seconds * 2;
        if i64::from(new_block_time) > min_difficulty_after {
            return Ok(pow_limit_bits);
        }
        // Otherwise the difficulty of the last block that is not such a
        // min-difficulty block, stopping at a period's first block or genesis.
        let mut block = last;
        while block.height > 0 && block.height % interval != 0 && block.bits == pow_limit_bits {
            block = lookup(block.height - 1)?;
        }
        return Ok(block.bits);
    }
    // `last` ends a period, so its height is at least interval - 1.
    let first_height = last.height + 1 - interval;
    let first = lookup(first_height)?;
    Ok(calculate_next_work_required(params, last, first))
}

/// The retarget at a period's end (Core's `CalculateNextWorkRequired`):
/// the period's target scaled by the time the period took, that time clamped
/// to a quarter and four times the target timespan, and the result capped at
/// the pow limit. `first` is the period's first block: its time always, and
/// its bits instead of `last`'s under BIP94 (testnet4), where the first block
/// of a period can never be a min-difficulty block.
pub fn calculate_next_work_required(
    params: &Params,
    last: BlockSummary,
    first: BlockSummary,
) -> CompactTarget {
    if params.no_retargeting {
        return last.bits;
    }
    let timespan = params.pow_target_timespan_seconds;
    let actual_timespan =
        (i64::from(last.time) - i64::from(first.time)).clamp(timespan / 4, timespan * 4);
    let base_bits = if params.enforce_bip94 { first.bits } else { last.bits };
    let scaled = scale_target(params, base_bits, actual_timespan);
    CompactTarget::from_value(scaled)
}

/// `bits`' target times `actual_timespan` over the target timespan, capped at
/// the pow limit, with Core's wrapping 256-bit arithmetic.
fn scale_target(params: &Params, bits: CompactTarget, actual_timespan: i64) -> U256 {
    // Core converts the (positive) int64 timespans to arith_uint256 through
    // uint64; `as u64` is that conversion.
    let product = bits.expand().value.wrapping_mul_u64(actual_timespan as u64);
    let divisor = U256::from_u64(params.pow_target_timespan_seconds as u64);
    let pow_limit = params.pow_limit.to_u256();
    match product.checked_div(divisor) {
        Some(quotient) if quotient <= pow_limit => quotient,
        _ => pow_limit,
    }
}

/// Whether a header at `height` may change the difficulty from `old_bits` to
/// `new_bits` (Core's `PermittedDifficultyTransition`, used to check headers
/// before their ancestors are known). Always true on chains that allow
/// min-difficulty blocks; off period boundaries the bits must not change; at
/// a boundary the new target must lie within the largest and smallest a
/// retarget could give, each rounded through the compact form.
pub fn permitted_difficulty_transition(
    params: &Params,
    height: u32,
    old_bits: CompactTarget,
    new_bits: CompactTarget,
) -> bool {
    if params.allow_min_difficulty_blocks {
        return true;
    }
    if height % params.difficulty_adjustment_interval() != 0 {
        return old_bits == new_bits;
    }
    let timespan = params.pow_target_timespan_seconds;
    let observed = new_bits.expand().value;
    let rounded = |value: U256| CompactTarget::from_value(value).expand().value;
    let largest_target = rounded(scale_target(params, old_bits, timespan * 4));
    let smallest_target = rounded(scale_target(params, old_bits, timespan / 4));
    smallest_target <= observed && observed <= largest_target
}
