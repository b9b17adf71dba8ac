//! [`NetworkGroup`]: the part of an address an attacker cannot cheaply
//! vary, as Core's `NetGroupManager::GetGroup` defines it without an
//! asmap: IPv4 by /16 (also inside IPv4-mapped, 6to4, Teredo and NAT64
//! IPv6 addresses), IPv6 by /32 (he.net's 2001:470::/32 by /36), Tor and
//! I2P by their first 4 bits, CJDNS by the 4 bits after its constant
//! first byte; all other unroutable addresses share one group. Buckets are
//! chosen by group, and outbound connections go to distinct groups.

use crate::addrman::address::{AddressNetwork, AddressPolicy, PeerAddress};

/// The most bytes a group takes: a class byte and up to 10 bytes (a named
/// source's).
const GROUP_BYTES_MAX: usize = 16;
/// The bytes of a named source's group after its class (Core's internal
/// addresses are 10 bytes of a hash of the name).
const NAMED_GROUP_BYTES: usize = 10;

/// The class byte that starts a group (Core's `Network` numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum GroupClass {
    Unroutable = 0,
    Ipv4 = 1,
    Ipv6 = 2,
    Onion = 3,
    I2p = 4,
    Cjdns = 5,
    Named = 6,
}

/// An address's group: a class byte and a prefix of its bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NetworkGroup {
    bytes: [u8; GROUP_BYTES_MAX],
    length: u8,
}

impl NetworkGroup {
    fn from_parts(class: GroupClass, prefix: &[u8]) -> NetworkGroup {
        let mut bytes = [0; GROUP_BYTES_MAX];
        bytes[0] = class as u8;
        let length = (1 + prefix.len()).min(GROUP_BYTES_MAX);
        bytes[1..length].copy_from_slice(&prefix[..length - 1]);
        NetworkGroup { bytes, length: length as u8 }
    }

    /// The group of `address` under `policy` (loopback addresses, when
    /// allowed, are grouped by port: each local node its own group).
    pub fn of(address: &PeerAddress, policy: AddressPolicy) -> NetworkGroup {
        if policy.loopback_allowed && address.is_loopback() {
            return NetworkGroup::from_parts(GroupClass::Unroutable, &address.port().to_be_bytes());
        }
        if !address.is_acceptable(AddressPolicy::default()) {
            return NetworkGroup::from_parts(GroupClass::Unroutable, &[]);
        }
        let bytes = address.bytes();
        match address.network() {
            AddressNetwork::Ipv4 => NetworkGroup::from_parts(GroupClass::Ipv4, &bytes[..2]),
            AddressNetwork::Ipv6 => match linked_ipv4(bytes) {
                Some(ipv4) => NetworkGroup::from_parts(GroupClass::Ipv4, &ipv4[..2]),
                None if bytes[..4] == [0x20, 0x01, 0x04, 0x70] => {
                    NetworkGroup::from_parts(GroupClass::Ipv6, &prefix_bits(bytes, 36))
                }
                None => NetworkGroup::from_parts(GroupClass::Ipv6, &bytes[..4]),
            },
            AddressNetwork::Onion => {
                NetworkGroup::from_parts(GroupClass::Onion, &prefix_bits(bytes, 4))
            }
            AddressNetwork::I2p => {
                NetworkGroup::from_parts(GroupClass::I2p, &prefix_bits(bytes, 4))
            }
            AddressNetwork::Cjdns => {
                NetworkGroup::from_parts(GroupClass::Cjdns, &prefix_bits(bytes, 12))
            }
        }
    }

    /// The group of a routable IPv4 address starting with `prefix` (its
    /// /16).
    pub fn ipv4_slash16(prefix: [u8; 2]) -> NetworkGroup {
        NetworkGroup::from_parts(GroupClass::Ipv4, &prefix)
    }

    /// The group of a named source (a DNS seed, the fixed seeds): 10 bytes
    /// of the name's SHA-256, as Core makes an internal address of it.
    pub fn named(name: &str) -> NetworkGroup {
        let hash = ibex_primitives::hash::sha256(name.as_bytes());
        NetworkGroup::from_parts(GroupClass::Named, &hash[..NAMED_GROUP_BYTES])
    }

    /// The group's bytes, for hashing and storing.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.length)]
    }

    /// A group read back from its bytes; `None` if too long or empty.
    pub fn from_bytes(bytes: &[u8]) -> Option<NetworkGroup> {
        if bytes.is_empty() || bytes.len() > GROUP_BYTES_MAX {
            return None;
        }
        let mut stored = [0; GROUP_BYTES_MAX];
        stored[..bytes.len()].copy_from_slice(bytes);
        Some(NetworkGroup { bytes: stored, length: bytes.len() as u8 })
    }
}

