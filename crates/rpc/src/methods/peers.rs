//! `getpeerinfo` (Core's `rpc/net.cpp`): each connection as the networking
//! layer records it ([`ibex_p2p::net::PeerInfo`]), with what the node's
//! sync knows of the peer ([`PeerState`]), written in Core's key order.
//!
//! Fields Ibex has no source for are what Core shows for a peer in the
//! same state: no transaction relay (`relaytxes` false, `last_transaction`
//! 0: Ibex announces `relay` false, so peers send it no transactions), no
//! compact block high-bandwidth mode either way, no `-asmap` (no
//! `mapped_as`), no address relay counts; traffic by message type is not
//! counted (the objects are empty).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ibex_p2p::net::address::{address_text, canonical_ip, is_routable};
use ibex_p2p::net::PeerInfo;
use ibex_p2p::transport::TransportKind;
use ibex_primitives::Height;

use super::blockchain::write_strings;
use super::network::write_services;
use super::Method;
use crate::backend::{PeerReport, PeerState};
use crate::json::{boolean, close_object, escaped_string, hex_string, key, open_object};
use crate::number::{write_amount, write_double, write_i64, write_u64};

pub(super) const GETPEERINFO: Method = Method {
    name: "getpeerinfo",
    category: "network",
    args: &[],
    description: "Each connected peer.",
    result: "[{...},...] Core's fields per peer, in Core's order",
    handler: |context, _, out| {
        let peers = context.backend.peers()?;
        out.push(b'[');
        for (index, peer) in peers.iter().enumerate() {
            if index != 0 {
                out.push(b',');
            }
            write_peer(out, peer);
        }
        out.push(b']');
        Ok(())
    },
};

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

/// Seconds since the Unix epoch at `time` (0 before it, and for never).
fn epoch_seconds(time: Option<SystemTime>) -> i64 {
    let since = time
        .map_or(Duration::ZERO, |time| time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO));
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

/// A height as Core writes one (a C `int`, so at most `i32::MAX`), -1
/// when there is none.
fn height_number(height: Option<Height>) -> i64 {
    height.map_or(-1, |height| i64::from(i32::try_from(height.to_u32()).unwrap_or(i32::MAX)))
}

fn write_peer(out: &mut Vec<u8>, peer: &PeerReport) {
    let connection = &peer.connection;
    let version = connection.version.as_ref();
    open_object(out, "id");
    write_i64(out, i64::try_from(connection.id.0).unwrap_or(i64::MAX));
    key(out, "addr");
    escaped_string(out, &address_text(connection.address));
    if let Some(bind) = connection.local_address {
        key(out, "addrbind");
        escaped_string(out, &address_text(bind));
    }
    let local = version.and_then(|version| {
        reported_local_address(version.address_local.ip_bytes, version.address_local.port)
    });
    if let Some(local) = local {
        key(out, "addrlocal");
        escaped_string(out, &local);
    }
    key(out, "network");
    escaped_string(out, network_name(connection.address));
    key(out, "services");
    write_services(out, version.map_or(0, |version| version.services.bits()), "servicesnames");
    key(out, "relaytxes");
    boolean(out, false);
    write_traffic(out, connection, &peer.state);
    key(out, "version");
    write_i64(out, i64::from(version.map_or(0, |version| version.protocol_version)));
    key(out, "subver");
    let subversion = version.map_or_else(String::new, |version| version.user_agent_sanitized());
    escaped_string(out, &subversion);
    key(out, "inbound");
    boolean(out, connection.inbound);
    key(out, "bip152_hb_to");
    boolean(out, false);
    key(out, "bip152_hb_from");
    boolean(out, false);
    key(out, "startingheight");
    write_i64(out, i64::from(version.map_or(-1, |version| version.start_height)));
    write_sync(out, &peer.state);
    key(out, "addr_relay_enabled");
    boolean(out, connection.connection.relays_addresses() && connection.handshake_complete);
    key(out, "addr_processed");
    write_u64(out, 0);
    key(out, "addr_rate_limited");
    write_u64(out, 0);
    key(out, "permissions");
    write_strings(out, &connection.permissions.names());
    key(out, "minfeefilter");
    write_amount(out, peer.state.fee_filter_satoshis_per_kvb);
    key(out, "bytessent_per_msg");
    out.extend_from_slice(b"{}");
    key(out, "bytesrecv_per_msg");
    out.extend_from_slice(b"{}");
    key(out, "connection_type");
    escaped_string(out, connection.connection.name());
    key(out, "transport_protocol_type");
    escaped_string(out, transport_name(connection.transport));
    key(out, "session_id");
    hex_string(out, connection.session_id.as_ref().map_or(&[][..], |id| &id[..]));
    close_object(out);
}

