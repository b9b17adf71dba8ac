//! Core's own regtest AssumeUTXO entry at height 200 (compiled into
//! `bitcoind` for its `utxo_snapshot` fuzz target) names the chain Core's
//! test helper `CreateBlockChain` mines. Ibex rebuilds that chain, so the
//! entry can be exercised without `-testassumeutxo`, on both sides:
//! `ibexd` dumps the coins at 200 with exactly the entry's hash and chain
//! transaction count, and a second `ibexd` loads the file against the
//! compiled entry and syncs both chainstates from the first. With
//! `IBEX_CORE_BIN` set, `bitcoind` loads `ibexd`'s file (Core accepts
//! nothing but its compiled entries, so this is the only way it can), syncs
//! from `ibexd` over P2P until its background chainstate proves the
//! snapshot, dumps the same bytes at 200, and an `ibexd` loads
//! `bitcoind`'s file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::assumeutxo::{rpc_options, start, stop};
use common::rpc::Endpoint;
use common::{free_port, log_bytes, wait_for_log, wait_for_log_after, NodeProcess};
use ibex_consensus::subsidy::block_subsidy;
use ibex_primitives::hash::sha256;
use ibex_primitives::params::assumeutxo::REGTEST;
use ibex_primitives::{
    merkle_root, Block, Header, Height, OutPoint, Params, Transaction, TxInput, TxOutput,
};
use serde_json::{json, Value};

/// The entry's height: `2 * COINBASE_MATURITY` blocks of Core's helper.
const BASE_HEIGHT: u32 = 200;
/// The chain goes on past the base so the snapshot chainstate has a tip
/// to follow.
const TIP_HEIGHT: u32 = 240;
/// `VERSIONBITS_LAST_OLD_BLOCK_VERSION`, the version Core's helper uses.
const HELPER_BLOCK_VERSION: i32 = 4;
/// `CTxIn::MAX_SEQUENCE_NONFINAL`: the helper's coinbases keep their lock
/// time enforced.
const SEQUENCE_NONFINAL: u32 = 0xffff_fffe;
const OP_TRUE: u8 = 0x51;

/// Block `height` of Core's `CreateBlockChain` (`src/test/util/mining.cpp`):
/// one coinbase (version 2, lock time `height - 1`, sequence non-final,
/// scriptSig `<height> OP_0`, the subsidy paid to P2WSH of `OP_TRUE`),
/// header version 4, one second after its parent, genesis' bits, the first
/// nonce that meets them.
fn helper_block(params: &Params, height: u32, parent: &Header) -> Block {
    let mut script_sig = ibex_consensus::finality::bip34_height_prefix(Height::new(height));
    script_sig.push(0x00);
    let mut witness_program = vec![0x00, 0x20];
    witness_program.extend_from_slice(&sha256(&[OP_TRUE]));
    let subsidy = block_subsidy(Height::new(height), params.subsidy_halving_interval);
    let coinbase = Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig,
            sequence: SEQUENCE_NONFINAL,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput { value: subsidy.to_sat(), script_pubkey: witness_program }],
        lock_time: height - 1,
    };
    let mut header = Header {
        version: HELPER_BLOCK_VERSION,
        previous_block_hash: parent.block_hash(),
        merkle_root: merkle_root(vec![coinbase.txid().0]).root,
        time: parent.time + 1,
        bits: params.genesis.header.bits,
        nonce: 0,
    };
    ibex_generator::block_builder::grind(&mut header, height).unwrap();
    Block { header, transactions: vec![coinbase] }
}

/// Blocks 1 to `length` of Core's helper chain.
fn helper_chain(params: &Params, length: u32) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::with_capacity(length as usize);
    for height in 1..=length {
        let parent = blocks.last().map_or(&params.genesis.header, |block| &block.header);
        let block = helper_block(params, height, parent);
        blocks.push(block);
    }
    blocks
}

