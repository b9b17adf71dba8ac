//! Peers written on raw TCP that break the rules: garbage, a wrong magic,
//! an oversized length, a bad checksum, a list over Core's limit, a
//! handshake never finished, a flood without reading; plus the inbound
//! limit and bans. Each is dropped for the reason Core gives (or, for a
//! bad checksum, only its message is), while a good peer stays connected.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::time::{Duration, Instant};

use ibex_p2p::net::{BanReason, DisconnectReason, NetworkError, NetworkEvent};
use ibex_p2p::{
    encode_frame, Command, FrameError, Inventory, InventoryType, NetworkMessage, TransportError,
    TransportKind,
};
use ibex_primitives::Hash256;
use net_support::{
    config, start, version_message, wait_closed, wait_connected, wait_for, wait_message, within,
    FakePeer, MAGIC,
};

/// A frame with the header given field by field.
fn frame(
    magic: [u8; 4],
    command: &[u8],
    payload: &[u8],
    length: u32,
    checksum: [u8; 4],
) -> Vec<u8> {
    let mut bytes = magic.to_vec();
    let mut command_bytes = [0u8; 12];
    command_bytes[..command.len()].copy_from_slice(command);
    bytes.extend_from_slice(&command_bytes);
    bytes.extend_from_slice(&length.to_le_bytes());
    bytes.extend_from_slice(&checksum);
    bytes.extend_from_slice(payload);
    bytes
}

