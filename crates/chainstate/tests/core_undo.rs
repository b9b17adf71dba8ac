//! Ground truth for undo data: the `rev00000.dat` Bitcoin Core 30 wrote for
//! the shared regtest chain. Every record decodes with [`BlockUndo::decode`],
//! re-encodes byte for byte, belongs to a block of `blk00000.dat` (checksum over
//! its previous-block hash, one transaction undo per non-coinbase transaction,
//! one coin per input) and holds exactly the outputs those inputs spend; the
//! block store reads, verifies and rewrites the file as Core wrote it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::TempDirectory;
use ibex_blockstore::{
    block_file_path, encode_record, read_block, read_block_file, read_obfuscation_key, read_undo,
    undo_checksum, undo_file_path, BlockPosition, BlockStoreError, Obfuscation, Records,
    UndoFileWriter, UndoRecord, UndoRecords,
};
use ibex_chainstate::{BlockUndo, Coin};
use ibex_primitives::{BlockHash, BlockView, OutPoint};

const REGTEST_MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

/// `blocks/` of the shared chain: `../shared` next to the workspace root.
fn core_blocks_directory() -> PathBuf {
    let workspace_root = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../..");
    workspace_root.join("../shared/chains/core-wallet-mix/blocks")
}

/// One output of the chain: what a spent coin must restore.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CreatedOutput {
    amount_sat: i64,
    script_pubkey: Vec<u8>,
    height: u32,
    is_coinbase: bool,
}

/// The block file, its records, and every output each transaction created.
struct CoreChain {
    obfuscation: Obfuscation,
    block_image: Vec<u8>,
    undo_image: Vec<u8>,
    /// Outputs by outpoint; a transaction in both branches of a fork appears twice.
    outputs: HashMap<OutPoint, Vec<CreatedOutput>>,
    /// Height of each block, from the previous-block links.
    heights: HashMap<BlockHash, u32>,
}

impl CoreChain {
    fn load() -> CoreChain {
        let directory = core_blocks_directory();
        let obfuscation = read_obfuscation_key(&directory).unwrap();
        assert!(!obfuscation.is_identity(), "Core 30 writes a random key");
        let block_image = read_block_file(&block_file_path(&directory, 0), &obfuscation).unwrap();
        let undo_image = read_block_file(&undo_file_path(&directory, 0), &obfuscation).unwrap();
        let mut chain = CoreChain {
            obfuscation,
            block_image,
            undo_image,
            outputs: HashMap::new(),
            heights: HashMap::new(),
        };
        chain.index_blocks();
        chain
    }

    fn blocks(&self) -> impl Iterator<Item = (u64, BlockView<'_>)> + '_ {
        Records::new(&self.block_image, REGTEST_MAGIC)
            .map(|record| (record.data_offset, BlockView::parse(record.bytes).unwrap()))
    }

    fn undo_records(&self) -> Vec<UndoRecord<'_>> {
        UndoRecords::new(&self.undo_image, REGTEST_MAGIC).collect()
    }

    fn index_blocks(&mut self) {
        let mut heights = HashMap::new();
        let mut outputs: HashMap<OutPoint, Vec<CreatedOutput>> = HashMap::new();
        for (_, block) in self.blocks() {
            let previous = block.header().previous_block_hash;
            let height = if previous == BlockHash::ZERO { 0 } else { heights[&previous] + 1 };
            heights.insert(block.block_hash(), height);
            for (index, transaction) in block.transactions().enumerate() {
                let txid = transaction.txid();
                for (vout, output) in transaction.outputs().iter().enumerate() {
                    let outpoint = OutPoint { txid, vout: vout as u32 };
                    outputs.entry(outpoint).or_default().push(CreatedOutput {
                        amount_sat: output.value,
                        script_pubkey: output.script_pubkey.to_vec(),
                        height,
                        is_coinbase: index == 0,
                    });
                }
            }
        }
        self.heights = heights;
        self.outputs = outputs;
    }

