#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `utxo-heavy` profile scaled down to CI's time: 1,200 blocks of
//! 100,000 WU instead of 2,000 of 3,990,000 (the shares, sizes and age
//! model are the profile's own; batch payouts and consolidations are cut to
//! the room a small block leaves). Same seed, same bytes; the UTXO count
//! and the spend ages within the bounds the mix and the age model give
//! (derived below); every block valid on replay, with the manifest's coins.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use ibex_generator::regtest::REGTEST_MESSAGE_START;
use ibex_generator::replay::{read_blocks, Replay};
use ibex_generator::spend_age::SPEND_AGE_RANGE_NAMES;
use ibex_generator::{generate, GeneratorOptions, Manifest, Profile};
use ibex_primitives::hash::sha256;
use ibex_primitives::{BlockHash, Params};

const BLOCKS: u32 = 1_200;
const TARGET_WEIGHT: usize = 100_000;
const SEED: u64 = 17;
/// Blocks before the first spendable coin (coinbase maturity).
const WARMUP_BLOCKS: u32 = 100;

fn options(seed: u64, out: &Path) -> GeneratorOptions {
    let mut options = GeneratorOptions::new(Profile::UtxoHeavy, seed, out.to_path_buf());
    options.blocks = Some(BLOCKS);
    options.target_weight = Some(TARGET_WEIGHT);
    options
}

/// The scaled chain, generated once for the tests of this file.
fn scaled() -> &'static (tempfile::TempDir, Manifest) {
    static CHAIN: OnceLock<(tempfile::TempDir, Manifest)> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let directory = tempfile::tempdir().unwrap();
        let manifest = generate(&options(SEED, directory.path())).unwrap().manifest;
        (directory, manifest)
    })
}

/// SHA-256 of every file of `directory`, by name.
fn file_hashes(directory: &Path) -> BTreeMap<String, [u8; 32]> {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let bytes = std::fs::read(entry.path()).unwrap();
            (entry.file_name().to_string_lossy().into_owned(), sha256(&bytes))
        })
        .collect()
}

/// Shares of the five age ranges, in order.
fn shares(histogram: &ibex_generator::named_counts::NamedCounts) -> [f64; 5] {
    let counts = SPEND_AGE_RANGE_NAMES.map(|name| histogram.0[name] as f64);
    let total: f64 = counts.iter().sum();
    assert!(total > 0.0);
    counts.map(|count| count / total)
}

#[test]
fn same_seed_gives_byte_identical_block_files() {
    let (first_directory, first) = scaled();
    let second_directory = tempfile::tempdir().unwrap();
    let mut one_thread = options(SEED, second_directory.path());
    one_thread.threads = Some(1);
    let second = generate(&one_thread).unwrap().manifest;
    assert_eq!(first, &second);
    let hashes = file_hashes(first_directory.path());
    assert!(hashes.contains_key("blk00000.dat") && hashes.contains_key("manifest.json"));
    assert_eq!(hashes, file_hashes(second_directory.path()), "same seed, same bytes");

    let other_directory = tempfile::tempdir().unwrap();
    let mut other = options(SEED + 1, other_directory.path());
    other.blocks = Some(150);
    let other = generate(&other).unwrap().manifest;
    let first_hash = BlockHash::from_hex(&first.tip_hash).unwrap();
    assert_ne!(BlockHash::from_hex(&other.tip_hash).unwrap(), first_hash);
}

/// Coins per block after the warm-up: batch payouts take 52 % of the weight
/// (60 % until consolidations start, 201 blocks in) at ~141 WU per output
/// (~35 bytes at the profile's mix of kinds), payments add about as many
/// coins as they spend, consolidations remove 8 % of the weight at ~380 WU
/// per input: 96,000 x (0.52 / 141 - 0.08 / 380) = 334 coins a block.
/// Fixed costs per transaction and the room a small block leaves make it
/// a little less; the bound is that napkin figure within -20 % / +25 %.
#[test]
fn utxo_count_follows_the_mix_and_balances_the_books() {
    let (_, manifest) = scaled();
    let weight = (TARGET_WEIGHT - 4_000) as f64;
    let per_block = weight * (0.52 / 141.0 - 0.08 / 380.0);
    let expected = per_block * f64::from(BLOCKS - WARMUP_BLOCKS);
    let found = manifest.utxo_count as f64;
    assert!(
        (0.8 * expected..=1.25 * expected).contains(&found),
        "{found} coins, napkin {expected:.0}"
    );
    let outputs = &manifest.outputs_by_script_type.0;
    let inputs = &manifest.inputs_by_script_type.0;
    let created = outputs["total"] - outputs["op_return"] - outputs["witness_commitment"];
    let spent = inputs["total"] - inputs["coinbase"];
    assert_eq!(manifest.utxo_count, created - spent, "coins created minus coins spent");
    let batches = &manifest.shapes["batch_payout"];
    assert!(batches.outputs >= 100 * batches.transactions, "batches of 100 or more on average");
    assert!(batches.outputs * 2 > created, "most coins come from batch payouts");
    let consolidations = &manifest.shapes["consolidation"];
    assert!(consolidations.inputs >= 10 * consolidations.transactions);
    assert!(consolidations.outputs <= 2 * consolidations.transactions);
}

