//! `gettxoutsetinfo`, `getblockstats`, `getdeploymentinfo`,
//! `getchainstates` and `getrawtransaction` from an `ibexd`
//! that imported Core's regtest chain: the UTXO set statistics equal
//! Core's answers in `expected.json` (and `ibex txoutsetinfo`'s after the
//! node stops: one implementation), every block's statistics agree with
//! the node's own `getblock` at verbosity 3, the transactions equal Core's
//! `getblock` samples, and `getchaintips` is what `bitcoind -reindex`
//! answers (the stale branches never connected). When `IBEX_CORE_BIN`
//! names Bitcoin Core's binaries, a `bitcoind` imports the same blocks and
//! every answer is compared with its answer, block by block.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::rpc::Endpoint;
use common::{free_port, wait_exit, wait_for_log, NodeProcess, NODE_WAIT};
use serde_json::{json, Value};

const TIP_HEIGHT: u64 = 1190;
fn keys(value: &Value) -> Vec<&str> {
    value.as_object().unwrap().keys().map(String::as_str).collect()
}

fn ibexd_on_core_chain(root: &Path) -> (PathBuf, Endpoint, NodeProcess) {
    let datadir = root.join("ibex");
    common::copy_core_blocks(&datadir);
    let port = free_port();
    let options = [
        "-reindex".to_owned(),
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={}", free_port()),
        format!("-rpcport={port}"),
        "-rpcuser=user".to_owned(),
        "-rpcpassword=password".to_owned(),
        "-dbcache=100".to_owned(),
    ];
    let arguments: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut process =
        common::spawn_node(&mut common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, &arguments));
    wait_for_log(&datadir, "init message: Done loading", &mut process);
    (datadir, Endpoint { port }, process)
}

/// Bitcoin Core's `bitcoind` reindexing the same blocks, when
/// `IBEX_CORE_BIN` is set.
fn bitcoind_on_core_chain(root: &Path) -> Option<(Endpoint, NodeProcess)> {
    let Some(directory) = std::env::var_os("IBEX_CORE_BIN") else {
        eprintln!("skipped: the comparison with bitcoind (IBEX_CORE_BIN not set)");
        return None;
    };
    Some(common::rpc::bitcoind_on_core_chain(Path::new(&directory), &root.join("core")))
}

fn expected() -> Value {
    let text = std::fs::read_to_string(common::core_chain().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn gettxoutsetinfo_gives_cores_answers(ibex: Endpoint) -> BTreeMap<&'static str, Value> {
    let core = expected();
    let tip = &core["gettxoutsetinfo_tip_hash_serialized_3"];
    let mut answers = BTreeMap::new();
    for hash_type in ["hash_serialized_3", "muhash", "none"] {
        let ours = ibex.call("gettxoutsetinfo", json!([hash_type]));
        let core_answer = match hash_type {
            "hash_serialized_3" => tip.clone(),
            name => core["gettxoutsetinfo"]["1190"][name].clone(),
        };
        for field in ["height", "bestblock", "txouts", "bogosize", "total_amount", hash_type] {
            if field != "none" {
                assert_eq!(ours[field], core_answer[field], "{hash_type}: {field}");
            }
        }
        assert_eq!(ours["transactions"], tip["transactions"], "{hash_type}");
        answers.insert(hash_type, ours);
    }
    answers
}

/// `getchaintips` as `bitcoind -reindex` answers it: every tip of
/// `expected.json` (heights, hashes, branch lengths), the stale ones
/// `valid-headers`. `expected.json` was taken from the node that mined the
/// chain, which connected each stale branch before reorganising away from
/// it (`valid-fork`); a reindex accepts every block
/// (`LoadExternalBlockFile`) and activates the best chain once, at the end
/// (`ImportBlocks`), so it never validates a stale block's scripts.
fn chain_tips_are_cores_after_a_reindex(ibex: Endpoint) {
    let core = expected();
    let tips_after_reindex: Vec<Value> = core["getchaintips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tip| {
            let mut tip = tip.clone();
            if tip["status"] == "valid-fork" {
                tip["status"] = json!("valid-headers");
            }
            tip
        })
        .collect();
    let stale = tips_after_reindex.iter().filter(|tip| tip["status"] == "valid-headers").count();
    assert_eq!(json!(stale), core["stale_branches_made"]);
    assert_eq!(
        sorted_tips(ibex.call("getchaintips", json!([]))),
        sorted_tips(json!(tips_after_reindex))
    );
}

/// `getchaintips`'s entries by height, then hash (Core orders tips of one
/// height by their address in memory).
fn sorted_tips(tips: Value) -> Vec<Value> {
    let mut tips = tips.as_array().unwrap().clone();
    tips.sort_by_key(|tip| (tip["height"].as_u64(), tip["hash"].as_str().map(str::to_owned)));
    tips
}

