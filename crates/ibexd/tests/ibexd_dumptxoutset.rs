//! `dumptxoutset` on Core's regtest chain (`shared/chains/core-wallet-mix`):
//! at the tip the answer carries Core's `hash_serialized_3`, and the file
//! read back hashes to it; rolled back to height 800 (by height, and as
//! named parameters) the file's coins have Core's MuHash, count and total
//! at 800 while the node's own chain and coins are untouched; Core's
//! refusals come with Core's codes and words. With `IBEX_CORE_BIN` set,
//! `bitcoind` dumps the same chain and the files are byte for byte equal.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::rpc::Endpoint;
use common::{free_port, wait_for_log, NodeProcess};
use ibex_chainstate::snapshot::SnapshotReader;
use ibex_chainstate::Coin;
use ibex_primitives::txoutset::{Coin as SetCoin, TxOutSetHashType, TxOutSetHasher, TxOutSetStats};
use ibex_primitives::{Height, OutPoint, Params};
use serde_json::{json, Value};

const TIP_HEIGHT: u64 = 1190;
/// Transactions in Core's chain up to its tip (its `UpdateTip` line).
const TIP_CHAIN_TRANSACTIONS: u64 = 21_357;

fn expected() -> Value {
    let text = std::fs::read_to_string(common::core_chain().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ibexd_on_core_chain(datadir: &Path) -> (Endpoint, NodeProcess) {
    common::copy_core_blocks(datadir);
    let port = free_port();
    let options = [
        "-reindex".to_owned(),
        "-listen=0".to_owned(),
        format!("-rpcport={port}"),
        "-rpcuser=user".to_owned(),
        "-rpcpassword=password".to_owned(),
    ];
    let arguments: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut process =
        common::spawn_node(&mut common::quiet_ibexd(datadir, &common::REGTEST_QUIET, &arguments));
    wait_for_log(datadir, "init message: Done loading", &mut process);
    let endpoint = Endpoint { port };
    endpoint.wait_for_height(TIP_HEIGHT, &mut process);
    (endpoint, process)
}

/// Every coin of the snapshot at `path`, read and checked as `loadtxoutset`
/// reads one, with the header's base block.
fn read_snapshot(path: &Path, base_height: u32) -> (String, Vec<(OutPoint, Coin)>) {
    let file = std::fs::File::open(path).unwrap();
    let length = file.metadata().unwrap().len();
    let params = Params::regtest();
    let mut reader = SnapshotReader::new(
        std::io::BufReader::new(file),
        &params,
        Some(length),
        Height::new(base_height),
    )
    .unwrap();
    let base = reader.metadata().base_block.to_string();
    let mut coins = Vec::new();
    while let Some(coin) = reader.next_coin().unwrap() {
        coins.push(coin);
    }
    assert_eq!(reader.coins_read(), coins.len() as u64);
    (base, coins)
}

/// The statistics of `coins` hashed as `hash_type` (each transaction's
/// coins by output index: Core's `ComputeUTXOStats` order).
fn stats_of(coins: &[(OutPoint, Coin)], hash_type: TxOutSetHashType) -> TxOutSetStats {
    let mut sorted: Vec<&(OutPoint, Coin)> = coins.iter().collect();
    sorted.sort_by_key(|(outpoint, _)| *outpoint);
    let mut hasher = TxOutSetHasher::new(hash_type);
    for (outpoint, coin) in sorted {
        hasher.add_coin(&SetCoin::from_spent(*outpoint, coin.as_spent_coin())).unwrap();
    }
    hasher.finish()
}

fn chain_directory(datadir: &Path) -> PathBuf {
    datadir.join("regtest")
}

#[test]
fn dumptxoutset_writes_cores_utxo_set_at_the_tip_and_rolled_back() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("ibex");
    let (ibex, mut process) = ibexd_on_core_chain(&datadir);
    let core = expected();
    let tip = &core["gettxoutsetinfo_tip_hash_serialized_3"];

    let answer = ibex.call("dumptxoutset", json!(["utxo-tip.dat", "latest"]));
    let path = chain_directory(&datadir).join("utxo-tip.dat");
    assert_eq!(answer["coins_written"], tip["txouts"]);
    assert_eq!(answer["base_hash"], tip["bestblock"]);
    assert_eq!(answer["base_height"], TIP_HEIGHT);
    assert_eq!(answer["path"], path.display().to_string());
    assert_eq!(answer["txoutset_hash"], tip["hash_serialized_3"]);
    assert_eq!(answer["nchaintx"], TIP_CHAIN_TRANSACTIONS);
    let keys: Vec<&str> = answer.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["coins_written", "base_hash", "base_height", "path", "txoutset_hash", "nchaintx"]
    );
    assert!(!chain_directory(&datadir).join("utxo-tip.dat.incomplete").exists());
    let (base, coins) = read_snapshot(&path, TIP_HEIGHT as u32);
    assert_eq!(base, tip["bestblock"].as_str().unwrap());
    let stats = stats_of(&coins, TxOutSetHashType::HashSerialized3);
    assert_eq!(stats.hash.unwrap().to_string(), tip["hash_serialized_3"].as_str().unwrap());
    assert_eq!(stats.transactions, tip["transactions"].as_u64().unwrap());

    // Rolled back to 800, by height and as named parameters: Core's coins
    // at 800 (its coinstatsindex answers in expected.json).
    let at_800 = &core["gettxoutsetinfo"]["800"]["muhash"];
    let by_height =
        ibex.call("dumptxoutset", json!(["utxo-800.dat", "rollback", {"rollback": 800}]));
    let named = ibex.call("dumptxoutset", json!({"path": "utxo-800-named.dat", "rollback": 800}));
    for (answer, name) in [(&by_height, "utxo-800.dat"), (&named, "utxo-800-named.dat")] {
        assert_eq!(answer["base_height"], 800);
        assert_eq!(answer["base_hash"], at_800["bestblock"]);
        assert_eq!(answer["coins_written"], at_800["txouts"]);
        let (_, coins) = read_snapshot(&chain_directory(&datadir).join(name), 800);
        let muhash = stats_of(&coins, TxOutSetHashType::MuHash);
        assert_eq!(muhash.hash.unwrap().to_string(), at_800["muhash"].as_str().unwrap());
        assert_eq!(muhash.bogosize, at_800["bogosize"].as_u64().unwrap());
        let hash_serialized = stats_of(&coins, TxOutSetHashType::HashSerialized3).hash.unwrap();
        assert_eq!(answer["txoutset_hash"], hash_serialized.to_string());
    }
    let first = std::fs::read(chain_directory(&datadir).join("utxo-800.dat")).unwrap();
    let second = std::fs::read(chain_directory(&datadir).join("utxo-800-named.dat")).unwrap();
    assert_eq!(first, second);
    // The rollback left the node's chain and coins alone.
    assert_eq!(ibex.call("getblockcount", json!([])), TIP_HEIGHT);
    let now = ibex.call("gettxoutsetinfo", json!([]));
    assert_eq!(now["hash_serialized_3"], tip["hash_serialized_3"]);

    // "rollback" alone: the highest AssumeUTXO height of regtest (299).
    let assumeutxo = ibex.call("dumptxoutset", json!(["utxo-299.dat", "rollback"]));
    assert_eq!(assumeutxo["base_height"], 299);
    read_snapshot(&chain_directory(&datadir).join("utxo-299.dat"), 299);

    refusals_are_cores(ibex, &path);
    bitcoind_writes_the_same_bytes(root.path(), &datadir);
    common::terminate(&process);
    common::wait_exit(&mut process, &datadir);
}

