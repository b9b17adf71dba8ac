//! The block download scheduler against simulated peers (latency, silence,
//! disconnection) and a simulated engine that connects blocks in chain
//! order at a set pace: every block downloaded exactly once, in-flight and
//! byte bounds never passed, a silent peer caught as a staller within the
//! stalling timeout and its blocks fetched elsewhere, the window following a
//! new best header chain, Core's block download timeout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use ibex_p2p::sync::block_download::{
    BackgroundRange, BlockDownload, DownloadConfig, BLOCKS_IN_FLIGHT_PER_PEER_MAX,
    BLOCK_STALLING_TIMEOUT_DEFAULT,
};
use ibex_p2p::sync::locator::{ChainView, HashChain};
use ibex_p2p::sync::{Action, DisconnectReason, Misbehavior, PeerId};
use ibex_p2p::{InventoryType, NetworkMessage};
use ibex_primitives::{BlockHash, Hash256, Header, Params};

const TICK: Duration = Duration::from_millis(5);
const BLOCK_BYTES_ESTIMATE: u64 = 50_000;

/// Fake blocks: a header linking to the previous block, then filler; sizes
/// vary with the height, at most 40,100 bytes.
struct Blocks {
    chain: HashChain,
    bytes: HashMap<BlockHash, Vec<u8>>,
}

impl Blocks {
    fn new(count: u32, salt: u64) -> Blocks {
        let mut blocks = Blocks { chain: HashChain::new(), bytes: HashMap::new() };
        blocks.extend(BlockHash::ZERO, 0, count, salt);
        blocks
    }

    /// `self` up to `fork_height`, then `count` blocks of its own.
    fn fork(&self, fork_height: u32, count: u32, salt: u64) -> Blocks {
        let mut blocks = Blocks { chain: HashChain::new(), bytes: HashMap::new() };
        for height in 0..=fork_height {
            let hash = self.chain.hash_at(height).unwrap();
            blocks.chain.push(hash).unwrap();
            blocks.bytes.insert(hash, self.bytes[&hash].clone());
        }
        let tip = self.chain.hash_at(fork_height).unwrap();
        blocks.extend(tip, fork_height + 1, count, salt);
        blocks
    }

    fn extend(&mut self, mut previous: BlockHash, first_height: u32, count: u32, salt: u64) {
        for height in first_height..first_height + count {
            let mut merkle_root = [0u8; 32];
            merkle_root[..4].copy_from_slice(&height.to_le_bytes());
            merkle_root[4..12].copy_from_slice(&salt.to_le_bytes());
            let header = Header {
                version: 4,
                previous_block_hash: previous,
                merkle_root: Hash256(merkle_root),
                time: 1_600_000_000 + height,
                bits: 0x207f_ffff,
                nonce: 0,
            };
            let filler = 100 + (height as usize * 7_919) % 40_000;
            let mut bytes = header.encode().to_vec();
            bytes.resize(80 + filler, 0xab);
            let hash = header.block_hash();
            self.chain.push(hash).unwrap();
            self.bytes.insert(hash, bytes);
            previous = hash;
        }
    }

