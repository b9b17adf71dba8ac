//! Headers sync per peer (Core's `ProcessHeadersMessage` and the headers
//! parts of `SendMessages`) against simulated peers serving mined regtest
//! chains: a fresh node syncs through presync and redownload and offers
//! every header once, in order; without a minimum chain work it offers
//! them directly; a low-work chain is never offered; bad proof of work,
//! broken chains and oversized messages are misbehaviour, unconnecting
//! headers are not; a sync peer that times out is replaced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "sync_support.rs"]
mod support;

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use ibex_p2p::sync::headers::{HeadersSync, HEADERS_DOWNLOAD_TIMEOUT_BASE};
use ibex_p2p::sync::headers_presync::HeadersSyncParams;
use ibex_p2p::sync::locator::HashChain;
use ibex_p2p::sync::{Action, DisconnectReason, Misbehavior, PeerId};
use ibex_p2p::NetworkMessage;
use ibex_primitives::pow::check_proof_of_work;
use ibex_primitives::{CompactTarget, Header, Params};
use support::{
    chain_from_genesis, hash_chain, regtest_with_minimum_work, serve_headers, MemoryIndex,
};

const SMALL_SYNC: HeadersSyncParams =
    HeadersSyncParams { commitment_period: 50, redownload_buffer_size: 500 };
/// Mid-2026, in Unix seconds: the regtest genesis (2011) is long past.
const NOW_UNIX_SECONDS: i64 = 1_782_000_000;

struct SimulatedPeer {
    headers: Vec<Header>,
    chain: HashChain,
    answers: bool,
}

struct Harness {
    sync: HeadersSync,
    index: MemoryIndex,
    peers: HashMap<PeerId, SimulatedPeer>,
    pending: VecDeque<(PeerId, Vec<Header>)>,
    offers: Vec<(PeerId, Vec<Header>)>,
    misbehaving: Vec<(PeerId, Misbehavior)>,
    disconnected: Vec<(PeerId, DisconnectReason)>,
    getheaders_sent: Vec<PeerId>,
    presync_seen: bool,
    now: Instant,
}

impl Harness {
    fn new(params: &Params) -> Harness {
        Harness {
            sync: HeadersSync::new(params, SMALL_SYNC, [42; 32]),
            index: MemoryIndex::new(params),
            peers: HashMap::new(),
            pending: VecDeque::new(),
            offers: Vec::new(),
            misbehaving: Vec::new(),
            disconnected: Vec::new(),
            getheaders_sent: Vec::new(),
            presync_seen: false,
            now: Instant::now(),
        }
    }

    fn connect(&mut self, peer: PeerId, headers: Vec<Header>, answers: bool) {
        let chain = hash_chain(&headers);
        self.peers.insert(peer, SimulatedPeer { headers, chain, answers });
        self.sync.peer_connected(peer).unwrap();
    }

    fn handle(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Send { peer, message: NetworkMessage::GetHeaders(request) } => {
                    self.getheaders_sent.push(peer);
                    let simulated = &self.peers[&peer];
                    if simulated.answers {
                        let answer = serve_headers(&simulated.headers, &simulated.chain, &request);
                        self.pending.push_back((peer, answer));
                    }
                }
                Action::OfferHeaders { peer, headers } => {
                    self.index.accept(&headers);
                    self.offers.push((peer, headers));
                }
                Action::Misbehaving { peer, reason } => self.misbehaving.push((peer, reason)),
                Action::Disconnect { peer, reason } => {
                    self.disconnected.push((peer, reason));
                    self.sync.peer_disconnected(peer);
                    self.peers.remove(&peer);
                }
                other => panic!("unexpected action {other:?}"),
            }
        }
    }

    fn deliver(&mut self, peer: PeerId, headers: Vec<Header>) {
        let actions = self.sync.on_headers(peer, headers, self.now, NOW_UNIX_SECONDS, &self.index);
        self.handle(actions);
        self.presync_seen |= self.sync.presync(peer).is_some();
    }

    /// Polls and delivers answers until nothing is left to deliver.
    fn run_until_idle(&mut self) {
        for _ in 0..10_000 {
            let actions = self.sync.poll(self.now, NOW_UNIX_SECONDS, &self.index);
            self.handle(actions);
            let Some((peer, headers)) = self.pending.pop_front() else { return };
            if self.peers.contains_key(&peer) {
                self.deliver(peer, headers);
            }
            self.now += Duration::from_millis(10);
        }
        panic!("headers sync did not settle");
    }

    fn offered_headers(&self) -> Vec<Header> {
        self.offers.iter().flat_map(|(_, headers)| headers.iter().copied()).collect()
    }
}

