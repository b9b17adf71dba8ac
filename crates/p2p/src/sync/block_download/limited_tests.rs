//! The active window against limited peers (`NODE_NETWORK_LIMITED` alone),
//! for a node whose tip is at 1,000: Core's `FindNextBlocks` never asks
//! one for a block 286 or more below its best height.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use ibex_primitives::{BlockHash, Params};

use super::{BlockDownload, DownloadConfig, HeaderChain};
use crate::messages::NetworkMessage;
use crate::sync::action::{Action, PeerId};

const TIP_HEIGHT: u32 = 1_000;
const LARGE_BOUND: u64 = 1 << 30;
const LIMITED: PeerId = PeerId(1);
const FULL: PeerId = PeerId(2);

fn hash(height: u32) -> BlockHash {
    let mut bytes = [0x5a; 32];
    bytes[..4].copy_from_slice(&height.to_le_bytes());
    BlockHash(bytes)
}

fn height_of(hash: &BlockHash) -> u32 {
    let mut bytes = [0; 4];
    bytes.copy_from_slice(&hash.0[..4]);
    u32::from_le_bytes(bytes)
}

/// The best header chain up to `best_height`, with the heights above the
/// tip whose data the engine holds.
struct Chain {
    best_height: u32,
    held: HashSet<u32>,
}

impl Chain {
    fn new(best_height: u32) -> Chain {
        Chain { best_height, held: HashSet::new() }
    }
}

impl HeaderChain for Chain {
    fn best_height(&self) -> u32 {
        self.best_height
    }

    fn hash_at(&self, height: u32) -> Option<BlockHash> {
        (height <= self.best_height).then(|| hash(height))
    }

    fn have_block_data(&self, height: u32, _hash: &BlockHash) -> bool {
        self.held.contains(&height)
    }
}

/// A scheduler at [`TIP_HEIGHT`] with a window of `window_blocks` and the
/// given peers: (peer, best height, limited).
fn scheduler(window_blocks: u32, peers: &[(PeerId, u32, bool)]) -> BlockDownload {
    let mut config = DownloadConfig::new(&Params::regtest(), LARGE_BOUND);
    config.window_blocks = window_blocks;
    let mut download = BlockDownload::new(config, TIP_HEIGHT);
    for (peer, best_height, limited) in peers {
        download.add_peer(*peer).unwrap();
        download.set_peer_best_height(*peer, Some(*best_height));
        download.set_peer_limited(*peer, *limited);
    }
    download
}

/// The heights the `getdata` to `peer` asks for (empty without one);
/// any action but a `getdata` fails the test.
fn heights_for(actions: &[Action], peer: PeerId) -> Vec<u32> {
    let mut heights = Vec::new();
    for action in actions {
        match action {
            Action::Send { peer: to, message: NetworkMessage::GetData(inventory) } => {
                if *to == peer {
                    heights
                        .extend(inventory.iter().map(|entry| height_of(&BlockHash(entry.hash.0))));
                }
            }
            other => panic!("unexpected action {other:?}"),
        }
    }
    heights
}

/// `peer` delivers every block it has in flight.
fn deliver_all(download: &mut BlockDownload, peer: PeerId, now: Instant) {
    for height in download.in_flight_heights(peer) {
        assert!(download.take_requested(peer, hash(height), 1_000, now).is_some());
    }
}

#[test]
fn a_limited_peer_far_ahead_is_never_asked_for_the_window_while_a_full_peer_is() {
    let now = Instant::now();
    // Both peers are at 5,000: every block of the window (1,001 to 2,024)
    // lies 2,976 or more below the limited peer's best height.
    let chain = Chain::new(5_000);
    let mut download = scheduler(1_024, &[(LIMITED, 5_000, true), (FULL, 5_000, false)]);
    let mut fetched_by_full = Vec::new();
    // Four polls, so that each peer is offered blocks first twice.
    for _ in 0..4 {
        let actions = download.poll(now, &chain);
        assert_eq!(heights_for(&actions, LIMITED), Vec::<u32>::new());
        assert_eq!(download.in_flight_count(LIMITED), 0);
        fetched_by_full.extend(heights_for(&actions, FULL));
        deliver_all(&mut download, FULL, now);
    }
    assert_eq!(fetched_by_full, (1_001..=1_064).collect::<Vec<u32>>(), "lowest first");
    assert_eq!(download.stalling_since(FULL), None);
}

#[test]
fn a_limited_peer_is_asked_for_blocks_from_285_below_its_best_height() {
    let now = Instant::now();
    for best_height in [1_299, 1_300, 1_301] {
        let chain = Chain::new(best_height);
        let mut download = scheduler(1_024, &[(LIMITED, best_height, true)]);
        let asked = heights_for(&download.poll(now, &chain), LIMITED);
        // 286 below is the threshold: skipped; 285 below: the first asked.
        let lowest = best_height - 285;
        assert_eq!(asked, (lowest..lowest + 16).collect::<Vec<u32>>(), "best {best_height}");
        assert!(!asked.contains(&(best_height - 286)));

        // The same peer serving every block is asked from the tip up.
        let mut download = scheduler(1_024, &[(LIMITED, best_height, false)]);
        let asked = heights_for(&download.poll(now, &chain), LIMITED);
        assert_eq!(asked, (1_001..=1_016).collect::<Vec<u32>>());
    }
}

