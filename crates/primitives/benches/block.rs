//! Block decoding and encoding on real mainnet blocks, set against Bitcoin Core's
//! `bench_bitcoin` figures in `../shared/anchors.md` (block 413567 is the block
//! Core's own benchmarks use; 702861 adds segwit).
//!
//! - `parse`: [`BlockView::parse`], the zero-copy walk of every transaction.
//! - `parse_txids_merkle`: parse, every txid, the merkle root (Core's
//!   DeserializeAndCheckBlockTest also runs CheckTransaction and counts sigops).
//! - `encode_owned`: [`Block::encode`] of an owned block plus its `size()` and
//!   `stripped_size()` (Core's WriteBlockBench also writes to a file).
//! - `merkle_root`: the merkle root alone of 2,048 leaves (Core: MerkleRoot).
//! - `transaction_hashes`: every txid, and the witness merkle root, one
//!   transaction at a time (`TransactionView::txid`/`wtxid`) and two at a
//!   time (`BlockView::txids_into`, `witness_merkle_root`).
//! - `to_owned`: decode into owned types, parse included (Core's
//!   DeserializeBlockTest, which builds a `CBlock`).
//! - `to_owned_hashed`: `to_owned` plus every txid and wtxid, which Core's
//!   `CTransaction` constructor computes during DeserializeBlockTest.
//!
//! Run: `cargo bench -p ibex-primitives --bench block -- --warm-up-time 1 --measurement-time 5`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ibex_primitives::{Block, BlockView, Wtxid};
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

fn parse(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("parse");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(height, |bencher| {
            bencher.iter(|| {
                let block = BlockView::parse(black_box(&bytes)).unwrap();
                black_box(block.input_count() + block.output_count())
            })
        });
    }
    group.finish();
}

/// Parse reusing the view vectors of the previous block, as an import pipeline
/// does: no allocation and no page faults per block.
fn parse_reusing_buffers(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("parse_reusing_buffers");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        let mut buffers = Some(ibex_primitives::BlockBuffers::default());
        group.bench_function(height, |bencher| {
            bencher.iter(|| {
                let block = BlockView::parse_with_buffers(
                    black_box(&bytes),
                    buffers.take().unwrap_or_default(),
                )
                .unwrap();
                let count = block.input_count() + block.output_count();
                buffers = Some(block.into_buffers());
                black_box(count)
            })
        });
    }
    group.finish();
}

/// Parse (reusing buffers), every txid and the merkle root computed in place.
fn parse_txids_merkle_reusing_buffers(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("parse_txids_merkle_reusing_buffers");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        let expected = BlockView::parse(&bytes).unwrap().header().merkle_root;
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        let mut buffers = Some(ibex_primitives::BlockBuffers::default());
        let mut leaves: Vec<[u8; 32]> = Vec::new();
        group.bench_function(height, |bencher| {
            bencher.iter(|| {
                let block = BlockView::parse_with_buffers(
                    black_box(&bytes),
                    buffers.take().unwrap_or_default(),
                )
                .unwrap();
                block.txids_into(&mut leaves);
                let merkle = ibex_primitives::merkle_root(std::mem::take(&mut leaves));
                assert!(merkle.root == expected && !merkle.mutated);
                buffers = Some(block.into_buffers());
                black_box(merkle)
            })
        });
    }
    group.finish();
}

fn parse_txids_merkle(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("parse_txids_merkle");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        let expected = BlockView::parse(&bytes).unwrap().header().merkle_root;
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(height, |bencher| {
            bencher.iter(|| {
                let block = BlockView::parse(black_box(&bytes)).unwrap();
                let txids = block.txids();
                let merkle =
                    ibex_primitives::merkle_root(txids.iter().map(|txid| txid.0).collect());
                assert!(merkle.root == expected && !merkle.mutated);
                black_box(txids)
            })
        });
    }
    group.finish();
}

