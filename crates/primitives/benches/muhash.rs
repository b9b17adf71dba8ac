//! UTXO-set hashing: MuHash3072 per coin and `hash_serialized_3` throughput.
//!
//! - `muhash/insert_coin`: one [`MuHash3072::insert`] of a serialised P2WPKH coin
//!   (71 bytes: SHA-256, 384 bytes of ChaCha20, one 3072-bit modular multiply),
//!   what every created or spent coin costs a running MuHash.
//! - `muhash/running_add_coin`: [`RunningTxOutSetStats::add_coin`] (serialise,
//!   insert, counters).
//! - `muhash/combine_two_multiplies`: [`MuHash3072::combine`], two 3072-bit
//!   modular multiplies and nothing else.
//! - `muhash/finalize`: one digest (a modular inverse and a multiply).
//! - `txoutset/hash_serialized_3` and `txoutset/muhash`: [`TxOutSetHasher`] over
//!   10,000 coins in database order, as `gettxoutsetinfo` walks them.
//!
//! Run: `cargo bench -p ibex-primitives --bench muhash -- --warm-up-time 1 --measurement-time 5`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ibex_primitives::muhash::MuHash3072;
use ibex_primitives::txoutset::{
    serialize_coin, Coin, RunningTxOutSetStats, TxOutSetHashType, TxOutSetHasher,
};
use ibex_primitives::{Amount, OutPoint, Txid};

const COINS: usize = 10_000;

/// A P2WPKH script: `OP_0 <20 bytes>`.
fn p2wpkh_script(seed: u8) -> Vec<u8> {
    let mut script = vec![0x00, 0x14];
    script.extend_from_slice(&[seed; 20]);
    script
}

/// Coins sorted by outpoint, two outputs per transaction.
fn coin_outpoints() -> Vec<OutPoint> {
    let mut outpoints: Vec<OutPoint> = (0..COINS)
        .map(|index| {
            let mut txid = [0u8; 32];
            txid[..8].copy_from_slice(
                &((index / 2) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes(),
            );
            OutPoint { txid: Txid(txid), vout: (index % 2) as u32 }
        })
        .collect();
    outpoints.sort();
    outpoints
}

fn coin<'a>(outpoint: OutPoint, script: &'a [u8]) -> Coin<'a> {
    Coin {
        outpoint,
        height: ibex_primitives::Height::new(800_000),
        is_coinbase: false,
        value: Amount::from_sat(123_456).unwrap(),
        script_pubkey: script,
    }
}

fn per_coin(criterion: &mut Criterion) {
    let script = p2wpkh_script(7);
    let outpoints = coin_outpoints();
    let mut bytes = Vec::new();
    serialize_coin(&coin(outpoints[0], &script), &mut bytes);
    let mut group = criterion.benchmark_group("muhash");
    group.throughput(Throughput::Elements(1));
    let mut set = MuHash3072::new();
    group.bench_function("insert_coin", |bencher| {
        bencher.iter(|| set.insert(black_box(&bytes)));
    });
    let mut running = RunningTxOutSetStats::new();
    let mut next = 0;
    group.bench_function("running_add_coin", |bencher| {
        bencher.iter(|| {
            next = (next + 1) % COINS;
            running.add_coin(black_box(&coin(outpoints[next], &script)));
        });
    });
    let other = MuHash3072::singleton(&[1, 2, 3]);
    group.bench_function("combine_two_multiplies", |bencher| {
        bencher.iter(|| set.combine(black_box(&other)));
    });
    // A removal makes the denominator a full-size number, as in any real set.
    set.remove(&bytes);
    set.insert(&[1, 2, 3]);
    group.bench_function("finalize", |bencher| {
        bencher.iter(|| black_box(set.finalize()));
    });
    group.finish();
}

fn whole_set(criterion: &mut Criterion) {
    let script = p2wpkh_script(9);
    let outpoints = coin_outpoints();
    let mut serialized = Vec::new();
    for outpoint in &outpoints {
        serialize_coin(&coin(*outpoint, &script), &mut serialized);
    }
    let mut group = criterion.benchmark_group("txoutset");
    group.throughput(Throughput::Bytes(serialized.len() as u64));
    for (name, hash_type) in [
        ("hash_serialized_3", TxOutSetHashType::HashSerialized3),
        ("muhash", TxOutSetHashType::MuHash),
    ] {
        group.bench_function(name, |bencher| {
            bencher.iter(|| {
                let mut hasher = TxOutSetHasher::new(hash_type);
                for outpoint in &outpoints {
                    hasher.add_coin(&coin(*outpoint, &script)).unwrap();
                }
                black_box(hasher.finish())
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = per_coin, whole_set
}
criterion_main!(benches);
