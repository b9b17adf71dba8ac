//! `-whitelist` permissions at the networking layer, played by peers from
//! distinct 127.x.y.z hosts: a `noban` peer comes in while its address is
//! banned (Core's `CreateNodeFromAcceptedSocket`), is never evicted (Core's
//! `AttemptToEvictConnection`), and is not disconnected for a message Core
//! punishes (Core's `MaybeDiscourageAndDisconnect`), while a peer without
//! it is refused, evictable and disconnected; `getpeerinfo`'s
//! permissions are Core's names.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use ibex_p2p::net::whitelist::Whitelist;
use ibex_p2p::net::{
    BanReason, DisconnectReason, EvictionGrouping, NetworkEvent, NetworkEvents, PeerPermissions,
};
use ibex_p2p::sync::PeerId;
use ibex_p2p::{Inventory, InventoryType, NetworkMessage};
use ibex_primitives::Hash256;
use net_support::{config, start, wait_for, within, FakePeer};

/// `noban` hosts: 127.0.0.0/16. Everyone else: another /16.
fn noban_host(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, (index / 200) as u8, (index % 200 + 2) as u8)
}

fn whitelisted_config(inbound_max: usize) -> ibex_p2p::net::NetworkConfig {
    let mut settings = config(false);
    settings.inbound_connections_max = inbound_max;
    settings.eviction_grouping = EvictionGrouping::LoopbackBySlash16;
    let entries = ["noban@127.0.0.0/16".to_owned(), "addr,bloom@127.3.0.0/16".to_owned()];
    settings.whitelist = Whitelist::parse(&entries).unwrap();
    settings
}

/// Connects from `host`, completes the handshake; returns the peer and
/// its id.
async fn join(
    listen: SocketAddr,
    host: Ipv4Addr,
    events: &mut NetworkEvents,
) -> (FakePeer, PeerId) {
    let mut peer = FakePeer::connect_from(listen, host).await;
    peer.handshake().await;
    let id = wait_for(events, |event| match event {
        NetworkEvent::PeerConnected { id, .. } => Some(id),
        _ => None,
    })
    .await;
    (peer, id)
}

/// The reason the next refused or closed connection gives.
async fn next_close(events: &mut NetworkEvents) -> DisconnectReason {
    wait_for(events, |event| match event {
        NetworkEvent::ConnectionClosed { reason, .. } => Some(reason),
        NetworkEvent::PeerDisconnected { reason, .. } => Some(reason),
        _ => None,
    })
    .await
}

