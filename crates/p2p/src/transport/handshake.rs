//! The BIP324 handshake as Core's `V2Transport` runs it, both directions,
//! up to and including the peer's version packet.
//!
//! Receiving (Core's `RecvState`):
//!
//! | state | takes | then |
//! |---|---|---|
//! | `MaybeV1` (responder only) | up to 16 bytes, compared with v1's magic + `"version\0\0\0\0\0"` as they come | all 16 match: the peer speaks v1 ([`HandshakeStatus::FallBackToV1`]); a byte differs: `Key`, and we start sending |
//! | `Key` | the peer's 64-byte ElligatorSwift key | keys derived; we send our terminator and version packet |
//! | `Garbage` | garbage, one byte at a time, until its last 16 bytes are the peer's terminator | at most 4,095 bytes of garbage (4,111 with the terminator), else [`TransportError::MissingGarbageTerminator`] |
//! | `Version` | packets: decoys (ignore bit set) are skipped; the first other one is the version packet, its contents ignored (reserved for extensions) | [`HandshakeStatus::Complete`] |
//!
//! The first packet after the garbage terminator, decoy or not, is
//! authenticated with the garbage as associated data, in both directions.
//!
//! Sending: the initiator sends its key and garbage at once; the responder
//! once it knows the peer is not v1. Each sends its garbage terminator and
//! its version packet (empty contents) as soon as it has the peer's key,
//! and can send messages from then on ([`V2Handshake::can_send`]).

use crate::framing::{FRAME_HEADER_BYTES, MAGIC_BYTES};
use crate::transport::cipher::{PacketOpener, PacketWriter};
use crate::transport::keys::derive_session_keys;
use crate::transport::packet::PacketReader;
use crate::transport::{
    HandshakeSecrets, Role, TransportError, ELLSWIFT_KEY_BYTES, GARBAGE_BYTES_MAX,
    GARBAGE_TERMINATOR_BYTES, V1_PREFIX_BYTES,
};

/// The 12 bytes after the magic in a v1 `version` message's header.
const V1_VERSION_COMMAND: &[u8; V1_PREFIX_BYTES - MAGIC_BYTES] = b"version\0\0\0\0\0";

/// The most bytes received between the peer's key and the end of its
/// garbage terminator.
pub const GARBAGE_AND_TERMINATOR_BYTES_MAX: usize = GARBAGE_BYTES_MAX + GARBAGE_TERMINATOR_BYTES;

/// Where a handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeStatus {
    /// More bytes are needed.
    InProgress,
    /// The peer sent v1's first 16 bytes: go on in v1 with those bytes.
    FallBackToV1,
    /// The peer's version packet is in: the session is ready both ways.
    Complete,
    /// The handshake failed ([`V2Handshake::error`]); Core disconnects.
    Failed,
}

/// What the receiving side holds in each state.
enum HandshakeState {
    MaybeV1 {
        prefix: [u8; V1_PREFIX_BYTES],
        received_bytes: usize,
    },
    Key {
        key: [u8; ELLSWIFT_KEY_BYTES],
        received_bytes: usize,
    },
    Garbage {
        received: Vec<u8>,
        terminator: [u8; GARBAGE_TERMINATOR_BYTES],
        reader: PacketReader,
    },
    Version {
        reader: PacketReader,
    },
    Complete {
        reader: PacketReader,
    },
    FallBackToV1 {
        prefix: [u8; V1_PREFIX_BYTES],
    },
    Failed(TransportError),
    /// Only between taking a state out and storing the next one.
    Moving,
}

/// What a handshake leaves once it is over.
pub(crate) enum HandshakeEnd {
    /// Not over: the handshake, as it was.
    NotOver(V2Handshake),
    /// The session: ciphers both ways, the session id, and the bytes still
    /// to send (terminator, version packet, messages).
    Established {
        writer: PacketWriter,
        reader: PacketReader,
        session_id: [u8; 32],
        output: Vec<u8>,
    },
    /// The peer is v1: the 16 bytes it sent (a responder sends nothing
    /// before it knows, so nothing v2 went out).
    FallBackToV1 { prefix: [u8; V1_PREFIX_BYTES] },
}

