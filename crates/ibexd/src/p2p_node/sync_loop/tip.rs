//! Following the engine's tip: the download window read again when the
//! tip or the best header moves, the periodic tick (gauges, peers'
//! heights, tip announcements, the state machines' timers).

use std::time::Instant;

use ibex_p2p::messages::inventory::{Inventory, InventoryType};
use ibex_p2p::sync::block_download::BackgroundRange;
use ibex_p2p::sync::{HeaderIndex, PeerId};
use ibex_p2p::NetworkMessage;
use ibex_primitives::{BlockHash, Hash256};

use super::{SyncLoop, ANNOUNCED_HEADERS_MAX, WINDOW_REREAD_BLOCKS};
use crate::p2p_node::engine_view::{
    announcement_headers, background_range, common_height_with_best, tip_is_stale, unix_seconds,
    BestChainWindow,
};

impl SyncLoop {
    /// Follows the engine's snapshot (each turn of the loop: a lock read).
    /// The scheduler learns of tip moves at once; the window is read again
    /// (a query) when the best header changed, the tip left the part of
    /// the window read last, or the background chainstate's tip did (or it
    /// came or went), and otherwise at the next tick. The services
    /// announced follow the AssumeUTXO state it publishes.
    pub(super) fn follow_tip(&mut self) {
        let snapshot = self.reader.snapshot();
        if snapshot.sequence == self.seen_sequence {
            return;
        }
        self.seen_sequence = snapshot.sequence;
        self.follow_snapshot_services(snapshot.assumeutxo.as_ref());
        self.tip = snapshot.tip.as_ref().map(|tip| (tip.hash, tip.height));
        // While a SwiftSync plan waits, the engine connects nothing: the
        // window starts where its stored blocks end, so the download goes
        // on to the plan's terminal height and beyond.
        let tip_height = self
            .tip
            .map_or(0, |(_, height)| height)
            .max(snapshot.swiftsync_stored_height.unwrap_or(0));
        let old_height = self.download.tip_height();
        if tip_height != old_height {
            self.download.on_tip_moved(tip_height, tip_height.saturating_sub(old_height));
            self.network.set_best_height(i32::try_from(tip_height).unwrap_or(i32::MAX));
            self.download_due = true;
        }
        let best_changed = snapshot.best_header != self.window_best;
        let tip_left_window = tip_height < self.window_tip
            || tip_height >= self.window_tip.saturating_add(WINDOW_REREAD_BLOCKS);
        let background = snapshot.assumeutxo.as_ref().and_then(background_range);
        let background_left_window = background_left_window(self.window.background(), background);
        if best_changed || tip_left_window || background_left_window {
            self.read_window(tip_height, snapshot.best_header);
            self.peer_heights_stale |= best_changed;
        } else {
            self.window_stale = true;
        }
    }

    pub(super) fn read_window(&mut self, tip_height: u32, best: Option<(BlockHash, u32)>) {
        self.window = BestChainWindow::read(&self.reader, tip_height).unwrap_or_default();
        self.window_tip = tip_height;
        self.window_best = best;
        self.window_stale = false;
        self.download_due = true;
    }

    /// Asks for blocks when something changed that may free a request.
    pub(super) fn poll_download_if_due(&mut self) {
        if std::mem::take(&mut self.download_due) {
            let actions = self.download.poll(Instant::now(), &self.window);
            self.carry_out(actions);
        }
    }

    /// Time passed: the window read again if the tip moved, peers' heights
    /// refreshed, new tips announced, the state machines polled.
    pub(super) fn tick(&mut self) {
        self.update_gauges();
        self.publish_peer_sync();
        self.follow_initial_download();
        if self.window_stale {
            self.read_window(self.download.tip_height(), self.window_best);
        }
        if self.peer_heights_stale {
            self.peer_heights_stale = false;
            self.refresh_peer_heights();
        }
        if let Some((hash, height)) = self.tip {
            if height > self.announced_height {
                self.announce_tip(hash, self.announced_height);
            }
            self.announced_height = height;
        }
        self.punish_senders_of_invalid_blocks();
        self.fetch_spent_coins();
        let now = Instant::now();
        let actions = self.headers_sync.poll(now, unix_seconds(), &self.index);
        self.carry_out(actions);
        // A poll's notes (a `noban` peer's headers timeout) are logged now.
        for note in self.headers_sync.take_notes() {
            self.logger.log(&note.to_string());
        }
        let actions = self.download.poll(now, &self.window);
        self.carry_out(actions);
    }

