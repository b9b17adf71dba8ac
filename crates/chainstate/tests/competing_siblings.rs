//! Chains that end with competing children of one parent: k
//! invalid siblings (k = 1 to 6: script failures, a coinbase paying too
//! much, a missing input, a double spend) and one valid sibling, first,
//! in the middle or last in file order, with or without a valid child on
//! top. Whatever the order and however the blocks arrive (`-reindex`,
//! `-loadblock` in another order, one by one as from peers, an import
//! stopped mid-way and resumed, a node restarted with untried blocks in
//! its index), the node must end at the valid sibling (or its child) with
//! the UTXO set of the valid chain imported alone, as Core's
//! `ActivateBestChain` does by trying the next candidate after each
//! failure, and [`Chainstate::check_best_candidate`] must say so.
//!
//! The trap: a pipeline that prunes the candidates against a tip whose
//! scripts are still being checked, with two script-failing siblings
//! first, drops the valid one and ends the import on the parent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "generated_chains/support.rs"]
mod support;

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;

use ibex_chainstate::{
    import_blocks, BestCandidateCheck, CandidateLeft, ChainEvent, Chainstate, FlushMode,
    FlushReason, ImportSource, PreparedBlock,
};
use ibex_generator::invalid::InvalidClass;
use ibex_generator::siblings::{SiblingTail, MIXED_SIBLING_CLASSES};
use ibex_primitives::txoutset::TxOutSetStats;
use ibex_primitives::{BlockBuffers, BlockHash};

use support::{import, import_alone, invalid_events, offer, tip_hex, utxo_stats, Generated, Node};

/// Blocks of the valid chain (the tail needs 122).
const CHAIN_BLOCKS: u32 = 130;

/// The invalid siblings, in file order: the first k are used.
const SIBLING_CLASSES: [InvalidClass; 6] = MIXED_SIBLING_CLASSES;

fn with_tail(invalid_count: usize, valid_position: usize, valid_child: bool) -> Generated {
    Generated::new(|options| {
        options.blocks = Some(CHAIN_BLOCKS);
        options.siblings = Some(SiblingTail {
            invalid: SIBLING_CLASSES[..invalid_count].to_vec(),
            valid_position,
            valid_child,
        });
    })
}

/// The valid chain alone: its tip and UTXO statistics.
fn valid_alone() -> &'static ((String, u32), TxOutSetStats) {
    static ALONE: OnceLock<((String, u32), TxOutSetStats)> = OnceLock::new();
    ALONE.get_or_init(|| {
        import_alone(&Generated::new(|options| options.blocks = Some(CHAIN_BLOCKS)))
    })
}

fn hex_set(hashes: impl IntoIterator<Item = BlockHash>) -> HashSet<String> {
    hashes.into_iter().map(|hash| hash.to_hex()).collect()
}

/// The invalid siblings that come before the valid one in file order:
/// those a node following the files must try (and find invalid) first.
fn tried_before_valid(chain: &Generated) -> HashSet<String> {
    let position = chain.manifest.options.siblings.as_ref().unwrap().valid_position;
    chain.manifest.invalid_blocks[..position].iter().map(|record| record.hash.clone()).collect()
}

/// Ends at the valid chain's tip with its UTXO set, at the fixed point.
fn assert_at_valid_tip(chainstate: &mut Chainstate, context: &str) {
    let (tip, stats) = valid_alone();
    assert_eq!(&tip_hex(chainstate), tip, "{context}: tip");
    let check = chainstate.check_best_candidate();
    assert!(matches!(check, BestCandidateCheck::Reached { .. }), "{context}: {check}");
    assert_eq!(&utxo_stats(chainstate), stats, "{context}: UTXO set");
}

/// Reindexes `chain`'s files; the node and chainstate after it.
fn reindexed(chain: &Generated) -> (Node, Chainstate) {
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    let summary = import(&mut chainstate);
    assert_eq!(summary.blocks_read, chain.manifest.records);
    (node, chainstate)
}

