//! Pipelined script checks when a block's scripts fail after its child was
//! connected (see `engine/settle.rs`): block h of Core's regtest chain
//! with one signature byte flipped and everything else repaired (witness
//! commitment, merkle root, proof of work) is connected, then a valid child
//! is connected on it while h's scripts are checked. The failure must roll
//! both back and mark h invalid, with the tip, the UTXO set and the counters
//! of a node that never connected them; a valid chain that follows (or was
//! there before, with less work than the broken branch) must end as if it
//! had been imported alone. Checked through `-reindex` (`import_blocks`,
//! which, as Core's, connects only the best header's chain while it reads:
//! a broken branch that the valid chain passes is never connected) and
//! block by block as a peer delivers them (`accept_block` +
//! `activate_best_chain`, `settle`). With a flush after every block the
//! flush settles each block at once: a failure found there must stop the
//! connects above the failed block (it once went on with the child on top
//! of h-1 and announced it).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "pipeline/blocks.rs"]
mod blocks;
#[path = "pipeline/node.rs"]
mod node;

use std::time::Duration;

use ibex_chainstate::{AcceptOutcome, BlockRejection, Chainstate, SCRIPT_PIPELINE_BLOCKS};
use ibex_primitives::owned::Block;
use ibex_primitives::{BlockHash, BlockView, Header, Params};

use blocks::{break_signature, coinbase_chain, first_witness_signature, main_chain, SignatureAt};
use node::{accept, import, import_alone, offer, utxo_stats, Node};

/// Blocks of the broken branch built on top of the broken block.
/// Children of the broken block: the pipeline connects up to
/// `SCRIPT_PIPELINE_BLOCKS` of them before its verdict, and one more is left
/// to be refused as the child of an invalid block.
const CHILDREN: u32 = SCRIPT_PIPELINE_BLOCKS as u32 + 1;

/// The scenario: Core's chain, the height of its first signed spend, and
/// the broken branch there (the broken block first, then its children).
struct Scenario {
    chain: &'static [Vec<u8>],
    height: u32,
    broken: Vec<Block>,
}

impl Scenario {
    fn new() -> Scenario {
        let params = Params::regtest();
        let chain = main_chain();
        let at: SignatureAt = first_witness_signature(chain);
        // Blocks 1..=300 of Core's chain hold only their coinbase; 301
        // spends P2SH-P2WPKH coins.
        assert_eq!(at.height, 301);
        let height = at.height;
        let broken_block = break_signature(&chain[height as usize], at, &params);
        let children = coinbase_chain(&broken_block, height + 1, CHILDREN, 0xb0, &params);
        let mut broken = vec![broken_block];
        broken.extend(children);
        Scenario { chain, height, broken }
    }

    /// Blocks 0..h-1 of the valid chain.
    fn below(&self) -> &'static [Vec<u8>] {
        &self.chain[..self.height as usize]
    }

    /// The valid chain's blocks h..=h+count-1.
    fn valid_from_height(&self, count: u32) -> &'static [Vec<u8>] {
        &self.chain[self.height as usize..(self.height + count) as usize]
    }

    fn broken_bytes(&self) -> Vec<Vec<u8>> {
        self.broken.iter().map(Block::encode).collect()
    }

    fn broken_hash(&self) -> BlockHash {
        self.broken[0].block_hash()
    }

    fn hash_at(&self, height: u32) -> BlockHash {
        Block::decode(&self.chain[height as usize]).unwrap().block_hash()
    }

    /// The broken block was reported once, marked, for a script failure;
    /// its descendants are marked too and none of them was announced.
    fn check_broken_branch(&self, node: &Node, chainstate: &Chainstate) {
        let events = node.invalid_events(&self.broken_hash());
        assert_eq!(events.len(), 1, "{events:?}");
        let (reason, marked) = &events[0];
        assert!(reason.starts_with("block-script-verify-flag-failed"), "{reason}");
        assert!(marked);
        for block in &self.broken {
            let hash = block.block_hash();
            assert!(!node.announced(&hash), "{hash:?} was announced as the tip");
            if let Some(id) = chainstate.index().get(&hash) {
                assert!(chainstate.index().entry(id).status.is_failed(), "{hash:?} not marked");
            }
        }
        let first_child = self.broken[1].block_hash();
        assert!(chainstate.index().get(&first_child).is_some(), "the child was never accepted");
        let mut invalid_tips =
            chainstate.chain_tips().into_iter().filter(|tip| tip.status == "invalid");
        let invalid_tip = invalid_tips.next().unwrap();
        assert!(invalid_tips.next().is_none());
        assert!(self.broken.iter().any(|block| block.block_hash() == invalid_tip.hash));
    }
}

