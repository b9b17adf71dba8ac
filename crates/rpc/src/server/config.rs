//! What the node tells the server: [`ServerConfig`], filled from Core's
//! options (`-rpcbind`, `-rpcallowip`, `-rpcuser`, `-rpcpassword`,
//! `-rpcauth`, `-rpccookiefile`, `-rpcthreads`, `-rpcworkqueue`,
//! `-rpcservertimeout`, `-rest`), and the option parsing Core does for the
//! first two ([`Subnet::parse`], [`rpc_bind_addresses`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ibex_primitives::Network;

/// Core's `-rpcthreads` default (`DEFAULT_HTTP_THREADS`, 16 since v29).
pub const RPC_THREADS_DEFAULT: usize = 16;
/// Core's `-rpcworkqueue` default (`DEFAULT_HTTP_WORKQUEUE`, 64 since v29).
pub const RPC_WORK_QUEUE_DEPTH_DEFAULT: usize = 64;
/// Core's `-rpcservertimeout` default, seconds.
pub const RPC_SERVER_TIMEOUT_SECONDS_DEFAULT: u64 = 30;
/// Core's request body limit (`MAX_SIZE`, `evhttp_set_max_body_size`).
pub const REQUEST_BODY_BYTES_MAX_DEFAULT: usize = 32 * 1024 * 1024;
/// Core's limit on the request line and headers (`MAX_HEADERS_SIZE`).
pub const REQUEST_HEADER_BYTES_MAX: usize = 8192;
/// Open connections at once; accepting pauses at the limit (libevent has
/// none; a bound keeps file descriptors and buffers bounded).
pub const CONNECTIONS_MAX_DEFAULT: usize = 1024;

/// Why an option could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `-rpcallowip` is not an address, `address/prefix` or
    /// `address/netmask`.
    #[error("invalid -rpcallowip subnet specification: {given}")]
    InvalidSubnet {
        /// The text given.
        given: String,
    },
    /// `-rpcbind` is not `host`, `host:port` or `[host]:port`.
    #[error("invalid -rpcbind address: {given}")]
    InvalidBind {
        /// The text given.
        given: String,
    },
}

/// An `-rpcallowip` subnet: an address and how many leading bits match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    network: IpAddr,
    prefix_bits: u8,
}

impl Subnet {
    /// The subnets Core always allows: 127.0.0.0/8 and ::1.
    pub const LOOPBACK: [Subnet; 2] = [
        Subnet { network: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)), prefix_bits: 8 },
        Subnet { network: IpAddr::V6(Ipv6Addr::LOCALHOST), prefix_bits: 128 },
    ];

    /// Parses Core's forms (`LookupSubNet`, numeric only): `1.2.3.4`,
    /// `1.2.3.4/24`, `1.2.3.4/255.255.255.0`, `::/0`, `fe80::/10`. A netmask
    /// must be contiguous.
    pub fn parse(text: &str) -> Result<Subnet, ConfigError> {
        let invalid = || ConfigError::InvalidSubnet { given: text.to_owned() };
        let (address, suffix) = match text.split_once('/') {
            Some((address, suffix)) => (address, Some(suffix)),
            None => (text, None),
        };
        let network: IpAddr = address.parse().map_err(|_| invalid())?;
        let width = address_bits(network);
        let prefix_bits = match suffix {
            None => width,
            Some(suffix) if !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit()) => {
                suffix.parse::<u8>().ok().filter(|bits| *bits <= width).ok_or_else(invalid)?
            }
            Some(suffix) => {
                let mask: IpAddr = suffix.parse().map_err(|_| invalid())?;
                contiguous_prefix(network, mask).ok_or_else(invalid)?
            }
        };
        Ok(Subnet { network, prefix_bits })
    }

    /// Whether `address` is in the subnet (an IPv4-mapped IPv6 address is
    /// taken as the IPv4 address, as Core's `CNetAddr` stores it).
    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address.to_canonical()) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix_bits)
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                prefix_matches(&network.octets(), &address.octets(), self.prefix_bits)
            }
            _ => false,
        }
    }
}

fn address_bits(address: IpAddr) -> u8 {
    if address.is_ipv4() {
        32
    } else {
        128
    }
}

