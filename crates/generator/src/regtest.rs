//! The regtest facts the generator needs, kept here so the generator stands
//! on the committed primitives alone: Core's regtest genesis block, message
//! start, halving interval and proof-of-work check.

use ibex_primitives::{Block, BlockHash};

use crate::error::GeneratorError;

/// Core's regtest genesis block (`CRegTestParams`: Satoshi's coinbase, time
/// 1296688602, nonce 2, nBits 0x207fffff), serialised.
const REGTEST_GENESIS_HEX: &str = concat!(
    "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd",
    "7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f2002000000",
    "0101000000010000000000000000000000000000000000000000000000000000000000000000ffff",
    "ffff4d04ffff001d0104455468652054696d65732030332f4a616e2f32303039204368616e63656c",
    "6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062616e6b73",
    "ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a6",
    "7962e0ea1f61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5f",
    "ac00000000",
);
/// Core's regtest genesis hash, as displayed.
pub const REGTEST_GENESIS_HASH_HEX: &str =
    "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";
/// Regtest's message start (`pchMessageStart`), the block files' record magic.
pub const REGTEST_MESSAGE_START: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
/// Regtest halves the subsidy every 150 blocks.
pub const REGTEST_HALVING_INTERVAL_BLOCKS: u32 = 150;
/// Regtest's nBits: the easiest target allowed (powLimit 0x7fff...).
pub const REGTEST_BITS: u32 = 0x207f_ffff;

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
        let bytes = ibex_primitives::hex::decode(REGTEST_GENESIS_HEX)
            .map_err(|_| GeneratorError::InvalidOption("regtest genesis hex"))?;
        let genesis =
            Block::decode(&bytes).map_err(|_| GeneratorError::InvalidOption("regtest genesis"))?;
        let genesis_hash = genesis.block_hash();
        Ok(Regtest {
            genesis,
            genesis_hash,
            message_start: REGTEST_MESSAGE_START,
            subsidy_halving_interval: REGTEST_HALVING_INTERVAL_BLOCKS,
        })
    }
}

/// The 256-bit target `bits` encodes, big-endian; `None` when negative,
/// overflowing, zero, or easier than regtest's pow limit (Core's
/// `CheckProofOfWorkImpl` refusals).
pub fn target_from_bits(bits: u32) -> Option<[u8; 32]> {
    let exponent = (bits >> 24) as usize;
    let mantissa = bits & 0x007f_ffff;
    if bits & 0x0080_0000 != 0 || mantissa == 0 || !(3..=32).contains(&exponent) {
        return None;
    }
    let mut target = [0u8; 32];
    let mantissa_bytes = mantissa.to_be_bytes();
    // The mantissa's three bytes end at byte `exponent` counted from the right.
    let end = 32 - (exponent - 3);
    target[end - 3..end].copy_from_slice(&mantissa_bytes[1..4]);
    // Regtest powLimit: 0x7fff...ff; anything easier is refused.
    (target[0] <= 0x7f).then_some(target)
}

/// Whether `hash` meets the target `bits` encodes.
pub fn meets_target(hash: &BlockHash, bits: u32) -> bool {
    let Some(target) = target_from_bits(bits) else { return false };
    let mut big_endian = hash.0;
    big_endian.reverse();
    big_endian <= target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn genesis_is_cores() {
        let regtest = Regtest::new().unwrap();
        assert_eq!(regtest.genesis_hash.to_hex(), REGTEST_GENESIS_HASH_HEX);
        assert!(meets_target(&regtest.genesis_hash, REGTEST_BITS));
    }

    #[test]
    fn targets() {
        let target = target_from_bits(REGTEST_BITS).unwrap();
        assert_eq!(&target[..4], &[0x7f, 0xff, 0xff, 0x00]);
        assert!(target_from_bits(0x2080_ffff).is_none());
        assert!(target_from_bits(0x2100_ffff).is_none());
        let harder = target_from_bits(REGTEST_BITS - 1).unwrap();
        assert_eq!(&harder[..4], &[0x7f, 0xff, 0xfe, 0x00]);
    }
}
