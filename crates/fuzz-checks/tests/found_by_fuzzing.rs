//! Bugs found by the fuzz targets or while writing them, each with the
//! typed error the decoder now gives (the inputs themselves are `crash-*`
//! files under `fuzz/regressions/`, replayed by the `regressions` test).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_chainstate::index_store::{build_index, decode_record, encode_entry, SEQUENCE_STORED_MAX};
use ibex_chainstate::{BlockIndexEntry, BlockStatus, ChainstateError};
use ibex_fuzz_checks::rpc::genesis_handler;
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

/// A `getutxos` path whose first byte after `/rest/getutxos` starts a
/// longer UTF-8 character panicked slicing after that byte
/// (`rest_request/crash-getutxos-path-starting-with-multibyte-character`).
/// It is now Core's parse error, as are its neighbours in ASCII.
#[test]
fn a_getutxos_path_starting_inside_a_character_is_a_parse_error() {
    let handler = genesis_handler();
    for uri in
        ["/rest/getutxos\u{e9}/x.bin", "/rest/getutxos\u{2603}.json", "/rest/getutxos\u{e9}.hex"]
    {
        let reply = handler.answer_rest(uri, b"").expect("the getutxos route");
        assert_eq!(reply.status, 400, "{uri}");
        assert_eq!(reply.body, b"Parse error\r\n", "{uri}");
    }
    let reply = handler.answer_rest("/rest/getutxosx/x.bin", b"").expect("the getutxos route");
    assert_eq!((reply.status, reply.body), (400, b"Parse error\r\n".to_vec()));
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../fuzz/regressions/rest_request/crash-getutxos-path-starting-with-multibyte-character",
    );
    let input = std::fs::read(path).expect("the committed input");
    ibex_fuzz_checks::rest::rest_request(&input);
}
