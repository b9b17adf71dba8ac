//! One process per data directory: `ibexd` locks the network
//! data directory and the blocks directory as Core does, before it opens
//! the log or touches a file.
//!
//! - A directory locked by another process (here the test process, through
//!   `ibex_daemon::directory_lock`) makes `ibexd` exit 1 with Core's message,
//!   creating nothing, and `ibex txoutsetinfo` refuse naming it; once the
//!   lock is dropped (the `.lock` file stays) both work.
//! - While a first `ibexd -reindex` imports a generated chain, a second one
//!   (with and without `-reindex`) is refused within seconds, writes no log
//!   and wipes nothing, the test process cannot take the lock either, and
//!   `txoutsetinfo` refuses; the import ends on a clean run's UTXO set.
//! - After a clean exit and after `kill -9` a restart takes the lock again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{datadir_with_blocks, generate_chain, txoutsetinfo, utxo_hash};
use ibex_daemon::directory_lock::{DirectoryLock, DirectoryLockError};

/// A refused start takes milliseconds; this is the bound the test allows.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the first import may take to reach its first `UpdateTip`.
const FIRST_TIP_TIMEOUT: Duration = Duration::from_secs(120);
const POLL_INTERVAL: Duration = Duration::from_millis(10);
/// About six seconds of import at `-par=1` on a 2-core VM: ample time
/// for the refused starts, which take milliseconds each.
const CHAIN_BLOCKS: &str = "1500";

/// `ibexd` with no RPC server, ending at the generated chain's tip
/// (`-stopatheight`), with `extra`.
fn node(datadir: &Path, extra: &[&str]) -> Command {
    let stop = format!("-stopatheight={CHAIN_BLOCKS}");
    let mut command = common::quiet_ibexd(
        datadir,
        &common::REGTEST_QUIET_SMALL_CACHE,
        &["-server=0", stop.as_str()],
    );
    command.args(extra);
    command
}

/// Runs `command` on a data directory without blocks, whose tip stays
/// below any stop height: with no P2P it idles once loaded, and SIGTERM
/// ends it; whether it exited cleanly.
fn run_until_loaded(mut command: Command, datadir: &Path) -> bool {
    let log_bytes_before = common::log_bytes(datadir);
    let mut child = command.args(["-connect=0", "-listen=0"]).spawn().unwrap();
    common::wait_for_log_after(datadir, "init message: Done loading", log_bytes_before, &mut child);
    common::terminate(&child);
    common::wait_exit(&mut child, datadir).success()
}

/// Core's refusal, with our client name.
fn refusal(directory: &Path) -> String {
    format!(
        "Error: Cannot obtain a lock on directory {}. Ibex is probably already running.\n",
        directory.display()
    )
}

/// Runs `command` to its end, failing the test if that takes longer than
/// [`REFUSAL_TIMEOUT`] (a second node must not wait for the lock).
fn refused_start(mut command: Command) -> String {
    let mut child = command.stderr(Stdio::piped()).spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > REFUSAL_TIMEOUT {
            let _ = child.kill();
            panic!("the second ibexd still runs after {REFUSAL_TIMEOUT:?}");
        }
        std::thread::sleep(POLL_INTERVAL);
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    String::from_utf8(output.stderr).unwrap()
}

/// Every path under `root`, relative to it.
fn tree(root: &Path) -> BTreeSet<PathBuf> {
    let mut paths = BTreeSet::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            paths.insert(path.strip_prefix(root).unwrap().to_path_buf());
            if path.is_dir() {
                pending.push(path);
            }
        }
    }
    paths
}

fn count_in_log(datadir: &Path, text: &str) -> usize {
    std::fs::read_to_string(common::debug_log_path(datadir))
        .map_or(0, |log| log.matches(text).count())
}

/// Waits until the log holds more `UpdateTip` lines than `tips_before`: the
/// node started by `child` is importing.
fn wait_for_update_tip(datadir: &Path, child: &mut Child, tips_before: usize) {
    let started = Instant::now();
    while count_in_log(datadir, "UpdateTip") <= tips_before {
        assert!(child.try_wait().unwrap().is_none(), "ibexd ended before its first UpdateTip");
        assert!(started.elapsed() < FIRST_TIP_TIMEOUT, "no UpdateTip after {FIRST_TIP_TIMEOUT:?}");
        std::thread::sleep(POLL_INTERVAL);
    }
}

fn assert_held_elsewhere(directory: &Path) {
    match DirectoryLock::acquire(directory) {
        Err(DirectoryLockError::HeldElsewhere { directory: named }) => {
            assert_eq!(named, directory)
        }
        other => {
            panic!("{}: expected the lock to be held elsewhere, got {other:?}", directory.display())
        }
    }
}

fn assert_txoutsetinfo_refused(datadir: &Path, extra: &[&str], directory: &Path) {
    let output = txoutsetinfo(datadir, extra);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let error = String::from_utf8(output.stderr).unwrap();
    let expected = format!(
        "error: cannot obtain a lock on directory {}: a node is probably running on it",
        directory.display()
    );
    assert!(error.starts_with(&expected), "{error}");
}