    /// The best header's height, the peers and the bytes received, for the
    /// progress display.
    pub(super) fn update_gauges(&self) {
        let Some(gauges) = &self.gauges else { return };
        let header_height = self.window_best.map_or(0, |(_, height)| height);
        gauges.set(header_height, self.peers.len(), self.network.totals().bytes_received);
    }

    /// Tells peers of a new tip (Core's block announcements, BIP130):
    /// `headers` to those that asked for them when few blocks are new, an
    /// `inv` of the tip otherwise. Nothing in initial block download.
    pub(super) fn announce_tip(&mut self, tip: BlockHash, old_height: u32) {
        let snapshot = self.reader.snapshot();
        if snapshot.tip.as_ref().is_none_or(|tip| tip_is_stale(tip, unix_seconds())) {
            return;
        }
        let Some(headers) = announcement_headers(&self.reader, old_height, ANNOUNCED_HEADERS_MAX)
        else {
            return;
        };
        let inventory = Inventory { inventory_type: InventoryType::BLOCK, hash: Hash256(tip.0) };
        for (peer, state) in &self.peers {
            let message = if state.wants_headers && !headers.is_empty() {
                NetworkMessage::Headers(headers.clone())
            } else {
                NetworkMessage::Inventory(vec![inventory])
            };
            let _ = self.network.send(*peer, message);
        }
    }

    /// Where each peer's best known header meets our best header chain,
    /// for the scheduler: nothing for a limited peer during initial block
    /// download ([`download_height`]).
    pub(super) fn refresh_peer_heights(&mut self) {
        let peers: Vec<(PeerId, bool)> =
            self.peers.iter().map(|(peer, state)| (*peer, state.limited)).collect();
        for (peer, limited) in peers {
            let height = self
                .headers_sync
                .best_known_block(peer)
                .and_then(|best| common_height_with_best(&self.reader, best));
            let height = download_height(height, limited, self.initial_download);
            self.download.set_peer_best_height(peer, height);
        }
    }

    /// Leaves initial block download for good once the engine says the
    /// tip is out of it (Core's latch in `IsInitialBlockDownload`): a tip
    /// older than a day is in it without asking (a snapshot read); a
    /// recent one takes one query a tick until it is out. Limited peers
    /// may then be asked for blocks: every peer's height is given again.
    fn follow_initial_download(&mut self) {
        if !self.initial_download {
            return;
        }
        let snapshot = self.reader.snapshot();
        if snapshot.tip.as_ref().is_none_or(|tip| tip_is_stale(tip, unix_seconds())) {
            return;
        }
        if !self.index.is_initial_block_download() {
            self.initial_download = false;
            self.peer_heights_stale = true;
        }
    }
}

/// The height the scheduler may ask `height`'s peer for blocks up to:
/// none for a limited peer (`NODE_NETWORK_LIMITED` without
/// `NODE_NETWORK`) during initial block download, as Core's
/// `SendMessages` asks such a peer for no block until the node is out of
/// it (the scheduler, which does not know it, skips only the blocks too
/// deep for the peer).
fn download_height(height: Option<u32>, limited: bool, initial_download: bool) -> Option<u32> {
    if limited && initial_download {
        return None;
    }
    height
}

/// Whether the background chainstate's window must be read again now: its
/// tip (`now`) left the part read last (`read`), or it came or went
/// (a snapshot loaded, validated).
fn background_left_window(read: Option<BackgroundRange>, now: Option<BackgroundRange>) -> bool {
    match (read, now) {
        (Some(read), Some(now)) => {
            now.base_height != read.base_height
                || now.tip_height < read.tip_height
                || now.tip_height >= read.tip_height.saturating_add(WINDOW_REREAD_BLOCKS)
        }
        (read, now) => read.is_some() != now.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limited_peer_is_asked_for_no_block_during_initial_download() {
        assert_eq!(download_height(Some(500), true, true), None);
        assert_eq!(download_height(Some(500), true, false), Some(500));
        assert_eq!(download_height(Some(500), false, true), Some(500));
        assert_eq!(download_height(None, false, false), None);
    }

    #[test]
    fn the_background_window_is_read_again_when_its_tip_leaves_it() {
        let range = |tip_height| Some(BackgroundRange { tip_height, base_height: 5_000 });
        assert!(!background_left_window(None, None));
        assert!(background_left_window(None, range(0)), "a snapshot loaded");
        assert!(background_left_window(range(10), None), "validated");
        assert!(!background_left_window(range(10), range(10 + WINDOW_REREAD_BLOCKS - 1)));
        assert!(background_left_window(range(10), range(10 + WINDOW_REREAD_BLOCKS)));
    }
}
