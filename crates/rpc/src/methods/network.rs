//! Network methods (Core's `rpc/net.cpp`): `getnetworkinfo`,
//! `getconnectioncount`, `getpeerinfo`, `getnettotals`, written in Core's
//! key order from what the backend's networking side reports.

use std::time::{SystemTime, UNIX_EPOCH};

use super::blockchain::write_strings;
use super::Method;
use crate::backend::{NetworkInfo, PeerInfo};
use crate::json::{boolean, close_object, escaped_string, key, open_object, plain_string};
use crate::number::{write_amount, write_double, write_i64, write_u64};

pub(super) const GETCONNECTIONCOUNT: Method = Method {
    name: "getconnectioncount",
    category: "network",
    args: &[],
    description: "The number of connections to other nodes.",
    result: "n (numeric) the connection count",
    handler: |context, _, out| {
        write_u64(out, context.backend.connection_count()? as u64);
        Ok(())
    },
};

pub(super) const GETNETWORKINFO: Method = Method {
    name: "getnetworkinfo",
    category: "network",
    args: &[],
    description: "The node's P2P state: version, services, connections, networks, addresses.",
    result: "{...} Core's fields, in Core's order",
    handler: |context, _, out| {
        write_network_info(out, &context.backend.network_info()?);
        Ok(())
    },
};

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

pub(super) const GETNETTOTALS: Method = Method {
    name: "getnettotals",
    category: "network",
    args: &[],
    description: "Bytes sent and received, and the upload target's state.",
    result: "{\"totalbytesrecv\",\"totalbytessent\",\"timemillis\",\"uploadtarget\"}",
    handler: |context, _, out| {
        let totals = context.backend.net_totals()?;
        open_object(out, "totalbytesrecv");
        write_u64(out, totals.total_bytes_received);
        key(out, "totalbytessent");
        write_u64(out, totals.total_bytes_sent);
        key(out, "timemillis");
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        write_u64(out, u64::try_from(now.as_millis()).unwrap_or(u64::MAX));
        let target = totals.upload_target;
        key(out, "uploadtarget");
        open_object(out, "timeframe");
        write_u64(out, target.timeframe_seconds);
        key(out, "target");
        write_u64(out, target.target_bytes);
        key(out, "target_reached");
        boolean(out, target.target_reached);
        key(out, "serve_historical_blocks");
        boolean(out, target.serve_historical_blocks);
        key(out, "bytes_left_in_cycle");
        write_u64(out, target.bytes_left_in_cycle);
        key(out, "time_left_in_cycle");
        write_u64(out, target.time_left_in_cycle_seconds);
        close_object(out);
        close_object(out);
        Ok(())
    },
};

/// Core's `serviceFlagToStr` names, by bit.
fn service_name(bit: u32) -> Option<&'static str> {
    Some(match bit {
        0 => "NETWORK",
        2 => "BLOOM",
        3 => "WITNESS",
        6 => "COMPACT_FILTERS",
        10 => "NETWORK_LIMITED",
        11 => "P2P_V2",
        _ => return None,
    })
}

/// `"%016x"` of the service bits, then their names (`localservicesnames`,
/// `servicesnames`): known names, `UNKNOWN[<value>]` for unknown bits
/// below 8 and `UNKNOWN[2^<bit>]` above, as Core prints them.
fn write_services(out: &mut Vec<u8>, services: u64, names_key: &str) {
    out.push(b'"');
    crate::hex::write_hex(out, &services.to_be_bytes());
    out.push(b'"');
    key(out, names_key);
    out.push(b'[');
    let mut first = true;
    for bit in (0..64).filter(|bit| services & (1u64 << bit) != 0) {
        if !first {
            out.push(b',');
        }
        first = false;
        match service_name(bit) {
            Some(name) => plain_string(out, name.as_bytes()),
            None if bit < 8 => escaped_string(out, &format!("UNKNOWN[{}]", 1u64 << bit)),
            None => escaped_string(out, &format!("UNKNOWN[2^{bit}]")),
        }
    }
    out.push(b']');
}

