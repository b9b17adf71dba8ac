//! What a connection's task shares with the handle: the outbound queue, a
//! close request, and the counters `getpeerinfo` reads. Locks are held for
//! a few field updates, never across an `await`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use crate::addrman::PeerAddress;
use crate::framing::MESSAGE_PAYLOAD_BYTES_MAX;
use crate::messages::NetworkMessage;
use crate::net::connection_type::ConnectionType;
use crate::net::error::NetworkError;
use crate::net::eviction::EvictionCandidate;
use crate::net::permissions::PeerPermissions;
use crate::net::queue::{payload_bytes, OutboundQueue};
use crate::net::reason::DisconnectReason;
use crate::net::stats::{PeerInfo, PeerVersion};
use crate::services::ServiceFlags;
use crate::sync::PeerId;
use crate::transport::TransportKind;
use crate::FRAME_HEADER_BYTES;

/// Locks a mutex; a poisoned one (a panic elsewhere while holding it) is
/// used as it is: every value behind these locks stays consistent field by
/// field.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Fields set at connection time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeerIdentity {
    pub id: PeerId,
    pub address: SocketAddr,
    pub local_address: Option<SocketAddr>,
    pub inbound: bool,
    /// Why the connection exists.
    pub connection: ConnectionType,
    /// The nonce in our `version` to this peer.
    pub nonce: u64,
    /// The secret seed of our ping nonces to this peer.
    pub ping_nonce_seed: u64,
    pub connected_at: SystemTime,
    pub connected_instant: Instant,
    /// Its network group under the layer's secret (Core's
    /// `nKeyedNetGroup`), for eviction.
    pub keyed_group: u64,
    /// From a discouraged address: evicted first (Core's `m_prefer_evict`).
    pub prefer_evict: bool,
    /// What `-whitelist` grants it (Core's `m_permission_flags`).
    pub permissions: PeerPermissions,
}

/// What changes rarely: handshake results and pings.
#[derive(Debug)]
struct PeerDetails {
    version: Option<PeerVersion>,
    transport: TransportKind,
    session_id: Option<[u8; 32]>,
    last_ping: Option<Duration>,
    min_ping: Option<Duration>,
    ping_started: Option<Instant>,
    /// When it last sent a block new to us (Core's `m_last_block_time`).
    last_block: Option<Instant>,
}

/// One connection's shared state.
#[derive(Debug)]
pub(crate) struct PeerShared {
    pub identity: PeerIdentity,
    send_queue_bytes_max: usize,
    queue: Mutex<OutboundQueue>,
    /// Bytes encoded by the task and not yet written to the socket.
    unsent_bytes: AtomicUsize,
    /// The node found the send side full and waits to be woken when it
    /// drops below its limit.
    ready_wake_armed: AtomicBool,
    /// Wakes the task when the queue gains a message.
    pub queue_wake: Notify,
    close_request: Mutex<Option<DisconnectReason>>,
    /// Wakes the task when a close is requested.
    pub close_wake: Notify,
    closed: AtomicBool,
    handshake_complete: AtomicBool,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    last_send_micros: AtomicU64,
    last_receive_micros: AtomicU64,
    details: Mutex<PeerDetails>,
}

impl PeerShared {
    pub fn new(
        identity: PeerIdentity,
        send_queue_bytes_max: usize,
        transport: TransportKind,
    ) -> PeerShared {
        PeerShared {
            identity,
            send_queue_bytes_max,
            queue: Mutex::new(OutboundQueue::default()),
            unsent_bytes: AtomicUsize::new(0),
            ready_wake_armed: AtomicBool::new(false),
            queue_wake: Notify::new(),
            close_request: Mutex::new(None),
            close_wake: Notify::new(),
            closed: AtomicBool::new(false),
            handshake_complete: AtomicBool::new(false),
            bytes_sent: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
            last_send_micros: AtomicU64::new(0),
            last_receive_micros: AtomicU64::new(0),
            details: Mutex::new(PeerDetails {
                version: None,
                transport,
                session_id: None,
                last_ping: None,
                min_ping: None,
                ping_started: None,
                last_block: None,
            }),
        }
    }

