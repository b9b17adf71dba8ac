//! Transports: how messages go over a connection. v1 (24-byte headers in
//! the clear) or BIP324 v2 (encrypted packets), behind one interface,
//! [`Transport`], sans IO: bytes in, frames out, messages in, bytes out. No
//! sockets, no timers: a connection layer reads the socket into
//! [`Transport::push`], takes messages with [`Transport::next_message`],
//! and writes what [`Transport::encode`] and [`Transport::take_output`]
//! append.
//!
//! | module | job |
//! |---|---|
//! | [`secrets`] | [`HandshakeSecrets`]: the ephemeral key, its ElligatorSwift encoding, the garbage; [`Role`] |
//! | `keys` | ECDH and HKDF-SHA256 into the session keys, terminators and id |
//! | `cipher` | FSChaCha20 (lengths), FSChaCha20Poly1305 (packets), rekeying every 224; the packet layout |
//! | `packet` | packets from a byte stream, length checked before allocation |
//! | [`handshake`] | [`V2Handshake`]: v1 detection, keys, garbage terminator, version packet, decoys |
//! | [`message_type`] | BIP324's 1-byte message type ids (Core's table) and the 13-byte long form |
//! | [`v2`] | [`V2Transport`]: handshake, then messages; v1 fallback |
//! | [`v1`] | [`V1Transport`]: the v1 frame decoder and encoder |
//!
//! # As Core does it (`-v2transport=1`, the default since Core 27)
//!
//! - Outbound to a peer advertising `NODE_P2P_V2`: [`Transport::v2_initiator`].
//!   If the peer closes before sending a single byte, after we sent at least
//!   24 bytes (enough for a v1 peer to have read a bad header),
//!   [`Transport::should_reconnect_with_v1`] says so and the caller
//!   reconnects with [`Transport::v1`] (Core's `ShouldReconnectV1`, used by
//!   `DisconnectNodes` to queue a v1 reconnection). Other outbound peers:
//!   [`Transport::v1`].
//! - Inbound: [`Transport::v2_responder`]. It sends nothing until the
//!   peer's first bytes differ from the 16 a v1 peer sends first (its magic
//!   then `version\0\0\0\0\0`, the start of its `version` header), compared
//!   as they arrive (Core's `ProcessReceivedMaybeV1Bytes`); if all 16 match
//!   it becomes a v1 transport fed those 16 bytes. A peer whose bytes 4 to
//!   16 are `version\0\0\0\0\0` but whose magic differs is a v1 peer of
//!   another network, and is refused ([`TransportError::V1PeerWrongMagic`]).
//! - Garbage: Core sends 0 to 4,095 random bytes ([`HandshakeSecrets::from_os_random`])
//!   and accepts at most 4,095 before the terminator; no decoys, but it
//!   skips the peer's. Messages: every type with a short id is sent with it.
//!
//! # Why not the `bip324` crate
//!
//! rust-bitcoin's `bip324` crate (0.11, the newest; it builds here) was the
//! first choice; it is the peer in `tests/transport_interop.rs`. It cannot
//! be the implementation, because its handshake does not do what Core does:
//!
//! - It encodes its public key with `ElligatorSwift::from_pubkey`, which
//!   calls libsecp256k1's `ellswift_encode` with 32 zero bytes of
//!   randomness (rust-secp256k1 issue #887). libsecp256k1 requires that
//!   randomness not to be a function of the key; with zeros anyone can
//!   decode the 64 bytes and re-encode them to check, so its keys are told
//!   from random bytes with certainty, which BIP324 exists to prevent. Core
//!   uses `ellswift_create` with fresh randomness (`EllSwiftCreate(ent32)`),
//!   as [`HandshakeSecrets`] does; the crate takes no encoding from outside.
//! - It refuses any peer key whose first 4 bytes are the network magic as
//!   "v1" (both roles), where Core's responder looks at 16 bytes and its
//!   initiator at none: 1 handshake in 2^32 with an honest peer fails.
//! - It treats a packet as a decoy only if its header is exactly 0x80, where
//!   Core tests bit 7 alone (other bits are reserved).
//! - Its handshake states borrow our garbage and the peer's until the
//!   version packet, and its cipher state cannot be taken out earlier, so a
//!   state machine fed arbitrary pieces cannot own it; and it hides the
//!   terminator, so finding it in pieces means rescanning (quadratic).
//!
//! So the key exchange, key schedule and the two rekeying ciphers are
//! written here from BIP324 (`keys`, `cipher`: about 300 lines, tests
//! aside), on libsecp256k1's ElligatorSwift (`secp256k1` 0.31, through
//! `ElligatorSwift::from_seckey`: its `ElligatorSwift::new` hands
//! libsecp256k1 the static context, which `ellswift_create` refuses by
//! aborting the process), RustCrypto's `hkdf`/`sha2`, and RustCrypto's
//! `chacha20`/`chacha20poly1305`, chosen over rust-bitcoin's
//! `chacha20-poly1305` (the one `bip324` uses) because it is 3.2x faster
//! on large packets here (0.78 against 2.54 ns/byte, AVX2). Agreement is
//! checked against `bip324` as the other side, so two independent
//! implementations of the ciphers meet: both roles, rekeying, garbage
//! authentication, decoys, every message type.
//!
//! # Napkin math
//!
//! Bytes per message on the wire (payload excluded):
//!
//! | transport | overhead | a `ping` (8 bytes) | a 4 MB `block` |
//! |---|---|---|---|
//! | v1 | 24 (magic 4, command 12, length 4, checksum 4) | 32 | 4,000,024 |
//! | v2, short id | 3 length + 1 header + 1 type + 16 tag = 21 | 29 | 4,000,021 |
//! | v2, long type | 3 + 1 + 13 + 16 = 33 (`version`, `verack`, `sendheaders`, `getaddr`, ...) | - | - |
//!
//! So v2 saves 3 bytes on every frequent message and costs 9 more on the
//! handful sent once per connection. Handshake, each way: the 64-byte key,
//! 0 to 4,095 bytes of garbage, the 16-byte terminator and the 20-byte
//! version packet, 2,148 bytes on average with Core's random garbage.
//!
//! Time, measured (`cargo bench -p ibex-p2p --profile ci --bench transport`,
//! 2-core Zen 4 VM at low load; the VM is shared, and under other builds
//! every figure doubled):
//!
//! | per message | v1 | v2 |
//! |---|---|---|
//! | 4 MB `block`, send and receive | 4.53 ms (two double SHA-256 checksums, 0.57 ns/byte each) | 5.71 ms |
//! | 4 MB `block`, send alone | 2.27 ms (one checksum, computed from the line above) | 2.76 ms (0.69 ns/byte) |
//! | `ping`, send and receive | 0.28 us | 2.0 us (RustCrypto's Poly1305 costs about 1 us to set up per packet) |
//! | whole handshake, both sides | - | 0.12 ms (an ElligatorSwift key and an ECDH each) |
//!
//! Receiving a 4 MB block thus costs about 2.9 ms of one core in v2, 0.7 ms
//! more than v1's checksum. Against the anchors (`../shared/anchors.md`):
//! Core's `ConnectBlock` of 5,000 inputs with scripts takes 173-188 ms, so
//! decryption is under 1 % of validating a full block with scripts; with
//! `-assumevalid` (Core's deserialize and `CheckBlock` of the 1 MB block
//! 413,567: 2.7 ms) decrypting that block (0.74 ms) is about a quarter of
//! its check, against a fifth for v1's checksum. Over a whole IBD (about
//! 650 GB of blocks) v2 costs 650e9 x 0.74 ns = 8 minutes of one core,
//! 2 more than v1: never the bottleneck. At 1 Gbit/s (125 MB/s) it takes
//! 9 % of one core. Small messages cost 2 us each: 10,000 a second (far
//! above relay rates) would take 2 % of a core.
//!
//! Memory per peer: one packet of at most 4,000,013 bytes of contents (+
//! 17) in a buffer that grows with the bytes received, at most 256 KiB
//! ahead of them, as v1's [`crate::FrameDecoder`]; 4,111 bytes of garbage
//! during the handshake; 2 x 704 bytes of length keystream;
//! [`v2::SEND_QUEUE_BYTES_MAX`] of messages waiting for the keys.

