//! Typed messages: [`NetworkMessage`] decoded from a command and a payload
//! as Core's net_processing.cpp reads them, and encoded back.
//!
//! Trailing bytes: Core never checks that a message's payload was read to
//! the end (`ProcessMessage` reads the fields it wants from `vRecv` and
//! returns), so neither does this decoder, for any message. Messages without
//! a body (`verack`, `sendheaders`, `getaddr`, ...) accept any payload.
//!
//! Every list's count is compared with Core's limit before anything is
//! allocated; where Core reads the whole list before comparing, so does the
//! decoder (without keeping it), so a list too long *and* cut short is a
//! read failure as in Core ([`MessageError::core_response`]).

pub mod address;
pub mod error;
pub mod feature;
pub mod headers;
pub mod inventory;
pub mod spent_coins;
pub mod version;
mod wire;

use ibex_primitives::encode::write_compact_size;
use ibex_primitives::Header;

use crate::command::Command;
use crate::framing::{
    checked_payload_bytes, payload_checksum, write_header, Frame, FrameError, FRAME_HEADER_BYTES,
    MAGIC_BYTES,
};
use address::{AddressEntry, AddressV2Entry, ADDRESS_LIST, ADDRESS_V2_LIST};
use error::{Field, MessageError};
use feature::FeatureMessage;
use headers::{decode_header, encode_headers, LocatorRequest, HEADERS_LIST};
use inventory::{Inventory, INVENTORY_LIST};
use spent_coins::{GetSpentCoins, SpentCoins};
use version::VersionMessage;
use wire::PayloadReader;

/// A P2P message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkMessage {
    /// `version`: the handshake's opening.
    Version(VersionMessage),
    /// `verack`: the handshake's acknowledgement.
    Verack,
    /// `wtxidrelay` (BIP339): announce transactions by wtxid.
    WtxidRelay,
    /// `sendaddrv2` (BIP155): send addresses as `addrv2`.
    SendAddressV2,
    /// `sendheaders` (BIP130): announce blocks with `headers`.
    SendHeaders,
    /// `sendcmpct` (BIP152).
    SendCompact {
        /// Announce new blocks as `cmpctblock` without asking first.
        high_bandwidth: bool,
        /// The compact blocks version (Core uses only 2).
        compact_blocks_version: u64,
    },
    /// `ping`.
    Ping {
        /// Echoed in the `pong`.
        nonce: u64,
    },
    /// `pong` (BIP31).
    Pong {
        /// The nonce; `None` when the payload is shorter than 8 bytes,
        /// which Core accepts and treats as cancelling the outstanding ping
        /// ("Short payload").
        nonce: Option<u64>,
    },
    /// `getheaders`.
    GetHeaders(LocatorRequest),
    /// `getblocks`.
    GetBlocks(LocatorRequest),
    /// `headers`: at most 2,000 headers.
    Headers(Vec<Header>),
    /// `getdata`: at most 50,000 entries.
    GetData(Vec<Inventory>),
    /// `inv`: at most 50,000 entries.
    Inventory(Vec<Inventory>),
    /// `notfound`: at most 50,000 entries.
    NotFound(Vec<Inventory>),
    /// `block`: the payload, neither parsed nor checked here. Core reads a
    /// block from the front of the payload and ignores any bytes after it,
    /// so a parser that rejects trailing bytes must not be applied to the
    /// whole payload when matching Core.
    Block(Vec<u8>),
    /// `addr`: at most 1,000 entries.
    Address(Vec<AddressEntry>),
    /// `addrv2` (BIP155): at most 1,000 entries.
    AddressV2(Vec<AddressV2Entry>),
    /// `getaddr`.
    GetAddress,
    /// `feefilter` (BIP133).
    FeeFilter {
        /// Announce only transactions paying at least this rate, in
        /// satoshis per 1,000 virtual bytes (Core ignores values outside
        /// `0..=MAX_MONEY`).
        fee_rate_sat_per_kvb: i64,
    },
    /// `mempool` (BIP35).
    Mempool,
    /// `feature` (BIP 434, draft): a feature the peer supports, announced
    /// before `verack`.
    Feature(FeatureMessage),
    /// `getbspent` (BIP 455, draft): the coins a block spent, asked for.
    GetSpentCoins(GetSpentCoins),
    /// `bspent` (BIP 455, draft): the coins a block spent.
    SpentCoins(SpentCoins),
    /// A command this crate does not decode. Core ignores unknown commands;
    /// the payload is not kept (it encodes as empty).
    Unknown {
        /// The command.
        command: Command,
    },
}

