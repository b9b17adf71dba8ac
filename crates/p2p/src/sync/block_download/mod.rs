//! The block download scheduler (Core's `FindNextBlocksToDownload` and the
//! block parts of `SendMessages`, net_processing.cpp): which block to ask
//! which peer for, when a peer is stalling or too slow, and what to hand
//! the engine.
//!
//! - **Window**: only blocks at most [`BLOCK_DOWNLOAD_WINDOW_BLOCKS`] (1,024)
//!   above the engine's tip are requested, lowest first, from peers whose
//!   best header reaches them, at most [`BLOCKS_IN_FLIGHT_PER_PEER_MAX`] (16)
//!   per peer. A limited peer (`NODE_NETWORK_LIMITED` without
//!   `NODE_NETWORK`, [`BlockDownload::set_peer_limited`]) serves only the
//!   last 288 blocks: as in Core's `FindNextBlocks`, it is not asked for a
//!   block 286 or more below its best height (288 less two blocks for its
//!   tip moving on meanwhile); other peers still are.
//! - **Bytes**: blocks in flight (counted at 4 MB, the largest a block can
//!   be) plus blocks received and not yet connected (at their size) never
//!   pass `download_bytes_max` ([`download_bytes_for_share`] derives it
//!   from the node's share of `-dbcache` for blocks ahead of validation). A received block counts until the engine's tip
//!   reaches its height or it leaves the best header chain. One block's
//!   estimate of the bound is kept for the block right after the tip, so
//!   blocks received out of order can never fill the bound while the tip
//!   waits for a block nobody is fetching.
//! - **Stalling**: when a peer with no block in flight finds nothing to ask
//!   for because the window is full (or, Ibex's addition, the byte bound),
//!   the peer holding the first block in flight in the window is marked
//!   stalling; if it delivers none of its blocks within the stalling timeout
//!   (2 s, doubled after each such disconnect up to 64 s, decaying by 15 %
//!   per connected block) it is disconnected and its blocks go to others.
//!   A limited peer that skipped a block for being too deep marks nobody:
//!   Core lets limited peers download only outside initial block download
//!   (a tip under a day old), where a block of the window is hardly ever
//!   that deep (two days), and no disconnect would let the peer fetch the
//!   skipped block the tip needs.
//! - **Timeouts**: a peer whose first block in flight takes longer than a
//!   block interval times 1 + 0.5 per other downloading peer (10 minutes
//!   alone) is disconnected.
//! - **Blocks**: a block requested from the peer that sends it is offered to
//!   the engine at once, in whatever order they come. Any other block is the
//!   node's to judge by Core's rules for unrequested blocks (kept only when
//!   it would extend the best chain); one it keeps is counted against the
//!   byte bound like a downloaded one ([`BlockDownload::take_unrequested`]).
//! - **Background chainstate** (AssumeUTXO, Core's
//!   `TryDownloadingHistoricalBlocks`): while a chainstate loaded from a
//!   snapshot is active, a background chainstate validates from genesis up
//!   to the snapshot's base ([`HeaderChain::background_range`]). The room a
//!   peer has left once it took the active chain's blocks (every peer is
//!   served for the active chain first) goes to a second window: the
//!   blocks without data above the background's tip, at most
//!   [`BLOCK_DOWNLOAD_WINDOW_BLOCKS`] above it and never above the base,
//!   from peers whose best header reaches them and that serve more than the
//!   last 288 blocks (never a limited peer, whatever its best height: the
//!   base lies far below the network's tip). They share the in-flight limit
//!   per peer, the block download timeout and the byte bound (a received
//!   one counts until the background's tip reaches it), but never the
//!   stalling rule: no peer is marked stalling for them, nor for an active
//!   block held back only by their bytes. The byte bound keeps one block's
//!   estimate free for the active chain's next block and one more for the
//!   background's next, and while the active chain waits for blocks the
//!   background's others take at most half the bound
//!   ([`DownloadConfig::background_bytes_max`]).
//!
//! Departures from Core, all on the side of simplicity: blocks are fetched
//! along our best header chain only (Core follows each peer's best chain),
//! the peer's usable height is given by the caller (the height where its
//! best header meets our best chain; `None` for a peer with less work than
//! our tip or the minimum chain work; it stands for Core's
//! `pindexBestKnownBlock`, in the limited peers' rule too), the scheduler
//! does not know initial block download (Core's `SendMessages` asks a
//! limited peer for no block until it is over: the node gives such a peer
//! no usable height meanwhile, so it is asked for none here either), and
//! the window starts at the engine's tip, or where the best header chain
//! forks from the active chain when the tip is on another branch
//! ([`HeaderChain::fork_height`]; Core's at each peer's last common block,
//! the same during IBD).
//!
//! # Napkin math
//! - In flight: 16 per peer, so 128 blocks with 8 peers; at 4 MB reserved
//!   each that is 512 MB, so on mainnet's full blocks the byte bound (56 MiB
//!   at `-dbcache=450`) binds first: 14 blocks reserved.
//! - Throughput: a peer with 16 blocks in flight delivers at most 16 blocks
//!   per round trip plus transfer time. On loopback (~50 us round trip,
//!   ~5 GB/s) the round trip is nothing: 16 blocks of 1.5 MB take ~5 ms to
//!   copy, so one peer can feed ~3,000 blocks/s, far beyond validation
//!   (~100-1,000 blocks/s depending on the era), and the window only matters
//!   as the bound on how far out of order blocks arrive. Over the internet
//!   (100 ms, 100 Mbit/s) bandwidth binds: 12.5 MB/s = 8 full blocks/s, for
//!   which 16 in flight per peer and 1,024 in the window are plenty.
//! - The window holds at most 1,024 blocks received out of order: 1.5 GB of
//!   today's blocks, which is why the byte bound exists; early blocks (under
//!   1 KB until height ~100,000) fill it with 1 MB.
//! - Memory: per peer a queue of 16 hashes (~600 bytes); per tracked block
//!   ~80 bytes of map entry; at most [`TRACKED_BLOCKS_MAX`] (4,096) tracked:
//!   ~330 KB. A poll walks the window once (1,024 hash lookups, ~30 us).
//! - Background chainstate: its window adds at most 1,024 tracked blocks
//!   (the two windows together are half of [`TRACKED_BLOCKS_MAX`]) and one
//!   more walk of 1,024 lookups per poll. Its bytes come out of the same
//!   bound, so memory does not grow: at `-dbcache=450` (a 32 MiB bound, 8
//!   blocks of 4 MB) it has up to 6 blocks reserved while the active chain
//!   is at the network's tip (two estimates stay free, one per next
//!   block), about 4 while the active chain downloads too. A full IBD has
//!   7, so the background reaches the base (935,000 blocks on mainnet)
//!   about as fast as an IBD from genesis: the byte bound and validation,
//!   not the second window, are its limits.

