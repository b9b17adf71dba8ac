//! `ibexd` stops cleanly on SIGTERM and SIGINT (flush, `Shutdown: done`,
//! exit 0) and a restart continues to the same UTXO set; `-loadblock`
//! imports an unobfuscated block file into a fresh datadir (the node writes
//! the blocks into its own files) and reaches the same UTXO set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn generate_chain(directory: &Path, extra: &[&str]) {
    let status = Command::new(env!("CARGO_BIN_EXE_ibex"))
        .args(["gen", "--profile", "small", "--blocks", "300", "--seed", "5", "--out"])
        .arg(directory)
        .args(extra)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

fn node(datadir: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ibexd"));
    command
        .arg(format!("-datadir={}", datadir.display()))
        .args(["-regtest", "-printtoconsole=0", "-dbcache=4"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

fn utxo_hash(datadir: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_ibex"))
        .args(["txoutsetinfo", &format!("-datadir={}", datadir.display()), "-regtest"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    format!("{}@{}", value["hash_serialized_3"], value["height"])
}

fn install_blocks(datadir: &Path, chain: &Path) {
    let blocks = datadir.join("regtest/blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for name in ["blk00000.dat", "xor.dat"] {
        std::fs::copy(chain.join(name), blocks.join(name)).unwrap();
    }
}

fn signal(pid: u32, name: &str) {
    let status =
        Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

#[test]
fn signals_stop_cleanly_and_loadblock_imports() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, &["--xor-zero"]);
    let clean = root.path().join("clean");
    install_blocks(&clean, &chain);
    assert!(node(&clean, &["-reindex"]).status().unwrap().success());
    let expected = utxo_hash(&clean);

    for (index, name) in ["TERM", "INT"].iter().enumerate() {
        let datadir = root.path().join(format!("signal-{name}"));
        install_blocks(&datadir, &chain);
        let mut child = node(&datadir, &["-reindex"]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300 + 200 * index as u64));
        signal(child.id(), name);
        let status = child.wait().unwrap();
        assert!(status.success(), "SIG{name}: {status:?}");
        let log = std::fs::read_to_string(datadir.join("regtest/debug.log")).unwrap();
        assert!(log.contains("Shutdown: done"), "SIG{name}: no clean shutdown in the log");
        assert!(node(&datadir, &[]).status().unwrap().success());
        assert_eq!(utxo_hash(&datadir), expected, "after SIG{name} and a restart");
    }

    let loaded = root.path().join("loaded");
    std::fs::create_dir_all(&loaded).unwrap();
    let file = chain.join("blk00000.dat");
    assert!(node(&loaded, &[&format!("-loadblock={}", file.display())])
        .status()
        .unwrap()
        .success());
    assert_eq!(utxo_hash(&loaded), expected);
    assert!(loaded.join("regtest/blocks/blk00000.dat").exists());
}
