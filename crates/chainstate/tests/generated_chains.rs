//! The chainstate on chains made by `ibex gen` (tiny profile, generated in
//! process): a clean chain imports to the manifest's tip and UTXO count with
//! every script checked; each invalid class is rejected once, for Core's
//! reason, marked or not as Core would, and leaves the same UTXO set as the
//! clean chain; a chain with forks imported connects only its best chain,
//! as Core's reindex does, and delivered block by block by a peer
//! reorganises and ends with the UTXO set of its winning branch imported
//! alone; invalid blocks offered again are
//! refused as Core refuses them (`duplicate-invalid`), across a restart too;
//! an import stopped halfway (or beside the reorged branch) and reopened
//! ends like a one-shot import, as does a node left on the reorged branch
//! that imports the files; `-loadblock` files in reverse or swapped order
//! end the same; and random sequences of connecting, reorgs to the fork,
//! flushes and reopens end with the UTXO set of a straight import of the
//! same tip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "generated_chains/property.rs"]
mod property;
#[path = "generated_chains/support.rs"]
mod support;

use std::path::Path;
use std::sync::atomic::AtomicBool;

use ibex_blockstore::{
    block_file_path, read_block, write_obfuscation_key, BlockFileWriter, Obfuscation,
    BLOCK_FILE_BYTES_MAX,
};
use ibex_chainstate::{
    import_blocks, ChainEvent, Chainstate, FlushMode, FlushReason, ImportSource,
};
use ibex_generator::forks::{ForkPlan, REORG_BRANCH_BLOCKS};
use ibex_generator::invalid::InvalidClass;
use ibex_generator::Manifest;
use ibex_primitives::BlockHash;

use support::{
    clean, import, import_alone, invalid_events, offer, tip_hex, utxo_stats, with_forks,
    with_invalid_blocks, Generated, InvalidEvent, Node,
};

#[test]
fn tiny_chain_imports_to_the_manifest_tip_checking_every_script() {
    let chain = clean();
    let manifest = &chain.manifest;
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    let summary = import(&mut chainstate);
    assert!(!summary.interrupted);
    assert_eq!(summary.orphans_left, 0);
    assert_eq!(summary.blocks_accepted, manifest.records);
    assert_eq!(tip_hex(&chainstate), chain.tip());
    let stats = utxo_stats(&mut chainstate);
    assert_eq!(stats.txouts, manifest.utxo_count);
    assert!(invalid_events(&node.events()).is_empty());
    let inputs = &manifest.inputs_by_script_type.0;
    let spending_inputs = inputs["total"] - inputs["coinbase"];
    let statistics = chainstate.statistics();
    assert_eq!(statistics.inputs_connected, spending_inputs);
    assert_eq!(statistics.scripts_checked, spending_inputs, "assume_valid: None checks all");
    assert_eq!(statistics.blocks_disconnected, 0);
    assert_eq!(statistics.blocks_invalid, 0);

    // The shutdown flush is counted and timed, but no block waited for it.
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    let after = chainstate.statistics();
    assert_eq!(after.flushes, statistics.flushes + 1);
    assert_eq!(after.longest_flush_stall_ms, statistics.longest_flush_stall_ms);
    assert!(after.shutdown_flush_ms <= after.longest_flush_ms);
}

/// A coins cache so small (32 KiB), with every table-reader byte counted
/// against it, that the database's table readers soon take half its
/// share: the engine drops whole coin keys from the filters of later
/// tables once, and the import still ends at the manifest's set (reads
/// then answer from tables of both kinds).
#[test]
fn a_small_cache_drops_whole_key_filters_once_and_ends_at_the_same_set() {
    let chain = clean();
    let mut node = Node::with_chain(chain);
    node.cache_bytes_max = 1 << 15;
    node.table_readers_uncounted_bytes = 0;
    let mut chainstate = node.open();
    assert!(!import(&mut chainstate).interrupted);
    let drops: Vec<(usize, usize)> = node
        .events()
        .iter()
        .filter_map(|event| match event {
            ChainEvent::WholeKeyFiltersDropped { table_readers_bytes, share_bytes } => {
                Some((*table_readers_bytes, *share_bytes))
            }
            _ => None,
        })
        .collect();
    assert_eq!(drops.len(), 1, "{drops:?}");
    let (readers, share) = drops[0];
    assert!(readers > share / 2, "{readers} of {share}");
    assert_eq!(tip_hex(&chainstate), chain.tip());
    assert_eq!(utxo_stats(&mut chainstate).txouts, chain.manifest.utxo_count);
}

