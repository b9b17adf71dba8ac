//! Where connect finds the coins it spends, counted by the coin's age, checked
//! against what the chain and the flushes make certain, on a scaled-down
//! `utxo-heavy` chain (400 blocks of 100,000 WU, every script checked):
//!
//! - after a flush that empties the cache, every coin made before it is
//!   read from the database (by the prefetch, none by a read at the spend)
//!   and every coin made since is in memory;
//! - in the block right after a background flush starts, the coins the
//!   live map held come from the map being written (memory, no read), and
//!   those an earlier flush wrote from the database;
//! - with a cache so small that it flushes every few blocks, a coin is in
//!   the live map exactly when no flush started between its block and its
//!   spend;
//! - the spends counted add up to the inputs connected;
//! - with BIP34 from block 2 (`-testactivationheight=bip34@2`), where BIP30
//!   is looked up before each block, every lookup (one per output) reaches
//!   the database, as a new output is in neither map; with regtest's BIP34
//!   from block 1 no valid block is looked up at all
//!   ([`ibex_chainstate::connect::Bip30Check::OnFailure`]).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "generated_chains/support.rs"]
mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use ibex_chainstate::{
    ChainEvent, Chainstate, CoinReadCounts, CoinSource, FlushMode, FlushReason, PreparedBlock,
    COIN_AGE_RANGES,
};
use ibex_generator::Profile;
use ibex_primitives::params::RegtestOptions;
use ibex_primitives::{BlockBuffers, Params, Txid};

use support::{offer, Generated, Node};

/// Blocks after genesis.
const BLOCKS: u32 = 400;
/// The sync flush that empties the cache (test one).
const EMPTIED_AT: u32 = 250;
/// The background flush (test one).
const FROZEN_AT: u32 = 330;
/// A coins cache that fills every few blocks (test two).
const SMALL_CACHE_BYTES: usize = 512 << 10;
/// Cache-full flushes the small cache makes at least.
const SMALL_CACHE_FLUSHES_MIN: usize = 10;

/// The chain, its blocks (height = position) and every spend's heights.
struct Chain {
    generated: Generated,
    blocks: Vec<Vec<u8>>,
    /// For each height, the heights of the coins its inputs spend.
    spent_coin_heights: Vec<Vec<u32>>,
    /// For each height, its outputs (coinbase included).
    output_counts: Vec<u64>,
}

fn chain() -> &'static Chain {
    static CHAIN: OnceLock<Chain> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let generated = Generated::new(|options| {
            options.profile = Profile::UtxoHeavy;
            options.blocks = Some(BLOCKS);
            options.target_weight = Some(100_000);
        });
        let blocks = generated.blocks();
        assert_eq!(blocks.len(), BLOCKS as usize + 1, "a chain without forks");
        let (spent_coin_heights, output_counts) = spends_by_height(&blocks);
        Chain { generated, blocks, spent_coin_heights, output_counts }
    })
}

/// Each block's spent coins' heights and its output count, from the
/// blocks alone.
fn spends_by_height(blocks: &[Vec<u8>]) -> (Vec<Vec<u32>>, Vec<u64>) {
    let params = Params::regtest();
    let mut buffers = BlockBuffers::default();
    let mut heights_by_txid: HashMap<Txid, u32> = HashMap::new();
    let mut spent = Vec::new();
    let mut outputs = Vec::new();
    for (height, bytes) in blocks.iter().enumerate() {
        let height = height as u32;
        let block = PreparedBlock::prepare(bytes.clone(), None, &params, &mut buffers).unwrap();
        let mut coin_heights = Vec::new();
        let mut output_count = 0;
        for (transaction, txid) in block.view().transactions().zip(block.txids()) {
            for input in transaction.inputs() {
                let outpoint = input.previous_output();
                if outpoint.is_null() {
                    continue;
                }
                // Made in an earlier transaction, of this block or before.
                let coin_height = heights_by_txid.get(&outpoint.txid).copied();
                coin_heights.push(coin_height.expect("spends a known transaction"));
            }
            output_count += transaction.outputs().len() as u64;
            heights_by_txid.insert(*txid, height);
        }
        spent.push(coin_heights);
        outputs.push(output_count);
    }
    (spent, outputs)
}