/// The prefix length of a contiguous netmask of `network`'s family.
fn contiguous_prefix(network: IpAddr, mask: IpAddr) -> Option<u8> {
    let mask_bits: u128 = match (network, mask) {
        (IpAddr::V4(_), IpAddr::V4(mask)) => u128::from(u32::from(mask)) << 96,
        (IpAddr::V6(_), IpAddr::V6(mask)) => u128::from(mask),
        _ => return None,
    };
    let ones = mask_bits.leading_ones();
    let contiguous = mask_bits.checked_shl(ones).unwrap_or(0) == 0;
    let width = u32::from(address_bits(network));
    (contiguous && ones <= width).then_some(ones as u8)
}

fn prefix_matches(network: &[u8], address: &[u8], prefix_bits: u8) -> bool {
    let whole_bytes = usize::from(prefix_bits / 8);
    let rest_bits = prefix_bits % 8;
    if network.get(..whole_bytes) != address.get(..whole_bytes) {
        return false;
    }
    if rest_bits == 0 {
        return true;
    }
    let mask = 0xffu8 << (8 - rest_bits);
    match (network.get(whole_bytes), address.get(whole_bytes)) {
        (Some(network), Some(address)) => network & mask == address & mask,
        _ => false,
    }
}

/// The addresses to bind, by Core's rule (`HTTPBindAddresses`): unless both
/// `-rpcbind` and `-rpcallowip` are given, `[::1]:port` and
/// `127.0.0.1:port`; otherwise each `-rpcbind` (`host`, `host:port`,
/// `[host]:port`, a name resolved here), with `port` where none is given.
pub fn rpc_bind_addresses(
    rpc_bind: &[String],
    rpc_allow_ip_given: bool,
    port: u16,
) -> Result<Vec<SocketAddr>, ConfigError> {
    if rpc_bind.is_empty() || !rpc_allow_ip_given {
        return Ok(vec![
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
        ]);
    }
    let mut addresses = Vec::new();
    for text in rpc_bind {
        let invalid = || ConfigError::InvalidBind { given: text.clone() };
        let (host, port) = split_host_port(text, port).ok_or_else(invalid)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match host.parse::<IpAddr>() {
            Ok(ip) => addresses.push(SocketAddr::new(ip, port)),
            Err(_) => {
                let resolved = (host, port).to_socket_addrs().map_err(|_| invalid())?;
                addresses.extend(resolved);
            }
        }
    }
    Ok(addresses)
}

/// Core's `SplitHostPort`: a port after the last colon counts only when the
/// host is bracketed or has no other colon.
fn split_host_port(text: &str, default_port: u16) -> Option<(&str, u16)> {
    if let Some((host, port)) = text.rsplit_once(':') {
        let bracketed = host.starts_with('[') && host.ends_with(']');
        if bracketed || !host.contains(':') {
            let port = port.parse::<u16>().ok().filter(|port| *port != 0)?;
            return Some((host, port));
        }
    }
    (!text.is_empty()).then_some((text, default_port))
}

/// Everything the server needs, filled by the node from its options.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The chain (for `getblockchaininfo`'s `chain` and addresses in JSON).
    pub network: Network,
    /// Where to listen (see [`rpc_bind_addresses`]). Port 0 picks a free
    /// port; [`super::RpcServer::local_addresses`] tells which.
    pub bind_addresses: Vec<SocketAddr>,
    /// `-rpcallowip` subnets, allowed besides [`Subnet::LOOPBACK`].
    pub allowed_subnets: Vec<Subnet>,
    /// `-rpcuser`.
    pub rpc_user: String,
    /// `-rpcpassword`; when empty, cookie authentication is used.
    pub rpc_password: String,
    /// `-rpcauth` lines, `user:salt$hmac`.
    pub rpc_auth: Vec<String>,
    /// Where the cookie goes (`<datadir>/<chain>/.cookie` or
    /// `-rpccookiefile`); `None` disables it (`-norpccookiefile`).
    pub cookie_file: Option<PathBuf>,
    /// `-rpcthreads`.
    pub threads: usize,
    /// `-rpcworkqueue`.
    pub work_queue_depth: usize,
    /// `-rpcservertimeout`: idle keep-alive, header and body read limit,
    /// and how long a reply's write may stall on a client that does not
    /// read before its connection is closed.
    pub server_timeout: Duration,
    /// Largest request body accepted.
    pub request_body_bytes_max: usize,
    /// Most connections open at once.
    pub connections_max: usize,
    /// `-rest`: serve the REST interface.
    pub rest: bool,
    /// When the node started (`uptime` counts from here).
    pub started_at: Instant,
}