mod background;
#[cfg(test)]
mod background_tests;
mod config;
#[cfg(test)]
mod limited_tests;
mod schedule;
mod stalling;
mod unrequested;

pub use background::BackgroundRange;

pub use config::{
    download_bytes_for_share, DownloadConfig, BLOCKS_IN_FLIGHT_PER_PEER_MAX, BLOCK_BYTES_MAX,
    BLOCK_DOWNLOAD_WINDOW_BLOCKS, BLOCK_STALLING_TIMEOUT_DEFAULT, BLOCK_STALLING_TIMEOUT_MAX,
    DOWNLOAD_BYTES_CEILING, DOWNLOAD_BYTES_FLOOR, DOWNLOAD_PEERS_MAX, TRACKED_BLOCKS_MAX,
};
pub use stalling::StallingTimeout;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Instant;

use ibex_primitives::hash::sha256d;
use ibex_primitives::{BlockHash, HEADER_BYTES};

use crate::sync::action::{Action, DisconnectReason, PeerId};
use crate::sync::locator::{ChainView, HashChain};

/// The best header chain, as the scheduler reads it.
pub trait HeaderChain {
    /// Height of the best header.
    fn best_height(&self) -> u32;
    /// Hash of the best chain's block at `height`.
    fn hash_at(&self, height: u32) -> Option<BlockHash>;
    /// Whether the engine already holds this block's data (stored, not yet
    /// connected, or kept after a reorganisation): it is not downloaded.
    fn have_block_data(&self, _height: u32, _hash: &BlockHash) -> bool {
        false
    }
    /// Where the best header chain leaves the active chain, when that is
    /// below the engine's tip (the tip is on another branch: Core's
    /// `pindexLastCommonBlock`); `None` when the tip is on the best chain.
    /// Blocks are fetched from just above it.
    fn fork_height(&self) -> Option<u32> {
        None
    }
    /// AssumeUTXO's background chainstate, while it still needs blocks
    /// below the snapshot's base (Core's `GetHistoricalBlockRange`);
    /// `None` without a snapshot, once it is validated, or when the
    /// background's tip is at the base.
    fn background_range(&self) -> Option<BackgroundRange> {
        None
    }
    /// The snapshot chain's block at `height`, above the background's tip
    /// and at most at the base, and whether the engine holds its data;
    /// `None` past what the view holds. Blocks are fetched for the
    /// background only up to the first `None`.
    fn background_block(&self, _height: u32) -> Option<(BlockHash, bool)> {
        None
    }
}

