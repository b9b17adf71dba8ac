//! The network methods that change the node's peers and bans, and list
//! added nodes and known addresses: `addnode`, `disconnectnode`,
//! `getaddednodeinfo`, `getnodeaddresses`, `setban`, `listbanned`,
//! `clearbanned`, as Core's `rpc/net.cpp` does them over `CConnman` and
//! `BanMan`.
//!
//! Ibex's bans are per address (no subnets: the RPC refuses wider ones)
//! and in memory (no `banlist.json`); `getnodeaddresses` leaves out Tor
//! addresses (their names need SHA3-256, which Ibex does not carry).

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use ibex_p2p::addrman::{AddressCandidate, AddressNetwork, NetworkSet, PeerAddress};
use ibex_p2p::net::address::{address_text, canonical_ip, is_routable};
use ibex_p2p::net::{BanReason, DisconnectReason};
use ibex_rpc::backend::{
    AddNodeCommand, AddedNodeConnection, AddedNodeInfo, BackendError, BannedSubnet,
    NetworkRequestError, NodeAddress, PeerSelector,
};

use super::{epoch_seconds, NetworkRpc};
use crate::p2p_node::added_nodes::{refusal, resolve};

/// RFC 4648's Base32 alphabet, lower case (Core's I2P names).
const BASE32_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// An address's text as Core's `ToStringAddr` writes it: the IP (CJDNS
/// as IPv6), an I2P destination as `<base32>.b32.i2p`; `None` for Tor.
fn address_name(address: &PeerAddress) -> Option<String> {
    match address.network() {
        AddressNetwork::Ipv4 | AddressNetwork::Ipv6 => address.ip().map(|ip| ip.to_string()),
        AddressNetwork::Cjdns => {
            let octets: [u8; 16] = address.bytes().try_into().ok()?;
            Some(std::net::Ipv6Addr::from(octets).to_string())
        }
        AddressNetwork::I2p => Some(format!("{}.b32.i2p", base32(address.bytes()))),
        AddressNetwork::Onion => None,
    }
}

