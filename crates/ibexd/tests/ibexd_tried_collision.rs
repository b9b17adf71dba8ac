//! Test-before-evict against a running `ibexd`: an attacker cannot push a
//! good address out of the tried table by making the node connect to an
//! address aimed at the same tried slot (Core's `ResolveCollisions` and
//! `SelectTriedCollision`).
//!
//! The node starts with an address file the test wrote: ten peers that
//! fill its eight full-relay and two block-relay-only slots (feelers only
//! run once those are full, as in Core), and one tried address, the
//! occupant, last heard from five hours ago (past Core's four-hour window,
//! so it must be tested before it can be kept). The attacker's address is
//! found by searching loopback addresses for one that takes the
//! occupant's tried slot, and the node is made to connect to it with
//! `-addnode`. Under `-test=fastfeelers` (a feeler every second rather
//! than every two minutes) a feeler must go to the occupant; it answers,
//! so after a clean stop the file shows the occupant still tried and the
//! attacker waiting in the new table. Without test-before-evict the
//! attacker's handshake alone would have moved the occupant out.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{log_or_empty, quiet_ibexd, spawn_node, terminate, wait_exit};
use hostile_peer::{magic, FakePeer};
use ibex_p2p::addrman::file::{decode, encode};
use ibex_p2p::addrman::{
    AddressCandidate, AddressManager, AddressPolicy, AddressSource, PeerAddress,
};
use ibex_p2p::{NetworkMessage, ServiceFlags};

/// Peers that fill the outbound slots: 8 full-relay, 2 block-relay-only.
const FILLERS: usize = 10;
/// The occupant was last connected this long ago: more than Core's
/// `ADDRMAN_REPLACEMENT` (4 hours), so only a feeler can keep it.
const OCCUPANT_AGE_SECONDS: i64 = 5 * 60 * 60;
/// How long the occupant's feeler may take to come: 10 slots at one
/// connection per 500 ms round, then feelers about every second.
const FEELER_WAIT: Duration = Duration::from_secs(60);
/// How long one visit to the occupant may take.
const VISIT_WAIT: Duration = Duration::from_secs(10);

fn now_seconds() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64
}

fn loopback_listener() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").unwrap()
}

fn peer_address(listener: &TcpListener) -> PeerAddress {
    PeerAddress::from_socket_address(listener.local_addr().unwrap())
}

/// A peer that accepts one connection, completes the handshake and stays
/// connected, answering pings, until the node closes it.
fn keep_connected(listener: TcpListener) {
    std::thread::spawn(move || {
        let mut peer = FakePeer::accept(&listener);
        peer.handshake(0, false);
        while !peer.closed_within(Duration::from_secs(1)) {}
    });
}

/// What the occupant saw of one connection from the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Visit {
    /// The node sent its `version`.
    version_received: bool,
    /// The node closed the connection after ours (a feeler's job done).
    closed_by_node: bool,
}

/// How the occupant meets a feeler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Occupant {
    /// With `version` and `verack`: it is alive.
    Answers,
    /// By hanging up once the node's `version` came: a peer that is gone
    /// or unwilling. (One that held the connection open would count as
    /// connected, which Core's opener takes as an answer.)
    HangsUp,
}