impl HeaderChain for HashChain {
    fn best_height(&self) -> u32 {
        self.tip_height().unwrap_or(0)
    }

    fn hash_at(&self, height: u32) -> Option<BlockHash> {
        ChainView::hash_at(self, height)
    }
}

/// The scheduler cannot take another peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DownloadError {
    /// [`DOWNLOAD_PEERS_MAX`] peers are tracked already.
    #[error("the block download tracks {DOWNLOAD_PEERS_MAX} peers already")]
    TooManyPeers,
}

/// One peer's download state (Core's `vBlocksInFlight`,
/// `m_downloading_since`, `m_stalling_since`).
#[derive(Debug, Clone, Default)]
struct DownloadPeer {
    /// Height where its best header meets our best chain.
    best_height: Option<u32>,
    /// Blocks in flight from it, in request order; at most
    /// [`BLOCKS_IN_FLIGHT_PER_PEER_MAX`].
    queue_in_flight: VecDeque<BlockHash>,
    /// Since when its first block in flight is awaited.
    downloading_since: Option<Instant>,
    /// Since when it holds up the window.
    stalling_since: Option<Instant>,
    /// It serves only the last 288 blocks (Core's `IsLimitedPeer`): never
    /// asked for the background chainstate's, nor for the active window's
    /// 286 or more below `best_height`.
    limited: bool,
}

/// The chainstate a block is downloaded for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// The active chainstate: the window above its tip.
    Active,
    /// AssumeUTXO's background chainstate: the window below the base.
    Background,
}

/// A block requested and not yet received.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    peer: PeerId,
    height: u32,
    role: Role,
}

/// A block received and handed to the engine, not yet connected.
#[derive(Debug, Clone, Copy)]
struct Received {
    height: u32,
    bytes: u64,
    role: Role,
}

/// The scheduler (see the module docs). Feed it events; carry out the
/// [`Action`]s it returns.
#[derive(Debug, Clone)]
pub struct BlockDownload {
    config: DownloadConfig,
    tip_height: u32,
    peers: BTreeMap<PeerId, DownloadPeer>,
    in_flight: HashMap<BlockHash, InFlight>,
    received: HashMap<BlockHash, Received>,
    reserved_bytes: u64,
    received_bytes: u64,
    /// The part of `reserved_bytes` and `received_bytes` held for the
    /// background chainstate.
    background_bytes: u64,
    /// The best chain's fork from the active chain, when below the tip (as
    /// the last poll's chain gave it).
    fork_height: Option<u32>,
    /// The background chainstate's blocks still needed (as the last poll's
    /// chain gave them).
    background: Option<BackgroundRange>,
    stalling_timeout: StallingTimeout,
    /// Which peer is offered blocks first in the next poll.
    rotation: usize,
}

impl BlockDownload {
    /// A scheduler for an engine whose tip is at `tip_height`.
    pub fn new(config: DownloadConfig, tip_height: u32) -> BlockDownload {
        BlockDownload {
            config,
            tip_height,
            peers: BTreeMap::new(),
            in_flight: HashMap::new(),
            received: HashMap::new(),
            reserved_bytes: 0,
            received_bytes: 0,
            background_bytes: 0,
            fork_height: None,
            background: None,
            stalling_timeout: StallingTimeout::default(),
            rotation: 0,
        }
    }