#[test]
fn fresh_node_syncs_a_high_work_chain_through_presync() {
    // Genesis plus 3,000 headers reach the minimum chain work.
    let params = regtest_with_minimum_work(2 * 3_001);
    let chain = chain_from_genesis(&params, 5_000, 1);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain.clone(), true);
    harness.run_until_idle();
    assert!(harness.presync_seen, "the chain started below the minimum work");
    assert!(harness.misbehaving.is_empty() && harness.disconnected.is_empty());
    // Every header offered exactly once, in chain order.
    assert_eq!(harness.offered_headers(), chain[1..].to_vec());
    assert_eq!(harness.index.best_height(), 5_000);
    assert_eq!(harness.sync.best_known_block(PeerId(1)), Some(chain[5_000].block_hash()));
}

#[test]
fn without_a_minimum_work_headers_go_straight_to_the_engine() {
    let params = Params::regtest();
    let chain = chain_from_genesis(&params, 4_500, 2);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain.clone(), true);
    harness.run_until_idle();
    assert!(!harness.presync_seen);
    assert_eq!(harness.offered_headers(), chain[1..].to_vec());
    // 2,000 + 2,000 + 500: three messages, three offers.
    assert_eq!(harness.offers.len(), 3);
}

#[test]
fn a_low_work_chain_is_never_offered() {
    let params = regtest_with_minimum_work(2 * 3_001);
    let chain = chain_from_genesis(&params, 2_500, 3);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain, true);
    harness.run_until_idle();
    assert!(harness.presync_seen);
    assert!(harness.offers.is_empty());
    assert_eq!(harness.index.best_height(), 0);
    assert!(harness.sync.presync(PeerId(1)).is_none(), "presync ended and freed");
    // Not a full message, so never a presync: dropped at once.
    let mut short = Harness::new(&params);
    short.connect(PeerId(2), chain_from_genesis(&params, 1_500, 4), true);
    short.run_until_idle();
    assert!(!short.presync_seen && short.offers.is_empty());
}

#[test]
fn a_header_without_its_proof_of_work_is_misbehaviour() {
    let params = Params::regtest();
    let mut chain = chain_from_genesis(&params, 10, 5);
    // Find a nonce that misses regtest's target (half of them do).
    let mut bad = chain[5];
    while check_proof_of_work(&bad.block_hash(), CompactTarget(bad.bits), &params) {
        bad.nonce += 1;
    }
    chain[5] = bad;
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), Vec::new(), false);
    harness.deliver(PeerId(1), chain[1..].to_vec());
    assert_eq!(
        harness.misbehaving,
        [(PeerId(1), Misbehavior::HeaderProofOfWork { hash: bad.block_hash() })]
    );
    assert_eq!(harness.misbehaving[0].1.core_message(), "header with invalid proof of work");
    assert!(harness.offers.is_empty());
}

#[test]
fn a_broken_sequence_and_an_oversized_message_are_misbehaviour() {
    let params = Params::regtest();
    let chain = chain_from_genesis(&params, 2_001, 6);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), Vec::new(), false);
    let mut gap = chain[1..=5].to_vec();
    gap.remove(2);
    harness.deliver(PeerId(1), gap);
    harness.deliver(PeerId(1), chain[1..].to_vec());
    assert_eq!(
        harness.misbehaving,
        [
            (PeerId(1), Misbehavior::NonContinuousHeaders { index: 2 }),
            (PeerId(1), Misbehavior::TooManyHeaders { count: 2_001 }),
        ]
    );
    assert_eq!(harness.misbehaving[0].1.core_message(), "non-continuous headers sequence");
    assert_eq!(harness.misbehaving[1].1.core_message(), "headers message size = 2001");
}

