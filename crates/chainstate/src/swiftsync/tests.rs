#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use ibex_generator::{generate, GeneratorOptions, Profile};
use ibex_primitives::hints::{HintsFile, HintsVersion, HintsWriter};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, Params, SpentCoinBuf};

use super::{ClaimedSpentCoins, SwiftSyncEvent, SwiftSyncFailure, SwiftSyncPlan};
use crate::engine::read_api::coin_set::chain_to_height;
use crate::engine::{BlockSource, ChainControlError, ChainEvent, Chainstate};
use crate::hints_writer::build_hints;
use crate::snapshot::roll_back_to_target;
use crate::test_chain::{accept, chainstate_options};

/// Blocks above genesis: more than 2,016 above the terminal height, so
/// that `-assumevalid` covers it (Core's two weeks of work on regtest).
const CHAIN_BLOCKS: u32 = 2_200;
/// The hints' terminal height: coinbases matured and spent below it.
const TERMINAL_HEIGHT: u32 = 160;

type Events = Arc<Mutex<Vec<SwiftSyncEvent>>>;

fn generated_blocks(root: &Path, blocks_above_genesis: u32) -> Vec<Vec<u8>> {
    let generated = root.join("generated");
    let mut options = GeneratorOptions::new(Profile::Tiny, 23, generated.clone());
    options.blocks = Some(blocks_above_genesis);
    options.threads = Some(1);
    generate(&options).unwrap();
    ibex_generator::replay::read_blocks(&generated, Params::regtest().message_start).unwrap()
}

/// A chainstate under `root` with every block accepted, `-assumevalid` at
/// the tip, two script threads; its SwiftSync events go to the list.
fn accepted(
    root: &Path,
    blocks: &[Vec<u8>],
    tip: ibex_primitives::BlockHash,
) -> (Chainstate, Events) {
    let (mut chainstate, events) = opened(root, tip);
    for bytes in blocks {
        accept(&mut chainstate, bytes);
    }
    (chainstate, events)
}

/// The chainstate under `root` as [`accepted`] opens it, no block given.
fn opened(root: &Path, tip: ibex_primitives::BlockHash) -> (Chainstate, Events) {
    opened_with(root, Some(tip))
}

/// A chainstate under `root` with `assume_valid`, two script threads; its
/// SwiftSync events go to the list.
fn opened_with(
    root: &Path,
    assume_valid: Option<ibex_primitives::BlockHash>,
) -> (Chainstate, Events) {
    let mut options = chainstate_options(root, Params::regtest());
    options.assume_valid = assume_valid;
    options.script_threads = 2;
    let events: Events = Arc::default();
    let sink = events.clone();
    let observer = move |event: &ChainEvent| {
        if let ChainEvent::SwiftSync(event) = event {
            sink.lock().unwrap().push(event.clone());
        }
    };
    (Chainstate::open(options, Box::new(observer)).unwrap(), events)
}

fn tip_hash(blocks: &[Vec<u8>]) -> ibex_primitives::BlockHash {
    let mut buffers = ibex_primitives::BlockBuffers::default();
    ibex_primitives::ParsedBlock::parse(blocks.last().unwrap().clone(), &mut buffers)
        .unwrap()
        .hash()
}

fn serialized_hash(chainstate: &Chainstate) -> String {
    let stats = chainstate.txoutset_stats(TxOutSetHashType::HashSerialized3).unwrap();
    format!("{:?}@{:?}/{}", stats.hash, chainstate.tip(), stats.txouts)
}

/// The hints file at [`TERMINAL_HEIGHT`] from a chainstate synced the
/// usual way, as `dumphints` writes it.
fn hints_of(synced: &Chainstate) -> Vec<u8> {
    let mut source = chain_to_height(synced, Some(TERMINAL_HEIGHT)).unwrap();
    roll_back_to_target(&synced.reader(), &mut source.at).unwrap();
    build_hints(&synced.reader(), &source.at.view, &source.blocks, HintsVersion::EliasFano)
        .unwrap()
        .bytes
}

