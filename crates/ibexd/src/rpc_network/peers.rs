//! `getpeerinfo`: each connection as the networking layer records it,
//! joined with what the sync loop knows of the peer and the heights the
//! engine gives its best known block. ibex-rpc writes the answer; the
//! fields Ibex has no source for are its to explain.
//!
//! Ibex announces `relay` false, so peers send it no fee filter
//! (`minfeefilter` 0).

use std::collections::HashMap;

use ibex_chainstate::ReadError;
use ibex_p2p::sync::PeerId;
use ibex_primitives::{BlockHash, Height};
use ibex_rpc::backend::{BackendError, PeerReport, PeerState};

use super::NetworkRpc;
use crate::p2p_node::peer_sync_board::PeerSyncFacts;
use crate::rpc_backend::QUERY_TIMEOUT;

/// Heights Core gives a peer: its best known block's (`synced_headers`)
/// and the last block it has in common with our active chain
/// (`synced_blocks`); `None` when unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PeerHeights {
    best_known: Option<Height>,
    common: Option<Height>,
}

/// The heights of each hash in `best_known` and where each meets the
/// active chain, in one unsettled read (the block index and header chains).
fn heights_of(
    reader: &ibex_chainstate::ChainReader,
    best_known: &[(PeerId, BlockHash)],
) -> Result<HashMap<PeerId, PeerHeights>, ReadError> {
    let hashes: Vec<BlockHash> = best_known.iter().map(|(_, hash)| *hash).collect();
    let points = reader.unsettled(QUERY_TIMEOUT).fork_points(&hashes)?;
    let heights = best_known.iter().zip(points).filter_map(|((peer, _), point)| {
        let point = point?;
        let best_known = Some(Height::new(point.height));
        let common = point.fork_height.map(Height::new);
        Some((*peer, PeerHeights { best_known, common }))
    });
    Ok(heights.collect())
}

impl NetworkRpc {
    /// `getpeerinfo`, by peer id.
    pub fn peers(&self) -> Result<Vec<PeerReport>, BackendError> {
        let connections = self.handle.peers();
        let board = self.board.all();
        let best_known: Vec<(PeerId, BlockHash)> = board
            .iter()
            .filter_map(|(peer, facts)| facts.best_known_block.map(|hash| (*peer, hash)))
            .collect();
        let heights = if best_known.is_empty() {
            HashMap::new()
        } else {
            heights_of(&self.reader, &best_known).map_err(|error| match error {
                ReadError::Busy => BackendError::Busy,
                ReadError::TimedOut { timeout_ms } => BackendError::TimedOut { timeout_ms },
                _ => BackendError::Stopped,
            })?
        };
        Ok(connections
            .into_iter()
            .map(|connection| {
                let facts = board.get(&connection.id).cloned().unwrap_or_default();
                let peer_heights = heights.get(&connection.id).copied().unwrap_or_default();
                PeerReport { connection, state: peer_state(facts, peer_heights) }
            })
            .collect())
    }
}

/// What the sync loop and the engine know of one peer.
fn peer_state(facts: PeerSyncFacts, heights: PeerHeights) -> PeerState {
    PeerState {
        presync_height: facts.presync_height.map(Height::new),
        best_known_height: heights.best_known,
        common_height: heights.common,
        blocks_in_flight: facts.blocks_in_flight_heights.into_iter().map(Height::new).collect(),
        last_block_seconds: facts.last_block_seconds,
        fee_filter_satoshis_per_kvb: 0,
    }
}