    fn tip(&self) -> u32 {
        self.chain.tip_height().unwrap()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    Answers,
    Silent,
}

struct SimulatedPeer {
    latency: Duration,
    behaviour: Behaviour,
    /// Blocks asked for and when they arrive.
    outstanding: VecDeque<(Instant, BlockHash)>,
    /// Asked for and not delivered (what the scheduler should count).
    in_flight: usize,
}

struct Simulation {
    download: BlockDownload,
    blocks: Blocks,
    /// Every block either chain has, to serve by hash.
    all_bytes: HashMap<BlockHash, Vec<u8>>,
    peers: BTreeMap<PeerId, SimulatedPeer>,
    engine_tip: u32,
    /// Where the best chain forks below the engine's tip, while the tip
    /// stays on its old branch (it has less work until the blocks above
    /// the fork are in).
    engine_fork: Option<u32>,
    /// AssumeUTXO: the background chainstate's tip and the snapshot's
    /// base, while it validates towards it.
    background: Option<BackgroundRange>,
    engine_have: HashMap<BlockHash, usize>,
    connect_per_tick: u32,
    offered: HashMap<BlockHash, u32>,
    requests: Vec<(Instant, PeerId, BlockHash)>,
    disconnected: Vec<(Instant, PeerId, DisconnectReason)>,
    misbehaving: Vec<(PeerId, Misbehavior)>,
    most_bytes_held: u64,
    start: Instant,
    now: Instant,
}

impl Simulation {
    fn new(blocks: Blocks, download_bytes_max: u64, connect_per_tick: u32) -> Simulation {
        let mut config = DownloadConfig::new(&Params::regtest(), download_bytes_max);
        config.block_bytes_estimate = BLOCK_BYTES_ESTIMATE;
        let start = Instant::now();
        Simulation {
            download: BlockDownload::new(config, 0),
            all_bytes: blocks.bytes.clone(),
            blocks,
            peers: BTreeMap::new(),
            engine_tip: 0,
            engine_fork: None,
            background: None,
            engine_have: HashMap::new(),
            connect_per_tick,
            offered: HashMap::new(),
            requests: Vec::new(),
            disconnected: Vec::new(),
            misbehaving: Vec::new(),
            most_bytes_held: 0,
            start,
            now: start,
        }
    }

    /// A node whose active chainstate was loaded from a snapshot of the
    /// block at `base_height` (its tip), its background chainstate at
    /// genesis.
    fn from_snapshot(
        blocks: Blocks,
        download_bytes_max: u64,
        connect_per_tick: u32,
        base_height: u32,
    ) -> Simulation {
        let mut config = DownloadConfig::new(&Params::regtest(), download_bytes_max);
        config.block_bytes_estimate = BLOCK_BYTES_ESTIMATE;
        let mut simulation = Simulation::new(blocks, download_bytes_max, connect_per_tick);
        simulation.download = BlockDownload::new(config, base_height);
        simulation.engine_tip = base_height;
        simulation.background = Some(BackgroundRange { tip_height: 0, base_height });
        simulation
    }

    fn add_peer(&mut self, peer: PeerId, latency_ms: u64, behaviour: Behaviour) {
        let latency = Duration::from_millis(latency_ms);
        self.peers.insert(
            peer,
            SimulatedPeer { latency, behaviour, outstanding: VecDeque::new(), in_flight: 0 },
        );
        self.download.add_peer(peer).unwrap();
        self.download.set_peer_best_height(peer, Some(self.blocks.tip()));
    }

    fn drop_peer(&mut self, peer: PeerId) {
        self.peers.remove(&peer);
        self.download.remove_peer(peer);
    }