/// `getblockstats` against the statistics the node's own verbose block
/// gives (fees, sizes, weights, counts, outputs).
fn block_statistics_agree_with_getblock(ibex: Endpoint) {
    let satoshis = |btc: &Value| (btc.as_f64().unwrap() * 1e8).round() as i64;
    for height in (0..=TIP_HEIGHT).step_by(3).chain([TIP_HEIGHT]) {
        let stats = ibex.call("getblockstats", json!([height]));
        let hash = ibex.call("getblockhash", json!([height]));
        let block = ibex.call("getblock", json!([hash, 3]));
        let transactions = block["tx"].as_array().unwrap();
        let spending = &transactions[1..];
        let fees: Vec<i64> = spending.iter().map(|tx| satoshis(&tx["fee"])).collect();
        let sum = |field: &str| spending.iter().map(|tx| tx[field].as_i64().unwrap()).sum::<i64>();
        let count = |field: &str| {
            transactions.iter().skip(1).map(|tx| tx[field].as_array().unwrap().len()).sum::<usize>()
        };
        let outputs: usize =
            transactions.iter().map(|tx| tx["vout"].as_array().unwrap().len()).sum();
        let total_out: i64 = spending
            .iter()
            .flat_map(|tx| tx["vout"].as_array().unwrap())
            .map(|output| satoshis(&output["value"]))
            .sum();
        let witnesses = spending
            .iter()
            .filter(|tx| {
                tx["vin"].as_array().unwrap().iter().any(|input| input.get("txinwitness").is_some())
            })
            .count();
        assert_eq!(stats["blockhash"], hash);
        assert_eq!(stats["height"], height);
        assert_eq!(stats["txs"], transactions.len());
        assert_eq!(stats["ins"], count("vin"), "height {height}");
        assert_eq!(stats["outs"], outputs);
        assert_eq!(stats["totalfee"], fees.iter().sum::<i64>());
        assert_eq!(stats["maxfee"], fees.iter().copied().max().unwrap_or(0));
        assert_eq!(stats["minfee"], fees.iter().copied().min().unwrap_or(0));
        assert_eq!(stats["total_size"], sum("size"));
        assert_eq!(stats["total_weight"], sum("weight"));
        assert_eq!(stats["total_out"], total_out);
        assert_eq!(stats["swtxs"], witnesses);
        assert_eq!(stats["time"], block["time"]);
        assert_eq!(stats["mediantime"], block["mediantime"]);
    }
}

/// `testdummy` is active since the height the tip reports, locked in the
/// period before, started the one before that: the node's ancestry reads.
fn deployments_follow_the_chain(ibex: Endpoint) {
    let tip = ibex.call("getdeploymentinfo", json!([]));
    assert_eq!(tip["height"], TIP_HEIGHT);
    assert_eq!(
        keys(&tip["deployments"]),
        ["bip34", "bip66", "bip65", "csv", "segwit", "testdummy"]
    );
    let dummy = &tip["deployments"]["testdummy"];
    assert_eq!(dummy["bip9"]["status"], "active");
    let since = dummy["bip9"]["since"].as_u64().unwrap();
    assert_eq!(dummy["height"], since);
    assert!(since % 144 == 0 && since >= 288, "{since}");
    let at = |height: u64| {
        let hash = ibex.call("getblockhash", json!([height]));
        ibex.call("getdeploymentinfo", json!([hash]))["deployments"]["testdummy"].clone()
    };
    let last_locked = at(since - 1);
    assert_eq!(
        (&last_locked["bip9"]["status"], &last_locked["bip9"]["status_next"]),
        (&json!("locked_in"), &json!("active"))
    );
    assert_eq!(last_locked["height"], since);
    assert_eq!(at(since - 145)["bip9"]["status"], "started");
}

fn chainstates_and_transactions(ibex: Endpoint) {
    let info = &expected()["getblockchaininfo"];
    let states = ibex.call("getchainstates", json!([]));
    assert_eq!(states["headers"], info["headers"]);
    let chainstate = &states["chainstates"][0];
    for field in ["blocks", "bestblockhash", "bits", "target", "difficulty"] {
        assert_eq!(chainstate[field], info[field], "{field}");
    }
    // -dbcache=100: RocksDB's share for the coins database (12.7 MiB:
    // memtables, flush batches, block cache, one of a flush's two tables'
    // order), 72.8 MiB for the coins cache.
    let budget = ibex_daemon::memory_budget::memory_budget_for(
        100,
        ibex_chainstate::FLUSH_BATCH_BYTES_DEFAULT,
    );
    assert_eq!(chainstate["coins_db_cache_bytes"], budget.coins_database.total_bytes());
    assert_eq!(chainstate["coins_tip_cache_bytes"], budget.coins_bytes);
    assert_eq!(budget.coins_bytes, 76_330_716);
    assert_eq!(chainstate["validated"], true);
    for name in ["000809.json", "001084.json", "001169.json"] {
        let path = common::core_chain().join("getblock").join(name);
        let sample: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let hash = &sample["hash"];
        for core_transaction in sample["verbosity3"]["tx"].as_array().unwrap().iter().take(5) {
            let txid = &core_transaction["txid"];
            let mut ours = ibex.call("getrawtransaction", json!([txid, 2, hash]));
            assert_eq!(ours["in_active_chain"], true);
            assert_eq!(&ours["blockhash"], hash);
            let fields = ours.as_object_mut().unwrap();
            for block_field in
                ["in_active_chain", "blockhash", "confirmations", "time", "blocktime"]
            {
                fields.remove(block_field);
            }
            assert_eq!(&ours, core_transaction, "{txid}");
        }
    }
}

