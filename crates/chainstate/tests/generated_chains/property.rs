//! Random sequences of connecting, reorgs to the fork, flushes and reopens
//! (crashes included) on a short chain with forks end with the UTXO set of a
//! straight import of the same tip.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use ibex_chainstate::{ChainEvent, Chainstate, FlushMode, FlushReason};
use ibex_generator::forks::{ForkPlan, REORG_BRANCH_BLOCKS};
use ibex_primitives::txoutset::TxOutSetStats;
use ibex_primitives::{BlockHash, BlockView};
use proptest::prelude::*;

use crate::support::{invalid_events, offer, utxo_stats, Generated, Node};

/// Blocks of the chain the property test walks: enough for the fork (at
/// three fifths) to come after coinbases mature and transactions begin.
const PROPERTY_BLOCKS: u32 = 190;
/// Weight its blocks fill toward: a few transactions each.
const PROPERTY_BLOCK_WEIGHT: usize = 10_000;

fn short_with_forks() -> &'static Generated {
    static CHAIN: OnceLock<Generated> = OnceLock::new();
    CHAIN.get_or_init(|| {
        Generated::new(|options| {
            options.forks = true;
            options.blocks = Some(PROPERTY_BLOCKS);
            options.target_weight = Some(PROPERTY_BLOCK_WEIGHT);
        })
    })
}

/// The short chain with forks, split into its main chain (by height) and
/// its branches.
struct ForkChain {
    main: Vec<Vec<u8>>,
    reorged: Vec<Vec<u8>>,
    stale: Vec<u8>,
    plan: ForkPlan,
    by_hash: HashMap<BlockHash, Vec<u8>>,
}

impl ForkChain {
    fn load() -> &'static ForkChain {
        static CHAIN: OnceLock<ForkChain> = OnceLock::new();
        CHAIN.get_or_init(|| ForkChain::split(short_with_forks()))
    }

    fn split(chain: &Generated) -> ForkChain {
        let branch_of: HashMap<&str, &str> = chain
            .manifest
            .fork_blocks
            .iter()
            .map(|record| (record.hash.as_str(), record.branch.as_str()))
            .collect();
        let (mut main, mut reorged, mut stale) = (Vec::new(), Vec::new(), Vec::new());
        let mut by_hash = HashMap::new();
        for bytes in chain.blocks() {
            let hash = BlockView::parse(&bytes).unwrap().block_hash();
            by_hash.insert(hash, bytes.clone());
            match branch_of.get(hash.to_hex().as_str()) {
                None => main.push(bytes),
                Some(&"reorged") => reorged.push(bytes),
                Some(_) => stale.push(bytes),
            }
        }
        assert_eq!(main.len() as u32, chain.manifest.block_count + 1);
        assert_eq!((reorged.len() as u32, stale.len()), (REORG_BRANCH_BLOCKS, 1));
        let plan = ForkPlan::for_blocks(chain.manifest.block_count).unwrap();
        ForkChain { main, reorged, stale: stale.remove(0), plan, by_hash }
    }

    /// The blocks from genesis to `tip`, following the parents.
    fn branch_to(&self, tip: BlockHash) -> Vec<&[u8]> {
        let mut branch = Vec::new();
        let mut walk = self.by_hash.get(&tip);
        while let Some(bytes) = walk {
            branch.push(bytes.as_slice());
            let parent = BlockView::parse(bytes).unwrap().header().previous_block_hash;
            walk = self.by_hash.get(&parent);
        }
        branch.reverse();
        branch
    }
}

/// One step of the property test.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Offer the main chain's blocks up to this height.
    ConnectTo(u32),
    /// Offer the main chain to the fork's base, then the two-block branch
    /// (the tip moves there unless the main chain is already as long).
    ReorgToFork,
    /// Offer the stale block (after the main chain up to its parent).
    OfferStale,
    /// Flush the coins, emptying the cache or not.
    Flush { empty_cache: bool },
    /// Close and open again, flushing first or not (a crash); blocks the
    /// index lost are offered again.
    Reopen { flush_first: bool },
}

/// Steps, with most heights around the fork so that reorgs happen often.
fn step() -> impl Strategy<Value = Step> {
    let base = ForkPlan::for_blocks(PROPERTY_BLOCKS).unwrap().reorg_base_height;
    prop_oneof![
        1 => (0..=PROPERTY_BLOCKS).prop_map(Step::ConnectTo),
        4 => (base - 1..=base + REORG_BRANCH_BLOCKS + 2).prop_map(Step::ConnectTo),
        3 => Just(Step::ReorgToFork),
        1 => Just(Step::OfferStale),
        1 => any::<bool>().prop_map(|empty_cache| Step::Flush { empty_cache }),
        2 => any::<bool>().prop_map(|flush_first| Step::Reopen { flush_first }),
    ]
}

/// Runs steps on a chainstate, remembering what was offered.
struct Driver {
    chain: &'static ForkChain,
    node: Node,
    chainstate: Option<Chainstate>,
    offered: Vec<&'static [u8]>,
    main_height: Option<u32>,
    expected_height: u32,
}

