//! The background chainstate's window against a node whose active
//! chainstate was loaded from a snapshot of block 500 and follows the tip
//! at 510.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ibex_primitives::{BlockHash, Params};

use super::{BackgroundRange, BlockDownload, DownloadConfig, HeaderChain, BLOCK_BYTES_MAX};
use crate::messages::NetworkMessage;
use crate::sync::action::{Action, PeerId};

const BASE_HEIGHT: u32 = 500;
const TIP_HEIGHT: u32 = 510;

fn hash(height: u32) -> BlockHash {
    let mut bytes = [0x77; 32];
    bytes[..4].copy_from_slice(&height.to_le_bytes());
    BlockHash(bytes)
}

fn height_of(hash: &BlockHash) -> u32 {
    let mut bytes = [0; 4];
    bytes.copy_from_slice(&hash.0[..4]);
    u32::from_le_bytes(bytes)
}

/// The best header chain (nothing held above the tip) and, with a
/// snapshot, the background chainstate's range and the heights below the
/// base whose data the engine holds.
struct SnapshotChain {
    best_height: u32,
    background: Option<BackgroundRange>,
    held_below_base: HashSet<u32>,
}

impl SnapshotChain {
    fn new(best_height: u32, background_tip_height: Option<u32>) -> SnapshotChain {
        SnapshotChain {
            best_height,
            background: background_tip_height
                .map(|tip_height| BackgroundRange { tip_height, base_height: BASE_HEIGHT }),
            held_below_base: HashSet::new(),
        }
    }
}

impl HeaderChain for SnapshotChain {
    fn best_height(&self) -> u32 {
        self.best_height
    }

    fn hash_at(&self, height: u32) -> Option<BlockHash> {
        (height <= self.best_height).then(|| hash(height))
    }

    fn background_range(&self) -> Option<BackgroundRange> {
        self.background
    }

    fn background_block(&self, height: u32) -> Option<(BlockHash, bool)> {
        let range = self.background?;
        range.is_needed(height).then(|| (hash(height), self.held_below_base.contains(&height)))
    }
}

fn scheduler(download_bytes_max: u64, peers: &[(PeerId, u32)]) -> BlockDownload {
    let config = DownloadConfig::new(&Params::regtest(), download_bytes_max);
    let mut download = BlockDownload::new(config, TIP_HEIGHT);
    for (peer, best_height) in peers {
        download.add_peer(*peer).unwrap();
        download.set_peer_best_height(*peer, Some(*best_height));
    }
    download
}

/// The heights each `getdata` asks for, by peer; one `getdata` per peer.
fn requested(actions: &[Action]) -> Vec<(PeerId, Vec<u32>)> {
    let mut requests = Vec::new();
    for action in actions {
        match action {
            Action::Send { peer, message: NetworkMessage::GetData(inventory) } => {
                let heights = inventory.iter().map(|entry| height_of(&BlockHash(entry.hash.0)));
                requests.push((*peer, heights.collect::<Vec<u32>>()));
            }
            other => panic!("unexpected action {other:?}"),
        }
    }
    let peers: HashSet<PeerId> = requests.iter().map(|(peer, _)| *peer).collect();
    assert_eq!(peers.len(), requests.len(), "one getdata per peer: {requests:?}");
    requests
}

fn heights_for(requests: &[(PeerId, Vec<u32>)], peer: PeerId) -> Vec<u32> {
    requests.iter().filter(|(asked, _)| *asked == peer).flat_map(|(_, h)| h.clone()).collect()
}

const LARGE_BOUND: u64 = 1 << 30;

#[test]
fn a_snapshot_node_at_its_tip_fetches_the_blocks_below_the_base() {
    let now = Instant::now();
    let mut chain = SnapshotChain::new(TIP_HEIGHT, Some(0));
    chain.held_below_base.extend([3, 5]);
    let mut download = scheduler(LARGE_BOUND, &[(PeerId(1), TIP_HEIGHT)]);
    let requests = requested(&download.poll(now, &chain));
    let expected: Vec<u32> = [1, 2, 4].into_iter().chain(6..=18).collect();
    assert_eq!(heights_for(&requests, PeerId(1)), expected, "lowest first, none held");
    assert_eq!(download.in_flight_heights(PeerId(1)), expected);
    // In flight already: a second poll asks for nothing more.
    assert!(download.poll(now, &chain).is_empty());

    // Near the base: never past it, however much room the peer has.
    let mut download = download_with_two_peers();
    chain.background = Some(BackgroundRange { tip_height: 490, base_height: BASE_HEIGHT });
    let requests = requested(&download.poll(now, &chain));
    assert_eq!(heights_for(&requests, PeerId(1)), (491..=BASE_HEIGHT).collect::<Vec<u32>>());
    assert!(heights_for(&requests, PeerId(2)).is_empty());
}

fn download_with_two_peers() -> BlockDownload {
    scheduler(LARGE_BOUND, &[(PeerId(1), TIP_HEIGHT), (PeerId(2), TIP_HEIGHT)])
}