    fn handle(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Send { peer, message: NetworkMessage::GetData(entries) } => {
                    let simulated = self.peers.get_mut(&peer).expect("request to a live peer");
                    for entry in entries {
                        assert_eq!(entry.inventory_type, InventoryType::WITNESS_BLOCK);
                        let hash = BlockHash(entry.hash.0);
                        self.requests.push((self.now, peer, hash));
                        simulated.in_flight += 1;
                        if simulated.behaviour == Behaviour::Answers {
                            simulated.outstanding.push_back((self.now + simulated.latency, hash));
                        }
                    }
                    assert!(simulated.in_flight <= BLOCKS_IN_FLIGHT_PER_PEER_MAX);
                }
                Action::OfferBlock { peer: _, hash, height, bytes } => {
                    if let Some(best_chain_height) = self.blocks.chain.height_of(&hash) {
                        assert_eq!(best_chain_height, height, "offered with its height");
                    }
                    assert_eq!(bytes, self.all_bytes[&hash]);
                    *self.offered.entry(hash).or_default() += 1;
                    self.engine_have.insert(hash, bytes.len());
                }
                Action::Disconnect { peer, reason } => {
                    self.disconnected.push((self.now, peer, reason));
                    self.drop_peer(peer);
                }
                Action::Misbehaving { peer, reason } => self.misbehaving.push((peer, reason)),
                other => panic!("unexpected action {other:?}"),
            }
        }
    }

    fn deliver_due(&mut self) {
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for peer in peers {
            while let Some(simulated) = self.peers.get_mut(&peer) {
                let due = simulated.outstanding.front().is_some_and(|(at, _)| *at <= self.now);
                if !due {
                    break;
                }
                let (_, hash) = simulated.outstanding.pop_front().unwrap();
                simulated.in_flight -= 1;
                let bytes = self.all_bytes[&hash].clone();
                let actions = self.download.on_block(peer, bytes, self.now);
                self.handle(actions);
            }
        }
    }

    /// Connects blocks in chain order, as many as the engine's pace allows.
    /// A tip on another branch moves to the best chain once its blocks from
    /// the fork to one past the tip's height are in (more work).
    fn connect(&mut self) {
        if let Some(fork) = self.engine_fork {
            let heavier = (fork + 1..=self.engine_tip + 1).all(|height| {
                let hash = self.blocks.chain.hash_at(height).unwrap();
                self.engine_have.contains_key(&hash)
            });
            if !heavier {
                return;
            }
            self.engine_fork = None;
            self.engine_tip += 1;
            self.download.on_tip_moved(self.engine_tip, 1);
        }
        let mut connected = 0;
        while connected < self.connect_per_tick {
            let Some(next) = self.blocks.chain.hash_at(self.engine_tip + 1) else { break };
            if !self.engine_have.contains_key(&next) {
                break;
            }
            self.engine_tip += 1;
            connected += 1;
        }
        if connected > 0 {
            self.download.on_tip_moved(self.engine_tip, connected);
        }
        self.connect_background();
    }

    /// The background chainstate connects its blocks in order, at the same
    /// pace; it is dropped once at the base (validated).
    fn connect_background(&mut self) {
        let Some(mut range) = self.background else { return };
        for _ in 0..self.connect_per_tick {
            let Some(next) = self.blocks.chain.hash_at(range.tip_height + 1) else { break };
            if range.tip_height == range.base_height || !self.engine_have.contains_key(&next) {
                break;
            }
            range.tip_height += 1;
        }
        self.background = range.needs_blocks().then_some(range);
    }

    /// The engine reorganises to a new best chain forking at
    /// `fork_height`: blocks above it are disconnected.
    fn switch_chain(&mut self, blocks: Blocks, fork_height: u32) {
        for (hash, bytes) in &blocks.bytes {
            self.all_bytes.insert(*hash, bytes.clone());
        }
        self.blocks = blocks;
        if self.engine_tip > fork_height {
            self.engine_tip = fork_height;
            self.download.on_tip_moved(fork_height, 0);
        }
        let tip = self.blocks.tip();
        for peer in self.peers.keys() {
            self.download.set_peer_best_height(*peer, Some(tip));
        }
    }

    fn check_invariants(&mut self, download_bytes_max: u64) {
        let mut heights_in_flight = std::collections::HashSet::new();
        for (peer, simulated) in &self.peers {
            assert_eq!(self.download.in_flight_count(*peer), simulated.in_flight, "{peer}");
            assert!(simulated.in_flight <= BLOCKS_IN_FLIGHT_PER_PEER_MAX);
            let heights = self.download.in_flight_heights(*peer);
            assert_eq!(heights.len(), simulated.in_flight, "{peer}: {heights:?}");
            for height in heights {
                assert!(heights_in_flight.insert(height), "height {height} asked of two peers");
            }
        }
        let held = self.download.bytes_held();
        assert!(held <= download_bytes_max, "{held} > {download_bytes_max}");
        // The same from the simulation's side: reservations for blocks in
        // flight, and the real size of blocks offered above the tip.
        let in_flight: usize = self.peers.values().map(|simulated| simulated.in_flight).sum();
        let background_waiting = self.background.map_or(0..=0, |range| {
            range.tip_height + 1..=range.base_height.min(range.tip_height + 2_048)
        });
        let waiting: u64 = (self.engine_tip + 1..=self.blocks.tip())
            .chain(background_waiting.filter(|height| *height > 0))
            .filter_map(|height| self.blocks.chain.hash_at(height))
            .filter_map(|hash| self.engine_have.get(&hash))
            .map(|bytes| *bytes as u64)
            .sum();
        assert!(in_flight as u64 * BLOCK_BYTES_ESTIMATE + waiting <= download_bytes_max);
        self.most_bytes_held = self.most_bytes_held.max(held);
    }

    /// One tick: deliveries, connecting, the scheduler's poll.
    fn step(&mut self, download_bytes_max: u64) {
        self.deliver_due();
        self.connect();
        let view = ForkView {
            chain: &self.blocks.chain,
            fork: self.engine_fork,
            background: self.background,
            have: &self.engine_have,
        };
        let actions = self.download.poll(self.now, &view);
        self.handle(actions);
        self.check_invariants(download_bytes_max);
        self.now += TICK;
    }

    fn run_until_synced(&mut self, download_bytes_max: u64, ticks_max: u32) {
        for _ in 0..ticks_max {
            if self.engine_tip == self.blocks.tip() {
                return;
            }
            self.step(download_bytes_max);
        }
        panic!("not synced: tip {} of {}", self.engine_tip, self.blocks.tip());
    }

    fn assert_each_block_offered_once(&self) {
        for height in 1..=self.blocks.tip() {
            let hash = self.blocks.chain.hash_at(height).unwrap();
            assert_eq!(self.offered.get(&hash), Some(&1), "block at {height}");
        }
    }

    fn elapsed(&self) -> Duration {
        self.now - self.start
    }
}

