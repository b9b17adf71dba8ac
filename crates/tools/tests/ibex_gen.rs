#![allow(clippy::unwrap_used, clippy::expect_used)]
//! End to end: `ibex gen` as a process writes a blocks directory whose
//! manifest matches the files (the UTXO set's size by height as `ibexd`
//! finds it), and refuses to overwrite one.

#[path = "../../ibexd/tests/common/mod.rs"]
mod common;

use common::{ibex, wait_exit};

#[test]
fn gen_writes_blocks_xor_and_manifest() {
    let directory = tempfile::tempdir().unwrap();
    let out = directory.path().join("blocks");
    let output = ibex()
        .args(["gen", "--profile", "tiny", "--seed", "3", "--blocks", "130", "--invalid"])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary = String::from_utf8_lossy(&output.stdout);
    assert!(summary.contains("generated 130 blocks"), "{summary}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["block_count"], 130);
    assert_eq!(manifest["network"], "regtest");
    assert_eq!(manifest["invalid_blocks"].as_array().unwrap().len(), 16);
    let file_bytes = std::fs::metadata(out.join("blk00000.dat")).unwrap().len();
    assert_eq!(manifest["file_bytes"].as_u64().unwrap(), file_bytes);
    assert_eq!(std::fs::read(out.join("xor.dat")).unwrap().len(), 8);

    let again = ibex().args(["gen", "--profile", "tiny"]).arg("--out").arg(&out).output().unwrap();
    assert!(!again.status.success(), "must not append to existing block files");
}

#[test]
fn gen_rejects_an_unknown_profile() {
    let directory = tempfile::tempdir().unwrap();
    let output = ibex()
        .args(["gen", "--profile", "huge"])
        .arg("--out")
        .arg(directory.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown profile"));
}

/// The manifest's UTXO count at a height inside the chain is the one
/// `ibex txoutsetinfo` counts after `ibexd -reindex -stopatheight` there.
#[test]
fn gen_records_the_utxo_count_ibexd_finds_part_way() {
    const STOP_HEIGHT: u64 = 117;
    let directory = tempfile::tempdir().unwrap();
    let chain = directory.path().join("chain");
    common::generate_chain(&chain, "tiny", "130", "4", &[]);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(chain.join("manifest.json")).unwrap()).unwrap();
    let counts = manifest["utxo_count_by_height"].as_array().unwrap();
    // A short chain has every height, from genesis to the tip.
    assert_eq!(counts.len(), 131);
    assert_eq!(counts[0], serde_json::json!([0, 0]));
    assert_eq!(counts[130], serde_json::json!([130, manifest["utxo_count"]]));
    let entry = counts[STOP_HEIGHT as usize].as_array().unwrap();
    assert_eq!(entry[0].as_u64(), Some(STOP_HEIGHT));
    let expected = entry[1].as_u64().unwrap();
    assert!(expected > counts[100][1].as_u64().unwrap(), "coins are spent and made by then");
    // An entry off by one height would count differently.
    for neighbour in [STOP_HEIGHT - 1, STOP_HEIGHT + 1] {
        assert_ne!(counts[neighbour as usize][1].as_u64(), Some(expected));
    }

    let datadir = directory.path().join("node");
    common::datadir_with_blocks(&datadir, &chain);
    let stop = format!("-stopatheight={STOP_HEIGHT}");
    let options = ["-reindex", "-assumevalid=0", stop.as_str(), "-server=0"];
    let mut node =
        common::spawn_node(&mut common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, &options));
    assert!(wait_exit(&mut node, &datadir).success());
    let found = common::txoutsetinfo_json(&datadir, &[]);
    assert_eq!(found["height"].as_u64(), Some(STOP_HEIGHT));
    assert_eq!(found["txouts"].as_u64(), Some(expected));
}

#[test]
fn gen_writes_a_signet_that_ibexd_loads_with_its_challenge() {
    let directory = tempfile::tempdir().unwrap();
    let out = directory.path().join("signet-blocks");
    let key = "11".repeat(32);
    let output = ibex()
        .args(["gen", "--chain", "signet", "--blocks", "3", "--threads", "2", "--signet-key", &key])
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary = String::from_utf8_lossy(&output.stdout);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["network"], "signet");
    let challenge = manifest["signet_challenge"].as_str().unwrap();
    let option = format!("-signetchallenge={challenge}");
    assert!(summary.contains(&option), "{summary}");

    let datadir = directory.path().join("node");
    std::fs::create_dir_all(&datadir).unwrap();
    let load = format!("-loadblock={}", out.join("blk00000.dat").display());
    let quiet = ["-signet", "-printtoconsole=0", "-server=0", "-dnsseed=0", "-fixedseeds=0"];
    // The run ends at the generated tip, height 3.
    let status =
        common::ibexd(&datadir, &quiet, &[&option, &load, "-stopatheight=3"]).status().unwrap();
    assert!(status.success());
    let log = std::fs::read_to_string(datadir.join("signet/debug.log")).unwrap();
    let tip = manifest["tip_hash"].as_str().unwrap();
    assert!(log.contains(&format!("UpdateTip: new best={tip} height=3 ")), "{log}");
}
