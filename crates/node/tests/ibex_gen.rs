#![allow(clippy::unwrap_used, clippy::expect_used)]
//! End to end: `ibex gen` as a process writes a blocks directory whose
//! manifest matches the files, and refuses to overwrite one.

mod common;

use common::ibex;

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
