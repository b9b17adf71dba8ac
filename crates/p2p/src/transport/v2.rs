//! The v2 transport: a [`V2Handshake`], then packets both ways, or a v1
//! transport when a responder finds a v1 peer (Core's `V2Transport` with
//! its `m_v1_fallback`).

use crate::framing::{checked_payload_bytes, Frame, MAGIC_BYTES, MESSAGE_PAYLOAD_BYTES_MAX};
use crate::messages::NetworkMessage;
use crate::transport::cipher::PacketWriter;
use crate::transport::handshake::{HandshakeEnd, HandshakeStatus, V2Handshake};
use crate::transport::message_type::{read_message_type, write_message_type};
use crate::transport::packet::{Packet, PacketReader};
use crate::transport::v1::{QueuedMessage, V1Transport};
use crate::transport::{HandshakeSecrets, Role, TransportError, TransportKind, HEADER_BYTES};

/// Payload bytes of messages given before the peer's key is in, which wait
/// to be encrypted (Core keeps them in `vSendMsg`). Core's initiator sends
/// only its `version` (about 100 bytes) that early; the bound stops a
/// runaway caller.
pub const SEND_QUEUE_BYTES_MAX: usize = 1 << 20;

const _: () = assert!(SEND_QUEUE_BYTES_MAX <= MESSAGE_PAYLOAD_BYTES_MAX);

/// The established session: packets both ways.
struct Session {
    writer: PacketWriter,
    reader: PacketReader,
    session_id: [u8; 32],
    /// Handshake bytes not yet taken when the handshake completed.
    output: Vec<u8>,
    /// A message (or an error that drops just that message) waiting for
    /// `next_message`.
    ready: Option<Result<Frame, TransportError>>,
    /// An error that ends the connection.
    failure: Option<TransportError>,
}

enum Phase {
    Handshake(V2Handshake),
    Established(Session),
    FallenBackToV1(V1Transport),
}

/// A v2 connection, from its first byte: handshake, then messages as
/// encrypted packets; or, for a responder whose peer speaks v1, v1 frames.
pub struct V2Transport {
    magic: [u8; MAGIC_BYTES],
    phase: Phase,
    queue: Vec<QueuedMessage>,
    queued_bytes: usize,
}

impl V2Transport {
    /// An outbound connection: our key and garbage are ready to send at
    /// once ([`take_output`](Self::take_output)).
    pub fn initiator(magic: [u8; MAGIC_BYTES], secrets: HandshakeSecrets) -> V2Transport {
        V2Transport::new(Role::Initiator, magic, secrets)
    }

    /// An inbound connection: waits for the peer's first bytes to tell v1
    /// from v2.
    pub fn responder(magic: [u8; MAGIC_BYTES], secrets: HandshakeSecrets) -> V2Transport {
        V2Transport::new(Role::Responder, magic, secrets)
    }

    fn new(role: Role, magic: [u8; MAGIC_BYTES], secrets: HandshakeSecrets) -> V2Transport {
        let handshake = V2Handshake::new(role, magic, secrets);
        V2Transport {
            magic,
            phase: Phase::Handshake(handshake),
            queue: Vec::new(),
            queued_bytes: 0,
        }
    }

    /// Takes bytes from the front of `bytes` and returns how many: all of
    /// them, unless a message is complete (take it with
    /// [`next_message`](Self::next_message), then push the rest) or the
    /// connection failed.
    pub fn push(&mut self, bytes: &[u8]) -> usize {
        match &mut self.phase {
            Phase::Established(session) => session.push(bytes),
            Phase::FallenBackToV1(v1) => v1.push(bytes),
            Phase::Handshake(handshake) => {
                let taken = handshake.push(bytes);
                self.after_handshake_push();
                match self.phase {
                    Phase::Handshake(_) => taken,
                    // At most once: the handshake is over.
                    _ => taken + self.push(&bytes[taken..]),
                }
            }
        }
    }

