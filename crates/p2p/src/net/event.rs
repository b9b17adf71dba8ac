//! What the networking layer tells the node: [`NetworkEvent`]s through one
//! bounded queue ([`NetworkEvents`]).
//!
//! Two bounds hold: the queue holds at most `event_queue_events_max`
//! events, and each peer's messages in it at most
//! `receive_queue_bytes_max` bytes (Core's `-maxreceivebuffer`), each
//! message counting at least a 256th of that (so at most 256 of its
//! messages): a peer whose messages fill its share is not read until the
//! node takes them.
//! Waiting peers take turns for queue space (tokio's bounded channel
//! serves senders first come, first served), so one flooding peer cannot
//! crowd out the others.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{mpsc, watch, OwnedSemaphorePermit};

use crate::messages::NetworkMessage;
use crate::net::connection_type::ConnectionType;
use crate::net::reason::DisconnectReason;
use crate::net::reason::DroppedMessageWords;
use crate::net::stats::PeerVersion;
use crate::services::ServiceFlags;
use crate::sync::PeerId;
use crate::transport::{TransportError, TransportKind};

/// Something that happened on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NetworkEvent {
    /// A connection finished its handshake (`version` and `verack` both
    /// ways); the node may send to it from now on.
    PeerConnected {
        /// The connection's id.
        id: PeerId,
        /// The peer's address.
        address: SocketAddr,
        /// Whether the peer connected to us.
        inbound: bool,
        /// Why the connection exists.
        connection: ConnectionType,
        /// What the peer announced.
        version: PeerVersion,
        /// v1 or v2.
        transport: TransportKind,
        /// The services our `version` announced to it, what it may ask
        /// of us (Core's `Peer::m_our_services`): those of the moment it
        /// went out, as they change while the node runs.
        our_services: ServiceFlags,
    },
    /// A message from a connected peer (everything after the handshake but
    /// `ping`/`pong`, which the connection answers itself). A `block`'s
    /// payload is the bytes received, not re-encoded.
    Message {
        /// The connection's id.
        id: PeerId,
        /// The message.
        message: NetworkMessage,
        /// Its payload's length as received.
        payload_bytes: usize,
    },
    /// A connected peer is gone; no message from it follows, and sending to
    /// it fails.
    PeerDisconnected {
        /// The connection's id.
        id: PeerId,
        /// Why.
        reason: DisconnectReason,
    },
    /// A connection that never completed its handshake closed, or an
    /// inbound one was refused. For logs only: dropped when the queue is
    /// full (counted in [`crate::net::NetTotals::events_dropped`]).
    ConnectionClosed {
        /// The connection's id, if it got one (refused ones do not).
        id: Option<PeerId>,
        /// The peer's address.
        address: SocketAddr,
        /// Whether the peer connected to us.
        inbound: bool,
        /// Why.
        reason: DisconnectReason,
        /// The connection is retried at once with v1: a v2 attempt the
        /// peer closed before sending anything (Core's
        /// "retrying with v1 transport protocol").
        retry_with_v1: bool,
    },
    /// A message was dropped and the connection kept: a v1 checksum that
    /// does not match, a message type that is not one (Core drops such a
    /// message and reads on). For logs only: dropped when the queue is full.
    MessageDropped {
        /// The connection's id.
        id: PeerId,
        /// What was wrong with it.
        error: TransportError,
    },
}

/// Core's debug.log lines for the lifecycle events; a message reads as
/// Core's `received: %s (%u bytes) peer=%d`.
impl fmt::Display for NetworkEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetworkEvent::PeerConnected { id, connection, version, transport, .. } => write!(
                formatter,
                "New {} {} peer connected: version: {}, blocks={}, {id}",
                connection.name(),
                transport_name(*transport),
                version.protocol_version,
                version.start_height,
            ),
            NetworkEvent::Message { id, message, payload_bytes } => {
                write!(
                    formatter,
                    "received: {} ({payload_bytes} bytes) {id}",
                    message.command().name()
                )
            }
            NetworkEvent::PeerDisconnected { id, reason } => {
                write!(formatter, "{reason}, disconnecting {id}")
            }
            NetworkEvent::ConnectionClosed { id: None, reason, .. } => {
                write!(formatter, "{reason}")
            }
            NetworkEvent::MessageDropped { id, error } => {
                write!(formatter, "{}, {id}", DroppedMessageWords(error))
            }
            NetworkEvent::ConnectionClosed { id: Some(id), reason, retry_with_v1, .. } => {
                write!(formatter, "{reason}, disconnecting {id}")?;
                if *retry_with_v1 {
                    write!(formatter, "; retrying with v1 transport protocol for {id}")?;
                }
                Ok(())
            }
        }
    }
}