impl NetworkMessage {
    /// Decodes `payload` as the message `command` names.
    pub fn decode(command: Command, payload: &[u8]) -> Result<NetworkMessage, MessageError> {
        if command == Command::BLOCK {
            return Ok(NetworkMessage::Block(payload.to_vec()));
        }
        decode_borrowed(command, payload)
    }

    /// Decodes a frame's message; a `block` takes the payload without a copy.
    pub fn from_frame(frame: Frame) -> Result<NetworkMessage, MessageError> {
        if frame.command == Command::BLOCK {
            return Ok(NetworkMessage::Block(frame.payload));
        }
        decode_borrowed(frame.command, &frame.payload)
    }

    /// The command this message is sent with.
    pub fn command(&self) -> Command {
        match self {
            NetworkMessage::Version(_) => Command::VERSION,
            NetworkMessage::Verack => Command::VERACK,
            NetworkMessage::WtxidRelay => Command::WTXID_RELAY,
            NetworkMessage::SendAddressV2 => Command::SEND_ADDRESS_V2,
            NetworkMessage::SendHeaders => Command::SEND_HEADERS,
            NetworkMessage::SendCompact { .. } => Command::SEND_COMPACT,
            NetworkMessage::Ping { .. } => Command::PING,
            NetworkMessage::Pong { .. } => Command::PONG,
            NetworkMessage::GetHeaders(_) => Command::GET_HEADERS,
            NetworkMessage::GetBlocks(_) => Command::GET_BLOCKS,
            NetworkMessage::Headers(_) => Command::HEADERS,
            NetworkMessage::GetData(_) => Command::GET_DATA,
            NetworkMessage::Inventory(_) => Command::INVENTORY,
            NetworkMessage::NotFound(_) => Command::NOT_FOUND,
            NetworkMessage::Block(_) => Command::BLOCK,
            NetworkMessage::Address(_) => Command::ADDRESS,
            NetworkMessage::AddressV2(_) => Command::ADDRESS_V2,
            NetworkMessage::GetAddress => Command::GET_ADDRESS,
            NetworkMessage::FeeFilter { .. } => Command::FEE_FILTER,
            NetworkMessage::Mempool => Command::MEMPOOL,
            NetworkMessage::Feature(_) => Command::FEATURE,
            NetworkMessage::GetSpentCoins(_) => Command::GET_SPENT_COINS,
            NetworkMessage::SpentCoins(_) => Command::SPENT_COINS,
            NetworkMessage::Unknown { command } => *command,
        }
    }

    /// Appends the payload. Lists are written as they are: keeping within
    /// the receive limits is the sender's business.
    pub fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            NetworkMessage::Version(version) => version.encode(out),
            NetworkMessage::SendCompact { high_bandwidth, compact_blocks_version } => {
                out.push(u8::from(*high_bandwidth));
                out.extend_from_slice(&compact_blocks_version.to_le_bytes());
            }
            NetworkMessage::Ping { nonce } | NetworkMessage::Pong { nonce: Some(nonce) } => {
                out.extend_from_slice(&nonce.to_le_bytes());
            }
            NetworkMessage::GetHeaders(request) | NetworkMessage::GetBlocks(request) => {
                request.encode(out);
            }
            NetworkMessage::Headers(headers) => encode_headers(headers, out),
            NetworkMessage::GetData(entries)
            | NetworkMessage::Inventory(entries)
            | NetworkMessage::NotFound(entries) => encode_list(entries, out, Inventory::encode),
            NetworkMessage::Block(bytes) => out.extend_from_slice(bytes),
            NetworkMessage::Address(entries) => encode_list(entries, out, AddressEntry::encode),
            NetworkMessage::AddressV2(entries) => encode_list(entries, out, AddressV2Entry::encode),
            NetworkMessage::FeeFilter { fee_rate_sat_per_kvb } => {
                out.extend_from_slice(&fee_rate_sat_per_kvb.to_le_bytes());
            }
            NetworkMessage::Feature(feature) => feature.encode(out),
            NetworkMessage::GetSpentCoins(request) => request.encode(out),
            NetworkMessage::SpentCoins(answer) => answer.encode(out),
            NetworkMessage::Verack
            | NetworkMessage::WtxidRelay
            | NetworkMessage::SendAddressV2
            | NetworkMessage::SendHeaders
            | NetworkMessage::Pong { nonce: None }
            | NetworkMessage::GetAddress
            | NetworkMessage::Mempool
            | NetworkMessage::Unknown { .. } => {}
        }
    }
}

