//! A pruned initial block download over P2P (`-prune=550`): node A serves
//! a generated chain of ~630 MB unpruned; node B syncs it from A pruning
//! automatically, killed with `kill -9` at ten moments around its prune
//! flushes (each restart goes on from what was durable). A thread measures
//! B's block and undo files every 100 ms through all of it: they never
//! pass the target plus one file pair (B runs with `-fastprune`, so a pair
//! is one block and its undo data, and the bound is tight: the whole chain
//! is well above it). B ends at A's tip with A's UTXO set, with the early
//! files gone, and says so in Core's words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::assumeutxo::{rpc_options, start, stop};
use common::rpc::Endpoint;
use common::{debug_log, free_port, generate_chain, log_bytes, NodeProcess};
use serde_json::json;

/// Blocks of ~0.55 MB after the first 100: ~600 MiB in all, over the
/// target by more than any file pair.
const TIP_HEIGHT: u64 = 1_250;
const TARGET_WEIGHT: &str = "1600000";
const PRUNE_MEBIBYTES: u64 = 550;
/// With `-fastprune` a block of more than 64 KiB has a file of its own: a
/// pair is one block (under 1 MB at this weight) and its undo data.
const FILE_PAIR_BYTES_MAX: u64 = 2 << 20;
/// A's import and B's sync take minutes on a loaded machine.
const SYNC_WAIT: Duration = Duration::from_secs(900);
/// Delays after a prune flush starts at which B is killed, in ms.
const KILL_DELAYS_AFTER_PRUNE_FLUSH_MS: [u64; 10] = [0, 2, 5, 10, 20, 40, 80, 150, 300, 600];
const MEASURE_INTERVAL: Duration = Duration::from_millis(100);

/// Bytes of the `blk` and `rev` files in `blocks`.
fn block_files_bytes(blocks: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(blocks) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            name.starts_with("blk") || name.starts_with("rev")
        })
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .sum()
}

/// Measures `blocks` every 100 ms until `done`; the largest reading.
fn measure(blocks: PathBuf, done: Arc<AtomicBool>, largest: Arc<AtomicU64>) {
    while !done.load(Ordering::Relaxed) {
        largest.fetch_max(block_files_bytes(&blocks), Ordering::Relaxed);
        std::thread::sleep(MEASURE_INTERVAL);
    }
}

/// Node A: the chain's files linked into its blocks directory, reindexed,
/// listening.
fn serve(root: &Path) -> (PathBuf, Endpoint, NodeProcess, u16) {
    let chain = root.join("chain");
    generate_chain(
        &chain,
        "bench",
        &TIP_HEIGHT.to_string(),
        "5",
        &["--target-weight", TARGET_WEIGHT],
    );
    let datadir = root.join("a");
    let blocks = datadir.join("regtest/blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for entry in std::fs::read_dir(&chain).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("blk") || name == "xor.dat" {
            std::os::unix::fs::symlink(entry.path(), blocks.join(&name)).unwrap();
        }
    }
    let (rpc_port, p2p_port) = (free_port(), free_port());
    let mut options = rpc_options(rpc_port);
    options.extend(["-reindex", "-listen=1", "-bind=127.0.0.1"].map(str::to_owned));
    options.push(format!("-port={p2p_port}"));
    let mut process = start(&datadir, &options);
    let endpoint = Endpoint { port: rpc_port };
    wait_for_tip(endpoint, &mut process);
    (datadir, endpoint, process, p2p_port)
}