/// The best header chain as the engine sees it, with where it forks from
/// the active chain below the tip.
struct ForkView<'a> {
    chain: &'a HashChain,
    fork: Option<u32>,
    background: Option<BackgroundRange>,
    have: &'a HashMap<BlockHash, usize>,
}

impl ibex_p2p::sync::block_download::HeaderChain for ForkView<'_> {
    fn best_height(&self) -> u32 {
        self.chain.tip_height().unwrap_or(0)
    }

    fn hash_at(&self, height: u32) -> Option<BlockHash> {
        ChainView::hash_at(self.chain, height)
    }

    fn fork_height(&self) -> Option<u32> {
        self.fork
    }

    fn background_range(&self) -> Option<BackgroundRange> {
        self.background
    }

    fn background_block(&self, height: u32) -> Option<(BlockHash, bool)> {
        self.background.filter(|range| range.is_needed(height))?;
        let hash = ChainView::hash_at(self.chain, height)?;
        Some((hash, self.have.contains_key(&hash)))
    }
}

const BYTES_MAX: u64 = 8 << 20;

#[test]
fn three_peers_download_5000_blocks_exactly_once_within_limits() {
    let mut simulation = Simulation::new(Blocks::new(5_001, 1), BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 15, Behaviour::Answers);
    simulation.add_peer(PeerId(3), 30, Behaviour::Answers);
    simulation.run_until_synced(BYTES_MAX, 100_000);
    simulation.assert_each_block_offered_once();
    assert_eq!(simulation.offered.len(), 5_000);
    assert!(simulation.misbehaving.is_empty() && simulation.disconnected.is_empty());
    assert_eq!(simulation.requests.len(), 5_000, "no block asked for twice");
    for peer in [PeerId(1), PeerId(2), PeerId(3)] {
        let served = simulation.requests.iter().filter(|(_, asked, _)| *asked == peer).count();
        assert!(served > 500, "{peer} served {served}");
    }
    // Nothing is held once the tip has passed every block.
    assert_eq!(simulation.download.bytes_held(), 0);
    assert_eq!(simulation.download.received_count(), 0);
}

