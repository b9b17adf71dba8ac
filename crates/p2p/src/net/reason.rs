//! Why a connection ends ([`DisconnectReason`]) or an address is banned
//! ([`BanReason`]), displayed in the words Core's `debug.log` uses.
//!
//! A reason's `Display` is what Core logs before `, disconnecting peer=N`
//! (its `CNode::DisconnectMsg`), so the node writes
//! `"{reason}, disconnecting peer={id}"`; refusals of inbound connections
//! (banned, discouraged, full) are whole lines, as Core logs them without a
//! peer id.

use std::fmt;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

use thiserror::Error;

use crate::command::{Command, EscapedCommand};
use crate::framing::FrameError;
use crate::messages::error::{CoreResponse, MessageError};
use crate::services::ServiceFlags;
use crate::sync::{self, Misbehavior};
use crate::transport::TransportError;

/// Why a connection ended, or was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// The peer closed the connection.
    #[error("socket closed")]
    PeerClosed,
    /// Reading from the socket failed.
    #[error("socket recv error: {kind}")]
    ReceiveError {
        /// The operating system's error kind.
        kind: ErrorKind,
    },
    /// Writing to the socket failed.
    #[error("socket send error: {kind}")]
    SendError {
        /// The operating system's error kind.
        kind: ErrorKind,
    },
    /// An outbound connection could not be opened.
    #[error("connect() to {address} failed: {kind}")]
    ConnectFailed {
        /// The address.
        address: SocketAddr,
        /// The operating system's error kind.
        kind: ErrorKind,
    },
    /// An outbound connection attempt took longer than `connect_timeout`.
    #[error("connection attempt to {address} timed out")]
    ConnectTimedOut {
        /// The address.
        address: SocketAddr,
    },
    /// The peer's bytes are not messages (Core's "Header error" and
    /// "V2 transport error" lines, then "receiving message bytes failed").
    #[error("{}", TransportWords(.0))]
    Transport(TransportError),
    /// The transport took no bytes and gave no message: a broken state
    /// that is closed rather than spun on.
    #[error("receiving message bytes failed")]
    TransportStalled,
    /// Within `peer_connect_timeout` of connecting, nothing was received or
    /// nothing was sent.
    #[error(
        "socket no message in first {} seconds{}{}",
        .timeout.as_secs(),
        if *.never_received { ", never received from peer" } else { "" },
        if *.never_sent { ", never sent to peer" } else { "" }
    )]
    NoMessageInFirst {
        /// The timeout (`-peertimeout`).
        timeout: Duration,
        /// Nothing was received.
        never_received: bool,
        /// Nothing was sent.
        never_sent: bool,
    },
    /// Nothing sent for `inactivity_timeout`.
    #[error("socket sending timeout: {}s", .idle.as_secs())]
    SendTimeout {
        /// Time since the last send.
        idle: Duration,
    },
    /// Nothing received for `inactivity_timeout`.
    #[error("socket receive timeout: {}s", .idle.as_secs())]
    ReceiveTimeout {
        /// Time since the last receive.
        idle: Duration,
    },
    /// The BIP324 handshake was not over within `peer_connect_timeout`.
    #[error("V2 handshake timeout")]
    V2HandshakeTimeout,
    /// `version`/`verack` were not exchanged within `peer_connect_timeout`.
    #[error("version handshake timeout")]
    VersionHandshakeTimeout,
    /// Our ping was not answered within `inactivity_timeout`.
    #[error("ping timeout: {:.6}s", .waited.as_secs_f64())]
    PingTimeout {
        /// Time since the ping was sent.
        waited: Duration,
    },
    /// The peer's protocol version is below 31,800 (Core's
    /// `MIN_PEER_PROTO_VERSION`).
    #[error("peer using obsolete version {protocol_version}")]
    ObsoleteVersion {
        /// Its version.
        protocol_version: i32,
    },
    /// An outbound peer lacks services we require.
    #[error(
        "peer does not offer the expected services ({:08x} offered, {:08x} expected)",
        .offered.bits(),
        .expected.bits()
    )]
    MissingServices {
        /// What it offers.
        offered: ServiceFlags,
        /// What we require.
        expected: ServiceFlags,
    },
    /// An inbound connection's `version` carries the nonce of one of our
    /// own outbound connections: we connected to ourselves.
    #[error("connected to self at {address}")]
    SelfConnection {
        /// The inbound connection's address.
        address: SocketAddr,
    },
    /// `wtxidrelay` or `sendaddrv2` after `verack` (BIP339, BIP155: they
    /// negotiate features only between `version` and `verack`).
    #[error("{} received after verack", .command.name())]
    FeatureAfterVerack {
        /// The command.
        command: Command,
    },
    /// A message broke a rule for which Core disconnects
    /// ([`MessageError::core_response`] is not `IgnoreMessage`).
    #[error("{}", RejectionWords(.0))]
    MessageRejected(MessageError),
    /// The node asked: a sync rule (stalling, timeouts).
    #[error("{}", .0.core_log_message())]
    Sync(sync::DisconnectReason),
    /// The node asked: the peer misbehaved (Core's `Misbehaving`).
    #[error("{}", MisbehavingWords(.0))]
    Misbehaving(Misbehavior),
    /// The node asked, for no peer-related reason (Core's `disconnectnode`).
    #[error("disconnect by id")]
    Manual,
    /// The peer's address was banned while it was connected.
    #[error("disconnect by address match (banned)")]
    Banned,
    /// An inbound connection from a banned address, refused.
    #[error("connection from {address} dropped (banned)")]
    RefusedBanned {
        /// The address.
        address: SocketAddr,
    },
    /// An inbound connection from an address that misbehaved, refused.
    #[error("connection from {address} dropped (discouraged)")]
    RefusedDiscouraged {
        /// The address.
        address: SocketAddr,
    },
    /// An inbound connection beyond `inbound_connections_max`, refused.
    #[error("failed to find an eviction candidate - connection dropped (full)")]
    RefusedFull {
        /// The address.
        address: SocketAddr,
    },
    /// An inbound connection closed to make room for a new one when the
    /// inbound slots were full (Core's `AttemptToEvictConnection`).
    #[error("selected inbound connection for eviction")]
    Evicted,
    /// The networking layer is shutting down (Core: "Network not active").
    #[error("Network not active")]
    Shutdown,
    /// A feeler connection got the peer's `version`: its job is done.
    #[error("feeler connection completed")]
    FeelerDone,
    /// An addr-fetch connection received addresses: its job is done.
    #[error("addrfetch connection completed")]
    AddressFetchDone,
    /// An addr-fetch connection got no addresses in 5 minutes (Core's
    /// `10 * AVG_ADDRESS_BROADCAST_INTERVAL`).
    #[error("addrfetch connection timeout")]
    AddressFetchTimeout,
}

