//! The transports against each other in memory: a v2 handshake both ways
//! with every message type in pieces of any size, garbage at and past its
//! bound, Core's v1 fallback and its refusals, tampering, oversized
//! packets, rekeying, and when to reconnect with v1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod transport_support;

use ibex_p2p::transport::handshake::GARBAGE_AND_TERMINATOR_BYTES_MAX;
use ibex_p2p::transport::v2::SEND_QUEUE_BYTES_MAX;
use ibex_p2p::transport::{GARBAGE_BYTES_MAX, REKEY_INTERVAL};
use ibex_p2p::{
    encode_message, FrameError, NetworkMessage, Transport, TransportError, TransportKind,
    FRAME_HEADER_BYTES,
};
use proptest::prelude::*;
use transport_support::{
    complete_handshake, encode_all, every_message, feed, mainnet, messages, regtest, secrets,
};

fn connected_pair(initiator_garbage: usize, responder_garbage: usize) -> (Transport, Transport) {
    let mut initiator = Transport::v2_initiator(mainnet(), secrets(1, initiator_garbage));
    let mut responder = Transport::v2_responder(mainnet(), secrets(2, responder_garbage));
    complete_handshake(&mut initiator, &mut responder);
    (initiator, responder)
}

#[test]
fn every_message_crosses_both_ways_in_one_byte_pieces() {
    let (mut initiator, mut responder) = connected_pair(100, 7);
    let sent = every_message();
    let wire = encode_all(&mut initiator, &sent);
    assert_eq!(messages(feed(&mut responder, &wire, &[1])), sent);
    let wire = encode_all(&mut responder, &sent);
    assert_eq!(messages(feed(&mut initiator, &wire, &[1])), sent);
}

#[test]
fn the_handshake_itself_goes_through_in_one_byte_pieces() {
    let mut initiator = Transport::v2_initiator(regtest(), secrets(3, 300));
    let mut responder = Transport::v2_responder(regtest(), secrets(4, 200));
    // The initiator's first message waits for the keys.
    let mut to_responder = Vec::new();
    initiator.encode(&NetworkMessage::Verack, &mut to_responder).unwrap();
    let mut received = Vec::new();
    for _round in 0..3 {
        initiator.take_output(&mut to_responder);
        received.extend(messages(feed(&mut responder, &std::mem::take(&mut to_responder), &[1])));
        let mut to_initiator = Vec::new();
        responder.take_output(&mut to_initiator);
        assert!(feed(&mut initiator, &to_initiator, &[1]).is_empty());
    }
    assert_eq!(received, [NetworkMessage::Verack]);
    assert_eq!((initiator.kind(), responder.kind()), (TransportKind::V2, TransportKind::V2));
}

#[test]
fn garbage_of_zero_and_of_the_limit_is_accepted() {
    for garbage_bytes in [0, 1, GARBAGE_BYTES_MAX] {
        let (mut initiator, mut responder) = connected_pair(garbage_bytes, garbage_bytes);
        let wire = encode_all(&mut initiator, &[NetworkMessage::Ping { nonce: 9 }]);
        assert_eq!(
            messages(feed(&mut responder, &wire, &[5])),
            [NetworkMessage::Ping { nonce: 9 }]
        );
    }
}

/// The responder's outcomes when the initiator's real terminator and
/// version packet come after `garbage_bytes` bytes of garbage that the
/// initiator did not send itself (`HandshakeSecrets` refuses more than
/// 4,095).
fn responder_after_forged_garbage(
    garbage_bytes: usize,
) -> Vec<Result<ibex_p2p::Frame, TransportError>> {
    let mut initiator = Transport::v2_initiator(mainnet(), secrets(5, 0));
    let mut responder = Transport::v2_responder(mainnet(), secrets(6, 0));
    let mut key = Vec::new();
    initiator.take_output(&mut key);
    assert!(feed(&mut responder, &key, &[64]).is_empty());
    let mut reply = Vec::new();
    responder.take_output(&mut reply);
    assert!(feed(&mut initiator, &reply, &[reply.len()]).is_empty());
    let mut wire = vec![0x5a; garbage_bytes];
    initiator.take_output(&mut wire); // terminator, version packet
    feed(&mut responder, &wire, &[1000])
}

