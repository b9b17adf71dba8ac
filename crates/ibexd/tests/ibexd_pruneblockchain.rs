//! `pruneblockchain` against `ibexd`, with Core's codes and words.
//!
//! The chain: `ibex gen --profile tiny --blocks 700` (~11 KB blocks, 7.6 MB,
//! under a second), loaded with `-loadblock` by a node started with
//! `-fastprune -prune=1`, which stores it in 64 KiB block files (Core's
//! `-fastprune`: ~6 blocks a file, ~120 file pairs) and may prune above
//! regtest's `-fastprune` height of 100. A chain in Ibex's own 128 MiB
//! files needs more than 256 MiB of blocks over more than 1,000 blocks
//! (regtest's `nPruneAfterHeight` without `-fastprune`): `ibex gen
//! --profile small --blocks 1001 --target-weight 1200000` writes 388 MB in
//! 3 files in ~25 s, and `-reindex -prune=1` took 115 s (scripts assumed
//! valid) to 190 s on the 2-core test machine, over the minute a test may
//! take; the code under test is the same for either file size.
//!
//! What it checks: the refusals in Core's order (negative height, a time
//! no block reaches, a height above the tip, a billion being a height),
//! pruning by time (two hours' window) and by height (clamped to keep 288
//! blocks), the answer (Core's `GetPruneHeight`), the `blk`/`rev` pairs
//! gone, `getblockchaininfo`'s pruning keys in Core's order with
//! `size_on_disk` the files' bytes, Core's errors for a pruned block
//! (`getblock`, `getblockstats`, `getrawtransaction` with the block, REST
//! `/rest/block`, `dumptxoutset` rolling back over it, `dumphints`) while the first kept
//! block answers, and all of it again after a restart. Nodes that keep
//! every block, and one whose chain is too short, refuse.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use common::assumeutxo::{rpc_options, start, stop};
use common::rpc::Endpoint;
use common::{free_port, generate_chain, log_bytes, wait_for_log_after, NodeProcess};
use serde_json::{json, Value};

/// Blocks above genesis in the generated chain.
const TIP_HEIGHT: u32 = 700;
/// Core's `MIN_BLOCKS_TO_KEEP`.
const BLOCKS_TO_KEEP: u32 = 288;
/// Blocks a 64 KiB `-fastprune` file holds at least, with room to spare
/// (the tiny profile's blocks are ~11 KB): how far below a height the
/// last pruned block may lie.
const BLOCKS_PER_FILE_MAX: u32 = 20;

const NOT_PRUNING: &str = "Cannot prune blocks because node is not in prune mode.";
const PRUNED_BLOCK: &str = "Block not available (pruned data)";

/// The node's pruning options: manual, with Core's small test files.
fn prune_options(port: u16) -> Vec<String> {
    let mut options = rpc_options(port);
    options.extend(["-fastprune", "-prune=1", "-rest", "-listen=0"].map(str::to_owned));
    options
}

/// Starts a node on `datadir` with `options`; returns once it takes
/// operator commands (its import done) and answers at `height`.
fn started(datadir: &Path, options: &[String], port: u16, height: u32) -> (Endpoint, NodeProcess) {
    std::fs::create_dir_all(datadir).unwrap();
    let log_offset = log_bytes(datadir);
    let mut process = start(datadir, options);
    wait_for_log_after(datadir, "init message: Done loading", log_offset, &mut process);
    let endpoint = Endpoint { port };
    endpoint.wait_for_height(u64::from(height), &mut process);
    (endpoint, process)
}

fn blocks_directory(datadir: &Path) -> PathBuf {
    datadir.join("regtest/blocks")
}

/// The numbers of the `blk` files and of the `rev` files, and the bytes
/// they hold together.
fn block_files(datadir: &Path) -> (BTreeSet<u32>, BTreeSet<u32>, u64) {
    let (mut blk, mut rev, mut bytes) = (BTreeSet::new(), BTreeSet::new(), 0);
    for entry in std::fs::read_dir(blocks_directory(datadir)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(number) = name.get(3..8).and_then(|digits| digits.parse::<u32>().ok()) else {
            continue;
        };
        if name.len() != 12 || !name.ends_with(".dat") {
            continue;
        }
        let set = match &name[..3] {
            "blk" => &mut blk,
            "rev" => &mut rev,
            _ => continue,
        };
        set.insert(number);
        bytes += entry.metadata().unwrap().len();
    }
    (blk, rev, bytes)
}