/// One side of a BIP324 handshake, bytes in and bytes out: feed the peer's
/// bytes with [`push`](V2Handshake::push), send what
/// [`take_output`](V2Handshake::take_output) gives, and watch
/// [`status`](V2Handshake::status). [`crate::V2Transport`] drives one and
/// goes on with the session it ends in.
pub struct V2Handshake {
    role: Role,
    magic: [u8; MAGIC_BYTES],
    secrets: HandshakeSecrets,
    state: HandshakeState,
    writer: Option<PacketWriter>,
    session_id: Option<[u8; 32]>,
    output: Vec<u8>,
}

impl V2Handshake {
    /// A handshake for the network with `magic`; an initiator's key and
    /// garbage are ready to send at once.
    pub fn new(role: Role, magic: [u8; MAGIC_BYTES], secrets: HandshakeSecrets) -> V2Handshake {
        let state = match role {
            Role::Initiator => {
                HandshakeState::Key { key: [0; ELLSWIFT_KEY_BYTES], received_bytes: 0 }
            }
            Role::Responder => {
                HandshakeState::MaybeV1 { prefix: [0; V1_PREFIX_BYTES], received_bytes: 0 }
            }
        };
        let mut handshake = V2Handshake {
            role,
            magic,
            secrets,
            state,
            writer: None,
            session_id: None,
            output: Vec::new(),
        };
        if role == Role::Initiator {
            handshake.start_sending();
        }
        handshake
    }

