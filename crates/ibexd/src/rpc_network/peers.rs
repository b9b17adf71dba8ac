//! `getpeerinfo`: each connection as the networking layer records it,
//! joined with what the sync loop knows of the peer and the heights the
//! engine gives its best known block.
//!
//! Fields Ibex has no source for are what Core shows for a peer in the
//! same state: no transaction relay (`relaytxes` false, `last_transaction`
//! 0, `minfeefilter` 0: Ibex announces `relay` false, so peers send it
//! neither transactions nor a fee filter), no compact block high-bandwidth
//! mode either way, no `-asmap`; `permissions` are those `-whitelist`
//! grants, in Core's order. Traffic by message type
//! is not counted (the objects are empty).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use ibex_chainstate::ReadError;
use ibex_p2p::net::address::{canonical_ip, is_routable};
use ibex_p2p::net::PeerInfo as NetPeer;
use ibex_p2p::sync::PeerId;
use ibex_p2p::transport::TransportKind;
use ibex_primitives::BlockHash;
use ibex_rpc::backend::{BackendError, PeerInfo};

use super::{epoch_seconds, NetworkRpc};
use crate::p2p_node::peer_sync_board::PeerSyncFacts;
use crate::rpc_backend::QUERY_TIMEOUT;

/// Heights Core gives a peer: its best known block's (`synced_headers`)
/// and the last block it has in common with our active chain
/// (`synced_blocks`); -1 when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PeerHeights {
    best_known: i32,
    common: i32,
}

const UNKNOWN_HEIGHTS: PeerHeights = PeerHeights { best_known: -1, common: -1 };

/// `ip:port` as Core writes a service (`ToStringAddrPort`): IPv4-mapped
/// addresses as IPv4, IPv6 in brackets.
pub fn address_text(address: SocketAddr) -> String {
    SocketAddr::new(canonical_ip(address.ip()), address.port()).to_string()
}

/// Core's network name for a connection (`GetNetClass`): addresses that
/// are not publicly routable (loopback, private ranges) have their own.
fn network_name(address: SocketAddr) -> &'static str {
    match canonical_ip(address.ip()) {
        ip if !is_routable(ip) => "not_publicly_routable",
        IpAddr::V4(_) => "ipv4",
        IpAddr::V6(_) => "ipv6",
    }
}

/// Our address as the peer wrote it in its `version` (Core's `addrlocal`),
/// unless it wrote none (Core's `IsValid`: not unspecified, not
/// 255.255.255.255, not 2001:db8::/32).
fn reported_local_address(bytes: [u8; 16], port: u16) -> Option<String> {
    let ip = IpAddr::V6(Ipv6Addr::from(bytes)).to_canonical();
    let documentation = matches!(ip, IpAddr::V6(v6) if v6.segments()[..2] == [0x2001, 0x0db8]);
    let broadcast = matches!(ip, IpAddr::V4(v4) if v4.is_broadcast());
    (!ip.is_unspecified() && !documentation && !broadcast)
        .then(|| address_text(SocketAddr::new(ip, port)))
}

