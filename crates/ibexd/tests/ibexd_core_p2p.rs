//! P2P against Bitcoin Core's own `bitcoind`, run when `IBEX_CORE_BIN` names a
//! directory holding `bitcoind` and `bitcoin-cli` (built by
//! `scripts/build-core-bitcoind`); otherwise each test says it was skipped.
//! `bitcoind` serves the shared Core chain and an empty `ibexd` syncs it (over
//! v2, as Core 30 speaks by default, and over v1); then a fresh `bitcoind` does
//! its IBD from that `ibexd`. Every node must end at Core's tip with Core's
//! UTXO hash.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{
    copy_core_blocks, debug_log, free_port, log_or_empty, utxo_hash, wait_exit, wait_for_log,
    NODE_WAIT,
};

fn core_binaries() -> Option<PathBuf> {
    match std::env::var_os("IBEX_CORE_BIN") {
        Some(directory) => Some(PathBuf::from(directory)),
        None => {
            eprintln!("skipped: P2P against bitcoind (IBEX_CORE_BIN not set)");
            None
        }
    }
}

/// Core's answers for the shared chain: the tip hash, its height and the
/// UTXO hash.
fn core_expectations() -> (String, u64, String) {
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::core_chain().join("expected.json")).unwrap(),
    )
    .unwrap();
    let info = &expected["getblockchaininfo"];
    let utxo = &expected["gettxoutsetinfo_tip_hash_serialized_3"]["hash_serialized_3"];
    (
        info["bestblockhash"].as_str().unwrap().to_owned(),
        info["blocks"].as_u64().unwrap(),
        utxo.as_str().unwrap().to_owned(),
    )
}

