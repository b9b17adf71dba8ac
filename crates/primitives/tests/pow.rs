//! Proof of work against Bitcoin Core v30: its `pow_tests.cpp` retargets,
//! real mainnet headers, and a regtest chain Core made (chain work and the
//! `log2_work` its `UpdateTip` lines print).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_primitives::pow::{
    block_proof, calculate_next_work_required, check_proof_of_work, log2_work, next_work_required,
    permitted_difficulty_transition, BlockSummary, ChainWork, CompactTarget, RetargetError, U256,
};
use ibex_primitives::{BlockHash, BlockView, Header, Params};
use std::path::PathBuf;

fn shared(path: &str) -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared")
    .join(path)
}

fn summary(height: u32, bits: u32, time: u32) -> BlockSummary {
    BlockSummary { height, bits: CompactTarget(bits), time }
}

struct Retarget {
    /// The time of the period's first block.
    first_time: u32,
    last: BlockSummary,
    expected: u32,
}

/// Core's `pow_tests.cpp`: mainnet periods ending at 32,255 (no limit
/// applies), 2,015 (capped at the pow limit), 68,543 (a quick period,
/// clamped to a quarter) and 46,367 (with a made-up first time, clamped to
/// four times).
fn core_retargets() -> [Retarget; 4] {
    [
        Retarget {
            first_time: 1_261_130_161,
            last: summary(32_255, 0x1d00_ffff, 1_262_152_739),
            expected: 0x1d00_d86a,
        },
        Retarget {
            first_time: 1_231_006_505,
            last: summary(2_015, 0x1d00_ffff, 1_233_061_996),
            expected: 0x1d00_ffff,
        },
        Retarget {
            first_time: 1_279_008_237,
            last: summary(68_543, 0x1c05_a3f4, 1_279_297_671),
            expected: 0x1c01_68fd,
        },
        Retarget {
            first_time: 1_263_163_443,
            last: summary(46_367, 0x1c38_7f6f, 1_269_211_443),
            expected: 0x1d00_e1fd,
        },
    ]
}

#[test]
fn core_mainnet_retargets() {
    let main = Params::main();
    for case in core_retargets() {
        let first = summary(case.last.height - 2015, 0x1d00_ffff, case.first_time);
        let next = calculate_next_work_required(&main, case.last, first);
        assert_eq!(next, CompactTarget(case.expected), "height {}", case.last.height);
        let new_height = case.last.height + 1;
        assert!(permitted_difficulty_transition(&main, new_height, case.last.bits, next));
        // The same through the full rule, which looks the first block up.
        let through_lookup = next_work_required(&main, case.last, case.last.time + 600, |height| {
            assert_eq!(height, first.height);
            Some(first)
        });
        assert_eq!(through_lookup, Ok(next));
    }
}

#[test]
fn permitted_transitions_stop_at_the_clamps() {
    let main = Params::main();
    let [_, _, quick, slow] = core_retargets();
    // One step past the quarter-timespan clamp is too hard.
    let too_hard = CompactTarget(quick.expected - 1);
    assert!(!permitted_difficulty_transition(
        &main,
        quick.last.height + 1,
        quick.last.bits,
        too_hard
    ));
    // One step past the four-times clamp is too easy.
    let too_easy = CompactTarget(slow.expected + 1);
    assert!(!permitted_difficulty_transition(
        &main,
        slow.last.height + 1,
        slow.last.bits,
        too_easy
    ));
    // Off a period boundary the bits may not change at all.
    let bits = CompactTarget(0x1d00_ffff);
    assert!(permitted_difficulty_transition(&main, 32_255, bits, bits));
    assert!(!permitted_difficulty_transition(&main, 32_255, bits, CompactTarget(0x1d00_d86a)));
    // Chains with min-difficulty blocks permit anything.
    let testnet = Params::testnet3();
    assert!(permitted_difficulty_transition(&testnet, 32_255, bits, CompactTarget(0x1c00_0001)));
}

#[test]
fn off_boundary_blocks_keep_the_difficulty_on_mainnet() {
    let main = Params::main();
    let last = summary(32_256, 0x1d00_d86a, 1_262_153_464);
    let next = next_work_required(&main, last, last.time + 100_000, |_| None);
    assert_eq!(next, Ok(CompactTarget(0x1d00_d86a)));
}

#[test]
fn a_missing_first_block_is_an_error() {
    let main = Params::main();
    let last = summary(4031, 0x1d00_ffff, 1_234_000_000);
    let next = next_work_required(&main, last, last.time + 600, |_| None);
    assert_eq!(next, Err(RetargetError::MissingAncestor { height: 2016, tip_height: 4031 }));
}