fn transport_name(kind: TransportKind) -> &'static str {
    match kind {
        TransportKind::V1 => "v1",
        TransportKind::V2 => "v2",
        _ => "detecting",
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The heights of each hash in `best_known` and where each meets the
/// active chain, in one unsettled read (the block index and header chains).
fn heights_of(
    reader: &ibex_chainstate::ChainReader,
    best_known: &[(PeerId, BlockHash)],
) -> Result<HashMap<PeerId, PeerHeights>, ReadError> {
    let hashes: Vec<BlockHash> = best_known.iter().map(|(_, hash)| *hash).collect();
    let points = reader.unsettled(QUERY_TIMEOUT).fork_points(&hashes)?;
    let as_height = |height: u32| i32::try_from(height).unwrap_or(i32::MAX);
    let heights = best_known.iter().zip(points).filter_map(|((peer, _), point)| {
        let point = point?;
        let common = point.fork_height.map_or(-1, as_height);
        Some((*peer, PeerHeights { best_known: as_height(point.height), common }))
    });
    Ok(heights.collect())
}

impl NetworkRpc {
    /// `getpeerinfo`, by peer id.
    pub fn peers(&self) -> Result<Vec<PeerInfo>, BackendError> {
        let connections = self.handle.peers();
        let board = self.board.all();
        let best_known: Vec<(PeerId, BlockHash)> = board
            .iter()
            .filter_map(|(peer, facts)| facts.best_known_block.map(|hash| (*peer, hash)))
            .collect();
        let heights = if best_known.is_empty() {
            HashMap::new()
        } else {
            heights_of(&self.reader, &best_known).map_err(|error| match error {
                ReadError::Busy => BackendError::Busy,
                ReadError::TimedOut { timeout_ms } => BackendError::TimedOut { timeout_ms },
                _ => BackendError::Stopped,
            })?
        };
        Ok(connections
            .iter()
            .map(|connection| {
                let facts = board.get(&connection.id).cloned().unwrap_or_default();
                let peer_heights = heights.get(&connection.id).copied().unwrap_or(UNKNOWN_HEIGHTS);
                peer_info(connection, &facts, peer_heights)
            })
            .collect())
    }
}

/// One `getpeerinfo` entry.
fn peer_info(connection: &NetPeer, facts: &PeerSyncFacts, heights: PeerHeights) -> PeerInfo {
    let version = connection.version.as_ref();
    let seconds = |time: Option<std::time::SystemTime>| time.map_or(0, epoch_seconds);
    let relays_addresses = connection.connection.relays_addresses();
    PeerInfo {
        id: i64::try_from(connection.id.0).unwrap_or(i64::MAX),
        address: address_text(connection.address),
        address_bind: connection.local_address.map(address_text),
        address_local: version.and_then(|version| {
            reported_local_address(version.address_local.ip_bytes, version.address_local.port)
        }),
        network: network_name(connection.address).to_owned(),
        mapped_as: None,
        services: version.map_or(0, |version| version.services.bits()),
        relay_transactions: false,
        last_send_seconds: seconds(connection.last_send),
        last_receive_seconds: seconds(connection.last_receive),
        last_transaction_seconds: 0,
        last_block_seconds: facts.last_block_seconds,
        bytes_sent: connection.bytes_sent,
        bytes_received: connection.bytes_received,
        connected_seconds: epoch_seconds(connection.connected_at),
        time_offset_seconds: version.map_or(0, |version| version.time_offset_seconds),
        ping_seconds: connection.last_ping.map(|ping| ping.as_secs_f64()),
        min_ping_seconds: connection.min_ping.map(|ping| ping.as_secs_f64()),
        ping_wait_seconds: connection.ping_wait.map(|wait| wait.as_secs_f64()),
        version: version.map_or(0, |version| version.protocol_version),
        subversion: version.map_or_else(String::new, |version| version.user_agent_sanitized()),
        inbound: connection.inbound,
        bip152_high_bandwidth_to: false,
        bip152_high_bandwidth_from: false,
        starting_height: version.map_or(-1, |version| version.start_height),
        presynced_headers: facts
            .presync_height
            .map_or(-1, |height| i32::try_from(height).unwrap_or(i32::MAX)),
        synced_headers: heights.best_known,
        synced_blocks: heights.common,
        blocks_in_flight: facts
            .blocks_in_flight_heights
            .iter()
            .map(|height| i32::try_from(*height).unwrap_or(i32::MAX))
            .collect(),
        address_relay_enabled: relays_addresses && connection.handshake_complete,
        addresses_processed: 0,
        addresses_rate_limited: 0,
        permissions: connection.permissions.names().into_iter().map(str::to_owned).collect(),
        min_fee_filter_satoshis_per_kvb: 0,
        bytes_sent_per_message: Vec::new(),
        bytes_received_per_message: Vec::new(),
        connection_type: connection.connection.name().to_owned(),
        transport_protocol_type: transport_name(connection.transport).to_owned(),
        session_id: connection.session_id.map_or_else(String::new, |id| hex(&id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_written_and_classed_as_core() {
        let v4: SocketAddr = "127.0.0.1:18444".parse().unwrap_or(SocketAddr::from(([0; 4], 0)));
        assert_eq!(address_text(v4), "127.0.0.1:18444");
        let mapped: SocketAddr = "[::ffff:8.8.8.8]:8333".parse().unwrap_or(v4);
        assert_eq!(address_text(mapped), "8.8.8.8:8333");
        assert_eq!(network_name(mapped), "ipv4");
        assert_eq!(network_name(v4), "not_publicly_routable");
        let v6: SocketAddr = "[2a01::1]:8333".parse().unwrap_or(v4);
        assert_eq!((address_text(v6).as_str(), network_name(v6)), ("[2a01::1]:8333", "ipv6"));
        let private: SocketAddr = "10.1.2.3:1".parse().unwrap_or(v4);
        assert_eq!(network_name(private), "not_publicly_routable");
    }

    #[test]
    fn a_reported_local_address_only_when_valid() {
        let mut bytes = [0u8; 16];
        assert_eq!(reported_local_address(bytes, 8333), None, "unspecified");
        bytes[10] = 0xff;
        bytes[11] = 0xff;
        assert_eq!(reported_local_address(bytes, 8333), None, "0.0.0.0 mapped");
        bytes[12..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(reported_local_address(bytes, 8333).as_deref(), Some("1.2.3.4:8333"));
        bytes[12..].copy_from_slice(&[255; 4]);
        assert_eq!(reported_local_address(bytes, 8333), None, "broadcast");
        let documentation = Ipv6Addr::new(0x2001, 0x0db8, 0, 0, 0, 0, 0, 1).octets();
        assert_eq!(reported_local_address(documentation, 1), None);
        assert_eq!(transport_name(TransportKind::Detecting), "detecting");
        assert_eq!(hex(&[0, 171]), "00ab");
    }
}
