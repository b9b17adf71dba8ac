//! The frame decoder and encoder: hand-checked bytes, every header check at
//! and past its bound, Core's split between errors that disconnect and
//! errors that drop one message, and streams fed in pieces.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_p2p::decoder::PAYLOAD_ALLOCATION_STEP_BYTES;
use ibex_p2p::{
    encode_frame, payload_checksum, Command, Frame, FrameDecoder, FrameError, FRAME_HEADER_BYTES,
    MESSAGE_PAYLOAD_BYTES_MAX,
};
use ibex_primitives::hash::sha256d;
use ibex_primitives::{Network, Params};

const MAINNET: [u8; 4] = [0xf9, 0xbe, 0xb4, 0xd9];

/// Feeds `wire` to a fresh decoder in the given chunk sizes (cycled) and
/// collects every outcome until the input is used up or a disconnect.
fn decode_in_chunks(wire: &[u8], chunk_sizes: &[usize]) -> Vec<Result<Frame, FrameError>> {
    let mut decoder = FrameDecoder::new(MAINNET);
    let mut outcomes = Vec::new();
    let mut position = 0;
    let mut chunk_index = 0;
    while position < wire.len() {
        let size = chunk_sizes[chunk_index % chunk_sizes.len()].max(1);
        chunk_index += 1;
        let mut chunk = &wire[position..wire.len().min(position + size)];
        position += chunk.len();
        loop {
            let consumed = decoder.push(chunk);
            chunk = &chunk[consumed..];
            match decoder.next_frame() {
                Ok(Some(frame)) => outcomes.push(Ok(frame)),
                Ok(None) => break,
                Err(error) => {
                    let disconnects = error.disconnects();
                    outcomes.push(Err(error));
                    if disconnects {
                        return outcomes;
                    }
                }
            }
        }
        assert!(chunk.is_empty(), "decoder left bytes of a chunk without a frame");
    }
    outcomes
}

fn frame(command: Command, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(MAINNET, command, payload, &mut out).unwrap();
    out
}

#[test]
fn empty_verack_frame_matches_hand_checked_bytes() {
    // The checksum of an empty payload is the first four bytes of SHA-256d(""),
    // 5df6e0e2761359d3...: computed here, not copied.
    let checksum = sha256d(b"");
    assert_eq!(checksum[..4], [0x5d, 0xf6, 0xe0, 0xe2]);
    let mut expected = vec![0xf9, 0xbe, 0xb4, 0xd9];
    expected.extend_from_slice(b"verack\0\0\0\0\0\0");
    expected.extend_from_slice(&[0, 0, 0, 0]);
    expected.extend_from_slice(&checksum[..4]);
    let wire = frame(Command::VERACK, &[]);
    assert_eq!(wire, expected);
    assert_eq!(wire.len(), FRAME_HEADER_BYTES);
    assert_eq!(Params::for_network(Network::Main).message_start, MAINNET);
}

#[test]
fn ping_frame_matches_hand_checked_bytes() {
    let payload = 0x0102_0304_0506_0708u64.to_le_bytes();
    let wire = frame(Command::PING, &payload);
    assert_eq!(&wire[4..16], b"ping\0\0\0\0\0\0\0\0");
    assert_eq!(&wire[16..20], &[8, 0, 0, 0]);
    assert_eq!(&wire[20..24], &sha256d(&payload)[..4]);
    assert_eq!(&wire[24..], &[8, 7, 6, 5, 4, 3, 2, 1]);
    let outcomes = decode_in_chunks(&wire, &[wire.len()]);
    assert_eq!(outcomes, [Ok(Frame { command: Command::PING, payload: payload.to_vec() })]);
}

#[test]
fn wrong_magic_disconnects_and_stays_failed() {
    let wire = frame(Command::VERACK, &[]);
    let mut decoder = FrameDecoder::new([0x0b, 0x11, 0x09, 0x07]);
    assert_eq!(decoder.push(&wire), FRAME_HEADER_BYTES);
    let error = decoder.next_frame().unwrap_err();
    assert_eq!(
        error,
        FrameError::WrongMagic { expected: [0x0b, 0x11, 0x09, 0x07], received: MAINNET }
    );
    assert!(error.disconnects());
    assert_eq!(decoder.push(&wire), 0, "no more bytes taken after a disconnect");
    assert_eq!(decoder.next_frame(), Err(error));
}

fn header_declaring(command: &[u8; 12], payload_bytes: u32) -> Vec<u8> {
    let mut header = MAINNET.to_vec();
    header.extend_from_slice(command);
    header.extend_from_slice(&payload_bytes.to_le_bytes());
    header.extend_from_slice(&[0; 4]);
    header
}

#[test]
fn payload_length_at_the_limit_is_accepted_and_past_it_disconnects() {
    let limit = MESSAGE_PAYLOAD_BYTES_MAX as u32;
    let mut decoder = FrameDecoder::new(MAINNET);
    decoder.push(&header_declaring(b"block\0\0\0\0\0\0\0", limit));
    assert_eq!(decoder.next_frame(), Ok(None), "4,000,000 bytes declared: waiting for them");
    assert_eq!(decoder.buffered_bytes(), FRAME_HEADER_BYTES);

    let mut decoder = FrameDecoder::new(MAINNET);
    decoder.push(&header_declaring(b"block\0\0\0\0\0\0\0", limit + 1));
    let error = decoder.next_frame().unwrap_err();
    assert!(matches!(error, FrameError::PayloadTooLarge { payload_bytes: 4_000_001, .. }));
    assert!(error.disconnects());
}

