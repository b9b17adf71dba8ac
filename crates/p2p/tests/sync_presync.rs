//! Core's two-pass low-work headers sync (`HeadersSyncState`) on regtest
//! chains mined in the test: a chain with the work is released once, in
//! order, only after redownload; a low-work chain leaves nothing; a peer
//! that serves another chain the second time is caught by the
//! commitments; memory stays within the stated bound; the difficulty rule
//! applies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "sync_support.rs"]
mod support;

use ibex_p2p::sync::headers_presync::{
    ChainStart, Finish, HeadersSyncAbort, HeadersSyncParams, HeadersSyncState, Outcome, Phase,
    SyncSecret,
};
use ibex_p2p::sync::locator::HashChain;
use ibex_p2p::{LocatorRequest, HEADERS_PER_MESSAGE_MAX};
use ibex_primitives::pow::block_proof;
use ibex_primitives::{BlockHash, ChainWork, CompactTarget, Header, Params};
use support::{chain_from_genesis, hash_chain, mine_header, regtest_work, serve_headers};

const SMALL_SYNC: HeadersSyncParams =
    HeadersSyncParams { commitment_period: 50, redownload_buffer_size: 500 };

fn genesis_start(params: &Params) -> ChainStart {
    let genesis = params.genesis.header;
    ChainStart {
        hash: genesis.block_hash(),
        height: 0,
        chain_work: block_proof(CompactTarget(genesis.bits)),
        bits: genesis.bits,
        time: genesis.time,
        median_time_past: i64::from(genesis.time),
        locator: vec![genesis.block_hash()],
    }
}

/// Seconds since the epoch far enough after genesis for `headers` blocks.
fn now_after(params: &Params, headers: u32) -> i64 {
    i64::from(params.genesis.header.time) + i64::from(headers) * 600 + 3_600
}

/// A peer serving `headers` (genesis first).
struct ServingPeer {
    headers: Vec<Header>,
    chain: HashChain,
}

impl ServingPeer {
    fn new(headers: Vec<Header>) -> ServingPeer {
        let chain = hash_chain(&headers);
        ServingPeer { headers, chain }
    }

    fn answer(&self, locator: Vec<BlockHash>) -> Vec<Header> {
        let request = LocatorRequest {
            locator_version: 70_016,
            locator_hashes: locator,
            stop_hash: BlockHash::ZERO,
        };
        serve_headers(&self.headers, &self.chain, &request)
    }
}

/// Runs the sync against `peer_for_round(round)` until it ends; returns the
/// released headers, the final outcome and the phase seen at each round.
fn run(
    state: &mut HeadersSyncState,
    mut peer_for_round: impl FnMut(usize, Phase) -> &'static ServingPeer,
) -> (Vec<Header>, Outcome, Vec<Phase>) {
    let mut released = Vec::new();
    let mut phases = Vec::new();
    for round in 0..1_000 {
        let phase = state.phase();
        phases.push(phase);
        let locator = state.next_request_locator().expect("sync still running");
        let answer = peer_for_round(round, phase).answer(locator);
        assert!(state.heap_bytes() <= state.heap_bytes_bound());
        let result = state.process_next_headers(&answer, answer.len() == HEADERS_PER_MESSAGE_MAX);
        if !result.success() {
            assert!(result.headers_to_offer.is_empty());
        }
        released.extend(result.headers_to_offer);
        if result.outcome != Outcome::RequestMore {
            assert_eq!(state.phase(), Phase::Final);
            assert_eq!(state.heap_bytes(), 0, "a finished sync holds nothing");
            return (released, result.outcome, phases);
        }
    }
    panic!("sync did not end");
}

fn leak(peer: ServingPeer) -> &'static ServingPeer {
    Box::leak(Box::new(peer))
}

#[test]
fn chain_with_enough_work_is_released_once_in_order_after_redownload() {
    let params = Params::regtest();
    let headers = chain_from_genesis(&params, 5_000, 1);
    let peer = leak(ServingPeer::new(headers.clone()));
    // Genesis plus 3,000 headers reach the threshold.
    let minimum = regtest_work(3_001);
    let mut state = HeadersSyncState::new(
        &params,
        SMALL_SYNC,
        genesis_start(&params),
        minimum,
        SyncSecret([7; 32]),
        now_after(&params, 5_000),
    );
    let (released, outcome, phases) = run(&mut state, |_, _| peer);
    // Presync ends after the message that passes the threshold (height
    // 4,000); redownload releases everything up to there.
    assert_eq!(outcome, Outcome::Finished(Finish::AllReleased { height: 4_000 }));
    assert_eq!(released, headers[1..=4_000].to_vec());
    assert_eq!(phases.iter().filter(|phase| **phase == Phase::Presync).count(), 2);
    assert_eq!(phases.iter().filter(|phase| **phase == Phase::Redownload).count(), 2);
}

