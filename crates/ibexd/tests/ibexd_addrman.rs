//! Finding peers without `-connect`, on regtest over loopback: node B serves a
//! generated chain; node A, empty, is started with B as its `-seednode` only,
//! learns B's address from that addr-fetch connection (without syncing from it,
//! as Core), and writes it to its address file (`ibex_peers.dat`) at shutdown.
//! Started again with no peer option at all, A finds B in its address manager,
//! connects to it as an outbound full-relay peer and syncs the chain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{
    datadir_with_blocks, debug_log, free_port, generate_chain, log_or_empty, spawn_node, terminate,
    wait_exit, wait_for_log, NodeProcess,
};

const BLOCKS: u32 = 120;

fn stop(mut node: NodeProcess, datadir: &Path) {
    terminate(&node);
    let status = wait_exit(&mut node, datadir);
    assert!(status.success(), "{status:?}\n{}", log_or_empty(datadir));
}

#[test]
fn a_node_finds_its_peer_again_from_its_address_file() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "41", &[]);
    let manifest = std::fs::read_to_string(chain.join("manifest.json")).unwrap();
    let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    let tip = manifest["tip_hash"].as_str().unwrap().to_owned();

    // B serves the chain on a loopback port.
    let port = free_port();
    let serving = datadir_with_blocks(&root.path().join("b"), &chain);
    let port_option = format!("-port={port}");
    let b_options = ["-reindex", "-listen=1", "-bind=127.0.0.1", port_option.as_str(), "-server=0"];
    let mut node_b =
        spawn_node(&mut common::quiet_ibexd(&serving, &common::REGTEST_QUIET, &b_options));
    wait_for_log(&serving, "Chain activation:", &mut node_b);
    wait_for_log(&serving, "Bound to 127.0.0.1", &mut node_b);

    // A, empty, knows B only as a seed node: it asks, learns, syncs nothing.
    let finding = root.path().join("a");
    std::fs::create_dir_all(&finding).unwrap();
    let seed_node = format!("-seednode=127.0.0.1:{port}");
    let first_options = [seed_node.as_str(), "-listen=0", "-server=0"];
    let mut node_a =
        spawn_node(&mut common::quiet_ibexd(&finding, &common::REGTEST_QUIET, &first_options));
    wait_for_log(&finding, "New addr-fetch", &mut node_a);
    stop(node_a, &finding);
    let first_log = debug_log(&finding);
    for line in [
        "Creating ibex_peers.dat because the file was not found",
        &format!("Empty addrman, adding seednode (127.0.0.1:{port}) to addrfetch"),
        "opencon thread start",
        "Flushed 1 addresses to ibex_peers.dat  ",
    ] {
        assert!(first_log.contains(line), "no '{line}' in A's first log\n{first_log}");
    }
    let first_block = "UpdateTip: new best=";
    let synced = first_log.matches(first_block).count();
    assert_eq!(synced, 1, "A synced from a seed node (beyond genesis)\n{first_log}");
    assert!(finding.join("regtest/ibex_peers.dat").exists());

    // Started again with no peer option: B comes from the address manager.
    let stop_at = format!("-stopatheight={BLOCKS}");
    let second_options = ["-listen=0", "-server=0", stop_at.as_str()];
    let mut node_a =
        spawn_node(&mut common::quiet_ibexd(&finding, &common::REGTEST_QUIET, &second_options));
    let status = wait_exit(&mut node_a, &finding);
    assert!(status.success(), "A: {status:?}\n{}", log_or_empty(&finding));
    let log = debug_log(&finding);
    let second_log = &log[first_log.len()..];
    for line in [
        "Loaded 1 addresses from ibex_peers.dat  ",
        "New outbound-full-relay ",
        &format!("UpdateTip: new best={tip} height={BLOCKS} "),
        "Flushed 1 addresses to ibex_peers.dat  ",
    ] {
        assert!(second_log.contains(line), "no '{line}' in A's second log\n{second_log}");
    }
    assert!(!second_log.contains("seednode"), "{second_log}");

    stop(node_b, &serving);
    let b_log = debug_log(&serving);
    assert!(b_log.contains("New inbound"), "{b_log}");
}
