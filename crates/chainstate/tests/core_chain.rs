//! The Core-made regtest chain (`shared/chains/core-wallet-mix`): `-reindex`
//! of a copy of Core's `blocks/` reaches Core's tip and reproduces every
//! value of Core's `expected.json` that the chainstate computes:
//! `gettxoutsetinfo` (muhash, txouts, bogosize, total_amount) at each
//! height Core reported, `hash_serialized_3` and `transactions` at the tip,
//! `getchaintips` as `bitcoind -reindex` answers it, and
//! `getblockchaininfo`'s chain fields. The undo records Core wrote for the
//! main chain are reproduced byte for byte, in Core's order, and none for
//! the stale branches: a reindex never connects them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use ibex_blockstore::{
    block_file_path, read_block_file, read_obfuscation_key, undo_checksum, undo_file_path, Records,
    UndoRecords,
};
use ibex_chainstate::{
    import_blocks, txoutset_stats, ChainEvent, Chainstate, ChainstateOptions, FlushMode,
    FlushReason, ImportSource,
};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, BlockView, Params};
use serde_json::Value;

fn shared_chain() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix")
}

fn expected() -> Value {
    let text = std::fs::read_to_string(shared_chain().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A datadir-like directory with a copy of Core's block file and key.
fn copy_blocks(root: &Path) -> PathBuf {
    let blocks = root.join("blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for name in ["blk00000.dat", "xor.dat"] {
        std::fs::copy(shared_chain().join("blocks").join(name), blocks.join(name)).unwrap();
    }
    blocks
}

type Events = std::sync::Arc<std::sync::Mutex<Vec<ChainEvent>>>;

fn open(root: &Path, blocks: &Path, events: Events) -> Chainstate {
    open_with_cache(root, blocks, events, 32 << 20)
}

fn open_with_cache(
    root: &Path,
    blocks: &Path,
    events: Events,
    cache_bytes_max: usize,
) -> Chainstate {
    let options = ChainstateOptions {
        params: Params::regtest(),
        blocks_directory: blocks.to_path_buf(),
        chainstate_directory: root.join("chainstate"),
        memory: ibex_chainstate::MemoryBudget::for_coins_bytes(cache_bytes_max, 1 << 20),
        script_threads: 2,
        assume_valid: None,
        periodic_flush_interval: Duration::from_secs(3600),
        stop_at_height: None,
        prune: ibex_chainstate::PruneMode::Disabled,
        fast_prune: false,
    };
    let observer = move |event: &ChainEvent| events.lock().unwrap().push(event.clone());
    Chainstate::open(options, Box::new(observer)).unwrap()
}

/// Core's tip height (`getblockchaininfo`'s `blocks`).
fn tip_height(expected: &Value) -> u64 {
    expected["getblockchaininfo"]["blocks"].as_u64().unwrap()
}

fn btc(value: &Value) -> i64 {
    let text = value.to_string();
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, "0"));
    let fraction = format!("{fraction:0<8}");
    whole.parse::<i64>().unwrap() * 100_000_000 + fraction[..8].parse::<i64>().unwrap()
}

#[test]
fn reindex_reproduces_cores_answers() {
    let expected = expected();
    let root = tempfile::tempdir().unwrap();
    let blocks = copy_blocks(root.path());
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut chainstate = open(root.path(), &blocks, events.clone());
    let shutdown = AtomicBool::new(false);
    let infos = expected["gettxoutsetinfo"].as_object().unwrap();
    let mut heights: Vec<u32> = infos.keys().map(|key| key.parse().unwrap()).collect();
    heights.sort_unstable();
    for height in heights {
        chainstate.set_stop_at_height(Some(height));
        import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &shutdown).unwrap();
        assert_eq!(chainstate.tip().unwrap().1, height);
        chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
        let stats =
            txoutset_stats(chainstate.cache().database(), TxOutSetHashType::MuHash).unwrap();
        let core = &infos[&height.to_string()]["muhash"];
        assert_eq!(chainstate.tip().unwrap().0.to_hex(), core["bestblock"].as_str().unwrap());
        assert_eq!(
            stats.hash.unwrap().to_hex(),
            core["muhash"].as_str().unwrap(),
            "muhash at {height}"
        );
        assert_eq!(stats.txouts, core["txouts"].as_u64().unwrap(), "txouts at {height}");
        assert_eq!(stats.bogosize, core["bogosize"].as_u64().unwrap(), "bogosize at {height}");
        assert_eq!(stats.total_amount.unwrap(), btc(&core["total_amount"]), "amount at {height}");
    }
    chainstate.set_stop_at_height(None);
    import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &shutdown).unwrap();
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    check_tip(&chainstate, &expected);
    check_chain_tips(&chainstate, &expected);
    let events = events.lock().unwrap();
    let invalid =
        events.iter().filter(|event| matches!(event, ChainEvent::BlockInvalid { .. })).count();
    assert_eq!(invalid, 0);
    // Only the main chain was connected, each block once, across every
    // stop and continuation: no stale block, no reorganisation.
    let reorganisations =
        events.iter().filter(|event| matches!(event, ChainEvent::Reorganization { .. })).count();
    assert_eq!(reorganisations, 0);
    let statistics = chainstate.statistics();
    assert_eq!(statistics.blocks_connected, tip_height(&expected) + 1, "genesis and main chain");
    assert_eq!(statistics.blocks_disconnected, 0);
}

