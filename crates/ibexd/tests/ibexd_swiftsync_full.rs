//! SwiftSync's fully validating mode end to end: node A imports a
//! generated `small` chain, serves spent coins (`-peerblockspentcoins`,
//! BIP 455) and writes the hints at height 250 (`dumphints`); node B syncs
//! from A over P2P with the hints and `-assumevalid=0`: it fetches each
//! block's spent coins from A, checks every block below 250 with them
//! (scripts included) on every core, and ends on A's coin set. Killed with
//! `kill -9` while it accounts and restarted, it ends on the same set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::assumeutxo::{rpc_options, start, stop};
use common::swiftsync::{
    client_options, coin_set, hints_at, node, serving_node, wait_for_moment, ServingNode,
};
use common::{debug_log, free_port};

const TIP_HEIGHT: u64 = 400;
/// The hints' height: no `-assumevalid` margin is needed in this mode.
const TERMINAL_HEIGHT: u32 = 250;

#[test]
fn a_fully_validating_swiftsync_fetches_spent_coins_and_ends_on_the_usual_set() {
    let root = tempfile::tempdir().unwrap();
    let serving = ["-peerblockspentcoins".to_owned()];
    let ServingNode { endpoint: a, process: mut a_process, datadir: a_datadir, p2p_port, expected } =
        serving_node(root.path(), TIP_HEIGHT, "457", &serving);
    let hints = hints_at(a, TERMINAL_HEIGHT);

    let b_options = client_options(p2p_port, &hints, "0");
    let b_datadir = root.path().join("b");
    std::fs::create_dir_all(&b_datadir).unwrap();
    let (b, mut b_process) = node(&b_datadir, &b_options);
    b.wait_for_height(TIP_HEIGHT, &mut b_process);
    assert_eq!(coin_set(b), expected);
    stop(b, &mut b_process, &b_datadir);
    let log = debug_log(&b_datadir);
    assert!(log.contains("[swiftsync] fully validating"), "{log}");
    let proven =
        format!("[swiftsync] the aggregate is zero: chainstate at height {TERMINAL_HEIGHT}");
    assert!(log.contains(&proven), "{log}");
    assert!(!log.contains("given up"), "{log}");

    // Killed while it accounts, and at its end; the last start finishes.
    let d_datadir = root.path().join("d");
    std::fs::create_dir_all(&d_datadir).unwrap();
    for (text, delay_ms) in
        [("[swiftsync] accounting", 0), ("[swiftsync] accounting", 150), ("UpdateTip", 0)]
    {
        let offset = common::log_bytes(&d_datadir);
        let mut all = rpc_options(free_port());
        all.extend_from_slice(&b_options);
        let mut process = start(&d_datadir, &all);
        wait_for_moment(&d_datadir, text, offset, &mut process);
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        process.kill().unwrap();
        process.wait().unwrap();
    }
    let (d, mut d_process) = node(&d_datadir, &b_options);
    d.wait_for_height(TIP_HEIGHT, &mut d_process);
    assert_eq!(coin_set(d), expected, "{}", debug_log(&d_datadir));
    stop(d, &mut d_process, &d_datadir);
    stop(a, &mut a_process, &a_datadir);
}

/// With no peer serving spent coins, a fully validating plan waits for
/// them a minute once every block is stored, then is given up, and the
/// blocks are connected the usual way.
#[test]
fn without_a_serving_peer_the_plan_is_given_up_and_the_chain_synced() {
    let root = tempfile::tempdir().unwrap();
    let ServingNode { endpoint: a, process: mut a_process, datadir: a_datadir, p2p_port, expected } =
        serving_node(root.path(), TIP_HEIGHT, "458", &[]);
    let hints = hints_at(a, TERMINAL_HEIGHT);
    let b_datadir = root.path().join("b");
    std::fs::create_dir_all(&b_datadir).unwrap();
    let b_options = client_options(p2p_port, &hints, "0");
    let started = std::time::Instant::now();
    let (b, mut b_process) = node(&b_datadir, &b_options);
    b.wait_for_height(TIP_HEIGHT, &mut b_process);
    assert!(started.elapsed() >= std::time::Duration::from_secs(60), "it waited for coins first");
    assert_eq!(coin_set(b), expected);
    stop(b, &mut b_process, &b_datadir);
    stop(a, &mut a_process, &a_datadir);
    let log = debug_log(&b_datadir);
    assert!(log.contains("no peer serves spent coins (BIP 455) for 60 s"), "{log}");
    assert!(
        log.contains(
            "[swiftsync] given up, syncing without hints: no spent coins came for block 1"
        ),
        "{log}"
    );
}
