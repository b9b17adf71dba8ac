//! Pruning as the node starts, in Core's words (`-prune`): the line that
//! says how blocks are pruned (manual with `-prune=1`, a target with
//! `-prune=550`); no `NODE_NETWORK` in `getnetworkinfo`'s
//! `localservicesnames` while pruning (and Core's `Setting NODE_NETWORK`
//! line without it); a data directory whose block files were pruned
//! (the index's `prunedblockfiles` flag) refused without `-prune` with
//! Core's exact message on stderr and in the log, started with it saying
//! so and warning about a `-checkblocks` deeper than 288, and taken back
//! to unpruned by `-reindex`; and a `-reindex -prune=550` that removes
//! every undo file and the block files after a gap, with Core's line,
//! before it reads the files again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::assumeutxo::{rpc_options, start, stop};
use common::rpc::Endpoint;
use common::{
    datadir_with_blocks, debug_log, free_port, generate_chain, log_bytes, wait_for_log_after,
};
use ibex_chainstate::index_store::{IndexStore, PRUNED_BLOCK_FILES_FLAG};
use serde_json::{json, Value};

/// The generated chain's tip height.
const TIP_HEIGHT: u32 = 120;
/// Core's lines for `-prune=1` and `-prune=550`.
const MANUAL_LINE: &str = "Block pruning enabled. Use RPC call pruneblockchain(height) to manually prune block and undo files.";
const TARGET_LINE: &str = "Prune configured to target 550 MiB on disk for block and undo files.";
const NODE_NETWORK_LINE: &str = "Setting NODE_NETWORK on non-prune mode";
const PREVIOUSLY_PRUNED_LINE: &str =
    "Loading block index db: Block files have previously been pruned";
/// Core's stderr for a start without `-prune` on pruned block files.
const UNPRUNED_REFUSAL: &str = ": You need to rebuild the database using -reindex to go back to unpruned mode.  This will redownload the entire blockchain.\nPlease restart with -reindex or -reindex-chainstate to recover.\n";
const CHECK_WARNING: &str =
    "[warning] pruned datadir may not have more than 288 blocks; only checking available blocks";
const CLEANUP_LINE: &str =
    "Removing unusable blk?????.dat and rev?????.dat files for -reindex with -prune";

/// A node without peers on `datadir` with `extra`, answering RPC once
/// loaded; what it logged in this run and its `localservicesnames`, then
/// stopped.
fn loaded_run(datadir: &Path, extra: &[&str]) -> (String, Vec<Value>) {
    let port = free_port();
    let mut options = rpc_options(port);
    options.extend(["-connect=0", "-listen=0"].map(str::to_owned));
    options.extend(extra.iter().map(|option| (*option).to_owned()));
    let offset = log_bytes(datadir);
    let mut process = start(datadir, &options);
    wait_for_log_after(datadir, "init message: Done loading", offset, &mut process);
    let endpoint = Endpoint { port };
    let names = endpoint.call("getnetworkinfo", json!([]))["localservicesnames"].clone();
    stop(endpoint, &mut process, datadir);
    (debug_log(datadir)[offset..].to_owned(), names.as_array().unwrap().clone())
}

/// `ibexd` run to its end on `datadir` with `extra` (no RPC, no peers).
fn run(datadir: &Path, extra: &[&str]) -> Output {
    let options = ["-server=0", "-connect=0", "-listen=0"];
    common::ibexd(datadir, &common::REGTEST_QUIET, &options).args(extra).output().unwrap()
}

/// Whether `line` comes in `log` after the first line containing `after`.
fn logged_after(log: &str, after: &str, line: &str) -> bool {
    log.find(after).is_some_and(|at| log[at..].contains(line))
}

#[test]
fn the_start_says_how_blocks_are_pruned_and_a_pruning_node_offers_recent_blocks_only() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path();
    let (log, services) = loaded_run(datadir, &["-prune=550"]);
    assert!(logged_after(&log, "Setting nMinimumChainWork=", TARGET_LINE), "{log}");
    assert!(!log.contains(MANUAL_LINE) && !log.contains(NODE_NETWORK_LINE), "{log}");
    assert!(log.contains("init message: Pruning blockstore…"), "{log}");
    assert!(!services.contains(&json!("NETWORK")), "{services:?}");
    assert!(services.contains(&json!("NETWORK_LIMITED")), "{services:?}");
    assert!(services.contains(&json!("WITNESS")), "{services:?}");

    let (log, services) = loaded_run(datadir, &["-prune=1"]);
    assert!(logged_after(&log, "Setting nMinimumChainWork=", MANUAL_LINE), "{log}");
    assert!(!log.contains(TARGET_LINE) && !log.contains(NODE_NETWORK_LINE), "{log}");
    assert!(!services.contains(&json!("NETWORK")), "{services:?}");

    // Nothing was pruned: the same directory starts without -prune.
    let (log, services) = loaded_run(datadir, &[]);
    assert!(!log.contains(MANUAL_LINE) && !log.contains(TARGET_LINE), "{log}");
    assert!(!log.contains(PREVIOUSLY_PRUNED_LINE), "{log}");
    assert!(log.contains(NODE_NETWORK_LINE), "{log}");
    assert!(services.contains(&json!("NETWORK")), "{services:?}");
    assert!(services.contains(&json!("NETWORK_LIMITED")), "{services:?}");
}