/// `bytes` with one more output of the first block that has an unspent
/// one marked unspent, or one fewer (`add`).
fn altered_hints(bytes: &[u8], add: bool) -> Vec<u8> {
    let file = HintsFile::parse(bytes.to_vec(), None).unwrap();
    let mut writer = HintsWriter::new(file.version(), file.terminal_height());
    let mut altered = false;
    let mut indices = Vec::new();
    for height in 1..=file.terminal_height() {
        file.unspent_indices(height, &mut indices).unwrap();
        if !altered && height > 100 && !indices.is_empty() {
            altered = true;
            if add {
                // An output the inputs spend by `H`, now said unspent.
                let first_free = (0..).find(|number| !indices.contains(number)).unwrap();
                indices.push(first_free);
                indices.sort_unstable();
            } else {
                indices.pop();
            }
        }
        writer.push_block(&indices);
    }
    assert!(altered);
    writer.finish().unwrap()
}

#[test]
fn swiftsync_ends_on_the_usual_coin_set_and_falls_back_on_wrong_hints() {
    let root = tempfile::tempdir().unwrap();
    let blocks = generated_blocks(root.path(), CHAIN_BLOCKS);
    let tip = tip_hash(&blocks);

    let (mut usual, usual_events) = accepted(&root.path().join("usual"), &blocks, tip);
    usual.activate_best_chain().unwrap();
    assert_eq!(usual.tip().unwrap().1, CHAIN_BLOCKS);
    assert!(usual_events.lock().unwrap().is_empty());
    let expected = serialized_hash(&usual);
    let hints = hints_of(&usual);

    let (mut swift, events) = accepted(&root.path().join("swift"), &blocks, tip);
    let plan = SwiftSyncPlan::new(HintsFile::parse(hints.clone(), None).unwrap());
    swift.set_swiftsync(plan);
    swift.activate_best_chain().unwrap();
    assert_eq!(swift.tip().unwrap().1, CHAIN_BLOCKS);
    assert_eq!(serialized_hash(&swift), expected);
    let events = events.lock().unwrap().clone();
    assert!(
        matches!(events.last(), Some(SwiftSyncEvent::Completed { terminal_height: TERMINAL_HEIGHT, coin_count, input_count, .. }) if *coin_count > 0 && *input_count > 0),
        "{events:?}"
    );
    // No undo data below the terminal block, and the chain goes on above it.
    let at = |height: u32| swift.chain().at(height).unwrap();
    assert!(swift.read_undo(at(TERMINAL_HEIGHT)).is_err());
    assert!(swift.read_undo(at(TERMINAL_HEIGHT + 1)).is_ok());
    // Nor can the chain be rolled back below it.
    let below = swift.index().entry(at(TERMINAL_HEIGHT - 1)).hash;
    let refusal = swift.invalidate_block(&below).unwrap_err();
    assert!(
        matches!(refusal, ChainControlError::NoUndoData { height, without_undo_height: TERMINAL_HEIGHT, .. } if height == TERMINAL_HEIGHT - 1),
        "{refusal}"
    );
    assert_eq!(swift.tip().unwrap().1, CHAIN_BLOCKS);

    // A node shutting down starts no pass.
    let directory = root.path().join("interrupted");
    let (mut cut, _) = accepted(&directory, &blocks, tip);
    cut.set_interrupt(Arc::new(std::sync::atomic::AtomicBool::new(true)));
    cut.set_swiftsync(SwiftSyncPlan::new(HintsFile::parse(hints.clone(), None).unwrap()));
    cut.activate_best_chain().unwrap();
    assert_eq!(cut.tip().unwrap().1, 0);
    assert!(!cut.cache().database().holds_staged().unwrap());
    drop(cut);
    // An attempt cut short (here a fully validating one still waiting for
    // its coins when the node stops) leaves its coins staged; the next
    // open discards them and the attempt is made again.
    let (mut cut, _) = accepted(&directory, &blocks, tip);
    let file = HintsFile::parse(hints.clone(), None).unwrap();
    cut.set_swiftsync(SwiftSyncPlan::fully_validating(file));
    cut.activate_best_chain().unwrap();
    assert_eq!(cut.tip().unwrap().1, 0);
    assert!(cut.cache().database().holds_staged().unwrap());
    drop(cut);
    // The blocks whose index records the drop lost are given again.
    let (mut again, events) = accepted(&directory, &blocks, tip);
    assert_eq!(events.lock().unwrap().clone(), [SwiftSyncEvent::UnfinishedDiscarded]);
    assert!(!again.cache().database().holds_staged().unwrap());
    again.set_swiftsync(SwiftSyncPlan::new(HintsFile::parse(hints.clone(), None).unwrap()));
    again.activate_best_chain().unwrap();
    assert_eq!(serialized_hash(&again), expected);
    assert!(matches!(events.lock().unwrap().last(), Some(SwiftSyncEvent::Completed { .. })));
    drop(again);

    for add in [true, false] {
        let directory = root.path().join(format!("altered-{add}"));
        let (mut altered, events) = accepted(&directory, &blocks, tip);
        let file = HintsFile::parse(altered_hints(&hints, add), None).unwrap();
        altered.set_swiftsync(SwiftSyncPlan::new(file));
        altered.activate_best_chain().unwrap();
        assert_eq!(altered.tip().unwrap().1, CHAIN_BLOCKS);
        assert_eq!(serialized_hash(&altered), expected);
        let events = events.lock().unwrap().clone();
        let given_up = events.iter().find_map(|event| match event {
            SwiftSyncEvent::GivenUp { failure } => Some(failure.clone()),
            _ => None,
        });
        assert_eq!(
            given_up,
            Some(SwiftSyncFailure::AggregateNotZero { terminal_height: TERMINAL_HEIGHT }),
            "{events:?}"
        );
    }
}