fn check_tip(chainstate: &Chainstate, expected: &Value) {
    let core = &expected["gettxoutsetinfo_tip_hash_serialized_3"];
    let stats =
        txoutset_stats(chainstate.cache().database(), TxOutSetHashType::HashSerialized3).unwrap();
    let (hash, height) = chainstate.tip().unwrap();
    assert_eq!(hash.to_hex(), core["bestblock"].as_str().unwrap());
    assert_eq!(u64::from(height), core["height"].as_u64().unwrap());
    assert_eq!(stats.hash.unwrap().to_hex(), core["hash_serialized_3"].as_str().unwrap());
    assert_eq!(stats.transactions, core["transactions"].as_u64().unwrap());
    assert_eq!(stats.txouts, core["txouts"].as_u64().unwrap());
    let info = &expected["getblockchaininfo"];
    let tip = chainstate.chain().tip().unwrap();
    let entry = chainstate.index().entry(tip);
    assert_eq!(entry.chain_work.to_u256().to_hex(), info["chainwork"].as_str().unwrap());
    assert_eq!(chainstate.index().median_time_past(tip), info["mediantime"].as_i64().unwrap());
    assert_eq!(i64::from(entry.header.time), info["time"].as_i64().unwrap());
    assert_eq!(chainstate.best_header().unwrap().to_hex(), info["bestblockhash"].as_str().unwrap());
}

/// A `getchaintips` entry: hash, height, branch length, status.
type Tip = (String, u64, u64, String);

/// Core's `getchaintips` after `bitcoind -reindex` of its block files:
/// every tip `expected.json` lists, with the same heights and branch
/// lengths, the stale ones `valid-headers`. `expected.json` was taken from
/// the node that mined the chain, which connected each stale branch before
/// reorganising away from it (`valid-fork`: `BLOCK_VALID_SCRIPTS`); a
/// reindex accepts every block (`LoadExternalBlockFile`) and activates the
/// best chain once, at the end (`ImportBlocks`), so it never validates a
/// stale block's scripts: `valid-headers` (data here, never fully validated).
fn cores_tips_after_reindex(expected: &Value) -> Vec<Tip> {
    let tips: Vec<Tip> = expected["getchaintips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tip| {
            let status = match tip["status"].as_str().unwrap() {
                "active" => "active",
                "valid-fork" => "valid-headers",
                other => panic!("a tip status the reindex mapping does not know: {other}"),
            };
            (
                tip["hash"].as_str().unwrap().to_string(),
                tip["height"].as_u64().unwrap(),
                tip["branchlen"].as_u64().unwrap(),
                status.to_string(),
            )
        })
        .collect();
    let stale = tips.iter().filter(|tip| tip.3 == "valid-headers").count();
    assert_eq!(stale as u64, expected["stale_branches_made"].as_u64().unwrap());
    tips
}

fn check_chain_tips(chainstate: &Chainstate, expected: &Value) {
    let mut ours: Vec<Tip> = chainstate
        .chain_tips()
        .into_iter()
        .map(|tip| {
            (
                tip.hash.to_hex(),
                u64::from(tip.height),
                u64::from(tip.branch_length),
                tip.status.to_string(),
            )
        })
        .collect();
    let mut core = cores_tips_after_reindex(expected);
    ours.sort();
    core.sort();
    assert_eq!(ours, core);
}

