//! The connection manager's shared record: live connections by id, the
//! ban list, the inbound count, traffic totals. One lock, held for map
//! updates only (never across an `await`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::{watch, Notify};

use crate::addrman::PeerAddress;
use crate::net::address::{canonical_ip, spared_as_local};
use crate::net::bans::{BanEntry, BanList};
use crate::net::config::{NetworkConfig, OUTBOUND_ADDRESSES_MAX};
use crate::net::connection_type::ConnectionType;
use crate::net::error::NetworkError;
use crate::net::event::EventSender;
use crate::net::eviction::{keyed_group, select_to_evict, EvictionCandidate};
use crate::net::permissions::PeerPermissions;
use crate::net::reason::{BanReason, DisconnectReason};
use crate::net::shared::{lock, PeerIdentity, PeerShared};
use crate::net::stats::{NetTotals, PeerInfo};
use crate::services::ServiceFlags;
use crate::sync::PeerId;
use crate::transport::TransportKind;

#[derive(Debug, Default)]
struct RegistryState {
    peers: HashMap<PeerId, Arc<PeerShared>>,
    bans: BanList,
    inbound_count: usize,
    /// Automatic outbound connections being opened (before they have an
    /// id), by attempt number.
    attempts: HashMap<u64, (SocketAddr, ConnectionType)>,
    next_attempt: u64,
}

/// An outbound connection, open or being opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutboundConnection {
    pub address: SocketAddr,
    pub connection: ConnectionType,
    /// Its id and when it opened, once open.
    pub opened: Option<(PeerId, Instant)>,
    pub handshake_complete: bool,
}

/// Everything the tasks and the handle share.
#[derive(Debug)]
pub(crate) struct Registry {
    pub config: NetworkConfig,
    pub events: EventSender,
    pub listen_address: Option<SocketAddr>,
    /// The runtime [`crate::net::start`] ran on, for tasks started later.
    pub runtime: tokio::runtime::Handle,
    /// Wakes the node when a send queue it found full drops below its
    /// limit ([`crate::net::NetworkHandle::send_ready`]), so serving a
    /// peer's next block waits for the socket, not for a poll.
    pub send_ready: Notify,
    shutdown: Arc<watch::Sender<bool>>,
    outbound_addresses: AtomicUsize,
    /// The key of inbound connections' network groups (Core's
    /// `RANDOMIZER_ID_NETGROUP` randomizer): which groups eviction
    /// protects cannot be predicted.
    eviction_secret: [u8; 32],
    /// One-try manual connections being opened or open.
    one_try_connections: AtomicUsize,
    state: Mutex<RegistryState>,
    next_id: AtomicU64,
    best_height: AtomicI32,
    /// The services announced in `version` from now on (Core's
    /// `CConnman::m_local_services`): the configuration's at start.
    local_services: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
}

impl Registry {
    pub fn new(
        config: NetworkConfig,
        events: EventSender,
        listen_address: Option<SocketAddr>,
        runtime: tokio::runtime::Handle,
    ) -> Registry {
        let best_height = AtomicI32::new(config.start_height);
        let local_services = AtomicU64::new(config.announced_services().bits());
        Registry {
            config,
            events,
            listen_address,
            runtime,
            send_ready: Notify::new(),
            shutdown: Arc::new(watch::Sender::new(false)),
            outbound_addresses: AtomicUsize::new(0),
            eviction_secret: eviction_secret(),
            one_try_connections: AtomicUsize::new(0),
            state: Mutex::new(RegistryState::default()),
            next_id: AtomicU64::new(0),
            best_height,
            local_services,
            bytes_sent: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
        }
    }

