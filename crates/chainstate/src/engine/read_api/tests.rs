//! The read API's answers on a generated chain: locators, headers after a
//! locator, ancestry, and undo data read off the engine's thread that must
//! belong to its block.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use ibex_primitives::BlockHash;

use super::IndexedBlock;
use crate::engine::{ChainReader, Chainstate};
use crate::error::ChainstateError;
use crate::test_chain::{accept, generated_chain_and_chainstate};

const TIMEOUT: Duration = Duration::from_secs(30);
/// Blocks above genesis: enough for a locator's steps to double.
const CHAIN_BLOCKS: u32 = 40;

/// A chain of genesis and [`CHAIN_BLOCKS`] blocks, all connected.
fn connected_chain(root: &std::path::Path) -> Chainstate {
    let (blocks, mut chainstate) = generated_chain_and_chainstate(root, 5, CHAIN_BLOCKS);
    for bytes in &blocks {
        accept(&mut chainstate, bytes);
    }
    chainstate.activate_best_chain().unwrap();
    assert_eq!(chainstate.chain().height(), Some(CHAIN_BLOCKS));
    chainstate
}

/// Runs `ask` on another thread with a reader, serving the engine's reads
/// until it has its answer.
fn ask<R: Send + 'static>(
    chainstate: &mut Chainstate,
    ask: impl FnOnce(ChainReader) -> R + Send + 'static,
) -> R {
    let reader = chainstate.reader();
    let asker = std::thread::spawn(move || ask(reader));
    while !asker.is_finished() {
        chainstate.wait_and_serve_reads(Duration::from_millis(1)).unwrap();
    }
    asker.join().unwrap()
}

fn hash_at(chainstate: &Chainstate, height: u32) -> BlockHash {
    chainstate.index().entry(chainstate.chain().at(height).unwrap()).hash
}

fn header_heights(chainstate: &Chainstate, headers: &[ibex_primitives::Header]) -> Vec<u32> {
    let height_of = |header: &ibex_primitives::Header| {
        let id = chainstate.index().get(&header.block_hash()).unwrap();
        chainstate.index().entry(id).height
    };
    headers.iter().map(height_of).collect()
}

#[test]
fn a_locator_takes_ten_blocks_back_then_doubles_its_steps_to_genesis() {
    let root = tempfile::tempdir().unwrap();
    let mut chainstate = connected_chain(root.path());
    let tip = hash_at(&chainstate, CHAIN_BLOCKS);
    let middle = hash_at(&chainstate, 5);
    let (locator, short, unknown) = ask(&mut chainstate, move |reader| {
        let view = reader.unsettled(TIMEOUT);
        let unknown = view.locator(&BlockHash([7; 32])).unwrap();
        (view.locator(&tip).unwrap(), view.locator(&middle).unwrap(), unknown)
    });
    // 40 down to 30 one by one, then steps of 1, 2, 4, 8, then genesis.
    let mut heights: Vec<u32> = (30..=CHAIN_BLOCKS).rev().collect();
    heights.extend([29, 27, 23, 15, 0]);
    let expected: Vec<BlockHash> = heights.iter().map(|h| hash_at(&chainstate, *h)).collect();
    assert_eq!(locator, expected);
    let expected: Vec<BlockHash> = (0..=5).rev().map(|h| hash_at(&chainstate, h)).collect();
    assert_eq!(short, expected);
    assert!(unknown.is_empty());
}

#[test]
fn headers_after_a_locator_start_where_it_meets_the_active_chain() {
    let root = tempfile::tempdir().unwrap();
    let mut chainstate = connected_chain(root.path());
    let at_ten = hash_at(&chainstate, 10);
    let at_thirteen = hash_at(&chainstate, 13);
    let at_seven = hash_at(&chainstate, 7);
    let tip = hash_at(&chainstate, CHAIN_BLOCKS);
    let answers = ask(&mut chainstate, move |reader| {
        let view = reader.settled(TIMEOUT);
        let locator = view.locator(&at_ten).unwrap();
        let tip_locator = view.locator(&tip).unwrap();
        let stranger = [BlockHash([9; 32]), BlockHash([8; 32])];
        [
            view.headers_after_locator(&locator, &BlockHash::ZERO, 2000).unwrap(),
            view.headers_after_locator(&locator, &BlockHash::ZERO, 5).unwrap(),
            view.headers_after_locator(&locator, &at_thirteen, 2000).unwrap(),
            view.headers_after_locator(&stranger, &BlockHash::ZERO, 3).unwrap(),
            view.headers_after_locator(&[], &at_seven, 2000).unwrap(),
            view.headers_after_locator(&[], &BlockHash([9; 32]), 2000).unwrap(),
            view.headers_after_locator(&tip_locator, &BlockHash::ZERO, 2000).unwrap(),
        ]
    });
    let heights: Vec<Option<Vec<u32>>> = answers
        .iter()
        .map(|answer| answer.as_ref().map(|headers| header_heights(&chainstate, headers)))
        .collect();
    assert_eq!(heights[0], Some((11..=CHAIN_BLOCKS).collect()), "to the tip");
    assert_eq!(heights[1], Some((11..=15).collect()), "at most count_max");
    assert_eq!(heights[2], Some((11..=13).collect()), "up to the stop block");
    assert_eq!(heights[3], Some((1..=3).collect()), "an unknown locator meets at genesis");
    assert_eq!(heights[4], Some(vec![7]), "an empty locator: the stop block alone");
    assert_eq!(heights[5], None, "an empty locator with an unknown stop block: nothing");
    assert_eq!(heights[6], Some(Vec::new()), "the peer has our tip");
}

