//! The networking layer's configuration from the node's P2P options:
//! `-connect`/`-addnode` addresses resolved to socket addresses, the
//! listening address from `-listen`, `-bind` and `-port`, `-v2transport`,
//! `-maxconnections` (Core's split: 8 full-relay, 2 block-relay-only and
//! a feeler slot outbound, the rest inbound), and without `-connect` the
//! discovery: `-dnsseed`, `-fixedseeds`, `-seednode`, `-onlynet`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use ibex_p2p::addrman::{AddressBook, AddressNetwork, NetworkSet};
use ibex_p2p::messages::feature::FeatureMessage;
use ibex_p2p::messages::spent_coins::{
    BLOCK_SPENT_COINS_FEATURE_DATA, BLOCK_SPENT_COINS_FEATURE_ID,
};
use ibex_p2p::net::config::{AddressSettings, NetworkConfig, INBOUND_CONNECTIONS_MAX};
use ibex_p2p::net::discovery::{
    DiscoveryConfig, BLOCK_RELAY_SLOTS_DEFAULT, FULL_RELAY_SLOTS_DEFAULT,
};
use ibex_p2p::net::EvictionGrouping;
use ibex_primitives::Params;

use crate::options::network::NetworkOptions;

/// Core's feeler slot (`m_max_feeler`), taken from `-maxconnections` too.
const FEELER_SLOTS: usize = 1;

/// The mean time between feelers under `-test=fastfeelers`.
const FAST_FEELER_INTERVAL: Duration = Duration::from_secs(1);

/// Core's split of `-maxconnections` (`CConnman::Init`): full-relay slots
/// first, block-relay-only from what is left, a feeler, inbound the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionSlots {
    /// Outbound full-relay connections (8 at most).
    pub full_relay: usize,
    /// Outbound block-relay-only connections (2 at most).
    pub block_relay: usize,
    /// Whether a feeler fits.
    pub feeler: bool,
    /// Inbound connections.
    pub inbound: usize,
}

impl ConnectionSlots {
    /// The split of `max_connections`.
    pub fn for_max_connections(max_connections: usize) -> ConnectionSlots {
        let full_relay = FULL_RELAY_SLOTS_DEFAULT.min(max_connections);
        let block_relay = BLOCK_RELAY_SLOTS_DEFAULT.min(max_connections - full_relay);
        let automatic = full_relay + block_relay + FEELER_SLOTS;
        ConnectionSlots {
            full_relay,
            block_relay,
            feeler: max_connections >= automatic,
            inbound: max_connections.saturating_sub(automatic),
        }
    }
}

/// An address option that names no usable address.
#[derive(Debug, thiserror::Error)]
#[error("Invalid {option} address: {value}")]
pub struct AddressError {
    /// The option (`-connect`, `-addnode`, `-bind`).
    pub option: &'static str,
    /// The value given.
    pub value: String,
}

/// `text` as `HOST[:PORT]`, with `default_port` when it names none (Core's
/// `Lookup` with the chain's default port). A host name is resolved once.
fn resolve(
    option: &'static str,
    text: &str,
    default_port: u16,
) -> Result<SocketAddr, AddressError> {
    let error = || AddressError { option, value: text.to_owned() };
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    if let Ok(ip) = text.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, default_port));
    }
    let with_port =
        if text.contains(':') { text.to_owned() } else { format!("{text}:{default_port}") };
    with_port.to_socket_addrs().map_err(|_| error())?.next().ok_or_else(error)
}

/// The networking layer's configuration for `options` on `params`' chain,
/// announcing `start_height` in `version`.
pub fn network_config(
    options: &NetworkOptions,
    params: &Params,
    start_height: i32,
) -> Result<NetworkConfig, AddressError> {
    let mut config = NetworkConfig::new(params.message_start);
    let default_port = params.default_port;
    for text in options.connect.iter() {
        config.connect.push(resolve("-connect", text, default_port)?);
    }
    if options.listen {
        // Without -bind, loopback only (Core binds every interface): a
        // node serves other hosts only at an address -bind names.
        let listen = match options.bind.first() {
            Some(text) => resolve("-bind", text, options.port)?,
            None => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), options.port),
        };
        config.listen = Some(listen);
    }
    config.v2_transport = options.v2_transport;
    if options.peer_block_spent_coins {
        config.features.push(FeatureMessage::new(
            BLOCK_SPENT_COINS_FEATURE_ID,
            BLOCK_SPENT_COINS_FEATURE_DATA,
        ));
    }
    // Core's inbound share: -maxconnections less 8 full-relay, 2
    // block-relay-only and 1 feeler outbound slots.
    let slots = ConnectionSlots::for_max_connections(options.max_connections);
    config.inbound_connections_max = slots.inbound.min(INBOUND_CONNECTIONS_MAX);
    config.start_height = start_height;
    if options.eviction_loopback_groups {
        config.eviction_grouping = EvictionGrouping::LoopbackBySlash16;
    }
    config.loopback_discouraged = options.loopback_discouraged;
    config.whitelist = options.whitelist.clone();
    Ok(config)
}

/// The `-addnode` texts and the addresses they resolve to (kept connected
/// as added nodes once the networking layer runs, so `addnode remove` can
/// drop them, as Core's).
pub fn added_node_addresses(
    options: &NetworkOptions,
    params: &Params,
) -> Result<Vec<(String, SocketAddr)>, AddressError> {
    options
        .add_nodes
        .iter()
        .map(|text| Ok((text.clone(), resolve("-addnode", text, params.default_port)?)))
        .collect()
}