impl DisconnectReason {
    /// Whether Core discourages the peer's address for this (its
    /// `Misbehaving`); done only for inbound peers from non-local addresses
    /// (Core spares manual connections and local addresses).
    pub fn discourages(&self) -> bool {
        match self {
            DisconnectReason::Misbehaving(_) => true,
            DisconnectReason::MessageRejected(error) => {
                error.core_response() == CoreResponse::Misbehaving
            }
            _ => false,
        }
    }

    /// Whether we closed for a decision of our own rather than anything the
    /// peer or the network did (no v1 retry follows such a close).
    pub fn is_local_decision(&self) -> bool {
        matches!(
            self,
            DisconnectReason::Manual
                | DisconnectReason::Banned
                | DisconnectReason::Evicted
                | DisconnectReason::Shutdown
                | DisconnectReason::Sync(_)
                | DisconnectReason::Misbehaving(_)
                | DisconnectReason::FeelerDone
                | DisconnectReason::AddressFetchDone
                | DisconnectReason::AddressFetchTimeout
        )
    }
}

/// Why an address is banned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BanReason {
    /// The node's operator asked (Core's `setban`).
    Manual,
    /// A peer from it misbehaved (Core discourages the address).
    Misbehaving,
}

impl fmt::Display for BanReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            BanReason::Manual => "manually added",
            BanReason::Misbehaving => "node misbehaving",
        })
    }
}

/// A transport error in Core's words (net.cpp's `V1Transport::readHeader`
/// and `V2Transport`'s receive states).
struct TransportWords<'a>(&'a TransportError);

impl fmt::Display for TransportWords<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            TransportError::Frame(FrameError::WrongMagic { received, .. }) => {
                write!(formatter, "Header error: Wrong MessageStart {} received", Hex(received))
            }
            TransportError::Frame(FrameError::PayloadTooLarge { command_bytes, payload_bytes }) => {
                write!(
                    formatter,
                    "Header error: Size too large ({}, {payload_bytes} bytes)",
                    EscapedCommand(command_bytes)
                )
            }
            TransportError::V1PeerWrongMagic { received, .. } => {
                write!(
                    formatter,
                    "V2 transport error: V1 peer with wrong MessageStart {}",
                    Hex(received)
                )
            }
            TransportError::MissingGarbageTerminator { .. } => {
                formatter.write_str("V2 transport error: missing garbage terminator")
            }
            TransportError::PacketTooLarge { contents_bytes } => {
                write!(formatter, "V2 transport error: packet too large ({contents_bytes} bytes)")
            }
            TransportError::PacketAuthentication { contents_bytes, .. } => {
                write!(
                    formatter,
                    "V2 transport error: packet decryption failure ({contents_bytes} bytes)"
                )
            }
            other => write!(formatter, "receiving message bytes failed: {other}"),
        }
    }
}

/// A rejected message in the words Core logs for it (net_processing.cpp).
struct RejectionWords<'a>(&'a MessageError);

impl fmt::Display for RejectionWords<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            MessageError::TooMany { command, count, limit, .. }
                if *command == Command::GET_HEADERS || *command == Command::GET_BLOCKS =>
            {
                write!(formatter, "{} locator size {count} > {limit}", command.name())
            }
            MessageError::TooMany { command, count, .. } => {
                write!(formatter, "Misbehaving: {} message size = {count}", command.name())
            }
            other => write!(formatter, "{other}"),
        }
    }
}

