//! The added nodes (Core's `m_added_node_params`): the `-addnode` texts
//! and those `addnode add` gave, each kept connected by the networking
//! layer ([`ManualConnection`]) until `addnode remove`.
//!
//! As Core: a text is a duplicate when it is the same text, or when both
//! are numeric addresses naming the same IP and port (the chain's default
//! port when none is written); a host name is resolved once, when added
//! (a name that does not resolve stays listed, unconnected).
//!
//! Bounds: [`ADDED_NODES_MAX`] entries of at most
//! [`ADDED_NODE_TEXT_BYTES_MAX`] bytes each.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Mutex, MutexGuard, PoisonError};

use ibex_p2p::net::address::canonical_ip;
use ibex_p2p::net::{ManualConnection, NetworkError, NetworkHandle};
use ibex_rpc::backend::{BackendError, NetworkRequestError};

/// The most added nodes (Core has no bound; the networking layer keeps at
/// most 256 manual addresses, `-connect` ones included).
pub const ADDED_NODES_MAX: usize = 128;
/// The longest text kept (a host name is at most 253 bytes, plus a port).
pub const ADDED_NODE_TEXT_BYTES_MAX: usize = 300;

/// One added node.
#[derive(Debug)]
struct AddedNode {
    /// The text given.
    text: String,
    /// The address it names, when it resolved.
    address: Option<SocketAddr>,
    /// The connection kept, when it resolved.
    connection: Option<ManualConnection>,
}

/// The added nodes, in the order added.
#[derive(Debug)]
pub struct AddedNodes {
    default_port: u16,
    entries: Mutex<Vec<AddedNode>>,
}

/// `text` as a numeric `IP[:PORT]` (Core's `LookupNumeric`), with
/// `default_port` when it names none.
pub fn numeric_address(text: &str, default_port: u16) -> Option<SocketAddr> {
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Some(SocketAddr::new(canonical_ip(address.ip()), address.port()));
    }
    let bare = text.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')).unwrap_or(text);
    bare.parse::<IpAddr>().ok().map(|ip| SocketAddr::new(canonical_ip(ip), default_port))
}

/// `text` as an address to connect to: numeric, else resolved through the
/// system's resolver (`HOST[:PORT]`).
pub fn resolve(text: &str, default_port: u16) -> Option<SocketAddr> {
    if let Some(address) = numeric_address(text, default_port) {
        return Some(address);
    }
    if text.is_empty() || text.len() > ADDED_NODE_TEXT_BYTES_MAX {
        return None;
    }
    let has_port = text.rsplit_once(':').is_some_and(|(_, port)| port.parse::<u16>().is_ok());
    let with_port = if has_port { text.to_owned() } else { format!("{text}:{default_port}") };
    with_port.to_socket_addrs().ok()?.next()
}

/// A refusal of the networking layer's, in the RPC's terms.
pub fn refusal(error: NetworkError) -> BackendError {
    match error {
        NetworkError::InvalidConfig { max, .. } => NetworkRequestError::LimitReached {
            what: "manual addresses",
            count_max: usize::try_from(max).unwrap_or(usize::MAX),
        }
        .into(),
        NetworkError::ManualConnectionsFull { count_max } => {
            NetworkRequestError::LimitReached { what: "one-try connections", count_max }.into()
        }
        _ => BackendError::Stopped,
    }
}

impl AddedNodes {
    /// No added nodes; numeric texts without a port name `default_port`.
    pub fn new(default_port: u16) -> AddedNodes {
        AddedNodes { default_port, entries: Mutex::new(Vec::new()) }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<AddedNode>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `text` (resolved to `address`, if it was) and keeps it
    /// connected through `network` (Core's `AddNode`).
    pub fn add(
        &self,
        network: &NetworkHandle,
        text: &str,
        address: Option<SocketAddr>,
    ) -> Result<(), BackendError> {
        let numeric = numeric_address(text, self.default_port);
        let mut entries = self.lock();
        let duplicate = entries.iter().any(|entry| {
            entry.text == text
                || numeric.is_some_and(|ours| {
                    numeric_address(&entry.text, self.default_port) == Some(ours)
                })
        });
        if duplicate {
            return Err(NetworkRequestError::NodeAlreadyAdded.into());
        }
        if entries.len() >= ADDED_NODES_MAX {
            let limit = NetworkRequestError::LimitReached {
                what: "added nodes",
                count_max: ADDED_NODES_MAX,
            };
            return Err(limit.into());
        }
        if text.len() > ADDED_NODE_TEXT_BYTES_MAX {
            let limit = NetworkRequestError::LimitReached {
                what: "bytes in an added node",
                count_max: ADDED_NODE_TEXT_BYTES_MAX,
            };
            return Err(limit.into());
        }
        let connection =
            address.map(|address| network.keep_connected(address)).transpose().map_err(refusal)?;
        entries.push(AddedNode { text: text.to_owned(), address, connection });
        Ok(())
    }

    /// Removes `text` (Core's `RemoveAddedNode`: the same text); its open
    /// connection stays, it is just no longer reconnected.
    pub fn remove(&self, text: &str) -> Result<(), BackendError> {
        let mut entries = self.lock();
        let Some(position) = entries.iter().position(|entry| entry.text == text) else {
            return Err(NetworkRequestError::NodeNotAdded.into());
        };
        let removed = entries.remove(position);
        drop(entries);
        if let Some(connection) = removed.connection {
            connection.remove();
        }
        Ok(())
    }

    /// Each added node's text and the address it resolved to, in order.
    pub fn list(&self) -> Vec<(String, Option<SocketAddr>)> {
        self.lock().iter().map(|entry| (entry.text.clone(), entry.address)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_addresses_as_core_reads_them() {
        let parsed = |text| numeric_address(text, 18444).map(|address| address.to_string());
        assert_eq!(parsed("10.0.0.1").as_deref(), Some("10.0.0.1:18444"));
        assert_eq!(parsed("10.0.0.1:5").as_deref(), Some("10.0.0.1:5"));
        assert_eq!(parsed("[::1]:5").as_deref(), Some("[::1]:5"));
        assert_eq!(parsed("::1").as_deref(), Some("[::1]:18444"));
        assert_eq!(parsed("[::ffff:10.0.0.1]:7").as_deref(), Some("10.0.0.1:7"));
        assert_eq!(parsed("example.invalid"), None);
        assert_eq!(parsed(""), None);
        assert_eq!(resolve("127.0.0.1", 1).map(|address| address.port()), Some(1));
        assert_eq!(resolve(&"a".repeat(400), 1), None);
    }
}