/// A testnet-like chain: `bits[height]`, blocks ten minutes apart.
fn testnet_chain(bits: &[u32]) -> Vec<BlockSummary> {
    bits.iter()
        .enumerate()
        .map(|(height, &bits)| summary(height as u32, bits, 1_700_000_000 + 600 * height as u32))
        .collect()
}

#[test]
fn testnet_min_difficulty_rule() {
    let testnet = Params::testnet3();
    let limit = 0x1d00_ffff;
    let real = 0x1c0f_fff0;
    // Heights 2016.. : a real block at the period start, then two
    // min-difficulty blocks.
    let mut bits = vec![real; 2016];
    bits.extend([real, limit, limit]);
    let chain = testnet_chain(&bits);
    let last = *chain.last().unwrap();
    let lookup = |height: u32| chain.get(height as usize).copied();
    // More than 20 minutes after its parent: minimum difficulty.
    assert_eq!(
        next_work_required(&testnet, last, last.time + 1201, lookup),
        Ok(CompactTarget(limit))
    );
    // Exactly 20 minutes is not more: back to the last real difficulty.
    assert_eq!(
        next_work_required(&testnet, last, last.time + 1200, lookup),
        Ok(CompactTarget(real))
    );
    // The walk stops at a period's first block even if it is min-difficulty.
    let mut bits = vec![real; 2016];
    bits.extend([limit, limit]);
    let chain = testnet_chain(&bits);
    let last = *chain.last().unwrap();
    let next = next_work_required(&testnet, last, last.time + 600, |height| {
        chain.get(height as usize).copied()
    });
    assert_eq!(next, Ok(CompactTarget(limit)));
    // The walk stops at genesis.
    let chain = testnet_chain(&[limit, limit, limit]);
    let next = next_work_required(&testnet, chain[2], chain[2].time + 600, |height| {
        chain.get(height as usize).copied()
    });
    assert_eq!(next, Ok(CompactTarget(limit)));
}

#[test]
fn testnet4_retargets_from_the_first_block_of_the_period() {
    let testnet3 = Params::testnet3();
    let testnet4 = Params::testnet4();
    // A period that took exactly two weeks, ending in a min-difficulty block.
    let first = summary(2016, 0x1c0f_fff0, 1_700_000_000);
    let last = summary(4031, 0x1d00_ffff, 1_700_000_000 + 14 * 24 * 60 * 60);
    // BIP94 keeps the period's real difficulty...
    assert_eq!(calculate_next_work_required(&testnet4, last, first), CompactTarget(0x1c0f_fff0));
    // ...where testnet3 resets to the minimum (the bug BIP94 fixes).
    assert_eq!(calculate_next_work_required(&testnet3, last, first), CompactTarget(0x1d00_ffff));
}

#[test]
fn regtest_never_retargets() {
    let regtest = Params::regtest();
    let first = summary(0, 0x207f_ffff, 1_296_688_602);
    let last = summary(143, 0x207f_ffff, 1_296_688_602 + 1);
    assert_eq!(calculate_next_work_required(&regtest, last, first), CompactTarget(0x207f_ffff));
    let next =
        next_work_required(&regtest, last, last.time + 1, |height| (height == 0).then_some(first));
    assert_eq!(next, Ok(CompactTarget(0x207f_ffff)));
}

#[test]
fn core_check_proof_of_work_cases() {
    let main = Params::main();
    let limit = main.pow_limit.to_u256();
    let one = BlockHash(U256::ONE.to_le_bytes());
    // Negative target.
    let negative = CompactTarget::from_signed_value(limit, true);
    assert!(!check_proof_of_work(&one, negative, &main));
    // Overflowing target.
    assert!(!check_proof_of_work(&one, CompactTarget(!0x0080_0000), &main));
    // Easier than the pow limit.
    let too_easy = CompactTarget::from_value(limit.wrapping_mul_u64(2));
    assert!(!check_proof_of_work(&one, too_easy, &main));
    // Hash above the target.
    let at_limit = CompactTarget::from_value(limit);
    let above = BlockHash(limit.wrapping_mul_u64(2).to_le_bytes());
    assert!(!check_proof_of_work(&above, at_limit, &main));
    assert!(check_proof_of_work(&one, at_limit, &main));
    // Zero target.
    let zero = CompactTarget::from_value(U256::ZERO);
    assert!(!check_proof_of_work(&BlockHash(U256::ZERO.to_le_bytes()), zero, &main));
}