    /// A peer that can serve blocks finished its handshake.
    pub fn add_peer(&mut self, peer: PeerId) -> Result<(), DownloadError> {
        if !self.peers.contains_key(&peer) && self.peers.len() >= DOWNLOAD_PEERS_MAX {
            return Err(DownloadError::TooManyPeers);
        }
        self.peers.entry(peer).or_default();
        Ok(())
    }

    /// Where `peer`'s best header meets our best header chain; `None` when
    /// it has nothing for us (less work than our tip or than the minimum).
    pub fn set_peer_best_height(&mut self, peer: PeerId, best_height: Option<u32>) {
        if let Some(state) = self.peers.get_mut(&peer) {
            state.best_height = best_height;
        }
    }

    /// `peer` is gone: its blocks in flight may be asked of others. Returns
    /// them. Calling it for an unknown peer does nothing.
    pub fn remove_peer(&mut self, peer: PeerId) -> Vec<BlockHash> {
        let Some(state) = self.peers.remove(&peer) else { return Vec::new() };
        for hash in &state.queue_in_flight {
            if let Some(entry) = self.in_flight.remove(hash) {
                self.release_reservation(entry.role);
            }
        }
        state.queue_in_flight.into()
    }

    /// Whether `peer` serves only the last 288 blocks (`NODE_NETWORK_LIMITED`
    /// without `NODE_NETWORK`, Core's `IsLimitedPeer`): it is then never
    /// asked for the background chainstate's blocks, nor for the active
    /// window's 286 or more below its best height.
    pub fn set_peer_limited(&mut self, peer: PeerId, limited: bool) {
        if let Some(state) = self.peers.get_mut(&peer) {
            state.limited = limited;
        }
    }

    /// The engine's tip moved to `tip_height`, connecting `blocks_connected`
    /// blocks (each decays the stalling timeout).
    pub fn on_tip_moved(&mut self, tip_height: u32, blocks_connected: u32) {
        self.tip_height = tip_height;
        self.stalling_timeout.on_blocks_connected(blocks_connected);
        let base_height = self.base_height();
        // The background's blocks lie below the tip: its own tip releases
        // them (at the next poll).
        self.release_received_unless(|_, block| {
            block.role == Role::Background || block.height > base_height
        });
    }

    /// A `block` message from `peer` (its payload). Returns the offer to the
    /// engine of a block requested from `peer`; anything else gives nothing:
    /// a payload too short to hold a header (Core ignores a message it
    /// cannot deserialise) and a block not requested from `peer` (the node
    /// judges those as Core does: [`BlockDownload::is_requested_from`],
    /// [`BlockDownload::take_unrequested`]).
    pub fn on_block(&mut self, peer: PeerId, bytes: Vec<u8>, now: Instant) -> Vec<Action> {
        let Some(header) = bytes.get(..HEADER_BYTES) else { return Vec::new() };
        let hash = BlockHash(sha256d(header));
        let size_bytes = bytes.len() as u64;
        match self.take_requested(peer, hash, size_bytes, now) {
            Some(height) => vec![Action::OfferBlock { peer, hash, height, bytes }],
            None => Vec::new(),
        }
    }

    /// The block `hash` requested from `peer` arrived whole and decoded
    /// (`size_bytes` serialised): its request is done and it counts as
    /// received until connected. Returns its height; `None` when it was not
    /// requested from `peer`. A block that does not decode must not come
    /// here: Core keeps its request in flight, so the stalling and download
    /// timeouts still judge the peer.
    pub fn take_requested(
        &mut self,
        peer: PeerId,
        hash: BlockHash,
        size_bytes: u64,
        now: Instant,
    ) -> Option<u32> {
        if !self.is_requested_from(peer, &hash) {
            return None;
        }
        let entry = self.remove_request(&hash, now)?;
        let waits_to_connect = match entry.role {
            Role::Active => entry.height > self.base_height(),
            Role::Background => self.background.is_some_and(|range| range.is_needed(entry.height)),
        };
        if waits_to_connect {
            let block = Received { height: entry.height, bytes: size_bytes, role: entry.role };
            self.count_received(hash, block);
        }
        Some(entry.height)
    }

