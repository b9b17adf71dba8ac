//! `ibex block` on the shared mainnet blocks and on broken files, run as a process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use common::ibex;

fn shared_block(name: &str) -> PathBuf {
    common::shared("vectors/blocks").join(name)
}

fn ibex_block(arguments: &[&std::ffi::OsStr]) -> std::process::Output {
    ibex().arg("block").args(arguments).output().unwrap()
}

#[test]
fn summarises_the_segwit_block() {
    let output = ibex_block(&[shared_block("mainnet-702861.raw").as_os_str()]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["hash"], "000000000000000000000c835b2adcaedc20fdf6ee440009c249452c726dafae");
    assert_eq!(summary["tx_count"], 2500);
    assert_eq!(summary["size"], 1_381_836);
    assert_eq!(summary["weight"], 3_993_054);
    assert_eq!(summary["merkle_root_valid"], true);
    assert_eq!(summary["witness_commitment_valid"], true);
    assert_eq!(summary["bits"].as_str().unwrap().len(), 8);
    let keys: Vec<_> = summary.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "hash",
            "version",
            "previousblockhash",
            "merkleroot",
            "merkle_root_valid",
            "time",
            "bits",
            "nonce",
            "tx_count",
            "size",
            "strippedsize",
            "weight",
            "witness_commitment_valid"
        ]
    );
}

#[test]
fn legacy_block_has_null_witness_commitment_and_hex_input_works() {
    let bytes = std::fs::read(shared_block("mainnet-413567.raw")).unwrap();
    let directory = tempfile::tempdir().unwrap();
    let hex_path = directory.path().join("block.hex");
    std::fs::write(&hex_path, ibex_primitives::hex::encode(&bytes) + "\n").unwrap();
    let output = ibex_block(&[hex_path.as_os_str(), "--hex".as_ref()]);
    assert!(output.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["hash"], "0000000000000000025aff8be8a55df8f89c77296db6198f272d6577325d4069");
    assert_eq!(summary["strippedsize"], 999_887);
    assert_eq!(summary["witness_commitment_valid"], serde_json::Value::Null);
}

#[test]
fn broken_files_print_one_line_and_exit_1() {
    let bytes = std::fs::read(shared_block("mainnet-413567.raw")).unwrap();
    let directory = tempfile::tempdir().unwrap();
    let truncated = directory.path().join("truncated.raw");
    std::fs::write(&truncated, &bytes[..bytes.len() - 10]).unwrap();
    let mut mutated = bytes.clone();
    mutated[200] ^= 0xff; // inside the coinbase: header merkle root no longer matches
    let mutated_path = directory.path().join("mutated.raw");
    std::fs::write(&mutated_path, &mutated).unwrap();
    let missing = directory.path().join("missing.raw");

    for path in [&truncated, &missing] {
        let output = ibex_block(&[path.as_os_str()]);
        assert_eq!(output.status.code(), Some(1));
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
    let output = ibex_block(&[truncated.as_os_str()]);
    assert!(String::from_utf8_lossy(&output.stderr).contains("truncated"));

    let output = ibex_block(&[mutated_path.as_os_str()]);
    assert!(output.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["merkle_root_valid"], false);
}