fn hash_at(endpoint: Endpoint, height: u32) -> String {
    endpoint.call("getblockhash", json!([height])).as_str().unwrap().to_owned()
}

fn prune(endpoint: Endpoint, height: impl Into<Value>) -> i64 {
    endpoint.call("pruneblockchain", json!([height.into()])).as_i64().unwrap()
}

fn refusal(endpoint: Endpoint, height: impl Into<Value>) -> (i64, String) {
    endpoint.error("pruneblockchain", json!([height.into()]))
}

/// `getblockchaininfo`'s keys from `chainwork` on, in order.
fn keys_after_chainwork(info: &Value) -> Vec<String> {
    let keys: Vec<String> = info.as_object().unwrap().keys().cloned().collect();
    let from = keys.iter().position(|key| key == "chainwork").unwrap();
    keys[from..].to_vec()
}

/// A REST GET: the status and the body.
fn rest_get(port: u16, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let status = reply.get(9..12).and_then(|code| code.parse().ok()).unwrap();
    let body = reply.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap();
    (status, body)
}

/// What a pruned block and the first kept one answer.
fn pruned_below(endpoint: Endpoint, last_pruned: u32) {
    let pruned = hash_at(endpoint, last_pruned);
    let kept = hash_at(endpoint, last_pruned + 1);
    let block_error = (-1, PRUNED_BLOCK.to_owned());
    for verbosity in [0, 1, 2, 3] {
        assert_eq!(endpoint.error("getblock", json!([pruned, verbosity])), block_error);
    }
    assert_eq!(endpoint.error("getblockstats", json!([last_pruned])), block_error);
    assert_eq!(endpoint.error("getblockstats", json!([pruned])), block_error);
    // Headers stay: the header answers, and names its transactions.
    let header = endpoint.call("getblockheader", json!([pruned]));
    assert_eq!(header["height"], last_pruned);
    assert!(header["nTx"].as_u64().unwrap() > 0);
    let some_txid = header["merkleroot"].as_str().unwrap();
    assert_eq!(
        endpoint.error("getrawtransaction", json!([some_txid, 1, pruned])),
        (-1, "Block not available".to_owned())
    );
    let (status, body) = rest_get(endpoint.port, &format!("/rest/block/{pruned}.json"));
    assert_eq!((status, body), (404, format!("{pruned} not available (pruned data)\r\n")));

    let block = endpoint.call("getblock", json!([kept, 3]));
    assert_eq!(block["height"], last_pruned + 1);
    let stats = endpoint.call("getblockstats", json!([kept, ["height", "totalfee"]]));
    assert_eq!(stats["height"], last_pruned + 1);
    let coinbase = block["tx"][0]["txid"].as_str().unwrap();
    let found = endpoint.call("getrawtransaction", json!([coinbase, 1, kept]));
    assert_eq!(found["txid"], coinbase);
    let (status, _) = rest_get(endpoint.port, &format!("/rest/block/{kept}.hex"));
    assert_eq!(status, 200);
}

/// `getblockchaininfo`'s pruning keys on a node pruned up to
/// `last_pruned`, and `size_on_disk` the files' bytes.
fn info_says_pruned(endpoint: Endpoint, datadir: &Path, last_pruned: Option<u32>) -> u64 {
    let info = endpoint.call("getblockchaininfo", json!([]));
    assert_eq!(
        keys_after_chainwork(&info),
        ["chainwork", "size_on_disk", "pruned", "pruneheight", "automatic_pruning", "warnings"]
    );
    assert_eq!(info["pruned"], true);
    assert_eq!(info["pruneheight"], last_pruned.map_or(0, |height| height + 1));
    assert_eq!(info["automatic_pruning"], false);
    let (_, _, bytes) = block_files(datadir);
    assert_eq!(info["size_on_disk"], bytes, "Core's CalculateCurrentUsage: the files' bytes");
    bytes
}

