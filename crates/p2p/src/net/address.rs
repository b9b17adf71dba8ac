//! Core's address classes that decide what goes in `version` and who may
//! be discouraged (netaddress.cpp: `IsLocal`, `IsRoutable`), for IPv4 and
//! IPv6 (the only networks this layer connects over).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::messages::address::ServiceAddress;
use crate::services::ServiceFlags;

/// The address as Core compares addresses: an IPv4-mapped IPv6 address
/// (`::ffff:a.b.c.d`, what a dual-stack listener reports) is IPv4.
pub fn canonical_ip(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

/// `ip:port` as Core writes a service (`ToStringAddrPort`): IPv4-mapped
/// addresses as IPv4, IPv6 in brackets.
pub fn address_text(address: SocketAddr) -> String {
    SocketAddr::new(canonical_ip(address.ip()), address.port()).to_string()
}

/// Core's `CNetAddr::IsLocal`: 127.0.0.0/8, 0.0.0.0/8 or `::1`. Core never
/// discourages such addresses (all local peers would share one).
pub fn is_local(ip: IpAddr) -> bool {
    match canonical_ip(ip) {
        IpAddr::V4(v4) => v4.octets()[0] == 127 || v4.octets()[0] == 0,
        IpAddr::V6(v6) => v6 == Ipv6Addr::LOCALHOST,
    }
}

/// Whether a misbehaving peer at `ip` is spared discouragement as local
/// (Core's `MaybeDiscourageAndDisconnect` checks `IsLocal`). With
/// `loopback_discouraged` (regtest's `-test=discourageloopback`, a test
/// seam for playing many hosts from one machine) only `127.0.0.1`, `::1`
/// and 0.0.0.0/8 stay local; other loopback addresses are punished as
/// routable ones would be.
pub fn spared_as_local(ip: IpAddr, loopback_discouraged: bool) -> bool {
    if loopback_discouraged {
        if let IpAddr::V4(v4) = canonical_ip(ip) {
            if v4.is_loopback() {
                return v4 == Ipv4Addr::LOCALHOST;
            }
        }
    }
    is_local(ip)
}

/// Core's `CNetAddr::IsRoutable` for IPv4 and IPv6: valid, and in none of
/// the private, link-local, shared, documentation, benchmarking, ORCHID
/// or local ranges.
pub fn is_routable(ip: IpAddr) -> bool {
    if is_local(ip) {
        return false;
    }
    match canonical_ip(ip) {
        IpAddr::V4(v4) => is_routable_v4(v4),
        IpAddr::V6(v6) => is_routable_v6(v6),
    }
}

fn is_routable_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let invalid = ip.is_unspecified() || ip.is_broadcast();
    let rfc1918 = a == 10 || (a == 192 && b == 168) || (a == 172 && (16..=31).contains(&b));
    let rfc2544 = a == 198 && (b == 18 || b == 19);
    let rfc3927 = a == 169 && b == 254;
    let rfc6598 = a == 100 && (64..=127).contains(&b);
    let rfc5737 = (a == 192 && b == 0 && c == 2)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113);
    !(invalid || rfc1918 || rfc2544 || rfc3927 || rfc6598 || rfc5737)
}

fn is_routable_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let invalid = ip.is_unspecified() || (segments[0] == 0x2001 && segments[1] == 0x0db8);
    // fe80::/64 (RFC 4862), fc00::/7 (RFC 4193), 2001:10::/28 (RFC 4843),
    // 2001:20::/28 (RFC 7343).
    let rfc4862 = segments[0] == 0xfe80 && segments[1..4] == [0, 0, 0];
    let rfc4193 = segments[0] & 0xfe00 == 0xfc00;
    let rfc4843 = segments[0] == 0x2001 && segments[1] & 0xfff0 == 0x0010;
    let rfc7343 = segments[0] == 0x2001 && segments[1] & 0xfff0 == 0x0020;
    !(invalid || rfc4862 || rfc4193 || rfc4843 || rfc7343)
}

/// The receiver field of our `version` (Core's `PushNodeVersion`): the
/// peer's address if routable, else all zeros, with the services we know
/// it has (none, for `-connect` and inbound peers).
pub fn receiver_address(peer: SocketAddr) -> ServiceAddress {
    if !is_routable(peer.ip()) {
        return ServiceAddress::default();
    }
    ServiceAddress {
        services: ServiceFlags::NONE,
        ip_bytes: ip_bytes(peer.ip()),
        port: peer.port(),
    }
}

/// The 16 bytes of an address in a V1 `CAddress`: IPv4 as `::ffff:a.b.c.d`.
pub fn ip_bytes(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
    }

    #[test]
    fn the_loopback_seam_spares_only_the_first_loopback_address() {
        for local in ["127.0.0.1", "127.0.0.2", "::ffff:127.9.0.1", "::1", "0.0.0.1"] {
            assert!(spared_as_local(ip(local), false), "{local}");
        }
        for spared in ["127.0.0.1", "::ffff:127.0.0.1", "::1", "0.0.0.1"] {
            assert!(spared_as_local(ip(spared), true), "{spared}");
        }
        for punished in ["127.0.0.2", "::ffff:127.9.0.1", "127.255.255.254", "8.8.8.8"] {
            assert!(!spared_as_local(ip(punished), true), "{punished}");
        }
    }

    #[test]
    fn addresses_written_as_core() {
        let v4 = SocketAddr::from(([127, 0, 0, 1], 18444));
        assert_eq!(address_text(v4), "127.0.0.1:18444");
        let mapped: SocketAddr = "[::ffff:8.8.8.8]:8333".parse().unwrap_or(v4);
        assert_eq!(address_text(mapped), "8.8.8.8:8333");
        let v6: SocketAddr = "[2a01::1]:8333".parse().unwrap_or(v4);
        assert_eq!(address_text(v6), "[2a01::1]:8333");
    }

    #[test]
    fn local_and_routable_as_core() {
        assert!(
            is_local(ip("127.0.0.1")) && is_local(ip("::1")) && is_local(ip("::ffff:127.0.0.2"))
        );
        assert!(!is_local(ip("8.8.8.8")));
        for private in [
            "10.1.2.3",
            "192.168.1.1",
            "172.20.0.1",
            "169.254.1.1",
            "100.64.0.1",
            "fe80::1",
            "fd00::1",
            "0.0.0.0",
            "127.0.0.1",
            "2001:db8::1",
        ] {
            assert!(!is_routable(ip(private)), "{private}");
        }
        for public in ["8.8.8.8", "172.32.0.1", "2a01:4f8::1", "::ffff:1.1.1.1"] {
            assert!(is_routable(ip(public)), "{public}");
        }
    }

    #[test]
    fn receiver_is_zero_for_unroutable_peers() {
        let loopback: SocketAddr =
            "127.0.0.1:8333".parse().unwrap_or(SocketAddr::from(([0; 4], 0)));
        assert_eq!(receiver_address(loopback), ServiceAddress::default());
        let public: SocketAddr = "1.2.3.4:8333".parse().unwrap_or(loopback);
        let receiver = receiver_address(public);
        assert_eq!(receiver.port, 8333);
        assert_eq!(&receiver.ip_bytes[10..], &[0xff, 0xff, 1, 2, 3, 4]);
    }
}
