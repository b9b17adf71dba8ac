//! [`PeerAddress`]: a peer's address as the address manager keeps it (a
//! BIP155 network, the address bytes, a port), read from `addr` (V1) and
//! `addrv2` (BIP155) entries and written back, with Core's validity and
//! routability rules (netaddress.cpp: `IsValid`, `IsRoutable`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::messages::address::{NetworkAddress, ServiceAddress};
use crate::net::address::is_routable;
use crate::services::ServiceFlags;

/// The most address bytes of any network kept (TORv3 and I2P: 32).
pub const PEER_ADDRESS_BYTES_MAX: usize = 32;
/// The IPv4-mapped IPv6 prefix (`::ffff:0:0/96`).
const IPV4_IN_IPV6_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];
/// CJDNS addresses all start with this byte (`fc00::/8`).
const CJDNS_PREFIX: u8 = 0xfc;

/// The networks an address can be on: BIP155's, without TORv2 (which Core
/// no longer reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AddressNetwork {
    /// IPv4, 4 bytes.
    Ipv4,
    /// IPv6, 16 bytes.
    Ipv6,
    /// Tor v3 onion services, a 32-byte public key.
    Onion,
    /// I2P, a 32-byte destination hash.
    I2p,
    /// CJDNS, 16 bytes in `fc00::/8`.
    Cjdns,
}

impl AddressNetwork {
    /// Every network, in BIP155's order.
    pub const ALL: [AddressNetwork; 5] = [
        AddressNetwork::Ipv4,
        AddressNetwork::Ipv6,
        AddressNetwork::Onion,
        AddressNetwork::I2p,
        AddressNetwork::Cjdns,
    ];

    /// Core's name (`-onlynet`, `getpeerinfo`'s `network`).
    pub fn name(self) -> &'static str {
        match self {
            AddressNetwork::Ipv4 => "ipv4",
            AddressNetwork::Ipv6 => "ipv6",
            AddressNetwork::Onion => "onion",
            AddressNetwork::I2p => "i2p",
            AddressNetwork::Cjdns => "cjdns",
        }
    }

    /// The network Core's `ParseNetwork` names (any case).
    pub fn from_name(name: &str) -> Option<AddressNetwork> {
        let lower = name.to_ascii_lowercase();
        AddressNetwork::ALL.into_iter().find(|network| network.name() == lower)
    }

    /// Whether Ibex can open connections on it: IPv4 and IPv6 only (no
    /// Tor, I2P or CJDNS proxy support yet).
    pub fn is_dialable(self) -> bool {
        matches!(self, AddressNetwork::Ipv4 | AddressNetwork::Ipv6)
    }

    /// The address length on this network.
    pub fn address_bytes(self) -> usize {
        match self {
            AddressNetwork::Ipv4 => 4,
            AddressNetwork::Ipv6 | AddressNetwork::Cjdns => 16,
            AddressNetwork::Onion | AddressNetwork::I2p => 32,
        }
    }

    /// The BIP155 network id.
    pub fn bip155_id(self) -> u8 {
        match self {
            AddressNetwork::Ipv4 => NetworkAddress::IPV4_NETWORK_ID,
            AddressNetwork::Ipv6 => NetworkAddress::IPV6_NETWORK_ID,
            AddressNetwork::Onion => NetworkAddress::TOR_V3_NETWORK_ID,
            AddressNetwork::I2p => NetworkAddress::I2P_NETWORK_ID,
            AddressNetwork::Cjdns => NetworkAddress::CJDNS_NETWORK_ID,
        }
    }

    /// The network with BIP155 id `id`, if kept.
    pub fn from_bip155_id(id: u8) -> Option<AddressNetwork> {
        AddressNetwork::ALL.into_iter().find(|network| network.bip155_id() == id)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of networks (`-onlynet`'s, or those dialed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NetworkSet(u8);

impl NetworkSet {
    /// No network.
    pub const EMPTY: NetworkSet = NetworkSet(0);
    /// Every network.
    pub const ALL: NetworkSet = NetworkSet(0b1_1111);
    /// IPv4 and IPv6, the networks Ibex dials.
    pub const DIALABLE: NetworkSet = NetworkSet(0b11);

    /// The set of `networks`.
    pub fn of(networks: &[AddressNetwork]) -> NetworkSet {
        NetworkSet(networks.iter().fold(0, |bits, network| bits | network.bit()))
    }

    /// Whether `network` is in the set.
    pub fn contains(self, network: AddressNetwork) -> bool {
        self.0 & network.bit() != 0
    }

    /// The networks in both sets.
    pub fn intersection(self, other: NetworkSet) -> NetworkSet {
        NetworkSet(self.0 & other.0)
    }

    /// Whether the set holds no network.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The networks in the set, in BIP155's order.
    pub fn networks(self) -> impl Iterator<Item = AddressNetwork> {
        AddressNetwork::ALL.into_iter().filter(move |network| self.contains(*network))
    }
}

/// What addresses the manager accepts besides Core's routable ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AddressPolicy {
    /// Accept loopback addresses (`127.0.0.0/8`, `::1`), and group them by
    /// port so that several local nodes count as distinct peers. Regtest
    /// only, for tests on one machine: Core's address manager takes
    /// routable addresses alone on every network.
    pub loopback_allowed: bool,
}

/// A peer's address: network, address bytes (zero after the network's
/// length) and port.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerAddress {
    network: AddressNetwork,
    bytes: [u8; PEER_ADDRESS_BYTES_MAX],
    port: u16,
}

