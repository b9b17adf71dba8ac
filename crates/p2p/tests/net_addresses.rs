//! The address manager on the wire, over loopback: `getaddr` answered once
//! per inbound peer, an unsolicited flood rate-limited, an `addr` of 1,001
//! entries punished, a `-seednode` asked for addresses then left, the
//! outbound slots filled from the address manager (full-relay, then
//! block-relay-only, distinct groups, `-onlynet`), a feeler, and the fixed
//! seeds fallback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ibex_p2p::addrman::{
    AddressBook, AddressCandidate, AddressManager, AddressNetwork, AddressPolicy, AddressSource,
    NetworkSet, PeerAddress,
};
use ibex_p2p::messages::address::AddressEntry;
use ibex_p2p::net::{
    AddressSettings, ConnectionType, DisconnectReason, DiscoveryConfig, LogSink, NetworkConfig,
    NetworkEvent, NetworkEvents, NetworkHandle,
};
use ibex_p2p::{MessageError, NetworkMessage, ServiceFlags};
use ibex_primitives::params::Network;
use net_support::{config, start, wait_for, within, FakePeer, PATIENCE};

const REGTEST: AddressPolicy = AddressPolicy { loopback_allowed: true };
const FULL_NODE: ServiceFlags = ServiceFlags::from_bits(1 | 8);
const LIMIT: Duration = Duration::from_secs(20);

fn now_seconds() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(since.as_secs()).unwrap()
}

/// `count` routable addresses, each in its own /16, from 8 named sources.
fn routable(count: u32) -> Vec<AddressCandidate> {
    (0..count)
        .map(|index| {
            let ip = Ipv4Addr::new(20 + (index / 200) as u8, (index % 200) as u8, 7, 9);
            AddressCandidate {
                address: PeerAddress::from_socket_address(SocketAddr::from((ip, 8333))),
                services: FULL_NODE,
                time_seconds: now_seconds() - 3600,
            }
        })
        .collect()
}

fn book(candidates: &[AddressCandidate]) -> Arc<AddressBook> {
    let mut manager = AddressManager::new(REGTEST, &[3; 32]);
    for (index, chunk) in candidates.chunks(candidates.len().div_ceil(8).max(1)).enumerate() {
        manager.add(chunk, AddressSource::named(&format!("source {index}")), 0, now_seconds());
    }
    Arc::new(AddressBook::new(manager))
}

fn loopback_candidate(address: SocketAddr) -> AddressCandidate {
    AddressCandidate {
        address: PeerAddress::from_socket_address(address),
        services: FULL_NODE,
        time_seconds: now_seconds() - 3600,
    }
}

/// Discovery with no slots, no seeds, no feelers: tests switch on what
/// they look at, with rounds every 50 ms.
fn quiet_discovery() -> DiscoveryConfig {
    let mut discovery = DiscoveryConfig::new(Network::Regtest, 18444);
    discovery.full_relay_slots = 0;
    discovery.block_relay_slots = 0;
    discovery.feelers = false;
    discovery.dns_seeds = None;
    discovery.fixed_seeds = None;
    discovery.timing.open_interval = Duration::from_millis(50);
    discovery
}

/// A log that keeps its lines for the test to read.
fn captured_log() -> (LogSink, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&lines);
    (LogSink::new(move |line| kept.lock().unwrap().push(line.to_owned())), lines)
}

fn with_book(
    mut config: NetworkConfig,
    book: &Arc<AddressBook>,
    discovery: Option<DiscoveryConfig>,
) -> NetworkConfig {
    config.addresses = Some(AddressSettings {
        book: Arc::clone(book),
        stored_networks: NetworkSet::ALL,
        discovery,
    });
    config
}

/// A node that connects out only (no listener).
async fn start_connector(config: NetworkConfig) -> (NetworkHandle, NetworkEvents) {
    let mut config = config;
    config.listen = None;
    ibex_p2p::net::start(config).await.unwrap()
}

async fn wait_connected_as(events: &mut NetworkEvents) -> (SocketAddr, ConnectionType) {
    wait_for(events, |event| match event {
        NetworkEvent::PeerConnected { address, connection, .. } => Some((address, connection)),
        _ => None,
    })
    .await
}

