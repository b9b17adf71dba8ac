//! Pruning against Bitcoin Core's own `bitcoind`, run when `IBEX_CORE_BIN`
//! names a directory holding `bitcoind` and `bitcoin-cli`; otherwise each
//! test says it was skipped.
//!
//! 1. A pruned `ibexd` is a fresh `bitcoind`'s only peer. Core's
//!    `SendMessages` asks a peer offering `NODE_NETWORK_LIMITED` without
//!    `NODE_NETWORK` for no block during initial block download, and
//!    `FindNextBlocks` never asks it for one 286 or more below its best
//!    block; Core keeps the manual peer all the while. So `bitcoind` gets
//!    every header and no block, and `ibexd` serves a recent block asked
//!    with `getblockfrompeer` and disconnects (without a ban) for one it
//!    pruned. A `bitcoind` out of initial block download, one block short
//!    of that window, downloads every block of the window and stops; given
//!    that one block it is at the tip.
//! 2. A pruned `ibexd` syncs from `bitcoind`, prunes, answers for a pruned
//!    block as Core does, and follows `bitcoind`'s new blocks.
//! 3. `bitcoind -prune=550 -fastprune` syncs from an unpruned `ibexd`,
//!    prunes on `pruneblockchain`, and follows `ibexd`'s new blocks.
//!
//! The chain: `ibex gen --profile tiny` blocks first (signed transactions,
//! ~3 KB a block, so `-fastprune`'s 64 KiB files hold ~20 and pruning
//! removes whole files of them), then coinbase-only blocks made here with
//! times from six hours ago. A node leaves initial block download only
//! with a tip less than a day old (Core's `-maxtipage`), and neither node
//! announces a new tip before; the generated blocks carry times after
//! genesis' (2011). Six hours, not minutes: Core's direct fetch on a
//! `headers` message (`CanDirectFetch`, a tip within 20 block intervals of
//! now) stays out of the way, so its downloads go through `FindNextBlocks`.
//! Each node's whole IBD takes a few seconds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::assumeutxo::{rpc_options, start, stop};
use common::rpc::Endpoint;
use common::{free_port, generate_chain, wait_for_log, NodeProcess};
use ibex_consensus::subsidy::block_subsidy;
use ibex_primitives::{merkle_root, Block, Header, Height, OutPoint, Params, Transaction};
use ibex_primitives::{TxInput, TxOutput};
use serde_json::{json, Value};

/// Blocks of `ibex gen --profile tiny` above genesis.
const GENERATED_BLOCKS: u32 = 150;
/// Core's `MIN_BLOCKS_TO_KEEP` (and `NODE_NETWORK_LIMITED_MIN_BLOCKS`).
const BLOCKS_TO_KEEP: u32 = 288;
/// Core's `FindNextBlocks` asks a limited peer for no block this many or
/// more below the peer's best block (288 less two blocks of slack).
const LIMITED_REQUEST_DEPTH: u32 = BLOCKS_TO_KEEP - 2;
/// The chain's tip: the recent blocks reach from just above the generated
/// ones to past the window a limited peer is asked for, so a node holding
/// every block below that window holds a recent tip.
const TIP_HEIGHT: u32 = GENERATED_BLOCKS + BLOCKS_TO_KEEP + 2;
const _: () = assert!(TIP_HEIGHT - LIMITED_REQUEST_DEPTH - 1 > GENERATED_BLOCKS);
/// Blocks above [`TIP_HEIGHT`] a serving `ibexd` gets later (scenario 3).
const LATER_BLOCKS: u32 = 3;
/// A block `ibexd` pruned, far below any window.
const DEEP_PRUNED_HEIGHT: u32 = 50;
/// About how old the recent blocks are (each one second after its parent).
const RECENT_BLOCKS_AGE_SECONDS: u64 = 6 * 3600;
/// Longest wait for a node to get where a test needs it.
const WAIT_TIMEOUT_MS: u64 = 60_000;
const POLL_INTERVAL_MS: u64 = 50;
const NODE_NETWORK: u64 = 1;
const NODE_NETWORK_LIMITED: u64 = 1 << 10;
/// `getblock`'s error (both nodes') for a block whose data was pruned.
const PRUNED_BLOCK: &str = "Block not available (pruned data)";
/// Core's `getblock` error for a block whose data never came.
const NOT_DOWNLOADED: &str = "Block not available (not fully downloaded)";
/// `ibexd`'s log line (Core's) when a peer asks for a block deeper than
/// a limited node serves.
const BELOW_LIMITED: &str =
    "Ignore block request below NODE_NETWORK_LIMITED threshold, disconnecting";

