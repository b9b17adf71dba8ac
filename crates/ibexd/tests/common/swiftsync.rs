//! What the SwiftSync tests share: a node started with the tests' RPC
//! credentials and waited for, its coin set, and waiting for a moment of a
//! run in its log.

use std::path::Path;

use serde_json::{json, Value};

use super::assumeutxo::{rpc_options, start};
use super::rpc::Endpoint;
use super::{free_port, log_bytes, log_or_empty, wait_for_log_after, NodeProcess, NODE_WAIT};

/// A node on `datadir` with RPC on a free port and `options`, once it has
/// loaded.
pub fn node(datadir: &Path, options: &[String]) -> (Endpoint, NodeProcess) {
    let port = free_port();
    let mut all = rpc_options(port);
    all.extend_from_slice(options);
    // Earlier runs on `datadir` logged the same line.
    let offset = log_bytes(datadir);
    let mut process = start(datadir, &all);
    wait_for_log_after(datadir, "init message: Done loading", offset, &mut process);
    (Endpoint { port }, process)
}

/// `gettxoutsetinfo`'s set hash and height.
pub fn coin_set(endpoint: Endpoint) -> (Value, Value) {
    let answer = endpoint.call("gettxoutsetinfo", json!([]));
    (answer["hash_serialized_3"].clone(), answer["height"].clone())
}

/// Waits until the log written after `offset` bytes has `text`, or says
/// the SwiftSync part is over already (an earlier run got past it).
pub fn wait_for_moment(datadir: &Path, text: &str, offset: usize, process: &mut NodeProcess) {
    let started = std::time::Instant::now();
    loop {
        let log = log_or_empty(datadir);
        let new = log.get(offset..).unwrap_or_default();
        if new.contains(text) || new.contains("[swiftsync] not used") {
            return;
        }
        assert!(process.try_wait().unwrap().is_none(), "the node exited: {log}");
        assert!(started.elapsed() < NODE_WAIT, "no {text:?} in {new}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Node A of the SwiftSync tests: a generated `small` chain imported,
/// listening for peers, with its coin set.
pub struct ServingNode {
    /// Its RPC.
    pub endpoint: Endpoint,
    /// The process.
    pub process: NodeProcess,
    /// Its data directory.
    pub datadir: std::path::PathBuf,
    /// Its P2P port on 127.0.0.1.
    pub p2p_port: u16,
    /// `gettxoutsetinfo`'s set hash and height at the tip.
    pub expected: (Value, Value),
}

/// Generates a `small` chain of `tip_height` blocks from `seed` under
/// `root` and starts A on it with `extra` options, synced to the tip.
pub fn serving_node(root: &Path, tip_height: u64, seed: &str, extra: &[String]) -> ServingNode {
    let chain = ChainToServe { profile: "small", tip_height, seed, generator_options: &[] };
    serving_node_on(root, &chain, extra)
}

/// The chain a serving node imports: `ibex gen --profile <profile>
/// --blocks <tip_height> --seed <seed> <generator_options>`.
#[derive(Debug, Clone, Copy)]
pub struct ChainToServe<'a> {
    /// The generator's profile.
    pub profile: &'a str,
    /// Blocks above genesis.
    pub tip_height: u64,
    /// The generator's seed.
    pub seed: &'a str,
    /// More generator options.
    pub generator_options: &'a [&'a str],
}

/// Generates `chain` under `root` and starts A on it with `extra`
/// options, synced to the tip.
pub fn serving_node_on(root: &Path, chain: &ChainToServe<'_>, extra: &[String]) -> ServingNode {
    let tip_height = chain.tip_height;
    let (profile, seed, generator_options) = (chain.profile, chain.seed, chain.generator_options);
    let chain = root.join("chain");
    super::generate_chain(&chain, profile, &tip_height.to_string(), seed, generator_options);
    let datadir = super::datadir_with_blocks(&root.join("a"), &chain);
    let p2p_port = free_port();
    let mut options = vec![
        "-reindex".to_owned(),
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={p2p_port}"),
    ];
    options.extend_from_slice(extra);
    let (endpoint, mut process) = node(&datadir, &options);
    endpoint.wait_for_height(tip_height, &mut process);
    let expected = coin_set(endpoint);
    ServingNode { endpoint, process, datadir, p2p_port, expected }
}

/// A's `dumphints` file at `height` (one a height: `dumphints` refuses
/// a path that exists).
pub fn hints_at(endpoint: Endpoint, height: u32) -> std::path::PathBuf {
    let answer = endpoint.call("dumphints", json!([format!("hints-{height}.dat"), height]));
    std::path::PathBuf::from(answer["path"].as_str().unwrap())
}

/// B's options: syncing from A's `p2p_port` only, not listening, with the
/// hints at `hints` and `-assumevalid=<assume_valid>`.
pub fn client_options(p2p_port: u16, hints: &Path, assume_valid: &str) -> Vec<String> {
    vec![
        format!("-connect=127.0.0.1:{p2p_port}"),
        "-listen=0".to_owned(),
        format!("-swiftsync={}", hints.display()),
        format!("-assumevalid={assume_valid}"),
    ]
}