fn bitcoind(binaries: &Path, datadir: &Path, options: &[String]) -> common::NodeProcess {
    common::spawn_node(
        Command::new(binaries.join("bitcoind"))
            .args(["-regtest", "-printtoconsole=0", "-dnsseed=0", "-fixedseeds=0"])
            .arg(format!("-datadir={}", datadir.display()))
            .args(options)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

fn cli(binaries: &Path, datadir: &Path, rpc_port: u16, arguments: &[&str]) -> Output {
    Command::new(binaries.join("bitcoin-cli"))
        .args(["-regtest", &format!("-datadir={}", datadir.display())])
        .arg(format!("-rpcport={rpc_port}"))
        .args(arguments)
        .output()
        .unwrap()
}

fn stop_bitcoind(binaries: &Path, datadir: &Path, rpc_port: u16, mut child: common::NodeProcess) {
    let _ = cli(binaries, datadir, rpc_port, &["stop"]);
    assert!(wait_exit(&mut child, datadir).success());
}

/// `bitcoind` serving the shared chain on a free port: the port, its RPC
/// port and the process, once it has reindexed to the tip.
fn serving_bitcoind(binaries: &Path, datadir: &Path, v2: bool) -> (u16, u16, common::NodeProcess) {
    let blocks = copy_core_blocks(datadir);
    for entry in std::fs::read_dir(&blocks).unwrap().flatten() {
        // Copies of the read-only shared files are read-only; bitcoind
        // opens its block files for writing.
        let permissions = std::os::unix::fs::PermissionsExt::from_mode(0o644);
        std::fs::set_permissions(entry.path(), permissions).unwrap();
    }
    let (port, rpc_port) = (free_port(), free_port());
    let options = [
        "-reindex".to_owned(),
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
        format!("-rpcport={rpc_port}"),
        format!("-v2transport={}", u8::from(v2)),
    ];
    let mut child = bitcoind(binaries, datadir, &options);
    let (tip, height, _) = core_expectations();
    wait_for_log(datadir, &format!("UpdateTip: new best={tip} height={height} "), &mut child);
    (port, rpc_port, child)
}

/// An empty `ibexd` syncs from `bitcoind` and stops at Core's tip.
fn ibexd_syncs_from_bitcoind(binaries: &Path, root: &Path, v2: bool) -> PathBuf {
    let core = root.join("core");
    let (port, rpc_port, core_node) = serving_bitcoind(binaries, &core, v2);
    let (tip, height, utxo) = core_expectations();
    let ibex = root.join("ibex");
    std::fs::create_dir_all(&ibex).unwrap();
    let options = [
        format!("-connect=127.0.0.1:{port}"),
        "-listen=0".to_owned(),
        "-server=0".to_owned(),
        format!("-stopatheight={height}"),
    ];
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut node =
        common::spawn_node(&mut common::quiet_ibexd(&ibex, &common::REGTEST_QUIET, &options));
    assert!(wait_exit(&mut node, &ibex).success(), "{}", log_or_empty(&ibex));
    let log = debug_log(&ibex);
    assert!(log.contains(&format!("UpdateTip: new best={tip} height={height} ")), "{log}");
    let transport =
        if v2 { "New manual v2 peer connected" } else { "New manual v1 peer connected" };
    assert!(log.contains(transport), "{log}");
    assert_eq!(utxo_hash(&ibex), format!("\"{utxo}\"@{height}"));
    stop_bitcoind(binaries, &core, rpc_port, core_node);
    ibex
}

#[test]
fn ibexd_syncs_cores_chain_from_bitcoind_over_v1() {
    let Some(binaries) = core_binaries() else { return };
    let root = tempfile::tempdir().unwrap();
    ibexd_syncs_from_bitcoind(&binaries, root.path(), false);
}

#[test]
fn ibexd_syncs_from_bitcoind_over_v2_and_bitcoind_does_its_ibd_from_ibexd() {
    let Some(binaries) = core_binaries() else { return };
    let root = tempfile::tempdir().unwrap();
    let ibex = ibexd_syncs_from_bitcoind(&binaries, root.path(), true);
    let (_, height, utxo) = core_expectations();
    // ibexd serves what it synced; a fresh bitcoind downloads it all.
    let port = free_port();
    let options = [
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
        "-server=0".to_owned(),
    ];
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut serving =
        common::spawn_node(&mut common::quiet_ibexd(&ibex, &common::REGTEST_QUIET, &options));
    wait_for_log(&ibex, "Bound to 127.0.0.1", &mut serving);
    let core = root.path().join("core-from-ibex");
    std::fs::create_dir_all(&core).unwrap();
    let rpc_port = free_port();
    let core_options = [
        format!("-connect=127.0.0.1:{port}"),
        "-listen=0".to_owned(),
        format!("-rpcport={rpc_port}"),
    ];
    let core_node = bitcoind(&binaries, &core, &core_options);
    let started = Instant::now();
    loop {
        let count = cli(&binaries, &core, rpc_port, &["getblockcount"]);
        if String::from_utf8_lossy(&count.stdout).trim() == height.to_string() {
            break;
        }
        assert!(started.elapsed() < NODE_WAIT, "bitcoind did not sync from ibexd");
        std::thread::sleep(Duration::from_millis(200));
    }
    let answer = cli(&binaries, &core, rpc_port, &["gettxoutsetinfo"]);
    let answer: serde_json::Value = serde_json::from_slice(&answer.stdout).unwrap();
    assert_eq!(answer["hash_serialized_3"].as_str(), Some(utxo.as_str()));
    let peers = cli(&binaries, &core, rpc_port, &["getpeerinfo"]);
    let peers = String::from_utf8_lossy(&peers.stdout).into_owned();
    assert!(peers.contains("/Ibex:") && peers.contains("\"v2\""), "{peers}");
    stop_bitcoind(&binaries, &core, rpc_port, core_node);
    let status = Command::new("kill").args(["-TERM", &serving.id().to_string()]).status();
    assert!(status.unwrap().success());
    assert!(wait_exit(&mut serving, &ibex).success());
}
