//! Inbound slots against one host's flood (Core's
//! `AttemptToEvictConnection`): an attacker holding every inbound slot
//! from one network group cannot keep an honest peer from another group
//! out, because one of its own connections is evicted; a newcomer is
//! refused only when every inbound peer is protected; a discouraged
//! address gets a free slot but is the first to go.
//!
//! One machine plays many hosts: clients bind to distinct 127.x.y.z
//! addresses, and the layer groups loopback addresses by /16
//! ([`EvictionGrouping::LoopbackBySlash16`]), as Core groups routable IPv4.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use ibex_p2p::net::{BanReason, DisconnectReason, EvictionGrouping, NetworkEvent, NetworkEvents};
use ibex_p2p::sync::PeerId;
use net_support::{config, start, wait_for, within, FakePeer};

/// The attacker's hosts: all in 127.0.0.0/16.
fn attacker_host(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, (index / 200) as u8, (index % 200 + 2) as u8)
}

/// An honest host in a group of its own (127.1 + `index`).
fn honest_host(index: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 1 + index, 0, 1)
}

/// Connects from `host` and completes the handshake; returns the peer
/// and its id.
async fn join(
    listen: SocketAddr,
    host: Ipv4Addr,
    events: &mut NetworkEvents,
) -> (FakePeer, PeerId) {
    let (peer, id, evicted) = join_evicting(listen, host, events).await;
    assert_eq!(evicted, None, "nobody is evicted while slots are free");
    (peer, id)
}

/// As [`join`], also returning the connection evicted to make room (its
/// close may come before or after the newcomer's handshake).
async fn join_evicting(
    listen: SocketAddr,
    host: Ipv4Addr,
    events: &mut NetworkEvents,
) -> (FakePeer, PeerId, Option<PeerId>) {
    let mut peer = FakePeer::connect_from(listen, host).await;
    peer.handshake().await;
    let mut evicted = None;
    let id = wait_for(events, |event| match event {
        NetworkEvent::PeerDisconnected { id, reason: DisconnectReason::Evicted } => {
            evicted = Some(id);
            None
        }
        NetworkEvent::PeerConnected { id, .. } => Some(id),
        _ => None,
    })
    .await;
    (peer, id, evicted)
}

/// The id of the connection evicted for a newcomer: already seen, or the
/// next.
async fn evicted(seen: Option<PeerId>, events: &mut NetworkEvents) -> PeerId {
    if let Some(id) = seen {
        return id;
    }
    wait_for(events, |event| match event {
        NetworkEvent::PeerDisconnected { id, reason: DisconnectReason::Evicted } => Some(id),
        _ => None,
    })
    .await
}