/// The height Core's `FindEarliestAtLeast(time, 0)` names on the node's
/// active chain: the first block whose time or an ancestor's reaches it.
fn earliest_at_least(endpoint: Endpoint, time: i64) -> u32 {
    let heights: Vec<Value> = (0..=TIP_HEIGHT).map(|height| json!([height])).collect();
    let hashes = endpoint.batch("getblockhash", &heights);
    let headers: Vec<Value> = hashes.into_iter().map(|hash| json!([hash])).collect();
    let mut time_max = 0;
    for (height, header) in (0..).zip(endpoint.batch("getblockheader", &headers)) {
        time_max = time_max.max(header["time"].as_i64().unwrap());
        if time_max >= time {
            return height;
        }
    }
    panic!("no block reaches {time}");
}

#[test]
fn pruneblockchain_removes_whole_files_below_the_height_and_a_restart_keeps_it() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &TIP_HEIGHT.to_string(), "1", &["--xor-zero"]);
    let datadir = root.path().join("node");
    let port = free_port();
    let mut options = prune_options(port);
    options.push(format!("-loadblock={}", chain.join("blk00000.dat").display()));
    let (node, mut process) = started(&datadir, &options, port, TIP_HEIGHT);

    let (blk, rev, _) = block_files(&datadir);
    assert!(blk.len() >= 50, "-fastprune's small files: {blk:?}");
    assert_eq!(blk, rev);
    let bytes_before = info_says_pruned(node, &datadir, None);

    // Core's refusals, in its order.
    assert_eq!(refusal(node, -1), (-8, "Negative block height.".to_owned()));
    let shorter = (-8, "Blockchain is shorter than the attempted prune height.".to_owned());
    assert_eq!(refusal(node, TIP_HEIGHT + 1), shorter);
    // A billion is still a height; above it, a time.
    assert_eq!(refusal(node, 1_000_000_000), shorter);
    let no_time = (-8, "Could not find block with at least the specified timestamp.".to_owned());
    assert_eq!(refusal(node, 2_000_000_000), no_time);
    assert_eq!(
        node.error("pruneblockchain", json!([2_147_483_648_i64])),
        (-1, "JSON integer out of range".to_owned())
    );
    assert_eq!(block_files(&datadir).0, blk, "a refusal prunes nothing");

    // By time: the first block at least two hours older than the time
    // asked, then the whole files at or below it.
    let time_300 =
        node.call("getblockheader", json!([hash_at(node, 300)]))["time"].as_i64().unwrap();
    let named = earliest_at_least(node, time_300);
    let by_time = prune(node, time_300 + 7_200);
    let last_pruned = u32::try_from(by_time).unwrap();
    assert!(last_pruned <= named && last_pruned + BLOCKS_PER_FILE_MAX > named, "{by_time}");
    let (blk_after, rev_after, _) = block_files(&datadir);
    let first_kept = *blk_after.first().unwrap();
    assert!(first_kept > 0);
    assert_eq!(blk_after, rev_after);
    let removed: BTreeSet<u32> = (0..first_kept).collect();
    assert_eq!(blk.difference(&blk_after).copied().collect::<BTreeSet<u32>>(), removed);
    pruned_below(node, last_pruned);
    let bytes_after = info_says_pruned(node, &datadir, Some(last_pruned));
    assert!(bytes_after < bytes_before);

    // Rolling the coins back needs the undo data of every block from the
    // target up.
    assert_eq!(
        node.error("dumptxoutset", json!(["pruned.dat", "rollback", {"rollback": last_pruned}])),
        (
            -1,
            "Could not roll back to requested height since necessary block data is already pruned."
                .to_owned()
        )
    );
    let chain_directory = datadir.join("regtest");
    assert!(!chain_directory.join("pruned.dat").exists());
    assert!(!chain_directory.join("pruned.dat.incomplete").exists());
    // Hints need every block from 1: Core's words for a pruned block.
    assert_eq!(
        node.error("dumphints", json!(["hints.dat"])),
        (-1, "Block not available (pruned data)".to_owned())
    );
    assert!(!chain_directory.join("hints.dat").exists());
    assert!(!chain_directory.join("hints.dat.incomplete").exists());
    let dumped =
        node.call("dumptxoutset", json!(["kept.dat", "rollback", {"rollback": last_pruned + 1}]));
    assert_eq!(dumped["base_height"], last_pruned + 1);

    // Near the tip: Core keeps the last 288 blocks.
    let clamped = u32::try_from(prune(node, TIP_HEIGHT - 10)).unwrap();
    let keep_above = TIP_HEIGHT - BLOCKS_TO_KEEP;
    assert!(clamped <= keep_above && clamped + BLOCKS_PER_FILE_MAX > keep_above, "{clamped}");
    assert!(clamped > last_pruned);
    // Lower heights find nothing left to prune.
    assert_eq!(prune(node, 0), i64::from(clamped));
    assert_eq!(prune(node, 150), i64::from(clamped));
    pruned_below(node, clamped);
    let bytes_clamped = info_says_pruned(node, &datadir, Some(clamped));
    let files_clamped = block_files(&datadir);
    stop(node, &mut process, &datadir);

    // A restart keeps it all.
    let port = free_port();
    let (node, mut process) = started(&datadir, &prune_options(port), port, TIP_HEIGHT);
    assert_eq!(block_files(&datadir), files_clamped);
    assert_eq!(info_says_pruned(node, &datadir, Some(clamped)), bytes_clamped);
    pruned_below(node, clamped);
    assert_eq!(prune(node, 200), i64::from(clamped));
    stop(node, &mut process, &datadir);
}

