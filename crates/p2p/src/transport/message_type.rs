//! The message type at the front of a v2 packet's contents: one byte, a
//! short id from BIP324's table, or 0x00 followed by the 12-byte command as
//! in v1.
//!
//! The table is Core's `V2_MESSAGE_IDS`: ids 1 to 28 name messages, 29 to
//! 32 are assigned by BIP324 to messages Core does not implement, which
//! Core reads as the empty message type (ignored as unknown); 33 and above
//! are invalid, but for 37, BIP 434's `feature` ([`FEATURE_SHORT_ID`]).
//! Core sends a message type with a short id with it and all
//! others (`version`, `verack`, `sendheaders`, `getaddr`, `wtxidrelay`,
//! `sendaddrv2`, ...) long.
//!
//! Two of Core's quirks, kept: an empty message type goes out as id 29
//! (Core's map from names to ids keeps the first of the empty entries), and
//! a long message type may be sent for a command that has a short id, and
//! is read as that command. One difference, on the receiving side only:
//! Core's v2 check of a long message type lets 0x7f (DEL) through where
//! v1's `IsMessageTypeValid` does not; such a type can name no message Core
//! knows, so Core ignores the message, and here it is dropped as
//! [`TransportError::InvalidMessageType`] since [`Command`] is v1's rule.

use crate::command::{Command, COMMAND_BYTES};
use crate::transport::TransportError;

/// Bytes of a long message type: the 0x00 marker, then the command.
pub const LONG_MESSAGE_TYPE_BYTES: usize = 1 + COMMAND_BYTES;

/// BIP324's short message type ids as Core lists them (index = id; index 0
/// marks the long form).
pub const SHORT_MESSAGE_IDS: [Command; 33] = [
    Command::padded(b""),
    Command::padded(b"addr"),
    Command::padded(b"block"),
    Command::padded(b"blocktxn"),
    Command::padded(b"cmpctblock"),
    Command::padded(b"feefilter"),
    Command::padded(b"filteradd"),
    Command::padded(b"filterclear"),
    Command::padded(b"filterload"),
    Command::padded(b"getblocks"),
    Command::padded(b"getblocktxn"),
    Command::padded(b"getdata"),
    Command::padded(b"getheaders"),
    Command::padded(b"headers"),
    Command::padded(b"inv"),
    Command::padded(b"mempool"),
    Command::padded(b"merkleblock"),
    Command::padded(b"notfound"),
    Command::padded(b"ping"),
    Command::padded(b"pong"),
    Command::padded(b"sendcmpct"),
    Command::padded(b"tx"),
    Command::padded(b"getcfilters"),
    Command::padded(b"cfilter"),
    Command::padded(b"getcfheaders"),
    Command::padded(b"cfheaders"),
    Command::padded(b"getcfcheckpt"),
    Command::padded(b"cfcheckpt"),
    Command::padded(b"addrv2"),
    // Assigned by BIP324, not implemented by Core.
    Command::padded(b""),
    Command::padded(b""),
    Command::padded(b""),
    Command::padded(b""),
];

/// BIP 434's one-byte type for `feature`, outside BIP324's table: read as
/// `feature` (the BIP requires it of a node that implements both); never
/// sent, as a peer without BIP 434 would drop the message, while the long
/// form reaches every peer.
pub const FEATURE_SHORT_ID: u8 = 37;

/// The short id Core sends `command` with, if it has one.
pub fn short_message_id(command: Command) -> Option<u8> {
    SHORT_MESSAGE_IDS
        .iter()
        .skip(1)
        .position(|&entry| entry == command)
        .map(|position| (position + 1) as u8)
}

/// Appends the message type for `command`: its short id, or the long form.
pub(crate) fn write_message_type(command: Command, out: &mut Vec<u8>) {
    match short_message_id(command) {
        Some(id) => out.push(id),
        None => {
            out.push(0);
            out.extend_from_slice(&command.to_bytes());
        }
    }
}

