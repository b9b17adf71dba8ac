//! The networking layer's configuration from the node's P2P options:
//! `-connect`/`-addnode` addresses resolved to socket addresses, the
//! listening address from `-listen`, `-bind` and `-port`, `-v2transport`
//! and `-maxconnections`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

use ibex_p2p::net::config::{NetworkConfig, INBOUND_CONNECTIONS_MAX};
use ibex_primitives::Params;

use crate::network_options::NetworkOptions;

/// Core's outbound slots, left out of `-maxconnections` for inbound peers.
const OUTBOUND_SLOTS: usize = 8 + 2 + 1;

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
    for text in options.add_nodes.iter() {
        config.connect.push(resolve("-addnode", text, default_port)?);
    }
    if options.listen {
        // Without -bind, loopback only: this first slice serves local
        // peers (Core binds every interface).
        let listen = match options.bind.first() {
            Some(text) => resolve("-bind", text, options.port)?,
            None => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), options.port),
        };
        config.listen = Some(listen);
    }
    config.v2_transport = options.v2_transport;
    // Core's inbound share: -maxconnections less 8 full-relay, 2
    // block-relay-only and 1 feeler outbound slots.
    config.inbound_connections_max =
        options.max_connections.saturating_sub(OUTBOUND_SLOTS).clamp(1, INBOUND_CONNECTIONS_MAX);
    config.start_height = start_height;
    Ok(config)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

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
