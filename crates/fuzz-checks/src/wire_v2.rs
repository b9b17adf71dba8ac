//! `p2p_v2_handshake`: the BIP324 transport. No input panics it, allocates
//! past a packet and 256 KiB, or gives different outcomes when fed in other pieces; a
//! failed stream stays failed; and whatever messages decode through a real
//! v2 session come out as they went in.
//!
//! Input: byte 0 picks the mode, byte 1 the piece size (0 means whole),
//! the rest is the data.
//!
//! | mode (byte 0 % 4) | the data is |
//! |---|---|
//! | 0 | the stream a v2 responder receives (v1 detection, wrong magic, key, garbage, v1 fallback) |
//! | 1 | the stream a v2 initiator receives (key, garbage, packets) |
//! | 2 | byte flips (position, mask pairs) applied to a valid handshake and message stream |
//! | 3 | command selector and payloads: messages that decode are sent through a session and must come out equal |

use ibex_p2p::decoder::PAYLOAD_ALLOCATION_STEP_BYTES;
use ibex_p2p::{Command, Frame, HandshakeSecrets, NetworkMessage, Transport, TransportError};

use crate::wire::MAGIC;

/// A packet's largest contents plus its overhead.
const PACKET_BYTES_MAX: usize = 4_000_013 + 20;

fn secrets(seed: u8) -> HandshakeSecrets {
    let garbage = vec![seed; usize::from(seed) * 3];
    HandshakeSecrets::new([seed; 32], [seed ^ 0x55; 32], garbage).expect("valid test key")
}

/// Every outcome until the stream is used up or a disconnecting error.
fn feed(
    transport: &mut Transport,
    stream: &[u8],
    piece_bytes: usize,
) -> Vec<Result<Frame, TransportError>> {
    let mut outcomes = Vec::new();
    for mut piece in stream.chunks(piece_bytes.max(1)) {
        loop {
            let consumed = transport.push(piece);
            piece = &piece[consumed..];
            assert!(
                transport.allocated_bytes() <= PACKET_BYTES_MAX + PAYLOAD_ALLOCATION_STEP_BYTES
            );
            match transport.next_message() {
                Ok(Some(frame)) => outcomes.push(Ok(frame)),
                Ok(None) => {
                    assert!(piece.is_empty());
                    break;
                }
                Err(error) if error.disconnects() => {
                    outcomes.push(Err(error.clone()));
                    assert_eq!(transport.push(piece), 0, "a failed stream takes nothing");
                    assert_eq!(transport.next_message(), Err(error));
                    return outcomes;
                }
                Err(error) => outcomes.push(Err(error)),
            }
        }
    }
    outcomes
}

/// Feeds `stream` in pieces and whole to fresh transports; both must agree.
fn check_pieces(
    make: impl Fn() -> Transport,
    stream: &[u8],
    piece_bytes: usize,
) -> Vec<Result<Frame, TransportError>> {
    let outcomes = feed(&mut make(), stream, piece_bytes);
    assert_eq!(outcomes, feed(&mut make(), stream, stream.len()), "pieces change nothing");
    outcomes
}

/// The initiator's whole stream to a responder built from `seed`, with the
/// messages queued before the keys: key, garbage, terminator, version
/// packet, messages.
fn initiator_stream(messages: &[NetworkMessage]) -> Vec<u8> {
    let mut initiator = Transport::v2_initiator(MAGIC, secrets(1));
    let mut replying = Transport::v2_responder(MAGIC, secrets(2));
    let mut stream = Vec::new();
    for message in messages {
        if initiator.encode(message, &mut stream).is_err() {
            return Vec::new();
        }
    }
    initiator.take_output(&mut stream);
    replying.push(&stream);
    let mut reply = Vec::new();
    replying.take_output(&mut reply);
    initiator.push(&reply);
    initiator.take_output(&mut stream);
    stream
}

fn flipped_stream(flips: &[u8]) -> Vec<u8> {
    let messages = [
        NetworkMessage::Ping { nonce: 5 },
        NetworkMessage::Block(vec![7; 300]),
        NetworkMessage::Verack,
    ];
    let mut stream = initiator_stream(&messages);
    for flip in flips.chunks_exact(3) {
        let position = usize::from(u16::from_le_bytes([flip[0], flip[1]])) % stream.len().max(1);
        if let Some(byte) = stream.get_mut(position) {
            *byte ^= flip[2];
        }
    }
    stream
}

/// Messages that decode from the data, as `(selector, length, payload)` runs.
fn decodable_messages(mut data: &[u8]) -> Vec<NetworkMessage> {
    let commands = [
        Command::VERSION,
        Command::VERACK,
        Command::PING,
        Command::PONG,
        Command::GET_HEADERS,
        Command::HEADERS,
        Command::INVENTORY,
        Command::BLOCK,
        Command::ADDRESS_V2,
        Command::SEND_COMPACT,
        Command::FEE_FILTER,
    ];
    let mut messages = Vec::new();
    while let [selector, length, rest @ ..] = data {
        let payload_bytes = usize::from(*length).min(rest.len());
        let (payload, next) = rest.split_at(payload_bytes);
        let command = match commands.get(usize::from(*selector)) {
            Some(&command) => command,
            None => Command::new("fuzz").expect("valid command"),
        };
        if let Ok(message) = NetworkMessage::decode(command, payload) {
            messages.push(message);
        }
        data = next;
    }
    messages
}

/// `p2p_v2_handshake`: see the module docs.
pub fn p2p_v2_handshake(data: &[u8]) {
    let [mode, piece_selector, data @ ..] = data else {
        return;
    };
    let piece_bytes = usize::from(*piece_selector);
    match mode % 4 {
        0 => drop(check_pieces(|| Transport::v2_responder(MAGIC, secrets(3)), data, piece_bytes)),
        1 => drop(check_pieces(|| Transport::v2_initiator(MAGIC, secrets(4)), data, piece_bytes)),
        2 => {
            let stream = flipped_stream(data);
            drop(check_pieces(|| Transport::v2_responder(MAGIC, secrets(2)), &stream, piece_bytes));
        }
        _ => {
            let sent = decodable_messages(data);
            let stream = initiator_stream(&sent);
            let outcomes =
                check_pieces(|| Transport::v2_responder(MAGIC, secrets(2)), &stream, piece_bytes);
            let received: Vec<NetworkMessage> = outcomes
                .into_iter()
                .map(|outcome| {
                    NetworkMessage::from_frame(outcome.expect("a valid stream")).expect("decodes")
                })
                .collect();
            if !stream.is_empty() {
                assert_eq!(received, sent);
            }
        }
    }
}
