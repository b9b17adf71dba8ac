//! The connection opener (Core's `ThreadOpenConnections`, "opencon"): a
//! round every `open_interval` (500 ms), each opening at most one
//! connection, so the slots fill in a few seconds and never overfill
//! (connections being opened count).
//!
//! A round:
//! 1. one queued addr-fetch name (a `-seednode`, a DNS seed) is resolved
//!    and connected to; seed nodes are queued at once when the address
//!    manager is empty, then one more every 10 s while fewer than 2
//!    full-relay peers are connected;
//! 2. addr-fetch connections older than 5 minutes are closed;
//! 3. fixed seeds are added once, when a dialed network has no address:
//!    after 60 s, or at once without DNS seeds, seed nodes or `-addnode`;
//! 4. the kind of connection to open: full-relay while fewer than 8,
//!    block-relay-only while fewer than 2, else a feeler when its Poisson
//!    timer (mean 2 minutes) is due;
//! 5. up to 100 picks from the address manager (feelers: first the
//!    occupant of a tried slot another address collides with, to test it
//!    before it is evicted, else the new table only; collisions are
//!    settled first, Core's `ResolveCollisions`) until one is on a dialed
//!    network, not banned, not already
//!    connected, in a network group no full-relay, block-relay-only or
//!    manual peer is in (not for feelers), not tried in the last 10
//!    minutes (after 30 picks, any), with the services wanted
//!    (`NODE_NETWORK | NODE_WITNESS`; feelers: `NODE_NETWORK` or
//!    `NODE_NETWORK_LIMITED`), and not an `-addnode` address.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::addrman::{
    AddressCandidate, AddressSource, FastRandom, NetworkGroup, PeerAddress, SelectedAddress,
};
use crate::net::connection_type::ConnectionType;
use crate::net::discovery::{resolve, Discovery};
use crate::net::manager::open_automatic;
use crate::net::reason::DisconnectReason;
use crate::net::registry::{unix_seconds, Registry};
use crate::services::ServiceFlags;

/// Picks from the address manager per round at most (Core's 100 tries).
const PICKS_PER_ROUND_MAX: usize = 100;
/// Picks after which a recently tried address is taken anyway (Core: 30).
const RECENT_TRY_PICKS: usize = 30;
/// An address tried this recently is skipped for a while (Core: 10 min).
const RECENT_TRY_SECONDS: i64 = 10 * 60;
/// Full-relay peers after which seed nodes and DNS seeds are not needed
/// (Core's `SEED_OUTBOUND_CONNECTION_THRESHOLD`).
pub const SEED_OUTBOUND_CONNECTIONS_THRESHOLD: usize = 2;
/// Fixed seeds are given a last-seen time 1 to 2 weeks ago (Core's
/// `ConvertSeeds`), so fresher addresses win.
const FIXED_SEED_AGE_SECONDS_MIN: i64 = 7 * 24 * 60 * 60;

/// The outbound connections as the opener counts them.
#[derive(Debug, Default)]
pub(crate) struct OutboundCounts {
    pub full_relay: usize,
    pub full_relay_connected: usize,
    pub block_relay: usize,
    /// Groups of full-relay, block-relay-only and manual IPv4/IPv6 peers.
    pub groups: HashSet<NetworkGroup>,
}

/// Counts `registry`'s outbound connections (Core's round start).
pub(crate) fn count_outbound(registry: &Registry, discovery: &Discovery) -> OutboundCounts {
    let policy = discovery.book.lock().policy();
    let mut counts = OutboundCounts::default();
    for outbound in registry.outbound_connections() {
        match outbound.connection {
            ConnectionType::OutboundFullRelay => {
                counts.full_relay += 1;
                counts.full_relay_connected += usize::from(outbound.handshake_complete);
            }
            ConnectionType::BlockRelay => counts.block_relay += 1,
            ConnectionType::Manual => {}
            // Short-lived connections do not shape the choice (Core).
            _ => continue,
        }
        let address = PeerAddress::from_socket_address(outbound.address);
        counts.groups.insert(NetworkGroup::of(&address, policy));
    }
    counts
}

/// The opener's state between rounds.
struct Opener {
    discovery: Arc<Discovery>,
    registry: Arc<Registry>,
    random: FastRandom,
    started: Instant,
    seed_nodes: Vec<String>,
    queue_seed_node: bool,
    seed_node_timer: Instant,
    fixed_seeds_pending: bool,
    next_feeler: Instant,
}

