//! Network methods (Core's `rpc/net.cpp`): `getnetworkinfo`,
//! `getconnectioncount`, `getnettotals` (`getpeerinfo` is in `peers`),
//! written in Core's key order from what the backend's networking side
//! reports.

use std::time::{SystemTime, UNIX_EPOCH};

use super::blockchain::write_strings;
use super::Method;
use crate::backend::NetworkInfo;
use crate::json::{boolean, close_object, escaped_string, key, open_object, plain_string};
use crate::number::{write_amount, write_i64, write_u64};

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
pub(super) fn write_services(out: &mut Vec<u8>, services: u64, names_key: &str) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
