//! Mainnet (Core's `CMainParams`).

use super::assumeutxo;
use super::literal::{hash_literal, u256_literal};
use super::{
    GenesisSpecification, Network, Params, ScriptFlagException, POW_TARGET_SPACING_SECONDS,
    POW_TARGET_TIMESPAN_SECONDS,
};
use crate::pow::{ChainWork, Target, U256};

/// Mainnet's and the testnets' pow limit: difficulty 1 (`0x1d00ffff`).
pub(super) const BITCOIN_POW_LIMIT: U256 =
    u256_literal!("00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff");

impl Params {
    /// Mainnet.
    pub fn main() -> Params {
        let genesis =
            GenesisSpecification::satoshi(1_231_006_505, 2_083_236_893, 0x1d00_ffff).build();
        Params {
            network: Network::Main,
            message_start: [0xf9, 0xbe, 0xb4, 0xd9],
            default_port: 8333,
            genesis_hash: genesis.block_hash(),
            genesis,
            subsidy_halving_interval: 210_000,
            prune_after_height: 100_000,
            script_flag_exceptions: vec![
                // Block 170,060 broke BIP16 (P2SH).
                (
                    hash_literal!(
                        "00000000000002dc756eebf4f49723ed8d30cc28a5f108eb94b1ba88ac4f9c22"
                    ),
                    ScriptFlagException::NoBaseFlags,
                ),
                // Block 692,261 broke the taproot rules.
                (
                    hash_literal!(
                        "0000000000000000000f14c35b2d841e986ab5441de8c585d5ffe55ea1e395ad"
                    ),
                    ScriptFlagException::P2shAndWitnessOnly,
                ),
            ],
            bip34_height: 227_931,
            bip34_hash: Some(hash_literal!(
                "000000000000024b89b42a942fe0d9fea3bb44ab7bd1b19115dd6a759c0808b8"
            )),
            bip65_height: 388_381,
            bip66_height: 363_725,
            csv_height: 419_328,
            segwit_height: 481_824,
            pow_limit: Target::from_pow_limit(BITCOIN_POW_LIMIT),
            pow_target_spacing_seconds: POW_TARGET_SPACING_SECONDS,
            pow_target_timespan_seconds: POW_TARGET_TIMESPAN_SECONDS,
            allow_min_difficulty_blocks: false,
            enforce_bip94: false,
            no_retargeting: false,
            minimum_chain_work: ChainWork::from_u256(u256_literal!(
                "0000000000000000000000000000000000000000dee8e2a309ad8a9820433c68"
            )),
            // Block 912,683.
            default_assume_valid: Some(hash_literal!(
                "00000000000000000000611fd22f2df7c8fbd0688745c3a6c3bb5109cc2a12cb"
            )),
            signet_challenge: None,
            assumeutxo: assumeutxo::MAIN.to_vec(),
            swiftsync_hints: None,
        }
    }
}
