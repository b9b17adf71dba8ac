//! `ibexd` on damaged data directories, as a new user may meet them: a
//! corrupt coins or block index database stops the node with Core's
//! "Error opening ... database" and the one option that rebuilds it (which
//! then does); block files without a readable record are named in the log
//! with the likely cause. Each case starts from a copy of Core's regtest
//! chain (`shared/chains/core-wallet-mix`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{copy_core_blocks, debug_log, log_or_empty, spawn_node, terminate};

/// Core's chain tip height.
const CORE_TIP_HEIGHT: u32 = 1190;

/// Ends a run at Core's tip, as `bitcoind` ends at `-stopatheight`.
const TIP_STOP: &str = "-stopatheight=1190";

/// `ibexd` with no RPC server and `extra`, run to its end.
fn ibexd(datadir: &Path, extra: &[&str]) -> Output {
    common::ibexd(datadir, &common::REGTEST_QUIET, &["-server=0"])
        .args(extra)
        .env("HOME", datadir)
        .output()
        .unwrap()
}

/// `ibexd` with no RPC server, no P2P and `extra`, stopped with SIGTERM
/// once its import is done (a tip it cannot leave); the log.
fn run_until_imported(datadir: &Path, extra: &[&str]) -> String {
    let mut command = common::quiet_ibexd(
        datadir,
        &common::REGTEST_QUIET,
        &["-server=0", "-connect=0", "-listen=0"],
    );
    let log_bytes_before = common::log_bytes(datadir);
    let mut node = spawn_node(command.args(extra).env("HOME", datadir));
    common::wait_for_log_after(datadir, "init message: Done loading", log_bytes_before, &mut node);
    terminate(&node);
    let status = common::wait_exit(&mut node, datadir);
    assert_eq!(status.code(), Some(0), "{}", log_or_empty(datadir));
    debug_log(datadir)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn run_ok(datadir: &Path, extra: &[&str]) -> String {
    let output = ibexd(datadir, extra);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    debug_log(datadir)
}

/// Core's chain reindexed, then started once more so that both databases
/// hold their records in table files.
fn reindexed(datadir: &Path) {
    copy_core_blocks(datadir);
    let first = run_ok(datadir, &["-reindex", TIP_STOP]);
    assert!(first.contains(&format!("Imported to height {CORE_TIP_HEIGHT}:")), "{first}");
    run_ok(datadir, &[TIP_STOP]);
}

fn table_file(directory: &Path) -> PathBuf {
    let mut tables: Vec<PathBuf> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "sst"))
        .collect();
    tables.sort();
    tables.into_iter().next().expect("a table file")
}

/// Runs `ibexd` on a damaged datadir: exit 1 with Core's message for
/// `database` at `path` and the hint to restart with `option`.
fn assert_refused(datadir: &Path, database: &str, path: &Path, option: &str) {
    let output = ibexd(datadir, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    let opening = format!("Error: Error opening {database} database {}: ", path.display());
    assert!(text.starts_with(&opening), "{text}");
    assert!(text.ends_with(&format!("\nPlease restart with {option} to recover.\n")), "{text}");
    assert!(debug_log(datadir).contains(&opening[7..]), "the log has the error too");
}

#[test]
fn coins_database_without_current_asks_for_reindex_chainstate() {
    let datadir = tempfile::tempdir().unwrap();
    let datadir = datadir.path();
    reindexed(datadir);
    let coins = datadir.join("regtest/chainstate");
    std::fs::remove_file(coins.join("CURRENT")).unwrap();
    assert_refused(datadir, "coins", &coins, "-reindex-chainstate");
    // Refused again, not opened as an empty database the second time.
    assert_refused(datadir, "coins", &coins, "-reindex-chainstate");
    let rebuilt = run_ok(datadir, &["-reindex-chainstate", TIP_STOP]);
    assert!(rebuilt.contains(&format!("Imported to height {CORE_TIP_HEIGHT}:")), "{rebuilt}");
}

#[test]
fn block_index_table_with_a_flipped_byte_asks_for_reindex() {
    let datadir = tempfile::tempdir().unwrap();
    let datadir = datadir.path();
    reindexed(datadir);
    let index = datadir.join("regtest/blocks/index");
    let table = table_file(&index);
    let mut bytes = std::fs::read(&table).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&table, bytes).unwrap();
    assert_refused(datadir, "block index", &index, "-reindex");
    let text = stderr(&ibexd(datadir, &[]));
    assert!(text.contains("Corruption: block checksum mismatch"), "{text}");
    let rebuilt = run_ok(datadir, &["-reindex", TIP_STOP]);
    assert!(rebuilt.contains(&format!("Imported to height {CORE_TIP_HEIGHT}:")), "{rebuilt}");
}

/// The `[warning] ... no block found` lines of the log.
fn no_block_warnings(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|line| line.contains("[warning] ") && line.contains("no block found"))
        .collect()
}

fn random_bytes(count: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

#[test]
fn block_files_without_a_record_are_named_in_the_log() {
    // A wrong xor.dat key.
    let datadir = tempfile::tempdir().unwrap();
    let datadir = datadir.path();
    let blocks = copy_core_blocks(datadir);
    let key = std::fs::read(blocks.join("xor.dat")).unwrap();
    let wrong: Vec<u8> = key.iter().map(|byte| byte ^ 0xa5).collect();
    std::fs::write(blocks.join("xor.dat"), wrong).unwrap();
    let text = run_until_imported(datadir, &["-reindex"]);
    let warnings = no_block_warnings(&text);
    assert_eq!(warnings.len(), 1, "{text}");
    let expected = format!(
        "[warning] {}: no block found in 16777216 bytes (first bytes ",
        blocks.join("blk00000.dat").display()
    );
    assert!(warnings[0].contains(&expected), "{}", warnings[0]);
    assert!(
        warnings[0].ends_with(
            "do not start with the network magic fabfb5da: wrong xor.dat key or not a block file?)"
        ),
        "{}",
        warnings[0]
    );
    assert!(text.contains("Reindexing finished: 0 blocks read"), "{text}");

    // A file of random bytes beside Core's good one.
    let datadir = tempfile::tempdir().unwrap();
    let datadir = datadir.path();
    let blocks = copy_core_blocks(datadir);
    std::fs::write(blocks.join("blk00001.dat"), random_bytes(1 << 20)).unwrap();
    let text = run_ok(datadir, &["-reindex", TIP_STOP]);
    let warnings = no_block_warnings(&text);
    assert_eq!(warnings.len(), 1, "{text}");
    let named = format!("[warning] {}: no block found", blocks.join("blk00001.dat").display());
    assert!(warnings[0].contains(&named), "{}", warnings[0]);
    assert!(warnings[0].contains("wrong xor.dat key or not a block file?"), "{}", warnings[0]);
    assert!(text.contains(&format!("Imported to height {CORE_TIP_HEIGHT}:")), "{text}");

    // The same random file given to -loadblock.
    let external = datadir.join("random.dat");
    std::fs::write(&external, random_bytes(4096)).unwrap();
    let argument = format!("-loadblock={}", external.display());
    let text = run_until_imported(datadir, &[&argument]);
    let warnings = no_block_warnings(&text);
    let named = format!("[warning] {}: no block found in 4096 bytes", external.display());
    assert!(warnings.iter().any(|warning| warning.contains(&named)), "{text}");
    assert!(text.contains("Loaded 0 blocks from external file"), "{text}");
}
