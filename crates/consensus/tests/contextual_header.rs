//! Core's `CheckBlockHeader` and `ContextualCheckBlockHeader`: each reject
//! reason from a header built to break exactly that rule, and the accepted
//! headers on the other side of each boundary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::{
    check_block_header, contextual_check_block_header, median_time_past, BlockError, HeaderContext,
};
use ibex_primitives::params::{BuriedDeployment, RegtestOptions};
use ibex_primitives::pow::check_proof_of_work;
use ibex_primitives::{BlockHash, CompactTarget, Hash256, Header, Height, Params};

const REGTEST_BITS: u32 = 0x207f_ffff;
const NOW: i64 = 1_700_000_000;

fn header(version: i32, time: u32, bits: u32) -> Header {
    Header {
        version,
        previous_block_hash: BlockHash([7; 32]),
        merkle_root: Hash256([9; 32]),
        time,
        bits,
        nonce: 0,
    }
}

/// A context where `header(.., time, REGTEST_BITS)` passes every rule for
/// `time` in (1,000,000, NOW + 7200].
fn context(height: u32) -> HeaderContext {
    HeaderContext {
        height: Height::new(height),
        previous_median_time_past: 1_000_000,
        previous_time: 1_000_100,
        expected_bits: CompactTarget(REGTEST_BITS),
        adjusted_time_seconds: NOW,
    }
}

fn reason(header: &Header, context: &HeaderContext, params: &Params) -> Result<(), String> {
    contextual_check_block_header(header, context, params)
        .map_err(|error| error.reject_reason().into_owned())
}

#[test]
fn proof_of_work_is_checked_against_the_networks_limit() {
    let params = Params::regtest();
    let mut candidate = header(4, 1_000_001, REGTEST_BITS);
    let (mut met, mut missed) = (None, None);
    while met.is_none() || missed.is_none() {
        let hash = candidate.block_hash();
        let slot = if check_proof_of_work(&hash, CompactTarget(REGTEST_BITS), &params) {
            &mut met
        } else {
            &mut missed
        };
        slot.get_or_insert((candidate, hash));
        candidate.nonce += 1;
    }
    let (good, good_hash) = met.unwrap();
    assert_eq!(check_block_header(&good, &good_hash, &params), Ok(()));
    let (bad, bad_hash) = missed.unwrap();
    assert_eq!(check_block_header(&bad, &bad_hash, &params), Err(BlockError::HighHash));
    assert_eq!(BlockError::HighHash.reject_reason(), "high-hash");
    // A target easier than regtest's limit is refused even when met.
    let mut easier = good;
    easier.bits = 0x2100_ffff;
    assert_eq!(check_block_header(&easier, &good_hash, &params), Err(BlockError::HighHash));
    // Mainnet's genesis meets mainnet's difficulty 1, not a harder target.
    let main = Params::main();
    let genesis = main.genesis.header;
    assert_eq!(check_block_header(&genesis, &main.genesis_hash, &main), Ok(()));
    let mut harder = genesis;
    harder.bits = 0x1a00_ffff; // 12 leading zero hex digits; the hash has 10
    assert_eq!(check_block_header(&harder, &main.genesis_hash, &main), Err(BlockError::HighHash));
}

#[test]
fn bits_must_be_the_expected_ones() {
    let params = Params::regtest();
    let wrong = header(4, 1_000_001, REGTEST_BITS - 1);
    assert_eq!(reason(&wrong, &context(5), &params), Err("bad-diffbits".into()));
    assert_eq!(
        contextual_check_block_header(&wrong, &context(5), &params),
        Err(BlockError::BadDifficultyBits { bits: REGTEST_BITS - 1, expected: REGTEST_BITS })
    );
    assert_eq!(reason(&header(4, 1_000_001, REGTEST_BITS), &context(5), &params), Ok(()));
    // Checked first: a header breaking the time rules too still reads bad-diffbits.
    let both = header(1, 0, REGTEST_BITS - 1);
    assert_eq!(reason(&both, &context(5), &params), Err("bad-diffbits".into()));
}

#[test]
fn time_must_pass_the_median_time_past() {
    let params = Params::regtest();
    let at_median = header(4, 1_000_000, REGTEST_BITS);
    assert_eq!(reason(&at_median, &context(5), &params), Err("time-too-old".into()));
    assert_eq!(
        contextual_check_block_header(&at_median, &context(5), &params),
        Err(BlockError::TimeTooOld { time: 1_000_000, median_time_past: 1_000_000 })
    );
    assert_eq!(reason(&header(4, 1_000_001, REGTEST_BITS), &context(5), &params), Ok(()));
    // Earlier than the parent itself is fine while after the median (no BIP94).
    let mut earlier = context(5);
    earlier.previous_time = 2_000_000;
    assert_eq!(reason(&header(4, 1_000_001, REGTEST_BITS), &earlier, &params), Ok(()));
}

