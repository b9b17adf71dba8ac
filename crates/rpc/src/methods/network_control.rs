//! Network methods that change or list the node's peers and bans (Core's
//! `rpc/net.cpp`): `addnode`, `disconnectnode`, `getaddednodeinfo`,
//! `getnodeaddresses`, `setban`, `listbanned`, `clearbanned`, with Core's
//! argument checks, error codes and words, and result keys in Core's order.

use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use super::control::full_help;
use super::error::{RpcError, RpcErrorCode};
use super::params::{boolean, integer, string, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::{AddNodeCommand, AddedNodeInfo, BannedSubnet, NodeAddress, PeerSelector};
use crate::json::{boolean as write_boolean, close_object, escaped_string, key, open_object};
use crate::number::{write_i64, write_u64};

/// Core's `-bantime` default: a ban without a time lasts 24 hours.
pub(crate) const BAN_SECONDS_DEFAULT: i64 = 24 * 60 * 60;

/// The network names `getnodeaddresses` accepts (Core's `ParseNetwork`,
/// any case; `tor` is Core's older name for `onion`).
const NETWORK_NAMES: [&str; 5] = ["ipv4", "ipv6", "onion", "i2p", "cjdns"];

pub(super) const ADDNODE: Method = Method {
    name: "addnode",
    category: "network",
    args: &[
        arg("node", ArgType::String, false, "the peer's IP address or host name, with :port"),
        arg(
            "command",
            ArgType::String,
            false,
            "'add' to keep it connected, 'remove' to stop, 'onetry' to try one connection",
        ),
        arg(
            "v2transport",
            ArgType::Bool,
            true,
            "whether to try BIP324 v2 first (default: as -v2transport)",
        ),
    ],
    description: "Adds or removes a node kept connected, or tries one connection to it.",
    result: "null (json null)",
    handler: addnode,
};

fn addnode(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let command = match string(params.get(1))? {
        "add" => AddNodeCommand::Add,
        "remove" => AddNodeCommand::Remove,
        "onetry" => AddNodeCommand::OneTry,
        _ => return Err(help_error(&ADDNODE)),
    };
    let node = string(params.get(0))?;
    let v2_transport = params.optional(2).map(boolean).transpose()?;
    context.backend.add_node(node, command, v2_transport)?;
    out.extend_from_slice(b"null");
    Ok(())
}

pub(super) const DISCONNECTNODE: Method = Method {
    name: "disconnectnode",
    category: "network",
    args: &[
        arg("address", ArgType::String, true, "the peer's address as getpeerinfo shows it"),
        arg("nodeid", ArgType::Number, true, "the peer's id (see getpeerinfo)"),
    ],
    description: "Closes the connection to one peer, named by address or by id (not both).",
    result: "null (json null)",
    handler: disconnectnode,
};

fn disconnectnode(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let address = params.optional(0);
    let id = params.optional(1);
    let address_empty = address.is_none_or(|value| value.as_str() == Some(""));
    let selector = match (address, id) {
        (Some(address), None) => PeerSelector::Address(string(address)?.to_owned()),
        (_, Some(id)) if address_empty => PeerSelector::Id(integer::<i64>(id)?),
        _ => {
            return Err(RpcError::new(
                RpcErrorCode::InvalidParams,
                "Only one of address and nodeid should be provided.",
            ))
        }
    };
    context.backend.disconnect_peer(&selector)?;
    out.extend_from_slice(b"null");
    Ok(())
}

pub(super) const GETADDEDNODEINFO: Method = Method {
    name: "getaddednodeinfo",
    category: "network",
    args: &[arg("node", ArgType::String, true, "the added node to describe (default: all)")],
    description:
        "The nodes added with addnode or -addnode (not onetry), and whether each is connected.",
    result: "[{\"addednode\",\"connected\",\"addresses\":[{\"address\",\"connected\"}]},...]",
    handler: getaddednodeinfo,
};

fn getaddednodeinfo(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let wanted = params.optional(0).map(string).transpose()?;
    let mut nodes = context.backend.added_nodes()?;
    if let Some(wanted) = wanted {
        nodes.retain(|node| node.added_node == wanted);
        if nodes.is_empty() {
            return Err(RpcError::new(
                RpcErrorCode::ClientNodeNotAdded,
                "Error: Node has not been added.",
            ));
        }
    }
    write_array(out, &nodes, write_added_node);
    Ok(())
}

pub(super) const GETNODEADDRESSES: Method = Method {
    name: "getnodeaddresses",
    category: "network",
    args: &[
        arg("count", ArgType::Number, true, "the most addresses to return, 0 for all (default 1)"),
        arg("network", ArgType::String, true, "only this network: ipv4, ipv6, onion, i2p, cjdns"),
    ],
    description: "Addresses the address manager knows, in random order, the worst left out.",
    result: "[{\"time\",\"services\",\"address\",\"port\",\"network\"},...]",
    handler: getnodeaddresses,
};

fn getnodeaddresses(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let count = params.optional(0).map(integer::<i32>).transpose()?.unwrap_or(1);
    let Ok(count_max) = usize::try_from(count) else {
        return Err(RpcError::invalid_parameter("Address count out of range".to_owned()));
    };
    let network = params.optional(1).map(string).transpose()?.map(network_name).transpose()?;
    let addresses = context.backend.node_addresses(count_max, network)?;
    write_array(out, &addresses, write_node_address);
    Ok(())
}

/// Core's `ParseNetwork` for `getnodeaddresses`: a network it names, or -8.
fn network_name(text: &str) -> Result<&'static str, RpcError> {
    let lower = text.to_ascii_lowercase();
    let lower = if lower == "tor" { "onion" } else { lower.as_str() };
    NETWORK_NAMES
        .into_iter()
        .find(|name| *name == lower)
        .ok_or_else(|| RpcError::invalid_parameter(format!("Network not recognized: {text}")))
}