    /// Queues a message from the node, unless the queue is at its limit
    /// (accepted while below it, so it holds at most the limit plus one
    /// message, as Core's send buffer).
    pub fn enqueue(&self, message: NetworkMessage) -> Result<(), NetworkError> {
        let id = self.identity.id;
        let payload = payload_bytes(&message);
        if payload > MESSAGE_PAYLOAD_BYTES_MAX {
            return Err(NetworkError::MessageTooLarge {
                command: message.command(),
                payload_bytes: payload,
            });
        }
        let mut queue = lock(&self.queue);
        if self.closed.load(Ordering::Acquire) {
            return Err(NetworkError::UnknownPeer { id });
        }
        let queued_bytes = queue.queued_bytes() + self.unsent_bytes.load(Ordering::Acquire);
        if queued_bytes >= self.send_queue_bytes_max {
            return Err(NetworkError::SendQueueFull {
                id,
                queued_bytes,
                limit_bytes: self.send_queue_bytes_max,
            });
        }
        queue.push(message, payload + FRAME_HEADER_BYTES);
        drop(queue);
        self.queue_wake.notify_one();
        Ok(())
    }

    /// The oldest queued message. Its bytes count as unsent from the
    /// moment it leaves the queue (under the queue's lock), so the send
    /// side's size never reads low between the pop and the encoding: the
    /// node looks at it before reading a block to serve, and a dip would
    /// let it read a block the queue then refuses.
    pub fn pop_message(&self) -> Option<NetworkMessage> {
        let mut queue = lock(&self.queue);
        let (message, bytes) = queue.pop()?;
        self.unsent_bytes.fetch_add(bytes, Ordering::AcqRel);
        Some(message)
    }

    /// Records the bytes encoded and not yet written; wakes the node
    /// through `send_ready` when it waits for this queue and it is now
    /// below its limit.
    pub fn set_unsent_bytes(&self, bytes: usize, send_ready: &Notify) {
        self.unsent_bytes.store(bytes, Ordering::SeqCst);
        if self.ready_wake_armed.load(Ordering::SeqCst)
            && !self.send_queue_full()
            && self.ready_wake_armed.swap(false, Ordering::SeqCst)
        {
            send_ready.notify_one();
        }
    }

    /// [`PeerShared::send_queue_full`] for the node: a full queue arms a
    /// wake-up for when it drains. Armed before the bytes are read, so a
    /// drain between the two cannot be missed (both sides use sequentially
    /// consistent order: either the task sees the flag, or the node sees
    /// the drained size).
    pub fn send_queue_full_waking(&self) -> bool {
        self.ready_wake_armed.store(true, Ordering::SeqCst);
        let full = self.send_queue_full();
        if !full {
            self.ready_wake_armed.store(false, Ordering::SeqCst);
        }
        full
    }

    /// Queued and unsent bytes together (Core's `nSendSize`).
    pub fn send_queue_bytes(&self) -> usize {
        lock(&self.queue).queued_bytes() + self.unsent_bytes.load(Ordering::SeqCst)
    }

    /// Whether the send side is at its limit: the task stops reading the
    /// peer until it drains (Core's `fPauseSend`, which stops processing
    /// that peer's messages).
    pub fn send_queue_full(&self) -> bool {
        self.send_queue_bytes() >= self.send_queue_bytes_max
    }

    /// Whether the task ended (messages are refused).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Asks the task to close; the first reason given wins.
    pub fn request_close(&self, reason: DisconnectReason) {
        let mut request = lock(&self.close_request);
        if request.is_none() {
            *request = Some(reason);
        }
        drop(request);
        self.close_wake.notify_one();
    }

    /// The close request, if any.
    pub fn close_request(&self) -> Option<DisconnectReason> {
        lock(&self.close_request).clone()
    }

    /// The task is ending: refuse further messages and free the queue.
    pub fn mark_closed(&self) {
        let mut queue = lock(&self.queue);
        self.closed.store(true, Ordering::Release);
        queue.clear();
    }

    pub fn is_handshake_complete(&self) -> bool {
        self.handshake_complete.load(Ordering::Acquire)
    }