    /// Takes bytes from the front of `bytes` and returns how many: all of
    /// them, unless the handshake completes, fails or falls back to v1
    /// first (the rest belongs to what comes next).
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        let mut consumed_bytes = 0;
        while consumed_bytes < bytes.len() {
            let rest = &bytes[consumed_bytes..];
            let taken = match self.state {
                HandshakeState::MaybeV1 { .. } => self.receive_maybe_v1(rest),
                HandshakeState::Key { .. } => self.receive_key(rest),
                HandshakeState::Garbage { .. } => self.receive_garbage(rest),
                HandshakeState::Version { .. } => self.receive_version(rest),
                _ => 0,
            };
            if taken == 0 {
                break;
            }
            consumed_bytes += taken;
        }
        consumed_bytes
    }

    /// Appends the bytes the handshake has to send (key, garbage,
    /// terminator, version packet) to `out`.
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.output);
    }

    /// Where the handshake is.
    pub fn status(&self) -> HandshakeStatus {
        match self.state {
            HandshakeState::Complete { .. } => HandshakeStatus::Complete,
            HandshakeState::FallBackToV1 { .. } => HandshakeStatus::FallBackToV1,
            HandshakeState::Failed(_) => HandshakeStatus::Failed,
            _ => HandshakeStatus::InProgress,
        }
    }

    /// Why the handshake failed, if it did.
    pub fn error(&self) -> Option<&TransportError> {
        match &self.state {
            HandshakeState::Failed(error) => Some(error),
            _ => None,
        }
    }

    /// Whether messages can be encrypted: the peer's key is in (Core's send
    /// state `READY`). The version packet is always sent before them.
    pub fn can_send(&self) -> bool {
        self.writer.is_some()
    }

    /// The session id, once the peer's version packet has authenticated
    /// (Core reports v2 and the id only from then).
    pub fn session_id(&self) -> Option<[u8; 32]> {
        match self.state {
            HandshakeState::Complete { .. } => self.session_id,
            _ => None,
        }
    }

    /// Whether to reconnect in v1 now that the peer closed the connection
    /// (Core's `ShouldReconnectV1`): we are the initiator, nothing at all
    /// came back, and we had sent at least a v1 header's worth (24 bytes) of
    /// our key, enough for a v1 peer to have read a bad header and hung up.
    /// `bytes_sent` counts the bytes of [`take_output`](Self::take_output)
    /// written to the socket.
    pub fn should_reconnect_with_v1(&self, bytes_sent: u64) -> bool {
        self.role == Role::Initiator
            && matches!(self.state, HandshakeState::Key { received_bytes: 0, .. })
            && bytes_sent >= FRAME_HEADER_BYTES as u64
    }

    /// Bytes allocated for what is being received: the garbage buffer
    /// (4,111 bytes), then the packet in progress.
    pub fn allocated_bytes(&self) -> usize {
        match &self.state {
            HandshakeState::Garbage { received, .. } => received.capacity(),
            HandshakeState::Version { reader } | HandshakeState::Complete { reader } => {
                reader.allocated_bytes()
            }
            _ => 0,
        }
    }

    pub(crate) fn writer_mut(&mut self) -> Option<&mut PacketWriter> {
        self.writer.as_mut()
    }

    pub(crate) fn output_mut(&mut self) -> &mut Vec<u8> {
        &mut self.output
    }

    /// Ends the handshake if it is complete or fell back to v1; otherwise
    /// gives it back.
    pub(crate) fn finish(mut self) -> HandshakeEnd {
        match std::mem::replace(&mut self.state, HandshakeState::Moving) {
            HandshakeState::Complete { reader } => match (self.writer, self.session_id) {
                (Some(writer), Some(session_id)) => {
                    HandshakeEnd::Established { writer, reader, session_id, output: self.output }
                }
                (writer, session_id) => {
                    // Unreachable: both are set with the keys, before any packet.
                    self.writer = writer;
                    self.session_id = session_id;
                    self.state = HandshakeState::Complete { reader };
                    HandshakeEnd::NotOver(self)
                }
            },
            HandshakeState::FallBackToV1 { prefix } => HandshakeEnd::FallBackToV1 { prefix },
            state => {
                self.state = state;
                HandshakeEnd::NotOver(self)
            }
        }
    }

    /// Queues our key and garbage (Core's `StartSendingHandshake`).
    fn start_sending(&mut self) {
        self.output.extend_from_slice(self.secrets.public_key());
        self.output.extend_from_slice(self.secrets.garbage());
    }

    /// Core's `ProcessReceivedMaybeV1Bytes`.
    fn receive_maybe_v1(&mut self, bytes: &[u8]) -> usize {
        let HandshakeState::MaybeV1 { prefix, received_bytes } = &mut self.state else {
            return 0;
        };
        let taken = bytes.len().min(V1_PREFIX_BYTES - *received_bytes);
        prefix[*received_bytes..*received_bytes + taken].copy_from_slice(&bytes[..taken]);
        *received_bytes += taken;
        let received = &prefix[..*received_bytes];
        if received != &v1_prefix(self.magic)[..received.len()] {
            // Not v1: these bytes start the peer's key.
            let mut key = [0u8; ELLSWIFT_KEY_BYTES];
            key[..received.len()].copy_from_slice(received);
            let received_bytes = received.len();
            self.state = HandshakeState::Key { key, received_bytes };
            self.start_sending();
        } else if *received_bytes == V1_PREFIX_BYTES {
            self.state = HandshakeState::FallBackToV1 { prefix: *prefix };
        }
        taken
    }

    /// Core's `ProcessReceivedKeyBytes`.
    fn receive_key(&mut self, bytes: &[u8]) -> usize {
        let HandshakeState::Key { key, received_bytes } = &mut self.state else {
            return 0;
        };
        let taken = bytes.len().min(ELLSWIFT_KEY_BYTES - *received_bytes);
        key[*received_bytes..*received_bytes + taken].copy_from_slice(&bytes[..taken]);
        *received_bytes += taken;
        // A v1 `version` header with another network's magic: a v1 peer on
        // the wrong network (the magic would have matched otherwise).
        if self.role == Role::Responder
            && *received_bytes >= V1_PREFIX_BYTES
            && &key[MAGIC_BYTES..V1_PREFIX_BYTES] == V1_VERSION_COMMAND
        {
            let mut received = [0u8; MAGIC_BYTES];
            received.copy_from_slice(&key[..MAGIC_BYTES]);
            let error = TransportError::V1PeerWrongMagic { expected: self.magic, received };
            self.state = HandshakeState::Failed(error);
        } else if *received_bytes == ELLSWIFT_KEY_BYTES {
            let peer_key = *key;
            self.exchange_keys(&peer_key);
        }
        taken
    }

    /// Derives the session keys and queues our terminator and version
    /// packet, authenticated with the garbage we sent.
    fn exchange_keys(&mut self, peer_key: &[u8; ELLSWIFT_KEY_BYTES]) {
        let keys = derive_session_keys(self.role, self.magic, &self.secrets, peer_key);
        self.output.extend_from_slice(&keys.send_garbage_terminator);
        let garbage = self.secrets.take_garbage();
        let mut writer = PacketWriter::new(keys.send_length_key, keys.send_packet_key, garbage);
        let start = writer.begin_packet(0, &mut self.output);
        writer.seal_packet(start, &mut self.output);
        self.writer = Some(writer);
        self.session_id = Some(keys.session_id);
        let opener = PacketOpener::new(keys.receive_length_key, keys.receive_packet_key);
        self.state = HandshakeState::Garbage {
            received: Vec::with_capacity(GARBAGE_AND_TERMINATOR_BYTES_MAX),
            terminator: keys.receive_garbage_terminator,
            reader: PacketReader::new(opener),
        };
    }

    /// Core's `ProcessReceivedGarbageBytes`, a byte at a time: 16 bytes
    /// compared per byte, 4,111 bytes at most.
    fn receive_garbage(&mut self, bytes: &[u8]) -> usize {
        let HandshakeState::Garbage { received, terminator, .. } = &mut self.state else {
            return 0;
        };
        for (index, &byte) in bytes.iter().enumerate() {
            received.push(byte);
            if received.ends_with(terminator) {
                self.start_version();
                return index + 1;
            }
            if received.len() == GARBAGE_AND_TERMINATOR_BYTES_MAX {
                let error =
                    TransportError::MissingGarbageTerminator { received_bytes: received.len() };
                self.state = HandshakeState::Failed(error);
                return index + 1;
            }
        }
        bytes.len()
    }

    /// The terminator is in: the garbage before it authenticates the first
    /// packet.
    fn start_version(&mut self) {
        if let HandshakeState::Garbage { mut received, mut reader, .. } =
            std::mem::replace(&mut self.state, HandshakeState::Moving)
        {
            received.truncate(received.len() - GARBAGE_TERMINATOR_BYTES);
            reader.set_first_packet_aad(received);
            self.state = HandshakeState::Version { reader };
        }
    }

    /// Core's `ProcessReceivedPacketBytes` in state `VERSION`.
    fn receive_version(&mut self, bytes: &[u8]) -> usize {
        let HandshakeState::Version { reader } = &mut self.state else {
            return 0;
        };
        let (taken, packet) = reader.push(bytes);
        match packet {
            None => {}
            Some(Err(error)) => self.state = HandshakeState::Failed(error),
            Some(Ok(packet)) if packet.is_decoy() => {}
            Some(Ok(_version_packet)) => {
                if let HandshakeState::Version { reader } =
                    std::mem::replace(&mut self.state, HandshakeState::Moving)
                {
                    self.state = HandshakeState::Complete { reader };
                }
            }
        }
        taken
    }
}

impl std::fmt::Debug for V2Handshake {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("V2Handshake")
            .field("role", &self.role)
            .field("status", &self.status())
            .field("can_send", &self.can_send())
            .finish_non_exhaustive()
    }
}

/// What a v1 peer's first 16 bytes are: the magic, then `version` padded.
fn v1_prefix(magic: [u8; MAGIC_BYTES]) -> [u8; V1_PREFIX_BYTES] {
    let mut prefix = [0u8; V1_PREFIX_BYTES];
    prefix[..MAGIC_BYTES].copy_from_slice(&magic);
    prefix[MAGIC_BYTES..].copy_from_slice(V1_VERSION_COMMAND);
    prefix
}
