//! Why a payload is not the message its command names, and what Core does
//! about it.

use std::fmt;

use ibex_primitives::DecodeError;
use thiserror::Error;

use crate::command::Command;

/// Why a payload does not decode as the message its command names.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MessageError {
    /// A field could not be read: the payload ended early, or a compact
    /// size is non-canonical or above Core's MAX_SIZE (Core's deserializer
    /// throws; the message is dropped).
    #[error("{command} message, {field}: {source}")]
    Malformed {
        /// The message's command.
        command: Command,
        /// The field being read.
        field: Field,
        /// What went wrong, with the byte offset in the payload.
        source: DecodeError,
    },
    /// A list holds more entries than Core allows.
    #[error("{command} message has {count} {field}, more than the limit of {limit}")]
    TooMany {
        /// The message's command.
        command: Command,
        /// The list.
        field: Field,
        /// Entries declared.
        count: u64,
        /// Core's limit.
        limit: usize,
    },
    /// A byte string is longer than Core allows (Core's deserializer throws;
    /// the message is dropped).
    #[error("{command} message, {field}: {length_bytes} bytes exceeds the limit of {limit_bytes}")]
    TooLong {
        /// The message's command.
        command: Command,
        /// The field.
        field: Field,
        /// Bytes declared.
        length_bytes: u64,
        /// Core's limit.
        limit_bytes: usize,
    },
    /// A byte string is shorter than its message allows (BIP 434's
    /// `featureid`).
    #[error(
        "{command} message, {field}: {length_bytes} bytes is below the minimum of {minimum_bytes}"
    )]
    TooShort {
        /// The message's command.
        command: Command,
        /// The field.
        field: Field,
        /// Bytes declared.
        length_bytes: u64,
        /// The least allowed.
        minimum_bytes: usize,
    },
    /// A field holds a value its message does not allow (BIP 455: a script
    /// form not defined, an amount beyond `MAX_MONEY`).
    #[error("{command} message, {field}: value {value} is not allowed")]
    InvalidValue {
        /// The message's command.
        command: Command,
        /// The field.
        field: Field,
        /// The value read.
        value: u64,
    },
    /// A BIP155 address of a known network has the wrong length (Core's
    /// deserializer throws; the message is dropped).
    #[error("{command} message, network {network_id} address of {length_bytes} bytes, expected {expected_bytes}")]
    AddressLengthMismatch {
        /// The message's command.
        command: Command,
        /// The BIP155 network id.
        network_id: u8,
        /// Bytes declared.
        length_bytes: u64,
        /// The network's address length.
        expected_bytes: usize,
    },
}

/// What Core does with a peer whose message fails to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreResponse {
    /// Drops the message and keeps the peer (`ProcessMessages` catches the
    /// deserializer's exception and logs it).
    IgnoreMessage,
    /// Disconnects the peer, without discouraging its address.
    Disconnect,
    /// Calls `Misbehaving`: the peer is disconnected and its address
    /// discouraged (unless it has the `noban` permission).
    Misbehaving,
}

impl MessageError {
    /// What Core (net_processing.cpp) does when it meets this error.
    pub fn core_response(&self) -> CoreResponse {
        // BIP 455: an answer that is not the coins asked for ends the
        // connection (Core knows no `bspent`).
        if self.command() == Command::SPENT_COINS {
            return CoreResponse::Disconnect;
        }
        let MessageError::TooMany { command, .. } = self else {
            return CoreResponse::IgnoreMessage;
        };
        match *command {
            // "getheaders locator size %lld > %d, disconnect peer=%d"
            Command::GET_HEADERS | Command::GET_BLOCKS => CoreResponse::Disconnect,
            // Core reads a `notfound` of any length and only looks at one of
            // at most MAX_PEER_TX_ANNOUNCEMENTS + MAX_BLOCKS_IN_TRANSIT_PER_PEER
            // (5,016) entries, so one past MAX_INV_SZ has no effect either.
            Command::NOT_FOUND => CoreResponse::IgnoreMessage,
            // "headers message size = %u", "inv message size = %u",
            // "getdata message size = %u", "addr message size = %u".
            _ => CoreResponse::Misbehaving,
        }
    }

