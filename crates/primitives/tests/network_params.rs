//! Every network's parameters against Bitcoin Core v30.0, typed a second
//! time from Core's `src/kernel/chainparams.cpp` and
//! `src/chainparamsbase.cpp` (the 30.x branch at "Finalise v30.0"): the
//! values `params.rs` does not already check (RPC ports, whole pow limits,
//! retarget spacing and timespan, the three difficulty switches, halving
//! intervals, BIP34 hashes, the signet challenge). `docs/consensus.md` has
//! the rule-by-rule table these rows belong to.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_primitives::hash::sha256d;
use ibex_primitives::pow::{CompactTarget, U256};
use ibex_primitives::{BlockHash, Network, Params};

/// One network's row of Core v30's values.
struct CoreChain {
    network: Network,
    /// `CreateBaseChainParams` (`chainparamsbase.cpp`).
    rpc_port: u16,
    /// `consensus.powLimit`.
    pow_limit: &'static str,
    /// `UintToArith256(powLimit).GetCompact()`: the bits a min-difficulty
    /// block carries, and every genesis block's bits.
    pow_limit_bits: u32,
    /// `consensus.nPowTargetSpacing`.
    spacing_seconds: i64,
    /// `consensus.nPowTargetTimespan`.
    timespan_seconds: i64,
    /// `DifficultyAdjustmentInterval()`.
    retarget_interval_blocks: u32,
    /// `consensus.fPowAllowMinDifficultyBlocks`.
    allow_min_difficulty_blocks: bool,
    /// `consensus.enforce_BIP94` (regtest: without `-test=bip94`).
    enforce_bip94: bool,
    /// `consensus.fPowNoRetargeting`.
    no_retargeting: bool,
    /// `consensus.nSubsidyHalvingInterval`.
    halving_interval_blocks: u32,
    /// `consensus.BIP34Hash` (`None` where Core leaves it zero).
    bip34_hash: Option<&'static str>,
    /// `consensus.signet_challenge`, hex (`signet_blocks` is true exactly
    /// where this is set).
    signet_challenge: Option<&'static str>,
}

const TWO_WEEKS_SECONDS: i64 = 14 * 24 * 60 * 60;
const TEN_MINUTES_SECONDS: i64 = 10 * 60;
const DIFFICULTY_ONE_LIMIT: &str =
    "00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

const CORE_V30: [CoreChain; 5] = [
    CoreChain {
        network: Network::Main,
        rpc_port: 8332,
        pow_limit: DIFFICULTY_ONE_LIMIT,
        pow_limit_bits: 0x1d00_ffff,
        spacing_seconds: TEN_MINUTES_SECONDS,
        timespan_seconds: TWO_WEEKS_SECONDS,
        retarget_interval_blocks: 2016,
        allow_min_difficulty_blocks: false,
        enforce_bip94: false,
        no_retargeting: false,
        halving_interval_blocks: 210_000,
        bip34_hash: Some("000000000000024b89b42a942fe0d9fea3bb44ab7bd1b19115dd6a759c0808b8"),
        signet_challenge: None,
    },
    CoreChain {
        network: Network::Testnet3,
        rpc_port: 18332,
        pow_limit: DIFFICULTY_ONE_LIMIT,
        pow_limit_bits: 0x1d00_ffff,
        spacing_seconds: TEN_MINUTES_SECONDS,
        timespan_seconds: TWO_WEEKS_SECONDS,
        retarget_interval_blocks: 2016,
        allow_min_difficulty_blocks: true,
        enforce_bip94: false,
        no_retargeting: false,
        halving_interval_blocks: 210_000,
        bip34_hash: Some("0000000023b3a96d3484e5abb3755c413e7d41500f8e2a5c3f0dd01299cd8ef8"),
        signet_challenge: None,
    },
    CoreChain {
        network: Network::Testnet4,
        rpc_port: 48332,
        pow_limit: DIFFICULTY_ONE_LIMIT,
        pow_limit_bits: 0x1d00_ffff,
        spacing_seconds: TEN_MINUTES_SECONDS,
        timespan_seconds: TWO_WEEKS_SECONDS,
        retarget_interval_blocks: 2016,
        allow_min_difficulty_blocks: true,
        enforce_bip94: true,
        no_retargeting: false,
        halving_interval_blocks: 210_000,
        bip34_hash: None,
        signet_challenge: None,
    },
    CoreChain {
        network: Network::Signet,
        rpc_port: 38332,
        pow_limit: "00000377ae000000000000000000000000000000000000000000000000000000",
        pow_limit_bits: 0x1e03_77ae,
        spacing_seconds: TEN_MINUTES_SECONDS,
        timespan_seconds: TWO_WEEKS_SECONDS,
        retarget_interval_blocks: 2016,
        allow_min_difficulty_blocks: false,
        enforce_bip94: false,
        no_retargeting: false,
        halving_interval_blocks: 210_000,
        bip34_hash: None,
        signet_challenge: Some(
            "512103ad5e0edad18cb1f0fc0d28a3d4f1f3e445640337489abb10404f2d1e086be430210359ef5021964fe22d6f8e05b2463c9540ce96883fe3b278760f048f5189f2e6c452ae",
        ),
    },
    CoreChain {
        network: Network::Regtest,
        rpc_port: 18443,
        pow_limit: "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        pow_limit_bits: 0x207f_ffff,
        spacing_seconds: TEN_MINUTES_SECONDS,
        timespan_seconds: 24 * 60 * 60,
        retarget_interval_blocks: 144,
        allow_min_difficulty_blocks: true,
        enforce_bip94: false,
        no_retargeting: true,
        halving_interval_blocks: 150,
        bip34_hash: None,
        signet_challenge: None,
    },
];