    /// Whether `undo` is the undo data of `block`: shapes match and every
    /// spent coin is the output its input names, at that output's height.
    fn undo_matches_block(&self, undo: &BlockUndo, block: &BlockView<'_>) -> bool {
        if block.transaction_count() != undo.transactions.len() + 1 {
            return false;
        }
        block.transactions().skip(1).zip(&undo.transactions).all(|(transaction, record)| {
            transaction.inputs().len() == record.spent.len()
                && transaction.inputs().iter().zip(&record.spent).all(|(input, coin)| {
                    self.outputs
                        .get(&input.previous_output())
                        .is_some_and(|created| created.iter().any(|output| same(output, coin)))
                })
        })
    }
}

fn same(output: &CreatedOutput, coin: &Coin) -> bool {
    output.amount_sat == coin.amount().to_sat()
        && output.script_pubkey == coin.script_pubkey()
        && output.height == coin.height()
        && output.is_coinbase == coin.is_coinbase()
}

/// Each undo record with its block's previous hash: the block whose shape
/// and spent outputs match the decoded record and whose previous hash the
/// checksum covers (the cheap structural test first, then the hash).
fn records_with_previous_hashes(chain: &CoreChain) -> Vec<(UndoRecord<'_>, BlockHash)> {
    let blocks: Vec<_> = chain.blocks().map(|(_, block)| block).collect();
    let mut owned = Vec::new();
    for record in chain.undo_records() {
        let undo = BlockUndo::decode(record.payload).unwrap();
        let previous = blocks
            .iter()
            .filter(|block| chain.undo_matches_block(&undo, block))
            .map(|block| block.header().previous_block_hash)
            .find(|previous| undo_checksum(previous, record.payload) == *record.checksum);
        match previous {
            Some(previous) => owned.push((record, previous)),
            None => panic!("undo record at {} matches no block", record.data_offset),
        }
    }
    owned
}

#[test]
fn core_undo_records_decode_reencode_and_match_their_blocks() {
    let chain = CoreChain::load();
    let records = records_with_previous_hashes(&chain);
    // Every block but genesis was connected once, the stale branches' blocks
    // before the reorgs that disconnected them (1,209 records here).
    let block_count = chain.blocks().count();
    assert_eq!(records.len(), block_count - 1);
    let mut spent_coins = 0;
    for (record, _) in &records {
        let undo = BlockUndo::decode(record.payload).unwrap();
        assert_eq!(undo.encode(), record.payload);
        assert_eq!(undo.encoded_bytes(), record.payload.len());
        spent_coins += undo.transactions.iter().map(|record| record.spent.len()).sum::<usize>();
    }
    assert!(spent_coins > 100, "the wallet mix spends many coins, found {spent_coins}");
    // The heights the test derived reach the tip height Core reports.
    let expected =
        std::fs::read_to_string(core_blocks_directory().join("../expected.json")).unwrap();
    let tip_height = chain.heights.values().max().copied().unwrap();
    assert!(expected.contains(&format!("\"blocks\": {tip_height},")), "tip {tip_height}");
}

#[test]
fn read_undo_verifies_checksums_at_core_positions() {
    let chain = CoreChain::load();
    let directory = core_blocks_directory();
    let copy = TempDirectory::new("core-undo-flipped");
    let mut corrupt = std::fs::read(undo_file_path(&directory, 0)).unwrap();
    let records = records_with_previous_hashes(&chain);
    for (record, previous) in &records {
        let position = BlockPosition { file_number: 0, data_offset: record.data_offset };
        let payload = read_undo(&directory, position, &chain.obfuscation, previous).unwrap();
        assert_eq!(payload, record.payload);
        // XOR on the obfuscated byte flips the same bit of the plain byte.
        corrupt[record.data_offset as usize + record.payload.len() / 2] ^= 0x04;
    }
    std::fs::write(undo_file_path(copy.path(), 0), &corrupt).unwrap();
    for (record, previous) in &records {
        let position = BlockPosition { file_number: 0, data_offset: record.data_offset };
        let result = read_undo(copy.path(), position, &chain.obfuscation, previous);
        assert!(
            matches!(result, Err(BlockStoreError::BadUndoChecksum { file_number: 0, data_offset })
                if data_offset == record.data_offset),
            "{result:?}"
        );
    }
}