/// The serialised blocks from genesis to the tip (and beyond), and the
/// file holding them, for `-loadblock`.
struct Chain {
    blocks: Vec<Vec<u8>>,
    file: PathBuf,
}

impl Chain {
    fn hash(&self, height: u32) -> String {
        let header: &[u8; 80] = self.blocks[height as usize][..80].try_into().expect("a header");
        Header::decode(header).block_hash().to_string()
    }

    fn hex(&self, height: u32) -> String {
        ibex_primitives::hex::encode(&self.blocks[height as usize])
    }
}

fn unix_seconds() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("a clock after 1970").as_secs()
}

/// A coinbase-only block at `height` on `parent` at `time`, paying the
/// subsidy to `OP_TRUE`.
fn recent_block(params: &Params, height: u32, parent: &Header, time: u32) -> Block {
    let mut script_sig = ibex_consensus::finality::bip34_height_prefix(Height::new(height));
    script_sig.push(0x00);
    let subsidy = block_subsidy(Height::new(height), params.subsidy_halving_interval);
    let coinbase = Transaction {
        version: 2,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig,
            sequence: u32::MAX,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput { value: subsidy.to_sat(), script_pubkey: vec![0x51] }],
        lock_time: 0,
    };
    let mut header = Header {
        version: 0x2000_0000,
        previous_block_hash: parent.block_hash(),
        merkle_root: merkle_root(vec![coinbase.txid().0]).root,
        time,
        bits: params.genesis.header.bits,
        nonce: 0,
    };
    ibex_generator::block_builder::grind(&mut header, height).expect("regtest work");
    Block { header, transactions: vec![coinbase] }
}

/// The generated blocks, then recent ones up to `tip_height`, written to
/// `<root>/chain-file/blk00000.dat` unobfuscated.
fn build_chain(root: &Path, tip_height: u32) -> Chain {
    let params = Params::regtest();
    let generated = root.join("generated");
    generate_chain(&generated, "tiny", &GENERATED_BLOCKS.to_string(), "7", &["--xor-zero"]);
    let key = ibex_blockstore::files::read_obfuscation_key(&generated).expect("xor.dat");
    let data = ibex_blockstore::files::read_block_file(&generated.join("blk00000.dat"), &key)
        .expect("the generated file");
    let mut blocks: Vec<Vec<u8>> = ibex_blockstore::Records::new(&data, params.message_start)
        .map(|record| record.bytes.to_vec())
        .collect();
    assert_eq!(blocks.len(), GENERATED_BLOCKS as usize + 1, "genesis and the generated blocks");
    let last: &[u8; 80] = blocks[blocks.len() - 1][..80].try_into().expect("a header");
    let mut parent = Header::decode(last);
    let first_time = unix_seconds() - RECENT_BLOCKS_AGE_SECONDS;
    for height in GENERATED_BLOCKS + 1..=tip_height {
        let time = u32::try_from(first_time + u64::from(height)).expect("a 32-bit time");
        let block = recent_block(&params, height, &parent, time);
        parent = block.header;
        blocks.push(block.encode());
    }
    let directory = root.join("chain-file");
    std::fs::create_dir_all(&directory).expect("the chain's directory");
    let file = common::write_block_file(&directory, params.message_start, &blocks);
    Chain { blocks, file }
}