impl std::fmt::Debug for NetworkGroup {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("NetworkGroup(")?;
        for byte in self.as_bytes() {
            write!(formatter, "{byte:02x}")?;
        }
        formatter.write_str(")")
    }
}

/// The first `bits` bits of `bytes`, the last partial byte's other bits
/// set to one (Core's way of padding a group).
fn prefix_bits(bytes: &[u8], bits: usize) -> Vec<u8> {
    let whole = bits / 8;
    let mut prefix = bytes[..whole].to_vec();
    let rest = bits % 8;
    if rest > 0 {
        prefix.push(bytes[whole] | ((1u8 << (8 - rest)) - 1));
    }
    prefix
}

/// The IPv4 address an IPv6 address carries (Core's `HasLinkedIPv4`):
/// IPv4-mapped (`::ffff:0:0/96`), SIIT (`::ffff:0:0:0/96`), NAT64
/// (`64:ff9b::/96`), 6to4 (`2002::/16`) and Teredo (`2001::/32`, inverted).
fn linked_ipv4(bytes: &[u8]) -> Option<[u8; 4]> {
    let last_four = [bytes[12], bytes[13], bytes[14], bytes[15]];
    let mapped = bytes[..10] == [0; 10] && bytes[10..12] == [0xff, 0xff];
    let siit = bytes[..8] == [0; 8] && bytes[8..12] == [0xff, 0xff, 0, 0];
    let nat64 = bytes[..12] == [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0];
    if mapped || siit || nat64 {
        return Some(last_four);
    }
    if bytes[..2] == [0x20, 0x02] {
        return Some([bytes[2], bytes[3], bytes[4], bytes[5]]);
    }
    if bytes[..4] == [0x20, 0x01, 0, 0] {
        return Some(last_four.map(|byte| !byte));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn group(text: &str, policy: AddressPolicy) -> NetworkGroup {
        let socket: SocketAddr = text.parse().unwrap_or(SocketAddr::from(([0; 4], 0)));
        NetworkGroup::of(&PeerAddress::from_socket_address(socket), policy)
    }

    #[test]
    fn groups_as_core_defines_them() {
        let strict = AddressPolicy::default();
        assert_eq!(group("1.2.3.4:1", strict).as_bytes(), &[1, 1, 2]);
        assert_eq!(group("1.2.200.9:2", strict), group("1.2.3.4:1", strict));
        assert_ne!(group("1.3.3.4:1", strict), group("1.2.3.4:1", strict));
        // 6to4 and Teredo carry an IPv4 address: grouped as that.
        assert_eq!(group("[2002:102:304::1]:1", strict).as_bytes(), &[1, 1, 2]);
        assert_eq!(group("[2001:0:1:2:3:4:fefd:fcfb]:1", strict).as_bytes(), &[1, 1, 2]);
        assert_eq!(group("[2a01:4f8:1:2::1]:1", strict).as_bytes(), &[2, 0x2a, 0x01, 0x04, 0xf8]);
        // he.net by /36: the fifth byte's low four bits padded with ones.
        assert_eq!(
            group("[2001:470:abcd::1]:1", strict).as_bytes(),
            &[2, 0x20, 0x01, 0x04, 0x70, 0xaf]
        );
        // Every unroutable address in one group.
        assert_eq!(group("10.0.0.1:1", strict), group("192.168.0.1:2", strict));
        assert_eq!(group("127.0.0.1:1", strict).as_bytes(), &[0]);
        let onion = PeerAddress::new(AddressNetwork::Onion, &[0x5a; 32], 1);
        let onion = onion.map(|address| NetworkGroup::of(&address, strict));
        assert_eq!(onion.map(|group| group.as_bytes().to_vec()), Some(vec![3, 0x5f]));
    }

    #[test]
    fn loopback_nodes_are_distinct_groups_on_regtest() {
        let regtest = AddressPolicy { loopback_allowed: true };
        assert_ne!(group("127.0.0.1:18444", regtest), group("127.0.0.1:18445", regtest));
        assert_eq!(group("127.0.0.1:18444", regtest), group("127.0.0.2:18444", regtest));
        assert_ne!(NetworkGroup::named("seed.a"), NetworkGroup::named("seed.b"));
        let named = NetworkGroup::named("seed.a");
        assert_eq!(NetworkGroup::from_bytes(named.as_bytes()), Some(named));
    }
}
