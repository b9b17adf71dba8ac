//! The background chainstate's window (AssumeUTXO; Core's
//! `TryDownloadingHistoricalBlocks`): once every peer took what it could
//! of the active window, the room it has left goes to the blocks a
//! background chainstate needs below the snapshot's base, lowest first.
//!
//! What differs from the active window, and why:
//! - the window is the background's tip + 1 to at most
//!   [`super::BLOCK_DOWNLOAD_WINDOW_BLOCKS`] above it, never past the base:
//!   the base's ancestors are the only blocks the background connects;
//! - a limited peer (`NODE_NETWORK_LIMITED` alone) is never asked: it
//!   keeps only the last 288 blocks, and these are far older (Core);
//! - no staller is marked: Core's historical download never marks one,
//!   and the active chain, which follows the network's tip, must not lose
//!   peers to history;
//! - while the active window still wants blocks, the background's (but
//!   its next) take at most half of the byte bound, so history never
//!   starves the tip (Core has no byte bound, only the order of requests).

use std::time::Instant;

use ibex_primitives::BlockHash;

use super::schedule::{Picks, Priority};
use super::{BlockDownload, HeaderChain, Role};
use crate::sync::action::PeerId;

/// The blocks AssumeUTXO's background chainstate still needs: those above
/// its tip up to the snapshot's base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackgroundRange {
    /// Height of the background chainstate's tip.
    pub tip_height: u32,
    /// Height of the snapshot's base block, the last it needs.
    pub base_height: u32,
}

impl BackgroundRange {
    /// Whether any block is still needed (the tip is below the base).
    pub fn needs_blocks(&self) -> bool {
        self.tip_height < self.base_height
    }

    /// Whether the block at `height` is still needed.
    pub fn is_needed(&self, height: u32) -> bool {
        height > self.tip_height && height <= self.base_height
    }

    /// The highest height requested with a window of `window_blocks`:
    /// that far above the tip, never past the base.
    pub fn window_end(&self, window_blocks: u32) -> u32 {
        self.tip_height.saturating_add(window_blocks).min(self.base_height)
    }
}

/// What the walk over the background window found.
struct BackgroundScan {
    range: BackgroundRange,
    /// Blocks to fetch (neither held nor in flight), by height.
    wanted: Vec<(u32, BlockHash)>,
    /// Whether each entry of `wanted` was taken this poll.
    taken: Vec<bool>,
}

impl BlockDownload {
    /// Requests background blocks from every peer with room left, in the
    /// order `picks` served them for the active window, adding them to
    /// each peer's picks. `active_waiting`: the active window still wants
    /// blocks this poll could not request.
    pub(super) fn request_background(
        &mut self,
        chain: &impl HeaderChain,
        now: Instant,
        active_waiting: bool,
        picks: &mut Picks,
    ) {
        let Some(mut scan) = self.scan_background(chain) else { return };
        for (peer, picked) in picks.iter_mut() {
            let background = self.pick_background(*peer, &mut scan, active_waiting);
            if !background.is_empty() {
                self.record_requests(*peer, &background, now, Role::Background);
                picked.extend(background);
            }
        }
    }

    /// One walk over the background window, up to the highest block a
    /// peer that may be asked can serve; `None` when there is nothing to
    /// walk.
    fn scan_background(&self, chain: &impl HeaderChain) -> Option<BackgroundScan> {
        let range = self.background?;
        let best_served = self
            .peers
            .values()
            .filter(|state| !state.limited)
            .filter_map(|state| state.best_height)
            .max()?;
        let scan_end = range.window_end(self.config.window_blocks).min(best_served);
        let mut wanted = Vec::new();
        let mut height = range.tip_height;
        while height < scan_end {
            height += 1;
            let Some((hash, have_data)) = chain.background_block(height) else { break };
            let tracked = self.received.contains_key(&hash) || self.in_flight.contains_key(&hash);
            if !have_data && !tracked {
                wanted.push((height, hash));
            }
        }
        let taken = vec![false; wanted.len()];
        Some(BackgroundScan { range, wanted, taken })
    }

    /// The lowest background blocks `peer` can serve and has room for,
    /// within the byte bound.
    fn pick_background(
        &self,
        peer: PeerId,
        scan: &mut BackgroundScan,
        active_waiting: bool,
    ) -> Vec<(u32, BlockHash)> {
        let Some(state) = self.peers.get(&peer) else { return Vec::new() };
        let Some(best_height) = state.best_height.filter(|_| !state.limited) else {
            return Vec::new();
        };
        let room = self.config.in_flight_per_peer_max.saturating_sub(state.queue_in_flight.len());
        let mut picked: Vec<(u32, BlockHash)> = Vec::new();
        for (index, (height, hash)) in scan.wanted.iter().enumerate() {
            if *height > best_height || picked.len() >= room {
                break;
            }
            if scan.taken.get(index).copied().unwrap_or(true) {
                continue;
            }
            let priority = if *height == scan.range.tip_height.saturating_add(1) {
                Priority::NextBackground
            } else {
                Priority::Background
            };
            if !self.has_room_for_another_block(picked.len(), priority)
                || (active_waiting && !self.within_background_share(picked.len(), priority))
            {
                break;
            }
            if let Some(taken) = scan.taken.get_mut(index) {
                *taken = true;
            }
            picked.push((*height, *hash));
        }
        picked
    }

    /// Whether one more background block (after `pending`) stays within
    /// the background's share of the byte bound while the active window
    /// waits. The background's next block is exempt: the background's
    /// received blocks can only be released through it.
    fn within_background_share(&self, pending: usize, priority: Priority) -> bool {
        if priority == Priority::NextBackground {
            return true;
        }
        let reserved_after = (pending as u64 + 1).saturating_mul(self.config.block_bytes_estimate);
        self.background_bytes.saturating_add(reserved_after) <= self.config.background_bytes_max()
    }
}