#[test]
fn unconnecting_headers_ask_for_the_gap_without_penalty() {
    let params = Params::regtest();
    let chain = chain_from_genesis(&params, 100, 7);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain.clone(), false);
    harness.deliver(PeerId(1), chain[50..60].to_vec());
    assert!(harness.misbehaving.is_empty());
    assert_eq!(harness.getheaders_sent, [PeerId(1)]);
    assert_eq!(harness.sync.last_unknown_block(PeerId(1)), Some(chain[59].block_hash()));
    // Within two minutes no second request goes out.
    harness.deliver(PeerId(1), chain[70..80].to_vec());
    assert_eq!(harness.getheaders_sent, [PeerId(1)]);
    harness.now += Duration::from_secs(121);
    harness.deliver(PeerId(1), chain[80..90].to_vec());
    assert_eq!(harness.getheaders_sent, [PeerId(1), PeerId(1)]);
}

#[test]
fn a_silent_sync_peer_times_out_and_another_takes_over() {
    let params = Params::regtest();
    let chain = chain_from_genesis(&params, 3_000, 8);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain.clone(), false);
    harness.connect(PeerId(2), chain.clone(), true);
    let actions = harness.sync.poll(harness.now, NOW_UNIX_SECONDS, &harness.index);
    harness.handle(actions);
    // While the best header is old, only one peer is asked.
    assert_eq!(harness.getheaders_sent, [PeerId(1)]);
    assert!(harness.sync.sync_started(PeerId(1)) && !harness.sync.sync_started(PeerId(2)));
    // 15 minutes plus 1 ms per 600 s the best header (genesis, 2011) is
    // behind: ~792,000 blocks, 13.2 minutes.
    let behind_blocks = (NOW_UNIX_SECONDS - i64::from(params.genesis.header.time)) / 600;
    let timeout = HEADERS_DOWNLOAD_TIMEOUT_BASE + Duration::from_millis(behind_blocks as u64);
    harness.now += timeout - Duration::from_secs(1);
    let actions = harness.sync.poll(harness.now, NOW_UNIX_SECONDS, &harness.index);
    harness.handle(actions);
    assert!(harness.disconnected.is_empty());
    harness.now += Duration::from_secs(2);
    harness.run_until_idle();
    assert_eq!(harness.disconnected, [(PeerId(1), DisconnectReason::HeadersDownloadTimeout)]);
    assert_eq!(harness.disconnected[0].1.core_log_message(), "Timeout downloading headers");
    assert_eq!(harness.offered_headers(), chain[1..].to_vec());
    assert!(harness.offers.iter().all(|(peer, _)| *peer == PeerId(2)));
}

#[test]
fn an_empty_headers_message_ends_a_presync() {
    let params = regtest_with_minimum_work(2 * 10_001);
    let chain = chain_from_genesis(&params, 2_000, 9);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain.clone(), false);
    harness.deliver(PeerId(1), chain[1..].to_vec());
    assert!(harness.sync.presync(PeerId(1)).is_some());
    harness.deliver(PeerId(1), Vec::new());
    assert!(harness.sync.presync(PeerId(1)).is_none());
    assert!(harness.offers.is_empty() && harness.misbehaving.is_empty());
}

#[test]
fn notes_tell_the_presync_story_in_core_words() {
    let params = regtest_with_minimum_work(2 * 3_001);
    // A chain that ends below the minimum: presync starts and is given up.
    let weak = chain_from_genesis(&params, 2_500, 10);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), weak, true);
    harness.run_until_idle();
    let notes: Vec<String> = harness.sync.take_notes().iter().map(ToString::to_string).collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0]
        .starts_with("Initial headers sync started with peer=1: height=0, max_commitments="));
    assert!(notes[0].ends_with(&format!("min_work={:064x}", 2 * 3_001)), "{}", notes[0]);
    assert_eq!(
        notes[1],
        "Initial headers sync aborted with peer=1: incomplete headers message at height=2500 (presync phase)"
    );
    assert!(harness.sync.take_notes().is_empty(), "taken once");
    // One with the work: presync, redownload, every header released.
    let strong = chain_from_genesis(&params, 3_200, 11);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(2), strong, true);
    harness.run_until_idle();
    let notes: Vec<String> = harness.sync.take_notes().iter().map(ToString::to_string).collect();
    assert!(notes.contains(&"Initial headers sync transition with peer=2: reached sufficient work at height=3200, redownloading from height=0".to_owned()), "{notes:?}");
    assert!(notes.contains(&"Initial headers sync complete with peer=2: releasing all at height=3200 (redownload phase)".to_owned()), "{notes:?}");
    // A short chain below the threshold: ignored at once.
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(3), Vec::new(), false);
    harness.deliver(PeerId(3), chain_from_genesis(&params, 12, 12)[1..].to_vec());
    let notes: Vec<String> = harness.sync.take_notes().iter().map(ToString::to_string).collect();
    assert_eq!(notes, ["Ignoring low-work chain (height=12) from peer=3"]);
}

