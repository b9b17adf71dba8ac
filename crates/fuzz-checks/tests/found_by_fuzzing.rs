//! Bugs found by the fuzz targets or while writing them, each with the
//! typed error the decoder now gives (the inputs themselves are `crash-*`
//! files under `fuzz/regressions/`, replayed by the `regressions` test).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_chainstate::index::store::{
    build_index, decode_record, encode_entry, SEQUENCE_STORED_MAX,
};
use ibex_chainstate::{BlockIndexEntry, BlockStatus, ChainstateError};
use ibex_primitives::{ChainWork, Params};

fn genesis_record(sequence: u64) -> (Vec<u8>, Vec<u8>) {
    let params = Params::regtest();
    let entry = BlockIndexEntry {
        hash: params.genesis_hash,
        header: params.genesis.header,
        height: 0,
        chain_work: ChainWork::ZERO,
        parent: None,
        status: BlockStatus::new_header(None),
        transaction_count: 0,
        chain_transaction_count: 0,
        block_position: None,
        undo_position: None,
        sequence,
    };
    ([&[b'b'][..], &params.genesis_hash.0].concat(), encode_entry(&entry))
}

/// A block index record whose sequence was `u64::MAX` made the load
/// overflow numbering the next block (`block_index_records/crash-sequence-u64-max`):
/// a panic with overflow checks, a sequence that wrapped to 0 without.
/// Such a record is now corrupt, like any other the node cannot use.
#[test]
fn a_block_index_sequence_without_successor_is_a_corrupt_record() {
    let (key, value) = genesis_record(u64::MAX);
    let hash = Params::regtest().genesis_hash;
    assert!(matches!(
        decode_record(&key, &value),
        Err(ChainstateError::CorruptIndexEntry { hash: refused }) if refused == hash
    ));
    let (key, value) = genesis_record(SEQUENCE_STORED_MAX + 1);
    assert!(decode_record(&key, &value).is_err());
    let (key, value) = genesis_record(SEQUENCE_STORED_MAX);
    let stored = decode_record(&key, &value).expect("the largest stored sequence reads");
    let mut index = build_index(vec![stored]).expect("a genesis-only index");
    assert_eq!(index.next_sequence(), SEQUENCE_STORED_MAX + 1);
    assert_eq!(index.next_sequence(), SEQUENCE_STORED_MAX + 2);
}
