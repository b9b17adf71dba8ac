//! Prevout prefetch: reading a block's 6,000 spent coins from a 1-million-coin
//! database one `get` at a time, with one `MultiGet`, and with parallel
//! `MultiGet` chunks; and the cache's whole `prefetch` (read + insert).
//!
//! Run: `cargo bench -p ibex-chainstate --bench prefetch`

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ibex_chainstate::{Coin, CoinsCache, CoinsDatabase, DatabaseOptions, FlushMode};
use ibex_primitives::hash::sha256;
use ibex_primitives::{Amount, BlockHash, OutPoint, Txid};

const DATABASE_COINS: u32 = 1_000_000;
const BLOCK_INPUTS: u32 = 6_000;
const OUTPUTS_PER_TRANSACTION: u32 = 2;

fn outpoint(index: u32) -> OutPoint {
    let txid = Txid(sha256(&(index / OUTPUTS_PER_TRANSACTION).to_le_bytes()));
    OutPoint { txid, vout: index % OUTPUTS_PER_TRANSACTION }
}

fn coin(index: u32) -> Coin {
    let script = [&[0x00, 0x14][..], &sha256(&index.to_be_bytes())[..20]].concat();
    Coin::new(
        Amount::from_sat(i64::from(index) * 1_000 + 546).unwrap(),
        script,
        500_000 + index / 3_000,
        false,
    )
    .unwrap()
}

fn build_database(path: &std::path::Path) -> Arc<CoinsDatabase> {
    let database = Arc::new(CoinsDatabase::open(path, &DatabaseOptions::default()).unwrap());
    let mut cache = CoinsCache::new(database.clone(), usize::MAX);
    for index in 0..DATABASE_COINS {
        cache.add(&outpoint(index), coin(index), false).unwrap();
    }
    cache.flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
    database.persist_memtables().unwrap();
    database
}

/// A block's inputs: coins spread over the whole database.
fn block_outpoints(seed: u32) -> Vec<OutPoint> {
    (0..BLOCK_INPUTS)
        .map(|input| {
            let mixed = u32::from_le_bytes(
                sha256(&[seed.to_le_bytes(), input.to_le_bytes()].concat())[..4]
                    .try_into()
                    .unwrap(),
            );
            outpoint(mixed % DATABASE_COINS)
        })
        .collect()
}

fn prefetch(criterion: &mut Criterion) {
    let path = std::env::temp_dir().join(format!("ibex-prefetch-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    let database = build_database(&path);
    let blocks: Vec<Vec<OutPoint>> = (0..32).map(block_outpoints).collect();
    let mut next_block = 0usize;
    let mut pick = move || {
        next_block = (next_block + 1) % 32;
        next_block
    };

    let mut group = criterion.benchmark_group("prefetch_6000_inputs");
    group.throughput(Throughput::Elements(u64::from(BLOCK_INPUTS)));
    group.sample_size(20);
    group.bench_function("sequential_get", |bencher| {
        bencher.iter(|| {
            let block = &blocks[pick()];
            block.iter().filter(|outpoint| database.coin(outpoint).unwrap().is_some()).count()
        })
    });
    group.bench_function("multi_get", |bencher| {
        bencher.iter(|| database.coins(&blocks[pick()]).unwrap().len())
    });
    group.bench_function("parallel_multi_get", |bencher| {
        bencher.iter(|| database.coins_parallel(&blocks[pick()]).unwrap().len())
    });
    group.bench_function("cache_fetch_one_by_one", |bencher| {
        bencher.iter_batched(
            || CoinsCache::new(database.clone(), usize::MAX),
            |mut cache| {
                let block = &blocks[pick()];
                block.iter().filter(|outpoint| cache.fetch(outpoint).unwrap().is_some()).count()
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("cache_prefetch", |bencher| {
        bencher.iter_batched(
            || CoinsCache::new(database.clone(), usize::MAX),
            |mut cache| cache.prefetch(&blocks[pick()]).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
    drop(database);
    let _ = std::fs::remove_dir_all(&path);
}

/// Hashing one outpoint: the cache's keyed foldhash against std's SipHash-1-3.
fn outpoint_hash(criterion: &mut Criterion) {
    use std::hash::BuildHasher;
    let outpoints: Vec<OutPoint> = (0..1_024).map(outpoint).collect();
    let foldhash = ibex_chainstate::salted_hash_builder();
    let siphash = std::collections::hash_map::RandomState::new();
    let mut group = criterion.benchmark_group("hash_1024_outpoints");
    group.throughput(Throughput::Elements(1_024));
    group.bench_function("salted_foldhash", |bencher| {
        bencher
            .iter(|| outpoints.iter().fold(0u64, |sum, outpoint| sum ^ foldhash.hash_one(outpoint)))
    });
    group.bench_function("std_siphash_1_3", |bencher| {
        bencher
            .iter(|| outpoints.iter().fold(0u64, |sum, outpoint| sum ^ siphash.hash_one(outpoint)))
    });
    group.finish();
}

criterion_group!(benches, outpoint_hash, prefetch);
criterion_main!(benches);