#[test]
fn a_silent_peer_is_caught_stalling_and_its_blocks_fetched_elsewhere() {
    let mut simulation = Simulation::new(Blocks::new(5_001, 2), BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 10, Behaviour::Silent);
    simulation.add_peer(PeerId(3), 20, Behaviour::Answers);
    let mut marked_at = None;
    while simulation.disconnected.is_empty() {
        assert!(simulation.elapsed() < Duration::from_secs(30), "no stall detected");
        simulation.step(BYTES_MAX);
        if marked_at.is_none() {
            marked_at = simulation.download.stalling_since(PeerId(2));
        }
    }
    let (disconnected_at, peer, reason) = simulation.disconnected[0];
    assert_eq!(peer, PeerId(2));
    assert_eq!(reason, DisconnectReason::StallingBlockDownload { timeout_seconds: 2 });
    assert_eq!(reason.core_log_message(), "Peer is stalling block download");
    // Disconnected within one tick of the 2 s timeout after being marked
    // (the mark is set during the poll of the tick before `now` advanced).
    let stalled_for = disconnected_at - marked_at.unwrap();
    assert!(stalled_for > BLOCK_STALLING_TIMEOUT_DEFAULT, "{stalled_for:?}");
    assert!(stalled_for <= BLOCK_STALLING_TIMEOUT_DEFAULT + 2 * TICK, "{stalled_for:?}");
    assert_eq!(simulation.download.stalling_timeout().current(), Duration::from_secs(4));
    let held_by_silent: Vec<BlockHash> = simulation
        .requests
        .iter()
        .filter(|(_, asked, _)| *asked == PeerId(2))
        .map(|(_, _, hash)| *hash)
        .collect();
    assert_eq!(held_by_silent.len(), BLOCKS_IN_FLIGHT_PER_PEER_MAX);
    simulation.run_until_synced(BYTES_MAX, 100_000);
    simulation.assert_each_block_offered_once();
    for hash in held_by_silent {
        let asked_again = simulation.requests.iter().any(|(at, asked, again)| {
            *again == hash && *asked != PeerId(2) && *at >= disconnected_at
        });
        assert!(asked_again, "{hash} re-requested elsewhere");
    }
    // Connected blocks decayed the doubled timeout back to 2 s.
    assert_eq!(simulation.download.stalling_timeout().current(), BLOCK_STALLING_TIMEOUT_DEFAULT);
}

#[test]
fn blocks_of_a_peer_that_disconnects_midway_are_fetched_from_others() {
    let mut simulation = Simulation::new(Blocks::new(5_001, 3), BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 25, Behaviour::Answers);
    simulation.add_peer(PeerId(3), 10, Behaviour::Answers);
    while simulation.engine_tip < 1_500 {
        simulation.step(BYTES_MAX);
    }
    let cut_at = simulation.now;
    let undelivered: Vec<BlockHash> =
        simulation.peers[&PeerId(2)].outstanding.iter().map(|(_, hash)| *hash).collect();
    assert!(!undelivered.is_empty());
    simulation.drop_peer(PeerId(2));
    simulation.run_until_synced(BYTES_MAX, 100_000);
    simulation.assert_each_block_offered_once();
    for hash in undelivered {
        assert!(simulation
            .requests
            .iter()
            .any(|(at, asked, again)| *again == hash && *asked != PeerId(2) && *at >= cut_at));
    }
    assert!(simulation.requests.iter().all(|(at, asked, _)| *asked != PeerId(2) || *at < cut_at));
}

#[test]
fn downloaded_bytes_never_pass_the_bound() {
    // Twelve blocks' reservations, and an engine slower than the peers, so
    // received blocks pile up behind the tip.
    let bytes_max = 12 * BLOCK_BYTES_ESTIMATE;
    let mut simulation = Simulation::new(Blocks::new(3_001, 4), bytes_max, 2);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 8, Behaviour::Answers);
    simulation.add_peer(PeerId(3), 12, Behaviour::Answers);
    simulation.run_until_synced(bytes_max, 200_000);
    simulation.assert_each_block_offered_once();
    assert!(simulation.most_bytes_held > bytes_max * 8 / 10, "the bound was reached");
    assert!(simulation.disconnected.is_empty());
}

