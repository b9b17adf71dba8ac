//! Test-before-evict over loopback (Core's `SelectTriedCollision` and
//! `ResolveCollisions` in `ThreadOpenConnections`): an attacker's address
//! that connected and collides with a good tried entry does not displace
//! it. The layer's feeler tests the occupant: one that answers stays;
//! one whose feeler fails is replaced once the feeler's minute is over.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibex_p2p::addrman::{AddressBook, AddressManager, AddressPolicy, NetworkSet, PeerAddress};
use ibex_p2p::net::{
    AddressSettings, DisconnectReason, DiscoveryConfig, NetworkEvent, NetworkEvents, NetworkHandle,
};
use ibex_p2p::ServiceFlags;
use ibex_primitives::params::Network;
use net_support::{config, start, wait_for, within, PATIENCE};

const REGTEST: AddressPolicy = AddressPolicy { loopback_allowed: true };
const FULL_NODE: ServiceFlags = ServiceFlags::from_bits(1 | 8);
const SEED: [u8; 32] = [21; 32];
const HOUR_SECONDS: i64 = 3600;

fn now_seconds() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(since.as_secs()).unwrap()
}

fn peer_address(ip: Ipv4Addr, port: u16) -> PeerAddress {
    PeerAddress::from_socket_address(SocketAddr::from((ip, port)))
}

/// An attacker's loopback address whose tried slot is `good`'s, found by
/// probing managers with the book's key: the first whose `mark_good`
/// queues a collision with `good`. Loopback addresses with one port share
/// a group on regtest (8 tried buckets, one new bucket), so about one in
/// 512 collides; a probe is replaced before the group's slots fill.
fn colliding_address(good: PeerAddress, port: u16) -> PeerAddress {
    let now = now_seconds();
    let fresh_probe = || {
        let mut probe = AddressManager::new(REGTEST, &SEED);
        probe.mark_good(&good, FULL_NODE, now);
        probe
    };
    let mut probe = fresh_probe();
    for index in 2..=u16::MAX {
        if probe.len() > 256 {
            probe = fresh_probe();
        }
        let [high, low] = index.to_be_bytes();
        let candidate = peer_address(Ipv4Addr::new(127, 0, high, low), port);
        probe.mark_good(&candidate, FULL_NODE, now);
        if probe.tried_collisions() == 0 {
            continue;
        }
        if probe.select_tried_collision().map(|selected| selected.address) == Some(good) {
            return candidate;
        }
        // It collided with an earlier candidate: let it take that slot.
        probe.resolve_collisions(now + HOUR_SECONDS);
    }
    panic!("no colliding loopback address");
}

/// A book whose tried table holds `good` (last connected 5 hours ago)
/// and whose queue holds the attacker's colliding address.
fn book_with_collision(good: PeerAddress, attacker: PeerAddress) -> Arc<AddressBook> {
    let mut manager = AddressManager::new(REGTEST, &SEED);
    let now = now_seconds();
    manager.mark_good(&good, FULL_NODE, now - 5 * HOUR_SECONDS);
    manager.mark_good(&attacker, FULL_NODE, now);
    assert_eq!(manager.tried_collisions(), 1);
    assert!(manager.info(&good).is_some_and(|info| info.tried), "not displaced at once");
    Arc::new(AddressBook::new(manager))
}

/// A layer with no listener whose only automatic connections are feelers,
/// every 100 ms.
async fn start_feeler(book: &Arc<AddressBook>) -> (NetworkHandle, NetworkEvents) {
    let mut discovery = DiscoveryConfig::new(Network::Regtest, 18444);
    discovery.full_relay_slots = 0;
    discovery.block_relay_slots = 0;
    discovery.feelers = true;
    discovery.dns_seeds = None;
    discovery.fixed_seeds = None;
    discovery.timing.open_interval = Duration::from_millis(50);
    discovery.timing.feeler_interval = Duration::from_millis(100);
    let mut settings = config(true);
    settings.listen = None;
    settings.addresses = Some(AddressSettings {
        book: Arc::clone(book),
        stored_networks: NetworkSet::ALL,
        discovery: Some(discovery),
    });
    ibex_p2p::net::start(settings).await.unwrap()
}

/// Waits until `done` holds for the book.
async fn until(book: &AddressBook, what: &str, done: impl Fn(&AddressManager) -> bool) {
    let started = Instant::now();
    while !done(&book.lock()) {
        assert!(started.elapsed() < PATIENCE, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feeler_to_an_occupant_that_answers_keeps_it() {
    within(Duration::from_secs(20), async {
        let (_listener, _listener_events, good_socket) = start(config(true)).await;
        let good = PeerAddress::from_socket_address(good_socket);
        let attacker = colliding_address(good, good_socket.port());
        let book = book_with_collision(good, attacker);
        let (_handle, mut events) = start_feeler(&book).await;
        let reason = wait_for(&mut events, |event| match event {
            NetworkEvent::ConnectionClosed { address, reason, .. } if address == good_socket => {
                Some(reason)
            }
            _ => None,
        })
        .await;
        assert_eq!(reason, DisconnectReason::FeelerDone, "the feeler tested the occupant");
        until(&book, "the collision is settled", |manager| manager.tried_collisions() == 0).await;
        let manager = book.lock();
        assert!(manager.info(&good).is_some_and(|info| info.tried), "the occupant stays");
        assert!(manager.info(&attacker).is_some_and(|info| !info.tried));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_occupant_whose_feeler_fails_is_replaced_after_its_minute() {
    within(Duration::from_secs(20), async {
        // A port nobody listens on: the feeler's connect is refused.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let good = peer_address(Ipv4Addr::LOCALHOST, port);
        let attacker = colliding_address(good, port);
        let book = book_with_collision(good, attacker);
        let started = now_seconds();
        let (_handle, _events) = start_feeler(&book).await;
        until(&book, "the feeler tried the occupant", |manager| {
            manager.info(&good).is_some_and(|info| info.last_try_seconds >= started)
        })
        .await;
        {
            let mut manager = book.lock();
            manager.resolve_collisions(now_seconds());
            assert!(manager.info(&good).is_some_and(|info| info.tried), "within its minute");
            assert_eq!(manager.tried_collisions(), 1);
            manager.resolve_collisions(now_seconds() + 61);
            assert!(manager.info(&attacker).is_some_and(|info| info.tried), "replaced");
            assert!(manager.info(&good).is_some_and(|info| !info.tried), "back in new");
        }
    })
    .await;
}
