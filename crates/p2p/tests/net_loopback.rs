//! Two networking layers over loopback: the handshake in v2, and in v1 when
//! one side has v2 off (both directions, with Core's one v1 retry);
//! messages both ways, a 3.9 MB block byte for byte, pings answered, peer
//! info and totals; a node connecting to itself.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::time::{Duration, Instant};

use ibex_p2p::net::{DisconnectReason, NetworkEvent, NetworkEvents, NetworkHandle};
use ibex_p2p::sync::PeerId;
use ibex_p2p::{Inventory, InventoryType, NetworkMessage, ServiceFlags, TransportKind};
use ibex_primitives::Hash256;
use net_support::{config, start, wait_connected, wait_for, wait_message, within};

const BLOCK_BYTES: usize = 3_900_000;

struct Pair {
    outbound: (NetworkHandle, NetworkEvents, PeerId),
    inbound: (NetworkHandle, NetworkEvents, PeerId),
}

/// Starts a listener with `listener_v2`, then a node with `connector_v2`
/// connecting to it; waits until both see the peer connected with
/// `expected` transport.
async fn connected_pair(listener_v2: bool, connector_v2: bool, expected: TransportKind) -> Pair {
    let mut listener_config = config(listener_v2);
    listener_config.start_height = 11;
    let (listener, mut listener_events, address) = start(listener_config).await;
    let mut connector_config = config(connector_v2);
    connector_config.listen = None;
    connector_config.connect = vec![address];
    connector_config.start_height = 7;
    let (connector, mut connector_events) = ibex_p2p::net::start(connector_config).await.unwrap();

    let (outbound_id, event) = wait_connected(&mut connector_events).await;
    let NetworkEvent::PeerConnected { inbound, version, transport, address: peer_address, .. } =
        event
    else {
        unreachable!()
    };
    assert!(!inbound);
    assert_eq!(peer_address, address);
    assert_eq!(transport, expected);
    assert_eq!(version.start_height, 11, "the listener's start height");
    assert!(version.user_agent_sanitized().starts_with("/Ibex:"));
    assert!(!version.relay, "Ibex asks for no transactions");
    assert!(version.wtxid_relay && version.wants_address_v2);

    let (inbound_id, event) = wait_connected(&mut listener_events).await;
    let NetworkEvent::PeerConnected { inbound, version, transport, .. } = event else {
        unreachable!()
    };
    assert!(inbound);
    assert_eq!(transport, expected);
    assert_eq!(version.start_height, 7);
    Pair {
        outbound: (connector, connector_events, outbound_id),
        inbound: (listener, listener_events, inbound_id),
    }
}

fn block_payload() -> Vec<u8> {
    (0..BLOCK_BYTES).map(|index| (index.wrapping_mul(2_654_435_761) >> 13) as u8).collect()
}

/// The next message for the node but the `sendcmpct` each side sends
/// after `verack` (which may come before or after the test's).
async fn next_message(events: &mut NetworkEvents) -> NetworkMessage {
    loop {
        match wait_message(events).await {
            NetworkMessage::SendCompact { high_bandwidth: false, compact_blocks_version: 2 } => {
                continue
            }
            message => return message,
        }
    }
}

/// Messages both ways, then a block from the connector, byte for byte.
async fn exchange(pair: &mut Pair) -> Duration {
    let (connector, connector_events, outbound_id) = &mut pair.outbound;
    let (listener, listener_events, inbound_id) = &mut pair.inbound;
    let inventory =
        vec![Inventory { inventory_type: InventoryType::BLOCK, hash: Hash256([3; 32]) }; 1000];
    connector.send(*outbound_id, NetworkMessage::GetData(inventory.clone())).unwrap();
    assert!(next_message(listener_events).await == NetworkMessage::GetData(inventory));
    listener.send(*inbound_id, NetworkMessage::SendHeaders).unwrap();
    listener.send(*inbound_id, NetworkMessage::FeeFilter { fee_rate_sat_per_kvb: 1000 }).unwrap();
    assert_eq!(next_message(connector_events).await, NetworkMessage::SendHeaders);
    assert_eq!(
        next_message(connector_events).await,
        NetworkMessage::FeeFilter { fee_rate_sat_per_kvb: 1000 }
    );

    let block = block_payload();
    let message = NetworkMessage::Block(block.clone());
    let started = Instant::now();
    connector.send(*outbound_id, message).unwrap();
    let (received, payload_bytes) = wait_for(listener_events, |event| match event {
        NetworkEvent::Message { message: NetworkMessage::Block(bytes), payload_bytes, .. } => {
            Some((bytes, payload_bytes))
        }
        _ => None,
    })
    .await;
    let elapsed = started.elapsed();
    assert_eq!(payload_bytes, BLOCK_BYTES);
    assert!(received == block, "the block arrives byte for byte");
    elapsed
}