/// Waits until `endpoint`'s node is at [`TIP_HEIGHT`]; it must stay up.
fn wait_for_tip(endpoint: Endpoint, process: &mut NodeProcess) {
    let started = Instant::now();
    loop {
        assert!(process.try_wait().unwrap().is_none(), "the node exited");
        let answering = std::net::TcpStream::connect(("127.0.0.1", endpoint.port)).is_ok();
        if answering && endpoint.request("getblockcount", &json!([]))["result"] == TIP_HEIGHT {
            return;
        }
        assert!(started.elapsed() < SYNC_WAIT, "no tip at {TIP_HEIGHT}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Starts B, waits for a prune flush to start, waits `delay_ms` and kills
/// it; false when B reached the tip first (nothing left to interrupt).
fn kill_after_prune_flush(datadir: &Path, options: &[String], b: Endpoint, delay_ms: u64) -> bool {
    let offset = log_bytes(datadir);
    let mut process = start(datadir, options);
    let started = Instant::now();
    loop {
        let log = std::fs::read(common::debug_log_path(datadir)).unwrap_or_default();
        let new = String::from_utf8_lossy(log.get(offset..).unwrap_or_default());
        if new.contains("FlushStateToDisk start (prune)") {
            break;
        }
        let answering = std::net::TcpStream::connect(("127.0.0.1", b.port)).is_ok();
        let at_tip = answering && b.request("getblockcount", &json!([]))["result"] == TIP_HEIGHT;
        if at_tip || process.try_wait().unwrap().is_some() {
            stop(b, &mut process, datadir);
            return false;
        }
        assert!(started.elapsed() < SYNC_WAIT, "no prune flush");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(delay_ms));
    process.kill().unwrap();
    process.wait().unwrap();
    true
}

#[test]
fn a_pruned_sync_stays_under_its_target_survives_kill_nine_and_ends_with_the_same_coins() {
    let root = tempfile::tempdir().unwrap();
    let (a_datadir, a, mut a_process, a_p2p) = serve(root.path());
    let a_coins = a.call("gettxoutsetinfo", json!([]));

    let b_datadir = root.path().join("b");
    std::fs::create_dir_all(&b_datadir).unwrap();
    let b = Endpoint { port: free_port() };
    let mut options = rpc_options(b.port);
    options.extend([
        format!("-prune={PRUNE_MEBIBYTES}"),
        "-fastprune".to_owned(),
        "-listen=0".to_owned(),
        "-dbcache=50".to_owned(),
        format!("-connect=127.0.0.1:{a_p2p}"),
    ]);
    let done = Arc::new(AtomicBool::new(false));
    let largest = Arc::new(AtomicU64::new(0));
    let measuring = {
        let (blocks, done, largest) =
            (b_datadir.join("regtest/blocks"), done.clone(), largest.clone());
        std::thread::spawn(move || measure(blocks, done, largest))
    };

    let mut kills = 0;
    for delay_ms in KILL_DELAYS_AFTER_PRUNE_FLUSH_MS {
        if !kill_after_prune_flush(&b_datadir, &options, b, delay_ms) {
            break;
        }
        kills += 1;
    }
    assert!(kills >= 5, "only {kills} prune flushes were interrupted");

    let mut process = start(&b_datadir, &options);
    wait_for_tip(b, &mut process);
    done.store(true, Ordering::Relaxed);
    measuring.join().unwrap();
    let bound = (PRUNE_MEBIBYTES << 20) + FILE_PAIR_BYTES_MAX;
    let largest = largest.load(Ordering::Relaxed);
    assert!(largest <= bound, "the block files reached {largest} bytes, over {bound}");

    let coins = b.call("gettxoutsetinfo", json!([]));
    assert_eq!(coins["hash_serialized_3"], a_coins["hash_serialized_3"]);
    assert_eq!(coins["height"], TIP_HEIGHT);
    let blocks = b_datadir.join("regtest/blocks");
    assert!(!blocks.join("blk00000.dat").exists() && !blocks.join("rev00000.dat").exists());
    let now = block_files_bytes(&blocks);
    assert!(now <= bound, "{now}");
    let log = debug_log(&b_datadir);
    assert!(log.contains("[prune] [normal] target=550MiB actual="));
    // A kill may land between a removal and its line: some lines, not
    // every one, are certain.
    assert!(log.contains("[blockstorage] Prune: UnlinkPrunedFiles deleted blk/rev ("));
    stop(b, &mut process, &b_datadir);
    stop(a, &mut a_process, &a_datadir);
}
