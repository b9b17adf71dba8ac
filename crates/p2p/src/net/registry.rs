//! The connection manager's shared record: live connections by id, the
//! ban list, the inbound count, traffic totals. One lock, held for map
//! updates only (never across an `await`).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::watch;

use crate::net::address::{canonical_ip, is_local};
use crate::net::bans::{BanEntry, BanList};
use crate::net::config::{NetworkConfig, OUTBOUND_ADDRESSES_MAX};
use crate::net::error::NetworkError;
use crate::net::event::EventSender;
use crate::net::reason::{BanReason, DisconnectReason};
use crate::net::shared::{lock, PeerIdentity, PeerShared};
use crate::net::stats::{NetTotals, PeerInfo};
use crate::sync::PeerId;
use crate::transport::TransportKind;

#[derive(Debug, Default)]
struct RegistryState {
    peers: HashMap<PeerId, Arc<PeerShared>>,
    bans: BanList,
    inbound_count: usize,
}

/// Everything the tasks and the handle share.
#[derive(Debug)]
pub(crate) struct Registry {
    pub config: NetworkConfig,
    pub events: EventSender,
    pub listen_address: Option<SocketAddr>,
    /// The runtime [`crate::net::start`] ran on, for tasks started later.
    pub runtime: tokio::runtime::Handle,
    shutdown: Arc<watch::Sender<bool>>,
    outbound_addresses: AtomicUsize,
    state: Mutex<RegistryState>,
    next_id: AtomicU64,
    best_height: AtomicI32,
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
        Registry {
            config,
            events,
            listen_address,
            runtime,
            shutdown: Arc::new(watch::Sender::new(false)),
            outbound_addresses: AtomicUsize::new(0),
            state: Mutex::new(RegistryState::default()),
            next_id: AtomicU64::new(0),
            best_height,
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

    /// Records an outbound connection.
    pub fn register_outbound(
        &self,
        address: SocketAddr,
        local_address: Option<SocketAddr>,
    ) -> Result<Arc<PeerShared>, NetworkError> {
        let nonce = random_nonce()?;
        let mut state = lock(&self.state);
        Ok(self.insert(&mut state, address, local_address, false, nonce))
    }

    /// Records an inbound connection, unless its address is banned or the
    /// inbound slots are full (Core's `CreateNodeFromAcceptedSocket`
    /// checks, in its order).
    pub fn register_inbound(
        &self,
        address: SocketAddr,
        local_address: Option<SocketAddr>,
    ) -> Result<Result<Arc<PeerShared>, DisconnectReason>, NetworkError> {
        let nonce = random_nonce()?;
        let mut state = lock(&self.state);
        match state.bans.get(address.ip(), SystemTime::now()) {
            Some(BanEntry { reason: BanReason::Misbehaving, .. }) => {
                // Core accepts a discouraged address while inbound slots
                // are free and evicts it first; refused here outright.
                return Ok(Err(DisconnectReason::RefusedDiscouraged { address }));
            }
            Some(_) => return Ok(Err(DisconnectReason::RefusedBanned { address })),
            None => {}
        }
        if state.inbound_count >= self.config.inbound_connections_max {
            // Core first tries to evict another inbound peer
            // (`AttemptToEvictConnection`); Ibex keeps the ones it has.
            return Ok(Err(DisconnectReason::RefusedFull { address }));
        }
        state.inbound_count += 1;
        Ok(Ok(self.insert(&mut state, address, local_address, true, nonce)))
    }

    fn insert(
        &self,
        state: &mut RegistryState,
        address: SocketAddr,
        local_address: Option<SocketAddr>,
        inbound: bool,
        nonce: u64,
    ) -> Arc<PeerShared> {
        let id = PeerId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let identity = PeerIdentity {
            id,
            address,
            local_address,
            inbound,
            nonce,
            connected_at: SystemTime::now(),
            connected_instant: Instant::now(),
        };
        let transport =
            if self.config.v2_transport { TransportKind::Detecting } else { TransportKind::V1 };
        let shared =
            Arc::new(PeerShared::new(identity, self.config.send_queue_bytes_max, transport));
        state.peers.insert(id, Arc::clone(&shared));
        shared
    }

    /// Forgets a closed connection; an inbound peer from a non-local
    /// address that misbehaved is refused for `discourage_duration` (Core's
    /// `Discourage`, which it too skips for local addresses).
    pub fn unregister(&self, id: PeerId, reason: &DisconnectReason) {
        let mut state = lock(&self.state);
        let Some(shared) = state.peers.remove(&id) else {
            return;
        };
        let identity = shared.identity;
        if identity.inbound {
            assert!(state.inbound_count > 0, "inbound count below the inbound connections");
            state.inbound_count -= 1;
            let ip = identity.address.ip();
            if reason.discourages() && !is_local(ip) {
                let duration = self.config.discourage_duration;
                state.bans.insert(ip, BanReason::Misbehaving, SystemTime::now(), duration);
            }
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

    pub fn unban(&self, address: IpAddr) -> bool {
        lock(&self.state).bans.remove(address)
    }

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

/// A random nonce for our `version` (Core derives it from a secret and the
/// connection id; any unpredictable value detects self-connections).
fn random_nonce() -> Result<u64, NetworkError> {
    getrandom::u64().map_err(|source| NetworkError::RandomSource { source })
}