#[test]
fn pruned_block_files_refuse_a_start_without_prune_in_cores_words() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path();
    loaded_run(datadir, &["-prune=1"]);
    // What a prune leaves in the stopped node's index.
    let index = IndexStore::open(&datadir.join("regtest/blocks/index")).unwrap();
    index.write_flag(PRUNED_BLOCK_FILES_FLAG, true).unwrap();
    drop(index);

    let offset = log_bytes(datadir);
    let refused = run(datadir, &[]);
    assert_eq!(refused.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&refused.stderr), UNPRUNED_REFUSAL);
    let log = &debug_log(datadir)[offset..];
    assert!(logged_after(log, PREVIOUSLY_PRUNED_LINE, UNPRUNED_REFUSAL), "{log}");
    assert!(!log.contains("Error: "), "Core's caption is empty: {log}");

    // With -prune it starts, says so, and warns of a deep check.
    let (log, _) = loaded_run(datadir, &["-prune=1", "-checkblocks=300"]);
    assert!(logged_after(&log, PREVIOUSLY_PRUNED_LINE, CHECK_WARNING), "{log}");
    let (log, _) = loaded_run(datadir, &["-prune=1", "-checkblocks=288"]);
    assert!(log.contains(PREVIOUSLY_PRUNED_LINE) && !log.contains(CHECK_WARNING), "{log}");

    // -reindex rebuilds the index without the flag: back to unpruned.
    let (log, services) = loaded_run(datadir, &["-reindex"]);
    assert!(!log.contains(PREVIOUSLY_PRUNED_LINE), "{log}");
    assert!(services.contains(&json!("NETWORK")), "{services:?}");
    let (log, _) = loaded_run(datadir, &[]);
    assert!(!log.contains(PREVIOUSLY_PRUNED_LINE), "{log}");
}

/// Writes `bytes` to `name` in `blocks`.
fn write(blocks: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(blocks.join(name), bytes).unwrap();
}

#[test]
fn a_pruned_reindex_removes_undo_files_and_block_files_after_a_gap() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &TIP_HEIGHT.to_string(), "53", &[]);
    let datadir = datadir_with_blocks(&root.path().join("node"), &chain);
    let blocks: PathBuf = datadir.join("regtest/blocks");
    // blk00001.dat was pruned: the files after it are not read again.
    let first = std::fs::read(blocks.join("blk00000.dat")).unwrap();
    write(&blocks, "blk00002.dat", &first);
    write(&blocks, "blk00003.dat", b"left by a prune");
    const STALE_UNDO: &[u8] = b"stale undo data";
    write(&blocks, "rev00000.dat", STALE_UNDO);
    write(&blocks, "rev00002.dat", STALE_UNDO);

    let stop_height = format!("-stopatheight={TIP_HEIGHT}");
    let output = run(&datadir, &["-reindex", "-prune=550", &stop_height]);
    let log = debug_log(&datadir);
    assert_eq!(output.status.code(), Some(0), "{log}");
    assert!(logged_after(&log, "Wiping LevelDB in ", CLEANUP_LINE), "{log}");
    assert!(logged_after(&log, CLEANUP_LINE, "Reindexing block files..."), "{log}");
    assert!(log.contains(&format!("Imported to height {TIP_HEIGHT}:")), "{log}");
    for gone in ["blk00002.dat", "blk00003.dat", "rev00002.dat"] {
        assert!(!blocks.join(gone).exists(), "{gone} is left");
    }
    assert_eq!(std::fs::read(blocks.join("blk00000.dat")).unwrap(), first);
    // The reindex wrote its own undo data, not after the stale bytes.
    let undo = std::fs::read(blocks.join("rev00000.dat")).unwrap();
    assert!(!undo.starts_with(STALE_UNDO), "the stale undo file was kept");
    // No look at pruning while block files are indexed again (Core's
    // `m_blockfiles_indexed`).
    assert!(!log.contains("init message: Pruning blockstore…"), "{log}");
}
