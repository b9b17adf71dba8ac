//! Checkpoints of the pass: kept at a shutdown and while the pass runs,
//! resumed by the next start in the same mode with the same hints,
//! discarded by any other.

use std::path::Path;

use super::*;

/// How many blocks the pass resumed with, if it resumed.
fn resumed_with(seen: &[SwiftSyncEvent]) -> Option<u32> {
    seen.iter().find_map(|event| match event {
        SwiftSyncEvent::Resumed { accounted_count, .. } => Some(*accounted_count),
        _ => None,
    })
}

/// Blocks stored before a checkpoint is kept (genesis included).
const STORED_FIRST: usize = 100;

/// A generated chain, the set and hints of a node that connected it the
/// usual way, and its headers.
pub(super) struct ResumeChain {
    pub(super) root: tempfile::TempDir,
    pub(super) blocks: Vec<Vec<u8>>,
    pub(super) tip: BlockHash,
    pub(super) expected: String,
    pub(super) hints: Vec<u8>,
    pub(super) headers: Vec<ibex_primitives::Header>,
    /// What an honest BIP 455 peer serves for blocks 1 to the terminal.
    pub(super) coins: Vec<(BlockHash, Vec<SpentCoinBuf>)>,
}

impl ResumeChain {
    fn new() -> ResumeChain {
        ResumeChain::with_blocks(CHAIN_BLOCKS)
    }

    /// A chain of `blocks_above_genesis` blocks.
    pub(super) fn with_blocks(blocks_above_genesis: u32) -> ResumeChain {
        let root = tempfile::tempdir().unwrap();
        let blocks = generated_blocks(root.path(), blocks_above_genesis);
        let tip = tip_hash(&blocks);
        let (mut usual, _) = accepted(&root.path().join("usual"), &blocks, tip);
        usual.activate_best_chain().unwrap();
        let expected = serialized_hash(&usual);
        let hints = hints_of(&usual);
        let coins = spent_coins_of(&usual);
        let headers = blocks
            .iter()
            .map(|bytes| ibex_primitives::Header::decode(bytes[..80].try_into().unwrap()))
            .collect();
        ResumeChain { root, blocks, tip, expected, hints, headers, coins }
    }
}

