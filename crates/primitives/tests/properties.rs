//! Property tests for the encodings: arbitrary owned transactions and blocks
//! (legacy and segwit, empty and large scripts, witness stacks with empty items)
//! survive encode -> parse -> `to_owned` with the same value and the same bytes;
//! the views' and owned types' sizes, weight, txid and wtxid agree with the
//! encoded bytes; compact size and Core's VARINT round-trip for any `u64`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_primitives::encode::{
    compact_size_len, varint_len, write_compact_size, write_varint, Reader, COMPACT_SIZE_MAX,
};
use ibex_primitives::hash::sha256d;
use ibex_primitives::{
    Block, BlockHash, BlockView, DecodeError, Field, Hash256, Header, OutPoint, ParsedTransaction,
    Transaction, TxInput, TxOutput, Txid,
};
use proptest::prelude::*;

/// Scripts and witness items: mostly short, sometimes empty, sometimes long
/// enough to need the 3-byte (>= 0xfd) and 5-byte (>= 0x10000) compact sizes.
fn script() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..40),
        1 => Just(Vec::new()),
        1 => long_bytes(0xfc..0x104),
        1 => long_bytes(0xfff0..0x10010),
    ]
}

/// Long byte strings from a length and a seed: drawing each of 65,536 bytes from
/// proptest would dominate the run time, and their values do not matter here.
fn long_bytes(lengths: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u8>> {
    (lengths, any::<u64>()).prop_map(|(length, seed)| {
        let mut state = seed | 1;
        (0..length)
            .map(|_| {
                // xorshift64
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    })
}

fn witness_stack() -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop_oneof![
        2 => Just(Vec::new()),
        // A stack of only empty items is still a witness (it is not "null").
        1 => prop::collection::vec(Just(Vec::new()), 1..3),
        2 => prop::collection::vec(script(), 1..5),
    ]
}

fn outpoint() -> impl Strategy<Value = OutPoint> {
    prop_oneof![
        1 => Just(OutPoint::NULL),
        4 => (any::<[u8; 32]>(), any::<u32>()).prop_map(|(txid, vout)| OutPoint { txid: Txid(txid), vout }),
    ]
}

fn input(segwit: bool) -> impl Strategy<Value = TxInput> {
    let witness = if segwit { witness_stack().boxed() } else { Just(Vec::new()).boxed() };
    (outpoint(), script(), any::<u32>(), witness).prop_map(
        |(previous_output, script_sig, sequence, witness)| TxInput {
            previous_output,
            script_sig,
            sequence,
            witness,
        },
    )
}

fn output() -> impl Strategy<Value = TxOutput> {
    (any::<i64>(), script()).prop_map(|(value, script_pubkey)| TxOutput { value, script_pubkey })
}

/// A transaction with at least one input: with none, Core's encoding is ambiguous
/// (the empty input count reads as the segwit marker), see
/// `empty_transaction_round_trips_but_no_inputs_with_outputs_does_not`.
fn transaction() -> impl Strategy<Value = Transaction> {
    any::<bool>()
        .prop_flat_map(|segwit| {
            (
                any::<i32>(),
                prop::collection::vec(input(segwit), 1..5),
                prop::collection::vec(output(), 0..5),
                any::<u32>(),
            )
        })
        .prop_map(|(version, inputs, outputs, lock_time)| Transaction {
            version,
            inputs,
            outputs,
            lock_time,
        })
}

fn header() -> impl Strategy<Value = Header> {
    (any::<i32>(), any::<[u8; 32]>(), any::<[u8; 32]>(), any::<[u32; 3]>()).prop_map(
        |(version, previous, merkle, [time, bits, nonce])| Header {
            version,
            previous_block_hash: BlockHash(previous),
            merkle_root: Hash256(merkle),
            time,
            bits,
            nonce,
        },
    )
}

fn block() -> impl Strategy<Value = Block> {
    (header(), prop::collection::vec(transaction(), 1..8))
        .prop_map(|(header, transactions)| Block { header, transactions })
}

/// Checks the owned transaction's own sizes and hashes against its encodings.
fn check_owned_sizes(transaction: &Transaction, bytes: &[u8]) -> Result<(), TestCaseError> {
    let stripped = transaction.encode_without_witness();
    prop_assert_eq!(transaction.total_size(), bytes.len());
    prop_assert_eq!(transaction.base_size(), stripped.len());
    prop_assert_eq!(transaction.weight(), 3 * stripped.len() + bytes.len());
    prop_assert_eq!(transaction.txid().0, sha256d(&stripped));
    prop_assert_eq!(transaction.wtxid().0, sha256d(bytes));
    let witness = transaction.inputs.iter().any(|input| !input.witness.is_empty());
    prop_assert_eq!(transaction.has_witness(), witness);
    prop_assert_eq!(bytes == stripped.as_slice(), !witness);
    if witness {
        // BIP144: version, then the marker 0x00 and flag 0x01.
        prop_assert_eq!(&bytes[4..6], &[0x00, 0x01]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn transaction_encode_parse_round_trips(transaction in transaction()) {
        let bytes = transaction.encode();
        check_owned_sizes(&transaction, &bytes)?;
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let view = parsed.view();
        prop_assert_eq!(view.bytes(), bytes.as_slice());
        let owned = view.to_owned();
        prop_assert_eq!(&owned, &transaction);
        prop_assert_eq!(owned.encode(), bytes.clone());
        prop_assert_eq!(view.total_size(), bytes.len());
        prop_assert_eq!(view.base_size(), transaction.base_size());
        prop_assert_eq!(view.weight(), transaction.weight());
        prop_assert_eq!(view.has_witness(), transaction.has_witness());
        prop_assert_eq!(view.txid(), transaction.txid());
        prop_assert_eq!(view.wtxid(), transaction.wtxid());
        prop_assert_eq!(view.is_coinbase(), transaction.is_coinbase());
        prop_assert_eq!(view.base_parts().concat(), transaction.encode_without_witness());
        // The outputs' serialisation without its count, as BIP143 hashes it.
        let mut outputs = Vec::new();
        for output in &transaction.outputs {
            outputs.extend_from_slice(&output.value.to_le_bytes());
            write_compact_size(&mut outputs, output.script_pubkey.len() as u64);
            outputs.extend_from_slice(&output.script_pubkey);
        }
        prop_assert_eq!(view.outputs_bytes(), outputs.as_slice());
        for (view_input, input) in view.inputs().iter().zip(&transaction.inputs) {
            prop_assert_eq!(view_input.previous_output(), input.previous_output);
            prop_assert_eq!(view_input.previous_output_bytes(), &input.previous_output.to_bytes());
            prop_assert_eq!(view_input.witness.len(), input.witness.len());
            prop_assert_eq!(view_input.witness.is_empty(), input.witness.is_empty());
            prop_assert_eq!(view_input.witness.to_vec(), input.witness.iter().map(Vec::as_slice).collect::<Vec<_>>());
        }
    }

    #[test]
    fn stripped_encoding_decodes_to_the_transaction_without_witnesses(transaction in transaction()) {
        let stripped = transaction.encode_without_witness();
        let decoded = Transaction::decode(&stripped).unwrap();
        let mut expected = transaction.clone();
        expected.inputs.iter_mut().for_each(|input| input.witness.clear());
        prop_assert_eq!(&decoded, &expected);
        prop_assert_eq!(decoded.txid(), transaction.txid());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn block_encode_parse_round_trips(block in block(), trailing in prop::collection::vec(any::<u8>(), 0..4)) {
        let bytes = block.encode();
        prop_assert_eq!(block.size(), bytes.len());
        let stripped_size = 80
            + compact_size_len(block.transactions.len() as u64)
            + block.transactions.iter().map(|transaction| transaction.encode_without_witness().len()).sum::<usize>();
        prop_assert_eq!(block.stripped_size(), stripped_size);
        prop_assert_eq!(block.weight(), 3 * stripped_size + bytes.len());

        let view = BlockView::parse(&bytes).unwrap();
        prop_assert_eq!(view.bytes(), bytes.as_slice());
        prop_assert_eq!(view.header(), &block.header);
        prop_assert_eq!(view.block_hash(), block.block_hash());
        prop_assert_eq!(view.block_hash().0, sha256d(&bytes[..80]));
        prop_assert_eq!(view.transaction_count(), block.transactions.len());
        prop_assert_eq!(view.size(), bytes.len());
        prop_assert_eq!(view.stripped_size(), stripped_size);
        prop_assert_eq!(view.weight(), block.weight());
        prop_assert_eq!(view.has_witness(), block.transactions.iter().any(Transaction::has_witness));
        prop_assert_eq!(view.input_count(), block.transactions.iter().map(|t| t.inputs.len()).sum::<usize>());
        prop_assert_eq!(view.output_count(), block.transactions.iter().map(|t| t.outputs.len()).sum::<usize>());
        prop_assert_eq!(view.transactions_offset(), 80 + compact_size_len(block.transactions.len() as u64));
        let txids: Vec<Txid> = block.transactions.iter().map(Transaction::txid).collect();
        prop_assert_eq!(view.txids(), txids);
        prop_assert_eq!(view.compute_merkle_root(), block.compute_merkle_root());
        let owned = view.to_owned();
        prop_assert_eq!(&owned, &block);
        prop_assert_eq!(owned.encode(), bytes.clone());
        prop_assert_eq!(Block::decode(&bytes).unwrap(), block.clone());

        // Decoding from a reader stops right after the block, whatever follows.
        let mut longer = bytes.clone();
        longer.extend_from_slice(&trailing);
        let mut reader = Reader::new(&longer);
        let decoded = BlockView::decode(&mut reader).unwrap();
        prop_assert_eq!(reader.position(), bytes.len());
        prop_assert_eq!(decoded.bytes(), bytes.as_slice());
    }
}

/// Values spread over every compact size and VARINT length, boundaries included.
fn integer() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        0u64..0x200,
        0xff00u64..0x1_0100,
        COMPACT_SIZE_MAX - 8..COMPACT_SIZE_MAX + 8,
        0xffff_ff00u64..0x1_0000_0100,
        (0u32..64).prop_map(|shift| 1u64 << shift),
        (0u32..64).prop_map(|shift| (1u64 << shift).wrapping_sub(1)),
        u64::MAX - 0x100..=u64::MAX,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    #[test]
    fn compact_size_round_trips(value in integer(), trailing in any::<u8>()) {
        let mut bytes = Vec::new();
        write_compact_size(&mut bytes, value);
        prop_assert_eq!(bytes.len(), compact_size_len(value));
        let expected_length = match value {
            0..=0xfc => 1,
            0xfd..=0xffff => 3,
            0x1_0000..=0xffff_ffff => 5,
            _ => 9,
        };
        prop_assert_eq!(bytes.len(), expected_length);
        bytes.push(trailing);
        let mut reader = Reader::new(&bytes);
        let read = reader.read_compact_size();
        if value <= COMPACT_SIZE_MAX {
            prop_assert_eq!(read, Ok(value));
            prop_assert_eq!(reader.position(), expected_length);
        } else {
            // Core's ReadCompactSize range check: "size too large".
            prop_assert_eq!(read, Err(DecodeError::CompactSizeTooLarge { offset: 0, value }));
        }
    }

    #[test]
    fn varint_round_trips(value in integer(), trailing in any::<u8>()) {
        let mut bytes = Vec::new();
        write_varint(&mut bytes, value);
        prop_assert_eq!(bytes.len(), varint_len(value));
        prop_assert!(bytes.len() <= 10);
        // Every byte but the last has the continuation bit.
        let last = bytes.len() - 1;
        prop_assert!(bytes.iter().enumerate().all(|(index, byte)| (byte & 0x80 != 0) == (index != last)));
        bytes.push(trailing);
        let mut reader = Reader::new(&bytes);
        prop_assert_eq!(reader.read_varint(), Ok(value));
        prop_assert_eq!(reader.position(), bytes.len() - 1);
    }

    #[test]
    fn varint_encoding_is_unique_and_ordered(first in integer(), second in integer()) {
        // Core's VARINT gives each value exactly one encoding, and a longer
        // encoding always means a larger value.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        write_varint(&mut a, first);
        write_varint(&mut b, second);
        prop_assert_eq!(a == b, first == second);
        if a.len() < b.len() {
            prop_assert!(first < second);
        }
    }
}

#[test]
fn empty_transaction_round_trips_but_no_inputs_with_outputs_does_not() {
    // No inputs and no outputs: the empty input count is read as a marker, the
    // zero output count as a zero flag, and Core's decoder stops there; the
    // encoding round-trips.
    let empty = Transaction { version: 2, inputs: vec![], outputs: vec![], lock_time: 7 };
    let bytes = empty.encode();
    assert_eq!(bytes.len(), 10);
    assert_eq!(Transaction::decode(&bytes), Ok(empty));

    // No inputs but an output: the output count (1) is read as the segwit flag,
    // so the bytes mean something else, exactly as in Core, which is why such a
    // transaction can never be relayed or mined.
    let outputs = vec![TxOutput { value: 1, script_pubkey: vec![0x51] }];
    let no_inputs = Transaction { version: 2, inputs: vec![], outputs, lock_time: 0 };
    // Here the value's first byte (1) becomes an input count that the 13 bytes
    // left cannot hold.
    let error = Transaction::decode(&no_inputs.encode()).unwrap_err();
    assert!(
        matches!(
            error,
            DecodeError::CountTooLarge { what: Field::Inputs, count: 1, offset: 6, .. }
        ),
        "{error:?}"
    );
}