#[test]
fn swiftsync_needs_the_terminal_block_under_assumevalid() {
    let root = tempfile::tempdir().unwrap();
    // `-assumevalid` at the tip, with less than two weeks of work above
    // the terminal block: Core would check its scripts.
    let chain_blocks = TERMINAL_HEIGHT + 2_000;
    let blocks = generated_blocks(root.path(), chain_blocks);
    let (mut synced, events) = accepted(&root.path().join("node"), &blocks, tip_hash(&blocks));
    let mut writer = HintsWriter::new(HintsVersion::EliasFano, TERMINAL_HEIGHT);
    for _ in 0..TERMINAL_HEIGHT {
        writer.push_block(&[0]);
    }
    let file = HintsFile::parse(writer.finish().unwrap(), None).unwrap();
    synced.set_swiftsync(SwiftSyncPlan::new(file));
    synced.activate_best_chain().unwrap();
    // It waits for more headers, which could bring the margin...
    assert_eq!(synced.tip().unwrap().1, 0);
    assert!(matches!(events.lock().unwrap().last(), Some(SwiftSyncEvent::Waiting { .. })));
    // ...until no more blocks come.
    synced.end_swiftsync_wait().unwrap();
    synced.activate_best_chain().unwrap();
    assert_eq!(synced.tip().unwrap().1, chain_blocks);
    let events = events.lock().unwrap().clone();
    assert!(
        matches!(
            events.last(),
            Some(SwiftSyncEvent::GivenUp {
                failure: SwiftSyncFailure::ScriptsRequired { height: TERMINAL_HEIGHT, .. }
            })
        ),
        "{events:?}"
    );
}

/// The coins each block 1 to [`TERMINAL_HEIGHT`] spent, from `synced`'s
/// undo data: what an honest BIP 455 peer serves.
fn spent_coins_of(synced: &Chainstate) -> Vec<(BlockHash, Vec<SpentCoinBuf>)> {
    (1..=TERMINAL_HEIGHT)
        .map(|height| {
            let id = synced.chain().at(height).unwrap();
            let undo = synced.read_undo(id).unwrap();
            let coins = undo
                .transactions
                .iter()
                .flat_map(|transaction| transaction.spent.iter())
                .map(|coin| coin.as_spent_coin().to_buf())
                .collect();
            (synced.index().entry(id).hash, coins)
        })
        .collect()
}

