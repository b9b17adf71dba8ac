//! Reads the blocks directory Bitcoin Core 30 wrote for the shared regtest chain
//! (obfuscated with its `xor.dat`), and writes the same blocks back byte for byte.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_blockstore::{
    block_file_path, read_block_file, read_obfuscation_key, BlockFileWriter, Records,
    BLOCK_FILE_BYTES_MAX,
};
use ibex_primitives::BlockView;
use std::path::PathBuf;

const REGTEST_MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
const CORE_TIP: &str = "7720e38fed81718c530b96cb43e3e85b0fb52636e94b768340af9f80ec047b87";

fn core_blocks_directory() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix/blocks")
}

#[test]
fn core_block_file_decodes_and_rewrites_identically() {
    let directory = core_blocks_directory();
    let obfuscation = read_obfuscation_key(&directory).unwrap();
    assert!(!obfuscation.is_identity(), "Core 30 writes a random key");
    let image = read_block_file(&block_file_path(&directory, 0), &obfuscation).unwrap();
    let records: Vec<_> = Records::new(&image, REGTEST_MAGIC).collect();
    // Genesis, the active chain and every block of the stale branches Core lists.
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(directory.join("../expected.json")).unwrap())
            .unwrap();
    let height = expected["getblockchaininfo"]["blocks"].as_u64().unwrap();
    let tips = expected["getchaintips"].as_array().unwrap();
    let stale_blocks: u64 = tips.iter().map(|tip| tip["branchlen"].as_u64().unwrap()).sum();
    assert_eq!(records.len() as u64, 1 + height + stale_blocks);
    let mut found_tip = false;
    for record in &records {
        let block = BlockView::parse(record.bytes).unwrap();
        let merkle = block.compute_merkle_root();
        assert_eq!(merkle.root, block.header().merkle_root);
        assert!(!merkle.mutated);
        assert_eq!(ibex_primitives::check_witness_commitment(&block), Ok(()));
        found_tip |= block.block_hash().to_hex() == CORE_TIP;
    }
    assert!(found_tip);

    // Writing the same blocks with the same key reproduces Core's file.
    let output = tempfile::tempdir().unwrap();
    let mut writer =
        BlockFileWriter::new(output.path(), REGTEST_MAGIC, obfuscation, BLOCK_FILE_BYTES_MAX, 0)
            .unwrap();
    for record in &records {
        let position = writer.append(record.bytes).unwrap();
        assert_eq!(position.data_offset, record.data_offset);
    }
    writer.sync().unwrap();
    let ours = std::fs::read(block_file_path(output.path(), 0)).unwrap();
    let core = std::fs::read(block_file_path(&directory, 0)).unwrap();
    assert_eq!(&core[..ours.len()], &ours[..]);
}

#[test]
fn writer_starts_a_new_file_at_the_size_limit() {
    let output = tempfile::tempdir().unwrap();
    let key = ibex_blockstore::Obfuscation::new([9, 8, 7, 6, 5, 4, 3, 2]);
    let mut writer = BlockFileWriter::new(output.path(), REGTEST_MAGIC, key, 1000, 0).unwrap();
    let block = vec![0x55u8; 400];
    let positions: Vec<_> = (0..5).map(|_| writer.append(&block).unwrap()).collect();
    writer.sync().unwrap();
    assert_eq!(positions.iter().map(|p| p.file_number).collect::<Vec<_>>(), [0, 0, 1, 1, 2]);
    for number in 0..3 {
        let image = read_block_file(&block_file_path(output.path(), number), &key).unwrap();
        assert!(Records::new(&image, REGTEST_MAGIC).all(|record| record.bytes == &block[..]));
    }
    // A record over the file limit (Core's `-fastprune` limits) gets an
    // empty file of its own, as Core raises the limit for it; one over
    // the largest file a block file may be is refused.
    let large = writer.append(&vec![0u8; 1000]).unwrap();
    assert_eq!((large.file_number, large.data_offset), (3, 8));
    assert_eq!(writer.append(&block).unwrap().file_number, 4);
    let too_large = vec![0u8; ibex_blockstore::BLOCK_FILE_BYTES_MAX as usize];
    assert!(writer.append(&too_large).is_err(), "a record over 128 MiB is refused");
}

#[test]
fn writer_continues_after_files_already_in_the_directory() {
    let output = tempfile::tempdir().unwrap();
    let key = ibex_blockstore::Obfuscation::new([1, 3, 5, 7, 9, 11, 13, 15]);
    let block = vec![0x42u8; 400];
    // A first run fills blk00000 and starts blk00001.
    let mut first = BlockFileWriter::new(output.path(), REGTEST_MAGIC, key, 1000, 0).unwrap();
    let written: Vec<_> = (0..3).map(|_| first.append(&block).unwrap()).collect();
    first.sync().unwrap();
    assert_eq!(written[2].file_number, 1);
    drop(first);

    // A second writer pointed at file 0 skips the full file and appends to
    // blk00001 after its existing record.
    let mut second = BlockFileWriter::new(output.path(), REGTEST_MAGIC, key, 1000, 0).unwrap();
    assert_eq!(second.file_bytes(), 816);
    let position = second.append(&block).unwrap();
    second.sync().unwrap();
    assert_eq!(position, ibex_blockstore::BlockPosition { file_number: 1, data_offset: 416 });
    assert_eq!((second.file_number(), second.file_bytes()), (1, 816));
    let directory = output.path();
    for position in written.iter().chain([&position]) {
        let read = ibex_blockstore::read_block(directory, *position, REGTEST_MAGIC, &key).unwrap();
        assert_eq!(read, block);
    }
}