impl ServerConfig {
    /// Core's defaults for `network`: loopback on the chain's RPC port,
    /// cookie authentication off until a path is given, REST off.
    pub fn new(network: Network) -> ServerConfig {
        ServerConfig {
            network,
            bind_addresses: vec![
                SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), network.default_rpc_port()),
                SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), network.default_rpc_port()),
            ],
            allowed_subnets: Vec::new(),
            rpc_user: String::new(),
            rpc_password: String::new(),
            rpc_auth: Vec::new(),
            cookie_file: None,
            threads: RPC_THREADS_DEFAULT,
            work_queue_depth: RPC_WORK_QUEUE_DEPTH_DEFAULT,
            server_timeout: Duration::from_secs(RPC_SERVER_TIMEOUT_SECONDS_DEFAULT),
            request_body_bytes_max: REQUEST_BODY_BYTES_MAX_DEFAULT,
            connections_max: CONNECTIONS_MAX_DEFAULT,
            rest: false,
            started_at: Instant::now(),
        }
    }

    /// Whether a client at `address` may use the server.
    pub(crate) fn client_allowed(&self, address: IpAddr) -> bool {
        Subnet::LOOPBACK.iter().chain(&self.allowed_subnets).any(|subnet| subnet.contains(address))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn subnets_as_core_reads_them() {
        let single = Subnet::parse("10.1.2.3").unwrap();
        assert!(single.contains(ip("10.1.2.3")) && !single.contains(ip("10.1.2.4")));
        let cidr = Subnet::parse("192.168.0.0/16").unwrap();
        assert!(cidr.contains(ip("192.168.77.1")) && !cidr.contains(ip("192.169.0.1")));
        assert_eq!(Subnet::parse("192.168.0.0/255.255.0.0").unwrap(), cidr);
        let odd = Subnet::parse("10.0.0.0/12").unwrap();
        assert!(odd.contains(ip("10.15.255.255")) && !odd.contains(ip("10.16.0.0")));
        assert!(Subnet::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        assert!(Subnet::parse("::/0").unwrap().contains(ip("2001:db8::1")));
        assert!(cidr.contains(ip("::ffff:192.168.1.1")), "IPv4-mapped peers are IPv4");
        for bad in ["", "10.0.0.0/33", "10.0.0.0/255.0.255.0", "host", "1.2.3.4/", "1.2.3.4/+8"] {
            assert!(Subnet::parse(bad).is_err(), "{bad}");
        }
        let config = ServerConfig::new(Network::Regtest);
        assert!(config.client_allowed(ip("127.5.6.7")) && config.client_allowed(ip("::1")));
        assert!(!config.client_allowed(ip("10.0.0.1")));
    }

    #[test]
    fn bind_addresses_follow_core() {
        let loopback = rpc_bind_addresses(&[], true, 18443).unwrap();
        assert_eq!(
            loopback,
            vec!["[::1]:18443".parse().unwrap(), "127.0.0.1:18443".parse().unwrap()]
        );
        let ignored = rpc_bind_addresses(&["0.0.0.0".into()], false, 18443).unwrap();
        assert_eq!(ignored, loopback, "-rpcbind needs -rpcallowip");
        let binds = ["0.0.0.0".into(), "10.0.0.1:9000".into(), "[::]:9001".into(), "::".into()];
        let chosen = rpc_bind_addresses(&binds, true, 18443).unwrap();
        let expected: Vec<SocketAddr> =
            ["0.0.0.0:18443", "10.0.0.1:9000", "[::]:9001", "[::]:18443"]
                .iter()
                .map(|text| text.parse().unwrap())
                .collect();
        assert_eq!(chosen, expected);
        assert!(rpc_bind_addresses(&["1.2.3.4:0".into()], true, 1).is_err());
    }
}