/// Core's `getchaintips` statuses, highest first.
fn tip_statuses(chainstate: &Chainstate) -> Vec<(u32, &'static str)> {
    chainstate.chain_tips().into_iter().map(|tip| (tip.height, tip.status)).collect()
}

#[test]
fn import_rolls_back_the_child_of_a_block_whose_scripts_fail() {
    let scenario = Scenario::new();
    let (expected_tip, expected_utxo) = import_alone(scenario.below());
    let h = scenario.height;
    assert_eq!(expected_tip, (scenario.hash_at(h - 1), h - 1));

    let broken = scenario.broken_bytes();
    let node = Node::with_blocks(scenario.below().iter().chain(&broken));
    let mut chainstate = node.open();
    import(&mut chainstate);
    scenario.check_broken_branch(&node, &chainstate);
    assert_eq!(chainstate.tip().unwrap(), expected_tip);
    // The import indexes every header first (as Core's reindex indexes
    // every block before connecting), so h'+1 and h'+2 are in the index
    // before h' fails, and are marked with it.
    let top = h + CHILDREN;
    assert_eq!(tip_statuses(&chainstate), vec![(top, "invalid"), (h - 1, "active")]);
    // Genesis and blocks 1..h-1: neither the broken block nor its child.
    assert_eq!(chainstate.statistics().blocks_connected, u64::from(h));
    assert_eq!(utxo_stats(&mut chainstate), expected_utxo);

    // Reopened, the index remembers the marks and the coins are those of h-1.
    drop(chainstate);
    let mut reopened = node.open();
    assert_eq!(reopened.tip().unwrap(), expected_tip);
    let id = reopened.index().get(&scenario.broken_hash()).unwrap();
    assert!(reopened.index().entry(id).status.is_failed());
    reopened.activate_best_chain().unwrap();
    assert_eq!(reopened.tip().unwrap(), expected_tip);
    assert_eq!(utxo_stats(&mut reopened), expected_utxo);
}

/// The valid chain after the broken branch has less work than it, so the
/// import tries the broken branch first (as Core's reindex, whose one
/// activation at the end starts with the most-work chain), then goes on
/// with the valid chain.
#[test]
fn import_continues_with_the_valid_chain_after_the_broken_branch() {
    let scenario = Scenario::new();
    let valid_count = CHILDREN;
    let valid_length = (scenario.height + valid_count) as usize;
    let (expected_tip, expected_utxo) = import_alone(&scenario.chain[..valid_length]);

    let broken = scenario.broken_bytes();
    let blocks =
        scenario.below().iter().chain(&broken).chain(scenario.valid_from_height(valid_count));
    let node = Node::with_blocks(blocks);
    let mut chainstate = node.open();
    import(&mut chainstate);
    scenario.check_broken_branch(&node, &chainstate);
    assert_eq!(chainstate.tip().unwrap(), expected_tip);
    assert_eq!(chainstate.statistics().blocks_connected, valid_length as u64);
    assert_eq!(utxo_stats(&mut chainstate), expected_utxo);
}

/// A broken branch followed by a valid chain with more work: Core's
/// reindex connects only the valid chain (its one activation, at the end,
/// goes to the most work), so the broken block is never connected nor
/// found invalid: its branch stays `valid-headers`.
#[test]
fn import_never_connects_a_broken_branch_the_valid_chain_passes() {
    let scenario = Scenario::new();
    let valid_count = CHILDREN + 3;
    let valid_length = (scenario.height + valid_count) as usize;
    let (expected_tip, expected_utxo) = import_alone(&scenario.chain[..valid_length]);

    let broken = scenario.broken_bytes();
    let blocks =
        scenario.below().iter().chain(&broken).chain(scenario.valid_from_height(valid_count));
    let node = Node::with_blocks(blocks);
    let mut chainstate = node.open();
    import(&mut chainstate);
    assert!(node.invalid_heights().is_empty());
    assert_eq!(chainstate.tip().unwrap(), expected_tip);
    let top = scenario.height + CHILDREN;
    let broken_tip = chainstate.chain_tips().into_iter().find(|tip| tip.height == top).unwrap();
    assert_eq!((broken_tip.status, broken_tip.branch_length), ("valid-headers", CHILDREN + 1));
    let statistics = chainstate.statistics();
    assert_eq!(statistics.blocks_connected, valid_length as u64);
    assert_eq!(statistics.blocks_disconnected, 0);
    assert_eq!(utxo_stats(&mut chainstate), expected_utxo);
}

