//! The 12-byte command (Core: "message type") of a v1 frame header.
//!
//! A command is printable ASCII (0x20..=0x7e) followed only by NUL padding,
//! Core's `CMessageHeader::IsMessageTypeValid`: an all-NUL command is valid,
//! a NUL followed by anything else is not, and neither is any byte outside
//! the printable range (Core compares a signed `char`, so 0x80..=0xff fail
//! as well).

use std::fmt;

use crate::framing::FrameError;

/// Bytes of the command field of a frame header (Core's `MESSAGE_TYPE_SIZE`).
pub const COMMAND_BYTES: usize = 12;

/// A valid command: printable ASCII, NUL-padded to [`COMMAND_BYTES`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Command([u8; COMMAND_BYTES]);

impl Command {
    /// `version`.
    pub const VERSION: Command = Command::padded(b"version");
    /// `verack`.
    pub const VERACK: Command = Command::padded(b"verack");
    /// `wtxidrelay` (BIP339).
    pub const WTXID_RELAY: Command = Command::padded(b"wtxidrelay");
    /// `sendaddrv2` (BIP155).
    pub const SEND_ADDRESS_V2: Command = Command::padded(b"sendaddrv2");
    /// `sendheaders` (BIP130).
    pub const SEND_HEADERS: Command = Command::padded(b"sendheaders");
    /// `sendcmpct` (BIP152).
    pub const SEND_COMPACT: Command = Command::padded(b"sendcmpct");
    /// `ping`.
    pub const PING: Command = Command::padded(b"ping");
    /// `pong` (BIP31).
    pub const PONG: Command = Command::padded(b"pong");
    /// `getheaders`.
    pub const GET_HEADERS: Command = Command::padded(b"getheaders");
    /// `getblocks`.
    pub const GET_BLOCKS: Command = Command::padded(b"getblocks");
    /// `headers`.
    pub const HEADERS: Command = Command::padded(b"headers");
    /// `getdata`.
    pub const GET_DATA: Command = Command::padded(b"getdata");
    /// `inv`.
    pub const INVENTORY: Command = Command::padded(b"inv");
    /// `notfound`.
    pub const NOT_FOUND: Command = Command::padded(b"notfound");
    /// `block`.
    pub const BLOCK: Command = Command::padded(b"block");
    /// `addr`.
    pub const ADDRESS: Command = Command::padded(b"addr");
    /// `addrv2` (BIP155).
    pub const ADDRESS_V2: Command = Command::padded(b"addrv2");
    /// `getaddr`.
    pub const GET_ADDRESS: Command = Command::padded(b"getaddr");
    /// `feefilter` (BIP133).
    pub const FEE_FILTER: Command = Command::padded(b"feefilter");
    /// `mempool` (BIP35).
    pub const MEMPOOL: Command = Command::padded(b"mempool");
    /// `feature` (BIP 434, draft).
    pub const FEATURE: Command = Command::padded(b"feature");
    /// `getbspent` (BIP 455, draft).
    pub const GET_SPENT_COINS: Command = Command::padded(b"getbspent");
    /// `bspent` (BIP 455, draft).
    pub const SPENT_COINS: Command = Command::padded(b"bspent");

    /// Pads a name known at compile time; only for the constants above and
    /// BIP324's table of short ids (`transport::message_type`), whose
    /// validity the tests check (a longer name would be cut).
    pub(crate) const fn padded(name: &[u8]) -> Command {
        let mut bytes = [0u8; COMMAND_BYTES];
        let mut index = 0;
        while index < name.len() && index < COMMAND_BYTES {
            bytes[index] = name[index];
            index += 1;
        }
        Command(bytes)
    }

    /// The command called `name`: at most 12 printable ASCII characters.
    pub fn new(name: &str) -> Result<Command, FrameError> {
        let name_bytes = name.as_bytes();
        if name_bytes.len() > COMMAND_BYTES {
            return Err(FrameError::CommandTooLong { name_bytes: name_bytes.len() });
        }
        let mut bytes = [0u8; COMMAND_BYTES];
        bytes[..name_bytes.len()].copy_from_slice(name_bytes);
        // A NUL inside `name` would end the name early: rejected below unless
        // only NULs follow it, in which case the command is the shorter name.
        Command::from_bytes(bytes)
    }

    /// The 12 header bytes as a command, if Core's `IsMessageTypeValid`
    /// accepts them.
    pub fn from_bytes(bytes: [u8; COMMAND_BYTES]) -> Result<Command, FrameError> {
        if is_valid_command(&bytes) {
            Ok(Command(bytes))
        } else {
            Err(FrameError::InvalidCommand { command_bytes: bytes })
        }
    }

    /// The 12 bytes as sent in a frame header.
    pub fn to_bytes(self) -> [u8; COMMAND_BYTES] {
        self.0
    }