pub mod error;
pub mod handshake;
pub mod message_type;
pub mod secrets;
pub mod v1;
pub mod v2;

mod cipher;
mod keys;
mod packet;

pub use cipher::REKEY_INTERVAL;
pub use error::TransportError;
pub use handshake::{HandshakeStatus, V2Handshake};
pub use secrets::{HandshakeSecrets, Role};
pub use v1::V1Transport;
pub use v2::V2Transport;

use crate::command::COMMAND_BYTES;
use crate::framing::{Frame, MAGIC_BYTES, MESSAGE_PAYLOAD_BYTES_MAX};
use crate::messages::NetworkMessage;

/// The most garbage BIP324 allows before the terminator, in bytes (Core's
/// `MAX_GARBAGE_LEN`).
pub const GARBAGE_BYTES_MAX: usize = 4095;
/// Bytes of a garbage terminator.
pub const GARBAGE_TERMINATOR_BYTES: usize = 16;
/// Bytes of an ElligatorSwift-encoded public key.
pub const ELLSWIFT_KEY_BYTES: usize = 64;
/// Bytes a responder compares with v1's first bytes (Core's `V1_PREFIX_LEN`).
pub const V1_PREFIX_BYTES: usize = 16;
/// Bytes of a packet's encrypted length field.
pub const LENGTH_FIELD_BYTES: usize = 3;
/// Bytes of a packet's header (the ignore bit and reserved bits).
pub const HEADER_BYTES: usize = 1;
/// Bytes of a Poly1305 tag.
pub const TAG_BYTES: usize = 16;
/// Bytes a packet adds to its contents (Core's `BIP324Cipher::EXPANSION`).
pub const PACKET_OVERHEAD_BYTES: usize = LENGTH_FIELD_BYTES + HEADER_BYTES + TAG_BYTES;
/// The header bit that marks a decoy, which the receiver skips.
pub const IGNORE_BIT: u8 = 0x80;
/// The most contents a packet may declare: a long message type and the
/// largest payload (Core's `MAX_CONTENTS_LEN`).
pub const PACKET_CONTENTS_BYTES_MAX: usize = 1 + COMMAND_BYTES + MESSAGE_PAYLOAD_BYTES_MAX;