/// Core's `TransportTypeAsString`.
fn transport_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::V1 => "v1",
        TransportKind::V2 => "v2",
        TransportKind::Detecting => "detecting",
    }
}

/// An event in the queue with the share of its peer's receive budget it
/// holds; the share returns when the node takes the event.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub event: NetworkEvent,
    pub budget: Option<OwnedSemaphorePermit>,
}

impl Envelope {
    /// The event; its share of the receive budget returns to the peer.
    fn open(self) -> NetworkEvent {
        let Envelope { event, budget } = self;
        drop(budget);
        event
    }
}

/// The node's end of the event queue. Dropping it shuts the networking
/// layer down (nobody would hear of its peers any more).
#[derive(Debug)]
pub struct NetworkEvents {
    receiver: mpsc::Receiver<Envelope>,
    shutdown: Arc<watch::Sender<bool>>,
}

impl NetworkEvents {
    pub(crate) fn new(
        receiver: mpsc::Receiver<Envelope>,
        shutdown: Arc<watch::Sender<bool>>,
    ) -> NetworkEvents {
        NetworkEvents { receiver, shutdown }
    }

    /// The next event. `None` only once the layer has shut down, every
    /// task has ended and every [`crate::net::NetworkHandle`] is dropped;
    /// after [`crate::net::NetworkHandle::shutdown`] the last events (peers
    /// closing) still come.
    pub async fn recv(&mut self) -> Option<NetworkEvent> {
        self.receiver.recv().await.map(Envelope::open)
    }

    /// The next event if one is waiting.
    pub fn try_recv(&mut self) -> Option<NetworkEvent> {
        self.receiver.try_recv().ok().map(Envelope::open)
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.receiver.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.receiver.is_empty()
    }
}

impl Drop for NetworkEvents {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

/// The networking layer's end of the queue.
#[derive(Debug, Clone)]
pub(crate) struct EventSender {
    sender: mpsc::Sender<Envelope>,
    dropped: Arc<AtomicU64>,
}

impl EventSender {
    pub fn new(sender: mpsc::Sender<Envelope>) -> EventSender {
        EventSender { sender, dropped: Arc::new(AtomicU64::new(0)) }
    }

    /// Waits for room, then queues; `false` if the node's end is gone.
    pub async fn send(&self, event: NetworkEvent, budget: Option<OwnedSemaphorePermit>) -> bool {
        self.sender.send(Envelope { event, budget }).await.is_ok()
    }

    /// Queues if there is room, else drops and counts the event.
    pub fn send_or_drop(&self, event: NetworkEvent) {
        if self.sender.try_send(Envelope { event, budget: None }).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether the node's end is gone.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::address::ServiceAddress;
    use crate::messages::version::UserAgent;

    #[test]
    fn lifecycle_lines_read_as_core() {
        let version = PeerVersion {
            protocol_version: 70_016,
            services: ServiceFlags::NETWORK,
            user_agent: UserAgent::default(),
            start_height: 812,
            relay: false,
            timestamp_seconds: 0,
            time_offset_seconds: 0,
            address_local: ServiceAddress::default(),
            wtxid_relay: true,
            wants_address_v2: true,
            serves_spent_coins: false,
        };
        let address = SocketAddr::from(([127, 0, 0, 1], 18444));
        let connected = NetworkEvent::PeerConnected {
            id: PeerId(3),
            address,
            inbound: false,
            connection: ConnectionType::Manual,
            version,
            transport: TransportKind::V2,
            our_services: ServiceFlags::NETWORK,
        };
        assert_eq!(
            connected.to_string(),
            "New manual v2 peer connected: version: 70016, blocks=812, peer=3"
        );
        let message = NetworkEvent::Message {
            id: PeerId(3),
            message: NetworkMessage::Block(vec![0; 285]),
            payload_bytes: 285,
        };
        assert_eq!(message.to_string(), "received: block (285 bytes) peer=3");
        let gone =
            NetworkEvent::PeerDisconnected { id: PeerId(3), reason: DisconnectReason::PeerClosed };
        assert_eq!(gone.to_string(), "socket closed, disconnecting peer=3");
        let refused = NetworkEvent::ConnectionClosed {
            id: None,
            address,
            inbound: true,
            reason: DisconnectReason::RefusedBanned { address },
            retry_with_v1: false,
        };
        assert_eq!(refused.to_string(), "connection from 127.0.0.1:18444 dropped (banned)");
    }
}
