//! Checking a hash against its target, and the work a block adds to its chain.

use super::compact::{CompactTarget, Target};
use super::u256::U256;
use crate::hash::BlockHash;
use crate::params::Params;

/// Expected number of hashes behind a chain or block (Core's `nChainWork`
/// and `GetBlockProof`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ChainWork(U256);

impl ChainWork {
    /// No work.
    pub const ZERO: ChainWork = ChainWork(U256::ZERO);
    /// More work than any chain has: what a threshold that cannot be read
    /// stands for, so that nothing passes it.
    pub const MAX: ChainWork = ChainWork(U256::MAX);

    /// Work of this many expected hashes.
    pub const fn from_u256(value: U256) -> ChainWork {
        ChainWork(value)
    }

    /// The number of expected hashes.
    pub const fn to_u256(self) -> U256 {
        self.0
    }

    /// The work a block with target `bits` proves: 2^256 / (target + 1),
    /// and zero for a negative, overflowing or zero target (Core's
    /// `GetBlockProof`).
    pub fn from_bits(bits: CompactTarget) -> ChainWork {
        let expanded = bits.expand();
        if expanded.negative || expanded.overflow || expanded.value.is_zero() {
            return ChainWork::ZERO;
        }
        // 2^256 does not fit, but 2^256 / (t + 1) = (2^256 - t - 1) / (t + 1) + 1
        // and 2^256 - t - 1 is !t. A target that fits has t + 1 > 0.
        let target = expanded.value;
        match target.not().checked_div(target.wrapping_add(U256::ONE)) {
            Some(quotient) => ChainWork(quotient.wrapping_add(U256::ONE)),
            None => ChainWork::ZERO,
        }
    }

    /// The sum modulo 2^256, as Core's `arith_uint256` adds chain work (it
    /// cannot wrap on any chain: each block adds at most 2^255).
    pub const fn wrapping_add(self, other: ChainWork) -> ChainWork {
        ChainWork(self.0.wrapping_add(other.0))
    }

    /// log2 of the work as Core's `UpdateTip` logs it (`log2_work=%f`):
    /// the natural log of Core's `getdouble`, over the natural log of 2.
    /// Zero work gives negative infinity, as in Core.
    pub fn log2(self) -> f64 {
        self.0.to_f64_like_core().ln() / std::f64::consts::LN_2
    }
}

impl std::fmt::Display for ChainWork {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0.to_hex())
    }
}

/// Whether `hash` meets the target `bits` encodes, and that target is valid
/// for the chain: positive, not zero, not overflowing, not easier than the
/// pow limit (Core's `CheckProofOfWorkImpl`).
pub fn check_proof_of_work(hash: &BlockHash, bits: CompactTarget, params: &Params) -> bool {
    match Target::from_compact(bits, params.pow_limit) {
        Some(target) => U256::from_le_bytes(hash.0) <= target.to_u256(),
        None => false,
    }
}

/// The work a block with target `bits` proves (Core's `GetBlockProof`).
pub fn block_proof(bits: CompactTarget) -> ChainWork {
    ChainWork::from_bits(bits)
}

/// log2 of `work` as Core's `UpdateTip` logs it; format with `{:.6}` for
/// Core's `log2_work=%f`.
pub fn log2_work(work: ChainWork) -> f64 {
    work.log2()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_proof_of_known_targets() {
        // Regtest's 0x207fffff: target just under 2^255, work 2.
        assert_eq!(block_proof(CompactTarget(0x207f_ffff)).to_u256(), U256::from_u64(2));
        // Mainnet's difficulty-1 target 0x1d00ffff: 0x100010001 hashes.
        assert_eq!(
            block_proof(CompactTarget(0x1d00_ffff)).to_u256(),
            U256::from_u64(0x1_0001_0001)
        );
        assert_eq!(block_proof(CompactTarget(0)), ChainWork::ZERO);
        assert_eq!(block_proof(CompactTarget(0x0480_0001)), ChainWork::ZERO);
        assert_eq!(block_proof(CompactTarget(0xff12_3456)), ChainWork::ZERO);
    }

    #[test]
    fn log2_of_regtest_chains() {
        let two = ChainWork::from_u256(U256::from_u64(2));
        assert_eq!(format!("{:.6}", two.log2()), "1.000000");
        let six = ChainWork::from_u256(U256::from_u64(6));
        assert_eq!(format!("{:.6}", log2_work(six)), "2.584963");
        assert_eq!(ChainWork::ZERO.log2(), f64::NEG_INFINITY);
    }
}