    /// The name without its NUL padding.
    pub fn name(&self) -> &str {
        let length = self.0.iter().position(|&byte| byte == 0).unwrap_or(COMMAND_BYTES);
        // Printable ASCII is always UTF-8.
        std::str::from_utf8(&self.0[..length]).unwrap_or("")
    }
}

/// Core's `IsMessageTypeValid`: printable ASCII, then only NULs.
pub(crate) fn is_valid_command(bytes: &[u8; COMMAND_BYTES]) -> bool {
    let name_length = bytes.iter().position(|&byte| byte == 0).unwrap_or(COMMAND_BYTES);
    let (name, padding) = bytes.split_at(name_length);
    name.iter().all(|&byte| (0x20..=0x7e).contains(&byte)) && padding.iter().all(|&byte| byte == 0)
}

/// Writes command bytes the way a log should show untrusted ones: printable
/// ASCII as is, NUL padding dropped, anything else as `\xNN`.
pub(crate) fn write_escaped(bytes: &[u8], formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
    let length = bytes.iter().rposition(|&byte| byte != 0).map_or(0, |last| last + 1);
    for &byte in &bytes[..length] {
        if (0x20..=0x7e).contains(&byte) && byte != b'\\' {
            write!(formatter, "{}", char::from(byte))?;
        } else {
            write!(formatter, "\\x{byte:02x}")?;
        }
    }
    Ok(())
}

/// Displays raw command bytes escaped (see [`write_escaped`]).
pub(crate) struct EscapedCommand<'a>(pub &'a [u8; COMMAND_BYTES]);

impl fmt::Display for EscapedCommand<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(self.0, formatter)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl fmt::Debug for Command {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "Command({:?})", self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: [(Command, &str); 23] = [
        (Command::VERSION, "version"),
        (Command::VERACK, "verack"),
        (Command::WTXID_RELAY, "wtxidrelay"),
        (Command::SEND_ADDRESS_V2, "sendaddrv2"),
        (Command::SEND_HEADERS, "sendheaders"),
        (Command::SEND_COMPACT, "sendcmpct"),
        (Command::PING, "ping"),
        (Command::PONG, "pong"),
        (Command::GET_HEADERS, "getheaders"),
        (Command::GET_BLOCKS, "getblocks"),
        (Command::HEADERS, "headers"),
        (Command::GET_DATA, "getdata"),
        (Command::INVENTORY, "inv"),
        (Command::NOT_FOUND, "notfound"),
        (Command::BLOCK, "block"),
        (Command::ADDRESS, "addr"),
        (Command::ADDRESS_V2, "addrv2"),
        (Command::GET_ADDRESS, "getaddr"),
        (Command::FEE_FILTER, "feefilter"),
        (Command::MEMPOOL, "mempool"),
        (Command::FEATURE, "feature"),
        (Command::GET_SPENT_COINS, "getbspent"),
        (Command::SPENT_COINS, "bspent"),
    ];

    #[test]
    fn known_commands_are_valid_and_named() {
        for (command, name) in KNOWN {
            assert!(is_valid_command(&command.to_bytes()), "{name}");
            assert_eq!(command.name(), name);
            assert_eq!(Command::new(name), Ok(command));
        }
    }

    #[test]
    fn validity_follows_core() {
        assert!(is_valid_command(&[0; 12]), "all NUL is valid in Core");
        assert!(is_valid_command(b"abcdefghijkl"), "12 characters, no NUL");
        assert!(is_valid_command(b" ~\0\0\0\0\0\0\0\0\0\0"), "space and tilde are printable");
        assert!(!is_valid_command(b"ver\0ack\0\0\0\0\0"), "text after a NUL");
        assert!(!is_valid_command(b"version\x1f\0\0\0\0"), "control character");
        assert!(!is_valid_command(b"version\x7f\0\0\0\0"), "DEL");
        assert!(!is_valid_command(b"version\x80\0\0\0\0"), "high bit");
    }

    #[test]
    fn new_rejects_long_and_unprintable_names() {
        assert!(Command::new("abcdefghijkl").is_ok());
        assert_eq!(
            Command::new("abcdefghijklm"),
            Err(FrameError::CommandTooLong { name_bytes: 13 })
        );
        assert!(Command::new("tab\there").is_err());
        assert!(Command::new("é").is_err());
        assert_eq!(Command::new("ping\0").map(|command| command.name().len()), Ok(4));
        assert!(Command::new("pi\0ng").is_err());
    }

    #[test]
    fn escaped_display_shows_bad_bytes() {
        let bytes = *b"ver\0a\\\xff\0\0\0\0\0";
        assert_eq!(EscapedCommand(&bytes).to_string(), "ver\\x00a\\x5c\\xff");
    }
}