/// Polls `condition` every [`POLL_INTERVAL_MS`] until it holds; `process`
/// must stay up.
fn wait_until(what: &str, process: &mut NodeProcess, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(process.try_wait().expect("a child").is_none(), "a node exited waiting for {what}");
        assert!(started.elapsed() < Duration::from_millis(WAIT_TIMEOUT_MS), "no {what}");
        std::thread::sleep(Duration::from_millis(POLL_INTERVAL_MS));
    }
}

/// A running node: its data directory, RPC and process.
struct Node {
    datadir: PathBuf,
    rpc: Endpoint,
    process: NodeProcess,
}

impl Node {
    fn stop(mut self) {
        stop(self.rpc, &mut self.process, &self.datadir);
    }

    fn wait_for_height(&mut self, height: u32) {
        self.rpc.wait_for_height(u64::from(height), &mut self.process);
    }

    fn best_hash(&self) -> Value {
        self.rpc.call("getbestblockhash", json!([]))
    }

    fn utxo_hash(&self) -> Value {
        self.rpc.call("gettxoutsetinfo", json!([]))["hash_serialized_3"].clone()
    }

    fn block_error(&self, hash: &str) -> (i64, String) {
        self.rpc.error("getblock", json!([hash, 0]))
    }
}

/// `ibexd` on `<root>/<name>` with the tests' RPC credentials and `extra`,
/// once its import is done and it answers at `height`.
fn start_ibexd(root: &Path, name: &str, extra: &[String], height: u32) -> Node {
    let datadir = root.join(name);
    std::fs::create_dir_all(&datadir).expect("a data directory");
    let port = free_port();
    let mut options = rpc_options(port);
    options.extend_from_slice(extra);
    let mut process = start(&datadir, &options);
    wait_for_log(&datadir, "init message: Done loading", &mut process);
    let mut node = Node { datadir, rpc: Endpoint { port }, process };
    node.wait_for_height(height);
    node
}

/// `bitcoind` on `<root>/<name>` with the tests' RPC credentials, no
/// wallet, no seeds, and `extra`, once its RPC answers at `height`.
fn start_bitcoind(binaries: &Path, root: &Path, name: &str, extra: &[String], height: u32) -> Node {
    let datadir = root.join(name);
    std::fs::create_dir_all(&datadir).expect("a data directory");
    let port = free_port();
    let mut command = Command::new(binaries.join("bitcoind"));
    command
        .arg(common::datadir_argument(&datadir))
        .args(["-regtest", "-printtoconsole=0", "-dnsseed=0", "-fixedseeds=0", "-disablewallet"])
        .args(rpc_options(port))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let process = common::spawn_node(&mut command);
    let mut node = Node { datadir, rpc: Endpoint { port }, process };
    node.wait_for_height(height);
    node
}

/// Options of a node that serves P2P on 127.0.0.1:`port`.
fn listening(port: u16) -> Vec<String> {
    vec!["-listen=1".to_owned(), "-bind=127.0.0.1".to_owned(), format!("-port={port}")]
}

fn loading(chain: &Chain) -> String {
    format!("-loadblock={}", chain.file.display())
}

/// The services a peer's `getpeerinfo` entry names, as bits.
fn services(peer: &Value) -> u64 {
    let hex = peer["services"].as_str().expect("services in hex");
    u64::from_str_radix(hex, 16).expect("services in hex")
}

/// A peer offering `NODE_NETWORK_LIMITED` without `NODE_NETWORK`, in bits
/// and in names.
fn assert_limited(peer: &Value) {
    assert_eq!(
        services(peer) & (NODE_NETWORK | NODE_NETWORK_LIMITED),
        NODE_NETWORK_LIMITED,
        "{peer}"
    );
    let names = peer["servicesnames"].as_array().expect("servicesnames");
    assert!(names.contains(&json!("NETWORK_LIMITED")), "{peer}");
    assert!(!names.contains(&json!("NETWORK")), "{peer}");
}