impl PeerAddress {
    /// `bytes` on `network` with `port`; `None` unless `bytes` has the
    /// network's length.
    pub fn new(network: AddressNetwork, bytes: &[u8], port: u16) -> Option<PeerAddress> {
        if bytes.len() != network.address_bytes() {
            return None;
        }
        let mut stored = [0; PEER_ADDRESS_BYTES_MAX];
        stored[..bytes.len()].copy_from_slice(bytes);
        Some(PeerAddress { network, bytes: stored, port })
    }

    /// A socket address; an IPv4-mapped IPv6 address is IPv4 (Core's view).
    pub fn from_socket_address(address: SocketAddr) -> PeerAddress {
        let port = address.port();
        let mut bytes = [0; PEER_ADDRESS_BYTES_MAX];
        match address.ip().to_canonical() {
            IpAddr::V4(v4) => {
                bytes[..4].copy_from_slice(&v4.octets());
                PeerAddress { network: AddressNetwork::Ipv4, bytes, port }
            }
            IpAddr::V6(v6) => {
                bytes[..16].copy_from_slice(&v6.octets());
                PeerAddress { network: AddressNetwork::Ipv6, bytes, port }
            }
        }
    }

    /// An `addr` entry's address (Core's `SetLegacyIPv6`): the IPv4-mapped
    /// prefix is IPv4, everything else IPv6 (the old TORv2 and internal
    /// prefixes fall in `fc00::/7`, which is never routable).
    pub fn from_v1(address: &ServiceAddress) -> PeerAddress {
        let ip = Ipv6Addr::from(address.ip_bytes);
        PeerAddress::from_socket_address(SocketAddr::new(IpAddr::V6(ip), address.port))
    }

    /// An `addrv2` entry's address, `None` for a network not kept or an
    /// address Core reads as invalid (an IPv6 address with the IPv4-mapped
    /// prefix: BIP155 sends those as IPv4).
    pub fn from_v2(address: &NetworkAddress, port: u16) -> Option<PeerAddress> {
        let network = AddressNetwork::from_bip155_id(address.network_id())?;
        if matches!(address, NetworkAddress::Unknown { .. }) {
            return None;
        }
        let bytes = address.address_bytes();
        if network == AddressNetwork::Ipv6 && bytes.starts_with(&IPV4_IN_IPV6_PREFIX) {
            return None;
        }
        PeerAddress::new(network, bytes, port)
    }

    /// The network.
    pub fn network(&self) -> AddressNetwork {
        self.network
    }

    /// The address bytes (the network's length).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.network.address_bytes()]
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The IP address, for IPv4 and IPv6.
    pub fn ip(&self) -> Option<IpAddr> {
        match self.network {
            AddressNetwork::Ipv4 => {
                let [a, b, c, d, ..] = self.bytes;
                Some(IpAddr::V4(Ipv4Addr::new(a, b, c, d)))
            }
            AddressNetwork::Ipv6 => {
                let mut octets = [0; 16];
                octets.copy_from_slice(&self.bytes[..16]);
                Some(IpAddr::V6(Ipv6Addr::from(octets)))
            }
            _ => None,
        }
    }

    /// The socket address to dial, for IPv4 and IPv6.
    pub fn socket_address(&self) -> Option<SocketAddr> {
        self.ip().map(|ip| SocketAddr::new(ip, self.port))
    }

    /// Whether it is a loopback address (`127.0.0.0/8`, `::1`).
    pub fn is_loopback(&self) -> bool {
        self.ip().is_some_and(|ip| ip.is_loopback())
    }

    /// Core's `IsValid() && IsRoutable()`, or a loopback address when
    /// `policy` allows them.
    pub fn is_acceptable(&self, policy: AddressPolicy) -> bool {
        if policy.loopback_allowed && self.is_loopback() {
            return true;
        }
        match self.ip() {
            Some(ip) => is_routable(ip),
            // Onion and I2P addresses are keys: all valid and routable.
            None if self.network == AddressNetwork::Cjdns => self.bytes[0] == CJDNS_PREFIX,
            None => true,
        }
    }

    /// The `addr` (V1) form, for IPv4 and IPv6 only.
    pub fn to_v1(&self, services: ServiceFlags) -> Option<ServiceAddress> {
        let ip_bytes = match self.ip()? {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        };
        Some(ServiceAddress { services, ip_bytes, port: self.port })
    }