/// Where an invalid block of `class` ends up: never indexed (a header
/// failing its context: Core's `AcceptBlockHeader` returns before
/// `AddToBlockIndex`), indexed without data and not marked (a possibly
/// mutated copy), or marked invalid.
fn expected_tip_status(class: InvalidClass) -> Option<&'static str> {
    match class {
        InvalidClass::TimeTooOld | InvalidClass::WrongDifficultyBits => None,
        InvalidClass::BadMerkleRoot
        | InvalidClass::DuplicateTransactions
        | InvalidClass::BadWitnessCommitment => Some("headers-only"),
        _ => Some("invalid"),
    }
}

#[test]
fn each_invalid_class_is_rejected_once_for_cores_reason() {
    let chain = with_invalid_blocks();
    let manifest = &chain.manifest;
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    import(&mut chainstate);
    assert_eq!(tip_hex(&chainstate), chain.tip());
    let stats = utxo_stats(&mut chainstate);
    let (clean_tip, clean_stats) = import_alone(clean());
    assert_eq!(clean_tip, chain.tip(), "the invalid blocks follow the clean chain");
    assert_eq!(stats, clean_stats, "failed connects leave no trace in the coins");
    let events = invalid_events(&node.events());
    assert_eq!(manifest.invalid_blocks.len(), InvalidClass::ALL.len());
    assert_eq!(events.len(), manifest.invalid_blocks.len());
    let tips = chainstate.chain_tips();
    let mut marked_count = 0;
    for record in &manifest.invalid_blocks {
        let class = InvalidClass::from_name(&record.class).unwrap();
        assert_eq!(record.reject_reason, class.reject_reason());
        let hash = BlockHash::from_hex(&record.hash).unwrap();
        let matching: Vec<&InvalidEvent> = events.iter().filter(|e| e.hash == hash).collect();
        assert_eq!(matching.len(), 1, "{class:?}: one event");
        let event = matching[0];
        assert_eq!(event.reason, record.reject_reason, "{class:?}");
        let status = expected_tip_status(class);
        assert_eq!(event.marked, status == Some("invalid"), "{class:?}: marked");
        marked_count += u64::from(event.marked);
        if status.is_some() {
            assert_eq!(event.height, record.height, "{class:?}: height");
        }
        let tip = tips.iter().find(|tip| tip.hash == hash);
        assert_eq!(tip.map(|tip| tip.status), status, "{class:?}: getchaintips status");
        assert!(tip.is_none_or(|tip| tip.branch_length == 1));
    }
    assert_eq!(chainstate.statistics().blocks_invalid, marked_count);
    // The mutated blocks' headers are valid and have more work than the tip:
    // the first one indexed is the best header, as Core's `m_best_header`.
    let first_mutated = &manifest.invalid_blocks[0];
    assert_eq!(first_mutated.class, InvalidClass::BadMerkleRoot.name());
    assert_eq!(chainstate.best_header().unwrap().to_hex(), first_mutated.hash);
}