#[test]
fn garbage_past_the_limit_is_refused() {
    // 4,095 bytes: the terminator is found; the version packet then fails
    // because the initiator authenticated it with its own (empty) garbage.
    let outcomes = responder_after_forged_garbage(GARBAGE_BYTES_MAX);
    assert!(
        matches!(
            outcomes.as_slice(),
            [Err(TransportError::PacketAuthentication { packet_index: 0, .. })]
        ),
        "{outcomes:?}"
    );
    // 4,096 bytes: 4,111 bytes arrive without ending in the terminator.
    let missing = TransportError::MissingGarbageTerminator {
        received_bytes: GARBAGE_AND_TERMINATOR_BYTES_MAX,
    };
    assert_eq!(responder_after_forged_garbage(GARBAGE_BYTES_MAX + 1), [Err(missing.clone())]);
    assert!(missing.disconnects());
}

#[test]
fn garbage_one_byte_short_of_the_bound_still_needs_its_terminator() {
    let mut initiator = Transport::v2_initiator(mainnet(), secrets(5, 0));
    let mut responder = Transport::v2_responder(mainnet(), secrets(6, 0));
    let mut wire = Vec::new();
    initiator.take_output(&mut wire);
    wire.extend(std::iter::repeat_n(0x5a, GARBAGE_AND_TERMINATOR_BYTES_MAX - 1));
    assert!(feed(&mut responder, &wire, &[1]).is_empty(), "one more byte could end it");
    assert!(responder.allocated_bytes() <= GARBAGE_AND_TERMINATOR_BYTES_MAX);
}

fn v1_stream(magic: [u8; 4]) -> (Vec<NetworkMessage>, Vec<u8>) {
    let sent = every_message();
    let mut wire = Vec::new();
    for message in &sent {
        encode_message(magic, message, &mut wire).unwrap();
    }
    (sent, wire)
}

#[test]
fn a_responder_falls_back_to_v1_for_a_v1_peer() {
    for magic in [mainnet(), regtest()] {
        for chunk_sizes in [&[1][..], &[3, 13], &[100_000]] {
            let (sent, wire) = v1_stream(magic);
            let mut responder = Transport::v2_responder(magic, secrets(7, 10));
            assert_eq!(responder.kind(), TransportKind::Detecting);
            assert_eq!(messages(feed(&mut responder, &wire, chunk_sizes)), sent);
            assert_eq!(responder.kind(), TransportKind::V1);
            assert_eq!(responder.session_id(), None);
            let mut output = Vec::new();
            responder.take_output(&mut output);
            assert!(output.is_empty(), "nothing v2 was ever sent");
            // Replies go out as v1 frames.
            responder.encode(&NetworkMessage::Verack, &mut output).unwrap();
            let mut expected = Vec::new();
            encode_message(magic, &NetworkMessage::Verack, &mut expected).unwrap();
            assert_eq!(output, expected);
        }
    }
}

#[test]
fn messages_queued_before_a_v1_fallback_go_out_as_v1_frames() {
    let (_, wire) = v1_stream(regtest());
    let mut responder = Transport::v2_responder(regtest(), secrets(7, 10));
    let mut output = Vec::new();
    responder.encode(&NetworkMessage::SendHeaders, &mut output).unwrap();
    assert!(output.is_empty(), "queued: v1 or v2 is not known yet");
    feed(&mut responder, &wire[..20], &[20]);
    responder.take_output(&mut output);
    let mut expected = Vec::new();
    encode_message(regtest(), &NetworkMessage::SendHeaders, &mut expected).unwrap();
    assert_eq!(output, expected);
}

#[test]
fn a_v1_peer_of_another_network_is_refused() {
    let (_, wire) = v1_stream(regtest());
    let mut responder = Transport::v2_responder(mainnet(), secrets(8, 10));
    let outcomes = feed(&mut responder, &wire, &[1]);
    let error = TransportError::V1PeerWrongMagic { expected: mainnet(), received: regtest() };
    assert_eq!(outcomes, [Err(error.clone())]);
    assert!(error.disconnects());
    // The responder had taken the peer for v2 and started its handshake.
    let mut output = Vec::new();
    responder.take_output(&mut output);
    assert_eq!(output.len(), 64 + 10);
}