/// The counts `classify` gives each spend of the blocks at `heights`.
fn expected(
    heights: std::ops::RangeInclusive<u32>,
    classify: impl Fn(u32, u32) -> CoinSource,
) -> CoinReadCounts {
    let mut counts = CoinReadCounts::default();
    for height in heights {
        for &coin_height in &chain().spent_coin_heights[height as usize] {
            counts.count_spend(height, coin_height, classify(height, coin_height));
        }
    }
    counts
}

/// `later - earlier`, spends only.
fn difference(later: &CoinReadCounts, earlier: &CoinReadCounts) -> CoinReadCounts {
    let mut counts = CoinReadCounts::default();
    let pairs = later.spends.iter().flatten().zip(earlier.spends.iter().flatten());
    for (slot, (after, before)) in counts.spends.iter_mut().flatten().zip(pairs) {
        *slot = after - before;
    }
    counts
}

fn offer_heights(chainstate: &mut Chainstate, heights: std::ops::RangeInclusive<u32>) {
    for height in heights {
        offer(chainstate, &chain().blocks[height as usize]);
    }
}

/// The whole chain's spends add up to its inputs, and BIP30 looked up
/// every output in the database when `bip30_before_each_block`, none
/// otherwise.
fn check_totals(chainstate: &Chainstate, bip30_before_each_block: bool) {
    let statistics = chainstate.statistics();
    let counts = statistics.coin_reads;
    assert_eq!(counts.total_spends(), statistics.inputs_connected);
    let outputs: u64 = chain().output_counts[1..].iter().sum();
    let looked_up = if bip30_before_each_block { outputs } else { 0 };
    assert_eq!(counts.bip30_lookups, looked_up);
    assert_eq!(counts.bip30_database_lookups, looked_up, "a new output is in neither map");
    assert_eq!(counts.spends_from(CoinSource::DirectRead), 0, "the prefetch read every coin");
}

#[test]
fn after_a_flush_older_coins_come_from_the_database_or_the_frozen_map() {
    let chain = chain();
    let node = Node::with_chain(&chain.generated);
    let mut chainstate = node.open();
    chainstate.ensure_genesis().unwrap();
    offer_heights(&mut chainstate, 1..=EMPTIED_AT);
    chainstate.activate_best_chain().unwrap();
    let before_flush = chainstate.statistics().coin_reads;
    chainstate.flush(FlushReason::Shutdown, FlushMode::EmptyCache).unwrap();
    assert_eq!(chainstate.cache().entry_count(), 0);

    offer_heights(&mut chainstate, EMPTIED_AT + 1..=FROZEN_AT);
    chainstate.activate_best_chain().unwrap();
    let after_empty = chainstate.statistics().coin_reads;
    let found = difference(&after_empty, &before_flush);
    let want = expected(EMPTIED_AT + 1..=FROZEN_AT, |_, coin_height| {
        if coin_height <= EMPTIED_AT {
            CoinSource::Prefetch
        } else {
            CoinSource::LiveMap
        }
    });
    assert_eq!(found, want);
    assert!(want.spends_from(CoinSource::Prefetch) > 1_000, "{want:?}");
    assert!(want.spends_from(CoinSource::LiveMap) > 1_000, "{want:?}");
    for range in 0..COIN_AGE_RANGES {
        assert!(found.memory_spends_in_range(range) <= found.spends_in_range(range));
    }

    // A background flush freezes the live map (the coins made since the
    // first flush): the next block finds those in memory, and reads the
    // older ones, written by the first flush, from the database.
    chainstate.flush_in_background(FlushReason::CacheFull, FlushMode::EmptyCache).unwrap();
    offer_heights(&mut chainstate, FROZEN_AT + 1..=FROZEN_AT + 1);
    chainstate.settle().unwrap();
    let after_frozen = chainstate.statistics().coin_reads;
    let found = difference(&after_frozen, &after_empty);
    let where_frozen = |coin_height: u32| match coin_height {
        height if height <= EMPTIED_AT => CoinSource::Prefetch,
        height if height <= FROZEN_AT => CoinSource::FrozenMap,
        _ => CoinSource::LiveMap,
    };
    let want = expected(FROZEN_AT + 1..=FROZEN_AT + 1, |_, coin_height| where_frozen(coin_height));
    assert_eq!(found, want);
    assert!(want.spends_from(CoinSource::FrozenMap) > 0, "{want:?}");

    // Later blocks: the frozen coins from the map or, once it is written
    // and collected, from the database; the rest as before.
    offer_heights(&mut chainstate, FROZEN_AT + 2..=BLOCKS);
    chainstate.activate_best_chain().unwrap();
    let found = difference(&chainstate.statistics().coin_reads, &after_frozen);
    let want = expected(FROZEN_AT + 2..=BLOCKS, |_, coin_height| where_frozen(coin_height));
    for range in 0..COIN_AGE_RANGES {
        let [live_map, frozen_map, prefetch, direct_read] = found.spends[range];
        let [want_live, want_frozen, want_prefetch, _] = want.spends[range];
        assert_eq!(live_map, want_live, "range {range}");
        assert_eq!(direct_read, 0, "range {range}");
        assert_eq!(frozen_map + prefetch, want_frozen + want_prefetch, "range {range}");
        assert!(prefetch >= want_prefetch, "range {range}: written by the first flush");
    }
    check_totals(&chainstate, false);
}