    /// Time passed (call it after every event, and at least every 100 ms):
    /// disconnects stalling and timed-out peers, then requests blocks.
    pub fn poll(&mut self, now: Instant, chain: &impl HeaderChain) -> Vec<Action> {
        self.fork_height = chain.fork_height();
        self.background = chain.background_range().filter(BackgroundRange::needs_blocks);
        self.release_received_off_chain(chain);
        let mut actions = Vec::new();
        self.disconnect_stalling(now, &mut actions);
        self.disconnect_timed_out(now, &mut actions);
        self.request_blocks(now, chain, &mut actions);
        actions
    }

    /// The engine's tip height the scheduler knows.
    pub fn tip_height(&self) -> u32 {
        self.tip_height
    }

    /// The height blocks are fetched from just above: the tip, or the best
    /// chain's fork from the active chain when the tip is on another
    /// branch.
    pub fn base_height(&self) -> u32 {
        self.fork_height.map_or(self.tip_height, |fork| fork.min(self.tip_height))
    }

    /// Bytes counted against `download_bytes_max`: blocks in flight at the
    /// estimate plus blocks received and not connected.
    pub fn bytes_held(&self) -> u64 {
        self.reserved_bytes + self.received_bytes
    }

    /// The part of [`BlockDownload::bytes_held`] held for the background
    /// chainstate.
    pub fn background_bytes_held(&self) -> u64 {
        self.background_bytes
    }

    /// Blocks in flight from `peer`.
    pub fn in_flight_count(&self, peer: PeerId) -> usize {
        self.peers.get(&peer).map_or(0, |state| state.queue_in_flight.len())
    }

    /// Heights of the blocks in flight from `peer`, in request order
    /// (Core's `vHeightInFlight`, `getpeerinfo`'s `inflight`); at most
    /// [`BLOCKS_IN_FLIGHT_PER_PEER_MAX`].
    pub fn in_flight_heights(&self, peer: PeerId) -> Vec<u32> {
        let Some(state) = self.peers.get(&peer) else { return Vec::new() };
        state
            .queue_in_flight
            .iter()
            .filter_map(|hash| self.in_flight.get(hash).map(|entry| entry.height))
            .collect()
    }

    /// Blocks in flight from every peer.
    pub fn in_flight_total(&self) -> usize {
        self.in_flight.len()
    }

    /// Blocks received and not yet connected.
    pub fn received_count(&self) -> usize {
        self.received.len()
    }

    /// The peer `hash` is in flight from.
    pub fn in_flight_from(&self, hash: &BlockHash) -> Option<PeerId> {
        self.in_flight.get(hash).map(|entry| entry.peer)
    }

    /// Since when `peer` is marked stalling.
    pub fn stalling_since(&self, peer: PeerId) -> Option<Instant> {
        self.peers.get(&peer).and_then(|state| state.stalling_since)
    }

    /// The current stalling timeout.
    pub fn stalling_timeout(&self) -> StallingTimeout {
        self.stalling_timeout
    }

    /// Core's `RemoveBlockRequest(hash, from_peer)`: the peer's download
    /// clock restarts if it was its first block, its stall mark clears.
    fn remove_request(&mut self, hash: &BlockHash, now: Instant) -> Option<InFlight> {
        let entry = self.in_flight.remove(hash)?;
        self.release_reservation(entry.role);
        if let Some(state) = self.peers.get_mut(&entry.peer) {
            if state.queue_in_flight.front() == Some(hash) {
                state.downloading_since = state.downloading_since.map(|since| since.max(now));
            }
            state.queue_in_flight.retain(|queued| queued != hash);
            if state.queue_in_flight.is_empty() {
                state.downloading_since = None;
            }
            state.stalling_since = None;
        }
        Some(entry)
    }

    /// Releases the active chain's received blocks the tip passed or that
    /// left the best chain, and the background's that its tip passed (or
    /// all of them once it needs none).
    fn release_received_off_chain(&mut self, chain: &impl HeaderChain) {
        let base_height = self.base_height();
        let background = self.background;
        self.release_received_unless(|hash, block| match block.role {
            Role::Active => {
                block.height > base_height && chain.hash_at(block.height) == Some(*hash)
            }
            Role::Background => background.is_some_and(|range| range.is_needed(block.height)),
        });
    }