#[test]
fn a_pass_the_shutdown_cuts_short_resumes_from_its_checkpoint() {
    let ResumeChain { root, blocks, tip, expected, hints, headers, .. } = ResumeChain::new();
    let plan = || SwiftSyncPlan::new(HintsFile::parse(hints.clone(), None).unwrap());
    // A node given every header and the blocks to height 99, stopped while
    // its pass waits for the rest: a checkpoint is kept.
    let suspend_at = |directory: &Path| {
        let (mut cut, _) = opened(directory, tip);
        cut.offer_headers(&headers).unwrap();
        for bytes in &blocks[..STORED_FIRST] {
            accept(&mut cut, bytes);
        }
        cut.set_swiftsync(plan());
        cut.activate_best_chain().unwrap();
        cut.flush(crate::FlushReason::Shutdown, crate::coins::cache::FlushMode::KeepCoins).unwrap();
        cut.cache().database().buckets_directory()
    };

    // Every header, the blocks to height 99: the pass accounts those, and
    // the shutdown keeps a checkpoint.
    let directory = root.path().join("resumed");
    let (mut cut, events) = opened(&directory, tip);
    cut.offer_headers(&headers).unwrap();
    for bytes in &blocks[..STORED_FIRST] {
        accept(&mut cut, bytes);
    }
    cut.set_swiftsync(plan());
    cut.activate_best_chain().unwrap();
    assert_eq!(cut.tip().unwrap().1, 0);
    cut.flush(crate::FlushReason::Shutdown, crate::coins::cache::FlushMode::KeepCoins).unwrap();
    let accounted = STORED_FIRST as u32 - 1;
    assert!(
        matches!(events.lock().unwrap().last(), Some(SwiftSyncEvent::Suspended { accounted_count, terminal_height: TERMINAL_HEIGHT }) if *accounted_count == accounted),
        "{:?}",
        events.lock().unwrap()
    );
    drop(cut);

    // The next start with the same hints goes on from it.
    let (mut again, events) = opened(&directory, tip);
    assert!(events.lock().unwrap().is_empty(), "the checkpoint is kept at open");
    again.set_swiftsync(plan());
    for bytes in &blocks {
        accept(&mut again, bytes);
    }
    again.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(resumed_with(&seen), Some(accounted), "{seen:?}");
    assert!(matches!(seen.last(), Some(SwiftSyncEvent::Completed { .. })), "{seen:?}");
    assert_eq!(serialized_hash(&again), expected);
    assert_eq!(again.tip().unwrap().1, CHAIN_BLOCKS);
    again.flush(crate::FlushReason::Shutdown, crate::coins::cache::FlushMode::KeepCoins).unwrap();
    drop(again);

    // A checkpoint for other hints is discarded, and the attempt starts
    // again (and here gives up on those hints, ending on the same set).
    let directory = root.path().join("other-hints");
    suspend_at(&directory);
    let (mut other, events) = opened(&directory, tip);
    other.set_swiftsync(SwiftSyncPlan::new(
        HintsFile::parse(altered_hints(&hints, true), None).unwrap(),
    ));
    for bytes in &blocks {
        accept(&mut other, bytes);
    }
    other.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&SwiftSyncEvent::UnfinishedDiscarded), "{seen:?}");
    assert_eq!(resumed_with(&seen), None, "{seen:?}");
    assert_eq!(serialized_hash(&other), expected);
    drop(other);

    // Without a plan, the next start discards it before connecting.
    let directory = root.path().join("no-plan");
    suspend_at(&directory);
    let (mut plain, events) = opened(&directory, tip);
    for bytes in &blocks {
        accept(&mut plain, bytes);
    }
    plain.activate_best_chain().unwrap();
    assert_eq!(events.lock().unwrap().clone(), [SwiftSyncEvent::UnfinishedDiscarded]);
    assert_eq!(serialized_hash(&plain), expected);
    assert!(!plain.cache().database().holds_staged().unwrap());
    drop(plain);

    // A bucket file lost: the checkpoint cannot be resumed, the attempt
    // starts again and ends on the same set.
    let directory = root.path().join("lost-bucket");
    let buckets = suspend_at(&directory);
    std::fs::remove_file(buckets.join("bucket-0")).unwrap();
    let (mut lost, events) = opened(&directory, tip);
    lost.set_swiftsync(plan());
    for bytes in &blocks {
        accept(&mut lost, bytes);
    }
    lost.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(resumed_with(&seen), None, "{seen:?}");
    assert!(matches!(seen.last(), Some(SwiftSyncEvent::Completed { .. })), "{seen:?}");
    assert_eq!(serialized_hash(&lost), expected);
}

