//! The checks Core makes on a `headers` message before anything else
//! (`CheckHeadersPoW`), and the work arithmetic of its anti-DoS rule.

use ibex_primitives::pow::{block_proof, check_proof_of_work};
use ibex_primitives::{ChainWork, CompactTarget, Header, Params};

use crate::sync::misbehavior::Misbehavior;

/// Blocks of the tip's work below the tip that a fork may start and still be
/// accepted without presync (Core's 144 in `GetAntiDoSWorkThreshold`).
pub const NEAR_TIP_BLOCKS: u64 = 144;

/// Each header meets the target its own `nBits` encodes (Core's
/// `HasValidProofOfWork`), and each follows the one before it (Core's
/// `CheckHeadersAreContinuous`), in that order, as Core's
/// `CheckHeadersPoW`.
pub fn check_headers(headers: &[Header], params: &Params) -> Result<(), Misbehavior> {
    let mut hashes = Vec::with_capacity(headers.len());
    for header in headers {
        let hash = header.block_hash();
        if !check_proof_of_work(&hash, CompactTarget(header.bits), params) {
            return Err(Misbehavior::HeaderProofOfWork { hash });
        }
        hashes.push(hash);
    }
    for (index, pair) in headers.windows(2).enumerate() {
        if let ([_, next], Some(previous_hash)) = (pair, hashes.get(index)) {
            if next.previous_block_hash != *previous_hash {
                return Err(Misbehavior::NonContinuousHeaders { index: index + 1 });
            }
        }
    }
    Ok(())
}

/// The work the headers claim (Core's `CalculateClaimedHeadersWork`).
pub fn claimed_work(headers: &[Header]) -> ChainWork {
    headers.iter().fold(ChainWork::ZERO, |sum, header| {
        sum.wrapping_add(block_proof(CompactTarget(header.bits)))
    })
}

/// The least work a header chain must reach before we store it (Core's
/// `GetAntiDoSWorkThreshold`): the minimum chain work, or the tip's work
/// less 144 blocks of the tip's difficulty if that is more.
pub fn anti_dos_work_threshold(
    tip_chain_work: ChainWork,
    tip_bits: u32,
    minimum_chain_work: ChainWork,
) -> ChainWork {
    let buffer = block_proof(CompactTarget(tip_bits)).to_u256().wrapping_mul_u64(NEAR_TIP_BLOCKS);
    let tip = tip_chain_work.to_u256();
    let near_tip = if buffer >= tip {
        ChainWork::ZERO
    } else {
        ChainWork::from_u256(tip.wrapping_sub(buffer))
    };
    near_tip.max(minimum_chain_work)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::U256;

    fn work(value: u64) -> ChainWork {
        ChainWork::from_u256(U256::from_u64(value))
    }

    #[test]
    fn threshold_is_144_tip_blocks_below_the_tip_or_the_minimum() {
        // Regtest's bits prove 2 a block: 144 blocks are 288.
        assert_eq!(anti_dos_work_threshold(work(1_000), 0x207f_ffff, work(0)), work(712));
        assert_eq!(anti_dos_work_threshold(work(1_000), 0x207f_ffff, work(900)), work(900));
        assert_eq!(anti_dos_work_threshold(work(100), 0x207f_ffff, work(5)), work(5));
        assert_eq!(anti_dos_work_threshold(work(100), 0x207f_ffff, work(0)), work(0));
    }
}
