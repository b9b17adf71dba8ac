//! [`ConnectionType`]: why a connection exists, which decides what it
//! does (Core's `ConnectionType`, node/connection_types.h).

use std::fmt;

use crate::services::ServiceFlags;

/// Why a connection exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectionType {
    /// The peer connected to us.
    Inbound,
    /// `-connect` or `-addnode`: kept open, never punished.
    Manual,
    /// One of the 8 automatic connections that relay blocks and
    /// addresses (transactions too, in Core; Ibex relays none).
    OutboundFullRelay,
    /// One of the 2 automatic connections that relay blocks only: no
    /// addresses either way, so an observer cannot map them.
    BlockRelay,
    /// A short connection testing an address of the new table: closed
    /// once the peer's `version` arrives.
    Feeler,
    /// A short connection to ask for addresses (`-seednode`, a DNS seed
    /// without the service filter): closed once they arrive.
    AddressFetch,
}

impl ConnectionType {
    /// Core's word for it (`getpeerinfo`'s `connection_type`, the "New ...
    /// peer connected" log line).
    pub fn name(self) -> &'static str {
        match self {
            ConnectionType::Inbound => "inbound",
            ConnectionType::Manual => "manual",
            ConnectionType::OutboundFullRelay => "outbound-full-relay",
            ConnectionType::BlockRelay => "block-relay-only",
            ConnectionType::Feeler => "feeler",
            ConnectionType::AddressFetch => "addr-fetch",
        }
    }

    /// Whether the peer connected to us.
    pub fn is_inbound(self) -> bool {
        self == ConnectionType::Inbound
    }

    /// Whether the address manager chose it (everything but inbound and
    /// manual).
    pub fn is_automatic(self) -> bool {
        !matches!(self, ConnectionType::Inbound | ConnectionType::Manual)
    }

    /// Whether addresses are exchanged with it (Core's
    /// `SetupAddressRelay`: all but block-relay-only).
    pub fn relays_addresses(self) -> bool {
        self != ConnectionType::BlockRelay
    }

    /// Whether a peer that misbehaves is disconnected (and its address
    /// discouraged): all but manual connections (Core's "not punishing
    /// manually connected peer").
    pub fn is_punishable(self) -> bool {
        self != ConnectionType::Manual
    }

    /// Whether headers and blocks are synced from it: not from the short
    /// connections (Core never downloads from addr-fetch peers; feelers
    /// close before).
    pub fn syncs_chain(self) -> bool {
        !matches!(self, ConnectionType::Feeler | ConnectionType::AddressFetch)
    }

    /// The services the peer must announce, else it is dropped (Core's
    /// `ExpectServicesFromConn` with `GetDesirableServiceFlags` during
    /// initial block download: `NODE_NETWORK | NODE_WITNESS`).
    pub fn services_required(self) -> ServiceFlags {
        match self {
            ConnectionType::OutboundFullRelay
            | ConnectionType::BlockRelay
            | ConnectionType::AddressFetch => ServiceFlags::NETWORK | ServiceFlags::WITNESS,
            _ => ServiceFlags::NONE,
        }
    }
}

impl fmt::Display for ConnectionType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}