#[test]
fn a_new_best_chain_forking_below_the_tip_moves_the_window() {
    let first = Blocks::new(3_001, 5);
    let second = first.fork(800, 2_500, 6);
    let mut simulation = Simulation::new(first, BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 9, Behaviour::Answers);
    simulation.add_peer(PeerId(3), 14, Behaviour::Answers);
    while simulation.engine_tip < 1_000 {
        simulation.step(BYTES_MAX);
    }
    let switched_at = simulation.now;
    simulation.switch_chain(second, 800);
    simulation.run_until_synced(BYTES_MAX, 100_000);
    assert_eq!(simulation.engine_tip, 3_300);
    // Every block of the new branch offered once; after the switch only the
    // new branch was asked for.
    for height in 801..=3_300 {
        let hash = simulation.blocks.chain.hash_at(height).unwrap();
        assert_eq!(simulation.offered.get(&hash), Some(&1), "height {height}");
    }
    for (at, _, hash) in &simulation.requests {
        if *at > switched_at {
            assert!(simulation.blocks.chain.height_of(hash).is_some_and(|height| height > 800));
        }
    }
    assert_eq!(simulation.download.bytes_held(), 0);
}

/// The engine's tip stays on its branch until the heavier chain's blocks
/// from the fork up are in: they must be fetched from the fork, below the
/// tip (as Core fetches from the last common block).
#[test]
fn a_heavier_chain_forking_below_a_tip_that_stays_is_fetched_from_the_fork() {
    let first = Blocks::new(1_001, 9);
    let second = first.fork(900, 200, 10);
    let mut simulation = Simulation::new(first, BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 11, Behaviour::Answers);
    simulation.run_until_synced(BYTES_MAX, 100_000);
    assert_eq!(simulation.engine_tip, 1_000);
    for (hash, bytes) in &second.bytes {
        simulation.all_bytes.insert(*hash, bytes.clone());
    }
    simulation.blocks = second;
    simulation.engine_fork = Some(900);
    for peer in [PeerId(1), PeerId(2)] {
        simulation.download.set_peer_best_height(peer, Some(1_100));
    }
    simulation.run_until_synced(BYTES_MAX, 100_000);
    assert_eq!(simulation.engine_tip, 1_100);
    for height in 901..=1_100 {
        let hash = simulation.blocks.chain.hash_at(height).unwrap();
        assert_eq!(simulation.offered.get(&hash), Some(&1), "height {height}");
    }
    assert_eq!(simulation.download.bytes_held(), 0);
}

#[test]
fn a_new_best_chain_forking_above_the_tip_retargets_the_window() {
    let first = Blocks::new(4_001, 7);
    let mut simulation = Simulation::new(first, BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 20, Behaviour::Answers);
    while simulation.engine_tip < 500 {
        simulation.step(BYTES_MAX);
    }
    let fork_height = simulation.engine_tip + 300;
    let second = simulation.blocks.fork(fork_height, 1_000, 8);
    let old_above_fork: Vec<BlockHash> = (fork_height + 1..=simulation.blocks.tip())
        .map(|height| simulation.blocks.chain.hash_at(height).unwrap())
        .collect();
    let switched_at = simulation.now;
    simulation.switch_chain(second, fork_height);
    simulation.run_until_synced(BYTES_MAX, 100_000);
    simulation.assert_each_block_offered_once();
    assert!(simulation
        .requests
        .iter()
        .filter(|(at, _, _)| *at > switched_at)
        .all(|(_, _, hash)| !old_above_fork.contains(hash)));
    assert_eq!(simulation.download.bytes_held(), 0);
}