fn write_network_info(out: &mut Vec<u8>, info: &NetworkInfo) {
    open_object(out, "version");
    write_u64(out, u64::from(info.version));
    key(out, "subversion");
    escaped_string(out, &info.subversion);
    key(out, "protocolversion");
    write_u64(out, u64::from(info.protocol_version));
    if let Some(connections) = &info.connections {
        key(out, "localservices");
        write_services(out, connections.local_services, "localservicesnames");
    }
    if let Some(relay) = &info.relay {
        key(out, "localrelay");
        boolean(out, relay.local_relay);
        key(out, "timeoffset");
        write_i64(out, relay.time_offset_seconds);
    }
    if let Some(connections) = &info.connections {
        key(out, "networkactive");
        boolean(out, connections.network_active);
        key(out, "connections");
        write_u64(
            out,
            connections.connections_in.saturating_add(connections.connections_out) as u64,
        );
        key(out, "connections_in");
        write_u64(out, connections.connections_in as u64);
        key(out, "connections_out");
        write_u64(out, connections.connections_out as u64);
    }
    key(out, "networks");
    out.push(b'[');
    for (index, network) in info.networks.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        open_object(out, "name");
        escaped_string(out, &network.name);
        key(out, "limited");
        boolean(out, !network.reachable);
        key(out, "reachable");
        boolean(out, network.reachable);
        key(out, "proxy");
        escaped_string(out, &network.proxy);
        key(out, "proxy_randomize_credentials");
        boolean(out, network.proxy_randomize_credentials);
        close_object(out);
    }
    out.push(b']');
    if let Some(fees) = &info.relay_fees {
        key(out, "relayfee");
        write_amount(out, fees.relay_fee_satoshis_per_kvb);
        key(out, "incrementalfee");
        write_amount(out, fees.incremental_fee_satoshis_per_kvb);
    }
    key(out, "localaddresses");
    out.push(b'[');
    for (index, local) in info.local_addresses.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        open_object(out, "address");
        escaped_string(out, &local.address);
        key(out, "port");
        write_u64(out, u64::from(local.port));
        key(out, "score");
        write_i64(out, i64::from(local.score));
        close_object(out);
    }
    out.push(b']');
    key(out, "warnings");
    write_strings(out, &info.warnings);
    close_object(out);
}

/// A JSON array of integers.
fn write_integers(out: &mut Vec<u8>, values: &[i32]) {
    out.push(b'[');
    for (index, value) in values.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        write_i64(out, i64::from(*value));
    }
    out.push(b']');
}

/// An object of message type -> bytes.
fn write_byte_counts(out: &mut Vec<u8>, counts: &[(String, u64)]) {
    out.push(b'{');
    for (index, (name, bytes)) in counts.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        escaped_string(out, name);
        out.push(b':');
        write_u64(out, *bytes);
    }
    out.push(b'}');
}

