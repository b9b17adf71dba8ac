//! The `version` message, read field by field as Core's net_processing.cpp
//! reads it: the first four fields are required; after them each group is
//! read only if bytes remain (`if (!vRecv.empty())`), and whatever follows
//! the relay flag is ignored.
//!
//! | bytes | field               | if absent (Core's default)  |
//! |-------|---------------------|-----------------------------|
//! | 4     | protocol version    | required                    |
//! | 8     | services            | required                    |
//! | 8     | timestamp (seconds) | required                    |
//! | 26    | receiver address    | required                    |
//! | 26+8  | sender address, nonce | zero address, nonce 1     |
//! | 1-9+n | user agent (<= 256) | empty                       |
//! | 4     | start height        | -1                          |
//! | 1     | relay flag          | `None` (Core: relay)        |
//!
//! Core applies two policies between the required fields and the rest: it
//! disconnects a peer without the services it expects, and one older than
//! [`PEER_PROTOCOL_VERSION_MIN`], before it reads the optional fields. So a
//! peer that fails those checks is disconnected even if its optional fields
//! are malformed; [`VersionMessage::decode_required`] gives the required
//! fields alone for a caller that must match that order.

use ibex_primitives::encode::write_var_bytes;

use crate::command::Command;
use crate::messages::address::ServiceAddress;
use crate::messages::error::{Field, MessageError};
use crate::messages::wire::PayloadReader;
use crate::services::ServiceFlags;

/// The protocol version Core speaks (`PROTOCOL_VERSION`, BIP339 wtxid relay).
pub const PROTOCOL_VERSION: i32 = 70_016;
/// Core disconnects peers older than this (`MIN_PEER_PROTO_VERSION`).
pub const PEER_PROTOCOL_VERSION_MIN: i32 = 31_800;
/// The longest user agent Core reads (`MAX_SUBVERSION_LENGTH`), in bytes.
pub const USER_AGENT_BYTES_MAX: usize = 256;

/// A user agent (BIP14 `strSubVer`): any bytes, at most
/// [`USER_AGENT_BYTES_MAX`]. Core keeps the raw bytes and sanitizes them
/// only for display.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct UserAgent(Vec<u8>);

impl UserAgent {
    /// `bytes` as a user agent, if not longer than the limit.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<UserAgent, MessageError> {
        let bytes = bytes.into();
        if bytes.len() > USER_AGENT_BYTES_MAX {
            return Err(user_agent_too_long(bytes.len() as u64));
        }
        Ok(UserAgent(bytes))
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

fn user_agent_too_long(length_bytes: u64) -> MessageError {
    MessageError::TooLong {
        command: Command::VERSION,
        field: Field::UserAgent,
        length_bytes,
        limit_bytes: USER_AGENT_BYTES_MAX,
    }
}

/// A `version` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionMessage {
    /// The sender's protocol version.
    pub protocol_version: i32,
    /// The sender's services.
    pub services: ServiceFlags,
    /// The sender's clock, seconds since the Unix epoch (Core reads a
    /// negative value as 0 when it uses it).
    pub timestamp_seconds: i64,
    /// The receiver's address as the sender sees it (Core ignores its
    /// service bits).
    pub receiver: ServiceAddress,
    /// The sender's address (Core reads past it unused).
    pub sender: ServiceAddress,
    /// A random nonce to detect connections to self.
    pub nonce: u64,
    /// The sender's user agent.
    pub user_agent: UserAgent,
    /// The sender's best height.
    pub start_height: i32,
    /// BIP37 relay flag; `None` when absent, which Core reads as true.
    pub relay: Option<bool>,
}

impl VersionMessage {
    /// Whether the sender wants transactions announced (the flag, or true
    /// when absent).
    pub fn relays_transactions(&self) -> bool {
        self.relay.unwrap_or(true)
    }

    /// The four required fields only, with Core's defaults for the rest:
    /// what Core has read when it applies its service and version checks.
    pub fn decode_required(payload: &[u8]) -> Result<VersionMessage, MessageError> {
        let mut reader = PayloadReader::new(Command::VERSION, payload);
        Self::decode_head(&mut reader)
    }

    fn decode_head(reader: &mut PayloadReader<'_>) -> Result<VersionMessage, MessageError> {
        Ok(VersionMessage {
            protocol_version: reader.i32(Field::ProtocolVersion)?,
            services: ServiceFlags::from_bits(reader.u64(Field::Services)?),
            timestamp_seconds: reader.i64(Field::Timestamp)?,
            receiver: ServiceAddress::decode(reader, Field::ReceiverAddress)?,
            sender: ServiceAddress::default(),
            nonce: 1,
            user_agent: UserAgent::default(),
            start_height: -1,
            relay: None,
        })
    }

    pub(crate) fn decode(payload: &[u8]) -> Result<VersionMessage, MessageError> {
        let mut reader = PayloadReader::new(Command::VERSION, payload);
        let mut message = Self::decode_head(&mut reader)?;
        if reader.is_empty() {
            return Ok(message);
        }
        message.sender = ServiceAddress::decode(&mut reader, Field::SenderAddress)?;
        message.nonce = reader.u64(Field::Nonce)?;
        if reader.is_empty() {
            return Ok(message);
        }
        message.user_agent = decode_user_agent(&mut reader)?;
        if reader.is_empty() {
            return Ok(message);
        }
        message.start_height = reader.i32(Field::StartHeight)?;
        if reader.is_empty() {
            return Ok(message);
        }
        message.relay = Some(reader.bool(Field::Relay)?);
        // Bytes after the relay flag are ignored: Core reads no further
        // (net_processing.cpp, `ProcessMessage` for VERSION), which is how
        // newer fields can be added without breaking older nodes.
        Ok(message)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.protocol_version.to_le_bytes());
        out.extend_from_slice(&self.services.bits().to_le_bytes());
        out.extend_from_slice(&self.timestamp_seconds.to_le_bytes());
        self.receiver.encode(out);
        self.sender.encode(out);
        out.extend_from_slice(&self.nonce.to_le_bytes());
        write_var_bytes(out, self.user_agent.as_bytes());
        out.extend_from_slice(&self.start_height.to_le_bytes());
        if let Some(relay) = self.relay {
            out.push(u8::from(relay));
        }
    }
}

/// Core's `LIMITED_STRING(strSubVer, MAX_SUBVERSION_LENGTH)`: a compact-size
/// length (at most MAX_SIZE), over 256 fails before any byte is read.
fn decode_user_agent(reader: &mut PayloadReader<'_>) -> Result<UserAgent, MessageError> {
    let length_bytes = reader.compact_size(Field::UserAgent)?;
    if length_bytes > USER_AGENT_BYTES_MAX as u64 {
        return Err(user_agent_too_long(length_bytes));
    }
    // `length_bytes <= 256`.
    let bytes = reader.bytes(length_bytes as usize, Field::UserAgent)?;
    Ok(UserAgent(bytes.to_vec()))
}