/// Connecting the main chain in the order Core's block file holds it writes
/// the undo records Core wrote for it, byte for byte and in the same order,
/// and none for the stale blocks. Core's `rev00000.dat` also holds a record
/// for each stale block (its node connected them while mining); a
/// `bitcoind -reindex` rewrites the file from its start with the main
/// chain's records alone (`FindUndoPos` from an undo size reset to zero),
/// which is what ours must be.
#[test]
fn reindex_writes_cores_undo_records_for_the_main_chain_alone() {
    let root = tempfile::tempdir().unwrap();
    let blocks = copy_blocks(root.path());
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut chainstate = open(root.path(), &blocks, events);
    import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false)).unwrap();
    chainstate.flush(FlushReason::Shutdown, FlushMode::EmptyCache).unwrap();
    let ours = undo_records(&blocks);
    let core_directory = shared_chain().join("blocks");
    let core = undo_records(&core_directory);
    let expected = expected();
    assert_eq!(ours.len() as u64, tip_height(&expected), "one record per block but genesis");
    let stale_parents = stale_block_parents(&core_directory, &expected);
    let mut ours_left = ours.iter().peekable();
    let mut skipped = 0;
    for record in &core {
        if ours_left.peek() == Some(&record) {
            ours_left.next();
            continue;
        }
        let (payload, checksum) = record;
        let of_stale_block =
            stale_parents.iter().any(|parent| undo_checksum(parent, payload) == *checksum);
        assert!(of_stale_block, "a record of Core's for a main-chain block is not ours");
        skipped += 1;
    }
    assert!(ours_left.next().is_none(), "ours has records Core's file lacks");
    assert_eq!(skipped, stale_parents.len(), "one record of Core's per stale block left out");
}

/// The undo records of `directory`'s `rev00000.dat`: payload and checksum.
fn undo_records(directory: &Path) -> Vec<(Vec<u8>, [u8; 32])> {
    let key = read_obfuscation_key(directory).unwrap();
    let image = read_block_file(&undo_file_path(directory, 0), &key).unwrap();
    let magic = Params::regtest().message_start;
    UndoRecords::new(&image, magic)
        .map(|record| (record.payload.to_vec(), *record.checksum))
        .collect()
}

/// The parent of each stale block (the blocks of every branch
/// `getchaintips` lists beside the active one), from the block file.
fn stale_block_parents(directory: &Path, expected: &Value) -> Vec<BlockHash> {
    let key = read_obfuscation_key(directory).unwrap();
    let image = read_block_file(&block_file_path(directory, 0), &key).unwrap();
    let magic = Params::regtest().message_start;
    let parents: std::collections::HashMap<BlockHash, BlockHash> = Records::new(&image, magic)
        .map(|record| *BlockView::parse(record.bytes).unwrap().header())
        .map(|header| (header.block_hash(), header.previous_block_hash))
        .collect();
    let mut stale_parents = Vec::new();
    for tip in cores_tips_after_reindex(expected).into_iter().filter(|tip| tip.2 > 0) {
        let mut block = BlockHash::from_hex(&tip.0).unwrap();
        for _ in 0..tip.2 {
            let parent = parents[&block];
            stale_parents.push(parent);
            block = parent;
        }
    }
    stale_parents
}

/// With a cache far smaller than the UTXO set, flushes run on the writer
/// thread while blocks connect: each one is reported once, validation
/// waits little, and the result is still Core's.
#[test]
fn background_flushes_are_reported_and_reach_cores_utxo_set() {
    let expected = expected();
    let root = tempfile::tempdir().unwrap();
    let blocks = copy_blocks(root.path());
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut chainstate = open_with_cache(root.path(), &blocks, events.clone(), 256 << 10);
    import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false)).unwrap();
    chainstate.flush(FlushReason::Shutdown, FlushMode::EmptyCache).unwrap();
    let flushes = paired_flushes(&events.lock().unwrap());
    let background = flushes.iter().filter(|reason| **reason == FlushReason::CacheFull).count();
    assert!(background >= 2, "{flushes:?}");
    assert_eq!(flushes.last(), Some(&FlushReason::Shutdown));
    assert_eq!(chainstate.statistics().flushes, flushes.len() as u64);
    check_tip(&chainstate, &expected);
}

/// The reasons of the flushes `events` report, checked to come in pairs:
/// `FlushStarted` (in the background unless at shutdown), then its
/// `Flushed` with every changed coin written or erased, before the next
/// flush starts; each at a tip no lower than the one before.
fn paired_flushes(events: &[ChainEvent]) -> Vec<FlushReason> {
    let mut reasons = Vec::new();
    let mut started: Option<(FlushReason, usize)> = None;
    let mut last_height = 0;
    for event in events {
        match event {
            ChainEvent::FlushStarted { reason, height, changed_coin_count, background, .. } => {
                assert!(started.is_none(), "a flush started before the last one ended");
                assert_eq!(*background, *reason != FlushReason::Shutdown, "{event:?}");
                assert!(*height >= last_height, "{event:?}");
                last_height = *height;
                started = Some((*reason, *changed_coin_count));
            }
            ChainEvent::Flushed { reason, stats, .. } => {
                let (started_reason, changed_coin_count) = started.take().expect("no start");
                assert_eq!(*reason, started_reason);
                let written = stats.coins_written + stats.coins_erased;
                assert_eq!(written, changed_coin_count as u64, "{event:?}");
                reasons.push(*reason);
            }
            _ => {}
        }
    }
    assert!(started.is_none(), "a flush started and never ended");
    reasons
}
