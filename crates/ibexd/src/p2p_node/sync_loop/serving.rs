//! The loop's side of answering peers (`super::super::serve`): `getheaders`
//! at once, `getdata` and `getbspent` through each peer's queue of block
//! requests, served one per peer per pass while its send queue has room.

use ibex_p2p::messages::spent_coins::GetSpentCoins;
use ibex_p2p::net::DisconnectReason as NetReason;
use ibex_p2p::sync::{DisconnectReason as SyncReason, PeerId};
use ibex_p2p::{Inventory, LocatorRequest};

use super::{is_limited_peer, SyncLoop};
use crate::p2p_node::serve::{send_not_found, serve_headers, serve_next, Served};

impl SyncLoop {
    /// A `getheaders` from `peer`: answered at once (one query) when its
    /// send queue has room; otherwise it waits until it does (Core does not
    /// process a peer's messages while `fPauseSend`), and a later one takes
    /// its place, so a peer reading at a trickle cannot make the node
    /// build answers its queue refuses.
    pub(super) fn on_get_headers(&mut self, peer: PeerId, request: LocatorRequest) {
        let Some(state) = self.peers.get_mut(&peer) else { return };
        if self.network.send_queue_full(peer) {
            state.getheaders_waiting = Some(request);
            return;
        }
        let download_permitted = state.download_permitted;
        let minimum = self.params.minimum_chain_work;
        serve_headers(&self.network, &self.reader, peer, request, minimum, download_permitted);
    }

    /// A `getdata` from `peer`: its block requests are queued (no lookup,
    /// no read; served in this pass of the loop at the earliest), the rest
    /// answered with `notfound`.
    pub(super) fn queue_serving(&mut self, peer: PeerId, inventory: Vec<Inventory>) {
        let Some(state) = self.peers.get_mut(&peer) else { return };
        let not_found = state.getdata.push(inventory);
        send_not_found(&self.network, peer, not_found);
    }

    /// A `getbspent` from `peer` (BIP 455): queued with its block requests
    /// when we announced serving spent coins, else ignored, as a message
    /// of a feature we never offered.
    pub(super) fn queue_spent_coins(&mut self, peer: PeerId, request: GetSpentCoins) {
        if !self.serves_spent_coins {
            return;
        }
        if let Some(state) = self.peers.get_mut(&peer) {
            state.getdata.push_spent_coins(request);
        }
    }

    /// Serves at most one queued block request of each peer whose send
    /// queue has room (Core's `ProcessGetData` in each pass of its message
    /// handler); whether one was served, so the loop goes round at once. A
    /// peer told we serve only recent blocks that asks for an older one is
    /// disconnected (Core's `ProcessGetBlockData`).
    pub(super) fn serve_getdata_queues(&mut self) -> bool {
        let mut served = false;
        let mut below_threshold = Vec::new();
        let minimum = self.params.minimum_chain_work;
        let spacing_seconds = self.params.pow_target_spacing_seconds;
        for (peer, state) in self.peers.iter_mut() {
            if state.getheaders_waiting.is_some() && !self.network.send_queue_full(*peer) {
                if let Some(request) = state.getheaders_waiting.take() {
                    let permitted = state.download_permitted;
                    serve_headers(&self.network, &self.reader, *peer, request, minimum, permitted);
                }
            }
            let limited = is_limited_peer(state.our_services) && !state.no_ban;
            let queue = &mut state.getdata;
            match serve_next(&self.network, &self.reader, *peer, queue, spacing_seconds, limited) {
                Served::Nothing => {}
                Served::Request => served = true,
                Served::BelowLimitedThreshold => below_threshold.push(*peer),
            }
        }
        for peer in below_threshold {
            let reason = SyncReason::BlockRequestBelowLimitedThreshold;
            self.logger.log(&format!("{}, disconnecting {peer}", reason.core_log_message()));
            let _ = self.network.disconnect(peer, NetReason::Sync(reason));
        }
        served
    }
}
