//! Block-file obfuscation and the write path, against Core's anchors
//! (`../shared/anchors.md`: XOR 0.04 ns/byte; WriteBlockBench 1.64-2.05 ms for
//! block 413567: serialise, frame, obfuscate and write).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ibex_blockstore::{BlockFileWriter, Obfuscation, BLOCK_FILE_BYTES_MAX};
use ibex_primitives::Block;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const REGTEST_MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
const KEY: [u8; 8] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x58, 0x97, 0x93];

fn block_413567() -> Vec<u8> {
    let path = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/vectors/blocks/mainnet-413567.raw");
    std::fs::read(path).unwrap()
}

fn obfuscation(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("obfuscation");
    let mut data = vec![0xa5u8; 1 << 20];
    group.throughput(Throughput::Bytes(data.len() as u64));
    let key = Obfuscation::new(KEY);
    group.bench_function("xor_1MiB_unaligned", |bencher| bencher.iter(|| key.apply(&mut data, 3)));
    group.finish();
}

fn write_block(criterion: &mut Criterion) {
    let bytes = block_413567();
    let block = Block::decode(&bytes).unwrap();
    let mut group = criterion.benchmark_group("write_block_413567");
    group.sample_size(20);
    // Serialise the owned block, frame, obfuscate and append it to a blk file
    // in the page cache (no fsync), as Core's WriteBlockBench does.
    group.bench_function("encode_frame_xor_append", |bencher| {
        bencher.iter_custom(|iterations| {
            let directory = tempfile::tempdir().unwrap();
            let mut writer = BlockFileWriter::new(
                directory.path(),
                REGTEST_MAGIC,
                Obfuscation::new(KEY),
                BLOCK_FILE_BYTES_MAX,
                0,
            )
            .unwrap();
            let mut elapsed = Duration::ZERO;
            for _ in 0..iterations {
                let start = Instant::now();
                let encoded = block.encode();
                writer.append(&encoded).unwrap();
                elapsed += start.elapsed();
            }
            elapsed
        })
    });
    group.bench_function("encode_only", |bencher| {
        bencher.iter_batched(|| (), |()| block.encode(), BatchSize::SmallInput)
    });
    group.finish();
}

criterion_group!(benches, obfuscation, write_block);
criterion_main!(benches);