/// `lastsend` to `pingwait`: times, bytes and pings.
fn write_traffic(out: &mut Vec<u8>, connection: &PeerInfo, state: &PeerState) {
    for (name, seconds) in [
        ("lastsend", epoch_seconds(connection.last_send)),
        ("lastrecv", epoch_seconds(connection.last_receive)),
        ("last_transaction", 0),
        ("last_block", state.last_block_seconds),
    ] {
        key(out, name);
        write_i64(out, seconds);
    }
    key(out, "bytessent");
    write_u64(out, connection.bytes_sent);
    key(out, "bytesrecv");
    write_u64(out, connection.bytes_received);
    key(out, "conntime");
    write_i64(out, epoch_seconds(Some(connection.connected_at)));
    key(out, "timeoffset");
    write_i64(out, connection.version.as_ref().map_or(0, |version| version.time_offset_seconds));
    for (name, duration) in [
        ("pingtime", connection.last_ping),
        ("minping", connection.min_ping),
        ("pingwait", connection.ping_wait),
    ] {
        if let Some(duration) = duration {
            key(out, name);
            write_double(out, duration.as_secs_f64());
        }
    }
}

/// `presynced_headers` to `inflight`: the heights sync knows of the peer.
fn write_sync(out: &mut Vec<u8>, state: &PeerState) {
    for (name, height) in [
        ("presynced_headers", state.presync_height),
        ("synced_headers", state.best_known_height),
        ("synced_blocks", state.common_height),
    ] {
        key(out, name);
        write_i64(out, height_number(height));
    }
    key(out, "inflight");
    out.push(b'[');
    for (index, height) in state.blocks_in_flight.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        write_i64(out, height_number(Some(*height)));
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    use ibex_p2p::messages::address::ServiceAddress;
    use ibex_p2p::messages::version::UserAgent;
    use ibex_p2p::net::{ConnectionType, PeerPermissions, PeerVersion};
    use ibex_p2p::sync::PeerId;
    use ibex_p2p::ServiceFlags;

    fn peer() -> PeerReport {
        let mut address_local = [0u8; 16];
        address_local[10..].copy_from_slice(&[0xff, 0xff, 1, 2, 3, 4]);
        let version = PeerVersion {
            protocol_version: 70016,
            services: ServiceFlags::from_bits(9),
            user_agent: UserAgent::new(b"/Ibex:0.1.0/".to_vec()).unwrap(),
            start_height: -1,
            relay: false,
            timestamp_seconds: 0,
            time_offset_seconds: -7,
            address_local: ServiceAddress {
                services: ServiceFlags::NONE,
                ip_bytes: address_local,
                port: 18444,
            },
            wtxid_relay: true,
            wants_address_v2: false,
            serves_spent_coins: false,
        };
        let at = |seconds: u64| UNIX_EPOCH + Duration::from_secs(seconds);
        let connection = PeerInfo {
            id: PeerId(3),
            address: SocketAddr::from(([127, 0, 0, 1], 18444)),
            local_address: None,
            inbound: true,
            connection: ConnectionType::Inbound,
            transport: TransportKind::V1,
            session_id: None,
            version: Some(version),
            handshake_complete: true,
            connected_at: at(6),
            last_send: Some(at(1)),
            last_receive: Some(at(2)),
            bytes_sent: 4,
            bytes_received: 5,
            last_ping: None,
            min_ping: None,
            ping_wait: Some(Duration::from_millis(500)),
            send_queue_bytes: 0,
            permissions: PeerPermissions::NONE,
        };
        let state = PeerState {
            presync_height: None,
            best_known_height: Some(Height::new(10)),
            common_height: Some(Height::new(9)),
            blocks_in_flight: vec![Height::new(10), Height::new(11)],
            last_block_seconds: 3,
            fee_filter_satoshis_per_kvb: 0,
        };
        PeerReport { connection, state }
    }

    #[test]
    fn a_peer_as_core_writes_it() {
        let mut out = Vec::new();
        write_peer(&mut out, &peer());
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"id":3,"addr":"127.0.0.1:18444","addrlocal":"1.2.3.4:18444","#,
                r#""network":"not_publicly_routable","services":"0000000000000009","#,
                r#""servicesnames":["NETWORK","WITNESS"],"relaytxes":false,"lastsend":1,"#,
                r#""lastrecv":2,"last_transaction":0,"last_block":3,"bytessent":4,"#,
                r#""bytesrecv":5,"conntime":6,"timeoffset":-7,"pingwait":0.5,"#,
                r#""version":70016,"subver":"/Ibex:0.1.0/","inbound":true,"#,
                r#""bip152_hb_to":false,"bip152_hb_from":false,"startingheight":-1,"#,
                r#""presynced_headers":-1,"synced_headers":10,"synced_blocks":9,"#,
                r#""inflight":[10,11],"addr_relay_enabled":true,"addr_processed":0,"#,
                r#""addr_rate_limited":0,"permissions":[],"minfeefilter":0.00000000,"#,
                r#""bytessent_per_msg":{},"bytesrecv_per_msg":{},"connection_type":"inbound","#,
                r#""transport_protocol_type":"v1","session_id":""}"#
            )
        );
    }

    #[test]
    fn networks_classed_as_core() {
        let v4 = SocketAddr::from(([127, 0, 0, 1], 18444));
        let mapped: SocketAddr = "[::ffff:8.8.8.8]:8333".parse().unwrap_or(v4);
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
    }

    #[test]
    fn heights_written_as_core_ints() {
        assert_eq!(height_number(None), -1);
        assert_eq!(height_number(Some(Height::new(7))), 7);
        assert_eq!(height_number(Some(Height::MAX)), i64::from(i32::MAX));
        let mut session = Vec::new();
        hex_string(&mut session, &[0, 171]);
        assert_eq!(session, br#""00ab""#);
    }
}