/// Every answer compared with `bitcoind`'s over the same chain.
fn same_answers_as_bitcoind(ibex: Endpoint, core: Endpoint) {
    let heights: Vec<Value> = (0..=TIP_HEIGHT).map(|height| json!([height])).collect();
    let ours = ibex.batch("getblockstats", &heights);
    let theirs = core.batch("getblockstats", &heights);
    for (height, (ours, theirs)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(ours, theirs, "getblockstats {height}");
        assert_eq!(keys(ours), keys(theirs));
    }
    let hashes = core.batch("getblockhash", &heights);
    let sampled: Vec<u64> =
        (0..=TIP_HEIGHT).step_by(71).chain([143, 144, 287, 288, 431, 432]).collect();
    let blocks: Vec<Value> =
        sampled.iter().map(|height| json!([hashes[*height as usize]])).collect();
    assert_eq!(ibex.batch("getdeploymentinfo", &blocks), core.batch("getdeploymentinfo", &blocks));
    let mut transactions = Vec::new();
    for (height, block) in
        sampled.iter().zip(core.batch("getblock", &blocks)).filter(|(height, _)| **height > 0)
    {
        let hash = &hashes[*height as usize];
        for txid in block["tx"].as_array().unwrap().iter().take(3) {
            transactions.extend([0, 1, 2].map(|verbosity| json!([txid, verbosity, hash])));
        }
    }
    assert_eq!(
        ibex.batch("getrawtransaction", &transactions),
        core.batch("getrawtransaction", &transactions)
    );
    for hash_type in ["hash_serialized_3", "muhash", "none"] {
        let mut ours = ibex.call("gettxoutsetinfo", json!([hash_type]));
        let mut theirs = core.call("gettxoutsetinfo", json!([hash_type]));
        assert_eq!(keys(&ours), keys(&theirs));
        ours.as_object_mut().unwrap().remove("disk_size");
        theirs.as_object_mut().unwrap().remove("disk_size");
        assert_eq!(ours, theirs, "{hash_type}");
    }
    assert_eq!(
        sorted_tips(ibex.call("getchaintips", json!([]))),
        sorted_tips(core.call("getchaintips", json!([])))
    );
    let ours = ibex.call("getchainstates", json!([]));
    let theirs = core.call("getchainstates", json!([]));
    assert_eq!(keys(&ours["chainstates"][0]), keys(&theirs["chainstates"][0]));
    let errors = [
        ("getblockstats", json!(["00"])),
        ("getblockstats", json!([5000])),
        ("getblockstats", json!([1, ["height", "nonsense"]])),
        ("gettxoutsetinfo", json!(["sha256"])),
        ("gettxoutsetinfo", json!(["muhash", 5])),
        ("getdeploymentinfo", json!(["00".repeat(32)])),
        ("getrawtransaction", json!(["00".repeat(32)])),
        ("getrawtransaction", json!(["00".repeat(32), 1, "11".repeat(32)])),
    ];
    for (method, params) in errors {
        let ours = ibex.request(method, &params);
        let theirs = core.request(method, &params);
        assert_eq!(ours["error"], theirs["error"], "{method} {params}");
    }
}

#[test]
fn ibexd_answers_the_state_methods_as_core_on_cores_chain() {
    let root = tempfile::tempdir().unwrap();
    let mut bitcoind = bitcoind_on_core_chain(root.path());
    let (datadir, ibex, mut node) = ibexd_on_core_chain(root.path());
    ibex.wait_for_height(TIP_HEIGHT, &mut node);
    let answers = gettxoutsetinfo_gives_cores_answers(ibex);
    block_statistics_agree_with_getblock(ibex);
    deployments_follow_the_chain(ibex);
    chainstates_and_transactions(ibex);
    chain_tips_are_cores_after_a_reindex(ibex);
    if let Some((core, process)) = &mut bitcoind {
        core.wait_for_height(TIP_HEIGHT, process);
        same_answers_as_bitcoind(ibex, *core);
        core.call("stop", json!([]));
    }
    ibex.call("stop", json!([]));
    assert!(wait_exit(&mut node, &datadir).success());
    // The tool reads the stopped node's coins with the same code.
    for (hash_type, rpc_answer) in answers {
        let tool = common::txoutsetinfo_json(&datadir, &[&format!("-hash_type={hash_type}")]);
        let mut tool = tool.as_object().unwrap().clone();
        let mut rpc_answer = rpc_answer.as_object().unwrap().clone();
        tool.remove("disk_size");
        rpc_answer.remove("disk_size");
        assert_eq!(tool, rpc_answer, "{hash_type}");
    }
    if let Some((_, process)) = &mut bitcoind {
        let started = Instant::now();
        while process.try_wait().unwrap().is_none() && started.elapsed() < NODE_WAIT {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