const _: () = assert!(PACKET_OVERHEAD_BYTES == 20);
const _: () = assert!(PACKET_CONTENTS_BYTES_MAX == 4_000_013);
const _: () = assert!(V1_PREFIX_BYTES == MAGIC_BYTES + COMMAND_BYTES);

/// What a connection speaks (Core's `TransportProtocolType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// v1.
    V1,
    /// v2, handshake complete.
    V2,
    /// A v2 handshake in progress: not known yet, or not authenticated yet.
    Detecting,
}

/// A connection's transport, v1 or v2, behind one interface.
///
/// ```
/// # use ibex_p2p::{HandshakeSecrets, NetworkMessage, Transport};
/// let magic = [0xfa, 0xbf, 0xb5, 0xda];
/// let mut ours = Transport::v2_initiator(magic, HandshakeSecrets::from_os_random()?);
/// let mut theirs = Transport::v2_responder(magic, HandshakeSecrets::from_os_random()?);
/// let (mut to_them, mut to_us) = (Vec::new(), Vec::new());
/// ours.encode(&NetworkMessage::Ping { nonce: 7 }, &mut to_them)?; // waits for the keys
/// let mut received = Vec::new();
/// for _round in 0..3 {
///     ours.take_output(&mut to_them);
///     theirs.push(&std::mem::take(&mut to_them));
///     while let Some(frame) = theirs.next_message()? {
///         received.push(NetworkMessage::from_frame(frame)?);
///     }
///     theirs.take_output(&mut to_us);
///     ours.push(&std::mem::take(&mut to_us));
/// }
/// assert_eq!(received, [NetworkMessage::Ping { nonce: 7 }]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub enum Transport {
    /// v1 frames.
    V1(V1Transport),
    /// BIP324, possibly fallen back to v1 (a responder's v1 peer); boxed,
    /// as it holds the handshake's and both ciphers' state (about 500 bytes).
    V2(Box<V2Transport>),
}

