//! `ibex txoutsetinfo` reads a stopped node's databases without changing a byte
//! of them: both are opened in RocksDB's read-only mode, so no `MANIFEST`,
//! `OPTIONS`, `CURRENT` or `LOG` is rewritten, no log is flushed into a table
//! and no compaction runs, whether the tool succeeds or fails (here: with the
//! block index moved away, which a read-write open would have created anew).
//! Its `disk_size` is the bytes of every table file of the coins database, and
//! coins that fail their checksum as they are read name the remedy,
//! `-reindex-chainstate`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../ibexd/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use common::{
    datadir_with_blocks, generate_chain, quiet_ibexd, txoutsetinfo, REGTEST_QUIET_SMALL_CACHE,
};

/// Every file under `directory`: its bytes and modification time.
fn snapshot(directory: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        let metadata = std::fs::metadata(&path).unwrap();
        if metadata.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.insert(
                path.clone(),
                (std::fs::read(&path).unwrap(), metadata.modified().unwrap()),
            );
        }
    }
    files
}

/// The bytes of the `.sst` table files under `directory`.
fn table_file_bytes(directory: &Path) -> u64 {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "sst"))
        .map(|path| std::fs::metadata(path).unwrap().len())
        .sum()
}

#[test]
fn txoutsetinfo_changes_no_byte_of_the_databases_and_counts_every_table() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "small", "300", "17", &["--xor-zero"]);
    let datadir = datadir_with_blocks(&root.path().join("node"), &chain);
    let options = ["-reindex", "-stopatheight=300", "-server=0"];
    let status = quiet_ibexd(&datadir, &REGTEST_QUIET_SMALL_CACHE, &options).status().unwrap();
    assert!(status.success());
    let chainstate = datadir.join("regtest/chainstate");
    let index = datadir.join("regtest/blocks/index");
    let before = (snapshot(&chainstate), snapshot(&index));
    assert!(before.0.keys().any(|path| path.ends_with("CURRENT")), "{:?}", before.0.keys());

    let output = txoutsetinfo(&datadir, &[]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["height"], 300);
    assert_eq!(
        answer["disk_size"].as_u64().unwrap(),
        table_file_bytes(&chainstate),
        "disk_size counts every table file"
    );
    let after = (snapshot(&chainstate), snapshot(&index));
    assert!(after == before, "a successful txoutsetinfo changed the databases");

    // A failing run: no block index to find the best block's height in.
    let moved = datadir.join("regtest/blocks/index-moved");
    std::fs::rename(&index, &moved).unwrap();
    let output = txoutsetinfo(&datadir, &["-hash_type=muhash"]);
    assert!(!output.status.success());
    assert!(!index.exists(), "a failing txoutsetinfo created a block index");
    assert!(snapshot(&chainstate) == before.0, "a failing txoutsetinfo changed the coins");
    std::fs::rename(&moved, &index).unwrap();
    assert!(snapshot(&index) == before.1);

    // Coins that fail their checksum as they are read: the remedy is named.
    let table = largest_table_file(&chainstate);
    let mut bytes = std::fs::read(&table).unwrap();
    let middle = bytes.len() / 3;
    for byte in &mut bytes[middle..middle + 16] {
        *byte ^= 0x5a;
    }
    std::fs::write(&table, &bytes).unwrap();
    let output = txoutsetinfo(&datadir, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("Please restart ibexd with -reindex-chainstate to recover."),
        "{stderr}"
    );
}

/// The largest `.sst` table file under `directory`.
fn largest_table_file(directory: &Path) -> PathBuf {
    std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "sst"))
        .max_by_key(|path| std::fs::metadata(path).unwrap().len())
        .unwrap()
}
