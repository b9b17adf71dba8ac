//! `invalidateblock` and `reconsiderblock` over RPC against a running
//! `ibexd`: a node that imported a generated chain with forks
//! and stays up (`-listen=1`) moves its tip to the parent of an invalidated
//! block, or to a competing branch with more work, lists the old tip as
//! `invalid` in `getchaintips`, comes back to its tip on
//! `reconsiderblock`, answers Core's errors, and after a `kill -9` right
//! after an `invalidateblock` restarts on the invalidated chain's parent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use common::{datadir_with_blocks, free_port, generate_chain, NodeProcess};

/// Blocks of the generated chain: the reorged branch builds on height 90
/// (two blocks), the stale block is at 120 (the generator's fork plan).
const BLOCKS: u32 = 150;
const REORG_BASE_HEIGHT: u32 = 90;
const STALE_HEIGHT: u32 = 120;

/// `alice:secret` in base64.
const CREDENTIALS: &str = "YWxpY2U6c2VjcmV0";

/// A node on `datadir` with its RPC server on a free port.
struct Node {
    port: u16,
    process: NodeProcess,
}

fn start(datadir: &Path, extra: &[&str]) -> Node {
    let port = free_port();
    let rpc_port = format!("-rpcport={port}");
    let p2p_port = format!("-port={}", free_port());
    let mut options = vec![
        "-listen=1",
        "-bind=127.0.0.1",
        "-rpcuser=alice",
        "-rpcpassword=secret",
        p2p_port.as_str(),
        rpc_port.as_str(),
    ];
    options.extend_from_slice(extra);
    // A restart appends to the log: wait for this run's line.
    let log_before = common::log_or_empty(datadir).len();
    let mut process =
        common::spawn_node(&mut common::quiet_ibexd(datadir, &common::REGTEST_QUIET, &options));
    let started = Instant::now();
    loop {
        let log = common::log_or_empty(datadir);
        if log.get(log_before..).is_some_and(|new| new.contains("init message: Done loading")) {
            break;
        }
        if let Some(status) = process.try_wait().unwrap() {
            panic!("ibexd exited ({status:?}) before serving RPC:\n{log}");
        }
        assert!(started.elapsed() < common::NODE_WAIT, "ibexd never served RPC:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Node { port, process }
}

impl Node {
    /// The reply to `method(params)`: `result` or `error`.
    fn call(&self, method: &str, params: Value) -> Result<Value, Value> {
        let body = json!({"jsonrpc": "1.0", "id": 1, "method": method, "params": params});
        let body = body.to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let request = format!(
            "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {CREDENTIALS}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (_, reply) = response.split_once("\r\n\r\n").unwrap();
        let reply: Value = serde_json::from_str(reply).unwrap();
        match &reply["error"] {
            Value::Null => Ok(reply["result"].clone()),
            error => Err(error.clone()),
        }
    }

    fn ok(&self, method: &str, params: Value) -> Value {
        self.call(method, params).unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    fn count(&self) -> u64 {
        self.ok("getblockcount", json!([])).as_u64().unwrap()
    }

    fn best(&self) -> String {
        self.ok("getbestblockhash", json!([])).as_str().unwrap().to_owned()
    }

    fn hash_at(&self, height: u32) -> String {
        self.ok("getblockhash", json!([height])).as_str().unwrap().to_owned()
    }

    /// `getchaintips`'s status for the tip `hash`.
    fn tip_status(&self, hash: &str) -> Option<String> {
        let tips = self.ok("getchaintips", json!([]));
        let tip = tips.as_array().unwrap().iter().find(|tip| tip["hash"] == hash)?;
        Some(tip["status"].as_str().unwrap().to_owned())
    }

    /// `gettxoutsetinfo`'s hash and height, when the node has the method.
    fn utxo_hash(&self) -> Option<(String, u64)> {
        match self.call("gettxoutsetinfo", json!([])) {
            Ok(info) => Some((
                info["hash_serialized_3"].as_str().unwrap().to_owned(),
                info["height"].as_u64().unwrap(),
            )),
            Err(error) if error["code"] == -32601 => None,
            Err(error) => panic!("gettxoutsetinfo: {error}"),
        }
    }
}

fn assert_error(reply: Result<Value, Value>, code: i64, message: &str) {
    let error = reply.unwrap_err();
    assert_eq!(error["code"], code, "{error}");
    assert!(error["message"].as_str().unwrap().contains(message), "{error}");
}

#[test]
fn ibexd_invalidates_and_reconsiders_blocks_over_rpc_and_keeps_the_marks_after_a_kill() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "21", &["--forks"]);
    let datadir = datadir_with_blocks(&root.path().join("node"), &chain);
    let node = start(&datadir, &["-reindex"]);
    assert_eq!(node.count(), u64::from(BLOCKS));
    let tip = node.best();
    let utxo_at_tip = node.utxo_hash();
    if utxo_at_tip.is_none() {
        eprintln!("skipped: gettxoutsetinfo checks (the node has no such method yet)");
    }
    let middle_height = STALE_HEIGHT - 20;
    let middle = node.hash_at(middle_height);
    let parent = node.hash_at(middle_height - 1);
    let first_main = node.hash_at(REORG_BASE_HEIGHT + 1);

    // In the middle: the parent beats the reorged branch.
    assert_eq!(node.ok("invalidateblock", json!([middle])), Value::Null);
    assert_eq!((node.count(), node.best()), (u64::from(middle_height - 1), parent.clone()));
    assert_eq!(node.tip_status(&tip).as_deref(), Some("invalid"));
    if let Some((_, height)) = node.utxo_hash() {
        assert_eq!(height, u64::from(middle_height - 1));
    }

    // The main chain's first block after the fork: its two-block rival
    // has more work than the fork point.
    node.ok("invalidateblock", json!([first_main]));
    assert_eq!(node.count(), u64::from(REORG_BASE_HEIGHT + 2));
    let branch_tip = node.best();
    assert_ne!(branch_tip, parent);
    assert_eq!(node.tip_status(&branch_tip).as_deref(), Some("active"));
    assert_eq!(node.tip_status(&tip).as_deref(), Some("invalid"));

    // Core's errors; the genesis block is left alone with a null answer.
    let unknown = "11".repeat(32);
    assert_error(node.call("invalidateblock", json!([unknown])), -5, "Block not found");
    assert_error(node.call("reconsiderblock", json!([unknown])), -5, "Block not found");
    assert_error(node.call("invalidateblock", json!(["zz"])), -8, "blockhash must be of length 64");
    assert_error(node.call("reconsiderblock", json!([5])), -3, "");
    assert_error(node.call("invalidateblock", json!([])), -1, "invalidateblock \"blockhash\"");
    let genesis = node.hash_at(0);
    assert_eq!(node.ok("invalidateblock", json!({"blockhash": genesis})), Value::Null);
    assert_eq!(node.best(), branch_tip);

    // Reconsidering the first block clears every mark above it.
    assert_eq!(node.ok("reconsiderblock", json!([first_main])), Value::Null);
    assert_eq!((node.count(), node.best()), (u64::from(BLOCKS), tip.clone()));
    assert_eq!(node.tip_status(&tip).as_deref(), Some("active"));
    assert_eq!(node.tip_status(&branch_tip).as_deref(), Some("valid-fork"));
    assert_eq!(node.utxo_hash(), utxo_at_tip);

    // Killed right after an answered invalidateblock: the restart keeps it.
    let late = node.hash_at(BLOCKS - 5);
    node.ok("invalidateblock", json!([late]));
    assert_eq!(node.count(), u64::from(BLOCKS - 6));
    let Node { mut process, .. } = node;
    process.kill().unwrap();
    process.wait().unwrap();
    let restarted = start(&datadir, &[]);
    assert_eq!(restarted.count(), u64::from(BLOCKS - 6));
    assert_eq!(restarted.tip_status(&tip).as_deref(), Some("invalid"));
    restarted.ok("reconsiderblock", json!([late]));
    assert_eq!(restarted.best(), tip);
    assert_eq!(restarted.utxo_hash(), utxo_at_tip);
    restarted.ok("stop", json!([]));
    let Node { mut process, .. } = restarted;
    assert!(common::wait_exit(&mut process, &datadir).success());
}

/// `bitcoind` on the same block files, reindexed to `tip`, with the same
/// RPC credentials.
fn start_core(binaries: &Path, datadir: &Path, tip: &str) -> Node {
    let port = free_port();
    let mut process = common::spawn_node(
        std::process::Command::new(binaries.join("bitcoind"))
            .args(["-regtest", "-printtoconsole=0", "-dnsseed=0", "-fixedseeds=0", "-listen=0"])
            .args(["-connect=0", "-reindex", "-rpcuser=alice", "-rpcpassword=secret"])
            .arg(format!("-datadir={}", datadir.display()))
            .arg(format!("-rpcport={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let started = Instant::now();
    loop {
        if let Some(status) = process.try_wait().unwrap() {
            panic!("bitcoind exited ({status:?}):\n{}", common::log_or_empty(datadir));
        }
        let node = Node { port, process };
        if TcpStream::connect(("127.0.0.1", port)).is_ok()
            && node.call("getbestblockhash", json!([])).is_ok_and(|best| best == tip)
        {
            return node;
        }
        process = node.process;
        assert!(started.elapsed() < common::NODE_WAIT, "{}", common::log_or_empty(datadir));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A `getchaintips` entry: height, hash, status, branch length.
type TipRow = (u64, String, String, u64);

/// What both nodes must agree on: height, tip, and the chain tips by
/// height and hash with their status and branch length (Core lists equal
/// heights in memory order).
fn chain_view(node: &Node) -> (u64, String, Vec<TipRow>) {
    let tips = node.ok("getchaintips", json!([]));
    let mut tips: Vec<TipRow> = tips
        .as_array()
        .unwrap()
        .iter()
        .map(|tip| {
            (
                tip["height"].as_u64().unwrap(),
                tip["hash"].as_str().unwrap().to_owned(),
                tip["status"].as_str().unwrap().to_owned(),
                tip["branchlen"].as_u64().unwrap(),
            )
        })
        .collect();
    tips.sort();
    (node.count(), node.best(), tips)
}

#[test]
fn ibexd_answers_invalidateblock_and_reconsiderblock_as_bitcoind_does() {
    let Some(binaries) = std::env::var_os("IBEX_CORE_BIN").map(std::path::PathBuf::from) else {
        eprintln!("skipped: invalidateblock against bitcoind (IBEX_CORE_BIN not set)");
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "22", &["--forks"]);
    let ibex = start(&datadir_with_blocks(&root.path().join("ibex"), &chain), &["-reindex"]);
    let core_datadir = datadir_with_blocks(&root.path().join("core"), &chain);
    let core = start_core(&binaries, &core_datadir, &ibex.best());
    let same = |step: &str| {
        assert_eq!(chain_view(&ibex), chain_view(&core), "after {step}");
        if let Some((hash, height)) = ibex.utxo_hash() {
            assert_eq!(Some((hash, height)), core.utxo_hash(), "UTXO set after {step}");
        }
    };
    // Both reindexes connect only the best chain (Core's activates once,
    // after the last file): the branch met first in the files was never
    // connected, `valid-headers` on both sides.
    assert_eq!(chain_view(&ibex), chain_view(&core), "after the import");
    let middle = ibex.hash_at(STALE_HEIGHT - 20);
    let stale_rival = ibex.hash_at(STALE_HEIGHT);
    let first_main = ibex.hash_at(REORG_BASE_HEIGHT + 1);
    let genesis = ibex.hash_at(0);
    let steps = [
        ("invalidateblock", &first_main),
        ("reconsiderblock", &first_main),
        ("invalidateblock", &stale_rival),
        ("invalidateblock", &middle),
        ("reconsiderblock", &stale_rival),
        ("invalidateblock", &first_main),
        ("invalidateblock", &genesis),
        ("reconsiderblock", &middle),
        ("reconsiderblock", &genesis),
    ];
    for (method, hash) in steps {
        let answers = (ibex.call(method, json!([hash])), core.call(method, json!([hash])));
        assert_eq!(answers.0, answers.1, "{method} {hash}");
        same(&format!("{method} {hash}"));
    }
    let unknown = "22".repeat(32);
    for method in ["invalidateblock", "reconsiderblock"] {
        let codes = [&ibex, &core].map(|node| node.call(method, json!([unknown])).unwrap_err());
        assert_eq!(codes[0], codes[1], "{method} of an unknown block");
    }
    for node in [ibex, core] {
        node.ok("stop", json!([]));
        let Node { mut process, .. } = node;
        process.wait().unwrap();
    }
}
