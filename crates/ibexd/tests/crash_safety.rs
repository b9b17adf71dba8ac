//! Crash safety: `ibexd -reindex` on a generated chain is killed with
//! SIGKILL at 22 moments spread over the import (with a tiny `-dbcache`
//! and `-dbbatchsize`, so flushes are frequent and span many batches),
//! then crashed inside flushes on purpose with Core's `-dbcrashratio`
//! four more times, restarted each time without `-reindex`, and finally
//! run to the end: the UTXO set hash equals a clean run's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{datadir_with_blocks, generate_chain};

const KILL_COUNT: usize = 22;
/// Every run that is not killed ends at the generated chain's tip (400,
/// `-stopatheight`), with no RPC server to bind.
const NODE_OPTIONS: [&str; 7] = [
    "-regtest",
    "-printtoconsole=0",
    "-dbcache=4",
    "-dbbatchsize=65536",
    "-assumevalid=0",
    "-stopatheight=400",
    "-server=0",
];

fn node(datadir: &Path, extra: &[&str]) -> Command {
    common::quiet_ibexd(datadir, &NODE_OPTIONS, extra)
}

/// `ibex txoutsetinfo`: the hash, or `None` when a flush was interrupted.
fn utxo_hash(datadir: &Path) -> Option<String> {
    let output = common::txoutsetinfo(datadir, &[]);
    if !output.status.success() {
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(error.contains("interrupted flush") || error.contains("no chainstate"), "{error}");
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    Some(common::hash_at_height(&value))
}

#[test]
fn kill_nine_at_many_moments_then_restart_reaches_the_same_utxo_set() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "small", "400", "11", &[]);
    let clean = datadir_with_blocks(&root.path().join("clean"), &chain);
    let started = Instant::now();
    assert!(node(&clean, &["-reindex"]).status().unwrap().success());
    let clean_duration = started.elapsed();
    let expected = utxo_hash(&clean).unwrap();

    let crashed = datadir_with_blocks(&root.path().join("crashed"), &chain);
    let mut interrupted_flushes = 0;
    // Deterministic spread of kill moments over 2-95 % of a clean run.
    let mut state = 0x9e37_79b9_u64;
    for kill in 0..KILL_COUNT {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let fraction = 0.02 + ((state >> 33) % 930) as f64 / 1000.0;
        let delay = clean_duration.mul_f64(fraction).max(Duration::from_millis(5));
        let extra: &[&str] = if kill == 0 { &["-reindex"] } else { &[] };
        let mut child = node(&crashed, extra).spawn().unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        child.wait().unwrap();
        if utxo_hash(&crashed).is_none() {
            interrupted_flushes += 1;
        }
    }
    assert!(node(&crashed, &[]).status().unwrap().success());
    assert_eq!(utxo_hash(&crashed).unwrap(), expected);

    // Core's -dbcrashratio: exit after a partial flush batch, at random,
    // from a fresh reindex; every restart first replays the interrupted flush.
    let flush_crashed = datadir_with_blocks(&root.path().join("flush-crashed"), &chain);
    let mut crashed_in_flush = 0;
    for run in 0..4 {
        let extra: &[&str] =
            if run == 0 { &["-reindex", "-dbcrashratio=3"] } else { &["-dbcrashratio=3"] };
        node(&flush_crashed, extra).status().unwrap();
        if utxo_hash(&flush_crashed).is_none() {
            crashed_in_flush += 1;
        }
    }
    assert!(crashed_in_flush >= 1, "no run stopped inside a flush");
    assert!(node(&flush_crashed, &[]).status().unwrap().success());
    assert_eq!(utxo_hash(&flush_crashed).unwrap(), expected);
    eprintln!(
        "{KILL_COUNT} kills over a {clean_duration:?} clean run ({interrupted_flushes} inside a flush), then {crashed_in_flush} crashes inside a flush"
    );
}