#[test]
fn entries_ancestors_and_ancestry_agree_with_the_index() {
    let root = tempfile::tempdir().unwrap();
    let mut chainstate = connected_chain(root.path());
    let tip = hash_at(&chainstate, CHAIN_BLOCKS);
    let (tip_block, ancestor, ancestry, active, headers, too_many) =
        ask(&mut chainstate, move |reader| {
            let view = reader.settled(TIMEOUT);
            (
                view.tip().unwrap().unwrap(),
                view.ancestor(&tip, 12).unwrap().unwrap(),
                view.ancestry(None).unwrap().unwrap(),
                view.active_blocks(&tip, 5).unwrap(),
                view.active_headers(CHAIN_BLOCKS - 2, 3).unwrap(),
                view.active_headers(CHAIN_BLOCKS - 3, 3).unwrap(),
            )
        });
    assert_eq!((tip_block.hash, tip_block.height), (tip, CHAIN_BLOCKS));
    assert!(tip_block.in_active_chain && tip_block.next_in_active_chain.is_none());
    assert_eq!(tip_block.active_tip_height, Some(CHAIN_BLOCKS));
    assert_eq!(ancestor.hash, hash_at(&chainstate, 12));
    assert_eq!(ancestor.next_in_active_chain, Some(hash_at(&chainstate, 13)));
    assert_eq!(active.len(), 1, "the tip is the last active block");
    assert_eq!(
        headers.map(|headers| header_heights(&chainstate, &headers)),
        Some(vec![38, 39, 40])
    );
    assert_eq!(too_many, None, "four headers are more than three");
    assert_eq!(ancestry.block, tip_block);
    for height in 0..=CHAIN_BLOCKS {
        let id = chainstate.chain().at(height).unwrap();
        let entry = chainstate.index().entry(id);
        assert_eq!(ancestry.version(height), entry.header.version);
        assert_eq!(ancestry.median_time_past(height), chainstate.index().median_time_past(id));
    }
    assert_eq!(ancestry.median_time_past(CHAIN_BLOCKS + 1), 0);
}

#[test]
fn undo_data_read_off_the_engine_thread_must_belong_to_its_block() {
    let root = tempfile::tempdir().unwrap();
    let mut chainstate = connected_chain(root.path());
    let (third, fourth) = (hash_at(&chainstate, 3), hash_at(&chainstate, 4));
    let blocks = ask(&mut chainstate, move |reader| {
        let view = reader.settled(TIMEOUT);
        let third = view.block(&third).unwrap().unwrap();
        let fourth = view.block(&fourth).unwrap().unwrap();
        let own = reader.read_stored_undo(&third);
        // The fourth block's undo data named as the third's.
        let other = IndexedBlock { undo_position: fourth.undo_position, ..third.clone() };
        let wrong_count = IndexedBlock { transaction_count: third.transaction_count + 1, ..third };
        (own, reader.read_stored_undo(&other), reader.read_stored_undo(&wrong_count))
    });
    let (own, other, wrong_count) = blocks;
    let id = chainstate.chain().at(3).unwrap();
    assert_eq!(own.unwrap(), chainstate.read_undo(id).unwrap());
    assert!(
        matches!(other, Err(ChainstateError::BlockStore { .. })),
        "another block's undo data passed its checksum: {other:?}"
    );
    assert!(matches!(wrong_count, Err(ChainstateError::UndoMismatch { hash }) if hash == third));
}