/// Runs the opener until the layer shuts down.
pub(crate) async fn open_connections(discovery: Arc<Discovery>, registry: Arc<Registry>) {
    discovery.log.log("opencon thread start");
    let mut shutdown = registry.shutdown_signal();
    let mut opener = Opener::new(discovery, Arc::clone(&registry));
    loop {
        opener.queue_seed_node_if_due();
        opener.process_address_fetch().await;
        tokio::select! {
            _ = shutdown.changed() => break,
            () = tokio::time::sleep(opener.discovery.config.timing.open_interval) => {}
        }
        if registry.is_shut_down() || registry.events.is_closed() {
            break;
        }
        opener.round();
    }
    opener.discovery.log.log("opencon thread exit");
}

impl Opener {
    fn new(discovery: Arc<Discovery>, registry: Arc<Registry>) -> Opener {
        let mut seed = [0; 32];
        seed[..8].copy_from_slice(&unix_seconds().to_le_bytes());
        let mut random = FastRandom::from_os().unwrap_or_else(|_| FastRandom::from_seed(&seed));
        let mut seed_nodes = discovery.config.seed_nodes.clone();
        random.shuffle(&mut seed_nodes);
        let queue_seed_node = !seed_nodes.is_empty() && discovery.book.is_empty();
        let fixed_seeds_pending = discovery.config.fixed_seeds.is_some();
        if !fixed_seeds_pending {
            discovery.log.log("Fixed seeds are disabled");
        }
        let now = Instant::now();
        let mut opener = Opener {
            discovery,
            registry,
            random,
            started: now,
            seed_nodes,
            queue_seed_node,
            seed_node_timer: now,
            fixed_seeds_pending,
            next_feeler: now,
        };
        opener.next_feeler = now + opener.feeler_delay();
        opener
    }

    fn feeler_delay(&mut self) -> Duration {
        let mean = self.discovery.config.timing.feeler_interval.as_secs_f64();
        Duration::from_secs_f64(self.random.exponential_seconds(mean).min(mean * 50.0))
    }

    /// Queues the next seed node for an addr-fetch connection when due.
    fn queue_seed_node_if_due(&mut self) {
        if !std::mem::take(&mut self.queue_seed_node) {
            return;
        }
        let Some(seed_node) = self.seed_nodes.pop() else { return };
        let line = if self.discovery.book.is_empty() {
            format!("Empty addrman, adding seednode ({seed_node}) to addrfetch")
        } else {
            let seconds = self.discovery.config.timing.seed_node_interval.as_secs();
            format!("Couldn't connect to peers from addrman after {seconds} seconds. Adding seednode ({seed_node}) to addrfetch")
        };
        self.discovery.log.log(&line);
        self.discovery.queue_address_fetch(seed_node);
    }

    /// Opens an addr-fetch connection to the next queued name (Core's
    /// `ProcessAddrFetch`).
    async fn process_address_fetch(&mut self) {
        let Some(name) = self.discovery.next_address_fetch() else { return };
        let config = &self.discovery.config;
        let resolved = resolve(&name, config.default_port, config.timing.resolve_timeout).await;
        let policy = self.discovery.book.lock().policy();
        let target = resolved.into_iter().find(|address| {
            let peer = PeerAddress::from_socket_address(*address);
            config.dialed_networks.contains(peer.network())
                && !self.registry.is_connected_to(*address, policy.loopback_allowed)
        });
        if let Some(address) = target {
            let v2 = true;
            open_automatic(&self.registry, address, ConnectionType::AddressFetch, v2, false);
        }
    }

    /// One round after the pause (steps 2 to 5 of the module docs).
    fn round(&mut self) {
        self.close_stale_address_fetches();
        if self.fixed_seeds_pending {
            self.fixed_seeds_pending = !self.maybe_add_fixed_seeds();
        }
        let counts = count_outbound(&self.registry, &self.discovery);
        let now = Instant::now();
        let interval = self.discovery.config.timing.seed_node_interval;
        if !self.seed_nodes.is_empty()
            && counts.full_relay_connected < SEED_OUTBOUND_CONNECTIONS_THRESHOLD
            && now >= self.seed_node_timer + interval
        {
            self.seed_node_timer = now;
            self.queue_seed_node = true;
        }
        let Some(connection) = self.next_kind(&counts, now) else { return };
        self.discovery.book.lock().resolve_collisions(unix_seconds());
        let feeler = connection == ConnectionType::Feeler;
        let Some(selected) = self.pick(&counts, feeler) else { return };
        let Some(address) = selected.address.socket_address() else { return };
        let v2 = selected.services.contains(ServiceFlags::P2P_V2);
        let count_failure = counts.groups.len() >= 2;
        open_automatic(&self.registry, address, connection, v2, count_failure);
    }

    /// What to open this round, if anything.
    fn next_kind(&mut self, counts: &OutboundCounts, now: Instant) -> Option<ConnectionType> {
        let config = &self.discovery.config;
        if counts.full_relay < config.full_relay_slots {
            return Some(ConnectionType::OutboundFullRelay);
        }
        if counts.block_relay < config.block_relay_slots {
            return Some(ConnectionType::BlockRelay);
        }
        if config.feelers && now >= self.next_feeler {
            self.next_feeler = now + self.feeler_delay();
            return Some(ConnectionType::Feeler);
        }
        None
    }