pub(super) const SETBAN: Method = Method {
    name: "setban",
    category: "network",
    args: &[
        arg("subnet", ArgType::String, false, "the IP address, with an optional /32 or /128"),
        arg("command", ArgType::String, false, "'add' to ban it, 'remove' to lift the ban"),
        arg(
            "bantime",
            ArgType::Number,
            true,
            "seconds (or, with absolute, the end as seconds since the epoch); 0: 24 hours",
        ),
        arg("absolute", ArgType::Bool, true, "whether bantime is an end time (default false)"),
    ],
    description: "Bans an address (closing its connections) or lifts its ban.",
    result: "null (json null)",
    handler: setban,
};

fn setban(context: &MethodContext, params: &Params<'_>, out: &mut Vec<u8>) -> Result<(), RpcError> {
    let add = match string(params.get(1))? {
        "add" => true,
        "remove" => false,
        _ => return Err(help_error(&SETBAN)),
    };
    let address = banned_address(string(params.get(0))?)?;
    if add {
        let ban_seconds = params.optional(2).map(integer::<i64>).transpose()?.unwrap_or(0);
        let absolute = params.optional(3).map(boolean).transpose()?.unwrap_or(false);
        let now = now_seconds();
        if absolute && ban_seconds < now {
            return Err(RpcError::invalid_parameter(
                "Error: Absolute timestamp is in the past".to_owned(),
            ));
        }
        let until_seconds = match (ban_seconds, absolute) {
            // Core's BanMan::Ban: a time of 0 or less is the default.
            (..=0, _) => now.saturating_add(BAN_SECONDS_DEFAULT),
            (end, true) => end,
            (duration, false) => now.saturating_add(duration),
        };
        context.backend.ban(address, until_seconds)?;
    } else {
        context.backend.unban(address)?;
    }
    out.extend_from_slice(b"null");
    Ok(())
}