#[test]
fn reindex_ends_at_the_valid_sibling_after_one_to_six_invalid_ones() {
    for invalid_count in 1..=SIBLING_CLASSES.len() {
        let chain = with_tail(invalid_count, invalid_count, false);
        let (node, mut chainstate) = reindexed(&chain);
        let context = format!("{invalid_count} invalid siblings first");
        assert_at_valid_tip(&mut chainstate, &context);
        let found = invalid_events(&node.events());
        let found_hashes = hex_set(found.iter().map(|event| event.hash));
        assert_eq!(found_hashes, tried_before_valid(&chain), "{context}: blocks found invalid");
        for event in &found {
            let record = chain
                .manifest
                .invalid_blocks
                .iter()
                .find(|record| record.hash == event.hash.to_hex())
                .unwrap();
            assert_eq!(event.reason, record.reject_reason, "{context}: {}", record.class);
            assert!(event.marked, "{context}: {} not marked", record.class);
        }
    }
}

#[test]
fn reindex_ends_at_the_valid_sibling_first_in_the_middle_and_under_a_child() {
    let shapes = [(3, 0, false), (4, 2, false), (3, 3, true), (4, 2, true), (2, 0, true)];
    for (invalid_count, valid_position, valid_child) in shapes {
        let chain = with_tail(invalid_count, valid_position, valid_child);
        let (node, mut chainstate) = reindexed(&chain);
        let context =
            format!("{invalid_count} invalid, valid at {valid_position}, child {valid_child}");
        assert_at_valid_tip(&mut chainstate, &context);
        let found = hex_set(invalid_events(&node.events()).iter().map(|event| event.hash));
        if valid_child {
            // The child has more work than every sibling: a sibling still
            // pending when it arrives is settled (and found invalid), the
            // rest are never tried.
            assert!(found.is_subset(&tried_before_valid(&chain)), "{context}: {found:?}");
        } else {
            assert_eq!(found, tried_before_valid(&chain), "{context}: blocks found invalid");
        }
    }
}

/// Writes `blocks` as a `-loadblock` file: framed, not obfuscated.
fn write_external_file(path: &Path, blocks: &[Vec<u8>]) {
    let magic = ibex_primitives::Params::regtest().message_start;
    let mut data = Vec::new();
    for block in blocks {
        ibex_blockstore::encode_record(&mut data, magic, block);
    }
    std::fs::write(path, data).unwrap();
}

/// The chain's blocks with the tail (every block after the siblings'
/// parent) in another order.
fn reordered(chain: &Generated, reorder: impl Fn(&mut Vec<Vec<u8>>)) -> Vec<Vec<u8>> {
    let mut blocks = chain.blocks();
    let tail_length = chain.manifest.invalid_blocks.len() + 1 + usize::from(has_child(chain));
    let mut tail = blocks.split_off(blocks.len() - tail_length);
    reorder(&mut tail);
    blocks.extend(tail);
    blocks
}

fn has_child(chain: &Generated) -> bool {
    chain.manifest.options.siblings.as_ref().unwrap().valid_child
}

/// A way to reorder the tail's blocks.
type Reorder = fn(&mut Vec<Vec<u8>>);

#[test]
fn loadblock_in_other_orders_ends_at_the_valid_sibling() {
    let orders: [(&str, Reorder); 3] = [
        ("reversed", |tail| tail.reverse()),
        ("rotated", |tail| tail.rotate_left(1)),
        ("swapped ends", |tail| {
            let last = tail.len() - 1;
            tail.swap(0, last);
        }),
    ];
    for (invalid_count, valid_position, valid_child) in [(2, 2, false), (4, 1, true)] {
        let chain = with_tail(invalid_count, valid_position, valid_child);
        for (name, reorder) in orders {
            let context = format!("{invalid_count} invalid, valid at {valid_position}, {name}");
            let node = Node::new();
            let file = node.blocks().with_file_name("bootstrap.dat");
            write_external_file(&file, &reordered(&chain, reorder));
            let mut chainstate = node.open();
            let source = ImportSource::ExternalFile(file);
            let summary = import_blocks(&mut chainstate, &source, &AtomicBool::new(false)).unwrap();
            assert_eq!(summary.orphans_left, 0, "{context}");
            assert_at_valid_tip(&mut chainstate, &context);
        }
    }
}