/// Copies the chain ending at the tip into a new blocks directory (with
/// another obfuscation key), walking back from the tip through the parents.
fn write_winning_branch(chainstate: &Chainstate, directory: &Path) {
    let index = chainstate.index();
    let mut branch = Vec::new();
    let mut walk = index.get(&chainstate.tip().unwrap().0);
    while let Some(id) = walk {
        branch.push(index.entry(id).block_position.unwrap());
        walk = index.entry(id).parent;
    }
    let key = Obfuscation::new([0x5a, 1, 2, 3, 4, 5, 6, 7]);
    std::fs::create_dir_all(directory).unwrap();
    write_obfuscation_key(directory, key).unwrap();
    let magic = chainstate.params().message_start;
    let mut writer = BlockFileWriter::new(directory, magic, key, BLOCK_FILE_BYTES_MAX, 0).unwrap();
    for position in branch.into_iter().rev() {
        let bytes =
            read_block(chainstate.blocks_directory(), position, magic, chainstate.obfuscation())
                .unwrap();
        writer.append(&bytes).unwrap();
    }
    writer.sync().unwrap();
    assert!(block_file_path(directory, 0).exists());
}

/// The reorganisations `node`'s chainstates reported: disconnected count,
/// fork height, new best block.
fn reorganizations(node: &Node) -> Vec<(u32, u32, BlockHash)> {
    let events = node.events();
    let reorganizations = events.iter().filter_map(|event| match event {
        ChainEvent::Reorganization { disconnected_count, fork_height, new_best } => {
            Some((*disconnected_count, *fork_height, *new_best))
        }
        _ => None,
    });
    reorganizations.collect()
}

/// Core's reindex accepts every block of the files and activates the best
/// chain once, at the end (`LoadExternalBlockFile`, `ImportBlocks`): the
/// branch written before the main chain overtook it is never connected,
/// nothing is reorganised, and both branches stay `valid-headers`.
#[test]
fn an_import_of_forks_connects_only_the_best_chain_as_cores_reindex() {
    let chain = with_forks();
    let manifest = &chain.manifest;
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    import(&mut chainstate);
    assert_eq!(tip_hex(&chainstate), chain.tip());
    assert_eq!(utxo_stats(&mut chainstate).txouts, manifest.utxo_count);
    assert!(reorganizations(&node).is_empty());
    let statistics = chainstate.statistics();
    assert_eq!(statistics.blocks_disconnected, 0);
    assert_eq!(statistics.blocks_connected, u64::from(manifest.block_count + 1));
    check_fork_tips(&chainstate, &node, manifest, false);
}

#[test]
fn forks_delivered_by_a_peer_reorganise_to_the_utxo_set_of_the_winning_branch_alone() {
    let chain = with_forks();
    let manifest = &chain.manifest;
    let plan = ForkPlan::for_blocks(manifest.block_count).unwrap();
    let node = Node::new();
    let mut chainstate = node.open();
    // In file order, each activated on arrival (Core's `ProcessNewBlock`):
    // the branch is the tip until the main chain passes it.
    for bytes in chain.blocks() {
        offer(&mut chainstate, &bytes);
    }
    chainstate.activate_best_chain().unwrap();
    assert_eq!(tip_hex(&chainstate), chain.tip());
    let stats = utxo_stats(&mut chainstate);
    assert_eq!(stats.txouts, manifest.utxo_count);
    let reorganizations = reorganizations(&node);
    assert_eq!(reorganizations.len(), 1, "one reorganisation");
    let (disconnected_count, fork_height, new_best) = reorganizations[0];
    assert_eq!((disconnected_count, fork_height), (REORG_BRANCH_BLOCKS, plan.reorg_base_height));
    let main_after_branch = chainstate.chain().at(plan.reorg_base_height + 3).unwrap();
    assert_eq!(new_best, chainstate.index().entry(main_after_branch).hash);
    let statistics = chainstate.statistics();
    assert_eq!(statistics.blocks_disconnected, u64::from(REORG_BRANCH_BLOCKS));
    let connected = u64::from(manifest.block_count + 1 + REORG_BRANCH_BLOCKS);
    assert_eq!(statistics.blocks_connected, connected, "genesis, main chain and branch");
    check_fork_tips(&chainstate, &node, manifest, true);

    let winning = Node::new();
    write_winning_branch(&chainstate, &winning.blocks());
    let mut alone = winning.open();
    let summary = import(&mut alone);
    assert_eq!(summary.blocks_read, u64::from(manifest.block_count + 1));
    assert_eq!(tip_hex(&alone), chain.tip());
    assert_eq!(utxo_stats(&mut alone), stats);
    let no_reorganization =
        winning.events().iter().all(|event| !matches!(event, ChainEvent::Reorganization { .. }));
    assert!(no_reorganization);
    assert_eq!(alone.chain_tips().len(), 1);
}

