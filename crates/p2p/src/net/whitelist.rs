//! `-whitelist=[permissions@]IP[/prefix]` (Core's
//! `NetWhitelistPermissions::TryParse`): permission flags for peers from
//! an address or network. Core's syntax is taken whole: the permissions
//! `bloomfilter` (or `bloom`), `noban`, `forcerelay`, `relay`, `mempool`,
//! `download`, `addr`, `all`, and the directions `in` and `out` (inbound
//! only when none is named); no `@` means Core's implicit set (`noban`,
//! `mempool`, `relay`). What each does in Ibex, and which have nothing to
//! act on: [`crate::net::permissions`].
//!
//! Bounds: the list is the operator's, checked once at start; a lookup
//! walks it once per connection.

use std::net::IpAddr;

use crate::net::permissions::PeerPermissions;

/// A `-whitelist` value Core refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhitelistError {
    /// A permission Core does not know (Core's "Invalid P2P permission").
    #[error("Invalid P2P permission: '{permission}'")]
    UnknownPermission {
        /// The word given.
        permission: String,
    },
    /// Directions without a permission (Core's "Only direction was set").
    #[error("Only direction was set, no permissions: '{value}'")]
    DirectionOnly {
        /// The whole value.
        value: String,
    },
    /// Not an address or network (Core's "Invalid netmask specified").
    #[error("Invalid netmask specified in -whitelist: '{network}'")]
    InvalidNetwork {
        /// The text after the `@`.
        network: String,
    },
}

/// One `-whitelist` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhitelistEntry {
    network: IpAddr,
    prefix_bits: u8,
    permissions: PeerPermissions,
    /// No `@`: Core's implicit set, added once whatever else matches.
    implicit: bool,
    inbound: bool,
    outbound: bool,
}

impl WhitelistEntry {
    /// Parses one `-whitelist` value.
    pub fn parse(value: &str) -> Result<WhitelistEntry, WhitelistError> {
        let (permissions_text, network_text) = match value.split_once('@') {
            Some((permissions, network)) => (Some(permissions), network),
            None => (None, value),
        };
        let mut permissions = PeerPermissions::NONE;
        let (mut inbound, mut outbound) = (false, false);
        let implicit = permissions_text.is_none();
        for word in permissions_text.into_iter().flat_map(|list| list.split(',')) {
            permissions |= match word {
                "bloomfilter" | "bloom" => PeerPermissions::BLOOM_FILTER,
                "noban" => PeerPermissions::NO_BAN,
                "forcerelay" => PeerPermissions::FORCE_RELAY,
                "mempool" => PeerPermissions::MEMPOOL,
                "download" => PeerPermissions::DOWNLOAD,
                "all" => PeerPermissions::ALL,
                "relay" => PeerPermissions::RELAY,
                "addr" => PeerPermissions::ADDR,
                "in" | "out" | "" => {
                    inbound |= word == "in";
                    outbound |= word == "out";
                    PeerPermissions::NONE
                }
                other => {
                    return Err(WhitelistError::UnknownPermission { permission: other.to_owned() })
                }
            };
        }
        if !inbound && !outbound {
            inbound = true;
        } else if permissions.is_empty() && !implicit {
            return Err(WhitelistError::DirectionOnly { value: value.to_owned() });
        }
        let (network, prefix_bits) = parse_network(network_text)
            .ok_or_else(|| WhitelistError::InvalidNetwork { network: network_text.to_owned() })?;
        Ok(WhitelistEntry { network, prefix_bits, permissions, implicit, inbound, outbound })
    }

    fn matches(&self, address: IpAddr, inbound: bool) -> bool {
        let direction = if inbound { self.inbound } else { self.outbound };
        direction && in_network(address, self.network, self.prefix_bits)
    }
}

/// The `-whitelist` entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Whitelist {
    entries: Vec<WhitelistEntry>,
}

impl Whitelist {
    /// Parses every `-whitelist` value.
    pub fn parse(values: &[String]) -> Result<Whitelist, WhitelistError> {
        let entries: Result<Vec<WhitelistEntry>, WhitelistError> =
            values.iter().map(|value| WhitelistEntry::parse(value)).collect();
        Ok(Whitelist { entries: entries? })
    }

    /// The permissions of a peer at `address` (connected to us when
    /// `inbound`): those of every matching entry, with Core's implicit set
    /// if any matching entry has no `@` (Core's
    /// `AddWhitelistPermissionFlags`).
    pub fn permissions(&self, address: IpAddr, inbound: bool) -> PeerPermissions {
        let address = canonical(address);
        let mut permissions = PeerPermissions::NONE;
        for entry in self.entries.iter().filter(|entry| entry.matches(address, inbound)) {
            permissions |= entry.permissions;
            if entry.implicit {
                permissions |= PeerPermissions::IMPLICIT;
            }
        }
        permissions
    }