fn inventory(count: usize) -> NetworkMessage {
    let entry = Inventory { inventory_type: InventoryType::BLOCK, hash: Hash256([9; 32]) };
    NetworkMessage::Inventory(vec![entry; count])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noban_peer_comes_in_banned_and_is_never_evicted() {
    within(Duration::from_secs(25), async {
        // 30 slots: Core's protections keep 20 and half the other 10, so
        // 30 ordinary peers would leave 5 to evict.
        let inbound_max = 30;
        let (handle, mut events, listen) = start(whitelisted_config(inbound_max)).await;
        let banned_noban = noban_host(0);
        let banned_other = Ipv4Addr::new(127, 6, 0, 1);
        for host in [banned_noban, banned_other] {
            handle.ban(IpAddr::V4(host), BanReason::Manual, Duration::from_secs(600));
        }
        let mut refused = FakePeer::connect_from(listen, banned_other).await;
        assert!(refused.is_closed_within(Duration::from_secs(3)).await);
        let reason = next_close(&mut events).await;
        assert!(matches!(reason, DisconnectReason::RefusedBanned { .. }), "{reason}");

        let mut noban = Vec::new();
        for index in 0..inbound_max {
            noban.push(join(listen, noban_host(index), &mut events).await);
        }
        assert_eq!(handle.peer_count(), inbound_max, "the banned noban host came in too");
        let peers = handle.peers();
        assert!(peers.iter().all(|peer| peer.permissions.names() == ["noban", "download"]));

        // Every slot held by `noban` peers: nobody can be evicted.
        let mut newcomer = FakePeer::connect_from(listen, Ipv4Addr::new(127, 1, 0, 1)).await;
        assert!(newcomer.is_closed_within(Duration::from_secs(3)).await, "refused");
        let reason = next_close(&mut events).await;
        assert!(matches!(reason, DisconnectReason::RefusedFull { .. }), "{reason}");
        assert_eq!(handle.peer_count(), inbound_max);
        for (index, (peer, _)) in noban.iter_mut().enumerate() {
            assert!(peer.ping_pong(index as u64).await, "noban peer {index} kept its slot");
        }
        handle.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_counts_its_protections_among_peers_without_noban() {
    within(Duration::from_secs(25), async {
        let inbound_max = 30;
        let (handle, mut events, listen) = start(whitelisted_config(inbound_max)).await;
        // 29 noban peers and one ordinary: only the ordinary one is a
        // candidate; a second ordinary peer cannot get in, as the only
        // candidate is protected (Core counts protections among the
        // candidates only).
        let mut noban = Vec::new();
        for index in 0..inbound_max - 1 {
            noban.push(join(listen, noban_host(index), &mut events).await.0);
        }
        let (mut ordinary, _) = join(listen, Ipv4Addr::new(127, 3, 0, 1), &mut events).await;
        let mut newcomer = FakePeer::connect_from(listen, Ipv4Addr::new(127, 4, 0, 1)).await;
        assert!(newcomer.is_closed_within(Duration::from_secs(3)).await);
        let reason = next_close(&mut events).await;
        assert!(matches!(reason, DisconnectReason::RefusedFull { .. }), "{reason}");
        assert!(ordinary.ping_pong(1).await);
        let permissions: Vec<PeerPermissions> =
            handle.peers().iter().map(|peer| peer.permissions).collect();
        let ordinary_permissions = PeerPermissions::ADDR | PeerPermissions::BLOOM_FILTER;
        assert_eq!(
            permissions.iter().filter(|&&permission| permission == ordinary_permissions).count(),
            1
        );
        assert_eq!(ordinary_permissions.names(), ["bloomfilter", "addr"]);
        handle.shutdown();
    })
    .await;
}

/// Core's `MaybeDiscourageAndDisconnect`: an `inv` over 50,000 entries
/// disconnects an ordinary peer; a `noban` peer's is dropped and it stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noban_peer_is_not_disconnected_for_a_message_core_punishes() {
    within(Duration::from_secs(15), async {
        let (handle, mut events, listen) = start(whitelisted_config(10)).await;
        let (mut noban, _) = join(listen, noban_host(1), &mut events).await;
        let (mut ordinary, ordinary_id) =
            join(listen, Ipv4Addr::new(127, 5, 0, 1), &mut events).await;

        noban.send(&inventory(50_001)).await;
        ordinary.send(&inventory(50_001)).await;
        let (id, reason) = wait_for(&mut events, |event| match event {
            NetworkEvent::PeerDisconnected { id, reason } => Some((id, reason)),
            _ => None,
        })
        .await;
        assert_eq!(id, ordinary_id);
        assert_eq!(reason.to_string(), "Misbehaving: inv message size = 50001");
        assert!(ordinary.is_closed_within(Duration::from_secs(3)).await);
        assert!(noban.ping_pong(5).await, "the noban peer stays connected");
        noban.send(&inventory(2)).await;
        let forwarded = wait_for(&mut events, |event| match event {
            NetworkEvent::Message { message, .. } => Some(message),
            _ => None,
        })
        .await;
        assert_eq!(forwarded, inventory(2), "and is still served");
        assert_eq!(handle.peer_count(), 1);
        handle.shutdown();
    })
    .await;
}

mod addresses {
    //! The `addr` permission (Core's `NetPermissionFlags::Addr`): no rate
    //! limit on `addr` entries, and `getaddr` answered from a fresh sample
    //! that leaves the cached answer to everyone else.

    use std::net::{Ipv4Addr, SocketAddr};
    use std::sync::Arc;
    use std::time::Duration;

    use ibex_p2p::addrman::{
        AddressBook, AddressCandidate, AddressManager, AddressPolicy, AddressSource, NetworkSet,
        PeerAddress,
    };
    use ibex_p2p::messages::address::AddressEntry;
    use ibex_p2p::net::whitelist::Whitelist;
    use ibex_p2p::net::AddressSettings;
    use ibex_p2p::{NetworkMessage, ServiceFlags};

    use super::net_support::{config, start, within, FakePeer, PATIENCE};

    const FULL_NODE: ServiceFlags = ServiceFlags::from_bits(1 | 8);
    const ADDR_HOST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 9);

    fn now_seconds() -> i64 {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        i64::try_from(since.as_secs()).unwrap()
    }

    /// `count` routable addresses, each in its own /16.
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

    /// A listener whose address manager holds `known`; `addr` for
    /// [`ADDR_HOST`] only.
    async fn node(known: &[AddressCandidate]) -> (Arc<AddressBook>, SocketAddr, Running) {
        let mut manager = AddressManager::new(AddressPolicy { loopback_allowed: true }, &[3; 32]);
        for (index, chunk) in known.chunks(known.len().div_ceil(8).max(1)).enumerate() {
            manager.add(chunk, AddressSource::named(&format!("source {index}")), 0, now_seconds());
        }
        let book = Arc::new(AddressBook::new(manager));
        let mut settings = config(false);
        settings.addresses = Some(AddressSettings {
            book: Arc::clone(&book),
            stored_networks: NetworkSet::ALL,
            discovery: None,
        });
        settings.whitelist = Whitelist::parse(&[format!("addr@{ADDR_HOST}")]).unwrap();
        let (handle, events, listen) = start(settings).await;
        (book, listen, (handle, events))
    }

    /// The layer, kept running while held.
    type Running = (ibex_p2p::net::NetworkHandle, ibex_p2p::net::NetworkEvents);

    async fn joined(listen: SocketAddr, host: Ipv4Addr) -> FakePeer {
        let mut peer = FakePeer::connect_from(listen, host).await;
        peer.handshake().await;
        peer
    }

    /// Reads until a pong for `nonce`; returns the `addr` entries seen.
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

    /// One `getaddr`'s answer, as sorted addresses.
    async fn getaddr(listen: SocketAddr, host: Ipv4Addr) -> Vec<String> {
        let mut peer = joined(listen, host).await;
        peer.send(&NetworkMessage::GetAddress).await;
        let answers = addresses_until_pong(&mut peer, 1).await;
        assert_eq!(answers.len(), 1, "one answer to {host}");
        let mut addresses: Vec<String> =
            answers[0].iter().map(|entry| format!("{:?}", entry.address)).collect();
        addresses.sort();
        addresses
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_addr_peer_is_answered_uncached_and_the_cache_stays() {
        within(Duration::from_secs(20), async {
            let (book, listen, _running) = node(&routable(200)).await;
            let cached = getaddr(listen, Ipv4Addr::new(127, 0, 0, 2)).await;
            assert_eq!(cached.len(), book.len() * 23 / 100, "Core's share either way");
            assert_eq!(getaddr(listen, Ipv4Addr::new(127, 0, 0, 3)).await, cached, "cached");
            let fresh = getaddr(listen, ADDR_HOST).await;
            assert_eq!(fresh.len(), cached.len());
            let again = getaddr(listen, ADDR_HOST).await;
            assert!(fresh != cached || again != cached, "the addr peer got the cached answer");
            assert_eq!(getaddr(listen, Ipv4Addr::new(127, 0, 0, 4)).await, cached, "kept");
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
    async fn an_addr_peer_is_not_rate_limited() {
        within(Duration::from_secs(20), async {
            let (book, listen, _running) = node(&[]).await;
            let mut ordinary = joined(listen, Ipv4Addr::new(127, 0, 0, 2)).await;
            ordinary.send(&flood(1000)).await;
            addresses_until_pong(&mut ordinary, 3).await;
            assert_eq!(book.len(), 1, "one token: one address of the thousand");
            let mut permitted = joined(listen, ADDR_HOST).await;
            permitted.send(&flood(1000)).await;
            addresses_until_pong(&mut permitted, 4).await;
            assert!(book.len() > 500, "{} of 1,000 kept from the addr peer", book.len());
            assert!(permitted.ping_pong(5).await);
        })
        .await;
    }
}