#[test]
fn blocks_offered_one_by_one_end_at_the_valid_sibling() {
    for (invalid_count, valid_position, valid_child) in [(2, 2, false), (6, 6, false), (3, 1, true)]
    {
        let chain = with_tail(invalid_count, valid_position, valid_child);
        let context = format!("{invalid_count} invalid, valid at {valid_position}, offered");
        let node = Node::new();
        let mut chainstate = node.open();
        let mut buffers = BlockBuffers::default();
        for bytes in chain.blocks() {
            let params = chainstate.params().clone();
            let block = PreparedBlock::prepare(bytes, None, &params, &mut buffers).unwrap();
            // Invalid siblings may be refused at once; the rest connect.
            chainstate.accept_block(block).unwrap();
            chainstate.advance_best_chain().unwrap();
        }
        chainstate.activate_best_chain().unwrap();
        assert_at_valid_tip(&mut chainstate, &context);
    }
}

#[test]
fn an_import_stopped_at_the_first_failure_resumes_to_the_valid_sibling() {
    // A missing input fails while the files are still read, so the stop
    // lands mid-way; the two script failures after it are found at the
    // end of the resumed import.
    let chain = Generated::new(|options| {
        options.blocks = Some(CHAIN_BLOCKS);
        options.siblings = Some(SiblingTail {
            invalid: vec![
                InvalidClass::MissingCoin,
                InvalidClass::InvalidSignature,
                InvalidClass::InvalidSignature,
            ],
            valid_position: 3,
            valid_child: false,
        });
    });
    let node = Node::with_chain(&chain);
    let first_invalid = chain.manifest.invalid_blocks[0].hash.clone();
    let shutdown = Arc::new(AtomicBool::new(false));
    let stop = shutdown.clone();
    let mut chainstate = node.open_watching(move |event| {
        if matches!(event, ChainEvent::BlockInvalid { hash, .. } if hash.to_hex() == first_invalid)
        {
            stop.store(true, Ordering::Relaxed);
        }
    });
    let summary = import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &shutdown).unwrap();
    assert!(summary.interrupted);
    assert!(summary.blocks_read < chain.manifest.records, "read to the end before stopping");
    assert_eq!(tip_hex(&chainstate).1, CHAIN_BLOCKS - 1, "the tip is the siblings' parent");
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    drop(chainstate);
    // The restart continues the reindex, as ibexd does.
    let mut chainstate = node.open();
    import(&mut chainstate);
    assert_at_valid_tip(&mut chainstate, "stopped at the first failure, resumed");
    let found = hex_set(invalid_events(&node.events()).iter().map(|event| event.hash));
    assert_eq!(found, tried_before_valid(&chain));
}

#[test]
fn a_restart_with_untried_siblings_in_the_index_reaches_the_valid_one() {
    // As an older build left it: every sibling indexed with its data, the
    // tip on their parent, the valid one never tried.
    for (invalid_count, valid_position, valid_child) in [(2, 2, false), (3, 1, true)] {
        let chain = with_tail(invalid_count, valid_position, valid_child);
        let context = format!("{invalid_count} invalid, valid at {valid_position}, restart");
        let node = Node::new();
        let blocks = chain.blocks();
        let tail_length = chain.manifest.invalid_blocks.len() + 1 + usize::from(valid_child);
        let (main, tail) = blocks.split_at(blocks.len() - tail_length);
        {
            let mut chainstate = node.open();
            for bytes in main {
                offer(&mut chainstate, bytes);
            }
            chainstate.activate_best_chain().unwrap();
            let mut buffers = BlockBuffers::default();
            for bytes in tail {
                let params = chainstate.params().clone();
                let block =
                    PreparedBlock::prepare(bytes.clone(), None, &params, &mut buffers).unwrap();
                chainstate.accept_block(block).unwrap();
            }
            let check = chainstate.check_best_candidate();
            assert!(
                matches!(check, BestCandidateCheck::Left { reason: CandidateLeft::NotTried, .. }),
                "{context}: before activation {check}"
            );
            chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
        }
        let mut chainstate = node.open();
        let (check, restored) = chainstate.activate_to_fixed_point().unwrap();
        assert!(matches!(check, BestCandidateCheck::Reached { .. }), "{context}: {check}");
        assert_eq!(restored, 0, "{context}: the candidates were complete after open");
        assert_at_valid_tip(&mut chainstate, &context);
    }
}
