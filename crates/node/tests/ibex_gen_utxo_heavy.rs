//! The `utxo-heavy` profile end to end, scaled down to CI's time (1,200
//! blocks of 100,000 WU: ~33 MB, ~340,000 coins): `ibex gen` writes it,
//! `ibexd -reindex` imports it with every script checked through a small
//! coins cache (so coins go through the database, as the full profile's
//! 25 M do), and `ibex txoutsetinfo` counts the manifest's coins at the
//! manifest's tip. When `IBEX_CORE_BIN` names Bitcoin Core's binaries,
//! `bitcoind -reindex` of the same files ends at the same tip with the same
//! UTXO set (count and `hash_serialized_3`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{free_port, log_or_empty, wait_exit, wait_for_log};

const BLOCKS: &str = "1200";
const TARGET_WEIGHT: &str = "100000";
const SEED: &str = "5";

/// The block files and `xor.dat` of `chain`, copied into `datadir`.
fn install_blocks(datadir: &Path, chain: &Path) {
    let names: Vec<String> = std::fs::read_dir(chain)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("blk") || name == "xor.dat")
        .collect();
    assert!(names.iter().any(|name| name == "blk00000.dat"));
    common::copy_block_files(datadir, chain, &names);
}

/// The node's log without its `UpdateTip` and flush lines.
fn log_summary(datadir: &Path) -> String {
    let log = log_or_empty(datadir);
    let lines =
        log.lines().filter(|line| !line.contains("UpdateTip") && !line.contains("(cache full)"));
    lines.collect::<Vec<_>>().join("\n")
}

fn core_binaries() -> Option<PathBuf> {
    let directory = std::env::var_os("IBEX_CORE_BIN");
    if directory.is_none() {
        eprintln!("skipped: bitcoind -reindex of the utxo-heavy chain (IBEX_CORE_BIN not set)");
    }
    directory.map(PathBuf::from)
}

/// `bitcoind -reindex` of the chain in `datadir` up to `tip` at `height`:
/// its `gettxoutsetinfo`.
fn core_utxo_set(binaries: &Path, datadir: &Path, tip: &str, height: u64) -> serde_json::Value {
    let rpc_port = free_port();
    let rpc_port_option = format!("-rpcport={rpc_port}");
    let datadir_option = common::datadir_argument(datadir);
    let mut bitcoind = common::spawn_node(
        Command::new(binaries.join("bitcoind"))
            .args([datadir_option.as_str(), rpc_port_option.as_str()])
            .args(["-regtest", "-reindex", "-printtoconsole=0", "-listen=0", "-connect=0"])
            .args(["-dnsseed=0", "-fixedseeds=0", "-disablewallet", "-dbcache=4"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_for_log(datadir, &format!("UpdateTip: new best={tip} height={height} "), &mut bitcoind);
    let cli = |arguments: &[&str]| {
        Command::new(binaries.join("bitcoin-cli"))
            .args(["-regtest", datadir_option.as_str(), rpc_port_option.as_str()])
            .args(arguments)
            .output()
            .unwrap()
    };
    let output = cli(&["gettxoutsetinfo"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let answer = serde_json::from_slice(&output.stdout).unwrap();
    assert!(cli(&["stop"]).status.success());
    assert!(wait_exit(&mut bitcoind, datadir).success());
    answer
}

#[test]
fn scaled_utxo_heavy_chain_imports_to_the_manifests_coins() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    common::generate_chain(&chain, "utxo-heavy", BLOCKS, SEED, &["--target-weight", TARGET_WEIGHT]);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(chain.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["options"]["profile"], "utxo_heavy");
    let utxo_count = manifest["utxo_count"].as_u64().unwrap();
    let tip = manifest["tip_hash"].as_str().unwrap();
    let height = manifest["block_count"].as_u64().unwrap();
    assert!(utxo_count > 250_000, "{utxo_count} coins");

    let datadir = root.path().join("ibex");
    install_blocks(&datadir, &chain);
    let options = ["-reindex", "-assumevalid=0"];
    let mut node = common::spawn_node(&mut common::quiet_ibexd(
        &datadir,
        &common::REGTEST_QUIET_SMALL_CACHE,
        &options,
    ));
    assert!(wait_exit(&mut node, &datadir).success(), "{}", log_summary(&datadir));
    let found = common::txoutsetinfo_json(&datadir, &[]);
    // A stop asked by a signal also ends with success: check the tip first.
    assert_eq!(found["bestblock"], tip, "{}", log_summary(&datadir));
    assert_eq!(found["height"].as_u64(), Some(height));
    assert_eq!(found["txouts"].as_u64(), Some(utxo_count));

    let Some(binaries) = core_binaries() else { return };
    let core = root.path().join("core");
    install_blocks(&core, &chain);
    let expected = core_utxo_set(&binaries, &core, tip, height);
    assert_eq!(expected["txouts"].as_u64(), Some(utxo_count));
    assert_eq!(expected["bestblock"], tip);
    assert_eq!(found["hash_serialized_3"], expected["hash_serialized_3"]);
}
