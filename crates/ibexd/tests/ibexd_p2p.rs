//! P2P end to end: one `ibexd` imports a generated chain from block files and
//! stays up listening (`-listen=1`); a second, empty one connects to it
//! (`-connect`), downloads headers and blocks over P2P on loopback, and stops
//! at the tip (`-stopatheight`). Both must end with the same UTXO set, and the
//! first must stop cleanly on SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Instant;

use common::{
    datadir_with_blocks, debug_log, free_port, generate_chain, log_or_empty, terminate, utxo_hash,
    wait_exit, wait_for_log,
};

/// A serves a generated chain of `blocks` blocks; B (with `b_extra`) syncs
/// it and stops at its tip (after a SIGTERM once past `b_interrupted_at`
/// and a restart, when given); A stops on SIGTERM; both UTXO sets agree.
fn sync_over_loopback(
    blocks: u32,
    a_extra: &[&str],
    b_extra: &[&str],
    b_interrupted_at: Option<u32>,
) {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &blocks.to_string(), "14", &[]);
    let manifest = std::fs::read_to_string(chain.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let tip = manifest["tip_hash"].as_str().unwrap().to_owned();

    let port = free_port();
    let serving = datadir_with_blocks(&root.path().join("a"), &chain);
    let port_option = format!("-port={port}");
    // No RPC server: tests run side by side, and each would take the
    // default RPC port.
    let mut a_options =
        vec!["-reindex", "-listen=1", "-bind=127.0.0.1", port_option.as_str(), "-server=0"];
    a_options.extend_from_slice(a_extra);
    let mut node_a =
        common::spawn_node(&mut common::quiet_ibexd(&serving, &common::REGTEST_QUIET, &a_options));
    wait_for_log(&serving, "Chain activation:", &mut node_a);
    wait_for_log(&serving, "Bound to 127.0.0.1", &mut node_a);

    let syncing = root.path().join("b");
    std::fs::create_dir_all(&syncing).unwrap();
    let connect = format!("-connect=127.0.0.1:{port}");
    let stop = format!("-stopatheight={blocks}");
    let mut b_options = vec![connect.as_str(), "-listen=0", stop.as_str(), "-server=0"];
    b_options.extend_from_slice(b_extra);
    if let Some(height) = b_interrupted_at {
        let mut node_b = common::spawn_node(&mut common::quiet_ibexd(
            &syncing,
            &common::REGTEST_QUIET,
            &b_options,
        ));
        wait_for_log(&syncing, &format!(" height={height} "), &mut node_b);
        terminate(&node_b);
        let status = wait_exit(&mut node_b, &syncing);
        assert!(status.success(), "B after SIGTERM: {status:?}\n{}", log_or_empty(&syncing));
        let b_log = debug_log(&syncing);
        assert!(b_log.contains("Shutdown: done"), "B did not shut down cleanly\n{b_log}");
        let reached = format!("UpdateTip: new best={tip} height={blocks} ");
        assert!(!b_log.contains(&reached), "B was synced before the signal: test too slow");
    }
    let started = Instant::now();
    let mut node_b =
        common::spawn_node(&mut common::quiet_ibexd(&syncing, &common::REGTEST_QUIET, &b_options));
    let status = wait_exit(&mut node_b, &syncing);
    let synced_in = started.elapsed();
    assert!(status.success(), "B: {status:?}\n{}", log_or_empty(&syncing));
    eprintln!("B synced {blocks} blocks over loopback in {:.2} s", synced_in.as_secs_f64());
    let b_log = debug_log(&syncing);
    let update_tip = format!("UpdateTip: new best={tip} height={blocks} ");
    assert!(b_log.contains(&update_tip), "no '{update_tip}' in B's log\n{b_log}");
    assert!(b_log.contains("peer connected"), "no connection in B's log\n{b_log}");
    let headers_line = format!("Synchronizing blockheaders, height: {blocks} ");
    assert!(b_log.contains(&headers_line), "no '{headers_line}' in B's log\n{b_log}");

    terminate(&node_a);
    let status = wait_exit(&mut node_a, &serving);
    assert!(status.success(), "A after SIGTERM: {status:?}");
    let a_log = debug_log(&serving);
    assert!(a_log.contains("New inbound"), "no inbound peer in A's log\n{a_log}");
    assert!(a_log.contains("Flushing chainstate to disk"), "A did not flush\n{a_log}");
    assert!(a_log.contains("Shutdown: done"), "A did not shut down cleanly\n{a_log}");

    let expected = utxo_hash(&serving);
    assert!(expected.ends_with(&format!("@{blocks}")), "A's UTXO set: {expected}");
    assert_eq!(utxo_hash(&syncing), expected);
}

/// More blocks than the download window (1,024): the window moves.
#[test]
fn a_node_syncs_another_over_loopback() {
    sync_over_loopback(1300, &[], &[], None);
}

/// A node stopped by SIGTERM in the middle of its sync flushes, exits 0,
/// and carries on from where it stopped when started again.
#[test]
fn an_interrupted_sync_resumes() {
    sync_over_loopback(1300, &[], &[], Some(100));
}

#[test]
fn a_v1_node_syncs_from_a_v2_node() {
    sync_over_loopback(200, &[], &["-v2transport=0"], None);
}
