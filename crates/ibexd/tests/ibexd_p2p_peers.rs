//! Syncs with more than one peer: three serving `ibexd`s, one
//! of them killed in the middle of the sync; and a reorganisation that
//! arrives over the network (the syncing node follows a lighter branch
//! from one peer until a second peer with the heavier chain appears).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{
    datadir_with_blocks, debug_log, free_port, generate_chain, log_or_empty, quiet_ibexd,
    spawn_node, terminate, utxo_hash, wait_exit, wait_for_log, NodeProcess, REGTEST_QUIET,
};

/// The generated chain's manifest.
fn manifest(chain: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(chain.join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A node serving the block files in `datadir` on `port` (imported with
/// `-reindex`), once it listens.
fn serving_node(datadir: &Path, port: u16) -> NodeProcess {
    let port_option = format!("-port={port}");
    let options = ["-reindex", "-listen=1", "-bind=127.0.0.1", port_option.as_str(), "-server=0"];
    let mut node = spawn_node(&mut quiet_ibexd(datadir, &REGTEST_QUIET, &options));
    wait_for_log(datadir, "Bound to 127.0.0.1", &mut node);
    node
}

/// The options of a node syncing from `ports` and stopping at `height`.
fn syncing_options(ports: &[u16], height: u32) -> Vec<String> {
    let mut options: Vec<String> =
        ports.iter().map(|port| format!("-connect=127.0.0.1:{port}")).collect();
    options.extend(["-listen=0".to_owned(), "-server=0".to_owned()]);
    options.push(format!("-stopatheight={height}"));
    options
}

fn spawn_syncing(datadir: &Path, options: &[String]) -> NodeProcess {
    std::fs::create_dir_all(datadir).unwrap();
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    spawn_node(&mut quiet_ibexd(datadir, &REGTEST_QUIET, &options))
}

#[test]
fn a_sync_from_three_peers_survives_losing_one() {
    const BLOCKS: u32 = 1500;
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "31", &[]);
    let tip = manifest(&chain)["tip_hash"].as_str().unwrap().to_owned();

    let ports = [free_port(), free_port(), free_port()];
    let serving: Vec<PathBuf> = (0..3)
        .map(|number| datadir_with_blocks(&root.path().join(format!("serving{number}")), &chain))
        .collect();
    let mut servers: Vec<NodeProcess> =
        serving.iter().zip(ports).map(|(datadir, port)| serving_node(datadir, port)).collect();

    let syncing = root.path().join("syncing");
    let mut node = spawn_syncing(&syncing, &syncing_options(&ports, BLOCKS));
    wait_for_log(&syncing, " height=300 ", &mut node);
    // One serving peer dies without a word: its blocks in flight must be
    // asked of the others.
    servers[0].kill().unwrap();
    servers[0].wait().unwrap();
    let status = wait_exit(&mut node, &syncing);
    assert!(status.success(), "{status:?}\n{}", log_or_empty(&syncing));

    let log = debug_log(&syncing);
    assert!(
        log.matches("peer connected").count() >= 3,
        "the node did not connect to all three peers\n{log}"
    );
    let reached = format!("UpdateTip: new best={tip} height={BLOCKS} ");
    assert!(log.contains(&reached), "no '{reached}' in\n{log}");
    for (server, datadir) in servers.iter_mut().zip(&serving).skip(1) {
        terminate(server);
        assert!(wait_exit(server, datadir).success());
    }
    // The surviving peers hold the chain the node ended with.
    let expected = utxo_hash(&serving[1]);
    assert!(expected.ends_with(&format!("@{BLOCKS}")), "{expected}");
    assert_eq!(utxo_hash(&syncing), expected);
}

/// Block records of a Core block file: (offset, length) of each, framing
/// included, read through the file's XOR key.
fn block_records(file: &[u8], key: &[u8]) -> Vec<(usize, usize)> {
    let plain = |position: usize| file[position] ^ key[position % key.len()];
    let mut records = Vec::new();
    let mut position = 0;
    while position + 8 <= file.len() {
        let size_bytes: Vec<u8> = (position + 4..position + 8).map(plain).collect();
        let size = u32::from_le_bytes(size_bytes.try_into().unwrap()) as usize;
        if size == 0 {
            break;
        }
        records.push((position, 8 + size));
        position += 8 + size;
    }
    records
}

/// `chain`'s first block file cut after its first `records` blocks, with
/// its key, in `datadir`.
fn datadir_with_first_blocks(datadir: &Path, chain: &Path, records: usize) -> PathBuf {
    let blocks = datadir.join("regtest/blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    let file = std::fs::read(chain.join("blk00000.dat")).unwrap();
    let key = std::fs::read(chain.join("xor.dat")).unwrap();
    let kept = block_records(&file, &key);
    let (offset, length) = kept[records - 1];
    std::fs::write(blocks.join("blk00000.dat"), &file[..offset + length]).unwrap();
    std::fs::write(blocks.join("xor.dat"), key).unwrap();
    datadir.to_path_buf()
}

/// The generator's `--forks` files hold, at three fifths of the chain
/// (height F), a two-block branch F+1', F+2' written before the main
/// chain's F+1: a peer that imported the files up to that branch serves it
/// as its best chain. A syncing node follows it, then a second peer with
/// the whole chain connects, and the node must reorganise to the heavier
/// chain and end with its UTXO set.
///
/// In initial block download (the generated chain's times are old) Core
/// asks headers of one peer only, and of another when that one leaves or
/// its headers sync times out (15 minutes): the light peer leaves here once
/// the heavy one is connected.
#[test]
fn a_heavier_chain_from_a_new_peer_reorganises_a_syncing_node() {
    const BLOCKS: u32 = 200;
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "32", &["--forks"]);
    let tip = manifest(&chain)["tip_hash"].as_str().unwrap().to_owned();
    let fork_height = BLOCKS * 3 / 5;
    let branch_tip_height = fork_height + 2;

    // Genesis to F, then the branch's two blocks.
    let light = datadir_with_first_blocks(
        &root.path().join("light"),
        &chain,
        usize::try_from(branch_tip_height + 1).unwrap(),
    );
    let heavy = datadir_with_blocks(&root.path().join("heavy"), &chain);
    let (light_port, heavy_port) = (free_port(), free_port());
    let mut light_server = serving_node(&light, light_port);
    let light_log = debug_log(&light);
    let branch_tip_line = format!(" height={branch_tip_height} ");
    assert!(light_log.contains(&branch_tip_line), "the light peer's chain\n{light_log}");

    let syncing = root.path().join("syncing");
    let mut node = spawn_syncing(&syncing, &syncing_options(&[light_port, heavy_port], BLOCKS));
    wait_for_log(&syncing, &branch_tip_line, &mut node);
    let mut heavy_server = serving_node(&heavy, heavy_port);
    wait_for_log(&syncing, "blocks=200, peer=1", &mut node);
    light_server.kill().unwrap();
    light_server.wait().unwrap();
    let status = wait_exit(&mut node, &syncing);
    assert!(status.success(), "{status:?}\n{}", log_or_empty(&syncing));

    let log = debug_log(&syncing);
    let reached = format!("UpdateTip: new best={tip} height={BLOCKS} ");
    assert!(log.contains(&reached), "no '{reached}' in\n{log}");
    // The branch was the tip, then was disconnected for the heavier chain.
    let branch_line = log
        .lines()
        .find(|line| line.contains("UpdateTip") && line.contains(&branch_tip_line))
        .unwrap_or_else(|| panic!("the node never followed the branch\n{log}"));
    let branch_hash = branch_line.split("best=").nth(1).unwrap().split(' ').next().unwrap();
    let tip_at_branch_height = log
        .lines()
        .rev()
        .find(|line| line.contains("UpdateTip") && line.contains(&branch_tip_line))
        .unwrap();
    assert!(
        !tip_at_branch_height.contains(branch_hash),
        "the branch's tip stayed the tip at its height\n{log}"
    );

    terminate(&heavy_server);
    assert!(wait_exit(&mut heavy_server, &heavy).success());
    assert_eq!(utxo_hash(&syncing), utxo_hash(&heavy));
}

/// The header time of the last block in `chain`'s first block file.
fn last_block_time(chain: &Path) -> u32 {
    let file = std::fs::read(chain.join("blk00000.dat")).unwrap();
    let key = std::fs::read(chain.join("xor.dat")).unwrap();
    let (offset, _) = *block_records(&file, &key).last().unwrap();
    // The header's time: framing (8 bytes), version (4), two hashes (64).
    let time_at = offset + 8 + 68;
    let bytes: Vec<u8> = (time_at..time_at + 4).map(|at| file[at] ^ key[at % key.len()]).collect();
    u32::from_le_bytes(bytes.try_into().unwrap())
}

/// BIP130 announcements out of initial block download (`-mocktime` puts
/// the generated chain's tip in the present): A serves N blocks and B has
/// synced them from it; C, with block N+1, connects to A; A fetches it
/// (headers sync from every peer once the best header is recent) and
/// announces its new tip to B, whose only peer A is, and B follows.
#[test]
fn a_new_tip_is_announced_to_a_synced_peer() {
    const BLOCKS: u32 = 121;
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "33", &[]);
    let tip = manifest(&chain)["tip_hash"].as_str().unwrap().to_owned();
    let mock_time = format!("-mocktime={}", last_block_time(&chain) + 600);

    // A: heights 0 to BLOCKS - 1.
    let serving = datadir_with_first_blocks(
        &root.path().join("serving"),
        &chain,
        usize::try_from(BLOCKS).unwrap(),
    );
    let port = free_port();
    let port_option = format!("-port={port}");
    let a_options = [
        "-reindex",
        "-listen=1",
        "-bind=127.0.0.1",
        port_option.as_str(),
        "-server=0",
        mock_time.as_str(),
    ];
    let mut node_a = spawn_node(&mut quiet_ibexd(&serving, &REGTEST_QUIET, &a_options));
    wait_for_log(&serving, "Bound to 127.0.0.1", &mut node_a);

    let synced = root.path().join("synced");
    let mut b_options = syncing_options(&[port], BLOCKS);
    b_options.push(mock_time.clone());
    let mut node_b = spawn_syncing(&synced, &b_options);
    wait_for_log(&synced, &format!(" height={} ", BLOCKS - 1), &mut node_b);

    let ahead = datadir_with_blocks(&root.path().join("ahead"), &chain);
    let connect = format!("-connect=127.0.0.1:{port}");
    let c_options = ["-reindex", connect.as_str(), "-listen=0", "-server=0", mock_time.as_str()];
    let mut node_c = spawn_node(&mut quiet_ibexd(&ahead, &REGTEST_QUIET, &c_options));

    let status = wait_exit(&mut node_b, &synced);
    assert!(status.success(), "{status:?}\n{}", log_or_empty(&synced));
    let log = debug_log(&synced);
    let reached = format!("UpdateTip: new best={tip} height={BLOCKS} ");
    assert!(log.contains(&reached), "B did not follow A's new tip\n{log}");
    assert_eq!(log.matches("peer connected").count(), 1, "B had another peer\n{log}");
    wait_for_log(&serving, &reached, &mut node_a);
    for (node, datadir) in [(&mut node_a, &serving), (&mut node_c, &ahead)] {
        terminate(node);
        assert!(wait_exit(node, datadir).success());
    }
}