#[test]
fn nodes_that_keep_every_block_or_have_too_short_a_chain_refuse() {
    let root = tempfile::tempdir().unwrap();
    let keeping = root.path().join("keeping");
    let keeping_port = free_port();
    let mut keeping_options = rpc_options(keeping_port);
    keeping_options.push("-listen=0".to_owned());
    let short = root.path().join("short");
    let short_port = free_port();
    // Automatic pruning, and regtest's height of 1,000 before any.
    let mut short_options = rpc_options(short_port);
    short_options.extend(["-prune=550", "-listen=0"].map(str::to_owned));
    let (keeping_node, mut keeping_process) = started(&keeping, &keeping_options, keeping_port, 0);
    let (short_node, mut short_process) = started(&short, &short_options, short_port, 0);

    let not_pruning = (-1, NOT_PRUNING.to_owned());
    assert_eq!(refusal(keeping_node, 0), not_pruning);
    // Core asks whether it prunes before it reads the height.
    assert_eq!(refusal(keeping_node, -1), not_pruning);
    let info = keeping_node.call("getblockchaininfo", json!([]));
    assert_eq!(keys_after_chainwork(&info), ["chainwork", "size_on_disk", "pruned", "warnings"]);
    assert_eq!(info["pruned"], false);
    assert_eq!(info["size_on_disk"], block_files(&keeping).2);

    assert_eq!(refusal(short_node, -5), (-8, "Negative block height.".to_owned()));
    assert_eq!(
        refusal(short_node, 2_000_000_000),
        (-8, "Could not find block with at least the specified timestamp.".to_owned())
    );
    let too_short = (-1, "Blockchain is too short for pruning.".to_owned());
    assert_eq!(refusal(short_node, 0), too_short);
    assert_eq!(refusal(short_node, 5), too_short);
    let info = short_node.call("getblockchaininfo", json!([]));
    assert_eq!(
        keys_after_chainwork(&info),
        [
            "chainwork",
            "size_on_disk",
            "pruned",
            "pruneheight",
            "automatic_pruning",
            "prune_target_size",
            "warnings"
        ]
    );
    assert_eq!(info["pruned"], true);
    assert_eq!(info["pruneheight"], 0);
    assert_eq!(info["automatic_pruning"], true);
    assert_eq!(info["prune_target_size"], 550_u64 << 20);

    stop(keeping_node, &mut keeping_process, &keeping);
    stop(short_node, &mut short_process, &short);
}
