//! Bitcoin Core's own vectors decode and re-encode exactly.
//!
//! - Every transaction in Core's `tx_valid.json` and `tx_invalid.json` (v30.0)
//!   parses with [`ParsedTransaction::parse`], and its owned copy
//!   ([`TransactionView::to_owned`]) re-encodes byte for byte, with the same
//!   txid, wtxid and sizes as the view. Core's `transaction_tests.cpp`
//!   deserialises every one of them (the invalid ones fail script or
//!   `CheckTransaction` rules, not decoding), so none may be skipped here.
//!   Each input must spend one of the outpoints the vector lists, which ties the
//!   decoded outpoints to Core's own reading of the transaction.
//! - Every testnet3 block in `blockfilters.json` parses, hashes to its listed
//!   hash, re-encodes identically, has a valid unmutated merkle root, and has
//!   exactly as many non-coinbase inputs as the vector lists spent scripts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_primitives::hash::sha256d;
use ibex_primitives::merkle::check_witness_commitment;
use ibex_primitives::{
    hex, Block, BlockView, OutPoint, ParsedTransaction, Transaction, TransactionView, Txid,
};
use serde_json::Value;
use std::path::PathBuf;

/// testnet3's segwit activation height: blocks from here on must satisfy BIP141.
const TESTNET_SEGWIT_HEIGHT: u64 = 834_624;

fn core_vectors(name: &str) -> Vec<Value> {
    let path = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/vectors/bitcoin-core")
    .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    match serde_json::from_str(&text).unwrap() {
        Value::Array(entries) => entries,
        other => panic!("{name}: expected an array, found {other}"),
    }
}

/// A tx_valid/tx_invalid test: the listed prevouts and the serialised transaction.
/// Entries made of one string are comments (Core skips them too).
struct TransactionVector {
    index: usize,
    prevouts: Vec<OutPoint>,
    bytes: Vec<u8>,
}

fn transaction_vectors(name: &str) -> Vec<TransactionVector> {
    let mut vectors = Vec::new();
    for (index, entry) in core_vectors(name).iter().enumerate() {
        let entry = entry.as_array().unwrap();
        if entry.len() == 1 {
            assert!(entry[0].is_string(), "{name} entry {index}: a comment is one string");
            continue;
        }
        assert_eq!(entry.len(), 3, "{name} entry {index}: [prevouts, hex, flags]");
        let prevouts = entry[0]
            .as_array()
            .unwrap()
            .iter()
            .map(|prevout| {
                let prevout = prevout.as_array().unwrap();
                let txid = Txid::from_hex(prevout[0].as_str().unwrap()).unwrap();
                // Core reads the index as an int; -1 is the coinbase's 0xffffffff.
                let vout = prevout[1].as_i64().unwrap() as u32;
                OutPoint { txid, vout }
            })
            .collect();
        let bytes = hex::decode(entry[1].as_str().unwrap()).unwrap();
        vectors.push(TransactionVector { index, prevouts, bytes });
    }
    vectors
}

/// Checks one view against its owned copy and the bytes it came from.
fn check_round_trip(view: &TransactionView<'_>, bytes: &[u8], context: &str) -> Transaction {
    assert_eq!(view.bytes(), bytes, "{context}: the view spans the whole input");
    let owned = view.to_owned();
    assert_eq!(owned.encode(), bytes, "{context}: re-encodes byte for byte");
    assert_eq!(Transaction::decode(bytes).as_ref(), Ok(&owned), "{context}");
    assert_eq!(view.txid(), owned.txid(), "{context}: txid");
    assert_eq!(view.wtxid(), owned.wtxid(), "{context}: wtxid");
    assert_eq!(view.wtxid().0, sha256d(bytes), "{context}: wtxid hashes the full bytes");
    assert_eq!(view.has_witness(), owned.has_witness(), "{context}");
    assert_eq!(view.total_size(), bytes.len(), "{context}");
    assert_eq!(owned.total_size(), bytes.len(), "{context}");
    assert_eq!(view.base_size(), owned.base_size(), "{context}");
    assert_eq!(view.weight(), owned.weight(), "{context}");
    assert_eq!(view.is_coinbase(), owned.is_coinbase(), "{context}");

    // The witness-free form: what the txid hashes, and a valid legacy encoding
    // of the same transaction without witnesses.
    let stripped = owned.encode_without_witness();
    assert_eq!(stripped.len(), view.base_size(), "{context}: base size");
    assert_eq!(view.base_parts().concat(), stripped, "{context}: base parts");
    assert_eq!(view.txid().0, sha256d(&stripped), "{context}: txid hashes the stripped bytes");
    if !owned.inputs.is_empty() {
        let reparsed = Transaction::decode(&stripped).unwrap();
        let mut without_witness = owned.clone();
        without_witness.inputs.iter_mut().for_each(|input| input.witness.clear());
        assert_eq!(reparsed, without_witness, "{context}: stripped form decodes");
        assert_eq!(reparsed.txid(), view.txid(), "{context}");
    }
    owned
}

fn check_transaction_vectors(name: &str, expected_count: usize) {
    let vectors = transaction_vectors(name);
    // Core v30.0's files; a smaller count would mean entries were lost on the way.
    assert_eq!(vectors.len(), expected_count, "{name}: transaction entries");
    let mut witness_count = 0;
    for vector in &vectors {
        let context = format!("{name} entry {}", vector.index);
        let parsed = ParsedTransaction::parse(&vector.bytes)
            .unwrap_or_else(|error| panic!("{context}: {error}"));
        let view = parsed.view();
        let owned = check_round_trip(&view, &vector.bytes, &context);
        witness_count += usize::from(owned.has_witness());
        for (input_index, input) in view.inputs().iter().enumerate() {
            assert!(
                vector.prevouts.contains(&input.previous_output()),
                "{context}: input {input_index} spends {:?}, not a listed prevout",
                input.previous_output()
            );
        }
    }
    assert!(witness_count > 0, "{name}: segwit transactions are covered");
}