fn write_peer(out: &mut Vec<u8>, peer: &PeerInfo) {
    open_object(out, "id");
    write_i64(out, peer.id);
    key(out, "addr");
    escaped_string(out, &peer.address);
    if let Some(bind) = &peer.address_bind {
        key(out, "addrbind");
        escaped_string(out, bind);
    }
    if let Some(local) = &peer.address_local {
        key(out, "addrlocal");
        escaped_string(out, local);
    }
    key(out, "network");
    escaped_string(out, &peer.network);
    if let Some(mapped_as) = peer.mapped_as {
        key(out, "mapped_as");
        write_u64(out, u64::from(mapped_as));
    }
    key(out, "services");
    write_services(out, peer.services, "servicesnames");
    key(out, "relaytxes");
    boolean(out, peer.relay_transactions);
    for (name, seconds) in [
        ("lastsend", peer.last_send_seconds),
        ("lastrecv", peer.last_receive_seconds),
        ("last_transaction", peer.last_transaction_seconds),
        ("last_block", peer.last_block_seconds),
    ] {
        key(out, name);
        write_i64(out, seconds);
    }
    key(out, "bytessent");
    write_u64(out, peer.bytes_sent);
    key(out, "bytesrecv");
    write_u64(out, peer.bytes_received);
    key(out, "conntime");
    write_i64(out, peer.connected_seconds);
    key(out, "timeoffset");
    write_i64(out, peer.time_offset_seconds);
    for (name, seconds) in [
        ("pingtime", peer.ping_seconds),
        ("minping", peer.min_ping_seconds),
        ("pingwait", peer.ping_wait_seconds),
    ] {
        if let Some(seconds) = seconds {
            key(out, name);
            write_double(out, seconds);
        }
    }
    key(out, "version");
    write_i64(out, i64::from(peer.version));
    key(out, "subver");
    escaped_string(out, &peer.subversion);
    key(out, "inbound");
    boolean(out, peer.inbound);
    key(out, "bip152_hb_to");
    boolean(out, peer.bip152_high_bandwidth_to);
    key(out, "bip152_hb_from");
    boolean(out, peer.bip152_high_bandwidth_from);
    for (name, height) in [
        ("startingheight", peer.starting_height),
        ("presynced_headers", peer.presynced_headers),
        ("synced_headers", peer.synced_headers),
        ("synced_blocks", peer.synced_blocks),
    ] {
        key(out, name);
        write_i64(out, i64::from(height));
    }
    key(out, "inflight");
    write_integers(out, &peer.blocks_in_flight);
    key(out, "addr_relay_enabled");
    boolean(out, peer.address_relay_enabled);
    key(out, "addr_processed");
    write_u64(out, peer.addresses_processed);
    key(out, "addr_rate_limited");
    write_u64(out, peer.addresses_rate_limited);
    key(out, "permissions");
    write_strings(out, &peer.permissions);
    key(out, "minfeefilter");
    write_amount(out, peer.min_fee_filter_satoshis_per_kvb);
    key(out, "bytessent_per_msg");
    write_byte_counts(out, &peer.bytes_sent_per_message);
    key(out, "bytesrecv_per_msg");
    write_byte_counts(out, &peer.bytes_received_per_message);
    key(out, "connection_type");
    escaped_string(out, &peer.connection_type);
    key(out, "transport_protocol_type");
    escaped_string(out, &peer.transport_protocol_type);
    key(out, "session_id");
    escaped_string(out, &peer.session_id);
    close_object(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> PeerInfo {
        PeerInfo {
            id: 3,
            address: "127.0.0.1:18444".to_owned(),
            address_bind: None,
            address_local: Some("1.2.3.4:18444".to_owned()),
            network: "not_publicly_routable".to_owned(),
            mapped_as: None,
            services: 9,
            relay_transactions: false,
            last_send_seconds: 1,
            last_receive_seconds: 2,
            last_transaction_seconds: 0,
            last_block_seconds: 3,
            bytes_sent: 4,
            bytes_received: 5,
            connected_seconds: 6,
            time_offset_seconds: -7,
            ping_seconds: None,
            min_ping_seconds: None,
            ping_wait_seconds: Some(0.5),
            version: 70016,
            subversion: "/Ibex:0.1.0/".to_owned(),
            inbound: true,
            bip152_high_bandwidth_to: false,
            bip152_high_bandwidth_from: false,
            starting_height: -1,
            presynced_headers: -1,
            synced_headers: 10,
            synced_blocks: 9,
            blocks_in_flight: vec![10, 11],
            address_relay_enabled: true,
            addresses_processed: 0,
            addresses_rate_limited: 0,
            permissions: vec![],
            min_fee_filter_satoshis_per_kvb: 0,
            bytes_sent_per_message: vec![],
            bytes_received_per_message: vec![],
            connection_type: "inbound".to_owned(),
            transport_protocol_type: "v1".to_owned(),
            session_id: String::new(),
        }
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
    fn service_names_as_core_prints_them() {
        let mut out = Vec::new();
        write_services(&mut out, (1 << 0) | (1 << 3) | (1 << 10) | (1 << 1) | (1 << 24), "names");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""000000000100040b","names":["NETWORK","UNKNOWN[2]","WITNESS","NETWORK_LIMITED","UNKNOWN[2^24]"]"#
        );
    }
}