/// Reads messages until a pong for `nonce`; returns the `addr` entries
/// seen on the way.
async fn addresses_until_pong(peer: &mut FakePeer, nonce: u64) -> Vec<Vec<AddressEntry>> {
    peer.send(&NetworkMessage::Ping { nonce }).await;
    let mut seen = Vec::new();
    loop {
        match peer.receive(PATIENCE).await.expect("messages until the pong") {
            NetworkMessage::Address(entries) => seen.push(entries),
            NetworkMessage::Pong { nonce: Some(received) } if received == nonce => return seen,
            NetworkMessage::Ping { nonce } => {
                peer.send(&NetworkMessage::Pong { nonce: Some(nonce) }).await
            }
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inbound_getaddr_is_answered_once() {
    within(LIMIT, async {
        let book = book(&routable(200));
        let (_handle, _events, address) = start(with_book(config(false), &book, None)).await;
        let mut peer = FakePeer::connect(address).await;
        peer.handshake().await;
        peer.send(&NetworkMessage::GetAddress).await;
        let answers = addresses_until_pong(&mut peer, 1).await;
        assert_eq!(answers.len(), 1, "one addr answer");
        // Core's share: 23 % of those known, as v1 entries (no sendaddrv2).
        assert!(book.len() > 150);
        assert_eq!(answers[0].len(), book.len() * 23 / 100);
        for entry in &answers[0] {
            let known = book.lock().info(&PeerAddress::from_v1(&entry.address));
            assert!(known.is_some(), "{entry:?} is from the book");
        }
        peer.send(&NetworkMessage::GetAddress).await;
        assert!(addresses_until_pong(&mut peer, 2).await.is_empty(), "a repeat is ignored");
    })
    .await;
}

fn flood(count: u32) -> NetworkMessage {
    let entries = routable(count)
        .iter()
        .map(|candidate| AddressEntry {
            time_seconds: u32::try_from(now_seconds()).unwrap(),
            address: candidate.address.to_v1(FULL_NODE).unwrap(),
        })
        .collect();
    NetworkMessage::Address(entries)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsolicited_flood_is_rate_limited() {
    within(LIMIT, async {
        let book = book(&[]);
        let (_handle, _events, address) = start(with_book(config(false), &book, None)).await;
        let mut peer = FakePeer::connect(address).await;
        peer.handshake().await;
        peer.send(&flood(1000)).await;
        // The pong comes after the addr was handled.
        addresses_until_pong(&mut peer, 3).await;
        // One token to start with: one address of the thousand is kept.
        assert_eq!(book.len(), 1);
        assert!(peer.ping_pong(4).await, "a full message is no misbehaviour");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_addr_of_1001_entries_is_punished() {
    within(LIMIT, async {
        let book = book(&[]);
        let (_handle, mut events, address) = start(with_book(config(false), &book, None)).await;
        let mut peer = FakePeer::connect(address).await;
        peer.handshake().await;
        peer.send(&flood(1001)).await;
        let (reason, _) = net_support::wait_closed(&mut events).await;
        let DisconnectReason::MessageRejected(MessageError::TooMany { count, limit, .. }) = &reason
        else {
            panic!("closed for {reason}");
        };
        assert_eq!((*count, *limit), (1001, 1000));
        assert_eq!(reason.to_string(), "Misbehaving: addr message size = 1001");
        assert!(peer.is_closed_within(PATIENCE).await);
        assert!(book.is_empty(), "nothing of it was kept");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seed_node_is_asked_for_addresses_then_left() {
    within(LIMIT, async {
        let seed_book = book(&routable(200));
        let (_seed, _seed_events, seed_address) =
            start(with_book(config(true), &seed_book, None)).await;
        let learner_book = Arc::new(AddressBook::new(AddressManager::new(REGTEST, &[4; 32])));
        let mut discovery = quiet_discovery();
        discovery.seed_nodes = vec![seed_address.to_string()];
        let (log, lines) = captured_log();
        let mut learner_config = with_book(config(true), &learner_book, Some(discovery));
        learner_config.log = log;
        let (_learner, mut events) = start_connector(learner_config).await;
        let (address, connection) = wait_connected_as(&mut events).await;
        assert_eq!((address, connection), (seed_address, ConnectionType::AddressFetch));
        let (reason, connected) = net_support::wait_closed(&mut events).await;
        assert!(connected);
        assert_eq!(reason, DisconnectReason::AddressFetchDone);
        // 23 % of the seed's addresses (less the few that collide in the
        // learner's buckets: they all come from one source), and the seed
        // itself (it answered).
        let answered = seed_book.len() * 23 / 100;
        assert!(answered > 30);
        let learned = learner_book.len();
        assert!((answered - 5..=answered + 1).contains(&learned), "{learned} of {answered}");
        let seed_info = learner_book.lock().info(&PeerAddress::from_socket_address(seed_address));
        assert!(seed_info.is_some_and(|info| info.tried));
        let lines = lines.lock().unwrap().clone();
        let queued = format!("Empty addrman, adding seednode ({seed_address}) to addrfetch");
        assert!(lines.contains(&queued), "{lines:?}");
        assert!(lines.iter().any(|line| line == "opencon thread start"), "{lines:?}");
        assert!(lines.iter().any(|line| line == "DNS seeding disabled"), "{lines:?}");
    })
    .await;
}

/// `count` listening layers without an address manager.
async fn listeners(count: usize) -> Vec<(NetworkHandle, NetworkEvents, SocketAddr)> {
    let mut started = Vec::new();
    for _ in 0..count {
        started.push(start(config(true)).await);
    }
    started
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbound_slots_fill_from_the_address_manager() {
    within(LIMIT, async {
        let targets = listeners(4).await;
        let candidates: Vec<AddressCandidate> =
            targets.iter().map(|(_, _, address)| loopback_candidate(*address)).collect();
        let book = book(&candidates);
        let mut discovery = quiet_discovery();
        discovery.full_relay_slots = 2;
        discovery.block_relay_slots = 1;
        let (_connector, mut events) =
            start_connector(with_book(config(true), &book, Some(discovery))).await;
        let mut seen = Vec::new();
        for _ in 0..3 {
            seen.push(wait_connected_as(&mut events).await);
        }
        let full = seen.iter().filter(|(_, kind)| *kind == ConnectionType::OutboundFullRelay);
        assert_eq!(full.count(), 2, "{seen:?}");
        let block = seen.iter().filter(|(_, kind)| *kind == ConnectionType::BlockRelay);
        assert_eq!(block.count(), 1, "{seen:?}");
        let mut addresses: Vec<SocketAddr> = seen.iter().map(|(address, _)| *address).collect();
        addresses.sort();
        addresses.dedup();
        assert_eq!(addresses.len(), 3, "three distinct peers: {seen:?}");
        // The slots are full: no fourth connection.
        let fourth =
            tokio::time::timeout(Duration::from_millis(600), wait_connected_as(&mut events));
        assert!(fourth.await.is_err());
        for (address, _) in &seen {
            let info = book.lock().info(&PeerAddress::from_socket_address(*address));
            assert!(info.is_some_and(|info| info.tried), "{address} marked good");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onlynet_keeps_the_opener_off_other_networks() {
    within(LIMIT, async {
        let targets = listeners(1).await;
        let book = book(&[loopback_candidate(targets[0].2)]);
        let mut discovery = quiet_discovery();
        discovery.full_relay_slots = 8;
        discovery.dialed_networks = NetworkSet::of(&[AddressNetwork::Ipv6]);
        let (_connector, mut events) =
            start_connector(with_book(config(true), &book, Some(discovery))).await;
        let connected =
            tokio::time::timeout(Duration::from_secs(1), wait_connected_as(&mut events));
        assert!(connected.await.is_err(), "an IPv4 address was dialed under -onlynet=ipv6");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feeler_tests_a_new_address_and_leaves() {
    within(LIMIT, async {
        let targets = listeners(1).await;
        let target = targets[0].2;
        let book = book(&[loopback_candidate(target)]);
        let mut discovery = quiet_discovery();
        discovery.feelers = true;
        discovery.timing.feeler_interval = Duration::from_millis(100);
        let (_connector, mut events) =
            start_connector(with_book(config(true), &book, Some(discovery))).await;
        let reason = wait_for(&mut events, |event| match event {
            NetworkEvent::ConnectionClosed { reason, address, .. } if address == target => {
                Some(reason)
            }
            NetworkEvent::PeerConnected { .. } => panic!("a feeler is never a peer"),
            _ => None,
        })
        .await;
        assert_eq!(reason, DisconnectReason::FeelerDone);
        let info = book.lock().info(&PeerAddress::from_socket_address(target));
        assert!(info.is_some_and(|info| info.tried && info.attempts == 0));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_seeds_are_the_last_resort() {
    within(LIMIT, async {
        let targets = listeners(1).await;
        let target = targets[0].2;
        let book = Arc::new(AddressBook::new(AddressManager::new(REGTEST, &[5; 32])));
        let mut discovery = quiet_discovery();
        discovery.full_relay_slots = 1;
        discovery.fixed_seeds = Some(vec![target]);
        let (log, lines) = captured_log();
        let mut connector_config = with_book(config(true), &book, Some(discovery));
        connector_config.log = log;
        let (_connector, mut events) = start_connector(connector_config).await;
        let (address, connection) = wait_connected_as(&mut events).await;
        assert_eq!((address, connection), (target, ConnectionType::OutboundFullRelay));
        let lines = lines.lock().unwrap().clone();
        assert!(lines.iter().any(|line| line.starts_with("Adding fixed seeds as -dnsseed=0")));
        assert!(lines.contains(&"Added 1 fixed seeds from reachable networks.".to_owned()));
    })
    .await;
}
