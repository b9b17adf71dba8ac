//! The memory bound on a scaled-down `utxo-heavy` chain (1,200
//! blocks of 100,000 WU, ~340,000 coins, ~45 MiB of UTXO map if it were
//! never flushed): `ibexd -reindex -dbcache=32` flushes its coins cache
//! several times in the background.
//! - Its peak RSS (`wait4` of the process) stays within `-dbcache` + 256 MiB.
//! - The startup's "Cache configuration:" lines split `-dbcache` into
//!   parts that add up to it, the UTXO set's share as the split function
//!   gives it.
//! - The UTXO cache as each `UpdateTip` logs it (the live map plus what a
//!   background flush still holds) never passes that share, as it would
//!   if the frozen map were held whole until its write ended while the
//!   live map grew a quarter of the limit meanwhile.
//! - The cache flushes because it is full, after using most of its share.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../ibexd/tests/common/mod.rs"]
mod common;

use std::path::Path;

use ibex_tools::bench::measure::run_measured;

const BLOCKS: &str = "1200";
const TARGET_WEIGHT: &str = "100000";
const SEED: &str = "5";
const DBCACHE_MEBIBYTES: u64 = 32;
/// The margin over `-dbcache` the whole process's memory stays within.
const MARGIN_MEBIBYTES: u64 = 256;
/// Rounding of one logged figure (one decimal).
const ROUNDING_MEBIBYTES: f64 = 0.05;

/// The `X` of a logged `* Using X MiB for <what>` line.
fn logged_share(log: &str, what: &str) -> f64 {
    let suffix = format!(" MiB for {what}");
    let line = log.lines().find(|line| line.ends_with(&suffix)).expect("a cache line");
    let start = line.find("* Using ").expect("Core's prefix") + "* Using ".len();
    line[start..line.len() - suffix.len()].parse().unwrap()
}

/// Every `cache=X` MiB the `UpdateTip` lines of `log` give.
fn logged_cache_sizes(log: &str) -> Vec<f64> {
    log.lines()
        .filter(|line| line.contains("UpdateTip: "))
        .filter_map(|line| line.split(" cache=").nth(1))
        .map(|rest| rest.split("MiB").next().unwrap().parse().unwrap())
        .collect()
}

fn install_blocks(datadir: &Path, chain: &Path) {
    let names: Vec<String> = std::fs::read_dir(chain)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("blk") || name == "xor.dat")
        .collect();
    common::copy_block_files(datadir, chain, &names);
}

#[test]
fn reindex_stays_within_its_share_of_dbcache() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    common::generate_chain(&chain, "utxo-heavy", BLOCKS, SEED, &["--target-weight", TARGET_WEIGHT]);
    let datadir = root.path().join("ibex");
    install_blocks(&datadir, &chain);
    let dbcache = format!("-dbcache={DBCACHE_MEBIBYTES}");
    let stop = format!("-stopatheight={BLOCKS}");
    let mut command = common::quiet_ibexd(
        &datadir,
        &common::REGTEST_QUIET,
        &["-reindex", "-assumevalid=0", "-listen=0", "-server=0", &dbcache, &stop],
    );
    let measurement = run_measured(&mut command, common::NODE_WAIT).unwrap();
    let log = common::log_or_empty(&datadir);
    assert!(measurement.end.is_success(), "{}\n{log}", measurement.end.describe());
    assert!(log.contains(&format!("Imported to height {BLOCKS}:")), "{log}");

    // The split, as logged, adds up to -dbcache and matches the function.
    let budget = ibex_daemon::memory_budget::memory_budget_for(
        DBCACHE_MEBIBYTES,
        ibex_chainstate::FLUSH_BATCH_BYTES_DEFAULT,
    );
    let parts = ["block index database", "chain state database", "blocks read ahead of validation"];
    let utxo_share = logged_share(&log, "in-memory UTXO set");
    let total: f64 = parts.iter().map(|part| logged_share(&log, part)).sum::<f64>() + utxo_share;
    assert!((total - DBCACHE_MEBIBYTES as f64).abs() <= 4.0 * ROUNDING_MEBIBYTES, "{total}");
    let expected_share = budget.coins_bytes as f64 / (1 << 20) as f64;
    assert!((utxo_share - expected_share).abs() <= ROUNDING_MEBIBYTES, "{utxo_share}");

    // The UTXO cache, frozen map included, within its share; and used.
    let sizes = logged_cache_sizes(&log);
    assert!(sizes.len() >= 1200, "{} UpdateTip lines", sizes.len());
    let largest = sizes.iter().copied().fold(0.0, f64::max);
    assert!(largest <= utxo_share + ROUNDING_MEBIBYTES, "cache {largest} MiB > {utxo_share}");
    assert!(largest >= utxo_share / 2.0, "cache peaked at {largest} of {utxo_share} MiB");
    let full_flushes = log.matches("FlushStateToDisk (cache full)").count();
    assert!(full_flushes >= 2, "{full_flushes} flushes of a full cache\n{log}");

    let peak_mebibytes = measurement.peak_rss_kibibytes / 1024;
    eprintln!(
        "-dbcache={DBCACHE_MEBIBYTES}: peak RSS {peak_mebibytes} MiB, UTXO cache at most \
         {largest} of {utxo_share} MiB, {full_flushes} flushes of a full cache"
    );
    assert!(peak_mebibytes <= DBCACHE_MEBIBYTES + MARGIN_MEBIBYTES, "{peak_mebibytes} MiB");
}