/// The branches' tips: the reorged branch `valid-fork` when it was
/// connected (the tip until the main chain passed it), `valid-headers` if
/// never; the stale block `valid-headers` (it came after its rival of equal
/// work).
fn check_fork_tips(
    chainstate: &Chainstate,
    node: &Node,
    manifest: &Manifest,
    reorged_connected: bool,
) {
    let tips_seen = node.tips_seen();
    let tips = chainstate.chain_tips();
    assert_eq!(tips.len(), 3, "active, reorged and stale: {tips:?}");
    let last_of = |branch: &str| {
        let records = manifest.fork_blocks.iter().filter(|record| record.branch == branch);
        let last = records.max_by_key(|record| record.height).unwrap();
        (BlockHash::from_hex(&last.hash).unwrap(), last.height)
    };
    for (branch, ever_connected, length) in
        [("reorged", reorged_connected, REORG_BRANCH_BLOCKS), ("stale", false, 1)]
    {
        let (hash, height) = last_of(branch);
        assert_eq!(tips_seen.contains(&hash), ever_connected, "{branch} tip connected");
        let tip = tips.iter().find(|tip| tip.hash == hash).unwrap();
        let status = if ever_connected { "valid-fork" } else { "valid-headers" };
        assert_eq!((tip.status, tip.height, tip.branch_length), (status, height, length));
    }
}

#[test]
fn import_stopped_halfway_and_reopened_ends_like_a_one_shot_import() {
    let chain = clean();
    let half = chain.manifest.block_count / 2;
    for flush_before_close in [true, false] {
        let (chainstate, _) = stop_reopen_and_continue(chain, half, flush_before_close);
        let rest = u64::from(chain.manifest.block_count - half);
        if flush_before_close {
            assert_eq!(chainstate.statistics().blocks_connected, rest, "only the rest connected");
        }
    }
}

/// `-stopatheight` at the reorged branch's heights: the branch comes first
/// in the files, but the import stops on the main chain, as Core's reindex
/// does (it connects only the best chain, once every file is read).
#[test]
fn import_stopped_beside_the_reorged_branch_stops_on_the_main_chain_and_ends_like_a_one_shot_import(
) {
    let chain = with_forks();
    let plan = ForkPlan::for_blocks(chain.manifest.block_count).unwrap();
    for stop_height in [plan.reorg_base_height + 1, plan.reorg_base_height + 2] {
        let (_, stopped_at) = stop_reopen_and_continue(chain, stop_height, true);
        let on_a_branch =
            chain.manifest.fork_blocks.iter().any(|record| record.hash == stopped_at.to_hex());
        assert!(!on_a_branch, "stopped at {stop_height} on the main chain");
    }
}

/// A node that a peer left on the reorged branch (flushed there), reopened
/// and importing the files: the main chain passes the branch in them, so
/// the import moves off it once, to a one-shot import's tip and coins.
#[test]
fn a_node_left_on_the_reorged_branch_moves_off_it_when_it_imports_the_files() {
    let chain = with_forks();
    let (one_shot_tip, one_shot) = import_alone(chain);
    let reorged_tip = chain
        .manifest
        .fork_blocks
        .iter()
        .filter(|record| record.branch == "reorged")
        .max_by_key(|record| record.height)
        .unwrap();
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    for bytes in chain.blocks() {
        offer(&mut chainstate, &bytes);
        if tip_hex(&chainstate).0 == reorged_tip.hash {
            break;
        }
    }
    assert_eq!(tip_hex(&chainstate), (reorged_tip.hash.clone(), reorged_tip.height));
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    drop(chainstate);
    let mut chainstate = node.open();
    assert_eq!(tip_hex(&chainstate).0, reorged_tip.hash, "the flushed tip is kept");
    import(&mut chainstate);
    assert_eq!(tip_hex(&chainstate), one_shot_tip);
    assert_eq!(utxo_stats(&mut chainstate), one_shot);
    let reorganizations = reorganizations(&node);
    assert_eq!(reorganizations.len(), 1, "{reorganizations:?}");
    assert_eq!(reorganizations[0].0, REORG_BRANCH_BLOCKS);
}

