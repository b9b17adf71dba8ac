//! v1 message framing (Core's `V1Transport`): every message is a 24-byte
//! header followed by its payload.
//!
//! | bytes | field                                                     |
//! |-------|-----------------------------------------------------------|
//! | 4     | network magic (`Params::message_start`)                   |
//! | 12    | command: printable ASCII, NUL-padded ([`Command`])        |
//! | 4     | payload length, little-endian `u32`                       |
//! | 4     | checksum: first 4 bytes of the payload's double SHA-256   |
//!
//! What Core does with a bad frame decides the error's kind
//! ([`FrameError::disconnects`]): a wrong magic or a declared length above
//! [`MESSAGE_PAYLOAD_BYTES_MAX`] is found as soon as the header is in, and
//! Core disconnects (`readHeader` returns -1); a checksum mismatch or an
//! invalid command is found once the whole payload is in, and Core drops
//! that one message and goes on reading the stream (`GetReceivedMessage`
//! sets `reject_message`).
//!
//! [`FrameDecoder`](crate::FrameDecoder) reads frames from a byte stream;
//! [`encode_frame`] writes one.

use ibex_primitives::encode::COMPACT_SIZE_MAX;
use ibex_primitives::hash::sha256d;
use ibex_primitives::limits::BLOCK_WEIGHT_MAX;
use thiserror::Error;

use crate::command::{Command, EscapedCommand, COMMAND_BYTES};

/// Bytes of a frame header: magic, command, length, checksum.
pub const FRAME_HEADER_BYTES: usize = 4 + COMMAND_BYTES + 4 + CHECKSUM_BYTES;
/// Bytes of the network magic.
pub const MAGIC_BYTES: usize = 4;
/// Bytes of the checksum.
pub const CHECKSUM_BYTES: usize = 4;
/// The largest payload Core accepts (`MAX_PROTOCOL_MESSAGE_LENGTH`), in bytes.
pub const MESSAGE_PAYLOAD_BYTES_MAX: usize = 4_000_000;

// Core also checks the length against MAX_SIZE; the smaller limit decides.
const _: () = assert!(MESSAGE_PAYLOAD_BYTES_MAX as u64 <= COMPACT_SIZE_MAX);
// A block of the largest weight has at most that many bytes (each byte
// weighs at least 1), so every valid block fits in one `block` message.
const _: () = assert!(BLOCK_WEIGHT_MAX <= MESSAGE_PAYLOAD_BYTES_MAX);
const _: () = assert!(FRAME_HEADER_BYTES == 24);

/// Why bytes are not a frame, or a frame cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The header's magic is not this network's (Core disconnects).
    #[error("wrong network magic {received:02x?}, expected {expected:02x?}")]
    WrongMagic {
        /// This network's magic.
        expected: [u8; MAGIC_BYTES],
        /// The magic received.
        received: [u8; MAGIC_BYTES],
    },
    /// The declared payload is longer than [`MESSAGE_PAYLOAD_BYTES_MAX`]
    /// (Core disconnects); also returned by [`encode_frame`] for such a payload.
    #[error("payload of {payload_bytes} bytes for command {} exceeds the limit of 4000000", EscapedCommand(.command_bytes))]
    PayloadTooLarge {
        /// The command field, as received (not yet checked).
        command_bytes: [u8; COMMAND_BYTES],
        /// The declared payload length.
        payload_bytes: u64,
    },
    /// The payload does not hash to the header's checksum (Core drops the
    /// message and reads on).
    #[error("checksum {received:02x?} of {payload_bytes}-byte {} payload, expected {expected:02x?}", EscapedCommand(.command_bytes))]
    ChecksumMismatch {
        /// The command field, as received (not yet checked).
        command_bytes: [u8; COMMAND_BYTES],
        /// The payload length.
        payload_bytes: u32,
        /// The first 4 bytes of the payload's double SHA-256.
        expected: [u8; CHECKSUM_BYTES],
        /// The header's checksum.
        received: [u8; CHECKSUM_BYTES],
    },
    /// The command is not printable ASCII followed only by NULs (Core drops
    /// the message and reads on).
    #[error("invalid command {}", EscapedCommand(.command_bytes))]
    InvalidCommand {
        /// The command field, as received.
        command_bytes: [u8; COMMAND_BYTES],
    },
    /// A command name longer than 12 bytes was given to [`Command::new`].
    #[error("command name of {name_bytes} bytes exceeds the limit of 12")]
    CommandTooLong {
        /// The name's length.
        name_bytes: usize,
    },
}

impl FrameError {
    /// Whether Core disconnects the peer for this error. If it does not, the
    /// frame was read whole: the stream is still in step and reading goes on.
    pub fn disconnects(&self) -> bool {
        matches!(self, FrameError::WrongMagic { .. } | FrameError::PayloadTooLarge { .. })
    }
}

/// A frame header, decoded but not yet checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// The network magic.
    pub magic: [u8; MAGIC_BYTES],
    /// The command field, unchecked.
    pub command_bytes: [u8; COMMAND_BYTES],
    /// The declared payload length.
    pub payload_bytes: u32,
    /// The declared checksum.
    pub checksum: [u8; CHECKSUM_BYTES],
}

impl FrameHeader {
    /// Splits the 24 header bytes into their fields (any 24 bytes will do).
    pub fn decode(bytes: &[u8; FRAME_HEADER_BYTES]) -> FrameHeader {
        let mut magic = [0u8; MAGIC_BYTES];
        let mut command_bytes = [0u8; COMMAND_BYTES];
        let mut length = [0u8; 4];
        let mut checksum = [0u8; CHECKSUM_BYTES];
        let (magic_part, rest) = bytes.split_at(MAGIC_BYTES);
        let (command_part, rest) = rest.split_at(COMMAND_BYTES);
        let (length_part, checksum_part) = rest.split_at(4);
        magic.copy_from_slice(magic_part);
        command_bytes.copy_from_slice(command_part);
        length.copy_from_slice(length_part);
        checksum.copy_from_slice(checksum_part);
        FrameHeader { magic, command_bytes, payload_bytes: u32::from_le_bytes(length), checksum }
    }