fn inventory(count: usize) -> NetworkMessage {
    NetworkMessage::Inventory(vec![
        Inventory {
            inventory_type: InventoryType::BLOCK,
            hash: Hash256([9; 32])
        };
        count
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_frames_are_dropped_for_core_reasons_while_a_good_peer_stays() {
    within(Duration::from_secs(20), async {
        let (handle, mut events, address) = start(config(false)).await;
        let mut good = FakePeer::connect(address).await;
        good.handshake().await;
        wait_connected(&mut events).await;

        // A wrong magic after the handshake.
        let mut wrong_magic = FakePeer::connect(address).await;
        wrong_magic.handshake().await;
        wait_connected(&mut events).await;
        wrong_magic.send_raw(&frame([0xf9, 0xbe, 0xb4, 0xd9], b"ping", &[0; 8], 8, [0; 4])).await;
        let (reason, connected) = wait_closed(&mut events).await;
        assert!(connected);
        assert_eq!(reason.to_string(), "Header error: Wrong MessageStart f9beb4d9 received");
        assert!(wrong_magic.is_closed_within(Duration::from_secs(2)).await);

        // A declared length one past the 4,000,000-byte limit.
        let mut oversized = FakePeer::connect(address).await;
        oversized.handshake().await;
        wait_connected(&mut events).await;
        oversized.send_raw(&frame(MAGIC, b"block", &[], 4_000_001, [0; 4])).await;
        let (reason, _) = wait_closed(&mut events).await;
        assert!(matches!(
            reason,
            DisconnectReason::Transport(TransportError::Frame(FrameError::PayloadTooLarge {
                payload_bytes: 4_000_001,
                ..
            }))
        ));
        assert_eq!(reason.to_string(), "Header error: Size too large (block, 4000001 bytes)");

        // Garbage before any handshake: its first bytes are no magic.
        let mut garbage = FakePeer::connect(address).await;
        garbage.send_raw(&[0xab; 100]).await;
        let (reason, connected) = wait_closed(&mut events).await;
        assert!(!connected);
        assert!(matches!(
            reason,
            DisconnectReason::Transport(TransportError::Frame(FrameError::WrongMagic { .. }))
        ));

        // A bad checksum drops that message only (Core: "Header error:
        // Wrong checksum", no disconnect); the next message arrives.
        let mut checksum = FakePeer::connect(address).await;
        checksum.handshake().await;
        wait_connected(&mut events).await;
        let mut headers = Vec::new();
        encode_frame(MAGIC, Command::HEADERS, &[0], &mut headers).unwrap();
        headers[20] ^= 0xff;
        checksum.send_raw(&headers).await;
        let dropped = wait_for(&mut events, |event| match event {
            NetworkEvent::MessageDropped { .. } => Some(event.to_string()),
            _ => None,
        })
        .await;
        assert!(
            dropped.starts_with("Header error: Wrong checksum (headers, 1 bytes), expected "),
            "{dropped}"
        );
        checksum.send(&inventory(2)).await;
        assert_eq!(wait_message(&mut events).await, inventory(2), "the headers were dropped");
        assert!(checksum.ping_pong(41).await);

        // An inv over Core's 50,000 entries: Misbehaving, but a local
        // address is disconnected without being discouraged (Core too).
        checksum.send(&inventory(50_001)).await;
        let (reason, _) = wait_closed(&mut events).await;
        assert_eq!(reason.to_string(), "Misbehaving: inv message size = 50001");
        assert!(handle.banned().is_empty());
        assert!(!handle.is_discouraged(address.ip()));

        assert!(good.ping_pong(7).await, "the good peer is still served");
        assert_eq!(handle.peer_count(), 1);
        handle.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_to_a_v2_listener_ends_at_the_garbage_bound() {
    within(Duration::from_secs(10), async {
        let (handle, mut events, address) = start(config(true)).await;
        let mut good = FakePeer::connect(address).await;
        good.handshake().await;
        let (_, event) = wait_connected(&mut events).await;
        assert!(
            matches!(event, NetworkEvent::PeerConnected { transport: TransportKind::V1, .. }),
            "v1 detected"
        );
        let mut garbage = FakePeer::connect(address).await;
        // Taken as a 64-byte key, then 4,095 bytes of garbage and 16 more
        // without the terminator.
        garbage.send_raw(&vec![0xab; 64 + 4095 + 16]).await;
        let (reason, connected) = wait_closed(&mut events).await;
        assert!(!connected);
        assert_eq!(reason.to_string(), "V2 transport error: missing garbage terminator");
        assert!(good.ping_pong(8).await);
        handle.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_that_never_finish_the_handshake_are_dropped_after_the_timeout() {
    within(Duration::from_secs(10), async {
        let mut settings = config(true);
        settings.peer_connect_timeout = Duration::from_millis(300);
        let (handle, mut events, address) = start(settings).await;

        let started = Instant::now();
        let mut silent = FakePeer::connect(address).await;
        let (reason, _) = wait_closed(&mut events).await;
        assert_eq!(
            reason,
            DisconnectReason::NoMessageInFirst {
                timeout: Duration::from_millis(300),
                never_received: true,
                never_sent: true
            }
        );
        assert!(silent.is_closed_within(Duration::from_secs(1)).await);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
            "{waited:?}"
        );

        // A version and never a verack: we answered, so both ways moved.
        let mut version_only = FakePeer::connect(address).await;
        version_only.send(&version_message(3)).await;
        let (reason, _) = wait_closed(&mut events).await;
        assert_eq!(reason, DisconnectReason::VersionHandshakeTimeout);
        assert_eq!(reason.to_string(), "version handshake timeout");

        // A v2 key and nothing more: still detecting when time runs out.
        let mut key_only = FakePeer::connect(address).await;
        key_only.send_raw(&[0x5a; 64]).await;
        let (reason, _) = wait_closed(&mut events).await;
        assert_eq!(reason, DisconnectReason::V2HandshakeTimeout);
        drop((version_only, key_only));
        handle.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_floods_without_reading_is_throttled_by_the_send_bound() {
    within(Duration::from_secs(20), async {
        const SEND_QUEUE_BYTES_MAX: usize = 64 * 1024;
        let mut settings = config(false);
        settings.send_queue_bytes_max = SEND_QUEUE_BYTES_MAX;
        let (handle, mut events, address) = start(settings).await;
        let mut flooder = FakePeer::connect_small_buffers(address).await;
        flooder.handshake().await;
        let (id, _) = wait_connected(&mut events).await;

        // Pings, each answered with a pong the flooder never reads.
        let mut pings = Vec::new();
        for nonce in 0..2048u64 {
            ibex_p2p::encode_message(MAGIC, &NetworkMessage::Ping { nonce }, &mut pings).unwrap();
        }
        let mut stream = flooder.stream;
        let writer = tokio::spawn(async move {
            let mut written_bytes = 0usize;
            loop {
                use tokio::io::AsyncWriteExt;
                match tokio::time::timeout(Duration::from_millis(500), stream.write_all(&pings)).await {
                    Ok(Ok(())) => written_bytes += pings.len(),
                    Ok(Err(_)) => return (written_bytes, false, stream),
                    Err(_stalled) => return (written_bytes, true, stream),
                }
                assert!(written_bytes < 512 << 20, "the node kept reading a peer that never reads");
            }
        });
        let (written_bytes, stalled, stream) = writer.await.unwrap();
        assert!(stalled, "the flooder's writes stall once the node stops reading it");
        let info = handle.peers().into_iter().find(|peer| peer.id == id).unwrap();
        assert!(info.send_queue_bytes <= SEND_QUEUE_BYTES_MAX + 64, "send queue {} bytes", info.send_queue_bytes);
        let received_then = info.bytes_received;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let info = handle.peers().into_iter().find(|peer| peer.id == id).unwrap();
        assert_eq!(info.bytes_received, received_then, "not read while its send queue is full");
        println!("flooder wrote {written_bytes} bytes; the node read {received_then} and holds {} for it", info.send_queue_bytes);

        // Small messages fill at most 256 places in the event queue while
        // the node does not take them; then the peer is not read.
        let mut chatter = FakePeer::connect(address).await;
        chatter.handshake().await;
        wait_connected(&mut events).await;
        let mut burst = Vec::new();
        for _ in 0..1000 {
            ibex_p2p::encode_message(MAGIC, &NetworkMessage::SendHeaders, &mut burst).unwrap();
        }
        chatter.send_raw(&burst).await;
        let deadline = Instant::now() + Duration::from_secs(3);
        while events.len() < 256 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(events.len(), 256, "one peer's share of the event queue");
        for _ in 0..1000 {
            assert_eq!(wait_message(&mut events).await, NetworkMessage::SendHeaders);
        }
        drop(chatter);
        wait_closed(&mut events).await;

        // The node's own messages to it are refused past the bound.
        let block = NetworkMessage::Block(vec![0; 100_000]);
        let refused = handle.send(id, block.clone()).unwrap_err();
        assert!(matches!(refused, NetworkError::SendQueueFull { limit_bytes: SEND_QUEUE_BYTES_MAX, .. }), "{refused}");
        assert!(matches!(handle.send(id, NetworkMessage::Block(vec![0; 4_000_001])), Err(NetworkError::MessageTooLarge { .. })));
        drop(stream);
        let (reason, _) = wait_closed(&mut events).await;
        assert!(matches!(reason, DisconnectReason::PeerClosed | DisconnectReason::ReceiveError { .. } | DisconnectReason::SendError { .. }), "{reason}");
        handle.shutdown();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbound_limit_and_bans_refuse_connections() {
    within(Duration::from_secs(10), async {
        let mut settings = config(false);
        settings.inbound_connections_max = 2;
        let (handle, mut events, address) = start(settings).await;
        let mut first = FakePeer::connect(address).await;
        first.handshake().await;
        let (first_id, _) = wait_connected(&mut events).await;
        let mut second = FakePeer::connect(address).await;
        let mut third = FakePeer::connect(address).await;
        assert!(third.is_closed_within(Duration::from_secs(2)).await, "the third is refused");
        let (reason, _) = wait_closed(&mut events).await;
        assert!(matches!(reason, DisconnectReason::RefusedFull { .. }));
        assert_eq!(
            reason.to_string(),
            "failed to find an eviction candidate - connection dropped (full)"
        );
        assert!(!second.is_closed_within(Duration::from_millis(200)).await, "the second is kept");
        assert_eq!(handle.peer_count(), 2);

        // A ban closes the connections from the address and refuses new ones.
        let loopback = address.ip();
        handle.ban(loopback, BanReason::Manual, Duration::from_secs(60));
        assert!(first.is_closed_within(Duration::from_secs(2)).await);
        assert!(second.is_closed_within(Duration::from_secs(2)).await);
        let reason = wait_for(&mut events, |event| match event {
            NetworkEvent::PeerDisconnected { id, reason } if id == first_id => Some(reason),
            _ => None,
        })
        .await;
        assert_eq!(reason, DisconnectReason::Banned);
        let mut refused = FakePeer::connect(address).await;
        assert!(refused.is_closed_within(Duration::from_secs(2)).await);
        let reason = wait_for(&mut events, |event| match event {
            NetworkEvent::ConnectionClosed {
                reason: reason @ DisconnectReason::RefusedBanned { .. },
                ..
            } => Some(reason),
            _ => None,
        })
        .await;
        assert!(reason.to_string().ends_with("dropped (banned)"));
        let bans = handle.banned();
        assert_eq!(bans.len(), 1);
        assert_eq!((bans[0].address, bans[0].reason), (loopback, BanReason::Manual));

        assert!(handle.unban(loopback));
        let mut welcome = FakePeer::connect(address).await;
        welcome.handshake().await;
        wait_connected(&mut events).await;
        assert!(welcome.ping_pong(1).await);
        handle.shutdown();
    })
    .await;
}