/// Imports `chain` up to `stop_height`, closes (after a flush or as a
/// crash), reopens and imports the rest: the tip and UTXO set are a one-shot
/// import's. Returns the chainstate and the tip it stopped at.
fn stop_reopen_and_continue(
    chain: &Generated,
    stop_height: u32,
    flush: bool,
) -> (Chainstate, BlockHash) {
    let (one_shot_tip, one_shot) = import_alone(chain);
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    chainstate.set_stop_at_height(Some(stop_height));
    assert!(import(&mut chainstate).interrupted);
    let stopped_at = chainstate.tip().unwrap();
    assert_eq!(stopped_at.1, stop_height);
    if flush {
        chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    }
    drop(chainstate);
    let mut chainstate = node.open();
    if flush {
        assert_eq!(chainstate.tip().unwrap(), stopped_at, "the flushed tip is kept");
    }
    import(&mut chainstate);
    assert_eq!(tip_hex(&chainstate), one_shot_tip);
    assert_eq!(utxo_stats(&mut chainstate), one_shot, "stopped at {stop_height}, flush {flush}");
    (chainstate, stopped_at.0)
}

/// What offering the invalid blocks again logs, as Core's `AcceptBlock`
/// would: a block marked invalid without its data being stored is refused as
/// `duplicate-invalid` (Core's `AcceptBlockHeader` finds the failed header)
/// and nothing is marked again; a block whose data is stored (it failed to
/// connect) is skipped like any stored block (`LoadExternalBlockFile`); the
/// others were never remembered and fail again for their own reason.
fn expected_reoffer_reason(
    chainstate: &Chainstate,
    hash: &BlockHash,
    reason: &str,
) -> Option<String> {
    let Some(id) = chainstate.index().get(hash) else { return Some(reason.to_string()) };
    let entry = chainstate.index().entry(id);
    match (entry.status.is_failed(), entry.block_position) {
        (false, _) => Some(reason.to_string()),
        (true, None) => Some("duplicate-invalid".to_string()),
        (true, Some(_)) => None,
    }
}

#[test]
fn invalid_blocks_offered_again_are_refused_as_core_does_across_a_restart() {
    let chain = with_invalid_blocks();
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    import(&mut chainstate);
    let tips = chainstate.chain_tips();
    let blocks_invalid = chainstate.statistics().blocks_invalid;
    for reopen in [false, true] {
        if reopen {
            chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
            drop(chainstate);
            chainstate = node.open();
            assert_eq!(chainstate.chain_tips(), tips, "failures are remembered");
        }
        let events_before = node.events().len();
        import(&mut chainstate);
        let events = invalid_events(&node.events()[events_before..]);
        assert!(events.iter().all(|event| !event.marked), "nothing is marked again");
        let mut duplicates = 0;
        for record in &chain.manifest.invalid_blocks {
            let hash = BlockHash::from_hex(&record.hash).unwrap();
            let expected = expected_reoffer_reason(&chainstate, &hash, &record.reject_reason);
            let reasons: Vec<&str> =
                events.iter().filter(|e| e.hash == hash).map(|e| e.reason.as_str()).collect();
            assert_eq!(reasons, Vec::from_iter(expected.as_deref()), "{}", record.class);
            duplicates += usize::from(expected.as_deref() == Some("duplicate-invalid"));
        }
        assert_eq!(
            duplicates, 4,
            "bad-cb-height, bad-blk-weight, bad-blk-sigops, bad-txns-nonfinal"
        );
        assert_eq!(chainstate.chain_tips(), tips);
        assert_eq!(tip_hex(&chainstate), chain.tip());
        let marked_here = if reopen { 0 } else { blocks_invalid };
        assert_eq!(chainstate.statistics().blocks_invalid, marked_here);
    }
}

