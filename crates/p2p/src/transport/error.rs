//! Why a transport cannot go on, or drops one message, or cannot be built.

use thiserror::Error;

use crate::command::{EscapedCommand, COMMAND_BYTES};
use crate::framing::{FrameError, MAGIC_BYTES};
use crate::transport::{GARBAGE_BYTES_MAX, PACKET_CONTENTS_BYTES_MAX};

/// Why bytes from a peer are not a message, or a transport cannot be built
/// or cannot send. [`TransportError::disconnects`] tells what Core does.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TransportError {
    /// A v1 frame error (a v1 transport, or a v2 responder that fell back
    /// to v1); [`FrameError::disconnects`] decides. Also returned when a
    /// message to send has a payload above the limit.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// Responder: bytes 4..16 are a v1 `version` header but the first 4 are
    /// another network's magic (Core's `ProcessReceivedKeyBytes`: "V1 peer
    /// with wrong MessageStart"; disconnects).
    #[error("v1 peer with wrong network magic {received:02x?}, expected {expected:02x?}")]
    V1PeerWrongMagic {
        /// This network's magic.
        expected: [u8; MAGIC_BYTES],
        /// The magic received.
        received: [u8; MAGIC_BYTES],
    },
    /// 4,095 bytes of garbage and 16 more came without the garbage
    /// terminator (Core: "missing garbage terminator"; disconnects).
    #[error("no garbage terminator after {received_bytes} bytes, the limit is {GARBAGE_BYTES_MAX} bytes of garbage")]
    MissingGarbageTerminator {
        /// Bytes received since the peer's key.
        received_bytes: usize,
    },
    /// A packet's decrypted length is above Core's limit (1 + 12 + 4,000,000
    /// bytes of contents); found before anything is allocated for it
    /// (Core: "packet too large"; disconnects).
    #[error("packet of {contents_bytes} bytes of contents exceeds the limit of {PACKET_CONTENTS_BYTES_MAX}")]
    PacketTooLarge {
        /// The declared contents length.
        contents_bytes: u32,
    },
    /// A packet failed ChaCha20-Poly1305 authentication: tampered, or sent
    /// with other keys (Core: "packet decryption failure"; disconnects).
    #[error("packet {packet_index} with {contents_bytes} bytes of contents failed authentication")]
    PacketAuthentication {
        /// Packets received before this one (handshake packets included).
        packet_index: u64,
        /// The declared contents length.
        contents_bytes: u32,
    },
    /// A packet with no contents at all, so no message type (Core drops the
    /// message and reads on).
    #[error("packet without a message type")]
    EmptyContents,
    /// A 1-byte message type with no message assigned (33 and above: Core
    /// drops the message and reads on).
    #[error("unknown short message type id {id}")]
    UnknownShortId {
        /// The id.
        id: u8,
    },
    /// A long (0x00-prefixed) message type with fewer than 12 bytes after
    /// the 0x00 (Core drops the message and reads on).
    #[error("long message type cut short: {contents_bytes} bytes of contents")]
    LongMessageTypeTooShort {
        /// The packet's contents length.
        contents_bytes: usize,
    },
    /// A long message type that is not printable ASCII followed only by NUL
    /// padding (Core drops the message and reads on).
    #[error("invalid message type {}", EscapedCommand(.command_bytes))]
    InvalidMessageType {
        /// The 12 bytes after the 0x00.
        command_bytes: [u8; COMMAND_BYTES],
    },
    /// More garbage than BIP324 allows was given to send.
    #[error("garbage of {garbage_bytes} bytes exceeds the limit of {GARBAGE_BYTES_MAX}")]
    GarbageTooLong {
        /// The garbage's length.
        garbage_bytes: usize,
    },
    /// The 32 bytes given are not a secp256k1 secret key (zero, or not below
    /// the group order).
    #[error("invalid secp256k1 secret key")]
    InvalidSecretKey,
    /// The operating system's random source failed.
    #[error("operating system random source failed: {source}")]
    RandomSource {
        /// The error from the random source.
        source: getrandom::Error,
    },
    /// Messages given before the v2 keys exist wait in a queue, and this one
    /// would take it past its limit.
    #[error("send queue of {queued_bytes} bytes cannot take {payload_bytes} more, the limit is {limit_bytes}")]
    SendQueueFull {
        /// Payload bytes already queued.
        queued_bytes: usize,
        /// The rejected message's payload length.
        payload_bytes: usize,
        /// The queue's limit.
        limit_bytes: usize,
    },
}

impl TransportError {
    /// Whether Core disconnects the peer for this error (for errors about
    /// building a transport: whether the connection cannot go on). If it
    /// does not, only that one message was dropped: the stream is still in
    /// step and reading goes on.
    pub fn disconnects(&self) -> bool {
        match self {
            TransportError::Frame(error) => error.disconnects(),
            TransportError::EmptyContents
            | TransportError::UnknownShortId { .. }
            | TransportError::LongMessageTypeTooShort { .. }
            | TransportError::InvalidMessageType { .. }
            | TransportError::SendQueueFull { .. } => false,
            TransportError::V1PeerWrongMagic { .. }
            | TransportError::MissingGarbageTerminator { .. }
            | TransportError::PacketTooLarge { .. }
            | TransportError::PacketAuthentication { .. }
            | TransportError::GarbageTooLong { .. }
            | TransportError::InvalidSecretKey
            | TransportError::RandomSource { .. } => true,
        }
    }
}