/// Appends a whole frame for `message`: the payload is written in place
/// after a header whose length and checksum are filled in afterwards. Fails,
/// appending nothing, if the payload exceeds the payload limit.
pub fn encode_message(
    magic: [u8; MAGIC_BYTES],
    message: &NetworkMessage,
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let start = out.len();
    let command = message.command();
    out.resize(start + FRAME_HEADER_BYTES, 0);
    message.encode_payload(out);
    let payload_start = start + FRAME_HEADER_BYTES;
    let payload_bytes = match checked_payload_bytes(command, out.len() - payload_start) {
        Ok(payload_bytes) => payload_bytes,
        Err(error) => {
            out.truncate(start);
            return Err(error);
        }
    };
    let checksum = payload_checksum(&out[payload_start..]);
    let mut header = Vec::with_capacity(FRAME_HEADER_BYTES);
    write_header(magic, command, payload_bytes, checksum, &mut header);
    out[start..payload_start].copy_from_slice(&header);
    Ok(())
}

fn encode_list<T>(entries: &[T], out: &mut Vec<u8>, encode: fn(&T, &mut Vec<u8>)) {
    write_compact_size(out, entries.len() as u64);
    for entry in entries {
        encode(entry, out);
    }
}

/// Every message but `block`, read from a borrowed payload.
fn decode_borrowed(command: Command, payload: &[u8]) -> Result<NetworkMessage, MessageError> {
    let mut reader = PayloadReader::new(command, payload);
    let reader = &mut reader;
    let message = match command {
        Command::VERSION => NetworkMessage::Version(VersionMessage::decode(payload)?),
        Command::VERACK => NetworkMessage::Verack,
        Command::WTXID_RELAY => NetworkMessage::WtxidRelay,
        Command::SEND_ADDRESS_V2 => NetworkMessage::SendAddressV2,
        Command::SEND_HEADERS => NetworkMessage::SendHeaders,
        Command::GET_ADDRESS => NetworkMessage::GetAddress,
        Command::MEMPOOL => NetworkMessage::Mempool,
        Command::SEND_COMPACT => NetworkMessage::SendCompact {
            high_bandwidth: reader.bool(Field::HighBandwidth)?,
            compact_blocks_version: reader.u64(Field::CompactBlocksVersion)?,
        },
        Command::PING => NetworkMessage::Ping { nonce: reader.u64(Field::Nonce)? },
        // Core checks `in_avail() >= 8` first: a short pong is no error.
        Command::PONG => NetworkMessage::Pong {
            nonce: if payload.len() >= 8 { Some(reader.u64(Field::Nonce)?) } else { None },
        },
        Command::GET_HEADERS => NetworkMessage::GetHeaders(LocatorRequest::decode(reader)?),
        Command::GET_BLOCKS => NetworkMessage::GetBlocks(LocatorRequest::decode(reader)?),
        Command::HEADERS => NetworkMessage::Headers(reader.list(HEADERS_LIST, decode_header)?),
        Command::GET_DATA => {
            NetworkMessage::GetData(reader.list(INVENTORY_LIST, Inventory::decode)?)
        }
        Command::INVENTORY => {
            NetworkMessage::Inventory(reader.list(INVENTORY_LIST, Inventory::decode)?)
        }
        Command::NOT_FOUND => {
            NetworkMessage::NotFound(reader.list(INVENTORY_LIST, Inventory::decode)?)
        }
        Command::ADDRESS => {
            NetworkMessage::Address(reader.list(ADDRESS_LIST, AddressEntry::decode)?)
        }
        Command::ADDRESS_V2 => {
            NetworkMessage::AddressV2(reader.list(ADDRESS_V2_LIST, AddressV2Entry::decode)?)
        }
        Command::FEE_FILTER => {
            NetworkMessage::FeeFilter { fee_rate_sat_per_kvb: reader.i64(Field::FeeRate)? }
        }
        Command::BLOCK => NetworkMessage::Block(payload.to_vec()),
        Command::FEATURE => NetworkMessage::Feature(FeatureMessage::decode(reader)?),
        Command::GET_SPENT_COINS => NetworkMessage::GetSpentCoins(GetSpentCoins::decode(reader)?),
        Command::SPENT_COINS => NetworkMessage::SpentCoins(SpentCoins::decode(reader)?),
        _ => NetworkMessage::Unknown { command },
    };
    Ok(message)
}
