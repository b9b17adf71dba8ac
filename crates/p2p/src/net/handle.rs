//! [`NetworkHandle`]: what the node (and RPC) can ask of the networking
//! layer. Cheap to clone; no method waits on a peer.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::messages::NetworkMessage;
use crate::net::bans::BanEntry;
use crate::net::error::NetworkError;
use crate::net::manager::add_outbound;
use crate::net::manual::{keep_connected, try_once, ManualConnection};
use crate::net::reason::{BanReason, DisconnectReason};
use crate::net::registry::Registry;
use crate::net::stats::{NetTotals, PeerInfo};
use crate::services::ServiceFlags;
use crate::sync::PeerId;

/// The node's side of the networking layer.
#[derive(Debug, Clone)]
pub struct NetworkHandle {
    registry: Arc<Registry>,
}

impl NetworkHandle {
    pub(crate) fn new(registry: Arc<Registry>) -> NetworkHandle {
        NetworkHandle { registry }
    }

    /// Queues `message` for peer `id` without waiting. Refused when the
    /// peer is unknown (or closed), when its send queue holds
    /// `send_queue_bytes_max` or more ([`NetworkError::SendQueueFull`]),
    /// or when the payload exceeds 4,000,000 bytes.
    pub fn send(&self, id: PeerId, message: NetworkMessage) -> Result<(), NetworkError> {
        if self.registry.is_shut_down() {
            return Err(NetworkError::Stopped);
        }
        let peer = self.registry.peer(id).ok_or(NetworkError::UnknownPeer { id })?;
        peer.enqueue(message)
    }

    /// Whether peer `id`'s send queue is at its limit (Core's
    /// `fPauseSend`): [`send`](Self::send) would refuse, so the node serves
    /// it nothing more, and reads nothing for it, until the queue drains.
    /// An unknown or closed peer reads as full: nothing is worth preparing
    /// for it. One lock taken, no allocation.
    pub fn send_queue_full(&self, id: PeerId) -> bool {
        self.registry.peer(id).is_none_or(|peer| peer.is_closed() || peer.send_queue_full_waking())
    }

    /// Waits until a send queue that [`send_queue_full`](Self::send_queue_full)
    /// found full has dropped below its limit (one wake-up is kept if
    /// none waits), so the node serves the next queued block as soon as
    /// the socket takes it instead of polling.
    pub async fn send_ready(&self) {
        self.registry.send_ready.notified().await;
    }

    /// Keeps a connection to `address` open from now on, as a `-connect`
    /// address (Core's `addnode add`); at most
    /// [`OUTBOUND_ADDRESSES_MAX`](crate::net::config::OUTBOUND_ADDRESSES_MAX)
    /// addresses in all.
    pub fn connect(&self, address: SocketAddr) -> Result<(), NetworkError> {
        add_outbound(&self.registry, address)
    }

    /// Keeps `address` connected as a manual connection until the returned
    /// guard is removed or dropped (Core's `addnode add`, then `remove`);
    /// it shares the [`OUTBOUND_ADDRESSES_MAX`](crate::net::config::OUTBOUND_ADDRESSES_MAX)
    /// slots with [`connect`](Self::connect).
    pub fn keep_connected(&self, address: SocketAddr) -> Result<ManualConnection, NetworkError> {
        keep_connected(&self.registry, address)
    }

    /// Tries one manual connection to `address` (Core's `addnode onetry`),
    /// v2 first when `v2` and the layer speaks v2; nothing when it is
    /// connected already. At most
    /// [`ONE_TRY_CONNECTIONS_MAX`](crate::net::manual::ONE_TRY_CONNECTIONS_MAX)
    /// at once.
    pub fn try_once(&self, address: SocketAddr, v2: bool) -> Result<(), NetworkError> {
        try_once(&self.registry, address, v2)
    }

    /// Whether the layer speaks BIP324 v2 (Core's `-v2transport`).
    pub fn v2_transport(&self) -> bool {
        self.registry.config.v2_transport
    }

    /// The services announced in our `version` from now on (Core's
    /// `localservices`): the configuration's
    /// ([`NetworkConfig::announced_services`](crate::net::NetworkConfig::announced_services))
    /// until [`set_local_services`](Self::set_local_services) changes them.
    pub fn local_services(&self) -> ServiceFlags {
        self.registry.local_services()
    }