#[test]
fn with_a_small_cache_a_coin_is_in_the_live_map_until_a_flush_starts() {
    let chain = chain();
    let mut node = Node::with_chain(&chain.generated);
    node.cache_bytes_max = SMALL_CACHE_BYTES;
    // BIP30 looked up before every block, as Core does on regtest.
    node.params = RegtestOptions::new().test_activation_height("bip34@2").unwrap().build();
    let flush_heights = Arc::new(Mutex::new(Vec::new()));
    let seen = flush_heights.clone();
    let mut chainstate = node.open_watching(move |event| {
        if let ChainEvent::FlushStarted { reason, height, .. } = event {
            assert_eq!(*reason, FlushReason::CacheFull);
            seen.lock().unwrap().push(*height);
        }
    });
    chainstate.ensure_genesis().unwrap();
    offer_heights(&mut chainstate, 1..=BLOCKS);
    chainstate.activate_best_chain().unwrap();
    let flush_heights = flush_heights.lock().unwrap().clone();
    assert!(flush_heights.len() >= SMALL_CACHE_FLUSHES_MIN, "{flush_heights:?}");

    // A flush at height f froze (and emptied from the live map) every
    // coin of the blocks up to f.
    let flushed_between = |coin_height: u32, height: u32| {
        flush_heights.iter().any(|&flush| coin_height <= flush && flush < height)
    };
    let want = expected(1..=BLOCKS, |height, coin_height| {
        if flushed_between(coin_height, height) {
            CoinSource::Prefetch
        } else {
            CoinSource::LiveMap
        }
    });
    let found = chainstate.statistics().coin_reads;
    for range in 0..COIN_AGE_RANGES {
        let [live_map, frozen_map, prefetch, direct_read] = found.spends[range];
        assert_eq!(live_map, want.spends[range][CoinSource::LiveMap.index()], "range {range}");
        let older = want.spends[range][CoinSource::Prefetch.index()];
        assert_eq!(frozen_map + prefetch + direct_read, older, "range {range}");
    }
    // The block after each flush's start reads the frozen map; coins two
    // flushes old are only in the database.
    assert!(found.spends_from(CoinSource::FrozenMap) > 0, "{found:?}");
    assert!(found.spends_from(CoinSource::Prefetch) > 0, "{found:?}");
    check_totals(&chainstate, true);
    eprintln!("{} cache-full flushes; coin reads {found:?}", flush_heights.len());
}
