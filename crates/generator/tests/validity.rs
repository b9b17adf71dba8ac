#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A tiny chain with invalid blocks and forks, replayed block by block:
//! every valid block decodes, passes `check_block` and the contextual rules,
//! every input re-verifies under full consensus flags, the UTXO count matches
//! the manifest, and each invalid block fails for its documented reason.

use std::collections::{HashMap, HashSet};

use ibex_generator::invalid::InvalidClass;
use ibex_generator::regtest::REGTEST_MESSAGE_START;
use ibex_generator::replay::{read_blocks, Replay};
use ibex_generator::script_kind::ScriptKind;
use ibex_generator::{generate, GeneratorOptions, Manifest, Profile};
use ibex_primitives::{BlockHash, BlockView, Params};

fn generated() -> (tempfile::TempDir, Manifest) {
    let directory = tempfile::tempdir().unwrap();
    let mut options = GeneratorOptions::new(Profile::Tiny, 11, directory.path().to_path_buf());
    options.invalid = true;
    options.forks = true;
    let report = generate(&options).unwrap();
    (directory, report.manifest)
}

#[test]
fn replay_accepts_the_chain_and_rejects_each_invalid_block_for_its_reason() {
    let (directory, manifest) = generated();
    let blocks = read_blocks(directory.path(), REGTEST_MESSAGE_START).unwrap();
    assert_eq!(blocks.len() as u64, manifest.records);
    let invalid: HashMap<String, (String, String)> = manifest
        .invalid_blocks
        .iter()
        .map(|record| (record.hash.clone(), (record.class.clone(), record.reject_reason.clone())))
        .collect();
    assert_eq!(invalid.len(), InvalidClass::ALL.len());
    let fork_hashes: HashSet<String> =
        manifest.fork_blocks.iter().map(|record| record.hash.clone()).collect();
    assert_eq!(fork_hashes.len(), 3, "two reorged blocks and one stale block");
    // Keep the state of every block a fork or an invalid block builds on.
    let retain: HashSet<BlockHash> = blocks
        .iter()
        .map(|bytes| BlockView::parse(bytes).unwrap())
        .filter(|block| {
            let hash = block.block_hash().to_hex();
            invalid.contains_key(&hash) || fork_hashes.contains(&hash)
        })
        .map(|block| block.header().previous_block_hash)
        .collect();
    let mut replay = Replay::new(Params::regtest(), retain);
    let mut rejected = HashSet::new();
    for bytes in &blocks {
        let hash = BlockView::parse(bytes).unwrap().block_hash().to_hex();
        match (replay.process(bytes), invalid.get(&hash)) {
            (Ok(_), None) => {}
            (Ok(_), Some((class, _))) => panic!("invalid block {class} was accepted"),
            (Err(rejection), Some((class, reason))) => {
                assert_eq!(&rejection.reason, reason, "class {class}");
                rejected.insert(class.clone());
            }
            (Err(rejection), None) => panic!("valid block {hash} rejected: {}", rejection.reason),
        }
    }
    assert_eq!(rejected.len(), InvalidClass::ALL.len());
    let tip = BlockHash::from_hex(&manifest.tip_hash).unwrap();
    let state = replay.state(&tip).expect("tip state");
    assert_eq!(state.height, manifest.block_count);
    assert_eq!(state.coins.len() as u64, manifest.utxo_count, "UTXO count matches a replay");
    // Every height of a short chain, forks and invalid blocks left out.
    let heights: Vec<u32> =
        manifest.utxo_count_by_height.iter().map(|&(height, _)| height).collect();
    assert_eq!(heights, (0..=manifest.block_count).collect::<Vec<u32>>());
    assert_eq!(manifest.utxo_count_by_height.last(), Some(&(state.height, manifest.utxo_count)));
    let main_inputs =
        manifest.inputs_by_script_type.0["total"] - manifest.inputs_by_script_type.0["coinbase"];
    assert!(replay.inputs_verified >= main_inputs, "every input re-verified");
}

#[test]
fn tiny_chain_has_every_kind_of_spend() {
    let (_directory, manifest) = generated();
    // Bare multisig has weight zero outside the utxo-heavy profile.
    let weights = &manifest.options.traffic.kind_weights;
    let unused: Vec<&str> = ScriptKind::ALL
        .iter()
        .filter(|kind| weights[kind.index()] == 0)
        .map(|kind| kind.name())
        .collect();
    assert_eq!(unused, ["bare_multisig"]);
    for (name, count) in &manifest.inputs_by_script_type.0 {
        assert_eq!(*count > 0, !unused.contains(&name.as_str()), "{name} inputs: {count}");
    }
    for (name, count) in &manifest.outputs_by_script_type.0 {
        assert_eq!(*count > 0, !unused.contains(&name.as_str()), "{name} outputs: {count}");
    }
    assert!(manifest.lock_time_transactions > 0);
    assert!(manifest.relative_lock_inputs > 0);
    assert!(manifest.utxo_count > 1_000);
}
