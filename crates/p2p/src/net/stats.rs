//! What the node can read about peers and traffic: [`PeerVersion`] (the
//! handshake's outcome), [`PeerInfo`] (Core's `getpeerinfo` fields) and
//! [`NetTotals`] (`getnettotals`).

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use crate::messages::address::ServiceAddress;
use crate::messages::version::{UserAgent, PROTOCOL_VERSION};
use crate::net::connection_type::ConnectionType;
use crate::net::permissions::PeerPermissions;
use crate::services::ServiceFlags;
use crate::sync::PeerId;
use crate::transport::TransportKind;

/// What a peer told us in its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerVersion {
    /// Its protocol version.
    pub protocol_version: i32,
    /// Its services.
    pub services: ServiceFlags,
    /// Its user agent, raw (see [`PeerVersion::user_agent_sanitized`]).
    pub user_agent: UserAgent,
    /// Its best height when it connected (Core's `startingheight`).
    pub start_height: i32,
    /// Whether it wants transactions announced (its relay flag, true when
    /// absent).
    pub relay: bool,
    /// Its clock, seconds since the Unix epoch (0 when it sent a negative
    /// value, as Core reads it).
    pub timestamp_seconds: i64,
    /// Its clock less ours when its `version` arrived, in seconds (Core's
    /// `timeoffset`).
    pub time_offset_seconds: i64,
    /// Our address as it sees us (Core's `addrlocal`).
    pub address_local: ServiceAddress,
    /// It sent `wtxidrelay` before `verack` (BIP339).
    pub wtxid_relay: bool,
    /// It sent `sendaddrv2` before `verack` (BIP155).
    pub wants_address_v2: bool,
    /// It sent BIP 434's `feature blockspentcoinsv1` before `verack`: it
    /// answers BIP 455's `getbspent`.
    pub serves_spent_coins: bool,
}

impl PeerVersion {
    /// The version both sides speak: the lower of ours and its.
    pub fn common_version(&self) -> i32 {
        self.protocol_version.min(PROTOCOL_VERSION)
    }

    /// The user agent as Core shows it (`SanitizeString`: only letters,
    /// digits and ` .,;-_/:?@()` are kept).
    pub fn user_agent_sanitized(&self) -> String {
        sanitize(self.user_agent.as_bytes())
    }
}

/// Core's `SanitizeString` with `SAFE_CHARS_DEFAULT`.
pub fn sanitize(bytes: &[u8]) -> String {
    bytes
        .iter()
        .filter(|byte| byte.is_ascii_alphanumeric() || b" .,;-_/:?@()".contains(byte))
        .map(|&byte| char::from(byte))
        .collect()
}

/// One connection as `getpeerinfo` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The connection's id.
    pub id: PeerId,
    /// The peer's address.
    pub address: SocketAddr,
    /// Our end of the connection (Core's `addrbind`).
    pub local_address: Option<SocketAddr>,
    /// Whether the peer connected to us.
    pub inbound: bool,
    /// Why the connection exists (`getpeerinfo`'s `connection_type`).
    pub connection: ConnectionType,
    /// v1, v2, or still detecting.
    pub transport: TransportKind,
    /// The BIP324 session id (v2 only).
    pub session_id: Option<[u8; 32]>,
    /// The handshake's outcome, once `version` arrived.
    pub version: Option<PeerVersion>,
    /// Whether `version` and `verack` were both exchanged.
    pub handshake_complete: bool,
    /// When the connection opened (Core's `conntime`).
    pub connected_at: SystemTime,
    /// When bytes were last written to the socket.
    pub last_send: Option<SystemTime>,
    /// When bytes were last read from the socket.
    pub last_receive: Option<SystemTime>,
    /// Bytes written to the socket.
    pub bytes_sent: u64,
    /// Bytes read from the socket.
    pub bytes_received: u64,
    /// The last ping's round trip (Core's `pingtime`).
    pub last_ping: Option<Duration>,
    /// The fastest ping's round trip (Core's `minping`).
    pub min_ping: Option<Duration>,
    /// How long the unanswered ping has waited (Core's `pingwait`).
    pub ping_wait: Option<Duration>,
    /// Bytes queued for the peer and not yet written (Core's send buffer).
    pub send_queue_bytes: usize,
    /// What `-whitelist` grants it (`getpeerinfo`'s `permissions`).
    pub permissions: PeerPermissions,
}

/// Traffic over all connections since the start (Core's `getnettotals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetTotals {
    /// Bytes read from sockets.
    pub bytes_received: u64,
    /// Bytes written to sockets.
    pub bytes_sent: u64,
    /// When these were read (Core's `timemillis`).
    pub time: SystemTime,
    /// Informational events (connections refused or closed before their
    /// handshake) dropped because the event queue was full.
    pub events_dropped: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitized_as_core() {
        assert_eq!(sanitize(b"/Satoshi:27.0.0/"), "/Satoshi:27.0.0/");
        assert_eq!(sanitize(b"/evil\n\x00<script>:1(2)/"), "/evilscript:1(2)/");
    }
}