fn eviction_config(inbound_max: usize) -> ibex_p2p::net::NetworkConfig {
    let mut settings = config(false);
    settings.inbound_connections_max = inbound_max;
    settings.eviction_grouping = EvictionGrouping::LoopbackBySlash16;
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_from_one_group_cannot_keep_an_honest_peer_out() {
    within(Duration::from_secs(25), async {
        // Core's default: with the peers' `relay=false`, 28 are protected
        // whatever they do, and half of the other 86 by longevity.
        let inbound_max = 114;
        let (handle, mut events, listen) = start(eviction_config(inbound_max)).await;
        let mut attacker = Vec::new();
        let mut attacker_ids = HashSet::new();
        for index in 0..inbound_max {
            let (peer, id) = join(listen, attacker_host(index), &mut events).await;
            attacker.push(peer);
            attacker_ids.insert(id);
        }
        assert_eq!(handle.peer_count(), inbound_max, "the attacker holds every slot");

        // The honest peer gets in: one of the attacker's connections goes.
        let (mut honest, honest_id, seen) =
            join_evicting(listen, honest_host(0), &mut events).await;
        let gone = evicted(seen, &mut events).await;
        assert!(attacker_ids.remove(&gone), "{gone:?} is not the attacker's");

        // The attacker reconnects from fresh addresses of its group: each
        // time one of its own connections makes room, never the honest one.
        for round in 0..40 {
            let (peer, id, seen) =
                join_evicting(listen, attacker_host(200 + round), &mut events).await;
            attacker.push(peer);
            attacker_ids.insert(id);
            let gone = evicted(seen, &mut events).await;
            assert_ne!(gone, honest_id, "round {round}: the honest peer was evicted");
            assert!(attacker_ids.remove(&gone), "round {round}: {gone:?}");
        }
        assert!(honest.ping_pong(7).await, "the honest peer is still served");
        let peers = handle.peers();
        assert!(peers.len() <= inbound_max, "{} connections over the bound", peers.len());
        assert!(peers.iter().any(|peer| peer.id == honest_id));
        handle.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_is_refused_only_when_every_inbound_peer_is_protected() {
    within(Duration::from_secs(20), async {
        // 20 peers: Core protects 4 by group, 8 by ping, 4 by transaction
        // time, 4 by block time: all of them.
        let inbound_max = 20;
        let (handle, mut events, listen) = start(eviction_config(inbound_max)).await;
        let mut attacker = Vec::new();
        for index in 0..inbound_max {
            attacker.push(join(listen, attacker_host(index), &mut events).await.0);
        }
        let mut refused = FakePeer::connect_from(listen, honest_host(0)).await;
        assert!(refused.is_closed_within(Duration::from_secs(3)).await, "refused");
        let reason = wait_for(&mut events, |event| match event {
            NetworkEvent::ConnectionClosed { reason, .. } => Some(reason),
            NetworkEvent::PeerDisconnected { reason, .. } => Some(reason),
            _ => None,
        })
        .await;
        assert!(matches!(reason, DisconnectReason::RefusedFull { .. }), "{reason}");
        assert_eq!(handle.peer_count(), inbound_max);
        assert!(attacker[0].ping_pong(3).await, "nobody was evicted");
        handle.shutdown();
    })
    .await;
}

/// Core's `CreateNodeFromAcceptedSocket`: a discouraged address is
/// accepted while the inbound slots are not (almost) full, and refused
/// once they are (that it is then evicted first is
/// `eviction::tests::discouraged_peers_go_first_and_protections_come_before_them`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discouraged_address_gets_a_slot_only_while_slots_are_free() {
    within(Duration::from_secs(20), async {
        let inbound_max = 30;
        let (handle, mut events, listen) = start(eviction_config(inbound_max)).await;
        let discouraged_host = honest_host(5);
        handle.ban(IpAddr::V4(discouraged_host), BanReason::Misbehaving, Duration::from_secs(600));
        assert!(handle.is_discouraged(IpAddr::V4(discouraged_host)));
        assert!(handle.banned().is_empty(), "a discouragement is not listed as a ban");
        let (mut discouraged, _) = join(listen, discouraged_host, &mut events).await;
        let mut others = Vec::new();
        for index in 0..inbound_max - 2 {
            let host = Ipv4Addr::new(127, 10 + index as u8, 0, 1);
            others.push(join(listen, host, &mut events).await.0);
        }
        // 29 of 30 slots taken: the discouraged address is refused.
        let mut again = FakePeer::connect_from(listen, discouraged_host).await;
        assert!(again.is_closed_within(Duration::from_secs(3)).await);
        let reason = wait_for(&mut events, |event| match event {
            NetworkEvent::ConnectionClosed { reason, .. } => Some(reason),
            _ => None,
        })
        .await;
        assert!(matches!(reason, DisconnectReason::RefusedDiscouraged { .. }), "{reason}");
        // Anyone else still gets the last slot.
        let (mut last, _) = join(listen, attacker_host(0), &mut events).await;
        assert!(last.ping_pong(9).await);
        assert!(discouraged.ping_pong(10).await, "the first stays while nobody needs room");
        handle.shutdown();
    })
    .await;
}
