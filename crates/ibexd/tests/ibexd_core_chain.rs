//! `ibexd -reindex` on a copy of Core's regtest blocks, then
//! `ibex txoutsetinfo`: Core's `gettxoutsetinfo` answers from
//! `expected.json` at the heights Core reported (via `-stopatheight`, each
//! run continuing the interrupted reindex) and at the tip, and again at the
//! tip after `-reindex-chainstate`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use serde_json::Value;

/// The tip height of Core's chain: a run meant to end with its import
/// stops there at the latest (`-stopatheight`), as `bitcoind` would.
const TIP_STOP: &str = "-stopatheight=1190";

/// `ibexd` with no RPC server, run to its end; the whole log.
fn ibexd(datadir: &Path, extra: &[&str]) -> String {
    let output = common::ibexd(datadir, &common::REGTEST_QUIET, &["-server=0"])
        .args(extra)
        .output()
        .unwrap();
    assert!(output.status.success(), "ibexd failed: {}", String::from_utf8_lossy(&output.stderr));
    common::debug_log(datadir)
}

fn txoutsetinfo(datadir: &Path, hash_type: &str) -> Value {
    common::txoutsetinfo_json(datadir, &[&format!("-hash_type={hash_type}")])
}

/// The fields both answers have, as text (amounts compared as printed).
fn assert_same(ours: &Value, core: &Value, fields: &[&str]) {
    for field in fields {
        assert_eq!(ours[field].to_string(), core[field].to_string(), "field {field}");
    }
}

/// Core's answers for its chain (`expected.json`).
fn core_answers() -> Value {
    let text = std::fs::read_to_string(common::core_chain().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn reindex_then_txoutsetinfo_gives_cores_answers() {
    let expected = core_answers();
    let datadir = tempfile::tempdir().unwrap();
    common::copy_core_blocks(datadir.path());
    let fields = ["height", "bestblock", "txouts", "bogosize", "muhash", "total_amount"];
    for (index, height) in ["100", "600"].iter().enumerate() {
        let mut arguments = vec![format!("-stopatheight={height}")];
        if index == 0 {
            arguments.push("-reindex".to_owned());
        }
        let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
        ibexd(datadir.path(), &arguments);
        let ours = txoutsetinfo(datadir.path(), "muhash");
        assert_same(&ours, &expected["gettxoutsetinfo"][height]["muhash"], &fields);
    }
    let log = ibexd(datadir.path(), &[TIP_STOP]);
    assert!(log.contains("UpdateTip: new best=7720e38fed81718c530b96cb43e3e85b0fb52636e94b768340af9f80ec047b87 height=1190 version=0x20000000 log2_work=11.217958 tx=21357 date='2026-11-22T04:20:36Z'"));
    assert!(log.contains("Reindexing finished"));
    let ours = txoutsetinfo(datadir.path(), "hash_serialized_3");
    let core = &expected["gettxoutsetinfo_tip_hash_serialized_3"];
    let tip_fields = [
        "height",
        "bestblock",
        "txouts",
        "bogosize",
        "hash_serialized_3",
        "total_amount",
        "transactions",
    ];
    assert_same(&ours, core, &tip_fields);
    let ours = txoutsetinfo(datadir.path(), "muhash");
    assert_same(&ours, &expected["gettxoutsetinfo"]["1190"]["muhash"], &fields);
    // -reindex-chainstate: coins rebuilt from the kept index and files.
    let log = ibexd(datadir.path(), &["-reindex-chainstate", TIP_STOP]);
    assert!(log.contains("Loaded 1210 block index entries"));
    let ours = txoutsetinfo(datadir.path(), "hash_serialized_3");
    assert_same(&ours, core, &tip_fields);
}

/// `-reindex-chainstate` while a `-reindex` is unfinished: the blocks the
/// interrupted reindex indexed are connected from their stored positions
/// first, so with `-stopatheight` below them no block file is streamed
/// again ("0 blocks read"), and the coins are Core's at that height.
#[test]
fn reindex_chainstate_after_an_unfinished_reindex_connects_the_stored_blocks_first() {
    let expected = core_answers();
    let datadir = tempfile::tempdir().unwrap();
    common::copy_core_blocks(datadir.path());
    let log = ibexd(datadir.path(), &["-reindex", "-stopatheight=600"]);
    let first_run_bytes = log.len();
    assert!(!log.contains("Reindexing finished: 0 blocks read"), "the first run reads the files");
    let log = ibexd(datadir.path(), &["-reindex-chainstate", "-stopatheight=100"]);
    let second_run = &log[first_run_bytes..];
    assert!(second_run.contains("Reindexing finished: 0 blocks read"), "{second_run}");
    assert!(second_run.contains(" height=100 "), "{second_run}");
    assert!(!second_run.contains(" height=101 "), "{second_run}");
    let fields = ["height", "bestblock", "txouts", "bogosize", "muhash", "total_amount"];
    let ours = txoutsetinfo(datadir.path(), "muhash");
    assert_same(&ours, &expected["gettxoutsetinfo"]["100"]["muhash"], &fields);
}
