//! The shared mainnet blocks decode, re-encode byte for byte and give the
//! figures Bitcoin Core reports for them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_primitives::merkle::check_witness_commitment;
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

struct Expected {
    file: &'static str,
    hash: &'static str,
    transactions: usize,
    size: usize,
    stripped_size: usize,
    weight: usize,
    has_witness: bool,
}

const BLOCKS: [Expected; 2] = [
    Expected {
        file: "mainnet-413567.raw",
        hash: "0000000000000000025aff8be8a55df8f89c77296db6198f272d6577325d4069",
        transactions: 1557,
        size: 999_887,
        stripped_size: 999_887,
        weight: 3_999_548,
        has_witness: false,
    },
    Expected {
        file: "mainnet-702861.raw",
        hash: "000000000000000000000c835b2adcaedc20fdf6ee440009c249452c726dafae",
        transactions: 2500,
        size: 1_381_836,
        stripped_size: 870_406,
        weight: 3_993_054,
        has_witness: true,
    },
];

#[test]
fn mainnet_blocks_decode_with_core_figures() {
    for expected in &BLOCKS {
        let bytes = shared_block(expected.file);
        let block = BlockView::parse(&bytes).unwrap();
        assert_eq!(block.block_hash().to_hex(), expected.hash, "{}", expected.file);
        assert_eq!(block.transaction_count(), expected.transactions);
        assert_eq!(block.size(), expected.size);
        assert_eq!(block.stripped_size(), expected.stripped_size, "{}", expected.file);
        assert_eq!(block.weight(), expected.weight, "{}", expected.file);
        assert_eq!(block.has_witness(), expected.has_witness);
        let merkle = block.compute_merkle_root();
        assert_eq!(merkle.root, block.header().merkle_root);
        assert!(!merkle.mutated);
        assert_eq!(check_witness_commitment(&block), Ok(()));

        let owned = block.to_owned();
        assert_eq!(owned.size(), expected.size);
        assert_eq!(owned.stripped_size(), expected.stripped_size);
        assert_eq!(owned.weight(), expected.weight);
        assert_eq!(owned.encode(), bytes, "{} re-encodes byte for byte", expected.file);
        assert_eq!(owned.compute_merkle_root(), merkle);
        assert_eq!(Block::decode(&bytes).unwrap(), owned);
        for (view, transaction) in block.transactions().zip(&owned.transactions) {
            assert_eq!(view.txid(), transaction.txid());
            assert_eq!(view.wtxid(), transaction.wtxid());
            assert_eq!(view.base_size(), transaction.base_size());
            assert_eq!(view.total_size(), transaction.total_size());
        }
    }
}

#[test]
fn witness_commitment_mismatch_is_detected() {
    let mut bytes = shared_block("mainnet-702861.raw");
    let block = BlockView::parse(&bytes).unwrap();
    // Flip a byte inside the witness of the last transaction.
    let last = block.transaction(block.transaction_count() - 1).unwrap();
    assert!(last.has_witness());
    let witness_item = last.inputs()[0].witness.iter().last().unwrap();
    let offset = witness_item.as_ptr() as usize - bytes.as_ptr() as usize;
    drop(block);
    bytes[offset] ^= 1;
    let block = BlockView::parse(&bytes).unwrap();
    assert_eq!(
        block.compute_merkle_root().root,
        block.header().merkle_root,
        "txids skip witnesses"
    );
    assert_eq!(
        check_witness_commitment(&block),
        Err(ibex_primitives::WitnessCommitmentError::MerkleMismatch)
    );
}

#[test]
fn reused_buffers_give_the_same_views() {
    let first = shared_block("mainnet-413567.raw");
    let second = shared_block("mainnet-702861.raw");
    let mut buffers = ibex_primitives::BlockBuffers::default();
    for bytes in [&first, &second, &first] {
        let reused = BlockView::parse_with_buffers(bytes, buffers).unwrap();
        let fresh = BlockView::parse(bytes).unwrap();
        assert_eq!(reused.txids(), fresh.txids());
        assert_eq!(reused.input_count(), fresh.input_count());
        assert_eq!(reused.output_count(), fresh.output_count());
        assert_eq!(reused.weight(), fresh.weight());
        assert_eq!(reused.to_owned(), fresh.to_owned());
        buffers = reused.into_buffers();
    }
}
