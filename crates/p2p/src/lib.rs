//! Bitcoin's P2P wire protocol as Bitcoin Core speaks it: v1 framing and
//! typed messages. No sockets and no peer logic here: bytes in, frames and
//! messages out, and back.
//!
//! | module | job |
//! |---|---|
//! | [`addrman`] | the address manager: peer addresses in Core's new and tried tables, bucketed by source group, persisted in a checksummed file ([`addrman::AddressBook`]) |
//! | [`framing`] | the 24-byte header, [`encode_frame`], the checks Core makes and what it does when they fail ([`FrameError::disconnects`]) |
//! | [`decoder`] | [`FrameDecoder`]: frames from a byte stream fed in pieces, with bounded memory |
//! | [`command`] | [`Command`], the 12-byte NUL-padded command, and the known commands |
//! | [`services`] | [`ServiceFlags`] |
//! | [`messages`] | [`NetworkMessage`]: decode from (command, payload), encode back; [`encode_message`]; [`MessageError`] with Core's response ([`CoreResponse`]) |
//! | [`transport`] | [`Transport`]: v1 or BIP324 v2 (encrypted, with Core's v1 fallback) behind one interface; [`V2Handshake`], [`V2Transport`], [`V1Transport`] |
//! | [`net`] | the tokio networking layer: TCP connections driving the transports, the version handshake, pings, timeouts, send and receive bounds, bans, and one bounded event queue to the node ([`net::start`], [`net::NetworkHandle`], [`net::NetworkEvent`]) |
//! | [`sync`] | initial block download as pure state machines (events in, [`sync::Action`]s out): locators, Core's two-pass low-work headers sync, headers sync per peer, the block download scheduler with its window, in-flight, byte and stalling rules |
//!
//! A received message goes: bytes -> [`FrameDecoder::push`] ->
//! [`FrameDecoder::next_frame`] (magic, length, checksum, command checked)
//! -> [`NetworkMessage::from_frame`] (fields and list limits checked).
//! Over a [`Transport`], [`Transport::push`] and [`Transport::next_message`]
//! take the decoder's place and give the same [`Frame`]s, v1 or v2.
//!
//! # Napkin math
//!
//! Message sizes (payload bytes; a frame adds 24):
//!
//! | message | payload bytes |
//! |---|---|
//! | `verack`, `sendheaders`, `getaddr`, ... | 0 |
//! | `ping`, `pong`, `feefilter` | 8 |
//! | `version` with a 16-byte user agent | 86 + 16 = 102 |
//! | `getheaders`, full locator (101 hashes) | 4 + 1 + 101 x 32 + 32 = 3,269 |
//! | `headers`, 2,000 headers | 3 + 2,000 x 81 = 162,003 |
//! | `addr`, 1,000 entries | 3 + 1,000 x 30 = 30,003 |
//! | `addrv2`, 1,000 entries of the longest | 3 + 1,000 x (4 + 9 + 1 + 3 + 512 + 2) = 531,003 |
//! | `inv`/`getdata`, 50,000 entries | 3 + 50,000 x 36 = 1,800,003 |
//! | `block` | at most 4,000,000 (the payload limit, = the weight limit) |
//!
//! Memory per peer: the [`FrameDecoder`] holds one 24-byte header and one
//! payload, at most 4,000,000 bytes, and takes no bytes past the frame in
//! progress, so nothing else queues inside it. The payload buffer grows
//! with the bytes received, at most 256 KiB ahead
//! ([`decoder::PAYLOAD_ALLOCATION_STEP_BYTES`]): a peer that declares 4 MB
//! and stalls costs 256 KiB, not 4 MB. With Core's default of 125
//! connections, all mid-way through a full block, that is 125 x 4 MB =
//! 500 MB at most, the same bound as Core's. Decoded messages are no larger
//! than their payloads: a full `inv` decodes to 50,000 x 36 bytes = 1.8 MB,
//! a full `headers` to 2,000 x 80 bytes = 160 kB.
//!
//! Time: the checksum is a double SHA-256 of the payload, about 0.57 ns a
//! byte with SHA-NI (`ibex_primitives::hash`), so 2.3 ms for a 4 MB block;
//! blocks arriving at 125 MB/s (1 Gbit/s) cost 7 % of one core in
//! checksums. Decoding the other messages copies fixed-size fields and is
//! bounded by their sizes above.

pub mod addrman;
pub mod command;
pub mod decoder;
pub mod framing;
pub mod messages;
pub mod net;
pub mod services;
pub mod sync;
pub mod transport;

pub use command::{Command, COMMAND_BYTES};
pub use decoder::FrameDecoder;
pub use framing::{
    encode_frame, payload_checksum, Frame, FrameError, FrameHeader, FRAME_HEADER_BYTES,
    MESSAGE_PAYLOAD_BYTES_MAX,
};
pub use messages::address::{
    AddressEntry, AddressV2Entry, NetworkAddress, ServiceAddress, ADDRESSES_PER_MESSAGE_MAX,
    ADDRESS_V2_BYTES_MAX,
};
pub use messages::error::{CoreResponse, Field, MessageError};
pub use messages::headers::{LocatorRequest, HEADERS_PER_MESSAGE_MAX, LOCATOR_HASHES_MAX};
pub use messages::inventory::{Inventory, InventoryType, INVENTORY_ENTRIES_MAX};
pub use messages::version::{
    UserAgent, VersionMessage, PEER_PROTOCOL_VERSION_MIN, PROTOCOL_VERSION, USER_AGENT_BYTES_MAX,
};
pub use messages::{encode_message, NetworkMessage};
pub use services::ServiceFlags;
pub use transport::{
    HandshakeSecrets, HandshakeStatus, Role, Transport, TransportError, TransportKind, V1Transport,
    V2Handshake, V2Transport,
};