/// The valid h and h+1 first, then the broken branch with more work, in a
/// file: Core's reindex tries the most-work chain first, so the import
/// finds h' invalid, then connects h and h+1, never disconnecting.
#[test]
fn import_tries_the_broken_branch_with_more_work_first() {
    let scenario = Scenario::new();
    let valid_length = (scenario.height + 2) as usize;
    let (expected_tip, expected_utxo) = import_alone(&scenario.chain[..valid_length]);

    let broken = scenario.broken_bytes();
    let node = Node::with_blocks(scenario.chain[..valid_length].iter().chain(&broken));
    let mut chainstate = node.open();
    import(&mut chainstate);
    scenario.check_broken_branch(&node, &chainstate);
    assert_eq!(chainstate.tip().unwrap(), expected_tip);
    let statistics = chainstate.statistics();
    assert_eq!(statistics.blocks_disconnected, 0);
    assert_eq!(statistics.blocks_connected, valid_length as u64);
    let top = scenario.height + CHILDREN;
    assert_eq!(tip_statuses(&chainstate), vec![(top, "invalid"), (scenario.height + 1, "active")]);
    assert_eq!(utxo_stats(&mut chainstate), expected_utxo);
}

/// Delivers `blocks` as a peer syncing headers first does: every header,
/// then each block not already marked invalid with its chain, activating
/// after each (Core's `ProcessNewBlock`).
fn deliver_as_a_peer(chainstate: &mut Chainstate, blocks: &[Vec<u8>]) {
    let headers: Vec<Header> =
        blocks.iter().map(|bytes| *BlockView::parse(bytes).unwrap().header()).collect();
    chainstate.offer_headers(&headers).unwrap();
    for (bytes, header) in blocks.iter().zip(&headers) {
        let index = chainstate.index();
        let id = index.get(&header.block_hash());
        if !id.is_some_and(|id| index.entry(id).status.is_failed()) {
            offer(chainstate, bytes);
        }
    }
    chainstate.activate_best_chain().unwrap();
}

/// The valid h and h+1 come first; the broken branch arrives later and,
/// with h+2 blocks, has more work: a node offered them one by one (a peer;
/// a reindex tries the most-work chain first, see above) disconnects h+1
/// and h, connects h' and h'+1, finds h' invalid and goes back.
fn reorganisation_onto_the_broken_branch(flush_interval: Duration) {
    let scenario = Scenario::new();
    let valid_length = (scenario.height + 2) as usize;
    let (expected_tip, expected_utxo) = import_alone(&scenario.chain[..valid_length]);

    let broken = scenario.broken_bytes();
    let mut node = Node::empty();
    node.flush_interval = flush_interval;
    let mut chainstate = node.open();
    let blocks: Vec<Vec<u8>> =
        scenario.chain[..valid_length].iter().chain(&broken).cloned().collect();
    deliver_as_a_peer(&mut chainstate, &blocks);
    scenario.check_broken_branch(&node, &chainstate);
    assert_eq!(chainstate.tip().unwrap(), expected_tip);
    let statistics = chainstate.statistics();
    assert_eq!(statistics.blocks_disconnected, 2);
    // h and h+1 twice; never h' nor h'+1.
    assert_eq!(statistics.blocks_connected, valid_length as u64 + 2);
    let top = scenario.height + CHILDREN;
    assert_eq!(tip_statuses(&chainstate), vec![(top, "invalid"), (scenario.height + 1, "active")]);
    assert_eq!(utxo_stats(&mut chainstate), expected_utxo);
}

#[test]
fn reorganisation_onto_the_broken_branch_returns_to_the_valid_chain() {
    reorganisation_onto_the_broken_branch(Duration::from_secs(3600));
}

#[test]
fn reorganisation_onto_the_broken_branch_with_a_flush_after_every_block() {
    // The flush after h' settles h' at once: its failure must stop the
    // connects towards h'+2 there, not go on with h'+1 on top of h-1.
    reorganisation_onto_the_broken_branch(Duration::ZERO);
}

/// A fresh node that was offered blocks 0..h-1 one by one.
fn node_below(scenario: &Scenario) -> (Node, Chainstate) {
    let node = Node::empty();
    let mut chainstate = node.open();
    chainstate.ensure_genesis().unwrap();
    for bytes in &scenario.below()[1..] {
        offer(&mut chainstate, bytes);
    }
    (node, chainstate)
}

fn is_invalid_parent(outcome: &AcceptOutcome) -> bool {
    matches!(outcome, AcceptOutcome::Invalid(BlockRejection::InvalidParent))
}

