//! Finding peers without `-connect`, as Core's `CConnman` does (net.cpp):
//!
//! | task | job | Core |
//! |---|---|---|
//! | [`open_connections`] | every 500 ms: fill 8 outbound full-relay and 2 block-relay-only slots from the address manager (distinct network groups, IPv4/IPv6 on the dialed networks only), a feeler every ~2 minutes once they are full, addr-fetch connections to `-seednode`s, fixed seeds after 60 s | `ThreadOpenConnections` ("opencon") |
//! | [`dns_seeds`] | when the address manager is empty (or few connections come), the network's DNS seeds, 3 at a time | `ThreadDNSAddressSeed` ("dnsseed") |
//! | [`seeds`] | the DNS seed host names per network; the fixed seed lists (empty: see there) | chainparams |
//!
//! Both tasks run on the layer's runtime and end at shutdown; their lines
//! go to the configuration's [`LogSink`] in
//! Core's words.

pub mod dns_seeds;
pub mod open_connections;
pub mod seeds;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ibex_primitives::params::Network;

use crate::addrman::{AddressBook, NetworkSet};
use crate::net::config::{AddressSettings, LogSink};
use crate::net::registry::Registry;
use crate::net::shared::lock;

/// Core's `MAX_OUTBOUND_FULL_RELAY_CONNECTIONS`.
pub const FULL_RELAY_SLOTS_DEFAULT: usize = 8;
/// Core's `MAX_BLOCK_RELAY_ONLY_CONNECTIONS`.
pub const BLOCK_RELAY_SLOTS_DEFAULT: usize = 2;
/// The most automatic slots of one kind a configuration may ask for.
pub const AUTOMATIC_SLOTS_MAX: usize = 64;
/// Host names waiting for an addr-fetch connection at most (seed nodes
/// and DNS seeds: a few dozen at most in practice).
pub const ADDRESS_FETCH_QUEUE_NAMES_MAX: usize = 64;

/// How often and how long the discovery tasks wait (Core's constants by
/// default; tests shorten them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscoveryTiming {
    /// Between two rounds of the connection opener (Core: 500 ms).
    pub open_interval: Duration,
    /// Another `-seednode` is asked this long after the last while fewer
    /// than 2 full-relay peers are connected (Core's `ADD_NEXT_SEEDNODE`).
    pub seed_node_interval: Duration,
    /// The DNS seeds wait this long for seed nodes to bring 2 full-relay
    /// peers (Core's `SEEDNODE_TIMEOUT`).
    pub seed_node_wait: Duration,
    /// Fixed seeds are added after this without addresses of a dialed
    /// network (Core: 1 minute).
    pub fixed_seeds_delay: Duration,
    /// DNS seeds wait this long when some addresses are known (Core's
    /// `DNSSEEDS_DELAY_FEW_PEERS`)...
    pub dns_seed_delay_few: Duration,
    /// ...or this long when 1,000 or more are (`DNSSEEDS_DELAY_MANY_PEERS`).
    pub dns_seed_delay_many: Duration,
    /// The mean time between feelers (Core's `FEELER_INTERVAL`).
    pub feeler_interval: Duration,
    /// An addr-fetch connection is closed after this (Core: 10 times
    /// `AVG_ADDRESS_BROADCAST_INTERVAL`).
    pub address_fetch_timeout: Duration,
    /// The longest wait for a host name to resolve.
    pub resolve_timeout: Duration,
}

impl Default for DiscoveryTiming {
    fn default() -> DiscoveryTiming {
        DiscoveryTiming {
            open_interval: Duration::from_millis(500),
            seed_node_interval: Duration::from_secs(10),
            seed_node_wait: Duration::from_secs(30),
            fixed_seeds_delay: Duration::from_secs(60),
            dns_seed_delay_few: Duration::from_secs(11),
            dns_seed_delay_many: Duration::from_secs(5 * 60),
            feeler_interval: Duration::from_secs(2 * 60),
            address_fetch_timeout: Duration::from_secs(5 * 60),
            resolve_timeout: Duration::from_secs(20),
        }
    }
}

/// What the discovery tasks are told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryConfig {
    /// Outbound full-relay slots (Core: 8, fewer if `-maxconnections` is
    /// smaller).
    pub full_relay_slots: usize,
    /// Outbound block-relay-only slots (Core: 2, within what is left).
    pub block_relay_slots: usize,
    /// Whether feelers test new-table addresses (Core's one feeler slot).
    pub feelers: bool,
    /// The networks connected to: `-onlynet`'s, or all, with only IPv4
    /// and IPv6 dialable.
    pub dialed_networks: NetworkSet,
    /// DNS seed host names; `None` with `-dnsseed=0`.
    pub dns_seeds: Option<Vec<String>>,
    /// Fixed seeds; `None` with `-fixedseeds=0`.
    pub fixed_seeds: Option<Vec<SocketAddr>>,
    /// `-seednode` values (`host[:port]`).
    pub seed_nodes: Vec<String>,
    /// `-addnode` addresses: never chosen automatically (Core keeps the
    /// automatic slots for others).
    pub manual_addresses: Vec<SocketAddr>,
    /// The network's port, for names given without one.
    pub default_port: u16,
    /// Intervals and timeouts.
    pub timing: DiscoveryTiming,
}

