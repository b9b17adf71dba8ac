//! `getblock` JSON for mainnet block 413,567 (the block Core's own
//! `BlockToJsonVerbosity*` benchmarks use), set against Core's figures in
//! `../shared/anchors.md` (verbosity 2: 44-61 ms; verbosity 3: 49-64 ms).
//!
//! - `verbosity_1`: header fields, sizes and txids.
//! - `verbosity_2`: every transaction decoded, with fees.
//! - `verbosity_3`: as 2, with every input's spent coin (`prevout`).
//! - `parse_and_txids`: the parse and txid hashing inside each of those.
//! - `header`: `getblockheader`'s verbose JSON.
//!
//! The block's undo data is not in `../shared`, so its spent coins are
//! synthesised: each input spends a P2PKH output (20 bytes of its
//! outpoint's txid as the key hash, so Base58 work is realistic) created by
//! a non-coinbase transaction at height 413,000, the values split so every
//! transaction's inputs exceed its outputs by 1,000 satoshis (a valid fee).
//! Each iteration parses the block (the zero-copy `BlockView` walk, about
//! 0.1 ms) and writes the JSON into a buffer reused between iterations, as
//! a server writing into its response buffer would.
//!
//! Run: `cargo bench -p ibex-rpc --bench block_json -- --warm-up-time 1 --measurement-time 5`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ibex_primitives::{Amount, BlockView, ChainWork, Height, Network, SpentCoin};
use ibex_rpc::{write_block_json, write_header_json, BlockContext, BlockVerbosity};
use std::path::PathBuf;

fn mainnet_block() -> Vec<u8> {
    let path = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/vectors/blocks/mainnet-413567.raw");
    std::fs::read(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// One P2PKH script per input of every transaction after the coinbase.
fn synthetic_scripts(block: &BlockView<'_>) -> Vec<[u8; 25]> {
    block
        .transactions()
        .skip(1)
        .flat_map(|transaction| transaction.inputs().iter())
        .map(|input| {
            let mut script = [0u8; 25];
            script[..3].copy_from_slice(&[0x76, 0xa9, 0x14]);
            script[3..23].copy_from_slice(&input.previous_output().txid.0[..20]);
            script[23..].copy_from_slice(&[0x88, 0xac]);
            script
        })
        .collect()
}

fn synthetic_coins<'a>(block: &BlockView<'_>, scripts: &'a [[u8; 25]]) -> Vec<SpentCoin<'a>> {
    let mut coins = Vec::with_capacity(scripts.len());
    for transaction in block.transactions().skip(1) {
        let outputs: i64 = transaction.outputs().iter().map(|output| output.value).sum();
        let inputs = transaction.inputs().len() as i64;
        let share = (outputs + 1_000) / inputs;
        for index in 0..inputs {
            let extra = if index == 0 { (outputs + 1_000) - share * inputs } else { 0 };
            coins.push(SpentCoin {
                value: Amount::from_sat(share + extra).unwrap(),
                script_pubkey: &scripts[coins.len()],
                height: Height::new(413_000),
                is_coinbase: false,
            });
        }
    }
    coins
}

fn block_json(criterion: &mut Criterion) {
    let bytes = mainnet_block();
    let block = BlockView::parse(&bytes).unwrap();
    let scripts = synthetic_scripts(&block);
    let coins = synthetic_coins(&block, &scripts);
    let context = BlockContext {
        height: 413_567,
        confirmations: 1,
        median_time_seconds: i64::from(block.header().time) - 3_600,
        chain_work: ChainWork::ZERO,
        next_block_hash: None,
        transaction_count: block.transaction_count() as u64,
    };
    let mut group = criterion.benchmark_group("block_json_413567");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    let mut out = Vec::new();
    for verbosity in [
        BlockVerbosity::TransactionIds,
        BlockVerbosity::Transactions,
        BlockVerbosity::TransactionsWithPrevouts,
    ] {
        out.clear();
        write_block_json(&mut out, &block, &context, verbosity, Some(&coins), Network::Main)
            .unwrap();
        eprintln!("verbosity {}: {} bytes of JSON", verbosity.number(), out.len());
        group.bench_function(format!("verbosity_{}", verbosity.number()), |bencher| {
            bencher.iter(|| {
                out.clear();
                let parsed = BlockView::parse(black_box(&bytes)).unwrap();
                write_block_json(
                    &mut out,
                    &parsed,
                    &context,
                    verbosity,
                    Some(&coins),
                    Network::Main,
                )
                .unwrap();
                black_box(out.len())
            })
        });
    }
    // What Core's `BlockToJsonVerbosity1` leaves out: its block arrives
    // decoded with every txid already hashed (`DeserializeBlockTest`'s
    // work), so verbosity 1 like-for-like is Ibex's total against Core's
    // decode plus its JSON, and the writer alone is Ibex's total minus this.
    let mut txids = Vec::new();
    group.bench_function("parse_and_txids", |bencher| {
        bencher.iter(|| {
            txids.clear();
            BlockView::parse(black_box(&bytes)).unwrap().txids_into(&mut txids);
            black_box(txids.len())
        })
    });
    // `getblockheader`'s verbose answer (Core's `blockheaderToJSON`).
    let header = block.header();
    group.throughput(Throughput::Elements(1));
    group.bench_function("header", |bencher| {
        bencher.iter(|| {
            out.clear();
            write_header_json(&mut out, black_box(header), &context);
            black_box(out.len())
        })
    });
    group.finish();
}

criterion_group!(benches, block_json);
criterion_main!(benches);