/// The only peer of `node`, once it has one that finished its handshake.
fn only_peer(node: &mut Node) -> Value {
    let rpc = node.rpc;
    let mut found = Value::Null;
    wait_until("one connected peer", &mut node.process, || {
        let peers = rpc.call("getpeerinfo", json!([]));
        match peers.as_array().map(Vec::as_slice) {
            Some([peer]) if peer["version"].as_u64().unwrap_or(0) > 0 => {
                found = peer.clone();
                true
            }
            _ => false,
        }
    });
    found
}

/// The bytes of `pong` messages `rpc`'s node received from peer `id`.
fn pong_bytes(rpc: Endpoint, id: &Value) -> u64 {
    let peers = rpc.call("getpeerinfo", json!([]));
    let peer = peers.as_array().and_then(|peers| peers.iter().find(|peer| peer["id"] == *id));
    peer.map_or(0, |peer| peer["bytesrecv_per_msg"]["pong"].as_u64().unwrap_or(0))
}

/// A `ping` to every peer of `node` and peer `id`'s `pong`: Core sends a
/// ping in a pass of its `SendMessages` that also decides which blocks to
/// ask of the peer, so what the node knew before the ping has been acted
/// on once the pong is back.
fn ping_round_trip(node: &mut Node, id: &Value) {
    let rpc = node.rpc;
    let before = pong_bytes(rpc, id);
    assert_eq!(rpc.call("ping", json!([])), Value::Null);
    wait_until("a pong", &mut node.process, || pong_bytes(rpc, id) > before);
}

/// `submitblock` of the chain's blocks at `heights`, each accepted.
fn submit_blocks(node: &Node, chain: &Chain, heights: std::ops::RangeInclusive<u32>) {
    let params: Vec<Value> = heights.map(|height| json!([chain.hex(height)])).collect();
    for answer in node.rpc.batch("submitblock", &params) {
        assert_eq!(answer, Value::Null, "submitblock");
    }
}

/// `getblock` at verbosity 0 of the chain's blocks at `heights`: each the
/// chain's bytes.
fn assert_holds_blocks(node: &Node, chain: &Chain, heights: std::ops::RangeInclusive<u32>) {
    let params: Vec<Value> = heights.clone().map(|height| json!([chain.hash(height), 0])).collect();
    for (height, answer) in heights.zip(node.rpc.batch("getblock", &params)) {
        assert_eq!(answer, chain.hex(height), "block {height}");
    }
}

/// `pruneblockchain` at the tip, which both nodes lower to the tip minus
/// 288: the highest block pruned, well above genesis (whole files of
/// generated blocks are gone) and at least 288 below the tip; it is
/// `getblockchaininfo`'s `pruneheight` less one.
fn prune_below_window(node: &Node) -> u32 {
    let answer = node.rpc.call("pruneblockchain", json!([TIP_HEIGHT]));
    let last_pruned = u32::try_from(answer.as_i64().expect("a height")).expect("something pruned");
    assert!(last_pruned > DEEP_PRUNED_HEIGHT, "{last_pruned}");
    assert!(last_pruned <= TIP_HEIGHT - BLOCKS_TO_KEEP, "{last_pruned}");
    let info = node.rpc.call("getblockchaininfo", json!([]));
    assert_eq!(info["pruned"], true);
    assert_eq!(info["pruneheight"], last_pruned + 1);
    last_pruned
}

/// A node serving P2P on 127.0.0.1.
struct Serving {
    node: Node,
    port: u16,
}

