//! What Core's `IsBlockMutated` costs a peer's block, on real mainnet
//! blocks (413567 before segwit, 702861 with it), against the rest of what
//! the node already does to a block it receives:
//!
//! - `check_block`: `CheckBlock` after the proof of work (merkle root,
//!   sizes, every `CheckTransaction`, legacy sigops), with the txids given;
//! - `is_block_mutated`: the whole check (merkle root again, the 64-byte
//!   rule, the witness commitment with segwit active);
//! - `mutation_after_merkle`: what the sync loop runs when `CheckBlock`'s
//!   verdict already vouches for the merkle root: for a segwit block the
//!   witness commitment, which `ContextualCheckBlock` then skips
//!   (`contextual_check_block_known`), so it is moved, not added.
//!
//! Run: `cargo bench -p ibex-consensus --bench mutation -- --warm-up-time 1 --measurement-time 5`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ibex_consensus::{check_block, is_block_mutated, mutation_after_merkle};
use ibex_primitives::BlockView;
use std::path::PathBuf;

const BLOCKS: [&str; 2] = ["413567", "702861"];

fn mainnet_block(height: &str) -> Vec<u8> {
    let path = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/vectors/blocks")
    .join(format!("mainnet-{height}.raw"));
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn mutation(criterion: &mut Criterion) {
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        let block = BlockView::parse(&bytes).unwrap();
        let txids = block.txids();
        let segwit = height == "702861";
        assert!(check_block(&block, &txids).is_ok());
        assert_eq!(is_block_mutated(&block, &txids, segwit), None);
        let mut group = criterion.benchmark_group(format!("block_{height}"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function("check_block", |bencher| {
            bencher.iter(|| black_box(check_block(black_box(&block), &txids)))
        });
        group.bench_function("is_block_mutated", |bencher| {
            bencher.iter(|| black_box(is_block_mutated(black_box(&block), &txids, segwit)))
        });
        group.bench_function("mutation_after_merkle", |bencher| {
            bencher.iter(|| black_box(mutation_after_merkle(black_box(&block), segwit)))
        });
        group.finish();
    }
}

criterion_group!(benches, mutation);
criterion_main!(benches);