    pub fn record_sent(&self, bytes: usize, now: SystemTime) {
        self.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
        self.last_send_micros.store(unix_micros(now), Ordering::Relaxed);
    }

    pub fn record_received(&self, bytes: usize, now: SystemTime) {
        self.bytes_received.fetch_add(bytes as u64, Ordering::Relaxed);
        self.last_receive_micros.store(unix_micros(now), Ordering::Relaxed);
    }

    pub fn set_version(&self, version: PeerVersion) {
        lock(&self.details).version = Some(version);
    }

    pub fn set_handshake_complete(&self, transport: TransportKind, session_id: Option<[u8; 32]>) {
        let mut details = lock(&self.details);
        details.transport = transport;
        details.session_id = session_id;
        drop(details);
        self.handshake_complete.store(true, Ordering::Release);
    }

    pub fn set_transport(&self, transport: TransportKind) {
        lock(&self.details).transport = transport;
    }

    pub fn ping_sent(&self, at: Instant) {
        lock(&self.details).ping_started = Some(at);
    }

    /// A ping finished: with its round trip if it was answered, `None` if
    /// it was cancelled (Core: "Nonce zero", "Short payload").
    pub fn ping_finished(&self, round_trip: Option<Duration>) {
        let mut details = lock(&self.details);
        details.ping_started = None;
        if let Some(round_trip) = round_trip {
            details.last_ping = Some(round_trip);
            details.min_ping = Some(details.min_ping.map_or(round_trip, |min| min.min(round_trip)));
        }
    }

    /// The peer sent a block new to us.
    pub fn record_novel_block(&self, at: Instant) {
        lock(&self.details).last_block = Some(at);
    }

    /// What eviction weighs of this connection; `None` once it is closing
    /// (Core skips peers marked for disconnection).
    /// A `noban` peer is never one (Core's `ProtectNoBanConnections`, run
    /// before every other protection).
    pub fn eviction_candidate(&self) -> Option<EvictionCandidate> {
        if self.closed.load(Ordering::Acquire) || lock(&self.close_request).is_some() {
            return None;
        }
        if self.identity.permissions.contains(PeerPermissions::NO_BAN) {
            return None;
        }
        let details = lock(&self.details);
        let version = details.version.as_ref();
        let services = version.map_or(ServiceFlags::NONE, |version| version.services);
        let address = PeerAddress::from_socket_address(self.identity.address);
        Some(EvictionCandidate {
            id: self.identity.id,
            connected: self.identity.connected_instant,
            min_ping: details.min_ping,
            last_block: details.last_block,
            // Core's `HasAllDesirableServiceFlags`: witness and the chain,
            // whole or (once synced) the recent part.
            relevant_services: services.contains(ServiceFlags::WITNESS)
                && (services.contains(ServiceFlags::NETWORK)
                    || services.contains(ServiceFlags::NETWORK_LIMITED)),
            relays_transactions: version.is_some_and(|version| version.relay),
            keyed_group: self.identity.keyed_group,
            prefer_evict: self.identity.prefer_evict,
            is_local: crate::net::address::is_local(self.identity.address.ip()),
            network: address.network(),
        })
    }

    /// A `getpeerinfo` entry.
    pub fn info(&self, now: Instant) -> PeerInfo {
        let details = lock(&self.details);
        PeerInfo {
            id: self.identity.id,
            address: self.identity.address,
            local_address: self.identity.local_address,
            inbound: self.identity.inbound,
            connection: self.identity.connection,
            transport: details.transport,
            session_id: details.session_id,
            version: details.version.clone(),
            handshake_complete: self.is_handshake_complete(),
            connected_at: self.identity.connected_at,
            last_send: from_unix_micros(self.last_send_micros.load(Ordering::Relaxed)),
            last_receive: from_unix_micros(self.last_receive_micros.load(Ordering::Relaxed)),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            last_ping: details.last_ping,
            min_ping: details.min_ping,
            ping_wait: details.ping_started.map(|started| now.saturating_duration_since(started)),
            send_queue_bytes: self.send_queue_bytes(),
            permissions: self.identity.permissions,
        }
    }
}

