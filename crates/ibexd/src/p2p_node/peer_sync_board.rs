//! [`PeerSyncBoard`]: what the sync loop knows of each peer, published for
//! the RPC server's `getpeerinfo` (Core's `GetNodeStateStats`): the peer's
//! best known block, its low-work headers presync height, the heights of
//! the blocks asked of it, and when it last sent a new block.
//!
//! The sync loop writes the board once a tick (every 100 ms) and when a
//! peer's block is accepted; readers copy it under the same lock. Neither
//! side ever waits for the other's work: the lock is held for a map copy
//! (about 100 bytes per peer), never across a query of the engine.
//!
//! Bounds: at most [`PEER_SYNC_ENTRIES_MAX`] peers, each with at most
//! [`BLOCKS_IN_FLIGHT_PER_PEER_MAX`] heights in flight: ~1,024 x ~150
//! bytes = ~150 KB at worst.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use ibex_p2p::sync::block_download::BLOCKS_IN_FLIGHT_PER_PEER_MAX;
use ibex_p2p::sync::PeerId;
use ibex_primitives::BlockHash;

/// The most peers the board holds (more than the node's connections:
/// 125 by default, 256 manual addresses and 8 one-try connections).
pub const PEER_SYNC_ENTRIES_MAX: usize = 1024;

/// What the sync loop knows of one peer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerSyncFacts {
    /// The best block its headers announced that we have indexed (Core's
    /// `pindexBestKnownBlock`).
    pub best_known_block: Option<BlockHash>,
    /// Its low-work headers presync height, while one runs.
    pub presync_height: Option<u32>,
    /// Heights of the blocks asked of it, in request order.
    pub blocks_in_flight_heights: Vec<u32>,
    /// When it last sent a block new to us, seconds since the epoch (0:
    /// never; Core's `m_last_block_time`).
    pub last_block_seconds: i64,
}

/// The published facts, by peer (see the module docs).
#[derive(Debug, Default)]
pub struct PeerSyncBoard {
    peers: Mutex<BTreeMap<PeerId, PeerSyncFacts>>,
}

impl PeerSyncBoard {
    /// An empty board.
    pub fn new() -> PeerSyncBoard {
        PeerSyncBoard::default()
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<PeerId, PeerSyncFacts>> {
        self.peers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Replaces the board with `peers` (the peers the loop tracks now):
    /// peers gone are dropped, each peer keeps its last block time. At
    /// most [`PEER_SYNC_ENTRIES_MAX`] are kept, lowest ids first.
    pub fn publish(&self, peers: impl IntoIterator<Item = (PeerId, PeerSyncFacts)>) {
        let mut board = self.lock();
        let mut next = BTreeMap::new();
        for (peer, mut facts) in peers.into_iter().take(PEER_SYNC_ENTRIES_MAX) {
            facts.blocks_in_flight_heights.truncate(BLOCKS_IN_FLIGHT_PER_PEER_MAX);
            facts.last_block_seconds = board.get(&peer).map_or(0, |old| old.last_block_seconds);
            next.insert(peer, facts);
        }
        *board = next;
        assert!(board.len() <= PEER_SYNC_ENTRIES_MAX);
    }

    /// `peer` sent a block new to us at `now_seconds`.
    pub fn record_new_block(&self, peer: PeerId, now_seconds: i64) {
        let mut board = self.lock();
        if let Some(facts) = board.get_mut(&peer) {
            facts.last_block_seconds = now_seconds;
        } else if board.len() < PEER_SYNC_ENTRIES_MAX {
            board.insert(
                peer,
                PeerSyncFacts { last_block_seconds: now_seconds, ..PeerSyncFacts::default() },
            );
        }
    }

    /// What is known of `peer`, if the loop tracks it.
    pub fn facts(&self, peer: PeerId) -> Option<PeerSyncFacts> {
        self.lock().get(&peer).cloned()
    }

    /// Every peer's facts, by id.
    pub fn all(&self) -> BTreeMap<PeerId, PeerSyncFacts> {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publishing_replaces_peers_and_keeps_block_times() {
        let board = PeerSyncBoard::new();
        board.record_new_block(PeerId(1), 1_000);
        let in_flight = (0..40).collect::<Vec<u32>>();
        board.publish([
            (PeerId(1), PeerSyncFacts { presync_height: Some(7), ..PeerSyncFacts::default() }),
            (
                PeerId(2),
                PeerSyncFacts { blocks_in_flight_heights: in_flight, ..PeerSyncFacts::default() },
            ),
        ]);
        let first = board.facts(PeerId(1)).unwrap_or_default();
        assert_eq!((first.presync_height, first.last_block_seconds), (Some(7), 1_000));
        let second = board.facts(PeerId(2)).unwrap_or_default();
        assert_eq!(second.blocks_in_flight_heights.len(), BLOCKS_IN_FLIGHT_PER_PEER_MAX);
        board.publish([(PeerId(2), PeerSyncFacts::default())]);
        assert!(board.facts(PeerId(1)).is_none(), "a peer gone is dropped");
        assert_eq!(board.all().len(), 1);
    }

    #[test]
    fn the_board_is_bounded() {
        let board = PeerSyncBoard::new();
        let many =
            (0..PEER_SYNC_ENTRIES_MAX as u64 + 10).map(|id| (PeerId(id), PeerSyncFacts::default()));
        board.publish(many);
        assert_eq!(board.all().len(), PEER_SYNC_ENTRIES_MAX);
        board.record_new_block(PeerId(u64::MAX), 5);
        assert_eq!(board.all().len(), PEER_SYNC_ENTRIES_MAX);
    }
}