/// `-onlynet`'s networks (all without it), and those of them Ibex dials.
pub fn only_networks(options: &NetworkOptions) -> (NetworkSet, NetworkSet) {
    let named: Vec<AddressNetwork> =
        options.only_networks.iter().filter_map(|name| AddressNetwork::from_name(name)).collect();
    let stored = if named.is_empty() { NetworkSet::ALL } else { NetworkSet::of(&named) };
    (stored, stored.intersection(NetworkSet::DIALABLE))
}

/// The log lines about `-onlynet` networks Ibex keeps addresses of but
/// cannot connect over yet (no Tor, I2P or CJDNS support).
pub fn only_network_warnings(options: &NetworkOptions) -> Vec<String> {
    let (stored, dialed) = only_networks(options);
    if options.only_networks.is_empty() {
        return Vec::new();
    }
    let mut lines: Vec<String> = stored
        .networks()
        .filter(|network| !network.is_dialable())
        .map(|network| {
            let name = network.name();
            format!("-onlynet={name}: Ibex cannot connect over {name} yet; its addresses are kept but not dialed")
        })
        .collect();
    if dialed.is_empty() {
        lines.push("Warning: no network in -onlynet can be dialed; no automatic outbound connections will be made".to_owned());
    }
    lines
}

/// The address manager's part of the configuration: the book, the networks
/// stored, and (without `-connect`) the discovery, with `addresses` known
/// from `-addnode` kept out of the automatic choice.
pub fn address_settings(
    options: &NetworkOptions,
    params: &Params,
    book: Arc<AddressBook>,
    manual_addresses: Vec<SocketAddr>,
) -> AddressSettings {
    let (stored_networks, dialed_networks) = only_networks(options);
    let discovery = options.automatic_outbound().then(|| {
        let slots = ConnectionSlots::for_max_connections(options.max_connections);
        let mut discovery = DiscoveryConfig::new(params.network, params.default_port);
        discovery.full_relay_slots = slots.full_relay;
        discovery.block_relay_slots = slots.block_relay;
        discovery.feelers = slots.feeler;
        discovery.dialed_networks = dialed_networks;
        discovery.dns_seeds = Some(options.chain_dns_seeds.clone());
        // Core turns the DNS seeds off when IPv4 and IPv6 are both off.
        if !options.dns_seed || dialed_networks.is_empty() {
            discovery.dns_seeds = None;
        }
        if !options.fixed_seeds {
            discovery.fixed_seeds = None;
        }
        discovery.seed_nodes = options.seed_nodes.clone();
        discovery.manual_addresses = manual_addresses;
        if options.fast_feelers {
            discovery.timing.feeler_interval = FAST_FEELER_INTERVAL;
        }
        discovery
    });
    AddressSettings { book, stored_networks, discovery }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn max_connections_split_as_core() {
        let default = ConnectionSlots::for_max_connections(125);
        assert_eq!(
            default,
            ConnectionSlots { full_relay: 8, block_relay: 2, feeler: true, inbound: 114 }
        );
        let small = ConnectionSlots::for_max_connections(9);
        assert_eq!(
            small,
            ConnectionSlots { full_relay: 8, block_relay: 1, feeler: false, inbound: 0 }
        );
        let none = ConnectionSlots::for_max_connections(0);
        assert_eq!(
            none,
            ConnectionSlots { full_relay: 0, block_relay: 0, feeler: false, inbound: 0 }
        );
    }

    #[test]
    fn onlynet_keeps_other_networks_and_dials_ip_only() {
        let mut options = NetworkOptions {
            connect: Vec::new(),
            outbound_disabled: false,
            add_nodes: Vec::new(),
            seed_nodes: Vec::new(),
            listen: false,
            bind: Vec::new(),
            port: 18444,
            max_connections: 125,
            only_networks: Vec::new(),
            dns_seed: true,
            fixed_seeds: true,
            chain_dns_seeds: Vec::new(),
            v2_transport: true,
            blocks_only: false,
            peer_block_spent_coins: false,
            whitelist: Default::default(),
            eviction_loopback_groups: false,
            loopback_discouraged: false,
            fast_feelers: false,
        };
        let (stored, dialed) = only_networks(&options);
        assert_eq!((stored, dialed), (NetworkSet::ALL, NetworkSet::DIALABLE));
        assert!(only_network_warnings(&options).is_empty());
        options.only_networks = vec!["onion".to_owned(), "ipv6".to_owned()];
        let (stored, dialed) = only_networks(&options);
        assert!(stored.contains(AddressNetwork::Onion) && !stored.contains(AddressNetwork::Ipv4));
        assert_eq!(dialed, NetworkSet::of(&[AddressNetwork::Ipv6]));
        let warnings = only_network_warnings(&options);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("-onlynet=onion: Ibex cannot connect over onion yet"));
        options.only_networks = vec!["i2p".to_owned()];
        assert_eq!(only_network_warnings(&options).len(), 2);
        let book = Arc::new(AddressBook::new(ibex_p2p::addrman::AddressManager::new(
            ibex_p2p::addrman::AddressPolicy::default(),
            &[0; 32],
        )));
        let settings = address_settings(&options, &Params::regtest(), book, Vec::new());
        let discovery = settings.discovery.unwrap();
        assert!(discovery.dialed_networks.is_empty() && discovery.dns_seeds.is_none());
    }

    #[test]
    fn addresses_take_the_default_port_when_they_name_none() {
        let with_port = resolve("-connect", "127.0.0.1:18555", 18444).unwrap();
        assert_eq!(with_port, "127.0.0.1:18555".parse().unwrap());
        let without = resolve("-connect", "127.0.0.1", 18444).unwrap();
        assert_eq!(without, "127.0.0.1:18444".parse().unwrap());
        let ipv6 = resolve("-connect", "[::1]", 18444).unwrap();
        assert_eq!(ipv6, "[::1]:18444".parse().unwrap());
        assert!(resolve("-connect", "not a host name!", 18444).is_err());
    }
}
