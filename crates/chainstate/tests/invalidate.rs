//! `invalidateblock` and `reconsiderblock` in the engine, on the
//! generator's chain with forks: invalidating a block in the middle of the
//! active chain moves the tip to its parent, or to a competing branch with
//! more work, with the UTXO set of that chain imported alone; reconsidering
//! brings the original tip and UTXO set back; the marks survive a reopen
//! and a crash right after the call; unknown blocks and the genesis block
//! are refused; the engine service takes both commands between blocks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "generated_chains/support.rs"]
mod support;

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{sync_channel, TrySendError};
use std::time::Duration;

use ibex_chainstate::{
    engine_service, BestCandidateCheck, BlockStatus, ChainControlError, ChainEvent, Chainstate,
    EngineCommand, FlushMode, FlushReason, ServiceEnd,
};
use ibex_generator::forks::ForkPlan;
use ibex_primitives::txoutset::TxOutSetStats;
use ibex_primitives::{BlockHash, BlockView};

use support::{import, offer, tip_hex, utxo_stats, with_forks, Generated, Node};

/// The chain imported whole and flushed: the node, its chainstate, the
/// tip and UTXO statistics.
fn imported(chain: &Generated) -> (Node, Chainstate, (String, u32), TxOutSetStats) {
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    import(&mut chainstate);
    assert_eq!(tip_hex(&chainstate), chain.tip());
    let stats = utxo_stats(&mut chainstate);
    (node, chainstate, chain.tip(), stats)
}

/// The active chain's block hash at `height`.
fn main_hash(chainstate: &Chainstate, height: u32) -> BlockHash {
    chainstate.index().entry(chainstate.chain().at(height).unwrap()).hash
}

/// The active chain's hashes from genesis to `height`.
fn main_hashes_to(chainstate: &Chainstate, height: u32) -> HashSet<BlockHash> {
    (0..=height).map(|at| main_hash(chainstate, at)).collect()
}

/// The hashes of the fork blocks of `branch` (`reorged` or `stale`).
fn branch_hashes(chain: &Generated, branch: &str) -> Vec<(BlockHash, u32)> {
    let records = chain.manifest.fork_blocks.iter().filter(|record| record.branch == branch);
    records.map(|record| (BlockHash::from_hex(&record.hash).unwrap(), record.height)).collect()
}

/// Tip and UTXO statistics of a fresh node offered only the blocks in
/// `keep`, in file order: the reference for a chain after an invalidation.
fn alone(chain: &Generated, keep: &HashSet<BlockHash>) -> ((String, u32), TxOutSetStats) {
    let node = Node::new();
    let mut chainstate = node.open();
    chainstate.ensure_genesis().unwrap();
    for bytes in chain.blocks() {
        let hash = BlockView::parse(&bytes).unwrap().header().block_hash();
        if keep.contains(&hash) && hash != chainstate.params().genesis_hash {
            offer(&mut chainstate, &bytes);
        }
    }
    chainstate.activate_best_chain().unwrap();
    (tip_hex(&chainstate), utxo_stats(&mut chainstate))
}

fn status_of(chainstate: &Chainstate, hash: &BlockHash) -> BlockStatus {
    chainstate.index().entry(chainstate.index().get(hash).unwrap()).status
}

fn tip_status(chainstate: &Chainstate, hash: &BlockHash) -> &'static str {
    let tips = chainstate.chain_tips();
    tips.iter().find(|tip| tip.hash == *hash).map_or("not a tip", |tip| tip.status)
}

