//! Fuzzes the v1 frame decoder and the message decoder: any bytes, fed in
//! pieces whose sizes the input picks, give the same outcomes as fed whole;
//! memory stays within a frame and 256 KiB; every frame's payload either
//! fails with a typed error or decodes to a message whose re-encoded payload
//! decodes to the same message.
//!
//! Input: byte 0 is the piece size (0 means whole), the rest is the stream.
#![no_main]

use ibex_p2p::decoder::PAYLOAD_ALLOCATION_STEP_BYTES;
use ibex_p2p::{Frame, FrameDecoder, FrameError, NetworkMessage, FRAME_HEADER_BYTES};
use libfuzzer_sys::fuzz_target;

const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

/// Every outcome until the stream is used up or a disconnecting error.
fn decode(stream: &[u8], piece_bytes: usize) -> Vec<Result<Frame, FrameError>> {
    let mut decoder = FrameDecoder::new(MAGIC);
    let mut outcomes = Vec::new();
    for mut piece in stream.chunks(piece_bytes.max(1)) {
        loop {
            let consumed = decoder.push(piece);
            piece = &piece[consumed..];
            assert!(
                decoder.allocated_bytes()
                    <= decoder.buffered_bytes() + PAYLOAD_ALLOCATION_STEP_BYTES
            );
            assert!(decoder.buffered_bytes() <= FRAME_HEADER_BYTES + 4_000_000);
            match decoder.next_frame() {
                Ok(Some(frame)) => outcomes.push(Ok(frame)),
                Ok(None) => {
                    assert!(piece.is_empty());
                    break;
                }
                Err(error) if error.disconnects() => {
                    outcomes.push(Err(error.clone()));
                    assert_eq!(decoder.push(piece), 0, "a failed stream takes nothing");
                    assert_eq!(decoder.next_frame(), Err(error));
                    return outcomes;
                }
                Err(error) => outcomes.push(Err(error)),
            }
        }
    }
    outcomes
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece_selector, stream)) = data.split_first() else {
        return;
    };
    let outcomes = decode(stream, usize::from(piece_selector));
    assert_eq!(outcomes, decode(stream, stream.len()), "pieces change nothing");
    for frame in outcomes.into_iter().flatten() {
        let command = frame.command;
        let Ok(message) = NetworkMessage::decode(command, &frame.payload) else {
            continue;
        };
        assert_eq!(message.command(), command);
        let mut payload = Vec::new();
        message.encode_payload(&mut payload);
        assert_eq!(NetworkMessage::decode(command, &payload).as_ref(), Ok(&message));
        assert_eq!(NetworkMessage::from_frame(frame), Ok(message));
    }
});