    /// Stops counting every received block `keep` refuses.
    fn release_received_unless(&mut self, keep: impl Fn(&BlockHash, &Received) -> bool) {
        let (mut released, mut released_background) = (0, 0);
        self.received.retain(|hash, block| {
            let kept = keep(hash, block);
            if !kept {
                released += block.bytes;
                if block.role == Role::Background {
                    released_background += block.bytes;
                }
            }
            kept
        });
        self.received_bytes = self.received_bytes.saturating_sub(released);
        self.background_bytes = self.background_bytes.saturating_sub(released_background);
    }

    /// Counts `block` (`hash`) as received until it is connected.
    fn count_received(&mut self, hash: BlockHash, block: Received) {
        self.received_bytes += block.bytes;
        if block.role == Role::Background {
            self.background_bytes += block.bytes;
        }
        if let Some(replaced) = self.received.insert(hash, block) {
            self.release_bytes(replaced.role, replaced.bytes, 0);
        }
    }

    /// Stops counting the received block `hash`.
    fn forget_received(&mut self, hash: &BlockHash) {
        if let Some(block) = self.received.remove(hash) {
            self.release_bytes(block.role, block.bytes, 0);
        }
    }

    /// A request of `role` is over: its reservation is released.
    fn release_reservation(&mut self, role: Role) {
        self.release_bytes(role, 0, self.config.block_bytes_estimate);
    }

    fn release_bytes(&mut self, role: Role, received_bytes: u64, reserved_bytes: u64) {
        self.received_bytes = self.received_bytes.saturating_sub(received_bytes);
        self.reserved_bytes = self.reserved_bytes.saturating_sub(reserved_bytes);
        if role == Role::Background {
            let released = received_bytes.saturating_add(reserved_bytes);
            self.background_bytes = self.background_bytes.saturating_sub(released);
        }
    }

    /// Core's stall check in `SendMessages`: each peer stalling for longer
    /// than the timeout is disconnected, and the timeout doubles before the
    /// next peer is judged.
    fn disconnect_stalling(&mut self, now: Instant, actions: &mut Vec<Action>) {
        let stalled: Vec<PeerId> = self
            .peers
            .iter()
            .filter_map(|(peer, state)| state.stalling_since.map(|since| (*peer, since)))
            .filter(|(_, since)| {
                now.saturating_duration_since(*since) > self.stalling_timeout.current()
            })
            .map(|(peer, _)| peer)
            .collect();
        for peer in stalled {
            let still_stalled = self.peers.get(&peer).and_then(|state| state.stalling_since);
            let Some(since) = still_stalled else { continue };
            let timeout = self.stalling_timeout.current();
            if now.saturating_duration_since(since) <= timeout {
                continue;
            }
            actions.push(Action::Disconnect {
                peer,
                reason: DisconnectReason::StallingBlockDownload {
                    timeout_seconds: timeout.as_secs(),
                },
            });
            self.remove_peer(peer);
            self.stalling_timeout.on_stall_disconnect();
        }
    }

    /// Core's block download timeout: the first block in flight from a peer
    /// has waited longer than the timeout for the number of downloading
    /// peers.
    fn disconnect_timed_out(&mut self, now: Instant, actions: &mut Vec<Action>) {
        let downloading =
            self.peers.values().filter(|state| !state.queue_in_flight.is_empty()).count();
        let timeout = self.config.block_download_timeout(downloading);
        let timed_out: Vec<(PeerId, BlockHash)> = self
            .peers
            .iter()
            .filter_map(|(peer, state)| {
                let since = state.downloading_since?;
                let first = state.queue_in_flight.front()?;
                (now.saturating_duration_since(since) > timeout).then_some((*peer, *first))
            })
            .collect();
        for (peer, hash) in timed_out {
            actions.push(Action::Disconnect {
                peer,
                reason: DisconnectReason::BlockDownloadTimeout {
                    hash,
                    timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                },
            });
            self.remove_peer(peer);
        }
    }
}