#[test]
fn shared_mainnet_headers_meet_their_targets() {
    let main = Params::main();
    for name in ["mainnet-413567.raw", "mainnet-702861.raw"] {
        let bytes = std::fs::read(shared("vectors/blocks").join(name)).unwrap();
        let header: Header = *BlockView::parse(&bytes).unwrap().header();
        let bits = CompactTarget(header.bits);
        assert!(check_proof_of_work(&header.block_hash(), bits, &main), "{name}");
        // A hash one above the target fails.
        let target = bits.expand().value;
        let just_above = BlockHash(target.wrapping_add(U256::ONE).to_le_bytes());
        assert!(!check_proof_of_work(&just_above, bits, &main));
        assert!(check_proof_of_work(&BlockHash(target.to_le_bytes()), bits, &main));
        // Signet's limit is far easier, but regtest's blocks fail mainnet's.
        assert!(!check_proof_of_work(&header.block_hash(), CompactTarget(0x207f_ffff), &main));
    }
}

#[test]
fn block_proof_is_two_to_the_256_over_target_plus_one() {
    assert_eq!(block_proof(CompactTarget(0x1d00_ffff)).to_u256(), U256::from_u64(0x1_0001_0001));
    // work = floor(2^256 / (target + 1)): work * (target + 1) fits in 256
    // bits and (work + 1) * (target + 1) does not.
    for bits in [0x1d00_ffff, 0x1d00_d86a, 0x1c05_a3f4, 0x1c38_7f6f, 0x1e03_77ae, 0x207f_ffff] {
        let divisor = CompactTarget(bits).expand().value.wrapping_add(U256::ONE);
        let work = block_proof(CompactTarget(bits)).to_u256();
        assert!(work.bits() <= 64, "{bits:08x}");
        let fits = |factor: u64| {
            divisor.wrapping_mul_u64(factor).checked_div(U256::from_u64(factor)) == Some(divisor)
        };
        assert!(fits(work.low_u64()), "{bits:08x}");
        assert!(!fits(work.low_u64() + 1), "{bits:08x}");
    }
}

fn shared_regtest_getblocks() -> Vec<serde_json::Value> {
    let directory = shared("chains/core-wallet-mix/getblock");
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(&directory).unwrap().map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    paths
        .iter()
        .map(|path| serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap())
        .collect()
}

#[test]
fn regtest_chain_work_matches_cores_getblock() {
    let regtest = Params::regtest();
    let blocks = shared_regtest_getblocks();
    assert!(blocks.len() >= 10);
    for block in &blocks {
        let header_bytes =
            ibex_primitives::hex::decode_array::<80>(block["header_hex"].as_str().unwrap())
                .unwrap();
        let header = Header::decode(&header_bytes);
        let height = block["height"].as_u64().unwrap();
        let bits = CompactTarget(header.bits);
        assert!(check_proof_of_work(&header.block_hash(), bits, &regtest), "height {height}");
        let info = &block["header"];
        assert_eq!(bits.to_string(), info["bits"].as_str().unwrap());
        assert_eq!(bits.expand().value.to_hex(), info["target"].as_str().unwrap());
        let chain_work =
            (0..=height).fold(ChainWork::ZERO, |work, _| work.wrapping_add(block_proof(bits)));
        assert_eq!(chain_work.to_string(), info["chainwork"].as_str().unwrap(), "height {height}");
        // Regtest never retargets: the next block's bits are the same.
        let last = BlockSummary { height: height as u32, bits, time: header.time };
        // Every earlier regtest block has the same bits, so the walk back
        // over min-difficulty blocks runs to the period's first block.
        let next = next_work_required(&regtest, last, header.time + 1, |height| {
            Some(BlockSummary { height, bits, time: header.time })
        });
        assert_eq!(next, Ok(bits));
    }
}

#[test]
fn log2_work_matches_cores_update_tip_lines() {
    let log = std::fs::read_to_string(shared("chains/core-wallet-mix/debug-sample.log")).unwrap();
    let per_block = block_proof(CompactTarget(0x207f_ffff));
    let mut lines_checked = 0;
    for line in log.lines().filter(|line| line.contains("UpdateTip: new best=")) {
        let field = |name: &str| -> &str {
            let start = line.find(&format!(" {name}=")).unwrap() + name.len() + 2;
            line[start..].split(' ').next().unwrap()
        };
        let height: u64 = field("height").parse().unwrap();
        let work = ChainWork::from_u256(per_block.to_u256().wrapping_mul_u64(height + 1));
        assert_eq!(format!("{:.6}", log2_work(work)), field("log2_work"), "{line}");
        lines_checked += 1;
    }
    assert!(lines_checked > 100, "only {lines_checked} UpdateTip lines");
}
