//! `ibexd -reindex` on a copy of Core's regtest blocks, then
//! `ibex txoutsetinfo`: Core's `gettxoutsetinfo` answers from
//! `expected.json` at the heights Core reported (via `-stopatheight`, each
//! run continuing the interrupted reindex) and at the tip, and again at the
//! tip after `-reindex-chainstate`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn shared_chain() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/chains/core-wallet-mix")
}

fn ibexd(datadir: &Path, extra: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_ibexd"))
        .arg(format!("-datadir={}", datadir.display()))
        .arg("-regtest")
        .arg("-printtoconsole=0")
        .args(extra)
        .output()
        .unwrap();
    assert!(output.status.success(), "ibexd failed: {}", String::from_utf8_lossy(&output.stderr));
    std::fs::read_to_string(datadir.join("regtest/debug.log")).unwrap()
}

fn txoutsetinfo(datadir: &Path, hash_type: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_ibex"))
        .args(["txoutsetinfo", &format!("-datadir={}", datadir.display()), "-regtest"])
        .arg(format!("-hash_type={hash_type}"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The fields both answers have, as text (amounts compared as printed).
fn assert_same(ours: &Value, core: &Value, fields: &[&str]) {
    for field in fields {
        assert_eq!(ours[field].to_string(), core[field].to_string(), "field {field}");
    }
}

#[test]
fn reindex_then_txoutsetinfo_gives_cores_answers() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(shared_chain().join("expected.json")).unwrap(),
    )
    .unwrap();
    let datadir = tempfile::tempdir().unwrap();
    let blocks = datadir.path().join("regtest/blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for name in ["blk00000.dat", "xor.dat"] {
        std::fs::copy(shared_chain().join("blocks").join(name), blocks.join(name)).unwrap();
    }
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
    let log = ibexd(datadir.path(), &[]);
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
    let log = ibexd(datadir.path(), &["-reindex-chainstate"]);
    assert!(log.contains("Loaded 1210 block index entries"));
    let ours = txoutsetinfo(datadir.path(), "hash_serialized_3");
    assert_same(&ours, core, &tip_fields);
}