/// The address `setban` names: an IP, optionally with a netmask covering
/// that one address (`/32`, `/128`, or an all-ones mask). Wider subnets
/// are refused (Ibex bans single addresses); anything else is Core's -30.
pub(crate) fn banned_address(text: &str) -> Result<IpAddr, RpcError> {
    let invalid =
        || RpcError::new(RpcErrorCode::ClientInvalidIpOrSubnet, "Error: Invalid IP/Subnet");
    let (ip_text, mask) = match text.split_once('/') {
        Some((ip_text, mask)) => (ip_text, Some(mask)),
        None => (text, None),
    };
    let ip = ip_text.parse::<IpAddr>().map_err(|_| invalid())?.to_canonical();
    let Some(mask) = mask else { return Ok(ip) };
    let host_bits: u32 = if ip.is_ipv4() { 32 } else { 128 };
    let prefix_bits = match mask.parse::<u32>() {
        Ok(bits) if bits <= host_bits => bits,
        Ok(_) => return Err(invalid()),
        Err(_) => netmask_bits(mask, ip.is_ipv4()).ok_or_else(invalid)?,
    };
    if prefix_bits != host_bits {
        return Err(RpcError::new(
            RpcErrorCode::ClientInvalidIpOrSubnet,
            "Error: Ibex bans single addresses only (a /32 or /128 subnet)",
        ));
    }
    Ok(ip)
}

/// The prefix length of a netmask written as an address of the same
/// family (`255.255.255.0`), if its ones are contiguous.
fn netmask_bits(mask: &str, ipv4: bool) -> Option<u32> {
    let bits = match mask.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) if ipv4 => u128::from(u32::from(v4)) << 96,
        IpAddr::V6(v6) if !ipv4 => u128::from(v6),
        _ => return None,
    };
    let ones = bits.leading_ones();
    (bits.checked_shl(ones).unwrap_or(0) == 0).then_some(ones)
}

pub(super) const LISTBANNED: Method = Method {
    name: "listbanned",
    category: "network",
    args: &[],
    description: "The addresses banned with setban.",
    result:
        "[{\"address\",\"ban_created\",\"banned_until\",\"ban_duration\",\"time_remaining\"},...]",
    handler: |context, _, out| {
        let bans = context.backend.banned()?;
        let now = now_seconds();
        write_array(out, &bans, |out, ban| write_ban(out, ban, now));
        Ok(())
    },
};

pub(super) const CLEARBANNED: Method = Method {
    name: "clearbanned",
    category: "network",
    args: &[],
    description: "Lifts every ban made with setban.",
    result: "null (json null)",
    handler: |context, _, out| {
        context.backend.clear_bans()?;
        out.extend_from_slice(b"null");
        Ok(())
    },
};

/// Core's answer to a bad `command`: the method's help, as -1.
fn help_error(method: &Method) -> RpcError {
    RpcError::with_message(RpcErrorCode::MiscError, full_help(method))
}

fn now_seconds() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