#[test]
fn every_network_is_in_the_table_once() {
    let networks: Vec<Network> = CORE_V30.iter().map(|chain| chain.network).collect();
    assert_eq!(networks, Network::ALL);
}

#[test]
fn rpc_ports_are_cores() {
    for chain in &CORE_V30 {
        assert_eq!(chain.network.default_rpc_port(), chain.rpc_port, "{}", chain.network);
    }
}

#[test]
fn pow_limits_are_cores_to_the_last_bit() {
    for chain in &CORE_V30 {
        let params = Params::for_network(chain.network);
        let expected = U256::from_hex(chain.pow_limit).unwrap();
        assert_eq!(params.pow_limit.to_u256(), expected, "{}", chain.network);
        assert_eq!(params.pow_limit.to_compact(), CompactTarget(chain.pow_limit_bits));
        // Each genesis block sits at its network's minimum difficulty.
        assert_eq!(params.genesis.header.bits, chain.pow_limit_bits, "{}", chain.network);
    }
}

#[test]
fn retarget_timing_is_cores() {
    for chain in &CORE_V30 {
        let params = Params::for_network(chain.network);
        let network = chain.network;
        assert_eq!(params.pow_target_spacing_seconds, chain.spacing_seconds, "{network}");
        assert_eq!(params.pow_target_timespan_seconds, chain.timespan_seconds, "{network}");
        assert_eq!(params.difficulty_adjustment_interval(), chain.retarget_interval_blocks);
    }
}

#[test]
fn difficulty_switches_are_cores() {
    for chain in &CORE_V30 {
        let params = Params::for_network(chain.network);
        let network = chain.network;
        assert_eq!(
            params.allow_min_difficulty_blocks, chain.allow_min_difficulty_blocks,
            "{network}"
        );
        assert_eq!(params.enforce_bip94, chain.enforce_bip94, "{network}");
        assert_eq!(params.no_retargeting, chain.no_retargeting, "{network}");
    }
}

#[test]
fn halving_intervals_are_cores() {
    for chain in &CORE_V30 {
        let params = Params::for_network(chain.network);
        assert_eq!(params.subsidy_halving_interval, chain.halving_interval_blocks);
    }
}

#[test]
fn bip34_hashes_are_cores() {
    for chain in &CORE_V30 {
        let params = Params::for_network(chain.network);
        let expected = chain.bip34_hash.map(|hex| BlockHash::from_hex(hex).unwrap());
        assert_eq!(params.bip34_hash, expected, "{}", chain.network);
    }
}

#[test]
fn only_signet_has_a_challenge_and_its_magic_comes_from_it() {
    for chain in &CORE_V30 {
        let params = Params::for_network(chain.network);
        let expected = chain.signet_challenge.map(|hex| ibex_primitives::hex::decode(hex).unwrap());
        assert_eq!(params.signet_challenge, expected, "{}", chain.network);
        if let Some(challenge) = expected {
            // Core's SigNetParams: the first four bytes of the double
            // SHA-256 of the challenge serialised with its length.
            assert!(challenge.len() < 0xfd);
            let mut serialised = vec![challenge.len() as u8];
            serialised.extend_from_slice(&challenge);
            let digest = sha256d(&serialised);
            assert_eq!(params.message_start, [digest[0], digest[1], digest[2], digest[3]]);
        }
    }
}