#[test]
fn a_directory_locked_elsewhere_refuses_ibexd_and_txoutsetinfo_creating_nothing() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("data");
    let chain_directory = datadir.join("regtest");
    std::fs::create_dir_all(&chain_directory).unwrap();
    let held = DirectoryLock::acquire(&chain_directory).unwrap();
    let before = tree(&datadir);
    assert_eq!(before, BTreeSet::from([PathBuf::from("regtest"), PathBuf::from("regtest/.lock")]));
    for extra in [&[][..], &["-reindex"], &["-reindex-chainstate"]] {
        assert_eq!(refused_start(node(&datadir, extra)), refusal(&chain_directory), "{extra:?}");
        assert_eq!(tree(&datadir), before, "{extra:?}");
    }
    assert_txoutsetinfo_refused(&datadir, &[], &chain_directory);

    // Released on drop; the `.lock` file left behind blocks nobody.
    drop(held);
    assert!(run_until_loaded(node(&datadir, &[]), &datadir));
    assert_eq!(count_in_log(&datadir, "Shutdown: done"), 1);
    assert!(chain_directory.join("blocks/.lock").is_file());

    // A blocks directory elsewhere (`-blocksdir`) is locked too.
    let blocks_root = root.path().join("blocks-root");
    let blocks_directory = blocks_root.join("regtest/blocks");
    std::fs::create_dir_all(&blocks_directory).unwrap();
    let blocks_argument = format!("-blocksdir={}", blocks_root.display());
    let held = DirectoryLock::acquire(&blocks_directory).unwrap();
    let before = tree(root.path());
    let stderr = refused_start(node(&datadir, &[&blocks_argument, "-reindex"]));
    assert_eq!(stderr, refusal(&blocks_directory));
    assert_eq!(tree(root.path()), before);
    assert_eq!(count_in_log(&datadir, "Ibex version"), 1, "the refused start logged");
    assert_txoutsetinfo_refused(&datadir, &[&blocks_argument], &blocks_directory);
    // The refused node gave back the data directory's lock as it exited.
    drop(DirectoryLock::acquire(&chain_directory).unwrap());
    drop(held);
    // (With `-reindex`: the chainstate was built on the other blocks.)
    assert!(run_until_loaded(node(&datadir, &[&blocks_argument, "-reindex"]), &datadir));
    assert_eq!(count_in_log(&datadir, "Shutdown: done"), 2);
}

/// The checks made while the first node imports into `datadir`.
fn second_starts_are_refused(datadir: &Path) {
    let chain_directory = datadir.join("regtest");
    for extra in [&["-reindex"][..], &[], &["-reindex", "-debuglogfile=second.log"]] {
        let stderr = refused_start(node(datadir, extra));
        assert_eq!(stderr, refusal(&chain_directory), "{extra:?}");
    }
    assert!(!chain_directory.join("second.log").exists());
    assert_held_elsewhere(&chain_directory);
    assert_held_elsewhere(&chain_directory.join("blocks"));
    assert_txoutsetinfo_refused(datadir, &[], &chain_directory);
}

#[test]
fn a_second_node_is_refused_during_an_import_and_kill_nine_leaves_no_lock() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "small", CHAIN_BLOCKS, "5", &[]);
    let clean = datadir_with_blocks(&root.path().join("clean"), &chain);
    assert!(node(&clean, &["-reindex"]).status().unwrap().success());
    let expected = utxo_hash(&clean);

    // One script thread makes the import long enough to land in.
    let datadir = datadir_with_blocks(&root.path().join("locked"), &chain);
    let mut first = node(&datadir, &["-reindex", "-par=1"]).spawn().unwrap();
    wait_for_update_tip(&datadir, &mut first, 0);
    second_starts_are_refused(&datadir);
    assert!(
        first.try_wait().unwrap().is_none(),
        "the import ended before the checks were done: make the chain longer"
    );
    assert!(first.wait().unwrap().success());
    assert_eq!(count_in_log(&datadir, "Ibex version"), 1, "a refused start logged");
    assert_eq!(count_in_log(&datadir, "Wiping LevelDB"), 2, "a refused start wiped");
    assert_eq!(utxo_hash(&datadir), expected);

    // After a clean exit a restart takes the lock and works.
    assert!(node(&datadir, &[]).status().unwrap().success());
    assert_eq!(count_in_log(&datadir, "Shutdown: done"), 2);

    // After `kill -9` too: the kernel dropped the lock, the file stays.
    let tips_before = count_in_log(&datadir, "UpdateTip");
    let mut killed = node(&datadir, &["-reindex", "-par=1"]).spawn().unwrap();
    wait_for_update_tip(&datadir, &mut killed, tips_before);
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert!(datadir.join("regtest/.lock").is_file());
    assert!(node(&datadir, &[]).status().unwrap().success());
    assert_eq!(utxo_hash(&datadir), expected);
}