/// The peer every coin of [`fully_validating`] comes from.
const FIRST_PEER: BlockSource = BlockSource::Peer(1);

/// A chainstate under `root` holding `blocks`, with no `-assumevalid`, a
/// fully validating plan over `hints`, given `coins` by [`FIRST_PEER`]
/// (in reverse order: the pass takes them in any); the events.
fn fully_validating(
    root: &Path,
    blocks: &[Vec<u8>],
    hints: &[u8],
    coins: &[(BlockHash, Vec<SpentCoinBuf>)],
) -> (Chainstate, Events) {
    let (mut chainstate, events) = opened_with(root, None);
    for bytes in blocks {
        accept(&mut chainstate, bytes);
    }
    let file = HintsFile::parse(hints.to_vec(), None).unwrap();
    chainstate.set_swiftsync(SwiftSyncPlan::fully_validating(file));
    chainstate.activate_best_chain().unwrap();
    assert_eq!(chainstate.tip().unwrap().1, 0, "the pass waits for the coins");
    for (hash, spent) in coins.iter().rev() {
        assert!(chainstate
            .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(spent.clone()), FIRST_PEER)
            .unwrap());
    }
    chainstate.activate_best_chain().unwrap();
    (chainstate, events)
}

/// The refusals of spent coins among `events`: block, sender, failure.
fn refusals(events: &Events) -> Vec<(BlockHash, BlockSource, SwiftSyncFailure)> {
    let events = events.lock().unwrap();
    let refusals = events.iter().filter_map(|event| match event {
        SwiftSyncEvent::SpentCoinsRefused(refusal) => {
            Some((refusal.hash, refusal.source, refusal.failure.clone()))
        }
        _ => None,
    });
    refusals.collect()
}

fn given_up(events: &Events) -> Option<SwiftSyncFailure> {
    events.lock().unwrap().iter().find_map(|event| match event {
        SwiftSyncEvent::GivenUp { failure } => Some(failure.clone()),
        _ => None,
    })
}

