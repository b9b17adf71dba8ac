//! `-whitelist` permissions against a running `ibexd` (B, syncing a
//! generated chain from an honest `ibexd`, A, over `-connect`), played by
//! fake inbound peers from distinct loopback hosts:
//!
//! - a `noban` peer (`-whitelist=noban@127.0.0.2`) that sends headers
//!   without proof of work, or an `inv` over Core's 50,000 entries, is
//!   logged as Core's `MaybeDiscourageAndDisconnect` logs it ("Warning: not
//!   punishing noban peer") and stays connected, while a peer without it
//!   is disconnected for the same headers;
//! - `getpeerinfo`'s `permissions` lists each peer's flags in Core's order:
//!   inbound entries match by address (`in`, the default), `out` entries
//!   only our outbound connections (here B's connection to A);
//! - B still syncs A's chain to its tip with A's UTXO set, under the
//!   hostile-peer suite's memory bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::net::Ipv4Addr;
use std::time::Duration;

use hostile_peer::forge::without_proof_of_work;
use hostile_peer::nodes::{finish, rpc, serving_node, syncing_node, Setup};
use hostile_peer::FakePeer;
use ibex_p2p::{Inventory, InventoryType, NetworkMessage};
use ibex_primitives::Hash256;

/// B's peak resident set must stay under this (the hostile-peer suite's
/// bound: a tiny chain, a few peers).
const PEAK_RESIDENT_BYTES_MAX: u64 = 96 << 20;
/// How long B may take to drop a peer it must drop.
const DROP_WAIT: Duration = Duration::from_secs(30);
/// The `noban` host.
const NOBAN_HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// A log line ending exactly with `text` (after the timestamp).
fn has_line_ending(log: &str, text: &str) -> bool {
    log.lines().any(|line| line.ends_with(text))
}

/// `getpeerinfo`'s `permissions` of peer `id`.
fn permissions_of(rpc_port: u16, id: u64) -> Vec<String> {
    let answer = rpc(rpc_port, "getpeerinfo", "[]");
    let peers = answer["result"].as_array().unwrap_or_else(|| panic!("{answer}"));
    let peer = peers.iter().find(|peer| peer["id"] == id).unwrap_or_else(|| panic!("{answer}"));
    let names = peer["permissions"].as_array().unwrap_or_else(|| panic!("{peer}"));
    names.iter().map(|name| name.as_str().unwrap().to_owned()).collect()
}

fn oversized_inventory() -> NetworkMessage {
    let entry = Inventory { inventory_type: InventoryType::BLOCK, hash: Hash256([9; 32]) };
    NetworkMessage::Inventory(vec![entry; 50_001])
}

#[test]
fn a_noban_peer_is_not_punished_and_permissions_are_shown() {
    let setup = Setup::generate(300, "451", &[]);
    let a = serving_node(&setup);
    let rpc_port = common::free_port();
    let rpc_option = format!("-rpcport={rpc_port}");
    let whitelist_noban = format!("-whitelist=noban@{NOBAN_HOST}");
    let mut b = syncing_node(
        &setup,
        a.port,
        &[
            "-v2transport=0",
            &whitelist_noban,
            "-whitelist=addr,bloom,out@127.0.0.1",
            "-server=1",
            &rpc_option,
            "-rpcuser=hostile",
            "-rpcpassword=peers",
        ],
    );
    let a_id = b.peer_id(300);
    b.wait_for_log(&setup.headers_line());
    let mut noban = FakePeer::connect_from(b.port, NOBAN_HOST);
    noban.handshake(451_001, true);
    let noban_id = b.peer_id(451_001);
    let mut ordinary = FakePeer::connect(b.port);
    ordinary.handshake(451_002, true);
    let ordinary_id = b.peer_id(451_002);

    assert_eq!(permissions_of(rpc_port, noban_id), ["noban", "download"]);
    assert_eq!(permissions_of(rpc_port, ordinary_id), Vec::<String>::new(), "out only");
    assert_eq!(permissions_of(rpc_port, a_id), ["bloomfilter", "addr"], "our outbound");

    let bad = NetworkMessage::Headers(vec![without_proof_of_work(setup.chain.header_at(1))]);
    noban.send(&bad).unwrap();
    ordinary.send(&bad).unwrap();
    assert!(ordinary.closed_within(DROP_WAIT), "the ordinary peer stayed\n{}", b.log());
    b.wait_for_log(&format!("Warning: not punishing noban peer {noban_id}!"));
    noban.send(&oversized_inventory()).unwrap();
    assert!(noban.ping_pong(7, DROP_WAIT), "the noban peer was dropped\n{}", b.log());
    assert_eq!(permissions_of(rpc_port, noban_id), ["noban", "download"], "still connected");

    let log = b.log();
    let pow = "header with invalid proof of work";
    assert!(has_line_ending(&log, &format!("Misbehaving: peer={noban_id}: {pow}")), "{log}");
    assert!(has_line_ending(
        &log,
        &format!("Warning: disconnecting but not discouraging local peer {ordinary_id}!")
    ));
    assert!(!log.contains(&format!("disconnecting but not discouraging local peer {noban_id}!")));
    assert!(!log.contains(&format!("Disconnecting and discouraging peer {noban_id}!")));
    drop(noban);
    finish(&setup, a, b, PEAK_RESIDENT_BYTES_MAX);
}