#[test]
fn presync_releases_nothing_and_redownload_releases_only_buffered_batches() {
    let params = Params::regtest();
    let headers = chain_from_genesis(&params, 6_000, 2);
    let peer = ServingPeer::new(headers.clone());
    let mut state = HeadersSyncState::new(
        &params,
        SMALL_SYNC,
        genesis_start(&params),
        regtest_work(5_001),
        SyncSecret([3; 32]),
        now_after(&params, 6_000),
    );
    let mut released = Vec::new();
    loop {
        let phase = state.phase();
        let answer = peer.answer(state.next_request_locator().unwrap());
        let result = state.process_next_headers(&answer, answer.len() == HEADERS_PER_MESSAGE_MAX);
        if phase == Phase::Presync {
            assert!(result.headers_to_offer.is_empty(), "presync stores nothing");
        } else if result.outcome == Outcome::RequestMore {
            // Before the threshold, the newest 500 checked headers stay.
            released.extend(result.headers_to_offer);
            assert!(released.len() + 500 <= answer_height(&headers, &answer));
        } else {
            released.extend(result.headers_to_offer);
            break;
        }
    }
    assert_eq!(released, headers[1..=6_000].to_vec());
}

/// The height of the last header of `answer`.
fn answer_height(headers: &[Header], answer: &[Header]) -> usize {
    let last = answer.last().unwrap().block_hash();
    headers.iter().position(|header| header.block_hash() == last).unwrap()
}

#[test]
fn low_work_chain_is_dropped_with_nothing_released() {
    let params = Params::regtest();
    let peer = leak(ServingPeer::new(chain_from_genesis(&params, 2_500, 3)));
    let mut state = HeadersSyncState::new(
        &params,
        SMALL_SYNC,
        genesis_start(&params),
        regtest_work(3_001),
        SyncSecret([1; 32]),
        now_after(&params, 2_500),
    );
    let (released, outcome, phases) = run(&mut state, |_, _| peer);
    assert!(released.is_empty());
    assert_eq!(outcome, Outcome::Finished(Finish::LowWorkChainEnded { height: 2_500 }));
    assert!(phases.iter().all(|phase| *phase == Phase::Presync));
    assert_eq!(state.presync_height(), 2_500);
    assert_eq!(state.presync_work(), regtest_work(2_501));
}

#[test]
fn a_peer_serving_another_chain_in_redownload_is_caught() {
    let params = Params::regtest();
    let honest = chain_from_genesis(&params, 5_000, 4);
    let other = chain_from_genesis(&params, 5_000, 5);
    let honest_peer = leak(ServingPeer::new(honest));
    let other_peer = leak(ServingPeer::new(other));
    let mut state = HeadersSyncState::new(
        &params,
        SMALL_SYNC,
        genesis_start(&params),
        regtest_work(4_001),
        SyncSecret([9; 32]),
        now_after(&params, 5_000),
    );
    let (released, outcome, _) = run(&mut state, |_, phase| match phase {
        Phase::Presync => honest_peer,
        _ => other_peer,
    });
    assert!(released.is_empty(), "nothing of the other chain gets out");
    assert!(
        matches!(outcome, Outcome::Aborted(HeadersSyncAbort::CommitmentMismatch { height }) if height < 2_000),
        "{outcome:?}"
    );
}

#[test]
fn switching_chains_midway_keeps_only_the_checked_prefix() {
    let params = Params::regtest();
    let honest = chain_from_genesis(&params, 5_000, 6);
    // Shares the first 2,000 headers, then goes its own way.
    let mut other = honest[..=2_000].to_vec();
    for _ in 0..3_000 {
        let previous = *other.last().unwrap();
        other.push(mine_header(&params, &previous, 77, support::REGTEST_BITS));
    }
    let honest_peer = leak(ServingPeer::new(honest.clone()));
    let other_peer = leak(ServingPeer::new(other));
    let mut redownload_rounds = 0;
    let mut state = HeadersSyncState::new(
        &params,
        SMALL_SYNC,
        genesis_start(&params),
        regtest_work(4_501),
        SyncSecret([11; 32]),
        now_after(&params, 5_000),
    );
    let (released, outcome, _) = run(&mut state, |_, phase| {
        if phase == Phase::Redownload {
            redownload_rounds += 1;
        }
        if redownload_rounds >= 2 {
            other_peer
        } else {
            honest_peer
        }
    });
    assert!(matches!(outcome, Outcome::Aborted(HeadersSyncAbort::CommitmentMismatch { .. })));
    // The first redownload message (2,000 headers) released all but the
    // newest 500, all from the shared prefix.
    assert_eq!(released, honest[1..=1_500].to_vec());
}

