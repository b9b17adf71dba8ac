#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Bitcoin Core itself as the oracle: libbitcoinkernel's `ChainstateManager`
//! (Core's validation code, regtest parameters) takes a generated chain with
//! forks and invalid blocks, block by block and then by reindexing the block
//! files. It must reach the manifest's tip and reject every invalid block.
//!
//! Builds Core with cmake and boost, so it is behind a feature:
//! `cargo test -p ibex-generator --features kernel-oracle --test kernel_oracle`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bitcoinkernel::prelude::*;
use bitcoinkernel::{
    Block, BlockValidationResult, BlockValidationStateRef, ChainType, ChainstateManager, Context,
    ContextBuilder, ValidationMode,
};
use ibex_generator::regtest::REGTEST_MESSAGE_START;
use ibex_generator::replay::read_blocks;
use ibex_generator::{generate, GeneratorOptions, Manifest, Profile};

type CheckedBlocks = Arc<Mutex<HashMap<String, (ValidationMode, BlockValidationResult)>>>;

fn regtest_context(checked: &CheckedBlocks) -> Context {
    let checked = Arc::clone(checked);
    ContextBuilder::new()
        .chain_type(ChainType::Regtest)
        .validation(move |registry| {
            registry.register_block_checked(
                move |block: Block, state: BlockValidationStateRef<'_>| {
                    let entry = (state.mode(), state.result());
                    checked.lock().unwrap().insert(block.hash().to_string(), entry);
                },
            );
        })
        .build()
        .unwrap()
}

fn generated(directory: &Path) -> Manifest {
    let mut options = GeneratorOptions::new(Profile::Tiny, 21, directory.to_path_buf());
    options.invalid = true;
    options.forks = true;
    generate(&options).unwrap().manifest
}

fn path_text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The result category Core gives each class.
fn expected_result(class: &str) -> BlockValidationResult {
    match class {
        "bad_merkle_root" | "duplicate_transactions" | "bad_witness_commitment" => {
            BlockValidationResult::Mutated
        }
        "time_too_old" | "wrong_difficulty_bits" => BlockValidationResult::InvalidHeader,
        _ => BlockValidationResult::Consensus,
    }
}

#[test]
fn core_accepts_the_chain_and_rejects_each_invalid_block() {
    let directory = tempfile::tempdir().unwrap();
    let blocks_directory = directory.path().join("generated");
    let manifest = generated(&blocks_directory);
    let checked: CheckedBlocks = Arc::default();
    let context = regtest_context(&checked);
    let data = directory.path().join("data");
    let kernel_blocks = directory.path().join("kernel-blocks");
    let chainman =
        ChainstateManager::new(&context, path_text(&data), path_text(&kernel_blocks)).unwrap();
    let mut rejected = HashMap::new();
    for bytes in read_blocks(&blocks_directory, REGTEST_MESSAGE_START).unwrap() {
        let block = Block::new(&bytes).unwrap();
        let hash = block.hash().to_string();
        let result = chainman.process_block(&block);
        rejected.insert(hash, result.is_rejected());
    }
    let tip = chainman.active_chain().tip();
    assert_eq!(tip.height() as u32, manifest.block_count);
    assert_eq!(tip.block_hash().to_string(), manifest.tip_hash);
    let checked = checked.lock().unwrap();
    for record in &manifest.invalid_blocks {
        let state = checked.get(&record.hash);
        let refused = rejected.get(&record.hash).copied().unwrap_or(false);
        assert!(
            refused || state.is_some_and(|(mode, _)| *mode == ValidationMode::Invalid),
            "Core accepted the {} block",
            record.class
        );
        if let Some((mode, result)) = state {
            assert_eq!(*mode, ValidationMode::Invalid, "{}", record.class);
            assert_eq!(*result, expected_result(&record.class), "{}", record.class);
        }
    }
    for record in &manifest.fork_blocks {
        assert!(!rejected[&record.hash], "fork block {} refused", record.hash);
    }
}

#[test]
fn core_reindexes_the_block_files_to_the_manifest_tip() {
    let directory = tempfile::tempdir().unwrap();
    let blocks_directory = directory.path().join("blocks");
    let manifest = generated(&blocks_directory);
    let checked: CheckedBlocks = Arc::default();
    let context = regtest_context(&checked);
    let data = directory.path().join("data");
    let chainman =
        ChainstateManager::builder(&context, path_text(&data), path_text(&blocks_directory))
            .unwrap()
            .wipe_db(true, true)
            .unwrap()
            .build()
            .unwrap();
    chainman.import_blocks().unwrap();
    let tip = chainman.active_chain().tip();
    assert_eq!(tip.block_hash().to_string(), manifest.tip_hash);
    assert_eq!(tip.height() as u32, manifest.block_count);
}

#[test]
fn core_accepts_full_bench_blocks() {
    // A dozen 4 MWU blocks: consolidations of hundreds of inputs, batch
    // payouts of hundreds of outputs, every spend type, lock times.
    let directory = tempfile::tempdir().unwrap();
    let blocks_directory = directory.path().join("blocks");
    let mut options = GeneratorOptions::new(Profile::Bench, 4, blocks_directory.clone());
    options.blocks = Some(112);
    let manifest = generate(&options).unwrap().manifest;
    assert!(manifest.total_weight > 10 * 3_000_000, "full blocks");
    let checked: CheckedBlocks = Arc::default();
    let context = regtest_context(&checked);
    let data = directory.path().join("data");
    let chainman =
        ChainstateManager::builder(&context, path_text(&data), path_text(&blocks_directory))
            .unwrap()
            .wipe_db(true, true)
            .unwrap()
            .build()
            .unwrap();
    chainman.import_blocks().unwrap();
    let tip = chainman.active_chain().tip();
    assert_eq!(tip.block_hash().to_string(), manifest.tip_hash);
    let invalid =
        checked.lock().unwrap().values().filter(|(mode, _)| *mode != ValidationMode::Valid).count();
    assert_eq!(invalid, 0);
}

#[test]
fn core_reindexes_the_small_profile() {
    // 2,000 blocks through 13 subsidy halvings, ~50 MB.
    let directory = tempfile::tempdir().unwrap();
    let blocks_directory = directory.path().join("blocks");
    let options = GeneratorOptions::new(Profile::Small, 8, blocks_directory.clone());
    let manifest = generate(&options).unwrap().manifest;
    let checked: CheckedBlocks = Arc::default();
    let context = regtest_context(&checked);
    let data = directory.path().join("data");
    let chainman =
        ChainstateManager::builder(&context, path_text(&data), path_text(&blocks_directory))
            .unwrap()
            .wipe_db(true, true)
            .unwrap()
            .build()
            .unwrap();
    chainman.import_blocks().unwrap();
    let tip = chainman.active_chain().tip();
    assert_eq!(tip.height() as u32, manifest.block_count);
    assert_eq!(tip.block_hash().to_string(), manifest.tip_hash);
}
