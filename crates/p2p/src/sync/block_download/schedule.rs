//! Choosing blocks for peers (Core's `FindNextBlocks`): one walk over the
//! window per poll finds the blocks neither held nor in flight, then each
//! peer with free slots takes the lowest it can serve; then, with the room
//! left, the same for the background chainstate's window
//! (`super::background`). Each peer gets one `getdata` per poll.

use std::time::Instant;

use ibex_primitives::{BlockHash, Hash256};

use super::config::LIMITED_PEER_DEPTH_BLOCKS_MAX;
use super::{BlockDownload, HeaderChain, InFlight, Role, TRACKED_BLOCKS_MAX};
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

impl WindowScan {
    /// Whether a block at most at `window_end` is still wanted after this
    /// poll's requests: the active chain waits for blocks.
    fn has_blocks_left(&self, window_end: u32) -> bool {
        self.wanted
            .iter()
            .zip(&self.taken)
            .any(|((height, _), taken)| !*taken && *height <= window_end)
    }
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
    /// The byte bound is reached only because of the background
    /// chainstate's blocks: no peer of the active window holds it up.
    BackgroundBytes,
}

/// What a request must leave of the byte bound, by the block's place: the
/// active chain's next block may take the bound's last estimate; any other
/// active block, and the background's next, leave one estimate free for
/// it; the background's other blocks leave two, one for each next block.
/// Received blocks waiting for a next block can then never fill the bound
/// while nobody fetches that block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Priority {
    /// The block right after the active chain's tip.
    NextActive,
    /// Any other block of the active window.
    Active,
    /// The block right after the background chainstate's tip.
    NextBackground,
    /// Any other block of the background window.
    Background,
}

impl Priority {
    /// Block estimates of the byte bound to leave free.
    fn headroom_blocks(self) -> u64 {
        match self {
            Priority::NextActive => 0,
            Priority::Active | Priority::NextBackground => 1,
            Priority::Background => 2,
        }
    }

    /// A next block: its chainstate waits for it, so the tracked-blocks
    /// bound does not hold it back.
    fn is_next(self) -> bool {
        matches!(self, Priority::NextActive | Priority::NextBackground)
    }
}