#[test]
fn a_crash_after_a_checkpoint_kept_while_the_pass_ran_resumes_from_it() {
    let ResumeChain { root, blocks, tip, expected, hints, headers, .. } = ResumeChain::new();
    let plan = || SwiftSyncPlan::new(HintsFile::parse(hints.clone(), None).unwrap());

    // A checkpoint as soon as the pass runs (blocks 1-99 stored), then no
    // more; blocks to 150 accounted after it; then a crash (dropped, no
    // shutdown), with a torn append at the end of every bucket file.
    let directory = root.path().join("crashed");
    let (mut node, events) = opened(&directory, tip);
    node.offer_headers(&headers).unwrap();
    for bytes in &blocks[..STORED_FIRST] {
        accept(&mut node, bytes);
    }
    node.set_swiftsync(plan());
    node.set_swiftsync_checkpoint_interval(std::time::Duration::ZERO);
    node.activate_best_chain().unwrap();
    let accounted = STORED_FIRST as u32 - 1;
    assert!(
        events.lock().unwrap().iter().any(|event| matches!(event, SwiftSyncEvent::Checkpointed { accounted_count, .. } if *accounted_count == accounted)),
        "{:?}",
        events.lock().unwrap()
    );
    node.set_swiftsync_checkpoint_interval(std::time::Duration::from_secs(3_600));
    for bytes in &blocks[STORED_FIRST..=150] {
        accept(&mut node, bytes);
    }
    node.activate_best_chain().unwrap();
    let buckets = node.cache().database().buckets_directory();
    drop(node);
    for entry in std::fs::read_dir(&buckets).unwrap() {
        let path = entry.unwrap().path();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(&[0x40, 0, 0, 0, 0, 0, 0, 0, 0x22, 0x43]);
        std::fs::write(&path, bytes).unwrap();
    }

    let (mut again, events) = opened(&directory, tip);
    again.set_swiftsync(plan());
    for bytes in &blocks {
        accept(&mut again, bytes);
    }
    again.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(resumed_with(&seen), Some(accounted), "{seen:?}");
    assert!(matches!(seen.last(), Some(SwiftSyncEvent::Completed { .. })), "{seen:?}");
    assert_eq!(serialized_hash(&again), expected);
    assert_eq!(again.tip().unwrap().1, CHAIN_BLOCKS);
}

/// Coins given for the first blocks before the fully validating node stops.
const COINS_GIVEN_FIRST: usize = 80;

#[test]
fn a_fully_validating_pass_resumes_and_asks_no_coins_of_the_blocks_it_accounted() {
    let ResumeChain { root, blocks, tip, expected, hints, coins, .. } = ResumeChain::new();
    let file = || HintsFile::parse(hints.clone(), None).unwrap();
    // Every block stored, the coins of the first 80 given: the pass
    // accounts those, and the shutdown keeps a checkpoint.
    let suspend_at = |directory: &Path| {
        let (mut cut, events) = opened_with(directory, None);
        for bytes in &blocks {
            accept(&mut cut, bytes);
        }
        cut.set_swiftsync(SwiftSyncPlan::fully_validating(file()));
        cut.activate_best_chain().unwrap();
        for (hash, spent) in &coins[..COINS_GIVEN_FIRST] {
            assert!(cut
                .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(spent.clone()), FIRST_PEER)
                .unwrap());
        }
        cut.flush(crate::FlushReason::Shutdown, crate::coins::cache::FlushMode::KeepCoins).unwrap();
        let seen = events.lock().unwrap().clone();
        assert!(
            matches!(seen.last(), Some(SwiftSyncEvent::Suspended { accounted_count, .. }) if *accounted_count == COINS_GIVEN_FIRST as u32),
            "{seen:?}"
        );
    };

    let directory = root.path().join("full");
    suspend_at(&directory);
    let (mut again, events) = opened_with(&directory, None);
    for bytes in &blocks {
        accept(&mut again, bytes);
    }
    again.set_swiftsync(SwiftSyncPlan::fully_validating(file()));
    again.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(resumed_with(&seen), Some(COINS_GIVEN_FIRST as u32), "{seen:?}");
    // The network side is told which heights need no coins.
    let pass = again.reader().snapshot().swiftsync_pass.clone().expect("the pass runs");
    assert_eq!(pass.terminal, coins.last().map(|(hash, _)| *hash).unwrap());
    assert_eq!(pass.accounted.len(), TERMINAL_HEIGHT as usize);
    let accounted: Vec<bool> =
        (0..TERMINAL_HEIGHT as usize).map(|at| at < COINS_GIVEN_FIRST).collect();
    assert_eq!(*pass.accounted, *accounted);
    // Coins of a block accounted before the stop are not taken again; the
    // rest complete the proof.
    assert!(!again
        .swiftsync_spent_coins(
            &coins[0].0,
            ClaimedSpentCoins::every(coins[0].1.clone()),
            FIRST_PEER
        )
        .unwrap());
    for (hash, spent) in &coins[COINS_GIVEN_FIRST..] {
        assert!(again
            .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(spent.clone()), FIRST_PEER)
            .unwrap());
    }
    again.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert!(
        matches!(seen.last(), Some(SwiftSyncEvent::Completed { input_count, .. }) if *input_count == coins.iter().map(|(_, spent)| spent.len() as u64).sum::<u64>()),
        "{seen:?}"
    );
    assert_eq!(serialized_hash(&again), expected);
    assert_eq!(again.tip().unwrap().1, CHAIN_BLOCKS);
    assert_eq!(again.reader().snapshot().swiftsync_pass, None, "no pass runs any more");
    drop(again);

    // The assumevalid mode does not resume it (its aggregate hashes other
    // things): discarded, and the attempt made from the first block.
    let directory = root.path().join("full-then-assumevalid");
    suspend_at(&directory);
    let (mut other, events) = opened(&directory, tip);
    other.set_swiftsync(SwiftSyncPlan::new(file()));
    for bytes in &blocks {
        accept(&mut other, bytes);
    }
    other.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(seen.first(), Some(&SwiftSyncEvent::UnfinishedDiscarded), "{seen:?}");
    assert_eq!(resumed_with(&seen), None, "{seen:?}");
    assert!(matches!(seen.last(), Some(SwiftSyncEvent::Completed { .. })), "{seen:?}");
    assert_eq!(serialized_hash(&other), expected);
}