/// Reads the message type from the front of a packet's `contents` (Core's
/// `V2Transport::GetMessageType`): the command and how many bytes the type
/// took. Every error drops just this message.
pub(crate) fn read_message_type(contents: &[u8]) -> Result<(Command, usize), TransportError> {
    let Some((&first_byte, rest)) = contents.split_first() else {
        return Err(TransportError::EmptyContents);
    };
    if first_byte == FEATURE_SHORT_ID {
        return Ok((Command::FEATURE, 1));
    }
    if first_byte != 0 {
        return match SHORT_MESSAGE_IDS.get(usize::from(first_byte)) {
            Some(&command) => Ok((command, 1)),
            None => Err(TransportError::UnknownShortId { id: first_byte }),
        };
    }
    let Some(command_part) = rest.get(..COMMAND_BYTES) else {
        return Err(TransportError::LongMessageTypeTooShort { contents_bytes: contents.len() });
    };
    let mut command_bytes = [0u8; COMMAND_BYTES];
    command_bytes.copy_from_slice(command_part);
    match Command::from_bytes(command_bytes) {
        Ok(command) => Ok((command, LONG_MESSAGE_TYPE_BYTES)),
        Err(_) => Err(TransportError::InvalidMessageType { command_bytes }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::is_valid_command;

    #[test]
    fn table_entries_are_valid_commands_and_match_core() {
        for command in SHORT_MESSAGE_IDS {
            assert!(is_valid_command(&command.to_bytes()), "{command}");
        }
        assert_eq!(short_message_id(Command::ADDRESS), Some(1));
        assert_eq!(short_message_id(Command::BLOCK), Some(2));
        assert_eq!(short_message_id(Command::FEE_FILTER), Some(5));
        assert_eq!(short_message_id(Command::GET_HEADERS), Some(12));
        assert_eq!(short_message_id(Command::INVENTORY), Some(14));
        assert_eq!(short_message_id(Command::PING), Some(18));
        assert_eq!(short_message_id(Command::SEND_COMPACT), Some(20));
        assert_eq!(short_message_id(Command::ADDRESS_V2), Some(28));
        assert_eq!(short_message_id(Command::new("tx").unwrap()), Some(21));
        for command in [Command::VERSION, Command::VERACK, Command::SEND_HEADERS] {
            assert_eq!(short_message_id(command), None, "{command}");
        }
        assert_eq!(short_message_id(Command::new("").unwrap()), Some(29), "Core's quirk");
    }

    #[test]
    fn message_types_round_trip_short_and_long() {
        for command in [Command::PING, Command::VERSION, Command::new("abcdefghijkl").unwrap()] {
            let mut contents = Vec::new();
            write_message_type(command, &mut contents);
            contents.extend_from_slice(b"payload");
            let (read, type_bytes) = read_message_type(&contents).unwrap();
            assert_eq!(read, command);
            assert_eq!(&contents[type_bytes..], b"payload");
        }
        let mut long_ping = vec![0];
        long_ping.extend_from_slice(&Command::PING.to_bytes());
        assert_eq!(read_message_type(&long_ping), Ok((Command::PING, 13)));
    }

    #[test]
    fn invalid_types_follow_core() {
        assert_eq!(read_message_type(&[]), Err(TransportError::EmptyContents));
        assert_eq!(read_message_type(&[29]).map(|(command, _)| command.name().len()), Ok(0));
        assert_eq!(read_message_type(&[32]).map(|(_, bytes)| bytes), Ok(1));
        assert_eq!(read_message_type(&[33]), Err(TransportError::UnknownShortId { id: 33 }));
        assert_eq!(read_message_type(&[255, 1]), Err(TransportError::UnknownShortId { id: 255 }));
        assert_eq!(
            read_message_type(&[0, b'p', b'i', b'n', b'g']),
            Err(TransportError::LongMessageTypeTooShort { contents_bytes: 5 })
        );
        let mut bad = vec![0];
        bad.extend_from_slice(b"pi\0ng\0\0\0\0\0\0\0");
        assert!(matches!(read_message_type(&bad), Err(TransportError::InvalidMessageType { .. })));
        assert!(!TransportError::UnknownShortId { id: 33 }.disconnects());
        assert_eq!(read_message_type(&[36]), Err(TransportError::UnknownShortId { id: 36 }));
        assert_eq!(read_message_type(&[37]), Ok((Command::FEATURE, 1)), "BIP 434");
        assert_eq!(short_message_id(Command::FEATURE), None, "sent in the long form");
    }
}