fn unix_micros(time: SystemTime) -> u64 {
    let micros = time.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_micros());
    // 0 means never: a clock at the epoch reads as one microsecond later.
    u64::try_from(micros).unwrap_or(u64::MAX).max(1)
}

fn from_unix_micros(micros: u64) -> Option<SystemTime> {
    (micros != 0).then(|| UNIX_EPOCH + Duration::from_micros(micros))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(send_queue_bytes_max: usize) -> PeerShared {
        let identity = PeerIdentity {
            id: PeerId(1),
            address: SocketAddr::from(([127, 0, 0, 1], 18444)),
            local_address: None,
            inbound: true,
            connection: ConnectionType::Inbound,
            nonce: 1,
            ping_nonce_seed: 2,
            connected_at: SystemTime::UNIX_EPOCH,
            connected_instant: Instant::now(),
            keyed_group: 0,
            prefer_evict: false,
            permissions: PeerPermissions::NONE,
        };
        PeerShared::new(identity, send_queue_bytes_max, TransportKind::V1)
    }

    #[test]
    fn a_popped_message_counts_as_unsent_until_the_task_says_otherwise() {
        let peer = shared(1_000);
        assert!(peer.enqueue(NetworkMessage::Block(vec![0; 2_000])).is_ok());
        assert!(peer.send_queue_full());
        // Between the pop and the task's count of its encoded bytes the
        // send side must not read empty: the node would serve into it.
        assert!(peer.pop_message().is_some());
        assert_eq!(peer.send_queue_bytes(), 2_000 + FRAME_HEADER_BYTES);
        assert!(peer.send_queue_full());
        assert!(matches!(
            peer.enqueue(NetworkMessage::Verack),
            Err(NetworkError::SendQueueFull { .. })
        ));
        peer.set_unsent_bytes(0, &Notify::new());
        assert!(!peer.send_queue_full());
    }

    /// The node, finding a queue full, is woken once when the task's
    /// writes bring it below its limit, not before and not again.
    #[test]
    fn a_full_queue_found_by_the_node_wakes_it_once_drained() {
        let peer = shared(1_000);
        let send_ready = Notify::new();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build();
        let runtime = runtime.expect("a current-thread runtime");
        let woken = |notify: &Notify| {
            runtime.block_on(async {
                let wait = std::time::Duration::from_millis(20);
                tokio::time::timeout(wait, notify.notified()).await.is_ok()
            })
        };
        assert!(peer.enqueue(NetworkMessage::Block(vec![0; 2_000])).is_ok());
        assert!(peer.pop_message().is_some());
        assert!(peer.send_queue_full_waking());
        // Half written: still at the limit, no wake.
        peer.set_unsent_bytes(1_500, &send_ready);
        assert!(!woken(&send_ready));
        peer.set_unsent_bytes(200, &send_ready);
        assert!(woken(&send_ready));
        peer.set_unsent_bytes(0, &send_ready);
        assert!(!woken(&send_ready), "one wake per time the node found it full");
        // A queue with room arms nothing.
        assert!(!peer.send_queue_full_waking());
        peer.set_unsent_bytes(0, &send_ready);
        assert!(!woken(&send_ready));
    }

    /// Core's `ProtectNoBanConnections` removes `noban` peers before any
    /// protection is counted.
    #[test]
    fn a_noban_peer_is_never_an_eviction_candidate() {
        let ordinary = shared(1_000);
        assert!(ordinary.eviction_candidate().is_some());
        for permissions in
            [PeerPermissions::NO_BAN, PeerPermissions::ALL, PeerPermissions::IMPLICIT]
        {
            let mut identity = ordinary.identity;
            identity.permissions = permissions;
            let whitelisted = PeerShared::new(identity, 1_000, TransportKind::V1);
            assert_eq!(whitelisted.eviction_candidate(), None, "{:?}", permissions.names());
        }
        for permissions in [PeerPermissions::DOWNLOAD, PeerPermissions::ADDR] {
            let mut identity = ordinary.identity;
            identity.permissions = permissions;
            let other = PeerShared::new(identity, 1_000, TransportKind::V1);
            assert!(other.eviction_candidate().is_some(), "{:?}", permissions.names());
        }
    }
}