/// A dropped message in Core's words (net.cpp's `V1Transport::GetMessage`):
/// `Header error: Wrong checksum (ping, 8 bytes), expected 5df6e0e2 was
/// 00000000`.
pub(crate) struct DroppedMessageWords<'a>(pub &'a TransportError);

impl fmt::Display for DroppedMessageWords<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            TransportError::Frame(FrameError::ChecksumMismatch {
                command_bytes,
                payload_bytes,
                expected,
                received,
            }) => write!(
                formatter,
                "Header error: Wrong checksum ({}, {payload_bytes} bytes), expected {} was {}",
                EscapedCommand(command_bytes),
                Hex(expected),
                Hex(received)
            ),
            TransportError::Frame(FrameError::InvalidCommand { command_bytes })
            | TransportError::InvalidMessageType { command_bytes } => write!(
                formatter,
                "Header error: Invalid message type ({})",
                EscapedCommand(command_bytes)
            ),
            other => write!(formatter, "dropped message: {other}"),
        }
    }
}

/// `Misbehaving`, then `: <message>` when Core gives one.
struct MisbehavingWords<'a>(&'a Misbehavior);

impl fmt::Display for MisbehavingWords<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.core_message() {
            message if message.is_empty() => formatter.write_str("Misbehaving"),
            message => write!(formatter, "Misbehaving: {message}"),
        }
    }
}

/// Bytes as lower-case hex (Core's `HexStr`).
pub(crate) struct Hex<'a>(pub &'a [u8]);

impl fmt::Display for Hex<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(formatter, "{byte:02x}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::error::Field;

    #[test]
    fn core_words() {
        let wrong_magic =
            DisconnectReason::Transport(TransportError::Frame(FrameError::WrongMagic {
                expected: [0xfa, 0xbf, 0xb5, 0xda],
                received: [0xff; 4],
            }));
        assert_eq!(wrong_magic.to_string(), "Header error: Wrong MessageStart ffffffff received");
        let mut command_bytes = [0u8; 12];
        command_bytes[..4].copy_from_slice(b"ping");
        let too_large =
            DisconnectReason::Transport(TransportError::Frame(FrameError::PayloadTooLarge {
                command_bytes,
                payload_bytes: 4_000_001,
            }));
        assert_eq!(too_large.to_string(), "Header error: Size too large (ping, 4000001 bytes)");
        let silent = DisconnectReason::NoMessageInFirst {
            timeout: Duration::from_secs(60),
            never_received: true,
            never_sent: false,
        };
        assert_eq!(
            silent.to_string(),
            "socket no message in first 60 seconds, never received from peer"
        );
        let ping = DisconnectReason::PingTimeout { waited: Duration::from_millis(1_200_500) };
        assert_eq!(ping.to_string(), "ping timeout: 1200.500000s");
        let services = DisconnectReason::MissingServices {
            offered: ServiceFlags::NETWORK,
            expected: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        };
        assert_eq!(
            services.to_string(),
            "peer does not offer the expected services (00000001 offered, 00000009 expected)"
        );
        let after = DisconnectReason::FeatureAfterVerack { command: Command::WTXID_RELAY };
        assert_eq!(after.to_string(), "wtxidrelay received after verack");
        let mut command_bytes = [0u8; 12];
        command_bytes[..4].copy_from_slice(b"ping");
        let checksum = TransportError::Frame(FrameError::ChecksumMismatch {
            command_bytes,
            payload_bytes: 8,
            expected: [0x5d, 0xf6, 0xe0, 0xe2],
            received: [0; 4],
        });
        assert_eq!(
            DroppedMessageWords(&checksum).to_string(),
            "Header error: Wrong checksum (ping, 8 bytes), expected 5df6e0e2 was 00000000"
        );
        let misbehaving = DisconnectReason::Misbehaving(Misbehavior::InvalidBlock {
            hash: ibex_primitives::BlockHash([1; 32]),
        });
        assert_eq!(misbehaving.to_string(), "Misbehaving");
    }

    #[test]
    fn rejected_lists_read_as_core_and_discourage_only_when_core_does() {
        let inventory = MessageError::TooMany {
            command: Command::INVENTORY,
            field: Field::InventoryEntries,
            count: 50_001,
            limit: 50_000,
        };
        let reason = DisconnectReason::MessageRejected(inventory);
        assert_eq!(reason.to_string(), "Misbehaving: inv message size = 50001");
        assert!(reason.discourages());
        let locator = MessageError::TooMany {
            command: Command::GET_HEADERS,
            field: Field::LocatorHashes,
            count: 102,
            limit: 101,
        };
        let reason = DisconnectReason::MessageRejected(locator);
        assert_eq!(reason.to_string(), "getheaders locator size 102 > 101");
        assert!(!reason.discourages());
        assert!(!DisconnectReason::PeerClosed.is_local_decision());
        assert!(DisconnectReason::Shutdown.is_local_decision());
    }
}