#[test]
fn offered_blocks_roll_back_the_child_of_a_block_whose_scripts_fail() {
    let scenario = Scenario::new();
    let h = scenario.height;
    let valid_count = CHILDREN + 3;
    let valid_length = (h + valid_count) as usize;
    let (below_tip, below_utxo) = import_alone(scenario.below());
    let (expected_tip, expected_utxo) = import_alone(&scenario.chain[..valid_length]);

    let (node, mut chainstate) = node_below(&scenario);
    let broken = scenario.broken_bytes();
    offer(&mut chainstate, &broken[0]);
    // Connected, its scripts still being checked: on the chain, not announced.
    assert_eq!(chainstate.tip().unwrap(), (scenario.broken_hash(), h));
    assert!(!node.announced(&scenario.broken_hash()));
    let connected_on_top = SCRIPT_PIPELINE_BLOCKS;
    for (index, bytes) in broken[1..=connected_on_top].iter().enumerate() {
        offer(&mut chainstate, bytes);
        if index + 1 < connected_on_top {
            // Still pending: the child is the tip.
            assert_eq!(chainstate.tip().unwrap().1, h + index as u32 + 1);
        }
    }
    assert_eq!(chainstate.tip().unwrap(), below_tip);
    for bytes in &broken[connected_on_top + 1..] {
        assert!(is_invalid_parent(&accept(&mut chainstate, bytes)));
    }
    scenario.check_broken_branch(&node, &chainstate);
    assert_eq!(chainstate.statistics().blocks_connected, u64::from(h));
    assert_eq!(utxo_stats(&mut chainstate), below_utxo);

    for bytes in scenario.valid_from_height(valid_count) {
        offer(&mut chainstate, bytes);
    }
    assert_eq!(chainstate.tip().unwrap(), expected_tip);
    assert!(chainstate.settle().unwrap());
    assert_eq!(chainstate.statistics().blocks_connected, valid_length as u64);
    assert_eq!(utxo_stats(&mut chainstate), expected_utxo);
}

#[test]
fn settle_is_false_when_the_pending_block_scripts_failed() {
    let scenario = Scenario::new();
    let h = scenario.height;
    let (below_tip, below_utxo) = import_alone(scenario.below());

    let (node, mut chainstate) = node_below(&scenario);
    let broken = scenario.broken_bytes();
    offer(&mut chainstate, &broken[0]);
    assert_eq!(chainstate.tip().unwrap(), (scenario.broken_hash(), h));
    assert!(!chainstate.settle().unwrap());
    assert_eq!(chainstate.tip().unwrap(), below_tip);
    assert_eq!(node.invalid_events(&scenario.broken_hash()).len(), 1);
    // Nothing is pending any more.
    assert!(chainstate.settle().unwrap());
    chainstate.activate_best_chain().unwrap();
    assert_eq!(chainstate.tip().unwrap(), below_tip);
    // The child now meets a marked parent: Core's bad-prevblk.
    let outcome = accept(&mut chainstate, &broken[1]);
    assert!(is_invalid_parent(&outcome), "{outcome:?}");
    assert_eq!(node.invalid_events(&scenario.broken_hash()).len(), 1);
    assert_eq!(chainstate.statistics().blocks_connected, u64::from(h));
    assert_eq!(utxo_stats(&mut chainstate), below_utxo);
}

#[test]
fn a_child_failing_its_own_rules_after_the_broken_block_leaves_no_trace() {
    // h'+1 claims one satoshi more than the subsidy (bad-cb-amount, found
    // while connecting it): h's verdict comes first, so h' is reported and
    // h'+1 is only marked as its descendant.
    let params = Params::regtest();
    let scenario = Scenario::new();
    let h = scenario.height;
    let (below_tip, below_utxo) = import_alone(scenario.below());
    let mut greedy = scenario.broken[1].clone();
    greedy.transactions[0].outputs[0].value += 1;
    blocks::seal(&mut greedy, &params);

    let broken = scenario.broken_bytes();
    let node = Node::with_blocks(scenario.below().iter().chain([&broken[0], &greedy.encode()]));
    let mut chainstate = node.open();
    import(&mut chainstate);
    assert_eq!(node.invalid_events(&scenario.broken_hash()).len(), 1);
    assert!(node.invalid_events(&greedy.block_hash()).is_empty());
    assert_eq!(node.invalid_heights(), vec![h]);
    let id = chainstate.index().get(&greedy.block_hash()).unwrap();
    assert!(chainstate.index().entry(id).status.is_failed());
    assert_eq!(chainstate.tip().unwrap(), below_tip);
    assert_eq!(chainstate.statistics().blocks_connected, u64::from(h));
    assert_eq!(utxo_stats(&mut chainstate), below_utxo);
}