impl Transport {
    /// A v1 transport.
    pub fn v1(magic: [u8; MAGIC_BYTES]) -> Transport {
        Transport::V1(V1Transport::new(magic))
    }

    /// A v2 transport for an outbound connection.
    pub fn v2_initiator(magic: [u8; MAGIC_BYTES], secrets: HandshakeSecrets) -> Transport {
        Transport::V2(Box::new(V2Transport::initiator(magic, secrets)))
    }

    /// A v2 transport for an inbound connection, falling back to v1 for a
    /// v1 peer.
    pub fn v2_responder(magic: [u8; MAGIC_BYTES], secrets: HandshakeSecrets) -> Transport {
        Transport::V2(Box::new(V2Transport::responder(magic, secrets)))
    }

    /// Takes bytes from the front of `bytes` and returns how many: all of
    /// them unless a message is complete or the connection failed; call
    /// [`next_message`](Self::next_message), then push the rest.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        match self {
            Transport::V1(transport) => transport.push(bytes),
            Transport::V2(transport) => transport.push(bytes),
        }
    }

    /// The next message's command and payload, `Ok(None)` if none is
    /// complete, or why not; see [`TransportError::disconnects`].
    pub fn next_message(&mut self) -> Result<Option<Frame>, TransportError> {
        match self {
            Transport::V1(transport) => transport.next_message(),
            Transport::V2(transport) => transport.next_message(),
        }
    }

    /// Appends the bytes still to send and then `message`'s to `out`.
    pub fn encode(
        &mut self,
        message: &NetworkMessage,
        out: &mut Vec<u8>,
    ) -> Result<(), TransportError> {
        match self {
            Transport::V1(transport) => transport.encode(message, out),
            Transport::V2(transport) => transport.encode(message, out),
        }
    }

    /// Appends the bytes the transport has to send on its own (handshake).
    /// Call after every [`push`](Self::push) and at the start.
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        match self {
            Transport::V1(transport) => transport.take_output(out),
            Transport::V2(transport) => transport.take_output(out),
        }
    }

    /// What the connection speaks now.
    pub fn kind(&self) -> TransportKind {
        match self {
            Transport::V1(_) => TransportKind::V1,
            Transport::V2(transport) => transport.kind(),
        }
    }

    /// The v2 session id, once the handshake is complete.
    pub fn session_id(&self) -> Option<[u8; 32]> {
        match self {
            Transport::V1(_) => None,
            Transport::V2(transport) => transport.session_id(),
        }
    }

    /// Bytes allocated for the message in progress (and one waiting for
    /// [`next_message`](Self::next_message)): at most 256 KiB more than its
    /// bytes received, never more than the 4 MB limit allows.
    pub fn allocated_bytes(&self) -> usize {
        match self {
            Transport::V1(transport) => transport.allocated_bytes(),
            Transport::V2(transport) => transport.allocated_bytes(),
        }
    }

    /// After the peer closed the connection: whether to reconnect with v1
    /// (see [`V2Handshake::should_reconnect_with_v1`]).
    pub fn should_reconnect_with_v1(&self, bytes_sent: u64) -> bool {
        match self {
            Transport::V1(_) => false,
            Transport::V2(transport) => transport.should_reconnect_with_v1(bytes_sent),
        }
    }
}
