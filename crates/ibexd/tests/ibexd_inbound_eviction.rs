//! Inbound eviction against a running `ibexd`: one host's flood of
//! inbound connections cannot hold the inbound slots. The attacker fills
//! all 114 (Core's default) from one network group, then keeps
//! reconnecting; an honest peer from another group still gets in, stays
//! connected and is answered, because each newcomer evicts one of the
//! attacker's own connections (Core's `AttemptToEvictConnection`). With
//! only 20 inbound slots, all protected, a newcomer is refused.
//!
//! One machine plays many hosts: the clients bind to 127.x.y.z addresses,
//! and `-test=evictionloopbackgroups` has the node group loopback
//! addresses by /16, as Core groups routable IPv4 (Core puts every local
//! address in one group).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{free_port, quiet_ibexd, spawn_node, wait_for_log, NodeProcess, REGTEST_QUIET};
use hostile_peer::FakePeer;

/// The attacker's hosts: all in 127.0.0.0/16.
fn attacker_host(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, (index / 200) as u8, (index % 200 + 2) as u8)
}

/// A listening node with `-maxconnections=max_connections`.
fn listening_node(datadir: &Path, port: u16, max_connections: usize) -> NodeProcess {
    std::fs::create_dir_all(datadir).unwrap();
    let options = [
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
        "-server=0".to_owned(),
        "-dnsseed=0".to_owned(),
        "-fixedseeds=0".to_owned(),
        format!("-maxconnections={max_connections}"),
        "-test=evictionloopbackgroups".to_owned(),
    ];
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut node = spawn_node(&mut quiet_ibexd(datadir, &REGTEST_QUIET, &options));
    wait_for_log(datadir, "Bound to 127.0.0.1", &mut node);
    node
}

/// A connection from `host` with its handshake done.
fn join(port: u16, host: Ipv4Addr, tag: i32) -> FakePeer {
    let mut peer = FakePeer::connect_from(port, host);
    peer.handshake(tag, true);
    peer
}

/// User plus system CPU time of `pid`, in milliseconds.
fn cpu_millis(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line (11 and 12 after
    // the state), in clock ticks of 10 ms.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks * 10
}

/// `VmHWM` of `pid`, in MiB.
fn peak_memory_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

#[test]
fn a_one_group_flood_cannot_keep_honest_peers_out_of_the_inbound_slots() {
    const INBOUND: usize = 114;
    const RECONNECTS: usize = 300;
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let node = listening_node(&root.path().join("node"), port, 125);
    let pid = node.id();

    let mut attacker: Vec<FakePeer> =
        (0..INBOUND).map(|index| join(port, attacker_host(index), index as i32)).collect();
    let mut honest = join(port, Ipv4Addr::new(127, 1, 0, 1), 1_000);
    assert!(honest.ping_pong(1, Duration::from_secs(5)), "the honest peer got in");

    let cpu_before = cpu_millis(pid);
    let started = Instant::now();
    for round in 0..RECONNECTS {
        // Every connection is kept open: the slots stay full, so each
        // newcomer takes one by eviction.
        attacker.push(join(port, attacker_host(200 + round), 2_000 + round as i32));
    }
    let flood = started.elapsed();
    let cpu_flood = cpu_millis(pid) - cpu_before;
    let latency_started = Instant::now();
    assert!(honest.ping_pong(2, Duration::from_secs(5)), "the honest peer is still served");
    let latency = latency_started.elapsed();
    let mut second = join(port, Ipv4Addr::new(127, 2, 0, 1), 3_000);
    assert!(second.ping_pong(3, Duration::from_secs(5)), "a second honest peer gets in");
    assert!(honest.ping_pong(4, Duration::from_secs(5)), "and the first stays");
    let peak = peak_memory_mib(pid);
    eprintln!(
        "{RECONNECTS} attacker reconnects with {INBOUND} slots full: {flood:?}, node CPU \
         {cpu_flood} ms, honest ping {latency:?}, VmHWM {peak} MiB"
    );
    assert!(cpu_flood < 10_000, "{cpu_flood} ms of CPU for {RECONNECTS} connections");
    assert!(peak < 512, "VmHWM {peak} MiB");
}

#[test]
fn with_every_inbound_peer_protected_a_newcomer_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    // 31 connections: 8 full-relay, 2 block-relay-only and 1 feeler
    // outbound slots, 20 inbound, which Core's fixed protections cover.
    let _node = listening_node(&root.path().join("node"), port, 31);
    let mut attacker: Vec<FakePeer> =
        (0..20).map(|index| join(port, attacker_host(index), index as i32)).collect();
    let mut newcomer = FakePeer::connect_from(port, Ipv4Addr::new(127, 1, 0, 1));
    assert!(newcomer.closed_within(Duration::from_secs(5)), "the newcomer is refused");
    assert!(attacker[0].ping_pong(1, Duration::from_secs(5)), "nobody was evicted");
    assert!(attacker[19].ping_pong(2, Duration::from_secs(5)));
}