    /// The `addrv2` (BIP155) form.
    pub fn to_v2(&self) -> NetworkAddress {
        let bytes = self.bytes();
        let mut wide = [0; 32];
        wide.copy_from_slice(&self.bytes);
        let mut sixteen = [0; 16];
        sixteen.copy_from_slice(&self.bytes[..16]);
        match self.network {
            AddressNetwork::Ipv4 => NetworkAddress::Ipv4([bytes[0], bytes[1], bytes[2], bytes[3]]),
            AddressNetwork::Ipv6 => NetworkAddress::Ipv6(sixteen),
            AddressNetwork::Cjdns => NetworkAddress::Cjdns(sixteen),
            AddressNetwork::Onion => NetworkAddress::TorV3(wide),
            AddressNetwork::I2p => NetworkAddress::I2p(wide),
        }
    }
}

/// `1.2.3.4:8333`, `[2001:db8::1]:8333`, or `onion:<hex>:port` for the
/// networks shown here without their own encodings.
impl fmt::Display for PeerAddress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(address) = self.socket_address() {
            return write!(formatter, "{address}");
        }
        write!(formatter, "{}:", self.network.name())?;
        for byte in self.bytes() {
            write!(formatter, "{byte:02x}")?;
        }
        write!(formatter, ":{}", self.port)
    }
}

impl fmt::Debug for PeerAddress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "PeerAddress({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(text: &str) -> SocketAddr {
        text.parse().unwrap_or(SocketAddr::from(([0; 4], 0)))
    }

    #[test]
    fn v1_and_v2_forms_round_trip() {
        let v4 = PeerAddress::from_socket_address(socket("8.8.4.4:8333"));
        assert_eq!(v4.network(), AddressNetwork::Ipv4);
        let v1 = v4.to_v1(ServiceFlags::NETWORK);
        assert_eq!(v1.map(|entry| PeerAddress::from_v1(&entry)), Some(v4));
        assert_eq!(PeerAddress::from_v2(&v4.to_v2(), 8333), Some(v4));
        let v6 = PeerAddress::from_socket_address(socket("[2a01:4f8::1]:18444"));
        assert_eq!(v6.to_string(), "[2a01:4f8::1]:18444");
        assert_eq!(PeerAddress::from_v2(&v6.to_v2(), 18444), Some(v6));
        let onion = PeerAddress::new(AddressNetwork::Onion, &[7; 32], 9050);
        let onion = onion.unwrap_or(v4);
        assert_eq!(PeerAddress::from_v2(&onion.to_v2(), 9050), Some(onion));
        assert_eq!(onion.to_v1(ServiceFlags::NONE), None);
        assert!(PeerAddress::new(AddressNetwork::Onion, &[7; 16], 1).is_none());
    }

    #[test]
    fn mapped_ipv4_in_addrv2_is_invalid_as_in_core() {
        let mut mapped = [0u8; 16];
        mapped[10..12].copy_from_slice(&[0xff, 0xff]);
        mapped[12..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(PeerAddress::from_v2(&NetworkAddress::Ipv6(mapped), 1), None);
        let unknown = NetworkAddress::Unknown { network_id: 9, address_bytes: vec![1; 4] };
        assert_eq!(PeerAddress::from_v2(&unknown, 1), None);
    }

    #[test]
    fn loopback_only_where_the_policy_allows_it() {
        let loopback = PeerAddress::from_socket_address(socket("127.0.0.1:18444"));
        assert!(!loopback.is_acceptable(AddressPolicy::default()));
        assert!(loopback.is_acceptable(AddressPolicy { loopback_allowed: true }));
        let private = PeerAddress::from_socket_address(socket("192.168.1.1:18444"));
        assert!(!private.is_acceptable(AddressPolicy { loopback_allowed: true }));
        let cjdns = PeerAddress::new(AddressNetwork::Cjdns, &[0xfc; 16], 1);
        assert!(cjdns.is_some_and(|address| address.is_acceptable(AddressPolicy::default())));
        let not_cjdns = PeerAddress::new(AddressNetwork::Cjdns, &[0xfd; 16], 1);
        assert!(not_cjdns.is_some_and(|address| !address.is_acceptable(AddressPolicy::default())));
    }

    #[test]
    fn network_sets() {
        let set = NetworkSet::of(&[AddressNetwork::Ipv4, AddressNetwork::Onion]);
        assert!(set.contains(AddressNetwork::Onion) && !set.contains(AddressNetwork::Ipv6));
        let dialed = set.intersection(NetworkSet::DIALABLE);
        assert_eq!(dialed.networks().collect::<Vec<_>>(), vec![AddressNetwork::Ipv4]);
        assert_eq!(AddressNetwork::from_name("IPv6"), Some(AddressNetwork::Ipv6));
        assert!(NetworkSet::ALL.networks().count() == 5 && NetworkSet::EMPTY.is_empty());
    }
}