/// The occupant: meets every connection as `behaviour` says and records
/// each visit.
fn receive_visits(listener: TcpListener, behaviour: Occupant) -> Arc<Mutex<Vec<Visit>>> {
    let visits = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&visits);
    std::thread::spawn(move || loop {
        let mut peer = FakePeer::accept(&listener);
        let started = Instant::now();
        let mut version_received = false;
        while !version_received && started.elapsed() < VISIT_WAIT {
            match peer.receive() {
                Ok(Some(NetworkMessage::Version(_))) => version_received = true,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        if behaviour == Occupant::HangsUp {
            drop(peer);
            recorded.lock().unwrap().push(Visit { version_received, closed_by_node: false });
            continue;
        }
        if version_received {
            let _ = peer.send(&hostile_peer::version(0));
            let _ = peer.send(&NetworkMessage::Verack);
        }
        let closed_by_node = version_received && peer.closed_within(VISIT_WAIT);
        recorded.lock().unwrap().push(Visit { version_received, closed_by_node });
    });
    visits
}

/// A loopback address on a free port that takes `occupant`'s tried slot
/// in `manager` (the slot hangs on the secret bucket key, so the search
/// is the attacker's best case: it knows the key).
fn colliding_listener(manager: &AddressManager, occupant: &PeerAddress) -> TcpListener {
    for _ in 0..1_000 {
        let port = loopback_listener().local_addr().unwrap().port();
        for host in 1..=u16::MAX {
            let [high, low] = host.to_be_bytes();
            let ip = Ipv4Addr::new(127, 20, high, low);
            let candidate = PeerAddress::from_socket_address(SocketAddr::from((ip, port)));
            if manager.shares_tried_slot(&candidate, occupant) {
                if let Ok(listener) = TcpListener::bind((ip, port)) {
                    return listener;
                }
            }
        }
    }
    panic!("no loopback address collides with the occupant's tried slot");
}

/// The addresses a run plays with and what it leaves on disk.
struct Outcome {
    occupant: PeerAddress,
    attacker: PeerAddress,
    visits: Vec<Visit>,
    /// The address manager as the node saved it at its clean stop.
    saved: AddressManager,
    /// When the address file was written, seconds since the epoch.
    started_seconds: i64,
}

/// Writes the address file (fillers, the occupant), starts `ibexd` with
/// the attacker as `-addnode` under `-test=fastfeelers`, waits until the
/// occupant has seen a visit that `done` accepts, lets two more seconds
/// of rounds pass and stops the node cleanly.
fn run(behaviour: Occupant, done: fn(&Visit) -> bool) -> Outcome {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("node");
    std::fs::create_dir_all(datadir.join("regtest")).unwrap();
    let policy = AddressPolicy { loopback_allowed: true };
    let mut manager = AddressManager::new(policy, &[7; 32]);
    let now = now_seconds();

    // Loopback addresses share a group, so their new-table slots differ
    // only by port: two random ports may take one slot (the second add
    // is refused, as Core's `AddressManager::Add` keeps the first). Such
    // a filler is replaced by another, so all ten are in the file.
    let mut fillers: Vec<TcpListener> = Vec::with_capacity(FILLERS);
    for _ in 0..FILLERS * 10 {
        if fillers.len() == FILLERS {
            break;
        }
        let listener = loopback_listener();
        let candidate = AddressCandidate {
            address: peer_address(&listener),
            services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
            time_seconds: now - 60 * 60,
        };
        if manager.add(&[candidate], AddressSource::named("test"), 0, now) == 1 {
            fillers.push(listener);
        }
    }
    assert_eq!(fillers.len(), FILLERS);

    // The occupant offers only NODE_NETWORK_LIMITED, so only a feeler
    // (never a full-relay or block-relay-only slot) connects to it.
    let occupant_listener = loopback_listener();
    let occupant = peer_address(&occupant_listener);
    let limited = ServiceFlags::NETWORK_LIMITED;
    let heard_seconds = now - OCCUPANT_AGE_SECONDS;
    let occupant_candidate =
        AddressCandidate { address: occupant, services: limited, time_seconds: heard_seconds };
    assert_eq!(manager.add(&[occupant_candidate], AddressSource::named("test"), 0, now), 1);
    manager.mark_good(&occupant, limited, heard_seconds);
    assert!(manager.info(&occupant).unwrap().tried);

    let attacker_listener = colliding_listener(&manager, &occupant);
    let attacker = peer_address(&attacker_listener);
    let attacker_socket = attacker_listener.local_addr().unwrap();
    let peers_file = datadir.join("regtest").join("ibex_peers.dat");
    std::fs::write(&peers_file, encode(&manager, magic())).unwrap();

    for listener in fillers {
        keep_connected(listener);
    }
    keep_connected(attacker_listener);
    let visits = receive_visits(occupant_listener, behaviour);

    let add_node = format!("-addnode={attacker_socket}");
    let options = [
        "-listen=0",
        "-server=0",
        "-v2transport=0",
        "-dnsseed=0",
        "-fixedseeds=0",
        add_node.as_str(),
        "-test=fastfeelers",
    ];
    let mut node = spawn_node(&mut quiet_ibexd(&datadir, &common::REGTEST_QUIET, &options));
    let started = Instant::now();
    while !visits.lock().unwrap().iter().any(done) {
        assert!(node.try_wait().unwrap().is_none(), "ibexd ended\n{}", log_or_empty(&datadir));
        assert!(
            started.elapsed() < FEELER_WAIT,
            "no feeler tested the occupant: {:?}\n{}",
            visits.lock().unwrap(),
            log_or_empty(&datadir)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Rounds after the feeler settle (or keep waiting on) the collision.
    std::thread::sleep(Duration::from_secs(2));
    terminate(&node);
    let status = wait_exit(&mut node, &datadir);
    assert!(status.success(), "{status:?}\n{}", log_or_empty(&datadir));

    let visits = visits.lock().unwrap().clone();
    let bytes = std::fs::read(&peers_file).unwrap();
    let saved = decode(&bytes, magic(), policy, &[1; 32]).unwrap().manager;
    Outcome { occupant, attacker, visits, saved, started_seconds: now }
}

#[test]
fn a_tried_address_that_answers_its_feeler_keeps_its_slot() {
    let outcome = run(Occupant::Answers, |visit| visit.closed_by_node);
    let Outcome { occupant, attacker, visits, saved, started_seconds } = outcome;
    assert!(
        visits.iter().all(|visit| visit.version_received && visit.closed_by_node),
        "every connection to the occupant was a feeler: {visits:?}"
    );
    let occupant_saved = saved.info(&occupant).expect("the occupant is kept");
    assert!(occupant_saved.tried, "the occupant keeps its tried slot: {occupant_saved:?}");
    assert!(
        occupant_saved.last_success_seconds >= started_seconds,
        "the feeler's answer counts as a success: {occupant_saved:?}"
    );
    let attacker_saved = saved.info(&attacker).expect("the attacker's address waits in new");
    assert!(!attacker_saved.tried, "the attacker did not take the slot: {attacker_saved:?}");
    assert!(attacker_saved.last_success_seconds >= started_seconds, "the attacker did connect");
}

/// An occupant that fails its feeler is not pushed out at once either: the
/// attacker's address waits while the feeler has its minute (Core gives a
/// failed test 60 seconds before it replaces the occupant). Without
/// test-before-evict the attacker's handshake would have moved it out
/// before any feeler, and a feeler it fails would not bring it back.
#[test]
fn a_tried_address_is_not_displaced_before_its_feeler_has_its_minute() {
    let outcome = run(Occupant::HangsUp, |visit| visit.version_received);
    let Outcome { occupant, attacker, saved, started_seconds, .. } = outcome;
    let occupant_saved = saved.info(&occupant).expect("the occupant is kept");
    assert!(occupant_saved.tried, "the occupant keeps its slot meanwhile: {occupant_saved:?}");
    assert!(
        occupant_saved.last_success_seconds < started_seconds,
        "a feeler hung up on is no success: {occupant_saved:?}"
    );
    let attacker_saved = saved.info(&attacker).expect("the attacker's address waits in new");
    assert!(!attacker_saved.tried, "the attacker did not take the slot: {attacker_saved:?}");
}