#[test]
fn time_may_be_two_hours_ahead_and_no_more() {
    let params = Params::regtest();
    let limit = NOW + 2 * 60 * 60;
    let at_limit = header(4, limit as u32, REGTEST_BITS);
    assert_eq!(reason(&at_limit, &context(5), &params), Ok(()));
    let past_limit = header(4, limit as u32 + 1, REGTEST_BITS);
    assert_eq!(reason(&past_limit, &context(5), &params), Err("time-too-new".into()));
    assert_eq!(
        contextual_check_block_header(&past_limit, &context(5), &params),
        Err(BlockError::TimeTooNew { time: limit as u32 + 1, limit })
    );
}

#[test]
fn bip94_timewarp_rule_at_retarget_boundaries() {
    let bip94 = RegtestOptions::new().enforce_bip94(true).build();
    let interval = bip94.difficulty_adjustment_interval();
    assert_eq!(interval, 144);
    let mut boundary = context(interval);
    boundary.previous_time = 1_100_000;
    let too_early = header(4, 1_100_000 - 601, REGTEST_BITS);
    let just_in_time = header(4, 1_100_000 - 600, REGTEST_BITS);
    assert_eq!(reason(&too_early, &boundary, &bip94), Err("time-timewarp-attack".into()));
    assert_eq!(
        contextual_check_block_header(&too_early, &boundary, &bip94),
        Err(BlockError::TimeTimewarpAttack { time: 1_100_000 - 601, previous_time: 1_100_000 })
    );
    assert_eq!(reason(&just_in_time, &boundary, &bip94), Ok(()));
    // Only the first block of a period, and only where BIP94 is enforced.
    let mut inside = boundary;
    inside.height = Height::new(interval + 1);
    assert_eq!(reason(&too_early, &inside, &bip94), Ok(()));
    assert_eq!(reason(&too_early, &boundary, &Params::regtest()), Ok(()));
    // Testnet4 enforces it every 2,016 blocks.
    let testnet4 = Params::testnet4();
    let mut testnet_boundary = boundary;
    testnet_boundary.height = Height::new(2016 * 3);
    let testnet_header = header(4, 1_100_000 - 601, REGTEST_BITS);
    assert_eq!(
        reason(&testnet_header, &testnet_boundary, &testnet4),
        Err("time-timewarp-attack".into())
    );
    testnet_boundary.height = Height::new(144);
    assert_eq!(reason(&testnet_header, &testnet_boundary, &testnet4), Ok(()));
}

#[test]
fn versions_below_each_soft_forks_minimum_are_refused_once_active() {
    let params = RegtestOptions::new()
        .activation_height(BuriedDeployment::HeightInCoinbase, 10)
        .activation_height(BuriedDeployment::StrictDerSignatures, 20)
        .activation_height(BuriedDeployment::CheckLockTimeVerify, 30)
        .build();
    let check = |version: i32, height: u32| {
        reason(&header(version, 1_000_001, REGTEST_BITS), &context(height), &params)
    };
    assert_eq!(check(1, 9), Ok(()));
    assert_eq!(check(1, 10), Err("bad-version(0x00000001)".into()));
    assert_eq!(check(2, 10), Ok(()));
    assert_eq!(check(2, 19), Ok(()));
    assert_eq!(check(2, 20), Err("bad-version(0x00000002)".into()));
    assert_eq!(check(3, 20), Ok(()));
    assert_eq!(check(3, 29), Ok(()));
    assert_eq!(check(3, 30), Err("bad-version(0x00000003)".into()));
    assert_eq!(check(4, 30), Ok(()));
    assert_eq!(check(0x2000_0000, 30), Ok(()));
    // nVersion is signed: a set top bit is below every minimum.
    assert_eq!(check(-1, 30), Err("bad-version(0xffffffff)".into()));
    assert_eq!(check(i32::MIN, 10), Err("bad-version(0x80000000)".into()));
    assert_eq!(check(-1, 9), Ok(()));
    let refused =
        contextual_check_block_header(&header(1, 1_000_001, REGTEST_BITS), &context(10), &params);
    assert_eq!(refused, Err(BlockError::BadVersion { version: 1 }));
    // Mainnet: BIP34 from 227,931.
    let main = Params::main();
    let mut main_context = context(227_930);
    main_context.expected_bits = CompactTarget(REGTEST_BITS);
    let version_one = header(1, 1_000_001, REGTEST_BITS);
    assert_eq!(reason(&version_one, &main_context, &main), Ok(()));
    main_context.height = Height::new(227_931);
    assert_eq!(reason(&version_one, &main_context, &main), Err("bad-version(0x00000001)".into()));
}

#[test]
fn median_time_past_matches_core() {
    // Out of order times, as miners may set them: the median of the last 11.
    let times = [10, 30, 20, 50, 40, 70, 60, 90, 80, 110, 100, 5];
    assert_eq!(median_time_past(&times), 60);
    assert_eq!(median_time_past(&times[..1]), 10);
    assert_eq!(median_time_past(&times[..4]), 30);
}
