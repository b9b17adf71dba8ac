//! The wire and file formats the project had targets for first: blocks,
//! transactions, P2P v1 frames and messages, the address manager's file
//! (the BIP324 transport is in [`crate::wire_v2`]).

use ibex_p2p::addrman::file::{decode, encode};
use ibex_p2p::addrman::AddressPolicy;
use ibex_p2p::decoder::PAYLOAD_ALLOCATION_STEP_BYTES;
use ibex_p2p::{Frame, FrameDecoder, FrameError, NetworkMessage, FRAME_HEADER_BYTES};
use ibex_primitives::hash::sha256d;
use ibex_primitives::merkle::check_witness_commitment;
use ibex_primitives::{Block, BlockView, ParsedTransaction, Transaction};

/// The test networks' magic (any fixed value serves).
pub(crate) const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

/// `block`: `BlockView::parse` and `Block::decode`; whatever decodes
/// re-encodes from its owned copy to exactly the input, with the same sizes,
/// weight, txids, wtxids and merkle root as the zero-copy view.
pub fn block(data: &[u8]) {
    let Ok(view) = BlockView::parse(data) else {
        return;
    };
    assert_eq!(view.bytes(), data);
    let owned = view.to_owned();
    assert_eq!(owned.encode(), data, "the encoding is canonical");
    assert_eq!(Block::decode(data).as_ref(), Ok(&owned));
    assert_eq!(owned.block_hash(), view.block_hash());
    assert_eq!(view.size(), data.len());
    assert_eq!(owned.size(), data.len());
    assert_eq!(owned.stripped_size(), view.stripped_size());
    assert_eq!(owned.weight(), view.weight());
    assert_eq!(owned.transactions.len(), view.transaction_count());
    let mut inputs = 0;
    let mut outputs = 0;
    for (transaction, owned_transaction) in view.transactions().zip(&owned.transactions) {
        assert_eq!(transaction.txid(), owned_transaction.txid());
        assert_eq!(transaction.wtxid(), owned_transaction.wtxid());
        assert_eq!(transaction.base_size(), owned_transaction.base_size());
        assert_eq!(transaction.total_size(), owned_transaction.total_size());
        inputs += transaction.inputs().len();
        outputs += transaction.outputs().len();
    }
    assert_eq!(view.input_count(), inputs);
    assert_eq!(view.output_count(), outputs);
    assert_eq!(view.compute_merkle_root(), owned.compute_merkle_root());
    // Must not panic whatever the coinbase holds.
    let _ = check_witness_commitment(&view);
}

/// `transaction`: `ParsedTransaction::parse` and `Transaction::decode`;
/// whatever decodes re-encodes to exactly the input, with the same sizes,
/// txid and wtxid as the zero-copy view.
pub fn transaction(data: &[u8]) {
    let Ok(parsed) = ParsedTransaction::parse(data) else {
        return;
    };
    let view = parsed.view();
    assert_eq!(view.bytes(), data);
    let owned = view.to_owned();
    assert_eq!(owned.encode(), data, "the encoding is canonical");
    assert_eq!(Transaction::decode(data).as_ref(), Ok(&owned));
    assert_eq!(view.total_size(), data.len());
    assert_eq!(owned.total_size(), data.len());
    assert_eq!(view.base_size(), owned.base_size());
    assert_eq!(view.weight(), owned.weight());
    assert_eq!(view.has_witness(), owned.has_witness());
    assert_eq!(view.is_coinbase(), owned.is_coinbase());
    assert_eq!(view.txid(), owned.txid());
    assert_eq!(view.wtxid(), owned.wtxid());
    let stripped = owned.encode_without_witness();
    assert_eq!(stripped.len(), view.base_size());
    assert_eq!(view.base_parts().concat(), stripped);
    assert_eq!(view.outputs().len(), owned.outputs.len());
    for (input, owned_input) in view.inputs().iter().zip(&owned.inputs) {
        assert_eq!(input.witness.len(), owned_input.witness.len());
    }
    // Without inputs the legacy form is ambiguous (Core reads the empty input
    // list as the segwit marker), so only re-decode the stripped form with some.
    if !owned.inputs.is_empty() {
        let reparsed = Transaction::decode(&stripped).expect("the stripped form decodes");
        assert_eq!(reparsed.txid(), owned.txid());
        assert!(!reparsed.has_witness());
    }
}

/// Every outcome until the stream is used up or a disconnecting error.
fn decode_frames(stream: &[u8], piece_bytes: usize) -> Vec<Result<Frame, FrameError>> {
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

/// `p2p_message_decode`: the v1 frame decoder and the message decoder.
/// Any bytes, fed in pieces whose sizes the input picks, give the same
/// outcomes as fed whole; memory stays within a frame and 256 KiB; every
/// frame's payload either fails with a typed error or decodes to a message
/// whose re-encoded payload decodes to the same message.
///
/// Input: byte 0 is the piece size (0 means whole), the rest is the stream.
pub fn p2p_message_decode(data: &[u8]) {
    let Some((&piece_selector, stream)) = data.split_first() else {
        return;
    };
    let outcomes = decode_frames(stream, usize::from(piece_selector));
    assert_eq!(outcomes, decode_frames(stream, stream.len()), "pieces change nothing");
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
}

fn check_address_file(bytes: &[u8], policy: AddressPolicy) {
    let Ok(decoded) = decode(bytes, MAGIC, policy, &[0; 32]) else {
        return;
    };
    assert!(decoded.manager.len() <= decoded.entries);
    let written = encode(&decoded.manager, MAGIC);
    let again = decode(&written, MAGIC, policy, &[1; 32]).expect("our own file reads back");
    assert_eq!(again.manager.len(), decoded.manager.len());
    assert_eq!(encode(&again.manager, MAGIC), written, "writing is stable");
}

/// `address_file`: the address manager's file reader. Any input is
/// refused with a typed error or read; a file that reads writes back to
/// bytes that read to the same addresses. The input is tried as it is and
/// with a valid checksum appended, so the entries' parser is reached too.
pub fn address_file(data: &[u8]) {
    for policy in [AddressPolicy::default(), AddressPolicy { loopback_allowed: true }] {
        check_address_file(data, policy);
        let mut with_checksum = data.to_vec();
        with_checksum.extend_from_slice(&sha256d(data));
        check_address_file(&with_checksum, policy);
    }
}