/// Writes `blocks` as a `-loadblock` file: framed, not obfuscated.
fn write_external_file(path: &Path, blocks: &[&[u8]]) {
    let magic = ibex_primitives::Params::regtest().message_start;
    let mut data = Vec::new();
    for block in blocks {
        ibex_blockstore::encode_record(&mut data, magic, block);
    }
    std::fs::write(path, data).unwrap();
}

#[test]
fn loadblock_files_out_of_order_reach_the_same_tip_and_utxo_set() {
    let chain = with_forks();
    let (in_order_tip, in_order) = import_alone(chain);
    let blocks = chain.blocks();
    let reversed: Vec<&[u8]> = blocks.iter().rev().map(Vec::as_slice).collect();
    // Pairs swapped: every other block arrives before its parent.
    let swapped: Vec<&[u8]> =
        blocks.chunks(2).flat_map(|pair| pair.iter().rev()).map(Vec::as_slice).collect();
    for order in [reversed, swapped] {
        let node = Node::new();
        let file = node.blocks().with_file_name("bootstrap.dat");
        write_external_file(&file, &order);
        let mut chainstate = node.open();
        let source = ImportSource::ExternalFile(file);
        let summary = import_blocks(&mut chainstate, &source, &AtomicBool::new(false)).unwrap();
        assert_eq!(summary.blocks_accepted, chain.manifest.records);
        assert_eq!(summary.orphans_left, 0);
        assert_eq!(tip_hex(&chainstate), in_order_tip);
        assert_eq!(utxo_stats(&mut chainstate), in_order);
        assert!(invalid_events(&node.events()).is_empty());
    }
}

/// The import's plan (`ChainEvent::ImportPlanned`), sent once its headers
/// are indexed: the best header chain's block sizes from the records, the
/// fork blocks left out; the tip updates carry the best header's height;
/// an import continued after a stop plans only the blocks above the tip.
#[test]
fn the_import_plans_the_best_header_chains_bytes() {
    let chain = with_forks();
    let manifest = &chain.manifest;
    let plans = |node: &Node| -> Vec<ibex_chainstate::ImportPlan> {
        let events = node.events();
        let plans = events.iter().filter_map(|event| match event {
            ChainEvent::ImportPlanned(plan) => Some(plan.clone()),
            _ => None,
        });
        plans.collect()
    };
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    let half = manifest.block_count / 2;
    chainstate.set_stop_at_height(Some(half));
    import(&mut chainstate);
    let first = plans(&node);
    assert_eq!(first.len(), 1, "one plan per import");
    let plan = &first[0];
    assert_eq!(plan.best_header_height, manifest.block_count);
    assert!(plan.first_height <= 1, "from genesis or the block after it");
    let above_genesis = &plan.block_bytes[(1 - plan.first_height) as usize..];
    assert_eq!(above_genesis.len() as u32, manifest.block_count);
    let bytes: u64 = above_genesis.iter().map(|&bytes| u64::from(bytes)).sum();
    assert_eq!(bytes, manifest.total_bytes, "the best chain's blocks, forks left out");
    assert!(above_genesis.iter().all(|&bytes| bytes > 80), "every block is in the files");
    for event in node.events() {
        if let ChainEvent::TipUpdated(update) = event {
            assert_eq!(update.best_header_height, manifest.block_count);
        }
    }
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    drop(chainstate);
    let mut chainstate = node.open();
    import(&mut chainstate);
    let second = plans(&node);
    assert_eq!(second.len(), 2);
    let rest = &second[1];
    assert_eq!(rest.first_height, half + 1, "only the blocks above the tip");
    let skip = (half + 1 - plan.first_height) as usize;
    assert_eq!(rest.block_bytes, plan.block_bytes[skip..]);
    assert_eq!(tip_hex(&chainstate), chain.tip());
}