#[test]
fn unrequested_blocks_are_left_to_the_node_and_punish_nobody() {
    let mut simulation = Simulation::new(Blocks::new(101, 9), BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 1_000, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 1_000, Behaviour::Answers);
    simulation.step(BYTES_MAX);
    let (_, asked, hash) = simulation.requests[0];
    let other = if asked == PeerId(1) { PeerId(2) } else { PeerId(1) };
    assert!(simulation.download.is_requested_from(asked, &hash));
    assert!(!simulation.download.is_requested_from(other, &hash));
    // From a peer that was not asked for it: nothing (Core punishes no
    // peer for an unrequested block; the node judges it).
    let actions =
        simulation.download.on_block(other, simulation.all_bytes[&hash].clone(), simulation.now);
    assert!(actions.is_empty());
    // A block past the window that nobody asked for.
    let far = simulation.blocks.chain.hash_at(100).unwrap();
    assert_eq!(simulation.download.in_flight_from(&far), None);
    let actions =
        simulation.download.on_block(other, simulation.all_bytes[&far].clone(), simulation.now);
    assert!(actions.is_empty());
    // A payload too short for a header is dropped silently, as Core drops
    // a message it cannot read.
    assert!(simulation.download.on_block(other, vec![0; 79], simulation.now).is_empty());
    // The asked peer's delivery is still welcome.
    assert_eq!(simulation.download.in_flight_from(&hash), Some(asked));
    assert_eq!(simulation.misbehaving.len(), 0);
}

#[test]
fn an_unrequested_block_the_node_keeps_counts_against_the_byte_bound() {
    let estimate = DownloadConfig::new(&Params::regtest(), BYTES_MAX).block_bytes_estimate;
    let mut download = BlockDownload::new(DownloadConfig::new(&Params::regtest(), BYTES_MAX), 10);
    let hash = BlockHash([3; 32]);
    assert!(!download.take_unrequested(hash, 10, 1_000), "at the tip: nothing to keep");
    assert!(download.take_unrequested(hash, 11, 1_000));
    assert_eq!(download.bytes_held(), 1_000);
    assert!(!download.take_unrequested(hash, 11, 1_000), "counted once");
    // Too large for what is left with one estimate kept free.
    let left = BYTES_MAX - 1_000 - estimate;
    assert!(!download.take_unrequested(BlockHash([4; 32]), 12, left + 1));
    assert!(download.take_unrequested(BlockHash([4; 32]), 12, left));
    // Connected: released.
    download.on_tip_moved(12, 2);
    assert_eq!(download.bytes_held(), 0);
}

#[test]
fn a_block_the_engine_did_not_store_is_asked_for_again() {
    let mut simulation = Simulation::new(Blocks::new(11, 12), BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 1_000, Behaviour::Silent);
    simulation.step(BYTES_MAX);
    let (_, asked, hash) = simulation.requests[0];
    let actions =
        simulation.download.on_block(asked, simulation.all_bytes[&hash].clone(), simulation.now);
    assert!(matches!(actions[..], [Action::OfferBlock { .. }]));
    let held = simulation.download.bytes_held();
    simulation.download.forget_block(&hash, simulation.now);
    assert!(simulation.download.bytes_held() < held);
    assert_eq!(simulation.download.received_count(), 0);
    let actions = simulation.download.poll(simulation.now, &simulation.blocks.chain);
    let asked_again = actions.iter().any(|action| match action {
        Action::Send { message: NetworkMessage::GetData(inventory), .. } => {
            inventory.iter().any(|entry| entry.hash.0 == hash.0)
        }
        _ => false,
    });
    assert!(asked_again, "{actions:?}");
}