/// An `ibexd` with `-prune=1 -fastprune` that imported the chain and
/// pruned it below the last 288 blocks, serving it.
fn pruned_serving_ibexd(root: &Path, chain: &Chain) -> Serving {
    let port = free_port();
    let mut extra = listening(port);
    extra.extend(["-prune=1".to_owned(), "-fastprune".to_owned(), loading(chain)]);
    let node = start_ibexd(root, "ibex", &extra, TIP_HEIGHT);
    prune_below_window(&node);
    let deep = chain.hash(DEEP_PRUNED_HEIGHT);
    assert_eq!(node.block_error(&deep), (-1, PRUNED_BLOCK.to_owned()));
    Serving { node, port }
}

/// A fresh `bitcoind` (in initial block download: its tip is genesis)
/// whose only peer is the pruned `ibexd` gets every header and asks for no
/// block, and keeps the peer. Asked with `getblockfrompeer`, `ibexd` serves
/// the tip and disconnects `bitcoind` for a block it pruned, without a ban:
/// `-connect` reconnects at once.
fn fresh_bitcoind_gets_headers_only(binaries: &Path, root: &Path, chain: &Chain, ibex: &Serving) {
    let (ibex, port) = (&ibex.node, ibex.port);
    let extra =
        [format!("-connect=127.0.0.1:{port}"), "-listen=0".to_owned(), "-debug=net".to_owned()];
    let mut core = start_bitcoind(binaries, root, "core-fresh", &extra, 0);
    let rpc = core.rpc;
    wait_until("every header", &mut core.process, || {
        rpc.call("getblockchaininfo", json!([]))["headers"] == TIP_HEIGHT
    });
    let peer = only_peer(&mut core);
    assert_limited(&peer);
    let id = peer["id"].clone();
    ping_round_trip(&mut core, &id);
    assert_eq!(rpc.call("getblockcount", json!([])), 0);
    let log = common::debug_log(&core.datadir);
    assert!(
        !log.contains("Requesting block "),
        "Core asked a limited peer for blocks in IBD:\n{log}"
    );
    let peer = only_peer(&mut core);
    assert_eq!((&peer["id"], &peer["inflight"]), (&id, &json!([])), "Core keeps its limited peer");

    let tip = chain.hash(TIP_HEIGHT);
    assert_eq!(rpc.call("getblockfrompeer", json!([tip, id])), json!({}));
    wait_until("the tip's block", &mut core.process, || {
        rpc.request("getblock", &json!([tip, 0]))["result"] == chain.hex(TIP_HEIGHT)
    });
    assert!(!common::debug_log(&ibex.datadir).contains(BELOW_LIMITED));
    assert_eq!(only_peer(&mut core)["id"], id, "ibexd keeps a peer asking for a recent block");

    let deep = chain.hash(DEEP_PRUNED_HEIGHT);
    assert_eq!(rpc.call("getblockfrompeer", json!([deep, id])), json!({}));
    wait_until("ibexd's disconnection", &mut core.process, || {
        common::log_or_empty(&ibex.datadir).contains(BELOW_LIMITED)
    });
    wait_until("a new connection to ibexd", &mut core.process, || {
        let peers = rpc.call("getpeerinfo", json!([]));
        let handshaken = |peer: &Value| peer["version"].as_u64().unwrap_or(0) > 0;
        let peers = peers.as_array().cloned().unwrap_or_default();
        peers.iter().any(|peer| peer["id"] != id && handshaken(peer))
    });
    assert_eq!(ibex.rpc.call("listbanned", json!([])), json!([]));
    assert_eq!(core.block_error(&deep), (-1, NOT_DOWNLOADED.to_owned()));
    assert_eq!(rpc.call("getblockcount", json!([])), 0);
    core.stop();
}

