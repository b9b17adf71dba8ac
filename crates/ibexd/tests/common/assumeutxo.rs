//! What the `loadtxoutset` tests share: a node serving a generated chain
//! that has dumped its coins at a base height (with the AssumeUTXO entry
//! and the headers another node needs to load them), and starting and
//! stopping nodes with the tests' RPC credentials.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::rpc::Endpoint;
use super::{datadir_with_blocks, debug_log, free_port, generate_chain, wait_exit, NodeProcess};

/// `-rpcport` and the tests' credentials.
pub fn rpc_options(port: u16) -> Vec<String> {
    vec![format!("-rpcport={port}"), "-rpcuser=user".to_owned(), "-rpcpassword=password".to_owned()]
}

/// A quiet regtest `ibexd` on `datadir` with `options`.
pub fn start(datadir: &Path, options: &[String]) -> NodeProcess {
    let arguments: Vec<&str> = options.iter().map(String::as_str).collect();
    super::spawn_node(&mut super::quiet_ibexd(datadir, &super::REGTEST_QUIET, &arguments))
}

/// Stops the node with the `stop` RPC; it must exit 0.
pub fn stop(endpoint: Endpoint, process: &mut NodeProcess, datadir: &Path) {
    endpoint.call("stop", json!([]));
    let status = wait_exit(process, datadir);
    assert!(status.success(), "{status:?}\n{}", debug_log(datadir));
}

/// Node A: serves a generated chain over P2P and has dumped its coins.
pub struct Served {
    /// Its data directory.
    pub datadir: PathBuf,
    /// Its RPC.
    pub endpoint: Endpoint,
    /// The process.
    pub process: NodeProcess,
    /// Its P2P port on 127.0.0.1.
    pub p2p_port: u16,
    /// `dumptxoutset`'s answer.
    pub dumped: Value,
    /// The snapshot file.
    pub snapshot: PathBuf,
    /// `-testassumeutxo=...` naming the dump's block and hash.
    pub entry_option: String,
    /// Blocks 1 to the tip: their hashes and headers (hex).
    pub hashes: Vec<Value>,
    /// Their headers, hex.
    pub headers: Vec<Value>,
    /// `gettxoutsetinfo` at the tip.
    pub coins_at_tip: Value,
}

/// Generates a `profile` chain of `tip_height` blocks from `seed` under
/// `root`, serves it from node A, and dumps A's coins at `base_height`.
pub fn serve_and_dump(
    root: &Path,
    profile: &str,
    tip_height: u64,
    base_height: u64,
    seed: &str,
) -> Served {
    let chain = root.join("chain");
    generate_chain(&chain, profile, &tip_height.to_string(), seed, &[]);
    let datadir = datadir_with_blocks(&root.join("a"), &chain);
    let (rpc_port, p2p_port) = (free_port(), free_port());
    let mut options = rpc_options(rpc_port);
    options.extend(["-reindex", "-listen=1", "-bind=127.0.0.1"].map(str::to_owned));
    options.push(format!("-port={p2p_port}"));
    let mut process = start(&datadir, &options);
    let endpoint = Endpoint { port: rpc_port };
    super::wait_for_log(&datadir, "init message: Done loading", &mut process);
    endpoint.wait_for_height(tip_height, &mut process);
    let dumped =
        endpoint.call("dumptxoutset", json!(["utxo.dat", "rollback", {"rollback": base_height}]));
    assert_eq!(dumped["base_height"], base_height);
    let snapshot = PathBuf::from(dumped["path"].as_str().unwrap_or_default());
    let entry_option = format!(
        "-testassumeutxo={base_height}:{}:{}:{}",
        dumped["base_hash"].as_str().unwrap_or_default(),
        dumped["txoutset_hash"].as_str().unwrap_or_default(),
        dumped["nchaintx"]
    );
    let heights: Vec<Value> = (1..=tip_height).map(|height| json!([height])).collect();
    let hashes = endpoint.batch("getblockhash", &heights);
    let header_requests: Vec<Value> = hashes.iter().map(|hash| json!([hash, false])).collect();
    let headers = endpoint.batch("getblockheader", &header_requests);
    let coins_at_tip = endpoint.call("gettxoutsetinfo", json!([]));
    Served {
        datadir,
        endpoint,
        process,
        p2p_port,
        dumped,
        snapshot,
        entry_option,
        hashes,
        headers,
        coins_at_tip,
    }
}

/// Gives `endpoint`'s node every header of `served` (`submitheader`).
pub fn submit_headers(endpoint: Endpoint, served: &Served) {
    for header in &served.headers {
        assert_eq!(endpoint.call("submitheader", json!([header])), Value::Null);
    }
}