    /// The command of the message that failed.
    pub fn command(&self) -> Command {
        match self {
            MessageError::Malformed { command, .. }
            | MessageError::TooMany { command, .. }
            | MessageError::TooLong { command, .. }
            | MessageError::TooShort { command, .. }
            | MessageError::InvalidValue { command, .. }
            | MessageError::AddressLengthMismatch { command, .. } => *command,
        }
    }
}

/// A field of a message, named in [`MessageError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// `version`: the sender's protocol version.
    ProtocolVersion,
    /// Service bits.
    Services,
    /// `version`: the sender's clock.
    Timestamp,
    /// `version`: the receiver's address as the sender sees it.
    ReceiverAddress,
    /// `version`: the sender's own address.
    SenderAddress,
    /// `version`, `ping`, `pong`: a nonce.
    Nonce,
    /// `version`: the user agent.
    UserAgent,
    /// `version`: the sender's best height.
    StartHeight,
    /// `version`: the transaction relay flag.
    Relay,
    /// `sendcmpct`: the high-bandwidth flag.
    HighBandwidth,
    /// `sendcmpct`: the compact blocks version.
    CompactBlocksVersion,
    /// `getheaders`, `getblocks`: the locator's version field.
    LocatorVersion,
    /// `getheaders`, `getblocks`: the locator's hashes.
    LocatorHashes,
    /// `getheaders`, `getblocks`: the stop hash.
    StopHash,
    /// `headers`: the headers.
    Headers,
    /// `headers`: the transaction count after each header.
    TransactionCount,
    /// `inv`, `getdata`, `notfound`: the inventory entries.
    InventoryEntries,
    /// `addr`, `addrv2`: the address entries.
    Addresses,
    /// `addr`, `addrv2`: an entry's time.
    AddressTime,
    /// `addrv2`: the BIP155 network id.
    NetworkId,
    /// `addrv2`: the address bytes.
    AddressBytes,
    /// A port.
    Port,
    /// `feefilter`: the fee rate.
    FeeRate,
    /// `feature`: the feature's id.
    FeatureId,
    /// `feature`: the feature's data.
    FeatureData,
    /// `getbspent`, `bspent`: the block hash.
    BlockHash,
    /// `getbspent`: the cutoff height.
    CutoffHeight,
    /// `bspent`: the coins.
    SpentCoins,
    /// `bspent`: a coin's input index.
    InputIndex,
    /// `bspent`: a coin's height and coinbase flag.
    HeightCode,
    /// `bspent`: a script's form prefix.
    ScriptForm,
    /// `bspent`: a script.
    Script,
    /// `bspent`: an amount.
    Amount,
}

impl fmt::Display for Field {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            Field::ProtocolVersion => "protocol version",
            Field::Services => "services",
            Field::Timestamp => "timestamp",
            Field::ReceiverAddress => "receiver address",
            Field::SenderAddress => "sender address",
            Field::Nonce => "nonce",
            Field::UserAgent => "user agent",
            Field::StartHeight => "start height",
            Field::Relay => "relay flag",
            Field::HighBandwidth => "high-bandwidth flag",
            Field::CompactBlocksVersion => "compact blocks version",
            Field::LocatorVersion => "locator version",
            Field::LocatorHashes => "locator hashes",
            Field::StopHash => "stop hash",
            Field::Headers => "headers",
            Field::TransactionCount => "transaction count",
            Field::InventoryEntries => "inventory entries",
            Field::Addresses => "addresses",
            Field::AddressTime => "address time",
            Field::NetworkId => "network id",
            Field::AddressBytes => "address bytes",
            Field::Port => "port",
            Field::FeeRate => "fee rate",
            Field::FeatureId => "feature id",
            Field::FeatureData => "feature data",
            Field::BlockHash => "block hash",
            Field::CutoffHeight => "cutoff height",
            Field::SpentCoins => "spent coins",
            Field::InputIndex => "input index",
            Field::HeightCode => "height code",
            Field::ScriptForm => "script form",
            Field::Script => "script",
            Field::Amount => "amount",
        })
    }
}