    /// Takes one of the [`OUTBOUND_ADDRESSES_MAX`] outbound address slots
    /// (kept for the layer's life, as the address is retried until then).
    pub fn reserve_outbound_address(&self) -> Result<(), NetworkError> {
        let reserved =
            self.outbound_addresses.fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                (count < OUTBOUND_ADDRESSES_MAX).then_some(count + 1)
            });
        match reserved {
            Ok(_) => Ok(()),
            Err(count) => Err(NetworkError::InvalidConfig {
                name: "connect",
                value: count as u64 + 1,
                min: 0,
                max: OUTBOUND_ADDRESSES_MAX as u64,
            }),
        }
    }

    /// Gives back a slot taken by [`Registry::reserve_outbound_address`]
    /// (an added node removed, Core's `addnode remove`).
    pub fn release_outbound_address(&self) {
        let released =
            self.outbound_addresses
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| count.checked_sub(1));
        assert!(released.is_ok(), "an outbound address slot released twice");
    }

    /// Counts a one-try connection, unless `count_max` are under way.
    pub fn begin_one_try(&self, count_max: usize) -> bool {
        self.one_try_connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                (count < count_max).then_some(count + 1)
            })
            .is_ok()
    }

    /// A one-try connection ended.
    pub fn end_one_try(&self) {
        let ended =
            self.one_try_connections
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| count.checked_sub(1));
        assert!(ended.is_ok(), "a one-try connection ended twice");
    }

    /// Records an outbound connection (ending its `attempt`, if any).
    pub fn register_outbound(
        &self,
        address: SocketAddr,
        local_address: Option<SocketAddr>,
        connection: ConnectionType,
        attempt: Option<u64>,
    ) -> Result<Arc<PeerShared>, NetworkError> {
        let secrets = ConnectionSecrets::draw();
        let mut state = lock(&self.state);
        if let Some(attempt) = attempt {
            state.attempts.remove(&attempt);
        }
        let secrets = secrets?;
        let permissions = self.config.whitelist.permissions(address.ip(), false);
        let admission = Admission { keyed_group: 0, prefer_evict: false, permissions };
        Ok(self.insert(&mut state, address, local_address, connection, secrets, admission))
    }

    /// Counts an automatic connection to `address` from now until it is
    /// registered or [`Registry::end_attempt`] is called.
    pub fn begin_attempt(&self, address: SocketAddr, connection: ConnectionType) -> u64 {
        let mut state = lock(&self.state);
        let attempt = state.next_attempt;
        state.next_attempt += 1;
        state.attempts.insert(attempt, (address, connection));
        attempt
    }

    /// An attempt ended without a connection.
    pub fn end_attempt(&self, attempt: u64) {
        lock(&self.state).attempts.remove(&attempt);
    }

    /// Every outbound connection, open or being opened.
    pub fn outbound_connections(&self) -> Vec<OutboundConnection> {
        let state = lock(&self.state);
        let open = state.peers.values().filter(|peer| !peer.identity.inbound).map(|peer| {
            OutboundConnection {
                address: peer.identity.address,
                connection: peer.identity.connection,
                opened: Some((peer.identity.id, peer.identity.connected_instant)),
                handshake_complete: peer.is_handshake_complete(),
            }
        });
        let opening = state.attempts.values().map(|&(address, connection)| OutboundConnection {
            address,
            connection,
            opened: None,
            handshake_complete: false,
        });
        open.chain(opening).collect()
    }

    /// Whether a connection (either way, or being opened) is to or from
    /// `address`: the same IP (Core's `AlreadyConnectedToAddress`), or,
    /// when `by_port`, the same IP and port (loopback nodes on regtest).
    pub fn is_connected_to(&self, address: SocketAddr, by_port: bool) -> bool {
        let same = |other: SocketAddr| {
            canonical_ip(other.ip()) == canonical_ip(address.ip())
                && (!by_port || other.port() == address.port())
        };
        let state = lock(&self.state);
        state.peers.values().any(|peer| same(peer.identity.address))
            || state.attempts.values().any(|&(other, _)| same(other))
    }

    /// Whether `address` is banned or discouraged now.
    pub fn is_banned(&self, address: IpAddr) -> bool {
        lock(&self.state).bans.get(address, SystemTime::now()).is_some()
    }

    /// Asks the connection `id` to close.
    pub fn request_close(&self, id: PeerId, reason: DisconnectReason) {
        if let Some(peer) = self.peer(id) {
            peer.request_close(reason);
        }
    }

    /// Records an inbound connection (Core's `CreateNodeFromAcceptedSocket`
    /// checks, in its order): refused from a banned address; from a
    /// discouraged one only when the inbound slots are (almost) full, and
    /// otherwise accepted as the first to evict; when the slots are full,
    /// another inbound connection is evicted to make room, and the new one
    /// is refused only when every inbound peer is protected. A `noban`
    /// peer is let in whether banned or discouraged, as Core's.
    pub fn register_inbound(
        &self,
        address: SocketAddr,
        local_address: Option<SocketAddr>,
    ) -> Result<Result<Arc<PeerShared>, DisconnectReason>, NetworkError> {
        let secrets = ConnectionSecrets::draw()?;
        let group = self.config.eviction_grouping.group(address);
        let keyed_group = keyed_group(&self.eviction_secret, &group);
        let now = SystemTime::now();
        let permissions = self.config.whitelist.permissions(address.ip(), true);
        let no_ban = permissions.contains(PeerPermissions::NO_BAN);
        let mut state = lock(&self.state);
        if !no_ban && state.bans.banned(address.ip(), now).is_some() {
            return Ok(Err(DisconnectReason::RefusedBanned { address }));
        }
        let inbound_max = self.config.inbound_connections_max;
        let discouraged = state.bans.is_discouraged(address.ip(), now);
        if !no_ban && discouraged && state.inbound_count + 1 >= inbound_max {
            return Ok(Err(DisconnectReason::RefusedDiscouraged { address }));
        }
        if state.inbound_count >= inbound_max {
            // Evicted connections hold their slot until their task ends
            // (Core's too, until `DisconnectNodes`): a burst of accepts
            // may evict at most this many before one has ended.
            let pending_max = inbound_max + INBOUND_EVICTIONS_PENDING_MAX;
            if state.inbound_count >= pending_max || !evict_inbound(&state) {
                return Ok(Err(DisconnectReason::RefusedFull { address }));
            }
        }
        state.inbound_count += 1;
        let admission = Admission { keyed_group, prefer_evict: discouraged, permissions };
        let connection = ConnectionType::Inbound;
        Ok(Ok(self.insert(&mut state, address, local_address, connection, secrets, admission)))
    }

    fn insert(
        &self,
        state: &mut RegistryState,
        address: SocketAddr,
        local_address: Option<SocketAddr>,
        connection: ConnectionType,
        secrets: ConnectionSecrets,
        admission: Admission,
    ) -> Arc<PeerShared> {
        let id = PeerId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let identity = PeerIdentity {
            id,
            address,
            local_address,
            inbound: connection.is_inbound(),
            connection,
            nonce: secrets.version_nonce,
            ping_nonce_seed: secrets.ping_nonce_seed,
            connected_at: SystemTime::now(),
            connected_instant: Instant::now(),
            keyed_group: admission.keyed_group,
            prefer_evict: admission.prefer_evict,
            permissions: admission.permissions,
        };
        let transport =
            if self.config.v2_transport { TransportKind::Detecting } else { TransportKind::V1 };
        let shared =
            Arc::new(PeerShared::new(identity, self.config.send_queue_bytes_max, transport));
        state.peers.insert(id, Arc::clone(&shared));
        shared
    }

    /// Forgets a closed connection; a peer (not a manual or `noban` one)
    /// from a non-local address that misbehaved is refused for
    /// `discourage_duration` (Core's `Discourage`, which it too skips for
    /// local addresses), and the address manager hears that a full-relay
    /// or manual connection ended (Core's `Connected`, never told of
    /// block-relay-only peers).
    pub fn unregister(&self, id: PeerId, reason: &DisconnectReason) {
        let mut state = lock(&self.state);
        let Some(shared) = state.peers.remove(&id) else {
            return;
        };
        let identity = shared.identity;
        if identity.inbound {
            assert!(state.inbound_count > 0, "inbound count below the inbound connections");
            state.inbound_count -= 1;
        }
        let ip = identity.address.ip();
        let no_ban = identity.permissions.contains(PeerPermissions::NO_BAN);
        if reason.discourages()
            && identity.connection.is_punishable()
            && !no_ban
            && !spared_as_local(ip, self.config.loopback_discouraged)
        {
            let duration = self.config.discourage_duration;
            state.bans.insert(ip, BanReason::Misbehaving, SystemTime::now(), duration);
        }
        drop(state);
        let told = !identity.inbound
            && identity.connection.relays_addresses()
            && identity.connection != ConnectionType::Feeler
            && shared.is_handshake_complete();
        if let (true, Some(addresses)) = (told, &self.config.addresses) {
            let address = PeerAddress::from_socket_address(identity.address);
            addresses.book.lock().mark_connected(&address, unix_seconds());
        }
    }

    /// Whether `nonce` is in the `version` we sent on an outbound
    /// connection still in its handshake (Core's `CheckIncomingNonce`).
    pub fn is_own_pending_nonce(&self, nonce: u64) -> bool {
        let state = lock(&self.state);
        state.peers.values().any(|peer| {
            !peer.identity.inbound && peer.identity.nonce == nonce && !peer.is_handshake_complete()
        })
    }

    pub fn peer(&self, id: PeerId) -> Option<Arc<PeerShared>> {
        lock(&self.state).peers.get(&id).cloned()
    }

    pub fn peer_count(&self) -> usize {
        lock(&self.state).peers.len()
    }

    /// `getpeerinfo`, by id.
    pub fn peers(&self) -> Vec<PeerInfo> {
        let peers: Vec<Arc<PeerShared>> = lock(&self.state).peers.values().cloned().collect();
        let now = Instant::now();
        let mut infos: Vec<PeerInfo> = peers.iter().map(|peer| peer.info(now)).collect();
        infos.sort_by_key(|info| info.id);
        infos
    }

    /// Bans `address` and closes the connections from it (Core's `setban`).
    pub fn ban(&self, address: IpAddr, reason: BanReason, duration: Duration) {
        let address = canonical_ip(address);
        let mut state = lock(&self.state);
        state.bans.insert(address, reason, SystemTime::now(), duration);
        let matching: Vec<Arc<PeerShared>> = state
            .peers
            .values()
            .filter(|peer| canonical_ip(peer.identity.address.ip()) == address)
            .cloned()
            .collect();
        drop(state);
        for peer in matching {
            peer.request_close(DisconnectReason::Banned);
        }
    }

    /// Lifts the manual ban on `address` (a discouragement stays, as
    /// Core's `Unban`); whether there was one.
    pub fn unban(&self, address: IpAddr) -> bool {
        lock(&self.state).bans.remove(address)
    }

    /// Lifts every manual ban (Core's `ClearBanned`).
    pub fn clear_bans(&self) {
        lock(&self.state).bans.clear_manual();
    }

    /// The manual ban on `address` in force, if any.
    pub fn manual_ban(&self, address: IpAddr) -> Option<BanEntry> {
        lock(&self.state).bans.banned(address, SystemTime::now())
    }

    /// Whether `address` is discouraged now.
    pub fn is_discouraged(&self, address: IpAddr) -> bool {
        lock(&self.state).bans.is_discouraged(address, SystemTime::now())
    }

    /// The manual bans in force (Core's `listbanned`).
    pub fn bans(&self) -> Vec<BanEntry> {
        lock(&self.state).bans.list(SystemTime::now())
    }

    pub fn record_sent(&self, bytes: usize) {
        self.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn record_received(&self, bytes: usize) {
        self.bytes_received.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub fn totals(&self) -> NetTotals {
        NetTotals {
            bytes_received: self.bytes_received.load(Ordering::Relaxed),
            bytes_sent: self.bytes_sent.load(Ordering::Relaxed),
            time: SystemTime::now(),
            events_dropped: self.events.dropped(),
        }
    }

    pub fn best_height(&self) -> i32 {
        self.best_height.load(Ordering::Relaxed)
    }

    pub fn set_best_height(&self, height: i32) {
        self.best_height.store(height, Ordering::Relaxed);
    }

    pub fn local_services(&self) -> ServiceFlags {
        ServiceFlags::from_bits(self.local_services.load(Ordering::Relaxed))
    }

    pub fn set_local_services(&self, services: ServiceFlags) {
        self.local_services.store(services.bits(), Ordering::Relaxed);
    }

    /// A receiver that sees `true` once the layer shuts down.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// The switch that shuts the layer down, for the node's end of the
    /// event queue to pull when it is dropped.
    pub fn shutdown_switch(&self) -> Arc<watch::Sender<bool>> {
        Arc::clone(&self.shutdown)
    }

    pub fn shut_down(&self) {
        self.shutdown.send_replace(true);
    }

    pub fn is_shut_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}

/// A fresh eviction key from the system's CSPRNG; if that fails, from
/// the clock (no connection is accepted then anyway: each needs
/// [`ConnectionSecrets`]).
fn eviction_secret() -> [u8; 32] {
    let mut secret = [0; 32];
    if getrandom::fill(&mut secret).is_err() {
        let nanos = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos());
        secret[..16].copy_from_slice(&nanos.to_le_bytes());
    }
    secret
}