#[test]
fn the_background_window_is_bounded_and_follows_each_peers_best_header() {
    let now = Instant::now();
    let mut config = DownloadConfig::new(&Params::regtest(), LARGE_BOUND);
    config.window_blocks = 20;
    let mut download = BlockDownload::new(config, TIP_HEIGHT);
    // Peer 1's chain meets ours at 8 only; peer 2's past the base.
    for (peer, best_height) in [(PeerId(1), 8), (PeerId(2), TIP_HEIGHT), (PeerId(3), TIP_HEIGHT)] {
        download.add_peer(peer).unwrap();
        download.set_peer_best_height(peer, Some(best_height));
    }
    let chain = SnapshotChain::new(TIP_HEIGHT, Some(0));
    let requests = requested(&download.poll(now, &chain));
    let mut all: Vec<u32> = requests.iter().flat_map(|(_, heights)| heights.clone()).collect();
    assert!(heights_for(&requests, PeerId(1)).iter().all(|height| *height <= 8));
    all.sort_unstable();
    assert_eq!(all, (1..=20).collect::<Vec<u32>>(), "the window: 20 above the background's tip");
}

#[test]
fn without_a_background_to_feed_nothing_below_the_tip_is_requested() {
    let now = Instant::now();
    // No snapshot, a validated one (the engine gives no range), and a
    // background chainstate at the base.
    let ranges =
        [None, Some(BackgroundRange { tip_height: BASE_HEIGHT, base_height: BASE_HEIGHT })];
    for background in ranges {
        let chain = SnapshotChain { background, ..SnapshotChain::new(TIP_HEIGHT, None) };
        let mut download = download_with_two_peers();
        assert!(download.poll(now, &chain).is_empty(), "{background:?}");
        assert_eq!(download.in_flight_total(), 0);
        // Above the tip, the active window works as before.
        let chain = SnapshotChain { background, ..SnapshotChain::new(TIP_HEIGHT + 3, None) };
        let mut download = scheduler(LARGE_BOUND, &[(PeerId(1), TIP_HEIGHT + 3)]);
        let requests = requested(&download.poll(now, &chain));
        assert_eq!(heights_for(&requests, PeerId(1)), [511, 512, 513]);
    }
}

#[test]
fn the_active_chain_is_served_first_then_the_room_left_goes_to_history() {
    let now = Instant::now();
    let chain = SnapshotChain::new(520, Some(0));
    let mut download = scheduler(LARGE_BOUND, &[(PeerId(1), 520), (PeerId(2), 520)]);
    let requests = requested(&download.poll(now, &chain));
    let mut active: Vec<u32> = requests
        .iter()
        .flat_map(|(_, heights)| heights.iter().copied().filter(|height| *height > TIP_HEIGHT))
        .collect();
    active.sort_unstable();
    assert_eq!(active, (511..=520).collect::<Vec<u32>>(), "every active block asked for");
    let mut background: Vec<u32> = requests
        .iter()
        .flat_map(|(_, heights)| heights.iter().copied().filter(|height| *height <= BASE_HEIGHT))
        .collect();
    background.sort_unstable();
    assert_eq!(background, (1..=22).collect::<Vec<u32>>(), "the 22 slots left");
    for peer in [PeerId(1), PeerId(2)] {
        assert_eq!(download.in_flight_count(peer), 16, "the per-peer limit is shared");
    }

    // With more active blocks than slots, no slot goes to history.
    let chain = SnapshotChain::new(600, Some(0));
    let mut download = scheduler(LARGE_BOUND, &[(PeerId(1), 600), (PeerId(2), 600)]);
    let requests = requested(&download.poll(now, &chain));
    assert!(requests.iter().all(|(_, heights)| heights.iter().all(|height| *height > TIP_HEIGHT)));
}

#[test]
fn a_limited_peer_is_never_asked_for_history() {
    let now = Instant::now();
    let chain = SnapshotChain::new(512, Some(0));
    let mut download = scheduler(LARGE_BOUND, &[(PeerId(1), 512)]);
    download.set_peer_limited(PeerId(1), true);
    let requests = requested(&download.poll(now, &chain));
    assert_eq!(heights_for(&requests, PeerId(1)), [511, 512], "recent blocks only");
    assert!(download.poll(now, &chain).is_empty());
}