#[test]
fn a_plain_v1_transport_refuses_another_networks_magic() {
    let (_, wire) = v1_stream(regtest());
    let mut transport = Transport::v1(mainnet());
    let outcomes = feed(&mut transport, &wire, &[7]);
    assert!(matches!(
        outcomes.as_slice(),
        [Err(TransportError::Frame(FrameError::WrongMagic { .. }))]
    ));
}

#[test]
fn a_tampered_byte_is_an_authentication_error() {
    let (mut initiator, mut responder) = connected_pair(10, 10);
    let sent = [NetworkMessage::Ping { nonce: 1 }, NetworkMessage::Block(vec![3; 5000])];
    let wire = encode_all(&mut initiator, &sent);
    for position in [3, 4, 20, 1000, wire.len() - 1] {
        let (mut sender, mut receiver) = connected_pair(10, 10);
        let mut tampered = encode_all(&mut sender, &sent);
        tampered[position] ^= 0x01;
        let outcomes = feed(&mut receiver, &tampered, &[64]);
        let last = outcomes.last().unwrap();
        assert!(
            matches!(last, Err(TransportError::PacketAuthentication { .. })),
            "byte {position}: {outcomes:?}"
        );
        assert!(last.as_ref().unwrap_err().disconnects());
    }
    assert_eq!(messages(feed(&mut responder, &wire, &[64])), sent, "untouched, it decodes");
}

#[test]
fn a_tampered_length_is_caught_before_or_by_authentication() {
    let (mut initiator, mut responder) = connected_pair(0, 0);
    let mut wire = encode_all(&mut initiator, &[NetworkMessage::Ping { nonce: 1 }]);
    wire[2] ^= 0x80; // the length's high byte: now above 4,000,013
    let outcomes = feed(&mut responder, &wire, &[3]);
    assert!(
        matches!(outcomes.as_slice(), [Err(TransportError::PacketTooLarge { contents_bytes })] if *contents_bytes > 4_000_013),
        "{outcomes:?}"
    );
    assert_eq!(responder.allocated_bytes(), 0, "refused before allocating");
}

#[test]
fn a_tampered_handshake_byte_fails_the_handshake() {
    let mut initiator = Transport::v2_initiator(mainnet(), secrets(1, 20));
    let mut responder = Transport::v2_responder(mainnet(), secrets(2, 20));
    let mut wire = Vec::new();
    initiator.take_output(&mut wire);
    assert!(feed(&mut responder, &wire, &[wire.len()]).is_empty());
    let mut wire = Vec::new();
    responder.take_output(&mut wire);
    // Key (64), garbage (20), terminator (16), then the version packet.
    let flipped = 64 + 20 + 16 + 5;
    wire[flipped] ^= 0x10;
    let outcomes = feed(&mut initiator, &wire, &[wire.len()]);
    assert!(matches!(
        outcomes.as_slice(),
        [Err(TransportError::PacketAuthentication { packet_index: 0, .. })]
    ));
    // Tampered garbage fails the same way: it authenticates the first packet.
    let mut initiator = Transport::v2_initiator(mainnet(), secrets(1, 20));
    let mut responder = Transport::v2_responder(mainnet(), secrets(2, 20));
    let mut first = Vec::new();
    initiator.take_output(&mut first);
    feed(&mut responder, &first, &[1]);
    let mut wire = Vec::new();
    responder.take_output(&mut wire);
    wire[64 + 3] ^= 0xff;
    let outcomes = feed(&mut initiator, &wire, &[1]);
    assert!(matches!(outcomes.as_slice(), [Err(TransportError::PacketAuthentication { .. })]));
}

#[test]
fn rekeying_every_224_packets_keeps_both_directions_in_step() {
    let (mut initiator, mut responder) = connected_pair(3, 4);
    let sent: Vec<NetworkMessage> = (0..500).map(|nonce| NetworkMessage::Ping { nonce }).collect();
    assert!(sent.len() as u64 > 2 * REKEY_INTERVAL);
    let wire = encode_all(&mut initiator, &sent);
    assert_eq!(messages(feed(&mut responder, &wire, &[997])), sent);
    let wire = encode_all(&mut responder, &sent);
    assert_eq!(messages(feed(&mut initiator, &wire, &[29])), sent, "a ping packet is 29 bytes");
}

