//! Pruning on a whole engine: a generated chain connected block by block
//! with `-fastprune`'s small files, automatically and on request, against
//! the same chain connected without pruning; and the crash between writing
//! the index and removing the files.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use ibex_blockstore::{block_file_path, undo_file_path};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::Params;

use super::Chainstate;
use crate::index::BlockStatus;
use crate::stages::block_files::BLOCKS_TO_KEEP_MIN;
use crate::test_chain::{accept, chainstate_options};
use crate::vocabulary::PruneMode;
use crate::ChainEvent;

const BLOCKS_ABOVE_GENESIS: u32 = 400;
/// Far under what the chain takes: every eligible file goes.
const TARGET_BYTES: u64 = 64 << 10;

/// A chainstate under `root` pruning as `prune` says, `-fastprune`'s
/// files, regtest pruning from height 100.
fn open(root: &Path, prune: PruneMode) -> Chainstate {
    let mut params = Params::regtest();
    params.prune_after_height = 100;
    let mut options = chainstate_options(root, params);
    options.prune = prune;
    options.fast_prune = true;
    Chainstate::open(options, Box::new(|_: &ChainEvent| {})).unwrap()
}

/// Genesis and [`BLOCKS_ABOVE_GENESIS`] generated blocks.
fn chain(root: &Path) -> Vec<Vec<u8>> {
    let generated = root.join("generated");
    let mut options =
        ibex_generator::GeneratorOptions::new(ibex_generator::Profile::Tiny, 7, generated.clone());
    options.blocks = Some(BLOCKS_ABOVE_GENESIS);
    options.threads = Some(1);
    ibex_generator::generate(&options).unwrap();
    ibex_generator::replay::read_blocks(&generated, Params::regtest().message_start).unwrap()
}

/// Offers the blocks one at a time, connecting each, as a sync does.
fn connect_each(chainstate: &mut Chainstate, blocks: &[Vec<u8>]) {
    for bytes in blocks {
        accept(chainstate, bytes);
        chainstate.advance_best_chain().unwrap();
    }
    chainstate.activate_best_chain().unwrap();
}

fn file_exists(root: &Path, file: u32) -> bool {
    block_file_path(&root.join("blocks"), file).exists()
        || undo_file_path(&root.join("blocks"), file).exists()
}

/// What pruning must leave: the blocks of the files that went lost their
/// data and undo marks but kept their counts; the last 288 blocks and the
/// files they are in are there; the prune height is the highest block
/// missing below the stored run.
fn assert_pruned_as_core(chainstate: &Chainstate, root: &Path) -> u32 {
    let index = chainstate.index();
    let tip_height = chainstate.chain().height().unwrap();
    let mut highest_pruned = 0;
    for height in 1..=tip_height {
        let entry = index.entry(chainstate.chain().at(height).unwrap());
        let stored = entry.status.has(BlockStatus::HAVE_DATA);
        assert_eq!(stored, entry.status.has(BlockStatus::HAVE_UNDO), "{height}");
        assert!(entry.transaction_count > 0 && entry.chain_transaction_count > 0, "{height}");
        if stored {
            let file = entry.block_position.unwrap().file_number;
            assert!(block_file_path(&root.join("blocks"), file).exists(), "{height}");
        } else {
            assert!(entry.block_position.is_none() && entry.undo_position.is_none());
            assert!(height <= tip_height - BLOCKS_TO_KEEP_MIN, "{height} kept too few");
            highest_pruned = highest_pruned.max(height);
        }
    }
    assert!(highest_pruned > 0, "nothing was pruned");
    assert_eq!(chainstate.prune_height(), Some(highest_pruned));
    assert!(chainstate.have_pruned());
    highest_pruned
}