    /// Whether a peer at `address` (connected to us when `inbound`) holds
    /// Core's `download` permission.
    pub fn download_permitted(&self, address: IpAddr, inbound: bool) -> bool {
        self.permissions(address, inbound).contains(PeerPermissions::DOWNLOAD)
    }

    /// Whether no entry is given.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        v4 => v4,
    }
}

/// `IP`, `IP/prefix-length` or `IPv4/dotted-netmask` (Core's
/// `LookupSubNet` without host names): the network and its prefix length.
fn parse_network(text: &str) -> Option<(IpAddr, u8)> {
    let (address_text, mask_text) = match text.split_once('/') {
        Some((address, mask)) => (address, Some(mask)),
        None => (text, None),
    };
    let address = canonical(address_text.trim_matches(['[', ']']).parse::<IpAddr>().ok()?);
    let bits_max: u8 = if address.is_ipv4() { 32 } else { 128 };
    let prefix_bits = match mask_text {
        None => bits_max,
        Some(mask) => match (mask.parse::<u8>(), mask.parse::<std::net::Ipv4Addr>()) {
            (Ok(bits), _) if bits <= bits_max => bits,
            (_, Ok(netmask)) if address.is_ipv4() => {
                let mask = u32::from(netmask);
                // A netmask is contiguous ones, then zeros.
                if mask.leading_ones() + mask.trailing_zeros() != 32 {
                    return None;
                }
                u8::try_from(mask.leading_ones()).ok()?
            }
            _ => return None,
        },
    };
    Some((address, prefix_bits))
}

/// Whether `address` lies in `network/prefix_bits`.
fn in_network(address: IpAddr, network: IpAddr, prefix_bits: u8) -> bool {
    let (address, network, width) = match (address, network) {
        (IpAddr::V4(a), IpAddr::V4(n)) => (u128::from(u32::from(a)), u128::from(u32::from(n)), 32),
        (IpAddr::V6(a), IpAddr::V6(n)) => (u128::from(a), u128::from(n), 128),
        _ => return false,
    };
    let host_bits = width - u32::from(prefix_bits);
    if host_bits >= 128 {
        return true;
    }
    address >> host_bits == network >> host_bits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
    }

    #[test]
    fn matching_entries_add_up_with_the_implicit_set() {
        let values =
            ["addr@10.0.0.0/8", "10.1.0.0/16", "bloom,out@10.1.2.3"].map(|value| value.to_owned());
        let list = Whitelist::parse(&values).unwrap_or_default();
        assert_eq!(list.permissions(ip("10.9.9.9"), true), PeerPermissions::ADDR);
        assert_eq!(
            list.permissions(ip("10.1.2.3"), true).names(),
            ["noban", "relay", "mempool", "download", "addr"]
        );
        assert_eq!(list.permissions(ip("10.1.2.3"), false), PeerPermissions::BLOOM_FILTER);
        assert_eq!(list.permissions(ip("11.1.2.3"), true), PeerPermissions::NONE);
    }

    #[test]
    fn core_syntax_and_the_download_permission() {
        let list = |values: &[&str]| {
            Whitelist::parse(&values.iter().map(|value| value.to_string()).collect::<Vec<_>>())
        };
        let download = list(&["download@127.0.0.1"]).unwrap_or_default();
        assert!(download.download_permitted(ip("127.0.0.1"), true));
        assert!(!download.download_permitted(ip("127.0.0.2"), true));
        assert!(!download.download_permitted(ip("127.0.0.1"), false), "inbound only by default");
        let implicit = list(&["10.0.0.0/8"]).unwrap_or_default();
        assert!(implicit.download_permitted(ip("10.1.2.3"), true), "implicit noban");
        let relay = list(&["relay,mempool@10.0.0.0/255.0.0.0"]).unwrap_or_default();
        assert!(!relay.download_permitted(ip("10.1.2.3"), true));
        let both = list(&["noban,in,out@::1"]).unwrap_or_default();
        assert!(both.download_permitted(ip("::1"), false));
        let mapped = list(&["all@192.168.0.0/16"]).unwrap_or_default();
        assert!(mapped.download_permitted(ip("::ffff:192.168.4.5"), true));
        assert_eq!(
            list(&["fly@127.0.0.1"]),
            Err(WhitelistError::UnknownPermission { permission: "fly".to_owned() })
        );
        assert!(matches!(list(&["in@127.0.0.1"]), Err(WhitelistError::DirectionOnly { .. })));
        assert!(matches!(list(&["in,,out@::1"]), Err(WhitelistError::DirectionOnly { .. })));
        for bad in ["download@", "download@1.2.3.4/33", "1.2.3.4/255.0.255.0", "host.example"] {
            assert!(matches!(list(&[bad]), Err(WhitelistError::InvalidNetwork { .. })), "{bad}");
        }
    }
}
