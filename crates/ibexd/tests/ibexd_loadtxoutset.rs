//! `loadtxoutset` end to end on a generated chain, as Core's
//! `feature_assumeutxo.py` drives it: node A serves the chain and dumps
//! its coins at height 200 (`dumptxoutset ... rollback`); node B, given
//! that block's AssumeUTXO entry (`-testassumeutxo`) and the headers
//! (`submitheader`), refuses bad files with Core's codes and words
//! (nothing left in its data directory), loads the good one, restarts
//! with both chainstates, syncs from A over P2P: the snapshot chainstate
//! to the tip, the background one from genesis to 200, where it proves the
//! snapshot and is dropped. B ends with A's UTXO set, and its next start
//! makes the snapshot's directory its chainstate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::assumeutxo::{rpc_options, serve_and_dump, start, stop, Served};
use common::rpc::Endpoint;
use common::{debug_log, free_port, log_bytes, wait_for_log, wait_for_log_after, NodeProcess};
use serde_json::{json, Value};

const TIP_HEIGHT: u64 = 300;
const BASE_HEIGHT: u64 = 200;

/// Polls `condition` of `endpoint`'s answers until it holds.
fn wait_until(what: &str, process: &mut NodeProcess, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(process.try_wait().unwrap().is_none(), "the node exited waiting for {what}");
        assert!(started.elapsed() < Duration::from_secs(180), "no {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `endpoint`'s `getnetworkinfo` `localservicesnames`.
fn local_service_names(endpoint: Endpoint) -> Vec<String> {
    let info = endpoint.request("getnetworkinfo", &json!([]))["result"].clone();
    let names = info["localservicesnames"].as_array().cloned().unwrap_or_default();
    names.iter().filter_map(|name| name.as_str().map(str::to_owned)).collect()
}

/// Whether `names` offer every block (`NETWORK`) or, as Core's node does
/// while a snapshot is not validated, only the recent ones.
fn offers_all_blocks(names: &[String]) -> bool {
    assert!(names.iter().any(|name| name == "NETWORK_LIMITED"), "{names:?}");
    names.iter().any(|name| name == "NETWORK")
}

/// Node B's refusals before the load: each with Core's code and words,
/// and no snapshot directory left behind.
fn refusals(b: Endpoint, b_datadir: &Path, snapshot: &Path, base_hash: &str) {
    let chain = b_datadir.join("regtest");
    let missing = chain.join("missing.dat");
    let (code, message) = b.error("loadtxoutset", json!(["missing.dat"]));
    assert_eq!(
        (code, message),
        (-8, format!("Couldn't open file {} for reading.", missing.display()))
    );
    let garbage = chain.join("garbage.dat");
    std::fs::write(&garbage, b"not a snapshot at all, but long enough for a header....").unwrap();
    let (code, message) = b.error("loadtxoutset", json!([garbage]));
    assert_eq!(code, -22);
    assert!(
        message.starts_with("Unable to parse metadata: Invalid UTXO set snapshot magic bytes."),
        "{message}"
    );
    let (code, message) = b.error("loadtxoutset", json!([snapshot]));
    assert_eq!(code, -32603);
    assert_eq!(
        message,
        format!(
            "Unable to load UTXO snapshot: The base block header ({base_hash}) must appear in the headers chain. Make sure all headers are syncing, and call loadtxoutset again. ({})",
            snapshot.display()
        )
    );
    assert!(!chain.join("chainstate_snapshot").exists());
}

/// A copy of `snapshot` with its last coin's script changed.
fn forged_copy(snapshot: &Path, directory: &Path) -> PathBuf {
    let mut bytes = std::fs::read(snapshot).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x01;
    let forged = directory.join("forged.dat");
    std::fs::write(&forged, bytes).unwrap();
    forged
}

#[test]
fn a_snapshot_loads_syncs_over_p2p_and_the_background_proves_it() {
    let root = tempfile::tempdir().unwrap();
    // A: serves the chain and dumps its coins at the base.
    let served = serve_and_dump(root.path(), "tiny", TIP_HEIGHT, BASE_HEIGHT, "21");
    let Served { datadir: a_datadir, endpoint: a, process: mut a_process, p2p_port: a_p2p, .. } =
        served;
    let (dumped, snapshot, entry) = (served.dumped, served.snapshot, served.entry_option);
    let (hashes, headers, a_coins) = (served.hashes, served.headers, served.coins_at_tip);
    let base_hash = dumped["base_hash"].as_str().unwrap().to_owned();

    // B: empty, the entry given; no peer yet.
    let b_datadir = root.path().join("b");
    std::fs::create_dir_all(&b_datadir).unwrap();
    let b_rpc = free_port();
    let mut b_options = rpc_options(b_rpc);
    b_options.extend([entry.clone(), "-listen=0".to_owned()]);
    let mut b_process = start(&b_datadir, &b_options);
    let b = Endpoint { port: b_rpc };
    wait_for_log(&b_datadir, "init message: Done loading", &mut b_process);
    refusals(b, &b_datadir, &snapshot, &base_hash);

    // The headers, as Core's test gives them: `submitheader`.
    let (code, message) = b.error("submitheader", json!([headers[1]]));
    assert_eq!(code, -25);
    assert_eq!(
        message,
        format!("Must submit previous header ({}) first", hashes[0].as_str().unwrap())
    );
    assert_eq!(
        b.error("submitheader", json!(["00"])),
        (-22, "Block header decode failed".to_owned())
    );
    for header in &headers {
        assert_eq!(b.call("submitheader", json!([header])), Value::Null);
    }
    assert_eq!(b.call("getblockchaininfo", json!([]))["headers"], TIP_HEIGHT);

    // A forged file: its hash is not the entry's; nothing is left behind.
    let forged = forged_copy(&snapshot, root.path());
    let (code, message) = b.error("loadtxoutset", json!([forged]));
    assert_eq!(code, -32603);
    assert!(
        message.starts_with(&format!(
            "Unable to load UTXO snapshot: Population failed: Bad snapshot content hash: expected {}, got ",
            dumped["txoutset_hash"].as_str().unwrap()
        )),
        "{message}"
    );
    assert!(!b_datadir.join("regtest/chainstate_snapshot").exists());

    let loaded = b.call("loadtxoutset", json!([snapshot]));
    assert_eq!(loaded["coins_loaded"], dumped["coins_written"]);
    assert_eq!(loaded["tip_hash"], base_hash.as_str());
    assert_eq!(loaded["base_height"], BASE_HEIGHT);
    assert_eq!(b.call("getblockcount", json!([])), BASE_HEIGHT);
    let states = b.call("getchainstates", json!([]));
    let listed = states["chainstates"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{states}");
    assert_eq!(
        (listed[0]["blocks"].clone(), listed[0]["validated"].clone()),
        (json!(0), json!(true))
    );
    assert_eq!(listed[1]["blocks"], BASE_HEIGHT);
    assert_eq!(listed[1]["snapshot_blockhash"], base_hash.as_str());
    assert_eq!(listed[1]["validated"], false);
    let background = &b.call("getblockchaininfo", json!([]))["backgroundvalidation"];
    assert_eq!(
        (background["snapshotheight"].clone(), background["blocks"].clone()),
        (json!(BASE_HEIGHT), json!(0))
    );
    // Core's `loadtxoutset`: no NODE_NETWORK until the snapshot is
    // validated (the sync loop sees the load within a pass).
    wait_until("NODE_NETWORK withdrawn", &mut b_process, || {
        !offers_all_blocks(&local_service_names(b))
    });
    let (code, message) = b.error("loadtxoutset", json!([snapshot]));
    assert_eq!(code, -32603);
    assert!(
        message.contains("Can't activate a snapshot-based chainstate more than once"),
        "{message}"
    );

    // A restart finds both chainstates; with A as its peer B syncs both.
    stop(b, &mut b_process, &b_datadir);
    let offset = log_bytes(&b_datadir);
    b_options.push(format!("-connect=127.0.0.1:{a_p2p}"));
    let mut b_process = start(&b_datadir, &b_options);
    wait_for_log_after(
        &b_datadir,
        "[snapshot] detected active snapshot chainstate",
        offset,
        &mut b_process,
    );
    // Core's init: a node started with an unvalidated snapshot announces
    // no NODE_NETWORK, from its first connection on.
    wait_for_log_after(
        &b_datadir,
        "Running node in NODE_NETWORK_LIMITED mode until snapshot background sync completes",
        offset,
        &mut b_process,
    );
    b.wait_for_height(TIP_HEIGHT, &mut b_process);
    wait_until("a validated snapshot", &mut b_process, || {
        let states = b.request("getchainstates", &json!([]))["result"].clone();
        states["chainstates"]
            .as_array()
            .is_some_and(|listed| listed.len() == 1 && listed[0]["validated"] == true)
    });
    let log = debug_log(&b_datadir);
    assert!(
        log.contains(&format!(
            "[snapshot] snapshot beginning at {base_hash} has been fully validated"
        )),
        "{log}"
    );
    assert!(b.call("getblockchaininfo", json!([])).get("backgroundvalidation").is_none());
    wait_until("NODE_NETWORK restored", &mut b_process, || {
        offers_all_blocks(&local_service_names(b))
    });
    assert!(debug_log(&b_datadir).contains("[snapshot] re-enabling NODE_NETWORK services"));
    let b_coins = b.call("gettxoutsetinfo", json!([]));
    assert_eq!(b_coins["hash_serialized_3"], a_coins["hash_serialized_3"]);
    assert_eq!(b_coins["height"], TIP_HEIGHT);
    assert!(!b_datadir.join("regtest/chainstate").exists(), "the background's coins are deleted");

    // The next start: the snapshot's directory is the chainstate.
    stop(b, &mut b_process, &b_datadir);
    let offset = log_bytes(&b_datadir);
    let mut b_process = start(&b_datadir, &b_options[..b_options.len() - 1]);
    wait_for_log_after(&b_datadir, "init message: Done loading", offset, &mut b_process);
    assert!(b_datadir.join("regtest/chainstate").exists());
    assert!(!b_datadir.join("regtest/chainstate_snapshot").exists());
    assert_eq!(b.call("getblockcount", json!([])), TIP_HEIGHT);
    let listed = b.call("getchainstates", json!([]))["chainstates"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert!(listed[0].get("snapshot_blockhash").is_none());
    assert_eq!(
        b.call("gettxoutsetinfo", json!([]))["hash_serialized_3"],
        a_coins["hash_serialized_3"]
    );
    stop(b, &mut b_process, &b_datadir);
    stop(a, &mut a_process, &a_datadir);
}