/// A delivered block the engine did not store (a mutated copy; the node
/// punishes its sender): forgetting it releases the request, and it is
/// asked of another peer.
#[test]
fn a_forgotten_block_is_asked_of_another_peer() {
    let mut simulation = Simulation::new(Blocks::new(11, 10), BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 1_000, Behaviour::Silent);
    simulation.step(BYTES_MAX);
    let (_, asked, hash) = simulation.requests[0];
    simulation.download.forget_block(&hash, simulation.now);
    assert_eq!(simulation.download.in_flight_from(&hash), None);
    simulation.peers.get_mut(&asked).unwrap().in_flight -= 1;
    simulation.add_peer(PeerId(2), 5, Behaviour::Answers);
    simulation.drop_peer(asked);
    simulation.run_until_synced(BYTES_MAX, 10_000);
    simulation.assert_each_block_offered_once();
}

#[test]
fn a_peer_that_never_delivers_times_out_after_a_block_interval() {
    // Alone, nobody waits for window space, so it is not a staller; Core's
    // block download timeout (10 minutes for one peer) catches it.
    let mut simulation = Simulation::new(Blocks::new(101, 11), BYTES_MAX, 64);
    simulation.add_peer(PeerId(1), 5, Behaviour::Silent);
    simulation.step(BYTES_MAX);
    let requested_at = simulation.requests[0].0;
    simulation.now = requested_at + Duration::from_secs(599);
    simulation.step(BYTES_MAX);
    assert!(simulation.disconnected.is_empty());
    simulation.now = requested_at + Duration::from_secs(601);
    simulation.step(BYTES_MAX);
    let (_, peer, reason) = simulation.disconnected[0];
    assert_eq!(peer, PeerId(1));
    assert!(matches!(reason, DisconnectReason::BlockDownloadTimeout { timeout_ms: 600_000, .. }));
    let DisconnectReason::BlockDownloadTimeout { hash, .. } = reason else { unreachable!() };
    assert_eq!(reason.core_log_message(), format!("Timeout downloading block {hash}"));
    assert_eq!(simulation.download.in_flight_total(), 0);
}

#[test]
fn the_download_timeout_grows_with_the_peers_downloading() {
    let config = DownloadConfig::new(&Params::main(), BYTES_MAX);
    assert_eq!(config.block_download_timeout(1), Duration::from_secs(600));
    assert_eq!(config.block_download_timeout(2), Duration::from_secs(900));
    assert_eq!(config.block_download_timeout(125), Duration::from_secs(600 + 124 * 300));
}

#[test]
fn a_snapshot_node_follows_the_tip_and_fetches_history_below_the_base_once() {
    // The snapshot's base at 3,000, the best chain at 4,000: the active
    // chainstate downloads 1,000 blocks while the background one needs
    // 3,000 below the base.
    let mut simulation = Simulation::from_snapshot(Blocks::new(4_001, 9), BYTES_MAX, 16, 3_000);
    simulation.add_peer(PeerId(1), 5, Behaviour::Answers);
    simulation.add_peer(PeerId(2), 15, Behaviour::Answers);
    simulation.add_peer(PeerId(3), 30, Behaviour::Answers);
    let mut active_synced_at = None;
    let mut background_done_at = None;
    for _ in 0..200_000 {
        simulation.step(BYTES_MAX);
        if simulation.engine_tip == simulation.blocks.tip() {
            active_synced_at.get_or_insert(simulation.elapsed());
        }
        if simulation.background.is_none() {
            background_done_at.get_or_insert(simulation.elapsed());
            break;
        }
    }
    let background_done_at = background_done_at.expect("the background reached the base");
    let active_synced_at = active_synced_at.expect("the active chain synced first");
    assert!(active_synced_at < background_done_at, "{active_synced_at:?}");
    simulation.run_until_synced(BYTES_MAX, 1_000);
    simulation.assert_each_block_offered_once();
    assert_eq!(simulation.requests.len(), 4_000, "no block asked for twice");
    assert!(simulation.disconnected.is_empty() && simulation.misbehaving.is_empty());
    for _ in 0..10 {
        simulation.step(BYTES_MAX);
    }
    assert_eq!(simulation.download.bytes_held(), 0);
    assert_eq!(simulation.download.background_bytes_held(), 0);
}