    /// The services announced in every `version` sent from now on (Core's
    /// `AddLocalServices`/`RemoveLocalServices`: a node that cannot serve
    /// old blocks while an AssumeUTXO snapshot is not validated stops
    /// announcing `NODE_NETWORK`). Connections whose `version` went out
    /// keep what it announced, as Core's keep `m_our_services`. Taken as
    /// given: `NODE_P2P_V2` is the caller's to keep.
    pub fn set_local_services(&self, services: ServiceFlags) {
        self.registry.set_local_services(services);
    }

    /// The user agent announced in our `version` (Core's `subversion`).
    pub fn user_agent(&self) -> String {
        String::from_utf8_lossy(self.registry.config.user_agent.as_bytes()).into_owned()
    }

    /// The protocol version announced in our `version` (Core's
    /// `protocolversion`).
    pub fn protocol_version(&self) -> i32 {
        self.registry.config.protocol_version()
    }

    /// Whether we announce the BIP 434 feature `feature_id` to peers.
    pub fn announces_feature(&self, feature_id: &[u8]) -> bool {
        self.registry.config.features.iter().any(|feature| feature.feature_id == feature_id)
    }

    /// Closes the connection to `id` for `reason`. A
    /// [`DisconnectReason::Misbehaving`] peer from a non-local address that
    /// is not a manual connection is also discouraged for
    /// `discourage_duration` afterwards: refused inbound, not chosen
    /// outbound (Core spares manual connections entirely: the node decides
    /// whether to call this for one).
    pub fn disconnect(&self, id: PeerId, reason: DisconnectReason) -> Result<(), NetworkError> {
        let peer = self.registry.peer(id).ok_or(NetworkError::UnknownPeer { id })?;
        peer.request_close(reason);
        Ok(())
    }

    /// Bans `address` for `duration` and closes connections from it
    /// (Core's `setban add`). Inbound connections from it are refused
    /// until the ban ends; `-connect` addresses are still connected to, as
    /// Core's manual connections ignore bans.
    pub fn ban(&self, address: IpAddr, reason: BanReason, duration: Duration) {
        self.registry.ban(address, reason, duration);
    }

    /// Lifts a manual ban (Core's `setban remove`); whether there was
    /// one. A discouragement stays.
    pub fn unban(&self, address: IpAddr) -> bool {
        self.registry.unban(address)
    }

    /// Lifts every manual ban (Core's `clearbanned`); discouragements
    /// stay.
    pub fn clear_bans(&self) {
        self.registry.clear_bans();
    }

    /// The manual ban on `address` in force, if any (one look-up, for
    /// `setban`'s checks).
    pub fn manual_ban(&self, address: IpAddr) -> Option<BanEntry> {
        self.registry.manual_ban(address)
    }

    /// Whether `address` is discouraged: a peer from it misbehaved within
    /// `discourage_duration` (Core's `IsDiscouraged`; at most
    /// [`DISCOURAGED_ADDRESSES_MAX`](crate::net::bans::DISCOURAGED_ADDRESSES_MAX)
    /// addresses are remembered).
    pub fn is_discouraged(&self, address: IpAddr) -> bool {
        self.registry.is_discouraged(address)
    }

    /// The manual bans in force, soonest ending first (Core's
    /// `listbanned`: discouragements are not listed).
    pub fn banned(&self) -> Vec<BanEntry> {
        self.registry.bans()
    }

    /// `id` sent a block new to us: eviction protects the peers that did
    /// so most recently (Core's `m_last_block_time`).
    pub fn record_novel_block(&self, id: PeerId) {
        if let Some(peer) = self.registry.peer(id) {
            peer.record_novel_block(std::time::Instant::now());
        }
    }

    /// Open connections, handshake complete or not (Core's
    /// `getconnectioncount`).
    pub fn peer_count(&self) -> usize {
        self.registry.peer_count()
    }

    /// Every open connection (Core's `getpeerinfo`), by id.
    pub fn peers(&self) -> Vec<PeerInfo> {
        self.registry.peers()
    }

    /// Traffic totals (Core's `getnettotals`).
    pub fn totals(&self) -> NetTotals {
        self.registry.totals()
    }

    /// The height announced in `version` to new connections from now on.
    pub fn set_best_height(&self, height: i32) {
        self.registry.set_best_height(height);
    }

    /// The address the listener is bound to (with the port the system
    /// chose for port 0).
    pub fn listen_address(&self) -> Option<SocketAddr> {
        self.registry.listen_address
    }

    /// Stops listening and connecting and closes every connection.
    pub fn shutdown(&self) {
        self.registry.shut_down();
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.registry.is_shut_down()
    }
}