#[test]
fn a_fully_validating_pass_crashed_after_a_checkpoint_resumes_from_it() {
    let ResumeChain { root, blocks, expected, hints, coins, .. } = ResumeChain::new();
    let plan = || SwiftSyncPlan::fully_validating(HintsFile::parse(hints.clone(), None).unwrap());
    // A checkpoint kept while the pass runs, after the coins of the first
    // 80 blocks; 40 more accounted after it; then a crash (no shutdown).
    let directory = root.path().join("crashed");
    let (mut node, events) = opened_with(&directory, None);
    for bytes in &blocks {
        accept(&mut node, bytes);
    }
    node.set_swiftsync(plan());
    node.activate_best_chain().unwrap();
    for (hash, spent) in &coins[..COINS_GIVEN_FIRST] {
        assert!(node
            .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(spent.clone()), FIRST_PEER)
            .unwrap());
    }
    node.set_swiftsync_checkpoint_interval(std::time::Duration::ZERO);
    node.activate_best_chain().unwrap();
    let checkpointed = |events: &Events| {
        events.lock().unwrap().iter().any(|event| matches!(event, SwiftSyncEvent::Checkpointed { accounted_count, .. } if *accounted_count == COINS_GIVEN_FIRST as u32))
    };
    assert!(checkpointed(&events), "{:?}", events.lock().unwrap());
    node.set_swiftsync_checkpoint_interval(std::time::Duration::from_secs(3_600));
    for (hash, spent) in &coins[COINS_GIVEN_FIRST..COINS_GIVEN_FIRST + 40] {
        assert!(node
            .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(spent.clone()), FIRST_PEER)
            .unwrap());
    }
    node.activate_best_chain().unwrap();
    drop(node);

    // The 40 blocks accounted after the checkpoint want their coins again.
    let (mut again, events) = opened_with(&directory, None);
    for bytes in &blocks {
        accept(&mut again, bytes);
    }
    again.set_swiftsync(plan());
    again.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert_eq!(resumed_with(&seen), Some(COINS_GIVEN_FIRST as u32), "{seen:?}");
    for (hash, spent) in &coins[COINS_GIVEN_FIRST..] {
        assert!(again
            .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(spent.clone()), FIRST_PEER)
            .unwrap());
    }
    again.activate_best_chain().unwrap();
    let seen = events.lock().unwrap().clone();
    assert!(matches!(seen.last(), Some(SwiftSyncEvent::Completed { .. })), "{seen:?}");
    assert_eq!(serialized_hash(&again), expected);
    assert_eq!(again.tip().unwrap().1, CHAIN_BLOCKS);
}
