//! Core's CheckBlock on real blocks: the mainnet blocks pass, and each way of
//! breaking one gives Core's reject reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_consensus::{check_block, BlockError};
use ibex_primitives::{Block, BlockView};
use std::path::PathBuf;

fn shared_block(name: &str) -> Vec<u8> {
    let path = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/vectors/blocks")
    .join(name);
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn reason(bytes: &[u8]) -> Result<usize, String> {
    let block = BlockView::parse(bytes).unwrap();
    let txids = block.txids();
    check_block(&block, &txids)
        .map(|()| txids.len())
        .map_err(|error| error.reject_reason().into_owned())
}

#[test]
fn mainnet_blocks_pass() {
    assert_eq!(reason(&shared_block("mainnet-413567.raw")), Ok(1557));
    assert_eq!(reason(&shared_block("mainnet-702861.raw")), Ok(2500));
}

#[test]
fn broken_blocks_give_core_reasons() {
    let original = Block::decode(&shared_block("mainnet-413567.raw")).unwrap();

    // CVE-2012-2459: append a copy of the last transaction when the count is odd
    // so the merkle root stays the same; Core calls it a duplicate, not a bad root.
    let mut duplicated = original.clone();
    assert_eq!(duplicated.transactions.len() % 2, 1);
    let last = duplicated.transactions.last().unwrap().clone();
    duplicated.transactions.push(last);
    assert_eq!(duplicated.compute_merkle_root().root, original.header.merkle_root);
    assert_eq!(reason(&duplicated.encode()), Err("bad-txns-duplicate".into()));

    let mut swapped = original.clone();
    swapped.transactions.swap(1, 2);
    assert_eq!(reason(&swapped.encode()), Err("bad-txnmrklroot".into()));

    let mut no_coinbase = original.clone();
    no_coinbase.transactions.remove(0);
    no_coinbase.header.merkle_root = no_coinbase.compute_merkle_root().root;
    assert_eq!(reason(&no_coinbase.encode()), Err("bad-cb-missing".into()));

    let mut two_coinbases = original.clone();
    let mut coinbase = two_coinbases.transactions[0].clone();
    coinbase.outputs[0].value -= 1; // not a merkle sibling duplicate of the first
    two_coinbases.transactions[1] = coinbase; // replace, so the block stays under the size limit
    two_coinbases.header.merkle_root = two_coinbases.compute_merkle_root().root;
    assert_eq!(reason(&two_coinbases.encode()), Err("bad-cb-multiple".into()));

    let mut negative = original.clone();
    negative.transactions[5].outputs[0].value = -1;
    negative.header.merkle_root = negative.compute_merkle_root().root;
    assert_eq!(reason(&negative.encode()), Err("bad-txns-vout-negative".into()));

    // 20,001 OP_CHECKSIGs count 80,004 sigop cost: one over the limit.
    let mut sigops = original.clone();
    sigops.transactions.truncate(3); // room under the size limit for the big script
    sigops.transactions[1].outputs[0].script_pubkey = vec![0xac; 20_001];
    sigops.header.merkle_root = sigops.compute_merkle_root().root;
    let expected_cost = {
        let block_bytes = sigops.encode();
        let view = BlockView::parse(&block_bytes).unwrap();
        match check_block(&view, &view.txids()) {
            Err(BlockError::Sigops { cost }) => cost,
            other => panic!("{other:?}"),
        }
    };
    assert!(expected_cost > 80_000);

    let mut empty = original;
    empty.transactions.clear();
    empty.header.merkle_root = ibex_primitives::Hash256::ZERO;
    assert_eq!(reason(&empty.encode()), Err("bad-blk-length".into()));
}