impl DiscoveryConfig {
    /// Core's defaults on `network`: 8 + 2 slots, feelers, IPv4 and IPv6,
    /// the network's DNS seeds and fixed seeds.
    pub fn new(network: Network, default_port: u16) -> DiscoveryConfig {
        DiscoveryConfig {
            full_relay_slots: FULL_RELAY_SLOTS_DEFAULT,
            block_relay_slots: BLOCK_RELAY_SLOTS_DEFAULT,
            feelers: true,
            dialed_networks: NetworkSet::DIALABLE,
            dns_seeds: Some(
                seeds::dns_seeds(network).iter().map(|name| name.to_string()).collect(),
            ),
            fixed_seeds: Some(seeds::fixed_seeds(network).to_vec()),
            seed_nodes: Vec::new(),
            manual_addresses: Vec::new(),
            default_port,
            timing: DiscoveryTiming::default(),
        }
    }

    /// Whether the slot counts are within [`AUTOMATIC_SLOTS_MAX`].
    pub fn is_valid(&self) -> bool {
        self.full_relay_slots <= AUTOMATIC_SLOTS_MAX
            && self.block_relay_slots <= AUTOMATIC_SLOTS_MAX
    }
}

/// What the two tasks share.
#[derive(Debug)]
pub(crate) struct Discovery {
    pub config: DiscoveryConfig,
    pub book: Arc<AddressBook>,
    pub stored_networks: NetworkSet,
    pub log: LogSink,
    /// Host names to make an addr-fetch connection to, in order.
    address_fetch_queue: Mutex<VecDeque<String>>,
}

impl Discovery {
    /// Queues `name` for an addr-fetch connection (dropped past
    /// [`ADDRESS_FETCH_QUEUE_NAMES_MAX`]).
    pub fn queue_address_fetch(&self, name: String) {
        let mut queue = lock(&self.address_fetch_queue);
        if queue.len() < ADDRESS_FETCH_QUEUE_NAMES_MAX {
            queue.push_back(name);
        }
    }

    /// The next name for an addr-fetch connection.
    pub fn next_address_fetch(&self) -> Option<String> {
        lock(&self.address_fetch_queue).pop_front()
    }
}

/// Starts the discovery tasks if the configuration asks for them.
pub(crate) fn start(registry: &Arc<Registry>) {
    let Some(AddressSettings { book, stored_networks, discovery: Some(config) }) =
        registry.config.addresses.clone()
    else {
        return;
    };
    let log = registry.config.log.clone();
    let dns_seeds_enabled = config.dns_seeds.is_some();
    let discovery = Arc::new(Discovery {
        config,
        book,
        stored_networks,
        log,
        address_fetch_queue: Mutex::new(VecDeque::new()),
    });
    if dns_seeds_enabled {
        let task = dns_seeds::query_dns_seeds(Arc::clone(&discovery), Arc::clone(registry));
        registry.runtime.spawn(task);
    } else {
        discovery.log.log("DNS seeding disabled");
    }
    let task = open_connections::open_connections(discovery, Arc::clone(registry));
    registry.runtime.spawn(task);
}

/// `text` with `default_port` when it names none (`host`, `1.2.3.4`,
/// `[::1]`, a bare IPv6 address), for the resolver.
pub(crate) fn with_default_port(text: &str, default_port: u16) -> String {
    if text.parse::<SocketAddr>().is_ok() {
        return text.to_owned();
    }
    let bare = text.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<std::net::IpAddr>() {
        return SocketAddr::new(ip, default_port).to_string();
    }
    if text.contains(':') {
        text.to_owned()
    } else {
        format!("{text}:{default_port}")
    }
}

/// Resolves `text` (with `default_port` if it has none) within `timeout`;
/// nothing if it does not resolve in time.
pub(crate) async fn resolve(text: &str, default_port: u16, timeout: Duration) -> Vec<SocketAddr> {
    let target = with_default_port(text, default_port);
    match tokio::time::timeout(timeout, tokio::net::lookup_host(target)).await {
        Ok(Ok(addresses)) => addresses.collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_the_default_port() {
        assert_eq!(with_default_port("127.0.0.1:1", 8333), "127.0.0.1:1");
        assert_eq!(with_default_port("127.0.0.1", 8333), "127.0.0.1:8333");
        assert_eq!(with_default_port("[::1]", 8333), "[::1]:8333");
        assert_eq!(with_default_port("::1", 8333), "[::1]:8333");
        assert_eq!(with_default_port("seed.example", 8333), "seed.example:8333");
        assert_eq!(with_default_port("seed.example:1", 8333), "seed.example:1");
    }

    #[test]
    fn defaults_are_cores() {
        let config = DiscoveryConfig::new(Network::Main, 8333);
        assert_eq!((config.full_relay_slots, config.block_relay_slots), (8, 2));
        assert!(config.dns_seeds.as_ref().is_some_and(|seeds| seeds.len() >= 5));
        let regtest = DiscoveryConfig::new(Network::Regtest, 18444);
        assert_eq!(regtest.dns_seeds, Some(Vec::new()));
    }
}