    /// The checks Core makes as soon as the header is in (`readHeader`): the
    /// magic, then the length. Either failing disconnects.
    pub fn check(&self, magic: [u8; MAGIC_BYTES]) -> Result<(), FrameError> {
        if self.magic != magic {
            return Err(FrameError::WrongMagic { expected: magic, received: self.magic });
        }
        if self.payload_bytes as usize > MESSAGE_PAYLOAD_BYTES_MAX {
            return Err(FrameError::PayloadTooLarge {
                command_bytes: self.command_bytes,
                payload_bytes: u64::from(self.payload_bytes),
            });
        }
        Ok(())
    }
}

/// A frame whose checksum and command passed Core's checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The command.
    pub command: Command,
    /// The payload, at most [`MESSAGE_PAYLOAD_BYTES_MAX`] bytes.
    pub payload: Vec<u8>,
}

/// The first 4 bytes of the double SHA-256 of `payload`.
pub fn payload_checksum(payload: &[u8]) -> [u8; CHECKSUM_BYTES] {
    let hash = sha256d(payload);
    [hash[0], hash[1], hash[2], hash[3]]
}

/// The checks Core makes once the payload is in (`GetReceivedMessage`): the
/// checksum, then the command. Either failing drops only this message.
pub(crate) fn check_payload(header: &FrameHeader, payload: Vec<u8>) -> Result<Frame, FrameError> {
    let expected = payload_checksum(&payload);
    if expected != header.checksum {
        return Err(FrameError::ChecksumMismatch {
            command_bytes: header.command_bytes,
            payload_bytes: header.payload_bytes,
            expected,
            received: header.checksum,
        });
    }
    let command = Command::from_bytes(header.command_bytes)?;
    Ok(Frame { command, payload })
}

/// Appends a frame (header, then `payload`) to `out`. Fails, appending
/// nothing, if `payload` is longer than [`MESSAGE_PAYLOAD_BYTES_MAX`]: Core
/// would disconnect on reading it.
pub fn encode_frame(
    magic: [u8; MAGIC_BYTES],
    command: Command,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let payload_bytes = checked_payload_bytes(command, payload.len())?;
    out.reserve(FRAME_HEADER_BYTES + payload.len());
    write_header(magic, command, payload_bytes, payload_checksum(payload), out);
    out.extend_from_slice(payload);
    Ok(())
}

/// `payload_bytes` as the header's `u32`, if within the limit.
pub(crate) fn checked_payload_bytes(
    command: Command,
    payload_bytes: usize,
) -> Result<u32, FrameError> {
    let too_large = || FrameError::PayloadTooLarge {
        command_bytes: command.to_bytes(),
        payload_bytes: payload_bytes as u64,
    };
    if payload_bytes > MESSAGE_PAYLOAD_BYTES_MAX {
        return Err(too_large());
    }
    u32::try_from(payload_bytes).map_err(|_| too_large())
}

/// Appends the 24 header bytes.
pub(crate) fn write_header(
    magic: [u8; MAGIC_BYTES],
    command: Command,
    payload_bytes: u32,
    checksum: [u8; CHECKSUM_BYTES],
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(&magic);
    out.extend_from_slice(&command.to_bytes());
    out.extend_from_slice(&payload_bytes.to_le_bytes());
    out.extend_from_slice(&checksum);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAINNET: [u8; 4] = [0xf9, 0xbe, 0xb4, 0xd9];

    #[test]
    fn header_fields_split_at_core_offsets() {
        let mut bytes = [0u8; FRAME_HEADER_BYTES];
        bytes[..4].copy_from_slice(&MAINNET);
        bytes[4..8].copy_from_slice(b"ping");
        bytes[16..20].copy_from_slice(&8u32.to_le_bytes());
        bytes[20..].copy_from_slice(&[1, 2, 3, 4]);
        let header = FrameHeader::decode(&bytes);
        assert_eq!(header.magic, MAINNET);
        assert_eq!(&header.command_bytes[..4], b"ping");
        assert_eq!(header.payload_bytes, 8);
        assert_eq!(header.checksum, [1, 2, 3, 4]);
        assert_eq!(header.check(MAINNET), Ok(()));
    }

    #[test]
    fn header_check_order_is_magic_then_length() {
        let header = FrameHeader {
            magic: [0; 4],
            command_bytes: [0xff; 12],
            payload_bytes: u32::MAX,
            checksum: [0; 4],
        };
        assert!(matches!(header.check(MAINNET), Err(FrameError::WrongMagic { .. })));
        let header = FrameHeader { magic: MAINNET, ..header };
        let error = header.check(MAINNET).unwrap_err();
        assert!(matches!(error, FrameError::PayloadTooLarge { payload_bytes: 0xffff_ffff, .. }));
        assert!(error.disconnects());
    }

    #[test]
    fn encoder_refuses_oversized_payload_and_writes_nothing() {
        let payload = vec![0u8; MESSAGE_PAYLOAD_BYTES_MAX + 1];
        let mut out = Vec::new();
        let error = encode_frame(MAINNET, Command::BLOCK, &payload, &mut out).unwrap_err();
        assert!(matches!(error, FrameError::PayloadTooLarge { payload_bytes: 4_000_001, .. }));
        assert!(out.is_empty());
        assert_eq!(
            error.to_string(),
            "payload of 4000001 bytes for command block exceeds the limit of 4000000"
        );
    }
}