/// The merkle root alone over 2,048 leaves (Core's MerkleRoot bench uses 9,001;
/// compare per leaf: Core 60.5 ns/leaf on this machine kind).
fn merkle_root_2048_leaves(criterion: &mut Criterion) {
    let leaves: Vec<[u8; 32]> =
        (0..2048u32).map(|index| ibex_primitives::hash::sha256(&index.to_le_bytes())).collect();
    let mut group = criterion.benchmark_group("merkle_root");
    group.throughput(Throughput::Elements(leaves.len() as u64));
    let mut scratch = Vec::with_capacity(leaves.len());
    group.bench_function("2048_leaves", |bencher| {
        bencher.iter(|| {
            scratch.clear();
            scratch.extend_from_slice(black_box(&leaves));
            black_box(ibex_primitives::merkle_root(std::mem::take(&mut scratch)))
        })
    });
    group.finish();
}

/// Every txid and the witness merkle root, one transaction at a time and
/// two at a time on SHA-NI.
fn transaction_hashes(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("transaction_hashes");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        let block = BlockView::parse(&bytes).unwrap();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        let mut txids: Vec<[u8; 32]> = Vec::new();
        block.txids_into(&mut txids);
        let one_at_a_time: Vec<[u8; 32]> =
            block.transactions().map(|transaction| transaction.txid().0).collect();
        assert_eq!(txids, one_at_a_time);
        group.bench_function(format!("{height}/txids_one_at_a_time"), |bencher| {
            bencher.iter(|| {
                txids.clear();
                txids.extend(black_box(&block).transactions().map(|tx| tx.txid().0));
                black_box(txids.len())
            })
        });
        group.bench_function(format!("{height}/txids_two_at_a_time"), |bencher| {
            bencher.iter(|| {
                black_box(&block).txids_into(&mut txids);
                black_box(txids.len())
            })
        });
        let witness_root = |block: &BlockView<'_>| {
            let leaves = block
                .transactions()
                .enumerate()
                .map(|(index, tx)| if index == 0 { [0; 32] } else { tx.wtxid().0 })
                .collect();
            ibex_primitives::merkle_root(leaves).root
        };
        assert_eq!(witness_root(&block), ibex_primitives::merkle::witness_merkle_root(&block));
        group.bench_function(format!("{height}/witness_root_one_at_a_time"), |bencher| {
            bencher.iter(|| black_box(witness_root(black_box(&block))))
        });
        group.bench_function(format!("{height}/witness_root_two_at_a_time"), |bencher| {
            bencher
                .iter(|| black_box(ibex_primitives::merkle::witness_merkle_root(black_box(&block))))
        });
    }
    group.finish();
}

fn encode_owned(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("encode_owned");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        let block = Block::decode(&bytes).unwrap();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(height, |bencher| {
            bencher.iter(|| {
                let block = black_box(&block);
                let encoded = block.encode();
                black_box((block.size(), block.stripped_size()));
                black_box(encoded)
            })
        });
    }
    group.finish();
}

fn to_owned(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("to_owned");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(height, |bencher| {
            bencher.iter(|| black_box(BlockView::parse(black_box(&bytes)).unwrap().to_owned()))
        });
    }
    group.finish();
}

fn to_owned_hashed(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("to_owned_hashed");
    for height in BLOCKS {
        let bytes = mainnet_block(height);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(height, |bencher| {
            bencher.iter(|| {
                let view = BlockView::parse(black_box(&bytes)).unwrap();
                let hashes: Vec<_> = view
                    .transactions()
                    .map(|transaction| {
                        // As Core: a transaction without witness has wtxid = txid.
                        let txid = transaction.txid();
                        let wtxid = match transaction.has_witness() {
                            true => transaction.wtxid(),
                            false => Wtxid(txid.0),
                        };
                        (txid, wtxid)
                    })
                    .collect();
                black_box((view.to_owned(), hashes))
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    parse_reusing_buffers,
    parse_txids_merkle_reusing_buffers,
    parse,
    parse_txids_merkle,
    merkle_root_2048_leaves,
    transaction_hashes,
    encode_owned,
    to_owned,
    to_owned_hashed
);
criterion_main!(benches);
