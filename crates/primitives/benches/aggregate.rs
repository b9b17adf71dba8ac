//! SwiftSync's salted aggregate of outpoints: one SHA-256 compression an
//! outpoint after the salt's, added to a 256-bit sum.
//!
//! - `aggregate/one_at_a_time`: [`OutpointAggregate::add`] of 10,000
//!   outpoints, each hashed alone.
//! - `aggregate/two_at_a_time`: the same outpoints through
//!   [`PairedAggregate`], hashed two at a time on SHA-NI.
//!
//! Run: `cargo bench -p ibex-primitives --bench aggregate -- --warm-up-time 1 --measurement-time 5`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ibex_primitives::hints::{
    OutpointAggregate, OutpointHasher, PairedAggregate, AGGREGATE_SALT_BYTES,
};
use ibex_primitives::transaction::OutPoint;
use ibex_primitives::Txid;

fn outpoints() -> Vec<OutPoint> {
    (0..10_000u32)
        .map(|index| OutPoint {
            txid: Txid(ibex_primitives::hash::sha256(&index.to_le_bytes())),
            vout: index % 7,
        })
        .collect()
}

fn aggregate(criterion: &mut Criterion) {
    let hasher = OutpointHasher::new(&[0x5a; AGGREGATE_SALT_BYTES]);
    let outpoints = outpoints();
    let mut plain = OutpointAggregate::ZERO;
    let mut paired = PairedAggregate::default();
    for outpoint in &outpoints {
        plain.add(&hasher, outpoint);
        paired.add(&hasher, outpoint);
    }
    assert_eq!(paired.finish(&hasher), plain);
    let mut group = criterion.benchmark_group("aggregate");
    group.throughput(Throughput::Elements(outpoints.len() as u64));
    group.bench_function("one_at_a_time", |bencher| {
        bencher.iter(|| {
            let mut sum = OutpointAggregate::ZERO;
            for outpoint in black_box(&outpoints) {
                sum.add(&hasher, outpoint);
            }
            black_box(sum)
        })
    });
    group.bench_function("two_at_a_time", |bencher| {
        bencher.iter(|| {
            let mut sum = PairedAggregate::default();
            for outpoint in black_box(&outpoints) {
                sum.add(&hasher, outpoint);
            }
            black_box(sum.finish(&hasher))
        })
    });
    group.finish();
}

criterion_group!(benches, aggregate);
criterion_main!(benches);