#[test]
fn largest_payload_round_trips() {
    let payload: Vec<u8> = (0..MESSAGE_PAYLOAD_BYTES_MAX).map(|index| index as u8).collect();
    let wire = frame(Command::BLOCK, &payload);
    assert_eq!(wire.len(), FRAME_HEADER_BYTES + MESSAGE_PAYLOAD_BYTES_MAX);
    let outcomes = decode_in_chunks(&wire, &[65_536, 1, 1_000_003]);
    assert_eq!(outcomes, [Ok(Frame { command: Command::BLOCK, payload })]);
}

#[test]
fn checksum_mismatch_drops_one_message_and_reading_goes_on() {
    let mut wire = frame(Command::PING, &7u64.to_le_bytes());
    wire[20] ^= 0x01;
    let received = [wire[20], wire[21], wire[22], wire[23]];
    wire.extend_from_slice(&frame(Command::VERACK, &[]));
    let outcomes = decode_in_chunks(&wire, &[5]);
    let expected_checksum = payload_checksum(&7u64.to_le_bytes());
    assert_eq!(
        outcomes,
        [
            Err(FrameError::ChecksumMismatch {
                command_bytes: *b"ping\0\0\0\0\0\0\0\0",
                payload_bytes: 8,
                expected: expected_checksum,
                received,
            }),
            Ok(Frame { command: Command::VERACK, payload: Vec::new() }),
        ]
    );
    assert!(!outcomes[0].as_ref().unwrap_err().disconnects());
}

#[test]
fn invalid_command_is_found_after_the_payload_and_drops_one_message() {
    for command in [*b"ver\0ack\0\0\0\0\0", *b"tab\tcommand\0", *b"high\xff\0\0\0\0\0\0\0"] {
        let payload = [1, 2, 3];
        let mut wire = header_declaring(&command, 3);
        wire[20..24].copy_from_slice(&payload_checksum(&payload));
        wire.extend_from_slice(&payload);
        wire.extend_from_slice(&frame(Command::SEND_HEADERS, &[]));
        let outcomes = decode_in_chunks(&wire, &[1]);
        assert_eq!(
            outcomes,
            [
                Err(FrameError::InvalidCommand { command_bytes: command }),
                Ok(Frame { command: Command::SEND_HEADERS, payload: Vec::new() }),
            ]
        );
    }
}

#[test]
fn checksum_is_checked_before_the_command_as_in_core() {
    let mut wire = header_declaring(b"\x01bad\0\0\0\0\0\0\0\0", 0);
    wire[20..24].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let outcomes = decode_in_chunks(&wire, &[24]);
    assert!(matches!(outcomes[..], [Err(FrameError::ChecksumMismatch { .. })]));
}

#[test]
fn all_nul_command_is_valid_as_in_core() {
    let wire = frame(Command::new("").unwrap(), &[9]);
    let outcomes = decode_in_chunks(&wire, &[3]);
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].as_ref().unwrap().command.name(), "");
}

#[test]
fn push_stops_at_the_end_of_each_frame() {
    let mut wire = frame(Command::VERACK, &[]);
    wire.extend_from_slice(&frame(Command::PING, &[0; 8]));
    let mut decoder = FrameDecoder::new(MAINNET);
    assert_eq!(decoder.push(&wire), FRAME_HEADER_BYTES);
    assert_eq!(decoder.push(&wire[FRAME_HEADER_BYTES..]), 0, "a frame waits to be taken");
    assert_eq!(decoder.next_frame().unwrap().unwrap().command, Command::VERACK);
    assert_eq!(decoder.push(&wire[FRAME_HEADER_BYTES..]), FRAME_HEADER_BYTES + 8);
    assert_eq!(decoder.next_frame().unwrap().unwrap().command, Command::PING);
    assert_eq!(decoder.next_frame(), Ok(None));
    assert_eq!(decoder.push(&[]), 0);
}

#[test]
fn one_byte_at_a_time_gives_the_same_frames() {
    let mut wire = Vec::new();
    let payloads: [(Command, Vec<u8>); 4] = [
        (Command::VERSION, vec![0x11; 102]),
        (Command::VERACK, Vec::new()),
        (Command::HEADERS, vec![0x22; 5_000]),
        (Command::PONG, vec![0x33; 8]),
    ];
    for (command, payload) in &payloads {
        encode_frame(MAINNET, *command, payload, &mut wire).unwrap();
    }
    let whole = decode_in_chunks(&wire, &[wire.len()]);
    let bytewise = decode_in_chunks(&wire, &[1]);
    assert_eq!(whole.len(), 4);
    assert_eq!(whole, bytewise);
    for (outcome, (command, payload)) in whole.iter().zip(&payloads) {
        let frame = outcome.as_ref().unwrap();
        assert_eq!((&frame.command, &frame.payload), (command, payload));
    }
}

#[test]
fn a_stalled_large_message_costs_one_allocation_step() {
    let mut decoder = FrameDecoder::new(MAINNET);
    let mut wire = header_declaring(b"block\0\0\0\0\0\0\0", MESSAGE_PAYLOAD_BYTES_MAX as u32);
    wire.push(0xaa);
    assert_eq!(decoder.push(&wire), FRAME_HEADER_BYTES + 1);
    assert_eq!(decoder.buffered_bytes(), FRAME_HEADER_BYTES + 1);
    let allocated_bytes = decoder.allocated_bytes();
    assert!(allocated_bytes >= 1);
    assert!(allocated_bytes <= 1 + PAYLOAD_ALLOCATION_STEP_BYTES, "{allocated_bytes}");
    assert_eq!(decoder.next_frame(), Ok(None));
}
