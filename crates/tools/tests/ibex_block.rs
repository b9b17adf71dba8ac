//! `ibex block` on the shared mainnet blocks and on broken files, run as a process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../ibexd/tests/common/mod.rs"]
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

/// `ibex block` on an endless or huge input reads one byte past the largest
/// block and stops with an error naming the limit: `/dev/zero` as raw bytes and
/// as hex, and a sparse 8 GiB file. Its peak resident memory stays within a few
/// times the largest block (measured by `wait4`), not the input's size.
#[test]
fn endless_and_huge_inputs_are_refused_after_a_block_s_worth_of_bytes() {
    use ibex_tools::bench::measure::run_measured;
    use ibex_tools::block_summary::{BLOCK_BYTES_MAX, HEX_TEXT_BYTES_MAX};
    use std::time::Duration;

    /// Peak RSS allowed: the hex text read (8 MB), its bytes (4 MB), the
    /// lossy UTF-8 copy and the binary itself, with room to spare.
    const PEAK_RSS_KIBIBYTES_MAX: u64 = 64 * 1024;
    let directory = tempfile::tempdir().unwrap();
    let huge = directory.path().join("huge.raw");
    std::fs::File::create(&huge).unwrap().set_len(8 << 30).unwrap();
    let cases: [(&std::ffi::OsStr, bool, usize); 3] = [
        ("/dev/zero".as_ref(), false, BLOCK_BYTES_MAX),
        ("/dev/zero".as_ref(), true, HEX_TEXT_BYTES_MAX),
        (huge.as_os_str(), false, BLOCK_BYTES_MAX),
    ];
    for (path, hex, bytes_max) in cases {
        let mut command = ibex();
        command.arg("block").arg(path).stdout(std::process::Stdio::null());
        command.stderr(std::fs::File::create(directory.path().join("stderr")).unwrap());
        if hex {
            command.arg("--hex");
        }
        let measured = run_measured(&mut command, Duration::from_secs(60)).unwrap();
        let stderr = std::fs::read_to_string(directory.path().join("stderr")).unwrap();
        eprintln!(
            "{path:?} hex={hex}: {}, peak RSS {} KiB, {} ms",
            measured.end.describe(),
            measured.peak_rss_kibibytes,
            measured.wall.as_millis()
        );
        assert_eq!(measured.end.exit_code(), Some(1), "{path:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
        assert!(stderr.contains(&format!("longer than {bytes_max} bytes")), "{stderr}");
        assert!(measured.peak_rss_kibibytes < PEAK_RSS_KIBIBYTES_MAX, "{path:?}: {measured:?}");
    }
}