#[test]
fn only_automatic_outbound_peers_are_dropped_for_a_chain_below_the_minimum_work() {
    let params = regtest_with_minimum_work(2 * 3_001);
    let chain = chain_from_genesis(&params, 20, 13);
    for automatic in [false, true] {
        let mut harness = Harness::new(&params);
        // Headers we hold already (an ancestor of our best header): their
        // work is not checked again, and the peer's chain ends there.
        harness.index.accept(&chain[1..]);
        harness.connect(PeerId(1), Vec::new(), false);
        if automatic {
            harness.sync.mark_automatic_outbound(PeerId(1));
        }
        harness.deliver(PeerId(1), chain[1..].to_vec());
        assert_eq!(harness.offers.len(), 1);
        let expected: &[(PeerId, DisconnectReason)] =
            if automatic { &[(PeerId(1), DisconnectReason::InsufficientWork)] } else { &[] };
        assert_eq!(harness.disconnected, expected, "automatic outbound: {automatic}");
    }
}

/// Core's `SendMessages`: a `noban` sync peer that times out is not
/// disconnected ("Timeout downloading headers from noban peer"); its sync
/// ends, so another peer is asked.
#[test]
fn a_silent_noban_sync_peer_is_freed_not_dropped() {
    let params = Params::regtest();
    let chain = chain_from_genesis(&params, 3_000, 8);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain.clone(), false);
    harness.sync.mark_no_ban(PeerId(1));
    harness.connect(PeerId(2), chain.clone(), true);
    let actions = harness.sync.poll(harness.now, NOW_UNIX_SECONDS, &harness.index);
    harness.handle(actions);
    assert_eq!(harness.getheaders_sent, [PeerId(1)]);
    let behind_blocks = (NOW_UNIX_SECONDS - i64::from(params.genesis.header.time)) / 600;
    let timeout = HEADERS_DOWNLOAD_TIMEOUT_BASE + Duration::from_millis(behind_blocks as u64);
    harness.now += timeout + Duration::from_secs(1);
    harness.run_until_idle();
    assert!(harness.disconnected.is_empty(), "{:?}", harness.disconnected);
    let notes: Vec<String> =
        harness.sync.take_notes().iter().map(|note| note.to_string()).collect();
    assert!(
        notes.contains(
            &"Timeout downloading headers from noban peer, not disconnecting peer=1".to_owned()
        ),
        "{notes:?}"
    );
    assert_eq!(harness.offered_headers(), chain[1..].to_vec(), "another peer synced");
    assert!(harness.offers.iter().all(|(peer, _)| *peer == PeerId(2)));
}

/// Core's `ProcessHeadersMessage`: a `noban` peer's headers skip the
/// low-work presync; anyone else's full message of a low-work chain starts
/// one and is not offered.
#[test]
fn a_noban_peer_headers_skip_presync() {
    let params = regtest_with_minimum_work(2 * 3_001);
    let chain = chain_from_genesis(&params, 2_500, 3);
    let mut harness = Harness::new(&params);
    harness.connect(PeerId(1), chain.clone(), true);
    harness.sync.mark_no_ban(PeerId(1));
    harness.run_until_idle();
    assert!(!harness.presync_seen);
    assert_eq!(harness.offered_headers(), chain[1..].to_vec());
}