#[test]
fn invalidating_a_block_in_the_middle_moves_the_tip_to_its_parent_and_reconsidering_back() {
    let chain = with_forks();
    let (node, mut chainstate, tip, stats) = imported(chain);
    let plan = ForkPlan::for_blocks(chain.manifest.block_count).unwrap();
    // Above the reorged branch and below the stale block: the parent has
    // more work than any other branch.
    let height = plan.stale_height - 8;
    assert!(height > plan.reorg_base_height + 3);
    let middle = main_hash(&chainstate, height);
    let tip_hash = BlockHash::from_hex(&tip.0).unwrap();

    chainstate.invalidate_block(&middle).unwrap();
    let expected = alone(chain, &main_hashes_to(&chainstate, height - 1));
    assert_eq!(tip_hex(&chainstate), expected.0);
    assert_eq!(expected.0 .1, height - 1);
    assert_eq!(utxo_stats(&mut chainstate), expected.1, "UTXO set of the chain to the parent");
    assert!(status_of(&chainstate, &middle).has(BlockStatus::FAILED_VALID));
    assert!(status_of(&chainstate, &tip_hash).has(BlockStatus::FAILED_CHILD));
    let (stale, _) = branch_hashes(chain, "stale")[0];
    assert!(status_of(&chainstate, &stale).is_failed(), "the stale block descends from it");
    assert_eq!(
        (tip_status(&chainstate, &tip_hash), tip_status(&chainstate, &stale)),
        ("invalid", "invalid")
    );
    assert_eq!(chainstate.best_header(), Some(main_hash(&chainstate, height - 1)));
    let disconnected = node.events().iter().find_map(|event| match event {
        ChainEvent::BlockInvalidated { hash, disconnected_count, .. } if *hash == middle => {
            Some(*disconnected_count)
        }
        _ => None,
    });
    assert_eq!(disconnected, Some(chain.manifest.block_count - height + 1));
    assert!(matches!(chainstate.check_best_candidate(), BestCandidateCheck::Reached { .. }));

    // A descendant's reconsideration clears its ancestors too (Core's
    // `ResetBlockFailureFlags`).
    chainstate.reconsider_block(&tip_hash).unwrap();
    assert_eq!(tip_hex(&chainstate), tip);
    assert_eq!(utxo_stats(&mut chainstate), stats);
    assert!(!status_of(&chainstate, &middle).is_failed());
    assert_eq!(tip_status(&chainstate, &tip_hash), "active");
    assert_eq!(chainstate.best_header(), Some(tip_hash));
}

#[test]
fn invalidating_the_rival_of_a_branch_with_more_work_than_the_parent_switches_to_it() {
    let chain = with_forks();
    let (_node, mut chainstate, tip, stats) = imported(chain);
    let plan = ForkPlan::for_blocks(chain.manifest.block_count).unwrap();

    // The stale block has as much work as its rival: more than the parent.
    let (stale, stale_height) = branch_hashes(chain, "stale")[0];
    assert_eq!(stale_height, plan.stale_height);
    let rival = main_hash(&chainstate, stale_height);
    chainstate.invalidate_block(&rival).unwrap();
    let mut keep = main_hashes_to(&chainstate, stale_height - 1);
    keep.insert(stale);
    let expected = alone(chain, &keep);
    assert_eq!(tip_hex(&chainstate), (stale.to_hex(), stale_height));
    assert_eq!(tip_hex(&chainstate), expected.0);
    assert_eq!(utxo_stats(&mut chainstate), expected.1);

    // The reorged branch's two blocks beat the main chain's fork point.
    let reorged = branch_hashes(chain, "reorged");
    let (branch_tip, branch_height) = *reorged.iter().max_by_key(|(_, height)| *height).unwrap();
    let first_main = main_hash(&chainstate, plan.reorg_base_height + 1);
    chainstate.invalidate_block(&first_main).unwrap();
    let mut keep = main_hashes_to(&chainstate, plan.reorg_base_height);
    keep.extend(reorged.iter().map(|(hash, _)| *hash));
    let expected = alone(chain, &keep);
    assert_eq!(tip_hex(&chainstate), (branch_tip.to_hex(), branch_height));
    assert_eq!(tip_hex(&chainstate), expected.0);
    assert_eq!(utxo_stats(&mut chainstate), expected.1);
    assert!(status_of(&chainstate, &stale).has(BlockStatus::FAILED_CHILD));

    // Reconsidering the first one clears every mark above it, the rival's
    // own included: the original chain wins again.
    chainstate.reconsider_block(&first_main).unwrap();
    assert_eq!(tip_hex(&chainstate), tip);
    assert_eq!(utxo_stats(&mut chainstate), stats);
    assert!(!status_of(&chainstate, &rival).is_failed());
    assert_eq!(tip_status(&chainstate, &branch_tip), "valid-fork");
}