#[test]
fn tx_valid_vectors_decode_and_round_trip() {
    check_transaction_vectors("tx_valid.json", 120);
}

#[test]
fn tx_invalid_vectors_decode_and_round_trip() {
    // Every tx_invalid entry is invalid by script or CheckTransaction rules, not
    // by encoding: Core's test deserialises all of them before checking.
    check_transaction_vectors("tx_invalid.json", 93);
}

#[test]
fn tx_invalid_odd_encodings_decode_as_core_does() {
    // "No outputs": a legacy transaction with one input and an empty output list.
    // It decodes (the empty list is only a CheckTransaction failure,
    // bad-txns-vout-empty), and it must not be mistaken for a segwit marker,
    // which only an empty *input* list can be.
    let vectors = transaction_vectors("tx_invalid.json");
    let no_outputs: Vec<_> = vectors
        .iter()
        .filter_map(|vector| {
            let parsed = ParsedTransaction::parse(&vector.bytes).unwrap();
            let view = parsed.view();
            view.outputs().is_empty().then(|| (view.inputs().len(), view.has_witness()))
        })
        .collect();
    assert_eq!(no_outputs, vec![(1, false)]);

    // "Duplicate inputs" (bad-txns-inputs-duplicate) also decodes: two inputs
    // spending one outpoint.
    let duplicate = vectors.iter().any(|vector| {
        let parsed = ParsedTransaction::parse(&vector.bytes).unwrap();
        let outpoints: Vec<_> =
            parsed.view().inputs().iter().map(|input| input.previous_output()).collect();
        let mut unique = outpoints.clone();
        unique.sort();
        unique.dedup();
        unique.len() < outpoints.len()
    });
    assert!(duplicate);
}

/// One testnet3 block from `blockfilters.json`.
struct FilterBlock {
    height: u64,
    hash: String,
    bytes: Vec<u8>,
    spent_script_count: usize,
}

fn filter_blocks() -> Vec<FilterBlock> {
    let entries = core_vectors("blockfilters.json");
    // The first entry is the column header.
    assert!(entries[0].as_array().unwrap()[0].as_str().unwrap().starts_with("Block Height"));
    entries[1..]
        .iter()
        .map(|entry| {
            let entry = entry.as_array().unwrap();
            FilterBlock {
                height: entry[0].as_u64().unwrap(),
                hash: entry[1].as_str().unwrap().to_owned(),
                bytes: hex::decode(entry[2].as_str().unwrap()).unwrap(),
                spent_script_count: entry[3].as_array().unwrap().len(),
            }
        })
        .collect()
}

#[test]
fn blockfilter_testnet_blocks_parse_hash_and_round_trip() {
    let blocks = filter_blocks();
    assert_eq!(blocks.len(), 10);
    let mut witness_heights = Vec::new();
    for expected in &blocks {
        let context = format!("testnet block {}", expected.height);
        let block =
            BlockView::parse(&expected.bytes).unwrap_or_else(|error| panic!("{context}: {error}"));
        assert_eq!(block.block_hash().to_hex(), expected.hash, "{context}");
        assert_eq!(block.size(), expected.bytes.len(), "{context}");

        let merkle = block.compute_merkle_root();
        assert_eq!(merkle.root, block.header().merkle_root, "{context}: merkle root");
        assert!(!merkle.mutated, "{context}");
        if expected.height >= TESTNET_SEGWIT_HEIGHT {
            assert_eq!(check_witness_commitment(&block), Ok(()), "{context}");
        }
        if block.has_witness() {
            witness_heights.push(expected.height);
        }

        // The filter vector lists one spent script per non-coinbase input.
        let spending_inputs: usize =
            block.transactions().skip(1).map(|transaction| transaction.inputs().len()).sum();
        assert_eq!(spending_inputs, expected.spent_script_count, "{context}");
        assert!(block.transaction(0).unwrap().is_coinbase(), "{context}");

        let owned = block.to_owned();
        assert_eq!(owned.encode(), expected.bytes, "{context}: re-encodes byte for byte");
        assert_eq!(Block::decode(&expected.bytes).as_ref(), Ok(&owned), "{context}");
        assert_eq!(owned.block_hash(), block.block_hash(), "{context}");
        assert_eq!(owned.compute_merkle_root(), merkle, "{context}");
        assert_eq!(owned.size(), block.size(), "{context}");
        assert_eq!(owned.stripped_size(), block.stripped_size(), "{context}");
        assert_eq!(owned.weight(), block.weight(), "{context}");
        for (index, view) in block.transactions().enumerate() {
            let transaction_context = format!("{context} transaction {index}");
            check_round_trip(&view, view.bytes(), &transaction_context);
            assert_eq!(view.to_owned(), owned.transactions[index], "{transaction_context}");
        }
    }
    // Only blocks after segwit's activation carry witnesses, and the one the
    // vector notes as "Includes witness data" is among them.
    assert!(witness_heights.iter().all(|&height| height >= TESTNET_SEGWIT_HEIGHT));
    assert!(witness_heights.contains(&1_263_442), "{witness_heights:?}");
}