#[test]
fn a_full_block_crosses_and_the_payload_limit_is_kept_on_sending() {
    let (mut initiator, mut responder) = connected_pair(0, 0);
    let block = NetworkMessage::Block(vec![0x42; 4_000_000]);
    let wire = encode_all(&mut initiator, std::slice::from_ref(&block));
    assert_eq!(wire.len(), 4_000_000 + 21, "3 + 1 + 1 + 16 bytes of overhead");
    assert_eq!(messages(feed(&mut responder, &wire, &[65_536])), [block]);
    let mut out = vec![1, 2, 3];
    let error = initiator.encode(&NetworkMessage::Block(vec![0; 4_000_001]), &mut out).unwrap_err();
    assert!(matches!(
        error,
        TransportError::Frame(FrameError::PayloadTooLarge { payload_bytes: 4_000_001, .. })
    ));
    assert_eq!(out, [1, 2, 3], "nothing appended");
}

#[test]
fn the_send_queue_before_the_keys_is_bounded() {
    let mut initiator = Transport::v2_initiator(mainnet(), secrets(1, 0));
    let mut out = Vec::new();
    let half = NetworkMessage::Block(vec![0; SEND_QUEUE_BYTES_MAX / 2]);
    initiator.encode(&half, &mut out).unwrap();
    initiator.encode(&half, &mut out).unwrap();
    let error = initiator.encode(&NetworkMessage::Ping { nonce: 0 }, &mut out).unwrap_err();
    assert!(matches!(error, TransportError::SendQueueFull { .. }));
    assert!(!error.disconnects());
}

#[test]
fn reconnect_with_v1_only_if_the_peer_hung_up_on_our_key() {
    let initiator = Transport::v2_initiator(mainnet(), secrets(1, 0));
    assert!(!initiator.should_reconnect_with_v1(0));
    assert!(!initiator.should_reconnect_with_v1(FRAME_HEADER_BYTES as u64 - 1));
    assert!(initiator.should_reconnect_with_v1(FRAME_HEADER_BYTES as u64));
    // Once anything came back, a close is not a v1 peer's doing.
    let mut initiator = Transport::v2_initiator(mainnet(), secrets(1, 0));
    assert_eq!(initiator.push(&[0x33]), 1);
    assert!(!initiator.should_reconnect_with_v1(64));
    let responder = Transport::v2_responder(mainnet(), secrets(2, 0));
    assert!(!responder.should_reconnect_with_v1(64), "only outbound connections reconnect");
    assert!(!Transport::v1(mainnet()).should_reconnect_with_v1(64));
}

fn split_at_cuts(wire: &[u8], cuts: &[usize]) -> Vec<usize> {
    let mut positions: Vec<usize> = cuts.iter().map(|cut| cut % (wire.len() + 1)).collect();
    positions.push(0);
    positions.push(wire.len());
    positions.sort_unstable();
    positions.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_split_of_handshake_and_messages_decodes_the_same(
        cuts in prop::collection::vec(any::<usize>(), 1..40),
        garbage in (0usize..=GARBAGE_BYTES_MAX, 0usize..=GARBAGE_BYTES_MAX),
    ) {
        let mut initiator = Transport::v2_initiator(mainnet(), secrets(11, garbage.0));
        // Two responders with the same secrets answer the same bytes the
        // same way: one replies to the initiator, the other gets the
        // initiator's whole stream in pieces.
        let mut replying = Transport::v2_responder(mainnet(), secrets(12, garbage.1));
        let mut responder = Transport::v2_responder(mainnet(), secrets(12, garbage.1));
        let sent = every_message();
        // Everything the initiator sends, as one stream: key and garbage,
        // then (once it has the responder's key) terminator, version packet
        // and the messages queued meanwhile.
        let mut stream = encode_all(&mut initiator, &sent);
        initiator.take_output(&mut stream);
        let mut reply = Vec::new();
        prop_assert_eq!(replying.push(&stream), stream.len());
        replying.take_output(&mut reply);
        prop_assert_eq!(initiator.push(&reply), reply.len());
        initiator.take_output(&mut stream);
        let sizes = split_at_cuts(&stream, &cuts);
        prop_assert_eq!(messages(feed(&mut responder, &stream, &sizes)), sent);
    }
}
