//! AssumeUTXO under `kill -9`: node B is killed while `loadtxoutset` loads,
//! then several times while it syncs from node A with two chainstates (the
//! snapshot's to the tip, the background one towards the base, with a tiny
//! `-dbcache` so coins flushes happen all along). Every start comes back
//! consistent (an unfinished load is gone and loads again; a loaded
//! snapshot is opened with its background chainstate), and the last run
//! proves the snapshot and ends with A's UTXO set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::assumeutxo::{rpc_options, serve_and_dump, start, stop, submit_headers};
use common::rpc::Endpoint;
use common::{debug_log, free_port, log_bytes, wait_for_log_after};
use serde_json::json;

const TIP_HEIGHT: u64 = 400;
const BASE_HEIGHT: u64 = 300;
/// Moments after a start at which B is killed while it syncs, in ms.
const KILL_DELAYS_MS: [u64; 6] = [150, 400, 700, 1000, 1500, 2500];

/// How many chainstates B lists (`getchainstates`).
fn chainstate_count(endpoint: Endpoint) -> usize {
    let states = endpoint.call("getchainstates", json!([]));
    states["chainstates"].as_array().map_or(0, Vec::len)
}

#[test]
fn kill_nine_while_loading_and_syncing_two_chainstates_comes_back_consistent() {
    let root = tempfile::tempdir().unwrap();
    let mut served = serve_and_dump(root.path(), "small", TIP_HEIGHT, BASE_HEIGHT, "23");
    let b_datadir = root.path().join("b");
    std::fs::create_dir_all(&b_datadir).unwrap();
    let b = Endpoint { port: free_port() };
    let mut options = rpc_options(b.port);
    options.extend([served.entry_option.clone(), "-listen=0".to_owned(), "-dbcache=4".to_owned()]);
    let snapshot_directory = b_datadir.join("regtest/chainstate_snapshot");

    // Killed while the load may be running.
    let mut process = start(&b_datadir, &options);
    wait_for_log_after(&b_datadir, "init message: Done loading", 0, &mut process);
    submit_headers(b, &served);
    let snapshot = served.snapshot.clone();
    let loading = std::thread::spawn(move || b.request("loadtxoutset", &json!([snapshot])));
    std::thread::sleep(Duration::from_millis(30));
    process.kill().unwrap();
    process.wait().unwrap();
    // The loading thread sees its connection drop (or its answer): either.
    let _ = loading.join();
    let offset = log_bytes(&b_datadir);
    let mut process = start(&b_datadir, &options);
    wait_for_log_after(&b_datadir, "init message: Done loading", offset, &mut process);
    match chainstate_count(b) {
        1 => {
            assert!(!snapshot_directory.exists(), "an unfinished load is removed at start");
            // Headers live in memory until a flush writes the index (as in
            // Core): a killed node is given them again.
            submit_headers(b, &served);
            let loaded = b.call("loadtxoutset", json!([served.snapshot]));
            assert_eq!(loaded["base_height"], BASE_HEIGHT);
        }
        2 => assert!(snapshot_directory.join("base_blockhash").exists()),
        other => panic!("{other} chainstates\n{}", debug_log(&b_datadir)),
    }
    assert_eq!(chainstate_count(b), 2);
    stop(b, &mut process, &b_datadir);

    // Killed at moments of the sync from A; each start opens both.
    options.push(format!("-connect=127.0.0.1:{}", served.p2p_port));
    for delay_ms in KILL_DELAYS_MS {
        let offset = log_bytes(&b_datadir);
        let mut process = start(&b_datadir, &options);
        wait_for_log_after(&b_datadir, "init message: Done loading", offset, &mut process);
        std::thread::sleep(Duration::from_millis(delay_ms));
        process.kill().unwrap();
        process.wait().unwrap();
    }

    let offset = log_bytes(&b_datadir);
    let mut process = start(&b_datadir, &options);
    wait_for_log_after(&b_datadir, "init message: Done loading", offset, &mut process);
    b.wait_for_height(TIP_HEIGHT, &mut process);
    wait_for_log_after(&b_datadir, "has been fully validated", 0, &mut process);
    let coins = b.call("gettxoutsetinfo", json!([]));
    assert_eq!(coins["hash_serialized_3"], served.coins_at_tip["hash_serialized_3"]);
    let listed = b.call("getchainstates", json!([]))["chainstates"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["validated"], true);
    stop(b, &mut process, &b_datadir);
    stop(served.endpoint, &mut served.process, &served.datadir);
}
