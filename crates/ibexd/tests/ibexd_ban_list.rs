//! The ban list against a running `ibexd`: a flood of misbehaving
//! peers cannot push the operator's bans out of the ban list. The operator
//! bans a few addresses with `setban`; then 2,000 attacker hosts each send
//! a header without proof of work, and each is disconnected and
//! discouraged: refused when it comes back while the node's only inbound
//! slot is free (Core refuses a discouraged address only when its inbound
//! slots are full). Afterwards `listbanned` shows exactly the manual bans (Core
//! keeps discouraged addresses apart, in its `m_discouraged`), a manually
//! banned address is still refused, an honest host still gets in, and the
//! node spent bounded CPU time and memory.
//!
//! One machine plays many hosts: the clients bind to 127.x.y.z addresses,
//! and `-test=discourageloopback` has the node discourage misbehaving
//! loopback peers other than 127.0.0.1 (Core spares every local address).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::net::{Ipv4Addr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{debug_log, free_port, quiet_ibexd, spawn_node, wait_for_log, NodeProcess};
use hostile_peer::forge::{branch_from_genesis, without_proof_of_work};
use hostile_peer::nodes::rpc;
use hostile_peer::FakePeer;
use ibex_p2p::NetworkMessage;

/// Attacker hosts that misbehave.
const ATTACKERS: usize = 2_000;
/// The operator's bans.
const MANUAL_BANS: [Ipv4Addr; 3] =
    [Ipv4Addr::new(127, 9, 0, 1), Ipv4Addr::new(127, 9, 0, 2), Ipv4Addr::new(127, 9, 1, 7)];
/// An honest host.
const HONEST: Ipv4Addr = Ipv4Addr::new(127, 1, 0, 1);
/// How long the node may take to drop a peer it must drop.
const DROP_WAIT: Duration = Duration::from_secs(5);
/// The node's CPU time for the whole flood (4,000 connections) must stay
/// under this (about 1 s measured).
const FLOOD_CPU_MILLIS_MAX: u64 = 10_000;
/// The node's peak resident set must stay under this.
const PEAK_RESIDENT_MIB_MAX: u64 = 128;

/// Attacker `index`'s host: in 127.10.0.0/16 and 127.11.0.0/16.
fn attacker_host(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(
        127,
        10 + (index / 62_500) as u8,
        (index / 250 % 250) as u8,
        (index % 250 + 1) as u8,
    )
}