/// Core's compiled regtest entry at [`BASE_HEIGHT`].
fn cores_entry() -> ibex_primitives::params::assumeutxo::AssumeUtxoEntry {
    *REGTEST.iter().find(|entry| entry.height == BASE_HEIGHT).unwrap()
}

/// Polls `condition` until it holds; the node must stay up.
fn wait_until(what: &str, process: &mut NodeProcess, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(process.try_wait().unwrap().is_none(), "the node exited waiting for {what}");
        assert!(started.elapsed() < Duration::from_secs(180), "no {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether `endpoint`'s node has one chainstate left, validated.
fn snapshot_validated(endpoint: Endpoint) -> bool {
    let states = endpoint.request("getchainstates", &json!([]))["result"].clone();
    states["chainstates"]
        .as_array()
        .is_some_and(|listed| listed.len() == 1 && listed[0]["validated"] == true)
}

/// Node A: the helper chain from its block files, serving it over P2P.
struct Server {
    datadir: PathBuf,
    endpoint: Endpoint,
    process: NodeProcess,
    p2p_port: u16,
}

fn serve(root: &Path, params: &Params, chain: &[Block]) -> Server {
    let datadir = root.join("a");
    let blocks = datadir.join("regtest/blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    let encoded: Vec<Vec<u8>> =
        std::iter::once(&params.genesis).chain(chain).map(Block::encode).collect();
    common::write_block_file(&blocks, params.message_start, &encoded);
    let (rpc_port, p2p_port) = (free_port(), free_port());
    let mut options = rpc_options(rpc_port);
    options.extend(["-reindex", "-listen=1", "-bind=127.0.0.1"].map(str::to_owned));
    options.push(format!("-port={p2p_port}"));
    let mut process = start(&datadir, &options);
    let endpoint = Endpoint { port: rpc_port };
    wait_for_log(&datadir, "init message: Done loading", &mut process);
    endpoint.wait_for_height(u64::from(TIP_HEIGHT), &mut process);
    Server { datadir, endpoint, process, p2p_port }
}

/// An empty `ibexd` (no `-testassumeutxo`: Core's compiled entry is the
/// only one) given the headers, loading `snapshot`, then restarted with
/// `server` as its peer until the background proves the snapshot; its
/// `hash_serialized_3` at the tip.
fn load_and_sync(
    root: &Path,
    name: &str,
    headers: &[String],
    snapshot: &Path,
    server: u16,
) -> Value {
    let datadir = root.join(name);
    std::fs::create_dir_all(&datadir).unwrap();
    let rpc_port = free_port();
    let mut options = rpc_options(rpc_port);
    options.push("-listen=0".to_owned());
    let mut process = start(&datadir, &options);
    let node = Endpoint { port: rpc_port };
    wait_for_log(&datadir, "init message: Done loading", &mut process);
    for header in headers {
        assert_eq!(node.call("submitheader", json!([header])), Value::Null);
    }
    let entry = cores_entry();
    let loaded = node.call("loadtxoutset", json!([snapshot]));
    assert_eq!(loaded["base_height"], BASE_HEIGHT);
    assert_eq!(loaded["tip_hash"], entry.block_hash.to_string());
    assert_eq!(loaded["coins_loaded"], BASE_HEIGHT);
    stop(node, &mut process, &datadir);

    let offset = log_bytes(&datadir);
    options.push(format!("-connect=127.0.0.1:{server}"));
    let mut process = start(&datadir, &options);
    wait_for_log_after(
        &datadir,
        "[snapshot] detected active snapshot chainstate",
        offset,
        &mut process,
    );
    node.wait_for_height(u64::from(TIP_HEIGHT), &mut process);
    wait_until("a validated snapshot", &mut process, || snapshot_validated(node));
    let coins = node.call("gettxoutsetinfo", json!([]))["hash_serialized_3"].clone();
    stop(node, &mut process, &datadir);
    coins
}

#[test]
fn cores_compiled_regtest_entry_is_dumped_and_loaded_on_cores_helper_chain() {
    let params = Params::regtest();
    let chain = helper_chain(&params, TIP_HEIGHT);
    let entry = cores_entry();
    // The rebuilt chain is Core's: block 200 has the entry's hash.
    assert_eq!(chain[BASE_HEIGHT as usize - 1].header.block_hash(), entry.block_hash);

    let root = tempfile::tempdir().unwrap();
    let mut server = serve(root.path(), &params, &chain);
    let a = server.endpoint;
    let dumped =
        a.call("dumptxoutset", json!(["utxo-200.dat", "rollback", {"rollback": BASE_HEIGHT}]));
    assert_eq!(dumped["base_hash"], entry.block_hash.to_string());
    assert_eq!(dumped["txoutset_hash"], entry.hash_serialized.to_string());
    assert_eq!(dumped["nchaintx"], entry.chain_transaction_count);
    assert_eq!(dumped["coins_written"], BASE_HEIGHT);
    let snapshot = PathBuf::from(dumped["path"].as_str().unwrap());
    let tip_coins = a.call("gettxoutsetinfo", json!([]))["hash_serialized_3"].clone();
    let headers: Vec<String> =
        chain.iter().map(|block| ibex_primitives::hex::encode(&block.header.encode())).collect();

    let loaded_coins = load_and_sync(root.path(), "b", &headers, &snapshot, server.p2p_port);
    assert_eq!(loaded_coins, tip_coins);

    bitcoind_loads_ibexds_file(root.path(), &server, &headers, &snapshot, &tip_coins);
    stop(a, &mut server.process, &server.datadir);
}

/// With `IBEX_CORE_BIN`: `bitcoind` given the headers loads `ibexd`'s
/// file, syncs from `ibexd` until its background chainstate is validated
/// and has `ibexd`'s coins; its own dump at 200 is byte for byte
/// `ibexd`'s; an `ibexd` loads that dump and syncs to the same coins.
fn bitcoind_loads_ibexds_file(
    root: &Path,
    server: &Server,
    headers: &[String],
    snapshot: &Path,
    tip_coins: &Value,
) {
    let Some(directory) = common::core_binaries("bitcoind loading ibexd's snapshot") else {
        return;
    };
    let datadir = root.join("core");
    std::fs::create_dir_all(&datadir).unwrap();
    let port = free_port();
    let mut command = std::process::Command::new(directory.join("bitcoind"));
    command
        .arg(format!("-datadir={}", datadir.display()))
        .args(["-regtest", "-listen=0", "-connect=0", "-dnsseed=0", "-printtoconsole=0"])
        .args(["-disablewallet", "-dbcache=100"])
        .args(["-rpcuser=user", "-rpcpassword=password", &format!("-rpcport={port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut process = common::spawn_node(&mut command);
    let core = Endpoint { port };
    core.wait_for_height(0, &mut process);
    for header in headers {
        assert_eq!(core.call("submitheader", json!([header])), Value::Null);
    }
    let loaded = core.call("loadtxoutset", json!([snapshot]));
    assert_eq!(loaded["coins_loaded"], BASE_HEIGHT);
    assert_eq!(loaded["base_height"], BASE_HEIGHT);
    let peer = format!("127.0.0.1:{}", server.p2p_port);
    core.call("addnode", json!([peer, "add"]));
    core.wait_for_height(u64::from(TIP_HEIGHT), &mut process);
    wait_until("bitcoind's validated snapshot", &mut process, || snapshot_validated(core));
    let coins = core.call("gettxoutsetinfo", json!([]));
    assert_eq!(&coins["hash_serialized_3"], tip_coins);

    let dumped =
        core.call("dumptxoutset", json!(["core-200.dat", "rollback", {"rollback": BASE_HEIGHT}]));
    let core_file = PathBuf::from(dumped["path"].as_str().unwrap());
    assert!(std::fs::read(&core_file).unwrap() == std::fs::read(snapshot).unwrap());
    core.call("stop", json!([]));
    let _ = process.wait();

    let loaded_coins = load_and_sync(root, "c", headers, &core_file, server.p2p_port);
    assert_eq!(&loaded_coins, tip_coins);
}