fn refusals_are_cores(ibex: Endpoint, existing: &Path) {
    let (code, message) = ibex.error("dumptxoutset", json!(["utxo-tip.dat", "latest"]));
    assert_eq!(code, -8);
    assert_eq!(
        message,
        format!(
            "{} already exists. If you are sure this is what you want, move it out of the way first",
            existing.display()
        )
    );
    let (code, message) = ibex.error("dumptxoutset", json!(["other.dat", "bogus"]));
    assert_eq!(
        (code, message.as_str()),
        (
            -8,
            "Invalid snapshot type \"bogus\" specified. Please specify \"rollback\" or \"latest\""
        )
    );
    let (code, message) = ibex.error("dumptxoutset", json!(["other.dat"]));
    assert_eq!(
        (code, message.as_str()),
        (-8, "Invalid snapshot type \"\" specified. Please specify \"rollback\" or \"latest\"")
    );
    let (code, message) =
        ibex.error("dumptxoutset", json!(["other.dat", "latest", {"rollback": 5}]));
    assert_eq!(
        (code, message.as_str()),
        (-8, "Invalid snapshot type \"latest\" specified with rollback option")
    );
    let (code, message) =
        ibex.error("dumptxoutset", json!(["other.dat", "rollback", {"rollback": 5000}]));
    assert_eq!((code, message.as_str()), (-8, "Target block height 5000 after current tip 1190"));
    let unknown = "11".repeat(32);
    let (code, message) =
        ibex.error("dumptxoutset", json!(["other.dat", "rollback", {"rollback": unknown}]));
    assert_eq!((code, message.as_str()), (-5, "Block not found"));
    let (code, _) = ibex.error(
        "dumptxoutset",
        json!({"path": "other.dat", "options": {"rollback": 5}, "rollback": 6}),
    );
    assert_eq!(code, -8);
    // A directory that does not exist: the temporary file cannot be made.
    let (code, message) = ibex.error("dumptxoutset", json!(["missing/dir/utxo.dat", "latest"]));
    assert_eq!(code, -8);
    assert!(
        message.starts_with("Couldn't open file ")
            && message.ends_with("utxo.dat.incomplete for writing."),
        "{message}"
    );
}

/// `bitcoind` on the same blocks dumps at the tip and at 800: the same
/// bytes as Ibex's files.
fn bitcoind_writes_the_same_bytes(root: &Path, ibex_datadir: &Path) {
    let Some(directory) = common::core_binaries("the byte comparison with bitcoind's dumptxoutset")
    else {
        return;
    };
    let datadir = root.join("core");
    let (core, mut process) = common::rpc::bitcoind_on_core_chain(&directory, &datadir);
    core.wait_for_height(TIP_HEIGHT, &mut process);
    core.call("dumptxoutset", json!(["core-tip.dat", "latest"]));
    core.call("dumptxoutset", json!(["core-800.dat", "rollback", {"rollback": 800}]));
    for (core_file, ibex_file) in
        [("core-tip.dat", "utxo-tip.dat"), ("core-800.dat", "utxo-800.dat")]
    {
        let core_bytes = std::fs::read(datadir.join("regtest").join(core_file)).unwrap();
        let ibex_bytes = std::fs::read(chain_directory(ibex_datadir).join(ibex_file)).unwrap();
        assert!(core_bytes == ibex_bytes, "{core_file} and {ibex_file} differ");
    }
    core.call("stop", json!([]));
    let _ = process.wait();
}
