//! Choosing blocks for peers (Core's `FindNextBlocks`): one walk over the
//! window per poll finds the blocks neither held nor in flight, then each
//! peer with free slots takes the lowest it can serve.

use std::time::Instant;

use ibex_primitives::{BlockHash, Hash256};

use super::{BlockDownload, HeaderChain, InFlight, TRACKED_BLOCKS_MAX};
use crate::messages::inventory::{Inventory, InventoryType};
use crate::messages::NetworkMessage;
use crate::sync::action::{Action, PeerId};

/// What the walk over the window found.
struct WindowScan {
    /// Blocks to fetch, by height: inside the window, plus at most the one
    /// just past it (to tell that the window is what holds a peer back).
    wanted: Vec<(u32, BlockHash)>,
    /// Whether each entry of `wanted` was taken this poll.
    taken: Vec<bool>,
    /// The peer the first block in flight in the window comes from (Core's
    /// `waitingfor`).
    first_in_flight_from: Option<PeerId>,
}

/// Why a peer got fewer blocks than it had room for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    /// Nothing more it could serve.
    Nothing,
    /// The next block it could serve lies past the window.
    Window,
    /// The byte bound (or the tracked-blocks bound) is reached.
    Bytes,
}

impl BlockDownload {
    /// Requests blocks from every peer with free slots, in turn starting
    /// from a peer that rotates each poll, and marks the peer holding up
    /// the window as stalling.
    pub(super) fn request_blocks(
        &mut self,
        now: Instant,
        chain: &impl HeaderChain,
        actions: &mut Vec<Action>,
    ) {
        if self.peers.is_empty() {
            return;
        }
        let mut scan = self.scan_window(chain);
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        let start = self.rotation % peers.len();
        self.rotation = self.rotation.wrapping_add(1);
        for offset in 0..peers.len() {
            let Some(peer) = peers.get((start + offset) % peers.len()) else { continue };
            self.request_from(*peer, now, &mut scan, actions);
        }
    }

    fn scan_window(&self, chain: &impl HeaderChain) -> WindowScan {
        let window_end = self.tip_height.saturating_add(self.config.window_blocks);
        let best_served = self.peers.values().filter_map(|state| state.best_height).max();
        let scan_end = best_served.unwrap_or(0).min(chain.best_height()).min(window_end + 1);
        let mut scan = WindowScan {
            wanted: Vec::with_capacity(self.config.window_blocks as usize + 1),
            taken: Vec::new(),
            first_in_flight_from: None,
        };
        let mut height = self.base_height();
        while height < scan_end {
            height += 1;
            let Some(hash) = chain.hash_at(height) else { break };
            if self.received.contains_key(&hash) || chain.have_block_data(height, &hash) {
                continue;
            }
            if let Some(entry) = self.in_flight.get(&hash) {
                scan.first_in_flight_from.get_or_insert(entry.peer);
                continue;
            }
            scan.wanted.push((height, hash));
        }
        scan.taken = vec![false; scan.wanted.len()];
        scan
    }

    fn request_from(
        &mut self,
        peer: PeerId,
        now: Instant,
        scan: &mut WindowScan,
        actions: &mut Vec<Action>,
    ) {
        let Some(state) = self.peers.get(&peer) else { return };
        let Some(best_height) = state.best_height else { return };
        let room = self.config.in_flight_per_peer_max.saturating_sub(state.queue_in_flight.len());
        if room == 0 {
            return;
        }
        let was_idle = state.queue_in_flight.is_empty();
        let window_end = self.tip_height.saturating_add(self.config.window_blocks);
        let mut picked: Vec<(u32, BlockHash)> = Vec::with_capacity(room);
        let mut limit = Limit::Nothing;
        for (index, (height, hash)) in scan.wanted.iter().enumerate() {
            if *height > best_height || picked.len() == room {
                break;
            }
            if scan.taken.get(index).copied().unwrap_or(true) {
                continue;
            }
            if *height > window_end {
                limit = Limit::Window;
                break;
            }
            let next_to_connect = *height == self.base_height().saturating_add(1);
            if !self.has_room_for_another_block(picked.len(), next_to_connect) {
                limit = Limit::Bytes;
                break;
            }
            if let Some(taken) = scan.taken.get_mut(index) {
                *taken = true;
            }
            picked.push((*height, *hash));
        }
        if picked.is_empty() {
            if was_idle && limit != Limit::Nothing {
                self.mark_staller(peer, scan.first_in_flight_from, now);
            }
            return;
        }
        self.record_requests(peer, &picked, now);
        let inventory = picked
            .iter()
            .map(|(_, hash)| Inventory {
                inventory_type: InventoryType::WITNESS_BLOCK,
                hash: Hash256(hash.0),
            })
            .collect();
        actions.push(Action::Send { peer, message: NetworkMessage::GetData(inventory) });
    }

    /// Whether one more block (after `pending` picked this round) fits the
    /// byte bound and the tracked-blocks bound. Every block but the one
    /// right after the tip must leave one block's estimate free: blocks
    /// received out of order can then never fill the bound while the tip
    /// waits for a block nobody is fetching (say, after its peer left).
    fn has_room_for_another_block(&self, pending: usize, next_to_connect: bool) -> bool {
        let estimate = self.config.block_bytes_estimate;
        let headroom = if next_to_connect { 0 } else { estimate };
        let reserved_after = (pending as u64 + 1).saturating_mul(estimate).saturating_add(headroom);
        let fits_bytes =
            self.bytes_held().saturating_add(reserved_after) <= self.config.download_bytes_max;
        let tracked = self.in_flight.len() + self.received.len() + pending;
        fits_bytes && (next_to_connect || tracked < TRACKED_BLOCKS_MAX)
    }

    /// Core's `BlockRequested` for each block: queued behind the peer's
    /// others, its download clock started if it was idle.
    fn record_requests(&mut self, peer: PeerId, picked: &[(u32, BlockHash)], now: Instant) {
        let estimate = self.config.block_bytes_estimate;
        let Some(state) = self.peers.get_mut(&peer) else { return };
        if state.queue_in_flight.is_empty() {
            state.downloading_since = Some(now);
        }
        for (height, hash) in picked {
            state.queue_in_flight.push_back(*hash);
            self.in_flight.insert(*hash, InFlight { peer, height: *height });
            self.reserved_bytes += estimate;
        }
    }

    /// An idle peer found nothing it may ask for: the peer it waits on (the
    /// first block in flight in the window) is stalling from now on, unless
    /// it already is (Core: `m_stalling_since` set once).
    fn mark_staller(&mut self, idle_peer: PeerId, staller: Option<PeerId>, now: Instant) {
        let Some(staller) = staller.filter(|staller| *staller != idle_peer) else { return };
        if let Some(state) = self.peers.get_mut(&staller) {
            state.stalling_since.get_or_insert(now);
        }
    }
}