#[test]
fn the_background_window_never_marks_a_staller() {
    let start = Instant::now();
    let mut config = DownloadConfig::new(&Params::regtest(), LARGE_BOUND);
    config.window_blocks = 32;
    let mut download = BlockDownload::new(config, TIP_HEIGHT);
    for peer in [PeerId(1), PeerId(2)] {
        download.add_peer(peer).unwrap();
        download.set_peer_best_height(peer, Some(TIP_HEIGHT));
    }
    let chain = SnapshotChain::new(TIP_HEIGHT, Some(0));
    let requests = requested(&download.poll(start, &chain));
    assert_eq!(requests.len(), 2, "both peers asked: {requests:?}");
    // Peer 2 delivers its blocks; peer 1 (holding the window's first
    // blocks) stays silent while peer 2 idles with the window full.
    let silent = download.in_flight_heights(PeerId(1));
    let (idle, holder) =
        if silent.contains(&1) { (PeerId(2), PeerId(1)) } else { (PeerId(1), PeerId(2)) };
    for height in download.in_flight_heights(idle) {
        assert!(download.take_requested(idle, hash(height), 1_000, start).is_some());
    }
    for seconds in [1, 3, 70, 300] {
        let now = start + Duration::from_secs(seconds);
        assert!(download.poll(now, &chain).is_empty(), "at {seconds} s");
        assert_eq!(download.stalling_since(holder), None);
    }
    // The block download timeout (10 minutes alone) still applies.
    let actions = download.poll(start + Duration::from_secs(700), &chain);
    assert!(matches!(actions.first(), Some(Action::Disconnect { peer, .. }) if *peer == holder));
}

#[test]
fn history_bytes_never_hold_back_the_active_chain_nor_mark_its_peers() {
    let start = Instant::now();
    // Ten blocks' estimates: the background takes eight (the next, then
    // seven that leave two estimates free).
    let bound = 10 * BLOCK_BYTES_MAX;
    let mut download = scheduler(bound, &[(PeerId(1), TIP_HEIGHT)]);
    let chain = SnapshotChain::new(TIP_HEIGHT, Some(0));
    let requests = requested(&download.poll(start, &chain));
    assert_eq!(heights_for(&requests, PeerId(1)), (1..=8).collect::<Vec<u32>>());
    // Blocks 2 to 8 arrive, block 1 does not: they wait to be connected.
    for height in 2..=8 {
        assert!(download.take_requested(PeerId(1), hash(height), BLOCK_BYTES_MAX, start).is_some());
    }
    assert_eq!(download.background_bytes_held(), 8 * BLOCK_BYTES_MAX);
    assert_eq!(download.bytes_held(), 8 * BLOCK_BYTES_MAX);
    // New blocks on top of the tip: its next block still fits.
    let chain = SnapshotChain::new(530, Some(0));
    for peer in [PeerId(1), PeerId(2), PeerId(3)] {
        download.add_peer(peer).unwrap();
        download.set_peer_best_height(peer, Some(530));
    }
    let requests = requested(&download.poll(start, &chain));
    let asked: Vec<u32> = requests.iter().flat_map(|(_, heights)| heights.clone()).collect();
    assert!(asked.contains(&511), "the active chain's next block: {requests:?}");
    assert!(asked.iter().all(|height| *height > TIP_HEIGHT));
    // The peer left idle is held back by history's bytes, not by whoever
    // has block 511: nobody is marked, nobody disconnected.
    let holder = download.in_flight_from(&hash(511)).unwrap();
    assert!([PeerId(1), PeerId(2), PeerId(3)]
        .iter()
        .any(|peer| download.in_flight_count(*peer) == 0));
    for seconds in [1, 3, 70] {
        let now = start + Duration::from_secs(seconds);
        assert!(download.poll(now, &chain).is_empty(), "at {seconds} s");
        assert_eq!(download.stalling_since(holder), None);
    }
}

#[test]
fn received_history_counts_until_the_background_tip_passes_it() {
    let now = Instant::now();
    let mut chain = SnapshotChain::new(TIP_HEIGHT, Some(0));
    let mut download = scheduler(LARGE_BOUND, &[(PeerId(1), TIP_HEIGHT)]);
    requested(&download.poll(now, &chain));
    for height in 1..=4 {
        assert!(download.take_requested(PeerId(1), hash(height), 1_000, now).is_some());
    }
    let reserved = 12 * BLOCK_BYTES_MAX;
    assert_eq!(download.bytes_held(), reserved + 4_000);
    assert_eq!(download.received_count(), 4);
    // The engine's tip moving does not release them: they lie below it.
    download.on_tip_moved(TIP_HEIGHT + 1, 1);
    assert_eq!(download.received_count(), 4);
    // The background's tip at 2 releases blocks 1 and 2 (and the poll
    // refills the peer's four free slots from above the window's blocks).
    chain.best_height = TIP_HEIGHT + 1;
    chain.background = Some(BackgroundRange { tip_height: 2, base_height: BASE_HEIGHT });
    let requests = requested(&download.poll(now, &chain));
    assert_eq!(heights_for(&requests, PeerId(1)), [17, 18, 19, 20]);
    assert_eq!(download.received_count(), 2);
    assert_eq!(download.bytes_held(), 16 * BLOCK_BYTES_MAX + 2_000);
    // Validated: the rest is released; the requests in flight stay until
    // answered, and then count for nothing.
    chain.background = None;
    assert!(download.poll(now, &chain).is_empty());
    assert_eq!(download.received_count(), 0);
    assert!(download.take_requested(PeerId(1), hash(5), 1_000, now).is_some());
    assert_eq!(download.received_count(), 0);
    assert_eq!(download.bytes_held(), download.background_bytes_held());
}