impl Driver {
    fn new(cache_bytes_max: usize) -> Driver {
        let mut node = Node::new();
        node.cache_bytes_max = cache_bytes_max;
        let chainstate = Some(node.open());
        let chain = ForkChain::load();
        Driver {
            chain,
            node,
            chainstate,
            offered: Vec::new(),
            main_height: None,
            expected_height: 0,
        }
    }

    fn chainstate(&mut self) -> &mut Chainstate {
        self.chainstate.as_mut().unwrap()
    }

    fn offer(&mut self, bytes: &'static [u8], height: u32) {
        if self.offered.contains(&bytes) {
            return;
        }
        offer(self.chainstate(), bytes);
        self.offered.push(bytes);
        self.expected_height = self.expected_height.max(height);
    }

    fn connect_to(&mut self, height: u32) {
        let start = self.main_height.map_or(0, |offered| offered + 1);
        let chain = self.chain;
        for main_height in start..=height {
            self.offer(&chain.main[main_height as usize], main_height);
            self.main_height = Some(main_height);
        }
    }

    fn run(&mut self, step: Step) {
        let plan = self.chain.plan;
        let chain = self.chain;
        match step {
            Step::ConnectTo(height) => self.connect_to(height),
            Step::ReorgToFork => {
                self.connect_to(plan.reorg_base_height);
                for (offset, bytes) in (1..).zip(&chain.reorged) {
                    self.offer(bytes, plan.reorg_base_height + offset);
                }
            }
            Step::OfferStale => {
                self.connect_to(plan.stale_height - 1);
                self.offer(&chain.stale, plan.stale_height);
            }
            Step::Flush { empty_cache } => {
                let mode = if empty_cache { FlushMode::EmptyCache } else { FlushMode::KeepCoins };
                self.chainstate().flush(FlushReason::Periodic, mode).unwrap();
            }
            Step::Reopen { flush_first } => {
                if flush_first {
                    self.chainstate().flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
                }
                self.chainstate = None;
                self.chainstate = Some(self.node.open());
                for bytes in self.offered.clone() {
                    offer(self.chainstate(), bytes);
                }
                self.chainstate().activate_best_chain().unwrap();
            }
        }
        let height = self.chainstate.as_ref().unwrap().tip().map(|(_, height)| height);
        let expected = if self.offered.is_empty() { None } else { Some(self.expected_height) };
        assert_eq!(height, expected, "the tip has the most work after {step:?}");
    }
}

/// The UTXO statistics of a straight connection of the chain ending at `tip`.
fn straight_import_stats(chain: &ForkChain, tip: BlockHash) -> TxOutSetStats {
    static KNOWN: OnceLock<Mutex<HashMap<BlockHash, TxOutSetStats>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Mutex::default);
    if let Some(stats) = known.lock().unwrap().get(&tip) {
        return *stats;
    }
    let node = Node::new();
    let mut chainstate = node.open();
    for bytes in chain.branch_to(tip) {
        offer(&mut chainstate, bytes);
    }
    assert_eq!(chainstate.tip().unwrap().0, tip);
    assert_eq!(chainstate.statistics().blocks_disconnected, 0);
    let stats = utxo_stats(&mut chainstate);
    known.lock().unwrap().insert(tip, stats);
    stats
}

/// Runs `steps` and checks the end state against a straight import.
fn check_steps(steps: &[Step], cache_bytes_max: usize) -> Driver {
    let mut driver = Driver::new(cache_bytes_max);
    for step in steps {
        driver.run(*step);
    }
    let Some((tip, _)) = driver.chainstate().tip() else { return driver };
    let stats = utxo_stats(driver.chainstate());
    assert_eq!(stats, straight_import_stats(driver.chain, tip), "after {steps:?}");
    assert!(invalid_events(&driver.node.events()).is_empty());
    driver
}

#[test]
fn reorg_to_the_fork_and_back_across_a_crash_matches_a_straight_import() {
    let plan = ForkChain::load().plan;
    let steps = [
        Step::ConnectTo(plan.reorg_base_height + 1),
        Step::Flush { empty_cache: true },
        Step::ReorgToFork,
        Step::Reopen { flush_first: false },
        Step::ConnectTo(PROPERTY_BLOCKS),
        Step::OfferStale,
        Step::Reopen { flush_first: true },
    ];
    let driver = check_steps(&steps, 32 << 20);
    let disconnected: Vec<u32> = driver
        .node
        .events()
        .iter()
        .filter_map(|event| match event {
            ChainEvent::Reorganization { disconnected_count, .. } => Some(*disconnected_count),
            _ => None,
        })
        .collect();
    // To the branch (one main block off), again after the crash (the coins
    // were flushed at the main chain's block), and back to the main chain.
    assert_eq!(disconnected, [1, 1, REORG_BRANCH_BLOCKS]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn random_connects_reorgs_flushes_and_reopens_match_a_straight_import(
        steps in proptest::collection::vec(step(), 1..12),
        small_cache in any::<bool>(),
    ) {
        let cache_bytes_max = if small_cache { 1 << 15 } else { 32 << 20 };
        check_steps(&steps, cache_bytes_max);
    }
}