#[test]
fn automatic_pruning_removes_every_eligible_file_and_keeps_the_coins() {
    let root = tempfile::tempdir().unwrap();
    let blocks = chain(root.path());
    let unpruned_root = root.path().join("unpruned");
    let mut unpruned = open(&unpruned_root, PruneMode::Disabled);
    connect_each(&mut unpruned, &blocks);
    let coins = unpruned.txoutset_stats(TxOutSetHashType::HashSerialized3).unwrap();
    let unpruned_bytes = unpruned.block_files_bytes();
    assert_eq!(unpruned.prune_height(), None);
    assert!(!unpruned.have_pruned());

    let pruned_root = root.path().join("pruned");
    let mut pruned = open(&pruned_root, PruneMode::Automatic { target_bytes: TARGET_BYTES });
    connect_each(&mut pruned, &blocks);
    pruned.flush(crate::FlushReason::Shutdown, crate::FlushMode::KeepCoins).unwrap();
    assert_eq!(pruned.chain().height(), Some(BLOCKS_ABOVE_GENESIS));
    assert_eq!(pruned.txoutset_stats(TxOutSetHashType::HashSerialized3).unwrap(), coins);
    let highest_pruned = assert_pruned_as_core(&pruned, &pruned_root);
    // Pruning kept up as the chain grew: what is left is the last 288
    // blocks and the files they share, far less than the whole chain.
    assert!(highest_pruned >= BLOCKS_ABOVE_GENESIS - BLOCKS_TO_KEEP_MIN - 12, "{highest_pruned}");
    let on_disk: u64 = std::fs::read_dir(pruned_root.join("blocks"))
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| {
            let name = entry.file_name().into_string().unwrap();
            name.starts_with("blk") || name.starts_with("rev")
        })
        .map(|entry| entry.metadata().unwrap().len())
        .sum();
    assert_eq!(pruned.block_files_bytes(), on_disk);
    assert!(on_disk < unpruned_bytes);
    assert!(!file_exists(&pruned_root, 0));

    // Reopened: the same tip, coins, marks and counts.
    drop(pruned);
    let reopened = open(&pruned_root, PruneMode::Automatic { target_bytes: TARGET_BYTES });
    assert_eq!(reopened.chain().height(), Some(BLOCKS_ABOVE_GENESIS));
    assert_eq!(reopened.txoutset_stats(TxOutSetHashType::HashSerialized3).unwrap(), coins);
    assert_eq!(assert_pruned_as_core(&reopened, &pruned_root), highest_pruned);
}

#[test]
fn manual_pruning_removes_the_files_below_the_height_asked() {
    let root = tempfile::tempdir().unwrap();
    let blocks = chain(root.path());
    let mut disabled = open(&root.path().join("disabled"), PruneMode::Disabled);
    connect_each(&mut disabled, &blocks[..3]);
    assert!(matches!(
        disabled.prune_block_files_manually(1),
        Err(crate::ChainstateError::NotPruning)
    ));

    let manual_root = root.path().join("manual");
    let mut manual = open(&manual_root, PruneMode::Manual);
    connect_each(&mut manual, &blocks);
    // A manual node never prunes by itself.
    assert_eq!(manual.prune_height(), None);
    assert!(file_exists(&manual_root, 0));
    // The first file holds the small early blocks up to ~100: a height
    // below its last block prunes nothing.
    let first_file_last = manual.shared.persistence.files().file(0).height_last;
    let below = first_file_last - 1;
    assert_eq!(manual.prune_block_files_manually(below).unwrap(), None);
    assert!(file_exists(&manual_root, 0));
    let asked = BLOCKS_ABOVE_GENESIS - BLOCKS_TO_KEEP_MIN - 1;
    let prune_height = manual.prune_block_files_manually(asked).unwrap().unwrap();
    assert!(prune_height <= asked, "{prune_height}");
    assert_eq!(assert_pruned_as_core(&manual, &manual_root), prune_height);
    // Only whole files at or below the height asked went: the file of the
    // first block kept reaches above it.
    let index = manual.index();
    let above = index.entry(manual.chain().at(prune_height + 1).unwrap());
    let kept_file = above.block_position.unwrap().file_number;
    assert!(manual.shared.persistence.files().file(kept_file).height_last > asked);
    // Asking again for the same height removes nothing more.
    assert_eq!(manual.prune_block_files_manually(asked).unwrap(), Some(prune_height));
}

#[test]
fn files_recorded_pruned_but_left_on_disk_go_at_the_next_start() {
    let root = tempfile::tempdir().unwrap();
    let blocks = chain(root.path());
    let manual_root = root.path().join("manual");
    let mut manual = open(&manual_root, PruneMode::Manual);
    connect_each(&mut manual, &blocks);
    manual.flush(crate::FlushReason::Shutdown, crate::FlushMode::KeepCoins).unwrap();
    // A crash between writing the index and removing the files: the index
    // names neither file 0 nor 1, both still on disk.
    let shared = &mut manual.shared;
    shared.persistence.prune_files(&mut shared.index, &[0, 1]).unwrap();
    drop(manual);
    assert!(file_exists(&manual_root, 0) && file_exists(&manual_root, 1));

    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = events.clone();
    let mut params = Params::regtest();
    params.prune_after_height = 100;
    let mut options = chainstate_options(&manual_root, params);
    options.prune = PruneMode::Manual;
    options.fast_prune = true;
    let observer = move |event: &ChainEvent| seen.lock().unwrap().push(event.clone());
    let reopened = Chainstate::open(options, Box::new(observer)).unwrap();
    assert!(!file_exists(&manual_root, 0) && !file_exists(&manual_root, 1));
    assert!(file_exists(&manual_root, 2));
    assert!(events.lock().unwrap().contains(&ChainEvent::PrunedFilesRemoved { files: vec![0, 1] }));
    assert_eq!(reopened.chain().height(), Some(BLOCKS_ABOVE_GENESIS));
    assert!(reopened.have_pruned());
}