/// Bounds from the age model (`spend_age.rs`): a payment's coin is young
/// (1-20 blocks, 98.7 % within 10) with chance 0.7, else log-uniform up to
/// the oldest coin's age, which is at most ~1,100 blocks here. At that
/// age the tail puts 34.2 % within 10 blocks and 34.1 % beyond 100; on a
/// younger chain more within 10 and fewer beyond 100. So payments spend
/// at least 0.7 x 0.987 + 0.3 x 0.342 = 79.3 % of their coins within 10
/// blocks and at most 0.3 x 0.341 = 10.2 % beyond 100. Consolidations
/// take coins 101 blocks old or more, and nothing else; the tail reaches
/// the chain's full age, past 1,000 blocks.
#[test]
fn spend_ages_follow_the_model() {
    let (_, manifest) = scaled();
    let payments = shares(&manifest.shapes["payment"].spend_age_blocks);
    let within_10 = payments[0] + payments[1];
    let beyond_100 = payments[3] + payments[4];
    assert!(within_10 >= 0.793 - 0.01, "payments {payments:?}");
    assert!(beyond_100 <= 0.102 + 0.01, "payments {payments:?}");
    assert!(beyond_100 >= 0.03, "a long tail: {payments:?}");
    let consolidations = &manifest.shapes["consolidation"].spend_age_blocks.0;
    for name in &SPEND_AGE_RANGE_NAMES[..3] {
        assert_eq!(consolidations[*name], 0, "consolidation inputs aged {name}");
    }
    let all = &manifest.spend_age_histogram;
    let everything = shares(all);
    assert!(everything[0] + everything[1] > 0.5, "most spends are young: {everything:?}");
    assert!(all.0["01001+"] > 0, "spends older than 1,000 blocks");
    let spent =
        manifest.inputs_by_script_type.0["total"] - manifest.inputs_by_script_type.0["coinbase"];
    assert_eq!(all.0.values().sum::<u64>(), spent);
}

#[test]
fn every_script_type_is_paid_and_spent() {
    let (_, manifest) = scaled();
    for counts in [&manifest.inputs_by_script_type, &manifest.outputs_by_script_type] {
        for (name, count) in &counts.0 {
            assert!(*count > 0, "no {name}");
        }
    }
    assert!(manifest.lock_time_transactions > 0 && manifest.relative_lock_inputs > 0);
}

#[test]
fn replay_accepts_every_block_with_the_manifests_coins() {
    let (directory, manifest) = scaled();
    let blocks = read_blocks(directory.path(), REGTEST_MESSAGE_START).unwrap();
    assert_eq!(blocks.len() as u64, manifest.records);
    let mut replay = Replay::new(Params::regtest(), HashSet::new());
    let mut replayed_counts = Vec::with_capacity(blocks.len());
    for bytes in &blocks {
        match replay.process(bytes) {
            Ok(hash) => {
                let state = replay.state(&hash).expect("the new tip's state");
                replayed_counts.push((state.height, state.coins.len() as u64));
            }
            Err(rejection) => panic!("block rejected: {}", rejection.reason),
        }
    }
    // The UTXO set's size by height, every third height of 1,200 (at most
    // 400 entries) and at the tip, each as the replay counts it.
    let by_height = &manifest.utxo_count_by_height;
    assert_eq!(by_height.len(), 401);
    assert_eq!(by_height.first(), Some(&(0, 0)));
    assert_eq!(by_height.last(), Some(&(BLOCKS, manifest.utxo_count)));
    for (index, &(height, count)) in by_height.iter().enumerate() {
        assert_eq!(height, 3 * index as u32);
        assert_eq!(replayed_counts[height as usize], (height, count), "at height {height}");
    }
    let tip = BlockHash::from_hex(&manifest.tip_hash).unwrap();
    let state = replay.state(&tip).expect("tip state");
    assert_eq!(state.height, manifest.block_count);
    assert_eq!(state.coins.len() as u64, manifest.utxo_count);
    let inputs = &manifest.inputs_by_script_type.0;
    assert_eq!(replay.inputs_verified, inputs["total"] - inputs["coinbase"]);
}
