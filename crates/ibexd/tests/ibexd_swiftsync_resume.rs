//! A SwiftSync IBD (the assumevalid mode) stopped in the middle of its
//! pass and started again: node E syncs from a fake peer that has the
//! headers of a 2,300-block chain but only its first 100 blocks, so the
//! pass accounts those and waits; `stop` keeps a checkpoint; started again
//! with a peer that has every block, E resumes from the checkpoint (the
//! log says how many blocks it had accounted) and ends on the coin set of
//! a node that imported the chain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;

use common::assumeutxo::stop;
use common::swiftsync::{coin_set, node, wait_for_moment};
use hostile_peer::nodes::Setup;
use hostile_peer::{ChainData, FakePeer, GetData, Serving};

/// More than 2,016 blocks above the terminal height: `-assumevalid` at the
/// tip covers it.
const CHAIN_BLOCKS: u32 = 2_300;
const TERMINAL_HEIGHT: u32 = 250;
/// Blocks the first peer has, genesis included.
const FIRST_PEER_BLOCKS: usize = 101;

/// Serves `chain`'s headers and `blocks` to the node that connects to
/// `listener`.
fn serve(
    listener: &TcpListener,
    chain: &ChainData,
    blocks: HashMap<ibex_primitives::BlockHash, Vec<u8>>,
) -> Serving {
    let mut peer = FakePeer::accept(listener);
    peer.handshake(7, false);
    Serving::start(peer, chain.headers(), blocks, GetData::Answer)
}

fn options(listener: &TcpListener, hints: &str, tip: &str) -> Vec<String> {
    vec![
        format!("-connect=127.0.0.1:{}", listener.local_addr().unwrap().port()),
        "-listen=0".to_owned(),
        // The fake peers speak v1.
        "-v2transport=0".to_owned(),
        format!("-swiftsync={hints}"),
        format!("-assumevalid={tip}"),
    ]
}

fn log_after(datadir: &Path, offset: usize) -> String {
    common::debug_log(datadir).get(offset..).unwrap_or_default().to_owned()
}

#[test]
fn a_pass_stopped_halfway_resumes_from_its_checkpoint() {
    let setup = Setup::generate(CHAIN_BLOCKS, "4662", &[]);
    let chain = &setup.chain;
    let tip = chain.tip().to_string();
    let a_datadir =
        common::datadir_with_blocks(&setup.root.path().join("a"), &setup.chain_directory);
    let import = ["-reindex".to_owned(), "-connect=0".to_owned(), "-listen=0".to_owned()];
    let (a, mut a_process) = node(&a_datadir, &import);
    a.wait_for_height(u64::from(CHAIN_BLOCKS), &mut a_process);
    let expected = coin_set(a);
    let answer = a.call("dumphints", serde_json::json!(["hints.dat", TERMINAL_HEIGHT]));
    let hints = answer["path"].as_str().unwrap().to_owned();
    stop(a, &mut a_process, &a_datadir);

    // E gets every header and the first 100 blocks: the pass accounts
    // them and waits for the rest; `stop` keeps a checkpoint.
    let e_datadir = setup.root.path().join("e");
    std::fs::create_dir_all(&e_datadir).unwrap();
    let partial: HashMap<_, _> = chain.chain[..FIRST_PEER_BLOCKS]
        .iter()
        .map(|hash| (*hash, chain.blocks[hash].clone()))
        .collect();
    let first = TcpListener::bind("127.0.0.1:0").unwrap();
    let (e, mut e_process) = node(&e_datadir, &options(&first, &hints, &tip));
    let serving = serve(&first, chain, partial);
    wait_for_moment(&e_datadir, "[swiftsync] accounting", 0, &mut e_process);
    // Time to store and account the blocks the peer has.
    std::thread::sleep(std::time::Duration::from_secs(2));
    stop(e, &mut e_process, &e_datadir);
    serving.stop();
    let log = common::debug_log(&e_datadir);
    let kept = format!(" of {TERMINAL_HEIGHT} blocks accounted; the next start with the same hints resumes from it");
    assert!(log.contains("[swiftsync] checkpoint kept: ") && log.contains(&kept), "{log}");
    assert!(!log.contains("[swiftsync] the aggregate is zero"), "{log}");

    // Started again with a peer that has every block: it resumes.
    let offset = common::log_bytes(&e_datadir);
    let second = TcpListener::bind("127.0.0.1:0").unwrap();
    let (e, mut e_process) = node(&e_datadir, &options(&second, &hints, &tip));
    let serving = serve(&second, chain, chain.blocks.clone());
    e.wait_for_height(u64::from(CHAIN_BLOCKS), &mut e_process);
    assert_eq!(coin_set(e), expected);
    stop(e, &mut e_process, &e_datadir);
    serving.stop();
    let log = log_after(&e_datadir, offset);
    assert!(log.contains("[swiftsync] resuming from the last checkpoint"), "{log}");
    let proven =
        format!("[swiftsync] the aggregate is zero: chainstate at height {TERMINAL_HEIGHT}");
    assert!(log.contains(&proven), "{log}");
    assert!(!log.contains("discarded the coins"), "{log}");
}
