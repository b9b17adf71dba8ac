//! Testnet3 and testnet4 (Core's `CTestNetParams` and `CTestNet4Params`).

use super::assumeutxo;
use super::literal::{hash_literal, u256_literal};
use super::main::BITCOIN_POW_LIMIT;
use super::{
    GenesisSpecification, Network, Params, ScriptFlagException, POW_TARGET_SPACING_SECONDS,
    POW_TARGET_TIMESPAN_SECONDS,
};
use crate::amount::COIN;
use crate::pow::{ChainWork, Target};

/// The message in testnet4's genesis coinbase.
const TESTNET4_GENESIS_MESSAGE: &str =
    "03/May/2024 000000000000000000001ebd58c244970b3aa9d783bb001011fbe8ea8e98e00e";
/// Testnet4's genesis output pays a 33-byte all-zero "public key".
const TESTNET4_GENESIS_PUBLIC_KEY: [u8; 33] = [0; 33];

impl Params {
    /// Testnet version 3.
    pub fn testnet3() -> Params {
        let genesis =
            GenesisSpecification::satoshi(1_296_688_602, 414_098_458, 0x1d00_ffff).build();
        Params {
            network: Network::Testnet3,
            message_start: [0x0b, 0x11, 0x09, 0x07],
            default_port: 18333,
            genesis_hash: genesis.block_hash(),
            genesis,
            subsidy_halving_interval: 210_000,
            prune_after_height: 1_000,
            script_flag_exceptions: vec![(
                // The testnet3 block that broke BIP16 (P2SH).
                hash_literal!("00000000dd30457c001f4095d208cc1296b0eed002427aa599874af7a432b105"),
                ScriptFlagException::NoBaseFlags,
            )],
            bip34_height: 21_111,
            bip34_hash: Some(hash_literal!(
                "0000000023b3a96d3484e5abb3755c413e7d41500f8e2a5c3f0dd01299cd8ef8"
            )),
            bip65_height: 581_885,
            bip66_height: 330_776,
            csv_height: 770_112,
            segwit_height: 834_624,
            pow_limit: Target::from_pow_limit(BITCOIN_POW_LIMIT),
            pow_target_spacing_seconds: POW_TARGET_SPACING_SECONDS,
            pow_target_timespan_seconds: POW_TARGET_TIMESPAN_SECONDS,
            allow_min_difficulty_blocks: true,
            enforce_bip94: false,
            no_retargeting: false,
            minimum_chain_work: ChainWork::from_u256(u256_literal!(
                "0000000000000000000000000000000000000000000016dd270dd94fac1d7632"
            )),
            // Block 4,550,000.
            default_assume_valid: Some(hash_literal!(
                "0000000000000065c6c38258e201971a3fdfcc2ceee0dd6e85a6c022d45dee34"
            )),
            signet_challenge: None,
            assumeutxo: assumeutxo::TESTNET3.to_vec(),
            swiftsync_hints: None,
        }
    }

    /// Testnet version 4 (BIP94).
    pub fn testnet4() -> Params {
        let genesis = GenesisSpecification {
            message: TESTNET4_GENESIS_MESSAGE.as_bytes().to_vec(),
            public_key: TESTNET4_GENESIS_PUBLIC_KEY.to_vec(),
            time: 1_714_777_860,
            nonce: 393_743_547,
            bits: 0x1d00_ffff,
            version: 1,
            reward_satoshis: 50 * COIN,
        }
        .build();
        Params {
            network: Network::Testnet4,
            message_start: [0x1c, 0x16, 0x3f, 0x28],
            default_port: 48333,
            genesis_hash: genesis.block_hash(),
            genesis,
            subsidy_halving_interval: 210_000,
            prune_after_height: 1_000,
            script_flag_exceptions: Vec::new(),
            bip34_height: 1,
            bip34_hash: None,
            bip65_height: 1,
            bip66_height: 1,
            csv_height: 1,
            segwit_height: 1,
            pow_limit: Target::from_pow_limit(BITCOIN_POW_LIMIT),
            pow_target_spacing_seconds: POW_TARGET_SPACING_SECONDS,
            pow_target_timespan_seconds: POW_TARGET_TIMESPAN_SECONDS,
            allow_min_difficulty_blocks: true,
            enforce_bip94: true,
            no_retargeting: false,
            minimum_chain_work: ChainWork::from_u256(u256_literal!(
                "00000000000000000000000000000000000000000000034a4690fe592dc49c7c"
            )),
            // Block 91,000.
            default_assume_valid: Some(hash_literal!(
                "000000000000000180a58e7fa3b0db84b5ea76377524894f53660d93ac839d9b"
            )),
            signet_challenge: None,
            assumeutxo: assumeutxo::TESTNET4.to_vec(),
            swiftsync_hints: None,
        }
    }
}