/// A listening node with RPC, one inbound slot (`-maxconnections=12`
/// leaves 1 after Core's 11 outbound slots, so a discouraged address is
/// always refused, as Core refuses one when the inbound slots are full)
/// and the loopback discouragement seam.
fn listening_node(datadir: &Path, port: u16, rpc_port: u16) -> NodeProcess {
    std::fs::create_dir_all(datadir).unwrap();
    let options = [
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
        "-server=1".to_owned(),
        format!("-rpcport={rpc_port}"),
        "-rpcuser=hostile".to_owned(),
        "-rpcpassword=peers".to_owned(),
        "-v2transport=0".to_owned(),
        "-dnsseed=0".to_owned(),
        "-fixedseeds=0".to_owned(),
        "-maxconnections=12".to_owned(),
        "-test=discourageloopback".to_owned(),
    ];
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut node = spawn_node(&mut quiet_ibexd(datadir, &common::REGTEST_QUIET, &options));
    wait_for_log(datadir, "Bound to 127.0.0.1", &mut node);
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", rpc_port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(20), "RPC never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    node
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

/// `listbanned`'s addresses, sorted.
fn listed_bans(rpc_port: u16) -> Vec<String> {
    let answer = rpc(rpc_port, "listbanned", "[]");
    let entries = answer["result"].as_array().unwrap_or_else(|| panic!("{answer}"));
    let mut addresses: Vec<String> =
        entries.iter().map(|entry| entry["address"].as_str().unwrap().to_owned()).collect();
    addresses.sort();
    addresses
}

/// Whether a connection from `host` is closed by the node before any
/// handshake.
fn refused(port: u16, host: Ipv4Addr) -> bool {
    FakePeer::connect_from(port, host).closed_within(DROP_WAIT)
}

/// A connection from `host` with the version handshake done, or `None`
/// when the node closed it first.
fn try_join(port: u16, host: Ipv4Addr, tag: i32) -> Option<FakePeer> {
    let mut peer = FakePeer::connect_from(port, host);
    peer.send(&hostile_peer::version(tag)).ok()?;
    let (mut version_seen, mut verack_seen) = (false, false);
    let started = Instant::now();
    while !(version_seen && verack_seen) {
        assert!(started.elapsed() < DROP_WAIT, "no handshake from {host}");
        match peer.receive().ok()? {
            Some(NetworkMessage::Version(_)) => {
                version_seen = true;
                peer.send(&NetworkMessage::Verack).ok()?;
            }
            Some(NetworkMessage::Verack) => verack_seen = true,
            _ => {}
        }
    }
    Some(peer)
}

/// Attacker `index` connects, sends a header without proof of work and
/// must be dropped. The node may still be closing the previous attacker's
/// connection, which holds the only inbound slot until then: a refused
/// attempt is retried.
fn misbehave(port: u16, index: usize, bad_headers: &NetworkMessage) {
    let host = attacker_host(index);
    let started = Instant::now();
    let mut attacker = loop {
        if let Some(peer) = try_join(port, host, 10_000 + index as i32) {
            break peer;
        }
        assert!(started.elapsed() < DROP_WAIT, "attacker {host} never got the free slot");
        std::thread::sleep(Duration::from_millis(1));
    };
    let _ = attacker.send(bad_headers);
    assert!(attacker.closed_within(DROP_WAIT), "attacker {host} stayed connected");
}

/// Waits until the node has no connection left.
fn wait_for_no_connections(rpc_port: u16) {
    let started = Instant::now();
    while rpc(rpc_port, "getconnectioncount", "[]")["result"] != 0 {
        assert!(started.elapsed() < DROP_WAIT, "connections stayed open");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_discouragement_flood_leaves_the_operators_bans_listed_and_enforced() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("node");
    let (port, rpc_port) = (free_port(), free_port());
    let node = listening_node(&datadir, port, rpc_port);
    let pid = node.id();

    for host in MANUAL_BANS {
        let answer = rpc(rpc_port, "setban", &format!(r#"["{host}","add"]"#));
        assert!(answer["error"].is_null(), "setban {host}: {answer}");
    }
    let mut expected: Vec<String> = MANUAL_BANS.iter().map(|host| format!("{host}/32")).collect();
    expected.sort();
    assert_eq!(listed_bans(rpc_port), expected);
    wait_for_no_connections(rpc_port);
    assert!(refused(port, MANUAL_BANS[0]), "a manually banned host got in");

    let bad_headers =
        NetworkMessage::Headers(vec![without_proof_of_work(branch_from_genesis(1)[0])]);
    let cpu_before = cpu_millis(pid);
    let started = Instant::now();
    for index in 0..ATTACKERS {
        misbehave(port, index, &bad_headers);
    }
    // With the slot free, only a discouraged address is refused.
    wait_for_no_connections(rpc_port);
    for index in 0..ATTACKERS {
        let host = attacker_host(index);
        assert!(refused(port, host), "discouraged attacker {host} got back in");
    }
    let flood = started.elapsed();
    let flood_cpu = cpu_millis(pid) - cpu_before;

    assert_eq!(listed_bans(rpc_port), expected, "listbanned shows exactly the manual bans");
    wait_for_no_connections(rpc_port);
    for host in MANUAL_BANS {
        assert!(refused(port, host), "manually banned {host} got in after the flood");
    }
    let mut honest = FakePeer::connect_from(port, HONEST);
    honest.handshake(1, true);
    assert!(honest.ping_pong(1, DROP_WAIT), "the honest host is served");
    let log = debug_log(&datadir);
    let discouraged = log.matches("Disconnecting and discouraging peer").count();
    assert_eq!(discouraged, ATTACKERS, "each attacker was discouraged, none spared as local");
    let refused_as_discouraged = log.matches(" dropped (discouraged)").count();
    assert!(refused_as_discouraged >= ATTACKERS, "{refused_as_discouraged} refusals logged");
    for host in MANUAL_BANS {
        let line = format!("connection from {host}:");
        let refusals = log.lines().filter(|entry| entry.contains(&line)).count();
        let banned = log
            .lines()
            .filter(|entry| entry.contains(&line) && entry.ends_with("dropped (banned)"))
            .count();
        assert!(
            banned > 0 && banned == refusals,
            "{host}: {banned} of {refusals} refusals as banned"
        );
    }
    let peak = peak_memory_mib(pid);
    eprintln!(
        "{ATTACKERS} misbehaving hosts discouraged and refused: {flood:?}, node CPU \
         {flood_cpu} ms, VmHWM {peak} MiB"
    );
    assert!(flood_cpu < FLOOD_CPU_MILLIS_MAX, "{flood_cpu} ms of CPU for the flood");
    assert!(peak < PEAK_RESIDENT_MIB_MAX, "VmHWM {peak} MiB");
}