    /// The next message as its command and payload; `Ok(None)` if none is
    /// complete; an error for which [`TransportError::disconnects`] holds is
    /// returned by every later call too.
    pub fn next_message(&mut self) -> Result<Option<Frame>, TransportError> {
        match &mut self.phase {
            Phase::Handshake(handshake) => match handshake.error() {
                Some(error) => Err(error.clone()),
                None => Ok(None),
            },
            Phase::Established(session) => session.next_message(),
            Phase::FallenBackToV1(v1) => v1.next_message(),
        }
    }

    /// Appends any bytes still to send, then `message`, to `out`. Before
    /// the peer's key is in, the message waits in a queue of at most
    /// [`SEND_QUEUE_BYTES_MAX`] bytes and goes out (after the version
    /// packet) from [`take_output`](Self::take_output) once it is.
    pub fn encode(
        &mut self,
        message: &NetworkMessage,
        out: &mut Vec<u8>,
    ) -> Result<(), TransportError> {
        match &mut self.phase {
            Phase::FallenBackToV1(v1) => v1.encode(message, out),
            Phase::Established(session) => {
                out.append(&mut session.output);
                write_message(&mut session.writer, message, out)
            }
            Phase::Handshake(handshake) => {
                handshake.take_output(out);
                match handshake.writer_mut() {
                    Some(writer) => write_message(writer, message, out),
                    None => self.enqueue(message),
                }
            }
        }
    }

    /// Appends the bytes the transport has to send on its own: handshake
    /// bytes, and messages that waited for the keys.
    pub fn take_output(&mut self, out: &mut Vec<u8>) {
        match &mut self.phase {
            Phase::Handshake(handshake) => handshake.take_output(out),
            Phase::Established(session) => out.append(&mut session.output),
            Phase::FallenBackToV1(v1) => v1.take_output(out),
        }
    }

    /// What the connection speaks: [`TransportKind::Detecting`] until the
    /// peer's version packet is in (as Core's `GetInfo`).
    pub fn kind(&self) -> TransportKind {
        match self.phase {
            Phase::Handshake(_) => TransportKind::Detecting,
            Phase::Established(_) => TransportKind::V2,
            Phase::FallenBackToV1(_) => TransportKind::V1,
        }
    }

    /// The session id once the handshake is complete.
    pub fn session_id(&self) -> Option<[u8; 32]> {
        match &self.phase {
            Phase::Established(session) => Some(session.session_id),
            _ => None,
        }
    }

    /// Bytes allocated for what is being received: at most 256 KiB more
    /// than the bytes of the packet in progress received so far.
    pub fn allocated_bytes(&self) -> usize {
        match &self.phase {
            Phase::Handshake(handshake) => handshake.allocated_bytes(),
            Phase::Established(session) => {
                session.reader.allocated_bytes()
                    + session.ready.as_ref().map_or(0, |ready| {
                        ready.as_ref().map_or(0, |frame| frame.payload.capacity())
                    })
            }
            Phase::FallenBackToV1(v1) => v1.allocated_bytes(),
        }
    }

    /// See [`V2Handshake::should_reconnect_with_v1`].
    pub fn should_reconnect_with_v1(&self, bytes_sent: u64) -> bool {
        match &self.phase {
            Phase::Handshake(handshake) => handshake.should_reconnect_with_v1(bytes_sent),
            _ => false,
        }
    }