async fn check_info_and_pings(pair: &Pair, expected: TransportKind) {
    let (connector, _, outbound_id) = &pair.outbound;
    let (listener, _, inbound_id) = &pair.inbound;
    // Each side pinged the other right after verack; wait for the pongs.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let outbound = &connector.peers()[0];
        let inbound = &listener.peers()[0];
        // The counters are raised once each write or read returns: the
        // receiver may hold the block a moment before the sender counts it.
        let counted = outbound.bytes_sent >= BLOCK_BYTES as u64
            && inbound.bytes_received >= BLOCK_BYTES as u64;
        if outbound.last_ping.is_some() && inbound.last_ping.is_some() && counted {
            assert_eq!(outbound.id, *outbound_id);
            assert_eq!(inbound.id, *inbound_id);
            assert_eq!(outbound.transport, expected);
            assert_eq!(inbound.transport, expected);
            assert_eq!(outbound.session_id, inbound.session_id, "both ends derive one session id");
            assert_eq!(outbound.session_id.is_some(), expected == TransportKind::V2);
            assert!(outbound.handshake_complete && inbound.handshake_complete);
            assert!(outbound.bytes_sent >= BLOCK_BYTES as u64);
            assert!(inbound.bytes_received >= BLOCK_BYTES as u64);
            assert!(outbound.min_ping.is_some() && outbound.ping_wait.is_none());
            assert_eq!(
                outbound.version.as_ref().map(|version| version.protocol_version),
                Some(70_016)
            );
            let totals = connector.totals();
            assert_eq!(totals.bytes_sent, outbound.bytes_sent);
            assert_eq!(listener.totals().bytes_received, inbound.bytes_received);
            return;
        }
        assert!(Instant::now() < deadline, "pings answered and the block counted within 5 s");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_handshake_messages_both_ways_and_a_block_byte_for_byte() {
    within(Duration::from_secs(20), async {
        let mut pair = connected_pair(true, true, TransportKind::V2).await;
        let elapsed = exchange(&mut pair).await;
        println!("v2: a {BLOCK_BYTES}-byte block crossed loopback in {elapsed:?}");
        check_info_and_pings(&pair, TransportKind::V2).await;

        let Pair {
            outbound: (connector, connector_events, outbound_id),
            inbound: (listener, listener_events, inbound_id),
        } = &mut pair;
        connector.disconnect(*outbound_id, DisconnectReason::Manual).unwrap();
        let (id, reason) = wait_for(listener_events, |event| match event {
            NetworkEvent::PeerDisconnected { id, reason } => Some((id, reason)),
            _ => None,
        })
        .await;
        assert_eq!(id, *inbound_id);
        assert!(
            matches!(reason, DisconnectReason::PeerClosed | DisconnectReason::ReceiveError { .. }),
            "{reason}"
        );
        let reason = wait_for(connector_events, |event| match event {
            NetworkEvent::PeerDisconnected { reason, .. } => Some(reason),
            _ => None,
        })
        .await;
        assert_eq!(reason, DisconnectReason::Manual);
        assert!(
            connector.send(*outbound_id, NetworkMessage::Verack).is_err(),
            "a closed peer takes nothing"
        );
        // The connector reconnects by itself.
        let (_, event) = wait_connected(connector_events).await;
        assert!(matches!(event, NetworkEvent::PeerConnected { transport: TransportKind::V2, .. }));
        connector.shutdown();
        listener.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v2_connector_retries_with_v1_when_the_listener_speaks_only_v1() {
    within(Duration::from_secs(20), async {
        let mut listener_config = config(false);
        listener_config.start_height = 11;
        let (listener, mut listener_events, address) = start(listener_config).await;
        let mut connector_config = config(true);
        connector_config.listen = None;
        connector_config.connect = vec![address];
        let (connector, mut connector_events) =
            ibex_p2p::net::start(connector_config).await.unwrap();
        // The v1 listener reads the v2 key as a header with a wrong magic
        // and closes; the connector retries at once with v1.
        let retried = wait_for(&mut connector_events, |event| match event {
            NetworkEvent::ConnectionClosed { retry_with_v1, reason, .. } => {
                Some((retry_with_v1, reason))
            }
            _ => None,
        })
        .await;
        assert!(retried.0, "retried with v1");
        assert!(
            matches!(
                retried.1,
                DisconnectReason::PeerClosed | DisconnectReason::ReceiveError { .. }
            ),
            "{}",
            retried.1
        );
        let (_, event) = wait_connected(&mut connector_events).await;
        assert!(matches!(event, NetworkEvent::PeerConnected { transport: TransportKind::V1, .. }));
        let (_, event) = wait_connected(&mut listener_events).await;
        assert!(matches!(event, NetworkEvent::PeerConnected { transport: TransportKind::V1, .. }));
        connector.shutdown();
        listener.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_messages_and_block_when_the_connector_has_v2_off() {
    within(Duration::from_secs(20), async {
        // The v2 listener detects the v1 peer from its first 16 bytes.
        let mut pair = connected_pair(true, false, TransportKind::V1).await;
        let elapsed = exchange(&mut pair).await;
        println!("v1: a {BLOCK_BYTES}-byte block crossed loopback in {elapsed:?}");
        check_info_and_pings(&pair, TransportKind::V1).await;
        pair.outbound.0.shutdown();
        pair.inbound.0.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_to_ourselves_is_found_by_its_nonce() {
    within(Duration::from_secs(10), async {
        for v2 in [true, false] {
            let (handle, mut events, address) = start(config(v2)).await;
            handle.connect(address).unwrap();
            // The inbound side finds the nonce; the outbound side sees the
            // connection closed (its event may come first).
            let reason = wait_for(&mut events, |event| match event {
                NetworkEvent::ConnectionClosed { reason, inbound: true, .. } => Some(reason),
                NetworkEvent::ConnectionClosed { reason, inbound: false, .. } => {
                    assert!(
                        matches!(
                            reason,
                            DisconnectReason::PeerClosed | DisconnectReason::ReceiveError { .. }
                        ),
                        "{reason}"
                    );
                    None
                }
                NetworkEvent::PeerConnected { .. } => panic!("connected to ourselves"),
                _ => None,
            })
            .await;
            assert!(matches!(reason, DisconnectReason::SelfConnection { .. }), "{reason}");
            assert!(reason.to_string().starts_with("connected to self at 127.0.0.1:"));
            handle.shutdown();
        }
    })
    .await;
}

/// Services changed while the layer runs go out in the next `version`, and
/// the event tells the node what its peer was told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_sent_after_a_services_change_carries_the_new_services() {
    within(Duration::from_secs(10), async {
        let (listener, mut listener_events, address) = start(config(true)).await;
        let configured = listener.local_services();
        assert!(configured.contains(ServiceFlags::NETWORK), "Core's default");
        // What a node with an unvalidated AssumeUTXO snapshot announces.
        let limited = configured.without(ServiceFlags::NETWORK) | ServiceFlags::NETWORK_LIMITED;
        listener.set_local_services(limited);
        assert_eq!(listener.local_services(), limited);
        let mut connector_config = config(true);
        connector_config.listen = None;
        connector_config.connect = vec![address];
        let (connector, mut connector_events) =
            ibex_p2p::net::start(connector_config).await.unwrap();
        let (_, event) = wait_connected(&mut connector_events).await;
        let NetworkEvent::PeerConnected { version, .. } = event else { unreachable!() };
        assert_eq!(version.services, limited, "the listener's version after the change");
        let (_, event) = wait_connected(&mut listener_events).await;
        let NetworkEvent::PeerConnected { our_services, .. } = event else { unreachable!() };
        assert_eq!(our_services, limited);
        connector.shutdown();
        listener.shutdown();
    })
    .await;
}