#[test]
fn the_marks_survive_a_reopen_and_a_crash_right_after_the_call() {
    let chain = with_forks();
    let (node, mut chainstate, tip, _) = imported(chain);
    let height = chain.manifest.block_count - 5;
    let middle = main_hash(&chainstate, height);
    let parent_hashes = main_hashes_to(&chainstate, height - 1);
    let expected = alone(chain, &parent_hashes);

    // A crash right after the call: the coins on disk still name the old
    // tip (the disconnects were never flushed), the marks were written.
    chainstate.invalidate_block(&middle).unwrap();
    assert_eq!(tip_hex(&chainstate), expected.0);
    drop(chainstate);
    let mut reopened = node.open();
    assert_eq!(tip_hex(&reopened), tip, "the coins were left at the old tip");
    assert!(status_of(&reopened, &middle).has(BlockStatus::FAILED_VALID));
    let (check, restored) = reopened.activate_to_fixed_point().unwrap();
    assert!(matches!(check, BestCandidateCheck::Reached { .. }), "{check}");
    assert_eq!(restored, 0);
    assert_eq!(tip_hex(&reopened), expected.0);
    assert_eq!(utxo_stats(&mut reopened), expected.1);

    // A clean close and reopen keeps the marks and the tip.
    reopened.flush(FlushReason::Shutdown, FlushMode::EmptyCache).unwrap();
    drop(reopened);
    let mut again = node.open();
    assert_eq!(tip_hex(&again), expected.0);
    assert!(status_of(&again, &middle).has(BlockStatus::FAILED_VALID));
    let tip_hash = BlockHash::from_hex(&tip.0).unwrap();
    assert!(status_of(&again, &tip_hash).has(BlockStatus::FAILED_CHILD));
    again.activate_best_chain().unwrap();
    assert_eq!(tip_hex(&again), expected.0, "the invalidated chain stays off");

    // Reconsidered, then closed without a flush: the cleared marks stay.
    again.reconsider_block(&middle).unwrap();
    assert_eq!(tip_hex(&again), tip);
    drop(again);
    let mut last = node.open();
    assert!(!status_of(&last, &middle).is_failed());
    last.activate_to_fixed_point().unwrap();
    assert_eq!(tip_hex(&last), tip);
}

#[test]
fn unknown_blocks_and_the_genesis_block_are_refused() {
    let chain = with_forks();
    let (_node, mut chainstate, tip, _) = imported(chain);
    let unknown = BlockHash([0x42; 32]);
    let error = chainstate.invalidate_block(&unknown).unwrap_err();
    assert!(
        matches!(error, ChainControlError::UnknownBlock { hash } if hash == unknown),
        "{error}"
    );
    let error = chainstate.reconsider_block(&unknown).unwrap_err();
    assert!(
        matches!(error, ChainControlError::UnknownBlock { hash } if hash == unknown),
        "{error}"
    );
    let genesis = chainstate.params().genesis_hash;
    let error = chainstate.invalidate_block(&genesis).unwrap_err();
    assert!(matches!(error, ChainControlError::GenesisBlock { .. }), "{error}");
    assert!(!status_of(&chainstate, &genesis).is_failed());
    // Reconsidering a valid block (even genesis) changes nothing.
    chainstate.reconsider_block(&genesis).unwrap();
    assert_eq!(tip_hex(&chainstate), tip);
}

#[test]
fn the_service_takes_an_operators_commands_between_blocks() {
    let chain = with_forks();
    let (_node, mut chainstate, tip, _) = imported(chain);
    let height = chain.manifest.block_count - 3;
    let middle = main_hash(&chainstate, height);
    let reader = chainstate.reader();
    let (commands, _notices, service) = engine_service();
    let control = service.control_sender();
    let operator = std::thread::spawn(move || {
        let ask = |command: fn(BlockHash, _) -> EngineCommand, hash: BlockHash| {
            let (reply, answer) = sync_channel(1);
            control.send(command(hash, reply)).unwrap();
            answer.recv_timeout(Duration::from_secs(120)).unwrap()
        };
        let invalidate = |hash, reply| EngineCommand::InvalidateBlock { hash, reply };
        let reconsider = |hash, reply| EngineCommand::ReconsiderBlock { hash, reply };
        ask(invalidate, middle).unwrap();
        let after_invalidate = reader.snapshot().tip.clone().unwrap();
        let unknown = ask(reconsider, BlockHash([7; 32]));
        ask(reconsider, middle).unwrap();
        let after_reconsider = reader.snapshot().tip.clone().unwrap();
        commands.send(EngineCommand::Stop).unwrap();
        (after_invalidate, unknown, after_reconsider, control)
    });
    let end = chainstate.run_service(&service, &AtomicBool::new(false)).unwrap();
    assert_eq!(end, ServiceEnd::Stopped);
    let (after_invalidate, unknown, after_reconsider, control) = operator.join().unwrap();
    assert_eq!(after_invalidate.height, height - 1);
    assert!(matches!(unknown, Err(ChainControlError::UnknownBlock { .. })), "{unknown:?}");
    assert_eq!((after_reconsider.hash.to_hex(), after_reconsider.height), tip);
    assert_eq!(tip_hex(&chainstate), tip);
    // Once the service has returned, the operator's channel is closed.
    let (reply, _answer) = sync_channel(1);
    let late = control.try_send(EngineCommand::InvalidateBlock { hash: middle, reply });
    assert!(matches!(late, Err(TrySendError::Disconnected(_))));
}