    /// After bytes went into the handshake: flush the queue once the keys
    /// exist, and move on once the handshake is over.
    fn after_handshake_push(&mut self) {
        let Phase::Handshake(handshake) = &mut self.phase else {
            return;
        };
        if let Some(writer) = handshake.writer_mut() {
            let mut output = Vec::new();
            for message in self.queue.drain(..) {
                let start = writer.begin_packet(0, &mut output);
                write_message_type(message.command, &mut output);
                output.extend_from_slice(&message.payload);
                writer.seal_packet(start, &mut output);
            }
            self.queued_bytes = 0;
            handshake.output_mut().append(&mut output);
        }
        if matches!(handshake.status(), HandshakeStatus::InProgress | HandshakeStatus::Failed) {
            return;
        }
        // A placeholder for the moment the handshake is out.
        let placeholder = Phase::FallenBackToV1(V1Transport::new(self.magic));
        let Phase::Handshake(handshake) = std::mem::replace(&mut self.phase, placeholder) else {
            return;
        };
        self.phase = match handshake.finish() {
            HandshakeEnd::NotOver(handshake) => Phase::Handshake(handshake),
            HandshakeEnd::Established { writer, reader, session_id, output } => {
                Phase::Established(Session {
                    writer,
                    reader,
                    session_id,
                    output,
                    ready: None,
                    failure: None,
                })
            }
            HandshakeEnd::FallBackToV1 { prefix } => {
                let queued = std::mem::take(&mut self.queue);
                self.queued_bytes = 0;
                Phase::FallenBackToV1(V1Transport::after_v2_fallback(self.magic, prefix, queued))
            }
        };
    }

    /// Keeps a message until the keys exist.
    fn enqueue(&mut self, message: &NetworkMessage) -> Result<(), TransportError> {
        let command = message.command();
        let mut payload = Vec::new();
        message.encode_payload(&mut payload);
        let payload_bytes = checked_payload_bytes(command, payload.len())?;
        if self.queued_bytes + payload.len() > SEND_QUEUE_BYTES_MAX {
            return Err(TransportError::SendQueueFull {
                queued_bytes: self.queued_bytes,
                payload_bytes: payload.len(),
                limit_bytes: SEND_QUEUE_BYTES_MAX,
            });
        }
        self.queued_bytes += payload.len();
        self.queue.push(QueuedMessage { command, payload, payload_bytes });
        Ok(())
    }
}

impl std::fmt::Debug for V2Transport {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("V2Transport")
            .field("kind", &self.kind())
            .field("queued_bytes", &self.queued_bytes)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Reads packets until a message is complete, skipping decoys.
    fn push(&mut self, bytes: &[u8]) -> usize {
        if self.ready.is_some() || self.failure.is_some() {
            return 0;
        }
        let mut consumed_bytes = 0;
        while consumed_bytes < bytes.len() {
            let (taken, packet) = self.reader.push(&bytes[consumed_bytes..]);
            consumed_bytes += taken;
            match packet {
                None => break,
                Some(Err(error)) => {
                    self.failure = Some(error);
                    break;
                }
                Some(Ok(packet)) if packet.is_decoy() => {}
                Some(Ok(packet)) => {
                    self.ready = Some(frame_from_packet(packet));
                    break;
                }
            }
        }
        consumed_bytes
    }

    fn next_message(&mut self) -> Result<Option<Frame>, TransportError> {
        if let Some(ready) = self.ready.take() {
            return ready.map(Some);
        }
        match &self.failure {
            Some(error) => Err(error.clone()),
            None => Ok(None),
        }
    }
}

/// Appends `message` as one packet: the message type, then the payload
/// written in place. Fails, appending nothing, for a payload above
/// `MESSAGE_PAYLOAD_BYTES_MAX`.
fn write_message(
    writer: &mut PacketWriter,
    message: &NetworkMessage,
    out: &mut Vec<u8>,
) -> Result<(), TransportError> {
    let command = message.command();
    let start = writer.begin_packet(0, out);
    write_message_type(command, out);
    let payload_start = out.len();
    message.encode_payload(out);
    if let Err(error) = checked_payload_bytes(command, out.len() - payload_start) {
        out.truncate(start);
        return Err(error.into());
    }
    writer.seal_packet(start, out);
    Ok(())
}

/// The command and payload of a genuine packet; the payload is moved to
/// the front of the packet's buffer, not copied elsewhere.
fn frame_from_packet(packet: Packet) -> Result<Frame, TransportError> {
    let mut plaintext = packet.plaintext;
    let contents = plaintext.get(HEADER_BYTES..).unwrap_or_default();
    let (command, type_bytes) = read_message_type(contents)?;
    plaintext.drain(..HEADER_BYTES + type_bytes);
    Ok(Frame { command, payload: plaintext })
}