    /// An address to connect to (step 5 of the module docs).
    fn pick(&mut self, counts: &OutboundCounts, feeler: bool) -> Option<SelectedAddress> {
        let config = &self.discovery.config;
        let now_seconds = unix_seconds();
        let policy = self.discovery.book.lock().policy();
        let wanted = ServiceFlags::NETWORK | ServiceFlags::WITNESS;
        for picks in 1..=PICKS_PER_ROUND_MAX {
            let collision = if feeler { self.tried_collision(now_seconds) } else { None };
            let selected = match collision {
                Some(selected) => selected,
                None => self.discovery.book.lock().select(
                    feeler,
                    config.dialed_networks,
                    now_seconds,
                )?,
            };
            let Some(socket) = selected.address.socket_address() else { continue };
            let group = NetworkGroup::of(&selected.address, policy);
            let by_port = policy.loopback_allowed && selected.address.is_loopback();
            let services = selected.services;
            let useful = if feeler {
                services.contains(ServiceFlags::NETWORK)
                    || services.contains(ServiceFlags::NETWORK_LIMITED)
            } else {
                services.contains(wanted)
            };
            let skip = (!feeler && counts.groups.contains(&group))
                || self.registry.is_connected_to(socket, by_port)
                || self.registry.is_banned(socket.ip())
                || (now_seconds - selected.last_try_seconds < RECENT_TRY_SECONDS
                    && picks < RECENT_TRY_PICKS)
                || !useful
                || config.manual_addresses.contains(&socket);
            if !skip {
                return Some(selected);
            }
        }
        None
    }

    /// The occupant of a tried slot another address collides with, for a
    /// feeler to test (Core's `SelectTriedCollision` use in
    /// `ThreadOpenConnections`). One we are connected to already answered:
    /// it is marked good (which keeps it) and the feeler tests a new
    /// address instead.
    fn tried_collision(&self, now_seconds: i64) -> Option<SelectedAddress> {
        let book = &self.discovery.book;
        let selected = book.lock().select_tried_collision()?;
        let socket = selected.address.socket_address()?;
        let policy = book.lock().policy();
        let by_port = policy.loopback_allowed && selected.address.is_loopback();
        if self.registry.is_connected_to(socket, by_port) {
            book.lock().mark_good(&selected.address, selected.services, now_seconds);
            return None;
        }
        Some(selected)
    }

    /// Closes addr-fetch connections past their timeout.
    fn close_stale_address_fetches(&self) {
        let timeout = self.discovery.config.timing.address_fetch_timeout;
        for outbound in self.registry.outbound_connections() {
            let Some((id, opened_at)) = outbound.opened else { continue };
            if outbound.connection == ConnectionType::AddressFetch && opened_at.elapsed() > timeout
            {
                self.registry.request_close(id, DisconnectReason::AddressFetchTimeout);
            }
        }
    }

    /// Core's fixed-seed fallback; true once done (or never needed).
    fn maybe_add_fixed_seeds(&mut self) -> bool {
        let discovery = &self.discovery;
        let config = &discovery.config;
        let empty_networks: Vec<_> = {
            let manager = discovery.book.lock();
            config
                .dialed_networks
                .networks()
                .filter(|network| manager.count(*network) == 0)
                .collect()
        };
        if empty_networks.is_empty() {
            return false;
        }
        if self.started.elapsed() > config.timing.fixed_seeds_delay {
            discovery.log.log("Adding fixed seeds as 60 seconds have passed and addrman is empty for at least one reachable network");
        } else if config.dns_seeds.is_none()
            && config.seed_nodes.is_empty()
            && config.manual_addresses.is_empty()
        {
            discovery.log.log("Adding fixed seeds as -dnsseed=0 (or IPv4/IPv6 connections are disabled via -onlynet) and neither -addnode nor -seednode are provided");
        } else {
            return false;
        }
        let now_seconds = unix_seconds();
        let seeds: Vec<AddressCandidate> = config
            .fixed_seeds
            .iter()
            .flatten()
            .map(|address| PeerAddress::from_socket_address(*address))
            .filter(|address| empty_networks.contains(&address.network()))
            .map(|address| AddressCandidate {
                address,
                services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
                time_seconds: now_seconds
                    - FIXED_SEED_AGE_SECONDS_MIN
                    - self.random.below(FIXED_SEED_AGE_SECONDS_MIN as u64) as i64,
            })
            .collect();
        discovery.book.lock().add(&seeds, AddressSource::named("fixedseeds"), 0, now_seconds);
        discovery.log.log(&format!("Added {} fixed seeds from reachable networks.", seeds.len()));
        true
    }
}