/// Seconds since the Unix epoch now.
pub(crate) fn unix_seconds() -> i64 {
    let seconds =
        SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs());
    i64::try_from(seconds).unwrap_or(i64::MAX)
}

/// Inbound connections evicted and not yet ended at most: beyond
/// `inbound_connections_max` plus this, a new connection is refused.
pub const INBOUND_EVICTIONS_PENDING_MAX: usize = 8;

/// What admission decided about a connection's eviction.
struct Admission {
    keyed_group: u64,
    prefer_evict: bool,
    permissions: PeerPermissions,
}

/// Asks one inbound connection to close to make room (Core's
/// `AttemptToEvictConnection`); false if every one is protected.
fn evict_inbound(state: &RegistryState) -> bool {
    let candidates: Vec<EvictionCandidate> = state
        .peers
        .values()
        .filter(|peer| peer.identity.inbound)
        .filter_map(|peer| peer.eviction_candidate())
        .collect();
    let Some(id) = select_to_evict(candidates) else { return false };
    let Some(peer) = state.peers.get(&id) else { return false };
    peer.request_close(DisconnectReason::Evicted);
    true
}

/// A connection's random values, from the system's CSPRNG.
struct ConnectionSecrets {
    /// The nonce in our `version` (Core derives it from a secret and the
    /// connection id; any unpredictable value detects self-connections).
    version_nonce: u64,
    /// The seed of our ping nonces, never sent: the peer sees our version
    /// nonce, so ping nonces drawn from it could be predicted and a pong
    /// forged before the ping arrives (Core draws them from its
    /// `FastRandomContext`, seeded by the OS).
    ping_nonce_seed: u64,
}

impl ConnectionSecrets {
    fn draw() -> Result<ConnectionSecrets, NetworkError> {
        let random = || getrandom::u64().map_err(|source| NetworkError::RandomSource { source });
        Ok(ConnectionSecrets { version_nonce: random()?, ping_nonce_seed: random()? })
    }
}