/// The blocks picked for each peer this poll, in the order peers were
/// served.
pub(super) type Picks = Vec<(PeerId, Vec<(u32, BlockHash)>)>;

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
        let mut picks: Picks = Vec::with_capacity(peers.len());
        // Every peer is served for the active chain before any for the
        // background (Core: the active chainstate first, to reach the
        // network's tip before downloading history).
        for offset in 0..peers.len() {
            let Some(peer) = peers.get((start + offset) % peers.len()) else { continue };
            let picked = self.request_from(*peer, now, &mut scan);
            picks.push((*peer, picked));
        }
        let window_end = self.tip_height.saturating_add(self.config.window_blocks);
        let active_waiting = scan.has_blocks_left(window_end);
        self.request_background(chain, now, active_waiting, &mut picks);
        push_get_data(picks, actions);
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

    /// The active window's blocks for `peer` (requested: recorded as in
    /// flight), and the staller marked when an idle peer finds none.
    fn request_from(
        &mut self,
        peer: PeerId,
        now: Instant,
        scan: &mut WindowScan,
    ) -> Vec<(u32, BlockHash)> {
        let Some(state) = self.peers.get(&peer) else { return Vec::new() };
        let Some(best_height) = state.best_height else { return Vec::new() };
        let room = self.config.in_flight_per_peer_max.saturating_sub(state.queue_in_flight.len());
        if room == 0 {
            return Vec::new();
        }
        let (was_idle, limited) = (state.queue_in_flight.is_empty(), state.limited);
        let window_end = self.tip_height.saturating_add(self.config.window_blocks);
        let mut picked: Vec<(u32, BlockHash)> = Vec::with_capacity(room);
        let mut limit = Limit::Nothing;
        let mut skipped_for_depth = false;
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
            // Left untaken for peers that serve it. Checked after the
            // window's end, as Core does: the block past the window still
            // tells that the window holds this peer back.
            if limited && is_too_deep_for_limited_peer(best_height, *height) {
                skipped_for_depth = true;
                continue;
            }
            let priority = self.active_priority(*height);
            if !self.has_room_for_another_block(picked.len(), priority) {
                limit = if self.held_back_by_background(picked.len(), priority) {
                    Limit::BackgroundBytes
                } else {
                    Limit::Bytes
                };
                break;
            }
            if let Some(taken) = scan.taken.get_mut(index) {
                *taken = true;
            }
            picked.push((*height, *hash));
        }
        if picked.is_empty() {
            // A limited peer that skipped a block for depth marks nobody,
            // although Core's `FindNextBlocks` alone would: Core's
            // `SendMessages` never lets a limited peer download during
            // initial block download (a tip older than a day), and a
            // window block 286 below the peer's best puts our tip about
            // two days behind; the scheduler does not know IBD, the skip
            // stands for it. Nor would a disconnect help: the tip needs
            // the skipped block, which this peer cannot serve whoever is
            // disconnected. A limited peer that skipped none keeps Core's
            // rule.
            if was_idle && !skipped_for_depth && matches!(limit, Limit::Window | Limit::Bytes) {
                self.mark_staller(peer, scan.first_in_flight_from, now);
            }
            return picked;
        }
        self.record_requests(peer, &picked, now, Role::Active);
        picked
    }

    /// The byte-bound priority of the active window's block at `height`.
    fn active_priority(&self, height: u32) -> Priority {
        if height == self.base_height().saturating_add(1) {
            Priority::NextActive
        } else {
            Priority::Active
        }
    }

    /// Whether one more block (after `pending` picked this round) fits the
    /// byte bound and the tracked-blocks bound. Every block but the one
    /// right after the tip must leave one block's estimate free, and the
    /// background's blocks one more ([`Priority`]): blocks received out of
    /// order can then never fill the bound while a tip waits for a block
    /// nobody is fetching (say, after its peer left).
    pub(super) fn has_room_for_another_block(&self, pending: usize, priority: Priority) -> bool {
        let fits_bytes = self.fits_bytes(self.bytes_held(), pending, priority);
        let tracked = self.in_flight.len() + self.received.len() + pending;
        fits_bytes && (priority.is_next() || tracked < TRACKED_BLOCKS_MAX)
    }

    /// Whether the block that did not fit would fit without the background
    /// chainstate's bytes: its peer is then not held up by the active
    /// window's stallers.
    fn held_back_by_background(&self, pending: usize, priority: Priority) -> bool {
        let active_bytes = self.bytes_held().saturating_sub(self.background_bytes);
        let tracked = self.in_flight.len() + self.received.len() + pending;
        self.background_bytes > 0
            && self.fits_bytes(active_bytes, pending, priority)
            && (priority.is_next() || tracked < TRACKED_BLOCKS_MAX)
    }

    /// Whether `held` bytes, `pending` blocks and one more leave the
    /// headroom `priority` asks for.
    fn fits_bytes(&self, held: u64, pending: usize, priority: Priority) -> bool {
        let estimate = self.config.block_bytes_estimate;
        let blocks_after = (pending as u64 + 1).saturating_add(priority.headroom_blocks());
        held.saturating_add(blocks_after.saturating_mul(estimate)) <= self.config.download_bytes_max
    }

    /// Core's `BlockRequested` for each block: queued behind the peer's
    /// others, its download clock started if it was idle.
    pub(super) fn record_requests(
        &mut self,
        peer: PeerId,
        picked: &[(u32, BlockHash)],
        now: Instant,
        role: Role,
    ) {
        let estimate = self.config.block_bytes_estimate;
        let Some(state) = self.peers.get_mut(&peer) else { return };
        if state.queue_in_flight.is_empty() {
            state.downloading_since = Some(now);
        }
        for (height, hash) in picked {
            state.queue_in_flight.push_back(*hash);
            self.in_flight.insert(*hash, InFlight { peer, height: *height, role });
            self.reserved_bytes += estimate;
            if role == Role::Background {
                self.background_bytes += estimate;
            }
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

/// Whether the block at `height` lies too deep below a limited peer's
/// `best_height` to ask it for (Core's `FindNextBlocks`: skipped when the
/// peer's best block height minus the block's is at least 288 - 2). The
/// scheduler's best height for a peer (where its best header meets our
/// best chain) stands for Core's `pindexBestKnownBlock`: the two agree
/// whenever the peer's best header is on our best chain; on a side branch
/// it is the fork height, below the peer's tip, and the rule may let
/// through a block Core would skip (a limited peer refuses one deeper than
/// 288 + 2 by disconnecting, and its blocks go to others).
fn is_too_deep_for_limited_peer(best_height: u32, height: u32) -> bool {
    best_height.saturating_sub(height) > LIMITED_PEER_DEPTH_BLOCKS_MAX
}

/// One `getdata` for each peer with blocks picked, in the order peers were
/// served.
fn push_get_data(picks: Picks, actions: &mut Vec<Action>) {
    for (peer, picked) in picks {
        if picked.is_empty() {
            continue;
        }
        let inventory = picked
            .iter()
            .map(|(_, hash)| Inventory {
                inventory_type: InventoryType::WITNESS_BLOCK,
                hash: Hash256(hash.0),
            })
            .collect();
        actions.push(Action::Send { peer, message: NetworkMessage::GetData(inventory) });
    }
}
