//! Header rules: proof of work (Core's `CheckBlockHeader`) and the rules
//! that need the chain below the header (`ContextualCheckBlockHeader`), plus
//! the median time past they compare against (`GetMedianTimePast`).

use crate::error::BlockError;
use crate::limits::{MAX_FUTURE_BLOCK_TIME_SECONDS, MEDIAN_TIME_SPAN_BLOCKS, TIMEWARP_SECONDS_MAX};
use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::pow::check_proof_of_work;
use ibex_primitives::{BlockHash, CompactTarget, Header, Height, Params};

/// What `ContextualCheckBlockHeader` needs to know about the chain below
/// the new header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderContext {
    /// The new block's height.
    pub height: Height,
    /// The parent's median time past (the median of the last 11 block times
    /// ending in the parent; see [`median_time_past`]).
    pub previous_median_time_past: i64,
    /// The parent's nTime (BIP94's timewarp rule).
    pub previous_time: u32,
    /// The nBits the chain requires of the new block
    /// ([`ibex_primitives::pow::next_work_required`]).
    pub expected_bits: CompactTarget,
    /// The node's current time in whole seconds since the Unix epoch (Core's
    /// `NodeClock::now()`). Round down: a block time is a whole second, so
    /// `time > now + 7200` is the same test with `now` floored.
    pub adjusted_time_seconds: i64,
}

/// Core's `CheckBlockHeader`: the hash `hash` (the header's, computed once
/// by the caller) meets the header's target, and that target is valid for
/// the network (`high-hash`).
pub fn check_block_header(
    header: &Header,
    hash: &BlockHash,
    params: &Params,
) -> Result<(), BlockError> {
    if !check_proof_of_work(hash, CompactTarget(header.bits), params) {
        return Err(BlockError::HighHash);
    }
    Ok(())
}

/// Core's `ContextualCheckBlockHeader`, in Core's order: the required nBits
/// (`bad-diffbits`), time after the parent's median time past
/// (`time-too-old`), BIP94's timewarp rule (`time-timewarp-attack`), at most
/// two hours ahead of the node's clock (`time-too-new`), and the minimum
/// version once BIP34, BIP66 and BIP65 are active (`bad-version(0x%08x)`).
pub fn contextual_check_block_header(
    header: &Header,
    context: &HeaderContext,
    params: &Params,
) -> Result<(), BlockError> {
    if header.bits != context.expected_bits.to_consensus() {
        return Err(BlockError::BadDifficultyBits {
            bits: header.bits,
            expected: context.expected_bits.to_consensus(),
        });
    }
    let time = i64::from(header.time);
    if time <= context.previous_median_time_past {
        return Err(BlockError::TimeTooOld {
            time: header.time,
            median_time_past: context.previous_median_time_past,
        });
    }
    // BIP94 (testnet4, and regtest with -test=bip94): the first block of each
    // retarget period, genesis excepted (it has no context), may not be more
    // than MAX_TIMEWARP seconds before its parent.
    if params.enforce_bip94
        && context.height.to_u32() % params.difficulty_adjustment_interval() == 0
        && time < i64::from(context.previous_time) - TIMEWARP_SECONDS_MAX
    {
        return Err(BlockError::TimeTimewarpAttack {
            time: header.time,
            previous_time: context.previous_time,
        });
    }
    // Not a consensus rule strictly (it depends on the clock), but Core
    // rejects such a header (BLOCK_TIME_FUTURE, not cached as invalid).
    let limit = context.adjusted_time_seconds.saturating_add(MAX_FUTURE_BLOCK_TIME_SECONDS);
    if time > limit {
        return Err(BlockError::TimeTooNew { time: header.time, limit });
    }
    check_version(header.version, context.height, params)
}

/// Core rejects versions below 2, 3 and 4 from the heights BIP34, BIP66 and
/// BIP65 activate (its `DeploymentActiveAfter(pindexPrev, ...)`, true for the
/// block at the activation height). nVersion is signed: negative versions
/// (all top bits set) are below every minimum.
fn check_version(version: i32, height: Height, params: &Params) -> Result<(), BlockError> {
    let minimums = [
        (BuriedDeployment::HeightInCoinbase, 2),
        (BuriedDeployment::StrictDerSignatures, 3),
        (BuriedDeployment::CheckLockTimeVerify, 4),
    ];
    let outdated = minimums.iter().any(|&(deployment, minimum)| {
        version < minimum && params.deployment_active_at(deployment, height)
    });
    if outdated {
        return Err(BlockError::BadVersion { version });
    }
    Ok(())
}

/// Core's `CBlockIndex::GetMedianTimePast`: the median of the last (up to)
/// 11 block times ending in the block, `times` oldest first. With an even
/// count (near genesis) it takes the upper middle, as Core does. Only the
/// last 11 times are read; no times gives 0.
pub fn median_time_past(times: &[u32]) -> i64 {
    let window = &times[times.len().saturating_sub(MEDIAN_TIME_SPAN_BLOCKS)..];
    let mut sorted = [0u32; MEDIAN_TIME_SPAN_BLOCKS];
    let sorted = &mut sorted[..window.len()];
    sorted.copy_from_slice(window);
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).map_or(0, |&time| i64::from(time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_the_last_eleven() {
        assert_eq!(median_time_past(&[]), 0);
        assert_eq!(median_time_past(&[7]), 7);
        // Two times: Core's pbegin[(pend - pbegin) / 2] is the later one.
        assert_eq!(median_time_past(&[5, 9]), 9);
        assert_eq!(median_time_past(&[9, 5]), 9);
        assert_eq!(median_time_past(&[3, 1, 2]), 2);
        let times: Vec<u32> = (1..=11).rev().collect();
        assert_eq!(median_time_past(&times), 6);
        // A twelfth, older time is not part of the window.
        let mut longer = vec![1_000];
        longer.extend(1..=11u32);
        assert_eq!(median_time_past(&longer), 6);
        assert_eq!(median_time_past(&[u32::MAX; 11]), i64::from(u32::MAX));
    }
}