/// A `bitcoind` out of initial block download holding the blocks up to one
/// below the window Core asks a limited peer for (the tip minus 287),
/// connected to the pruned `ibexd`: it downloads every block of the window
/// and stops there, the block below the window never asked for. Given
/// that block it connects the window up to `ibexd`'s tip, coins and all.
fn bitcoind_below_the_window_catches_up(
    binaries: &Path,
    root: &Path,
    chain: &Chain,
    ibex: &Serving,
) {
    let (ibex, port) = (&ibex.node, ibex.port);
    let extra = ["-connect=0".to_owned(), "-listen=0".to_owned()];
    let mut core = start_bitcoind(binaries, root, "core-recent", &extra, 0);
    let held = TIP_HEIGHT - LIMITED_REQUEST_DEPTH - 1;
    submit_blocks(&core, chain, 1..=held);
    assert_eq!(core.rpc.call("getblockcount", json!([])), held);
    let address = format!("127.0.0.1:{port}");
    assert_eq!(core.rpc.call("addnode", json!([address, "onetry"])), Value::Null);
    let peer = only_peer(&mut core);
    assert_limited(&peer);

    // Core asks in height order and `ibexd` answers in order: once the
    // tip is in, every block Core asked for is.
    let (rpc, tip) = (core.rpc, chain.hash(TIP_HEIGHT));
    wait_until("the window's blocks", &mut core.process, || {
        rpc.request("getblock", &json!([tip, 0]))["result"] == chain.hex(TIP_HEIGHT)
    });
    assert_eq!(rpc.call("getblockcount", json!([])), held);
    assert_eq!(core.block_error(&chain.hash(held + 1)), (-1, NOT_DOWNLOADED.to_owned()));
    assert_holds_blocks(&core, chain, held + 2..=TIP_HEIGHT);

    submit_blocks(&core, chain, held + 1..=held + 1);
    core.wait_for_height(TIP_HEIGHT);
    assert_same_chain(ibex, &core, &json!(chain.hash(TIP_HEIGHT)));
    assert_eq!(only_peer(&mut core)["id"], peer["id"], "no disconnection");
    let log = common::debug_log(&ibex.datadir);
    assert_eq!(log.matches(BELOW_LIMITED).count(), 1, "only the fresh node's deep request");
    core.stop();
}

#[test]
fn bitcoind_syncing_from_a_pruned_ibexd_stops_where_core_limits_it() {
    let Some(binaries) = common::core_binaries("bitcoind syncing from a pruned ibexd") else {
        return;
    };
    let root = tempfile::tempdir().expect("a temporary directory");
    let root = root.path();
    let chain = build_chain(root, TIP_HEIGHT);
    let ibex = pruned_serving_ibexd(root, &chain);
    fresh_bitcoind_gets_headers_only(&binaries, root, &chain, &ibex);
    bitcoind_below_the_window_catches_up(&binaries, root, &chain, &ibex);
    ibex.node.stop();
}

/// `getblockchaininfo`'s pruning keys before anything was pruned.
fn assert_pruning_nothing_yet(node: &Node, automatic: bool) {
    let info = node.rpc.call("getblockchaininfo", json!([]));
    assert_eq!(info["pruned"], true, "{info}");
    assert_eq!(info["pruneheight"], 0, "{info}");
    assert_eq!(info["automatic_pruning"], automatic, "{info}");
}

/// Both nodes at the tip `tip_hash`, with the same coins.
fn assert_same_chain(ibex: &Node, core: &Node, tip_hash: &Value) {
    assert_eq!(&ibex.best_hash(), tip_hash);
    assert_eq!(&core.best_hash(), tip_hash);
    let coins = ibex.utxo_hash();
    assert!(coins.is_string(), "{coins}");
    assert_eq!(coins, core.utxo_hash());
}