#[test]
fn blocks_too_deep_for_a_limited_peer_are_left_to_a_full_peer() {
    let now = Instant::now();
    let chain = Chain::new(1_300);
    let mut download = scheduler(1_024, &[(LIMITED, 1_300, true), (FULL, 1_300, false)]);
    // The limited peer is offered blocks first: it passes over 1,001 to
    // 1,014 (286 to 299 below 1,300), which the full peer then takes.
    let actions = download.poll(now, &chain);
    assert_eq!(heights_for(&actions, LIMITED), (1_015..=1_030).collect::<Vec<u32>>());
    let expected_full: Vec<u32> = (1_001..=1_014).chain([1_031, 1_032]).collect();
    assert_eq!(heights_for(&actions, FULL), expected_full);
}

#[test]
fn with_only_limited_peers_deep_blocks_wait_and_nobody_is_marked_stalling() {
    let start = Instant::now();
    let other = PeerId(3);
    // The limited peer fetches blocks within its reach...
    let mut chain = Chain::new(1_300);
    let mut download = scheduler(1_024, &[(LIMITED, 1_300, true), (other, 1_300, true)]);
    let actions = download.poll(start, &chain);
    assert_eq!(heights_for(&actions, LIMITED), (1_015..=1_030).collect::<Vec<u32>>());
    assert_eq!(heights_for(&actions, other), (1_031..=1_046).collect::<Vec<u32>>());
    deliver_all(&mut download, other, start);
    // ...then both move to 5,000, leaving the whole window too deep. The
    // idle one reaches the block past the window having skipped the
    // window's: it marks nobody (Core asks limited peers for nothing in
    // initial block download), and asks for nothing.
    chain.best_height = 5_000;
    for peer in [LIMITED, other] {
        download.set_peer_best_height(peer, Some(5_000));
    }
    for seconds in [0, 1, 3, 70, 300] {
        let now = start + Duration::from_secs(seconds);
        assert!(download.poll(now, &chain).is_empty(), "at {seconds} s");
        assert_eq!(download.stalling_since(LIMITED), None);
        assert_eq!(download.stalling_since(other), None);
    }
    assert_eq!(download.in_flight_total(), 16, "only the blocks asked before");
    // The block download timeout (10 minutes alone) still applies.
    let actions = download.poll(start + Duration::from_secs(700), &chain);
    assert!(matches!(actions.first(), Some(Action::Disconnect { peer, .. }) if *peer == LIMITED));
}

#[test]
fn a_limited_peer_skipping_deep_blocks_never_marks_the_full_peer_holding_the_window() {
    let start = Instant::now();
    // A window of 32 (1,001 to 1,032), all of it 286 or more below 1,400.
    let chain = Chain::new(1_400);
    let mut download = scheduler(32, &[(FULL, 1_400, false), (PeerId(3), 1_400, true)]);
    let limited = PeerId(3);
    let actions = download.poll(start, &chain);
    assert_eq!(heights_for(&actions, FULL), (1_001..=1_016).collect::<Vec<u32>>());
    assert_eq!(heights_for(&actions, limited), Vec::<u32>::new());
    // The full peer is silent: the idle limited peer passes over 1,017 to
    // 1,032 and reaches 1,033, past the window, yet marks nobody.
    for seconds in [1, 3, 70] {
        let now = start + Duration::from_secs(seconds);
        assert!(download.poll(now, &chain).is_empty(), "at {seconds} s");
        assert_eq!(download.stalling_since(FULL), None);
    }
    // Once the full peer delivers, it takes the blocks left for it.
    let now = start + Duration::from_secs(71);
    deliver_all(&mut download, FULL, now);
    let actions = download.poll(now, &chain);
    assert_eq!(heights_for(&actions, FULL), (1_017..=1_032).collect::<Vec<u32>>());
    assert_eq!(heights_for(&actions, limited), Vec::<u32>::new());
}

#[test]
fn a_limited_peer_with_nothing_too_deep_still_marks_the_staller_as_core() {
    let start = Instant::now();
    // A window of 32 (1,001 to 1,032), every block within reach of the
    // limited peer at 1,100.
    let chain = Chain::new(1_100);
    let mut download = scheduler(32, &[(FULL, 1_100, false), (PeerId(3), 1_100, true)]);
    let limited = PeerId(3);
    let actions = download.poll(start, &chain);
    assert_eq!(heights_for(&actions, FULL), (1_001..=1_016).collect::<Vec<u32>>());
    assert_eq!(heights_for(&actions, limited), (1_017..=1_032).collect::<Vec<u32>>());
    // The limited peer delivers; the full peer, holding the window's first
    // blocks, does not: the window is full, so it is stalling.
    deliver_all(&mut download, limited, start);
    let now = start + Duration::from_secs(1);
    assert!(download.poll(now, &chain).is_empty());
    assert_eq!(download.stalling_since(FULL), Some(now));
    let actions = download.poll(now + Duration::from_secs(3), &chain);
    assert!(matches!(actions.first(), Some(Action::Disconnect { peer, .. }) if *peer == FULL));
}
