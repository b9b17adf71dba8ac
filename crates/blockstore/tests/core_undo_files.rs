//! Reads the `rev00000.dat` Bitcoin Core 30 wrote for the shared regtest chain:
//! every record's checksum matches a block's previous-block hash, `read_undo`
//! finds each payload, and rewriting Core's payloads reproduces its file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ibex_blockstore::{
    block_file_path, read_block, read_block_file, read_obfuscation_key, read_undo, undo_checksum,
    undo_file_path, BlockPosition, BlockStoreError, Records, UndoFileWriter, UndoRecords,
};
use ibex_primitives::{BlockHash, BlockView};
use std::collections::HashSet;
use std::path::PathBuf;

const REGTEST_MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

fn core_blocks_directory() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix/blocks")
}

/// The previous-block hash of every block in `blk00000.dat`.
fn previous_block_hashes() -> HashSet<BlockHash> {
    let directory = core_blocks_directory();
    let obfuscation = read_obfuscation_key(&directory).unwrap();
    let image = read_block_file(&block_file_path(&directory, 0), &obfuscation).unwrap();
    Records::new(&image, REGTEST_MAGIC)
        .map(|record| BlockView::parse(record.bytes).unwrap().header().previous_block_hash)
        .collect()
}

#[test]
fn core_undo_records_verify_and_rewrite_identically() {
    let directory = core_blocks_directory();
    let obfuscation = read_obfuscation_key(&directory).unwrap();
    let image = read_block_file(&undo_file_path(&directory, 0), &obfuscation).unwrap();
    let records: Vec<_> = UndoRecords::new(&image, REGTEST_MAGIC).collect();
    assert!(records.len() > 100, "one record per connected block, found {}", records.len());
    let previous_hashes = previous_block_hashes();

    let output = tempfile::tempdir().unwrap();
    let mut writer = UndoFileWriter::new(output.path(), REGTEST_MAGIC, obfuscation);
    for record in &records {
        let previous = previous_hashes
            .iter()
            .find(|hash| undo_checksum(hash, record.payload) == *record.checksum)
            .expect("checksum over some block's previous hash");
        let position = BlockPosition { file_number: 0, data_offset: record.data_offset };
        assert_eq!(
            read_undo(&directory, position, &obfuscation, previous).unwrap(),
            record.payload
        );
        let wrong = BlockHash([0x5a; 32]);
        assert!(matches!(
            read_undo(&directory, position, &obfuscation, &wrong),
            Err(BlockStoreError::BadUndoChecksum { file_number: 0, data_offset })
                if data_offset == record.data_offset
        ));
        assert_eq!(writer.append(0, previous, record.payload).unwrap(), position);
    }
    writer.sync().unwrap();

    let ours = std::fs::read(undo_file_path(output.path(), 0)).unwrap();
    let core = std::fs::read(undo_file_path(&directory, 0)).unwrap();
    assert_eq!(&core[..ours.len()], &ours[..]);
    // Past the records Core's file is its pre-allocated zero tail.
    assert!(core[ours.len()..].iter().all(|byte| *byte == 0));
}

#[test]
fn core_blocks_read_at_their_positions() {
    let directory = core_blocks_directory();
    let obfuscation = read_obfuscation_key(&directory).unwrap();
    let image = read_block_file(&block_file_path(&directory, 0), &obfuscation).unwrap();
    let mut count = 0;
    for record in Records::new(&image, REGTEST_MAGIC) {
        let position = BlockPosition { file_number: 0, data_offset: record.data_offset };
        let block = read_block(&directory, position, REGTEST_MAGIC, &obfuscation).unwrap();
        assert_eq!(block, record.bytes);
        count += 1;
    }
    assert!(count > 100);
    let first = BlockPosition { file_number: 0, data_offset: 8 };
    let mainnet_magic = [0xf9, 0xbe, 0xb4, 0xd9];
    assert!(matches!(
        read_block(&directory, first, mainnet_magic, &obfuscation),
        Err(BlockStoreError::BadMagic { found: REGTEST_MAGIC, .. })
    ));
}