/// A JSON array of `items`, each written by `write`.
fn write_array<T>(out: &mut Vec<u8>, items: &[T], mut write: impl FnMut(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (index, item) in items.iter().enumerate() {
        if index != 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

fn write_added_node(out: &mut Vec<u8>, node: &AddedNodeInfo) {
    open_object(out, "addednode");
    escaped_string(out, &node.added_node);
    key(out, "connected");
    write_boolean(out, node.connection.is_some());
    key(out, "addresses");
    out.push(b'[');
    if let Some(connection) = &node.connection {
        open_object(out, "address");
        escaped_string(out, &connection.address);
        key(out, "connected");
        escaped_string(out, if connection.inbound { "inbound" } else { "outbound" });
        close_object(out);
    }
    out.push(b']');
    close_object(out);
}

fn write_node_address(out: &mut Vec<u8>, address: &NodeAddress) {
    open_object(out, "time");
    write_i64(out, address.time_seconds);
    key(out, "services");
    write_u64(out, address.services);
    key(out, "address");
    escaped_string(out, &address.address);
    key(out, "port");
    write_u64(out, u64::from(address.port));
    key(out, "network");
    escaped_string(out, &address.network);
    close_object(out);
}

fn write_ban(out: &mut Vec<u8>, ban: &BannedSubnet, now_seconds: i64) {
    open_object(out, "address");
    escaped_string(out, &ban.subnet);
    key(out, "ban_created");
    write_i64(out, ban.created_seconds);
    key(out, "banned_until");
    write_i64(out, ban.until_seconds);
    key(out, "ban_duration");
    write_i64(out, ban.until_seconds.saturating_sub(ban.created_seconds));
    key(out, "time_remaining");
    write_i64(out, ban.until_seconds.saturating_sub(now_seconds));
    close_object(out);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn text(out: Vec<u8>) -> String {
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn added_nodes_as_core_writes_them() {
        let mut out = Vec::new();
        let nodes = [
            AddedNodeInfo {
                added_node: "127.0.0.1:18444".to_owned(),
                connection: Some(crate::backend::AddedNodeConnection {
                    address: "127.0.0.1:18444".to_owned(),
                    inbound: false,
                }),
            },
            AddedNodeInfo { added_node: "[::1]:5".to_owned(), connection: None },
        ];
        write_array(&mut out, &nodes, write_added_node);
        assert_eq!(
            text(out),
            r#"[{"addednode":"127.0.0.1:18444","connected":true,"addresses":[{"address":"127.0.0.1:18444","connected":"outbound"}]},{"addednode":"[::1]:5","connected":false,"addresses":[]}]"#
        );
    }

    #[test]
    fn node_addresses_and_bans_as_core_writes_them() {
        let mut out = Vec::new();
        let address = NodeAddress {
            time_seconds: 1_700_000_000,
            services: 1033,
            address: "1.2.3.4".to_owned(),
            port: 8333,
            network: "ipv4".to_owned(),
        };
        write_node_address(&mut out, &address);
        assert_eq!(
            text(out),
            r#"{"time":1700000000,"services":1033,"address":"1.2.3.4","port":8333,"network":"ipv4"}"#
        );
        let mut out = Vec::new();
        let ban = BannedSubnet {
            subnet: "1.2.3.4/32".to_owned(),
            created_seconds: 1_000,
            until_seconds: 87_400,
        };
        write_ban(&mut out, &ban, 1_100);
        assert_eq!(
            text(out),
            r#"{"address":"1.2.3.4/32","ban_created":1000,"banned_until":87400,"ban_duration":86400,"time_remaining":86300}"#
        );
    }

    #[test]
    fn ban_subnets_parsed_as_core_with_single_addresses_only() {
        let v4: IpAddr = "1.2.3.4".parse().unwrap();
        assert_eq!(banned_address("1.2.3.4").unwrap(), v4);
        assert_eq!(banned_address("1.2.3.4/32").unwrap(), v4);
        assert_eq!(banned_address("1.2.3.4/255.255.255.255").unwrap(), v4);
        assert_eq!(banned_address("::ffff:1.2.3.4").unwrap(), v4, "IPv4-mapped is IPv4");
        assert_eq!(banned_address("::1/128").unwrap(), "::1".parse::<IpAddr>().unwrap());
        for invalid in ["bad", "1.2.3.4/33", "1.2.3.4/x", "1.2.3.4/255.0.255.0", "", "1.2.3"] {
            let error = banned_address(invalid).unwrap_err();
            assert_eq!(error.code, RpcErrorCode::ClientInvalidIpOrSubnet, "{invalid}");
            assert_eq!(error.message, "Error: Invalid IP/Subnet", "{invalid}");
        }
        let wide = banned_address("1.2.3.0/24").unwrap_err();
        assert_eq!(wide.code, RpcErrorCode::ClientInvalidIpOrSubnet);
        assert!(wide.message.contains("single addresses"), "{}", wide.message);
        assert!(banned_address("1.2.3.0/255.255.255.0").is_err());
    }

    #[test]
    fn network_names_as_core_parses_them() {
        assert_eq!(network_name("IPv4").unwrap(), "ipv4");
        assert_eq!(network_name("tor").unwrap(), "onion");
        let error = network_name("not_publicly_routable").unwrap_err();
        assert_eq!(error.code, RpcErrorCode::InvalidParameter);
        assert_eq!(error.message, "Network not recognized: not_publicly_routable");
    }
}
