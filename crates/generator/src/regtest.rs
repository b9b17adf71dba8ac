//! The regtest facts the generator needs, taken from
//! `ibex_primitives::Params::regtest()` (Core's `CRegTestParams`): genesis
//! block, message start, halving interval, and the proof-of-work check the
//! nonce grinder runs.

use ibex_primitives::pow::U256;
use ibex_primitives::{Block, BlockHash, CompactTarget, Params, Target};

use crate::error::GeneratorError;

/// Core's regtest genesis hash, as displayed.
pub const REGTEST_GENESIS_HASH_HEX: &str =
    "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";
/// Regtest's message start (`pchMessageStart`), the block files' record magic.
pub const REGTEST_MESSAGE_START: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
/// Regtest's nBits: the easiest target allowed (powLimit 0x7fff...).
pub const REGTEST_BITS: u32 = 0x207f_ffff;
/// Regtest's pow limit, 2^255 - 1 (`Params::regtest().pow_limit`, which a
/// test checks), as a constant so grinding builds no `Params` per nonce.
const REGTEST_POW_LIMIT: Target =
    Target::from_pow_limit(U256::from_limbs([u64::MAX, u64::MAX, u64::MAX, u64::MAX >> 1]));

/// The regtest chain's fixed facts.
#[derive(Debug, Clone)]
pub struct Regtest {
    /// The genesis block.
    pub genesis: Block,
    /// Its hash.
    pub genesis_hash: BlockHash,
    /// Record magic of block files.
    pub message_start: [u8; 4],
    /// Blocks between subsidy halvings.
    pub subsidy_halving_interval: u32,
}

impl Regtest {
    /// Core's regtest.
    pub fn new() -> Result<Regtest, GeneratorError> {
        let params = Params::regtest();
        Ok(Regtest {
            genesis_hash: params.genesis_hash,
            genesis: params.genesis,
            message_start: params.message_start,
            subsidy_halving_interval: params.subsidy_halving_interval,
        })
    }
}

/// Whether `hash` meets the target `bits` encodes, refusing targets that are
/// negative, zero, overflowing or easier than regtest's limit (Core's
/// `CheckProofOfWorkImpl`, as `ibex_primitives::pow::check_proof_of_work`
/// runs it for regtest).
pub fn meets_target(hash: &BlockHash, bits: u32) -> bool {
    match Target::from_compact(CompactTarget(bits), REGTEST_POW_LIMIT) {
        Some(target) => U256::from_le_bytes(hash.0) <= target.to_u256(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::pow::check_proof_of_work;

    #[test]
    fn genesis_is_cores() {
        let regtest = Regtest::new().unwrap();
        assert_eq!(regtest.genesis_hash.to_hex(), REGTEST_GENESIS_HASH_HEX);
        assert_eq!(regtest.message_start, REGTEST_MESSAGE_START);
        assert_eq!(regtest.genesis.header.bits, REGTEST_BITS);
        assert!(meets_target(&regtest.genesis_hash, REGTEST_BITS));
    }

    #[test]
    fn targets_match_the_primitives_check() {
        let params = Params::regtest();
        assert_eq!(REGTEST_POW_LIMIT, params.pow_limit);
        assert_eq!(params.pow_limit.to_compact(), CompactTarget(REGTEST_BITS));
        let mut hashes = vec![BlockHash([0; 32]), BlockHash([0xff; 32])];
        for top in [0x7f, 0x80, 0x7e] {
            let mut bytes = [0x11; 32];
            bytes[31] = top;
            hashes.push(BlockHash(bytes));
        }
        for bits in [REGTEST_BITS, REGTEST_BITS - 1, 0x2080_ffff, 0x2100_ffff, 0x207f_0000, 0] {
            for hash in &hashes {
                assert_eq!(
                    meets_target(hash, bits),
                    check_proof_of_work(hash, CompactTarget(bits), &params),
                    "bits {bits:#x}"
                );
            }
        }
        assert!(!meets_target(&BlockHash([0xff; 32]), REGTEST_BITS));
        assert!(meets_target(&BlockHash([0; 32]), REGTEST_BITS));
    }
}