/// Unpadded lower-case Base32 (Core's `EncodeBase32(.., false)`).
fn base32(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let mut buffer: u32 = 0;
    let mut bits = 0;
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            text.push(char::from(BASE32_ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        text.push(char::from(BASE32_ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    text
}

/// Core's network class of a known address (`GetNetClass`): IP addresses
/// that are not publicly routable have their own name.
fn address_network_name(address: &PeerAddress) -> &'static str {
    match address.ip() {
        Some(ip) if !is_routable(ip) => "not_publicly_routable",
        _ => address.network().name(),
    }
}

fn node_address(candidate: &AddressCandidate) -> Option<NodeAddress> {
    Some(NodeAddress {
        time_seconds: candidate.time_seconds,
        services: candidate.services.bits(),
        address: address_name(&candidate.address)?,
        port: candidate.address.port(),
        network: address_network_name(&candidate.address).to_owned(),
    })
}

fn same_address(left: SocketAddr, right: SocketAddr) -> bool {
    canonical_ip(left.ip()) == canonical_ip(right.ip()) && left.port() == right.port()
}

impl NetworkRpc {
    /// `addnode`: `add` keeps the node connected, `remove` stops that,
    /// `onetry` tries one connection (nothing when the text names no
    /// address, as Core's silent failure).
    pub fn add_node(
        &self,
        node: &str,
        command: AddNodeCommand,
        v2_transport: Option<bool>,
    ) -> Result<(), BackendError> {
        let node_v2 = self.handle.v2_transport();
        if v2_transport == Some(true) && !node_v2 {
            return Err(NetworkRequestError::V2TransportDisabled.into());
        }
        match command {
            AddNodeCommand::Add => {
                let address = resolve(node, self.default_port);
                self.added.add(&self.handle, node, address)
            }
            AddNodeCommand::Remove => self.added.remove(node),
            AddNodeCommand::OneTry => {
                let Some(address) = resolve(node, self.default_port) else { return Ok(()) };
                let v2 = v2_transport.unwrap_or(node_v2);
                self.handle.try_once(address, v2).map_err(refusal)
            }
        }
    }

    /// `disconnectnode`: the peer whose address text (as `getpeerinfo`
    /// writes it) or id is given; Core's -29 when none.
    pub fn disconnect_peer(&self, selector: &PeerSelector) -> Result<(), BackendError> {
        let peer = self.handle.peers().into_iter().find(|peer| match selector {
            PeerSelector::Address(text) => address_text(peer.address) == *text,
            PeerSelector::Id(id) => i64::try_from(peer.id.0).is_ok_and(|ours| ours == *id),
        });
        let Some(peer) = peer else { return Err(NetworkRequestError::NodeNotConnected.into()) };
        self.handle
            .disconnect(peer.id, DisconnectReason::Manual)
            .map_err(|_| NetworkRequestError::NodeNotConnected.into())
    }

    /// `getaddednodeinfo`: each added node and, when connected, the
    /// connection to its address (Core matches a numeric address against
    /// every peer's, either direction).
    pub fn added_nodes(&self) -> Vec<AddedNodeInfo> {
        let peers = self.handle.peers();
        self.added
            .list()
            .into_iter()
            .map(|(text, address)| {
                let connection = address.and_then(|address| {
                    let peer = peers.iter().find(|peer| same_address(peer.address, address))?;
                    Some(AddedNodeConnection {
                        address: address_text(peer.address),
                        inbound: peer.inbound,
                    })
                });
                AddedNodeInfo { added_node: text, connection }
            })
            .collect()
    }

    /// `getnodeaddresses`: up to `count_max` (all for 0) addresses of
    /// `network` (any for `None`), random, none terrible.
    pub fn node_addresses(
        &self,
        count_max: usize,
        network: Option<&str>,
    ) -> Result<Vec<NodeAddress>, BackendError> {
        let networks = match network {
            Some(name) => {
                let Some(network) = AddressNetwork::from_name(name) else {
                    return Ok(Vec::new());
                };
                NetworkSet::of(&[network])
            }
            None => NetworkSet::ALL,
        };
        let wanted = if count_max == 0 { usize::MAX } else { count_max };
        let now = epoch_seconds(SystemTime::now());
        let sample = self.book.lock().sample(wanted, 100, networks, now);
        Ok(sample.iter().filter_map(node_address).collect())
    }

    /// `setban add`: Core's -23 when a manual ban is in force already.
    pub fn ban(&self, address: IpAddr, until_seconds: i64) -> Result<(), BackendError> {
        let address = canonical_ip(address);
        if self.handle.manual_ban(address).is_some() {
            return Err(NetworkRequestError::AlreadyBanned.into());
        }
        let now = epoch_seconds(SystemTime::now());
        let seconds = u64::try_from(until_seconds.saturating_sub(now)).unwrap_or(0);
        self.handle.ban(address, BanReason::Manual, Duration::from_secs(seconds));
        Ok(())
    }

    /// `setban remove`: Core's -30 unless a manual ban is in force.
    pub fn unban(&self, address: IpAddr) -> Result<(), BackendError> {
        let address = canonical_ip(address);
        if self.handle.manual_ban(address).is_none() {
            return Err(NetworkRequestError::NotBanned.into());
        }
        self.handle.unban(address);
        Ok(())
    }

    /// `listbanned`: the manual bans in force, by address.
    pub fn banned(&self) -> Vec<BannedSubnet> {
        let mut bans = self.manual_bans();
        bans.sort_by_key(|ban| ban.0);
        bans.into_iter()
            .map(|(address, created, until)| {
                let prefix_bits = if address.is_ipv4() { 32 } else { 128 };
                BannedSubnet {
                    subnet: format!("{address}/{prefix_bits}"),
                    created_seconds: epoch_seconds(created),
                    until_seconds: epoch_seconds(until),
                }
            })
            .collect()
    }

    /// `clearbanned`: lifts every manual ban (discouragements stay, as
    /// Core's separate discouragement filter does).
    pub fn clear_bans(&self) {
        self.handle.clear_bans();
    }

    /// The manual bans in force: address, start, end.
    fn manual_bans(&self) -> Vec<(IpAddr, SystemTime, SystemTime)> {
        self.handle
            .banned()
            .into_iter()
            .filter(|ban| ban.reason == BanReason::Manual)
            .map(|ban| (canonical_ip(ban.address), ban.created, ban.until))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_names_as_core_writes_them() {
        assert_eq!(base32(b"foobar"), "mzxw6ytboi");
        assert_eq!(base32(&[0xff]), "74");
        assert_eq!(base32(&[]), "");
        let i2p = PeerAddress::new(AddressNetwork::I2p, &[0u8; 32], 0);
        let name = i2p.as_ref().and_then(address_name).unwrap_or_default();
        assert_eq!(name, format!("{}.b32.i2p", "a".repeat(52)));
        let v4 = PeerAddress::from_socket_address(SocketAddr::from(([8, 8, 4, 4], 8333)));
        assert_eq!(address_name(&v4).as_deref(), Some("8.8.4.4"));
        assert_eq!(address_network_name(&v4), "ipv4");
        let loopback = PeerAddress::from_socket_address(SocketAddr::from(([127, 0, 0, 1], 1)));
        assert_eq!(address_network_name(&loopback), "not_publicly_routable");
        let onion = PeerAddress::new(AddressNetwork::Onion, &[1u8; 32], 9050);
        assert_eq!(onion.as_ref().and_then(address_name), None);
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:7".parse().unwrap_or(v4_socket());
        assert!(same_address(mapped, SocketAddr::from(([127, 0, 0, 1], 7))));
        assert!(!same_address(mapped, SocketAddr::from(([127, 0, 0, 1], 8))));
    }

    fn v4_socket() -> SocketAddr {
        SocketAddr::from(([0; 4], 0))
    }
}