#[test]
fn memory_stays_within_the_bound_on_a_long_chain() {
    let params = Params::regtest();
    let sync_params = HeadersSyncParams { commitment_period: 10, redownload_buffer_size: 100 };
    let headers = chain_from_genesis(&params, 40_000, 8);
    let peer = leak(ServingPeer::new(headers));
    // Work out of reach: the whole chain goes through presync.
    let mut state = HeadersSyncState::new(
        &params,
        sync_params,
        genesis_start(&params),
        regtest_work(1_000_000),
        SyncSecret([2; 32]),
        now_after(&params, 40_000),
    );
    let mut most_heap_bytes = 0;
    for _ in 0..100 {
        let answer = peer.answer(state.next_request_locator().unwrap());
        let full = answer.len() == HEADERS_PER_MESSAGE_MAX;
        let result = state.process_next_headers(&answer, full);
        assert!(result.headers_to_offer.is_empty());
        most_heap_bytes = most_heap_bytes.max(state.heap_bytes());
        assert!(state.heap_bytes() <= state.heap_bytes_bound());
        if result.outcome != Outcome::RequestMore {
            assert_eq!(
                result.outcome,
                Outcome::Finished(Finish::LowWorkChainEnded { height: 40_000 })
            );
            break;
        }
        // One bit per 10 headers: ~4,000 bits, 500 bytes, for 40,000
        // headers (3.2 MB of them).
        assert!(state.commitment_count() <= u64::from(state.presync_height()) / 10 + 1);
    }
    assert!(most_heap_bytes <= 2 * 4_000 / 8 + 64, "{most_heap_bytes}");
}

#[test]
fn a_chain_longer_than_time_allows_is_given_up() {
    let params = Params::regtest();
    let sync_params = HeadersSyncParams { commitment_period: 10, redownload_buffer_size: 100 };
    let start = genesis_start(&params);
    // Now is the chain start's time: 6 blocks/s for the 2-hour future
    // allowance is 43,200 blocks, 4,320 commitments.
    let now = start.median_time_past;
    let peer = leak(ServingPeer::new(chain_from_genesis(&params, 50_000, 10)));
    let mut state = HeadersSyncState::new(
        &params,
        sync_params,
        start,
        regtest_work(1_000_000),
        SyncSecret([4; 32]),
        now,
    );
    assert_eq!(state.max_commitments(), 4_320);
    let (released, outcome, _) = run(&mut state, |_, _| peer);
    assert!(released.is_empty());
    let Outcome::Aborted(HeadersSyncAbort::ExceededMaxCommitments { height }) = outcome else {
        panic!("{outcome:?}")
    };
    assert!((43_190..=43_210).contains(&height), "{height}");
}

#[test]
fn difficulty_may_change_only_at_retarget_heights() {
    let mut params = Params::regtest();
    // Core's PermittedDifficultyTransition allows anything on chains with
    // min-difficulty blocks; check the rule as mainnet has it.
    params.allow_min_difficulty_blocks = false;
    let genesis = params.genesis.header;
    let mut headers = vec![genesis];
    for height in 1..=100u32 {
        let bits = if height >= 50 { 0x207f_fffe } else { support::REGTEST_BITS };
        let previous = *headers.last().unwrap();
        headers.push(mine_header(&params, &previous, 12, bits));
    }
    let peer = leak(ServingPeer::new(headers));
    let mut state = HeadersSyncState::new(
        &params,
        SMALL_SYNC,
        genesis_start(&params),
        regtest_work(1_000),
        SyncSecret([5; 32]),
        now_after(&params, 100),
    );
    let (_, outcome, _) = run(&mut state, |_, _| peer);
    assert_eq!(
        outcome,
        Outcome::Aborted(HeadersSyncAbort::InvalidDifficultyTransition {
            height: 50,
            phase: Phase::Presync
        })
    );
}

#[test]
fn headers_that_do_not_follow_the_last_are_refused() {
    let params = Params::regtest();
    let headers = chain_from_genesis(&params, 3_000, 13);
    let mut state = HeadersSyncState::new(
        &params,
        SMALL_SYNC,
        genesis_start(&params),
        regtest_work(10_000),
        SyncSecret([6; 32]),
        now_after(&params, 3_000),
    );
    let first = state.process_next_headers(&headers[1..=2_000], true);
    assert_eq!(first.outcome, Outcome::RequestMore);
    // Skips a header.
    let second = state.process_next_headers(&headers[2_002..], false);
    assert_eq!(
        second.outcome,
        Outcome::Aborted(HeadersSyncAbort::NonContinuous { height: 2_001, phase: Phase::Presync })
    );
    assert_eq!(state.next_request_locator(), None);
    let after = state.process_next_headers(&headers[1..2], false);
    assert_eq!(after.outcome, Outcome::Aborted(HeadersSyncAbort::AlreadyFinished));
    let _unused: ChainWork = state.presync_work();
}