#[test]
fn fully_validating_swiftsync_checks_every_block_with_the_claimed_coins() {
    // No `-assumevalid` margin is needed: scripts are checked.
    let chain_blocks = TERMINAL_HEIGHT + 40;
    let resume::ResumeChain { root, blocks, expected, hints, coins, .. } =
        resume::ResumeChain::with_blocks(chain_blocks);
    let input_count: usize = coins.iter().map(|(_, spent)| spent.len()).sum();
    assert!(input_count > 50, "the chain spends coins below the terminal height");

    let (mut swift, events) = fully_validating(&root.path().join("swift"), &blocks, &hints, &coins);
    assert_eq!(swift.tip().unwrap().1, chain_blocks);
    assert_eq!(serialized_hash(&swift), expected);
    let events = events.lock().unwrap().clone();
    assert!(
        matches!(events.last(), Some(SwiftSyncEvent::Completed { input_count: counted, .. }) if *counted == input_count as u64),
        "{events:?}"
    );
    // Coins for an accounted block are not taken again.
    assert!(!swift
        .swiftsync_spent_coins(
            &coins[0].0,
            ClaimedSpentCoins::every(coins[0].1.clone()),
            FIRST_PEER
        )
        .unwrap());
    let at = |height: u32| swift.chain().at(height).unwrap();
    assert!(swift.read_undo(at(TERMINAL_HEIGHT)).is_err());
    assert!(swift.read_undo(at(TERMINAL_HEIGHT + 1)).is_ok());
    drop(swift);

    // A claim one block too low for a coin no coinbase made: every rule
    // passes, the aggregate does not.
    let (block, input) = coins
        .iter()
        .enumerate()
        .find_map(|(block, (_, spent))| {
            spent
                .iter()
                .position(|coin| !coin.is_coinbase && coin.height.to_u32() > 1)
                .map(|input| (block, input))
        })
        .unwrap();
    let mut lower = coins.clone();
    let coin = &mut lower[block].1[input];
    coin.height = ibex_primitives::Height::new(coin.height.to_u32() - 1);
    let (lied, events) = fully_validating(&root.path().join("lower"), &blocks, &hints, &lower);
    assert_eq!(
        given_up(&events),
        Some(SwiftSyncFailure::AggregateNotZero { terminal_height: TERMINAL_HEIGHT })
    );
    assert_eq!(lied.tip().unwrap().1, chain_blocks, "the blocks are connected the usual way");
    assert_eq!(serialized_hash(&lied), expected);
    drop(lied);

    // A claimed script the input does not satisfy fails the block's
    // scripts: the coins are refused, blaming their sender, and the block
    // waits for another peer's; honest coins then complete the proof.
    let mut script = coins.clone();
    script[block].1[input].script_pubkey = vec![0x00];
    let (mut lied, events) =
        fully_validating(&root.path().join("script"), &blocks, &hints, &script);
    let refused = refusals(&events);
    assert!(
        matches!(refused.as_slice(), [(hash, FIRST_PEER, SwiftSyncFailure::Script { .. })] if *hash == coins[block].0),
        "{refused:?}"
    );
    assert_eq!(given_up(&events), None);
    assert_eq!(lied.tip().unwrap().1, 0, "the pass waits for the refused block's coins");
    let (hash, honest) = &coins[block];
    assert!(lied
        .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(honest.clone()), BlockSource::Peer(2))
        .unwrap());
    assert_eq!(given_up(&events), None);
    assert_eq!(lied.tip().unwrap().1, chain_blocks);
    assert!(matches!(events.lock().unwrap().last(), Some(SwiftSyncEvent::Completed { .. })));
    assert_eq!(serialized_hash(&lied), expected);
    drop(lied);

    // One coin short, from three peers in turn: a block refused three
    // times is taken to be invalid itself, and the attempt is given up.
    let mut short = coins.clone();
    short[block].1.pop();
    let (mut lied, events) = fully_validating(&root.path().join("short"), &blocks, &hints, &short);
    let (hash, claimed) = &short[block];
    for peer in 2..=crate::SPENT_COINS_REFUSALS_PER_BLOCK_MAX {
        assert_eq!(given_up(&events), None, "refusal {peer}");
        let source = BlockSource::Peer(u64::from(peer));
        assert!(lied
            .swiftsync_spent_coins(hash, ClaimedSpentCoins::every(claimed.clone()), source)
            .unwrap());
    }
    let refused = refusals(&events);
    assert_eq!(refused.len() as u32, crate::SPENT_COINS_REFUSALS_PER_BLOCK_MAX - 1);
    assert!(refused.iter().all(|(refused, _, failure)| refused == hash
        && matches!(failure, SwiftSyncFailure::FullBlock { .. })));
    assert!(
        matches!(given_up(&events), Some(SwiftSyncFailure::FullBlock { .. })),
        "{:?}",
        given_up(&events)
    );
    assert_eq!(lied.tip().unwrap().1, chain_blocks, "the blocks are connected the usual way");
    assert_eq!(serialized_hash(&lied), expected);
    drop(lied);

    // A block whose coins never come: the pass waits, until no more come.
    let (mut waiting, events) =
        fully_validating(&root.path().join("missing"), &blocks, &hints, &coins[1..]);
    assert_eq!(waiting.tip().unwrap().1, 0);
    waiting.end_swiftsync_wait().unwrap();
    waiting.activate_best_chain().unwrap();
    let first = coins[0].0;
    assert_eq!(
        given_up(&events),
        Some(SwiftSyncFailure::SpentCoinsMissing { height: 1, hash: first })
    );
    assert_eq!(serialized_hash(&waiting), expected);
}

mod cutoff;
mod resume;