#[test]
fn writing_core_payloads_in_core_order_reproduces_rev00000() {
    let chain = CoreChain::load();
    let output = TempDirectory::new("core-undo-rewrite");
    let mut writer = UndoFileWriter::new(output.path(), REGTEST_MAGIC, chain.obfuscation);
    for (record, previous) in records_with_previous_hashes(&chain) {
        // Our own encoding of the decoded undo data, not Core's bytes.
        let payload = BlockUndo::decode(record.payload).unwrap().encode();
        let position = writer.append(0, &previous, &payload).unwrap();
        assert_eq!(position, BlockPosition { file_number: 0, data_offset: record.data_offset });
    }
    writer.sync().unwrap();
    let ours = std::fs::read(undo_file_path(output.path(), 0)).unwrap();
    let core = std::fs::read(undo_file_path(&core_blocks_directory(), 0)).unwrap();
    assert!(ours.len() > 1000);
    assert_eq!(&core[..ours.len()], &ours[..]);
    // Past the records, Core's file is its pre-allocated zero tail.
    assert!(core[ours.len()..].iter().all(|byte| *byte == 0));
}

#[test]
fn read_block_returns_each_core_block_and_rejects_malformed_records() {
    let chain = CoreChain::load();
    let directory = core_blocks_directory();
    for (data_offset, block) in chain.blocks() {
        let position = BlockPosition { file_number: 0, data_offset };
        let read = read_block(&directory, position, REGTEST_MAGIC, &chain.obfuscation).unwrap();
        assert_eq!(read, block.bytes());
    }

    // Genesis, then a record with another network's magic, one claiming more
    // than 4,000,000 bytes, and one cut short by the end of the file.
    let (_, genesis) = chain.blocks().next().unwrap();
    let mut plain = Vec::new();
    encode_record(&mut plain, REGTEST_MAGIC, genesis.bytes());
    let bad_magic = plain.len() as u64 + 8;
    encode_record(&mut plain, [0xf9, 0xbe, 0xb4, 0xd9], genesis.bytes());
    let oversized = plain.len() as u64 + 8;
    plain.extend_from_slice(&REGTEST_MAGIC);
    plain.extend_from_slice(&4_000_001u32.to_le_bytes());
    plain.extend_from_slice(&[0u8; 16]);
    let truncated = plain.len() as u64 + 8;
    encode_record(&mut plain, REGTEST_MAGIC, genesis.bytes());
    plain.truncate(plain.len() - 1);
    chain.obfuscation.apply(&mut plain, 0);
    let malformed = TempDirectory::new("core-undo-malformed-blocks");
    std::fs::write(block_file_path(malformed.path(), 0), &plain).unwrap();

    let read = |data_offset| {
        let position = BlockPosition { file_number: 0, data_offset };
        read_block(malformed.path(), position, REGTEST_MAGIC, &chain.obfuscation)
    };
    assert_eq!(read(8).unwrap(), genesis.bytes());
    assert!(matches!(read(bad_magic), Err(BlockStoreError::BadMagic { .. })));
    assert!(matches!(
        read(oversized),
        Err(BlockStoreError::RecordLengthOverLimit { length_bytes: 4_000_001, .. })
    ));
    assert!(matches!(read(truncated), Err(BlockStoreError::Truncated { .. })));
    assert!(matches!(read(4), Err(BlockStoreError::PositionBeforeHeader { .. })));
}
