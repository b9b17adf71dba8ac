//! Reading the engine from other threads while it validates: published
//! snapshots and hash lists follow the settled tip, through reorganisations;
//! settled reads run between blocks against a settled tip (that each sees
//! one state, tip, index and coins agreeing, is checked inside the crate,
//! `engine::read_api`'s `settled_state_tests`); the query queue is bounded,
//! and a query nobody answers times out or reports the engine stopped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "generated_chains/support.rs"]
mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ibex_chainstate::{BlockStatus, IndexedBlock, ReadError, READ_QUERIES_WAITING_MAX};

use support::{import, with_forks, Node};

const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// What a settled read of the tip found wrong about it, if anything.
fn unsettled_tip(tip: &IndexedBlock) -> Option<String> {
    let height = tip.height;
    // Settled: the tip's scripts were checked and its undo data written.
    if !tip.status.is_valid(BlockStatus::VALID_SCRIPTS) {
        return Some(format!("tip {height} not settled"));
    }
    if height > 0 && tip.undo_position.is_none() {
        return Some(format!("tip {height} has no undo data"));
    }
    if !tip.in_active_chain || tip.active_tip_height != Some(height) {
        return Some(format!("tip {height} is not the active chain's tip"));
    }
    None
}

#[test]
fn queries_during_an_import_with_reorganisations_see_one_settled_state() {
    let chain = with_forks();
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    let reader = chainstate.reader();
    let stop = Arc::new(AtomicBool::new(false));
    let asker = {
        let (reader, stop) = (reader.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut answered = 0u32;
            let mut heights = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match reader.settled(ANSWER_TIMEOUT).tip() {
                    Ok(tip) => {
                        if let Some(problem) = tip.as_ref().and_then(unsettled_tip) {
                            panic!("{problem}");
                        }
                        answered += 1;
                        heights.extend(tip.map(|tip| tip.height));
                    }
                    Err(ReadError::Stopped) => break,
                    Err(error) => panic!("query failed: {error}"),
                }
            }
            (answered, heights)
        })
    };
    let summary = import(&mut chainstate);
    stop.store(true, Ordering::Relaxed);
    // The asker's last query is answered here, after the import.
    let mut waited = 0;
    while !asker.is_finished() && waited < 600 {
        chainstate.wait_and_serve_reads(Duration::from_millis(100)).unwrap();
        waited += 1;
    }
    let (answered, heights) = asker.join().unwrap();
    assert!(summary.blocks_accepted > 0);
    assert!(answered >= 2, "only {answered} queries answered during the import");
    assert!(heights.windows(2).any(|pair| pair[0] != pair[1]), "no query between two tips");
    // After the import: the snapshot and every published hash.
    let (tip_hash, tip_height) = chainstate.tip().unwrap();
    assert_eq!((tip_hash.to_hex(), tip_height), chain.tip(), "imported tip");
    let snapshot = reader.snapshot();
    let tip = snapshot.tip.as_ref().unwrap();
    assert_eq!((tip.hash, tip.height), (tip_hash, tip_height));
    assert_eq!(snapshot.best_header.map(|(hash, _)| hash), Some(tip_hash));
    assert_eq!(snapshot.index_entries, chainstate.index().len());
    let (_, hashes) = reader.snapshot_with_hashes(0, usize::MAX);
    assert_eq!(hashes.len() as u32, tip_height + 1);
    for (height, hash) in hashes.iter().enumerate() {
        let id = chainstate.chain().at(height as u32).unwrap();
        assert_eq!(*hash, chainstate.index().entry(id).hash, "height {height}");
    }
    // Raw block bytes read off the engine's thread: the tip's are its
    // stored bytes; asked for another hash at that position, an error.
    let tip_id = chainstate.chain().tip().unwrap();
    let position = chainstate.index().entry(tip_id).block_position.unwrap();
    let bytes = reader.read_stored_block(position, &tip_hash).unwrap();
    assert_eq!(bytes, chainstate.read_block(tip_id).unwrap().bytes());
    let genesis = hashes[0];
    assert!(matches!(
        reader.read_stored_block(position, &genesis),
        Err(ibex_chainstate::ChainstateError::WrongBlockInFile { expected, found })
            if expected == genesis && found == tip_hash
    ));
}

#[test]
fn the_query_queue_is_bounded_and_unanswered_queries_end() {
    let node = Node::new();
    let mut chainstate = node.open();
    let reader = chainstate.reader();
    // Queries left waiting when their askers gave up still hold their
    // places: the queue fills and then refuses at once.
    let any_block = ibex_primitives::BlockHash::ZERO;
    for _ in 0..READ_QUERIES_WAITING_MAX {
        let answer = reader.settled(Duration::from_millis(1)).block(&any_block);
        assert_eq!(answer, Err(ReadError::TimedOut { timeout_ms: 1 }));
    }
    assert_eq!(reader.settled(Duration::from_secs(5)).tip(), Err(ReadError::Busy));
    // Serving empties it, and an asker that waits gets the state it reads.
    assert!(chainstate.serve_reads().unwrap());
    let asker = {
        let reader = reader.clone();
        std::thread::spawn(move || reader.settled(ANSWER_TIMEOUT).tip())
    };
    while !asker.is_finished() {
        chainstate.wait_and_serve_reads(Duration::from_millis(50)).unwrap();
    }
    let answer = asker.join().unwrap().unwrap().map(|tip| (tip.hash, tip.height));
    assert_eq!(answer, chainstate.tip());
    // Nobody serving: a timeout, then a stopped engine.
    assert_eq!(
        reader.unsettled(Duration::from_millis(50)).tip(),
        Err(ReadError::TimedOut { timeout_ms: 50 })
    );
    drop(chainstate);
    assert_eq!(reader.settled(Duration::from_millis(50)).tip(), Err(ReadError::Stopped));
    // The snapshot outlives the engine.
    assert!(reader.snapshot().sequence >= 1);
}