#[test]
fn a_pruned_ibexd_syncs_from_bitcoind_and_follows_it() {
    let Some(binaries) = common::core_binaries("a pruned ibexd syncing from bitcoind") else {
        return;
    };
    let root = tempfile::tempdir().expect("a temporary directory");
    let root = root.path();
    let chain = build_chain(root, TIP_HEIGHT);
    let port = free_port();
    let mut extra = listening(port);
    extra.push(loading(&chain));
    let mut core = start_bitcoind(&binaries, root, "core", &extra, TIP_HEIGHT);
    let extra = ["-prune=1", "-fastprune", "-listen=0", &format!("-connect=127.0.0.1:{port}")];
    let mut ibex = start_ibexd(root, "ibex", &extra.map(str::to_owned), TIP_HEIGHT);
    assert_same_chain(&ibex, &core, &json!(chain.hash(TIP_HEIGHT)));
    assert_limited(&only_peer(&mut core));
    assert_pruning_nothing_yet(&ibex, false);

    let last_pruned = prune_below_window(&ibex);
    let error = ibex.block_error(&chain.hash(last_pruned));
    assert_eq!(error, (-1, PRUNED_BLOCK.to_owned()));
    assert_holds_blocks(&ibex, &chain, last_pruned + 1..=last_pruned + 1);
    let blocks = ibex.datadir.join("regtest/blocks");
    assert!(!blocks.join("blk00000.dat").exists() && !blocks.join("rev00000.dat").exists());

    let mined = core.rpc.call("generatetodescriptor", json!([LATER_BLOCKS, "raw(51)"]));
    assert_eq!(mined.as_array().map(Vec::len), Some(LATER_BLOCKS as usize));
    ibex.wait_for_height(TIP_HEIGHT + LATER_BLOCKS);
    assert_same_chain(&ibex, &core, &mined[LATER_BLOCKS as usize - 1]);
    ibex.stop();
    core.stop();
}

#[test]
fn bitcoind_pruning_to_550_mib_syncs_from_ibexd_and_follows_it() {
    let Some(binaries) = common::core_binaries("bitcoind -prune=550 syncing from ibexd") else {
        return;
    };
    let root = tempfile::tempdir().expect("a temporary directory");
    let root = root.path();
    let chain = build_chain(root, TIP_HEIGHT + LATER_BLOCKS);
    let port = free_port();
    let mut extra = listening(port);
    extra.push(loading(&chain));
    let mut ibex = start_ibexd(root, "ibex", &extra, TIP_HEIGHT + LATER_BLOCKS);
    // `ibexd` mines nothing and takes no `submitblock`: the blocks it gets
    // later are imported with the rest, set aside, and taken back.
    let later = chain.hash(TIP_HEIGHT + 1);
    assert_eq!(ibex.rpc.call("invalidateblock", json!([later])), Value::Null);
    ibex.wait_for_height(TIP_HEIGHT);

    let extra = ["-prune=550", "-fastprune", "-listen=0", &format!("-connect=127.0.0.1:{port}")];
    let mut core = start_bitcoind(&binaries, root, "core", &extra.map(str::to_owned), TIP_HEIGHT);
    assert_same_chain(&ibex, &core, &json!(chain.hash(TIP_HEIGHT)));
    assert_pruning_nothing_yet(&core, true);
    let info = core.rpc.call("getblockchaininfo", json!([]));
    assert_eq!(info["prune_target_size"], 550_u64 << 20);
    let ibex_seen_by_core = only_peer(&mut core);
    assert_eq!(services(&ibex_seen_by_core) & NODE_NETWORK, NODE_NETWORK, "an archival ibexd");
    assert_limited(&only_peer(&mut ibex));

    let last_pruned = prune_below_window(&core);
    let error = core.block_error(&chain.hash(last_pruned));
    assert_eq!(error, (-1, PRUNED_BLOCK.to_owned()));
    assert_holds_blocks(&core, &chain, last_pruned + 1..=last_pruned + 1);

    assert_eq!(ibex.rpc.call("reconsiderblock", json!([later])), Value::Null);
    core.wait_for_height(TIP_HEIGHT + LATER_BLOCKS);
    assert_same_chain(&ibex, &core, &json!(chain.hash(TIP_HEIGHT + LATER_BLOCKS)));
    assert_eq!(only_peer(&mut core)["id"], ibex_seen_by_core["id"]);
    core.stop();
    ibex.stop();
}
