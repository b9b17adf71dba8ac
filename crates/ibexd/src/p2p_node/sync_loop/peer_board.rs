//! Publishing what the loop knows of each peer on the
//! [`PeerSyncBoard`](crate::p2p_node::peer_sync_board::PeerSyncBoard) for
//! `getpeerinfo`: a copy of a few fields per peer, once a tick.

use ibex_p2p::sync::PeerId;

use super::super::engine_view::unix_seconds;
use super::super::peer_sync_board::PeerSyncFacts;
use super::SyncLoop;

impl SyncLoop {
    /// Writes each tracked peer's best known block, presync height and
    /// blocks in flight on the board (when the node has one).
    pub(super) fn publish_peer_sync(&self) {
        let Some(board) = &self.peer_board else { return };
        let facts = self.peers.keys().map(|&peer| {
            let facts = PeerSyncFacts {
                best_known_block: self.headers_sync.best_known_block(peer),
                presync_height: self.headers_sync.presync(peer).map(|sync| sync.presync_height()),
                blocks_in_flight_heights: self.download.in_flight_heights(peer),
                last_block_seconds: 0,
            };
            (peer, facts)
        });
        board.publish(facts);
    }

    /// A block `peer` sent was new to us (Core's `m_last_block_time`).
    pub(super) fn record_new_block(&self, peer: Option<PeerId>) {
        if let Some(peer) = peer {
            // Eviction protects the peers that sent novel blocks last.
            self.network.record_novel_block(peer);
        }
        if let (Some(board), Some(peer)) = (&self.peer_board, peer) {
            board.record_new_block(peer, unix_seconds());
        }
    }
}
