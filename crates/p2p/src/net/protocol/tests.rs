//! The protocol state machine against scripted peers, with time passed in.

use std::time::{Duration, Instant};

use super::*;
use crate::messages::error::Field;

const SECOND: Duration = Duration::from_secs(1);

fn settings() -> ProtocolSettings {
    ProtocolSettings {
        peer_connect_timeout: Duration::from_secs(60),
        inactivity_timeout: Duration::from_secs(20 * 60),
        ping_interval: Duration::from_secs(120),
        outbound_services_required: ServiceFlags::NONE,
    }
}

fn our() -> OurVersion {
    OurVersion {
        user_agent: UserAgent::new(b"/Ibex:test/".to_vec()).unwrap_or_default(),
        nonce: 0x1234,
        ping_nonce_seed: 0x5678,
        protocol_version: 70_016,
        features: Vec::new(),
    }
}

fn address() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 18444))
}

fn not_own(_nonce: u64) -> bool {
    false
}

fn context(now: Instant, is_own_nonce: &dyn Fn(u64) -> bool) -> Context<'_> {
    Context {
        now,
        now_unix_seconds: 1_700_000_000,
        start_height: 812,
        local_services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        is_own_nonce,
    }
}

fn their_version(protocol_version: i32, nonce: u64) -> NetworkMessage {
    NetworkMessage::Version(VersionMessage {
        protocol_version,
        services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        timestamp_seconds: 1_700_000_010,
        receiver: ServiceAddress::default(),
        sender: ServiceAddress::default(),
        nonce,
        user_agent: UserAgent::new(b"/Satoshi:27.0.0/".to_vec()).unwrap_or_default(),
        start_height: 900_000,
        relay: Some(true),
    })
}

fn outgoing(protocol: &mut PeerProtocol) -> Vec<NetworkMessage> {
    protocol.take_outgoing().collect()
}

/// An outbound connection through `verack`, at `start`.
fn connected_outbound(start: Instant) -> PeerProtocol {
    let mut protocol =
        PeerProtocol::new(false, address(), our(), settings(), &context(start, &not_own));
    outgoing(&mut protocol);
    let now = context(start, &not_own);
    assert!(protocol.on_message(their_version(70016, 9), &now).is_ok());
    assert!(protocol.on_message(NetworkMessage::Verack, &now).is_ok());
    outgoing(&mut protocol);
    protocol.take_ping_changes().for_each(drop);
    protocol.note_sent(start);
    protocol.note_received(start);
    protocol
}

#[test]
fn outbound_handshake_sends_what_core_sends_in_its_order() {
    let start = Instant::now();
    let now = context(start, &not_own);
    let mut protocol = PeerProtocol::new(false, address(), our(), settings(), &now);
    let sent = outgoing(&mut protocol);
    let [NetworkMessage::Version(version)] = sent.as_slice() else {
        panic!("an outbound connection opens with version, got {sent:?}");
    };
    assert_eq!(version.protocol_version, 70_016);
    assert_eq!(version.relay, Some(false), "Ibex relays no transactions");
    assert_eq!(version.nonce, 0x1234);
    assert_eq!(version.start_height, 812);
    assert_eq!(version.receiver, ServiceAddress::default(), "loopback is not routable");
    assert_eq!(version.sender.services, version.services);

    let received = protocol.on_message(their_version(70016, 9), &now);
    assert!(
        matches!(received, Ok(Received::Version(ref peer)) if peer.start_height == 900_000 && peer.time_offset_seconds == 10)
    );
    assert_eq!(
        outgoing(&mut protocol),
        [NetworkMessage::WtxidRelay, NetworkMessage::SendAddressV2, NetworkMessage::Verack]
    );
    for message in
        [NetworkMessage::WtxidRelay, NetworkMessage::SendAddressV2, NetworkMessage::Headers(vec![])]
    {
        assert!(matches!(protocol.on_message(message, &now), Ok(Received::Nothing)));
    }
    let Ok(Received::Connected(peer)) = protocol.on_message(NetworkMessage::Verack, &now) else {
        panic!("verack completes the handshake");
    };
    assert!(peer.wtxid_relay && peer.wants_address_v2 && peer.relay);
    let sent = outgoing(&mut protocol);
    assert!(
        matches!(sent[0], NetworkMessage::Ping { nonce } if nonce != 0),
        "a first ping at once, and no sendcmpct: Ibex builds no compact blocks"
    );
    assert_eq!(sent.len(), 1);
    assert!(protocol.is_connected());
}

fn spent_coins_feature() -> FeatureMessage {
    FeatureMessage::new(BLOCK_SPENT_COINS_FEATURE_ID, BLOCK_SPENT_COINS_FEATURE_DATA)
}

/// A node serving BIP 455 spent coins: 70017 and the feature.
fn our_with_features() -> OurVersion {
    OurVersion { protocol_version: 70_017, features: vec![spent_coins_feature()], ..our() }
}

#[test]
fn features_go_out_before_verack_only_to_peers_at_70017() {
    let start = Instant::now();
    let now = context(start, &not_own);
    for (their_protocol, expect_feature) in [(70_017, true), (70_016, false)] {
        let mut protocol =
            PeerProtocol::new(true, address(), our_with_features(), settings(), &now);
        assert!(protocol.on_message(their_version(their_protocol, 9), &now).is_ok());
        let sent = outgoing(&mut protocol);
        let NetworkMessage::Version(version) = &sent[0] else { panic!("version first") };
        assert_eq!(version.protocol_version, 70_017);
        let mut expected =
            vec![NetworkMessage::WtxidRelay, NetworkMessage::SendAddressV2, NetworkMessage::Verack];
        if expect_feature {
            expected.insert(2, NetworkMessage::Feature(spent_coins_feature()));
        }
        assert_eq!(sent[1..], expected, "peer at {their_protocol}");
    }
    // A node without features sends none, even to a peer at 70017.
    let mut plain = PeerProtocol::new(true, address(), our(), settings(), &now);
    assert!(plain.on_message(their_version(70_017, 9), &now).is_ok());
    assert!(!outgoing(&mut plain)
        .iter()
        .any(|message| matches!(message, NetworkMessage::Feature(_))));
}

#[test]
fn a_peers_spent_coins_feature_counts_only_before_verack() {
    let start = Instant::now();
    let now = context(start, &not_own);
    let mut protocol = PeerProtocol::new(false, address(), our(), settings(), &now);
    assert!(protocol.on_message(their_version(70_017, 9), &now).is_ok());
    // Unknown ids and other data are ignored (BIP 434).
    for ignored in [
        FeatureMessage::new(b"BIP999", &[]),
        FeatureMessage::new(BLOCK_SPENT_COINS_FEATURE_ID, &[1]),
    ] {
        let received = protocol.on_message(NetworkMessage::Feature(ignored), &now);
        assert!(matches!(received, Ok(Received::Nothing)));
    }
    let Ok(Received::Connected(peer)) = protocol.on_message(NetworkMessage::Verack, &now) else {
        panic!("connected");
    };
    assert!(!peer.serves_spent_coins);

    let mut protocol = PeerProtocol::new(false, address(), our(), settings(), &now);
    assert!(protocol.on_message(their_version(70_017, 9), &now).is_ok());
    let feature = NetworkMessage::Feature(spent_coins_feature());
    assert!(matches!(protocol.on_message(feature.clone(), &now), Ok(Received::Nothing)));
    let Ok(Received::Connected(peer)) = protocol.on_message(NetworkMessage::Verack, &now) else {
        panic!("connected");
    };
    assert!(peer.serves_spent_coins);
    // After verack a feature is ignored, not forwarded and not punished.
    assert!(matches!(protocol.on_message(feature, &now), Ok(Received::Nothing)));
}

#[test]
fn our_version_carries_the_services_of_the_moment_it_goes_out() {
    let start = Instant::now();
    let mut protocol =
        PeerProtocol::new(true, address(), our(), settings(), &context(start, &not_own));
    assert_eq!(protocol.announced_services(), ServiceFlags::NONE, "nothing sent yet");
    // The node stopped announcing NODE_NETWORK (a snapshot loaded) after
    // the connection opened and before the peer's version came.
    let limited = ServiceFlags::WITNESS | ServiceFlags::NETWORK_LIMITED;
    let now = Context { local_services: limited, ..context(start, &not_own) };
    assert!(protocol.on_message(their_version(70016, 9), &now).is_ok());
    let sent = outgoing(&mut protocol);
    let Some(NetworkMessage::Version(version)) = sent.first() else {
        panic!("inbound answers version with its own, got {sent:?}");
    };
    assert_eq!(version.services, limited);
    assert_eq!(version.sender.services, limited);
    assert_eq!(protocol.announced_services(), limited);
}

#[test]
fn inbound_answers_version_with_its_own_and_skips_features_for_old_peers() {
    let start = Instant::now();
    let now = context(start, &not_own);
    let mut protocol = PeerProtocol::new(true, address(), our(), settings(), &now);
    assert!(outgoing(&mut protocol).is_empty(), "inbound waits for the peer's version");
    assert!(matches!(protocol.on_message(NetworkMessage::Verack, &now), Ok(Received::Nothing)));
    assert!(protocol.on_message(their_version(70015, 9), &now).is_ok());
    let sent = outgoing(&mut protocol);
    assert!(matches!(sent[0], NetworkMessage::Version(_)));
    assert_eq!(sent[1..], [NetworkMessage::Verack], "no wtxidrelay or sendaddrv2 below 70016");
    assert!(matches!(protocol.on_message(NetworkMessage::WtxidRelay, &now), Ok(Received::Nothing)));
    let Ok(Received::Connected(peer)) = protocol.on_message(NetworkMessage::Verack, &now) else {
        panic!("connected");
    };
    assert!(!peer.wtxid_relay, "wtxidrelay is ignored below 70016");
    assert!(
        !outgoing(&mut protocol)
            .iter()
            .any(|message| matches!(message, NetworkMessage::SendCompact { .. })),
        "no compact blocks announced"
    );
}

#[test]
fn version_rules_as_core() {
    let start = Instant::now();
    let own = |nonce: u64| nonce == 77;
    let now = context(start, &own);
    let mut inbound = PeerProtocol::new(true, address(), our(), settings(), &now);
    assert_eq!(
        inbound.on_message(their_version(70016, 77), &now).err(),
        Some(DisconnectReason::SelfConnection { address: address() })
    );
    let mut old = PeerProtocol::new(true, address(), our(), settings(), &now);
    assert_eq!(
        old.on_message(their_version(31_799, 1), &now).err(),
        Some(DisconnectReason::ObsoleteVersion { protocol_version: 31_799 })
    );
    let strict = ProtocolSettings {
        outbound_services_required: ServiceFlags::NETWORK_LIMITED,
        ..settings()
    };
    let mut outbound = PeerProtocol::new(false, address(), our(), strict, &now);
    assert!(matches!(
        outbound.on_message(their_version(70016, 1), &now),
        Err(DisconnectReason::MissingServices { .. })
    ));
    // A version whose required fields say obsolete is refused even when its
    // optional fields are malformed (Core reads the rest only afterwards).
    let mut payload = Vec::new();
    their_version(31_000, 1).encode_payload(&mut payload);
    payload.truncate(86 + 4);
    let error = NetworkMessage::decode(Command::VERSION, &payload).err();
    let mut malformed = PeerProtocol::new(true, address(), our(), settings(), &now);
    let error = error.unwrap_or(MessageError::TooMany {
        command: Command::VERSION,
        field: Field::UserAgent,
        count: 0,
        limit: 0,
    });
    assert_eq!(
        malformed.on_undecodable(Command::VERSION, &payload, error).err(),
        Some(DisconnectReason::ObsoleteVersion { protocol_version: 31_000 })
    );
}

#[test]
fn after_verack_pings_are_answered_features_disconnect_and_the_rest_goes_to_the_node() {
    let start = Instant::now();
    let now = context(start, &not_own);
    let mut protocol = connected_outbound(start);
    assert!(matches!(
        protocol.on_message(NetworkMessage::Ping { nonce: 5 }, &now),
        Ok(Received::Nothing)
    ));
    assert_eq!(outgoing(&mut protocol), [NetworkMessage::Pong { nonce: Some(5) }]);
    assert!(matches!(
        protocol.on_message(NetworkMessage::Headers(vec![]), &now),
        Ok(Received::Forward(NetworkMessage::Headers(_)))
    ));
    assert!(matches!(protocol.on_message(their_version(70016, 3), &now), Ok(Received::Nothing)));
    assert!(matches!(protocol.on_message(NetworkMessage::Verack, &now), Ok(Received::Nothing)));
    assert_eq!(
        protocol.on_message(NetworkMessage::SendAddressV2, &now).err(),
        Some(DisconnectReason::FeatureAfterVerack { command: Command::SEND_ADDRESS_V2 })
    );
}

#[test]
fn pongs_finish_or_cancel_pings_as_core() {
    let start = Instant::now();
    let mut protocol =
        PeerProtocol::new(false, address(), our(), settings(), &context(start, &not_own));
    let now = context(start, &not_own);
    assert!(protocol.on_message(their_version(70016, 9), &now).is_ok());
    assert!(protocol.on_message(NetworkMessage::Verack, &now).is_ok());
    let ping_nonce = outgoing(&mut protocol).iter().find_map(|message| match message {
        NetworkMessage::Ping { nonce } => Some(*nonce),
        _ => None,
    });
    let Some(ping_nonce) = ping_nonce else {
        panic!("a ping after verack");
    };
    let later = context(start + Duration::from_millis(30), &not_own);
    assert!(protocol
        .on_message(NetworkMessage::Pong { nonce: Some(ping_nonce ^ 1) }, &later)
        .is_ok());
    assert_eq!(
        protocol.take_ping_changes().collect::<Vec<_>>(),
        [PingChange::Sent(start)],
        "a mismatch is ignored"
    );
    assert!(protocol.on_message(NetworkMessage::Pong { nonce: Some(ping_nonce) }, &later).is_ok());
    assert_eq!(
        protocol.take_ping_changes().collect::<Vec<_>>(),
        [PingChange::Finished(Some(Duration::from_millis(30)))]
    );
    assert!(protocol.on_message(NetworkMessage::Pong { nonce: Some(ping_nonce) }, &later).is_ok());
    assert!(protocol.take_ping_changes().next().is_none(), "unsolicited pong");

    let next = start + Duration::from_secs(121);
    protocol.note_sent(next);
    protocol.note_received(next);
    assert!(protocol.on_timer(next, TransportKind::V2).is_ok());
    assert!(
        matches!(outgoing(&mut protocol).as_slice(), [NetworkMessage::Ping { .. }]),
        "every 2 minutes"
    );
    assert!(protocol
        .on_message(NetworkMessage::Pong { nonce: None }, &context(next, &not_own))
        .is_ok());
    let changes: Vec<PingChange> = protocol.take_ping_changes().collect();
    assert_eq!(changes[1..], [PingChange::Finished(None)], "a short pong cancels");
}

#[test]
fn timeouts_as_core_inactivity_check() {
    let start = Instant::now();
    let timeout = Duration::from_secs(60);
    let silent = PeerProtocol::new(true, address(), our(), settings(), &context(start, &not_own));
    assert_eq!(silent.next_deadline(), start + timeout + TIMER_SLACK);
    let mut silent = silent;
    assert!(silent.on_timer(start + timeout - SECOND, TransportKind::V1).is_ok());
    assert_eq!(
        silent.on_timer(start + timeout, TransportKind::V1).err(),
        Some(DisconnectReason::NoMessageInFirst {
            timeout,
            never_received: true,
            never_sent: true
        })
    );

    let mut stuck =
        PeerProtocol::new(false, address(), our(), settings(), &context(start, &not_own));
    stuck.note_sent(start);
    stuck.note_received(start + SECOND);
    assert_eq!(
        stuck.on_timer(start + timeout, TransportKind::Detecting).err(),
        Some(DisconnectReason::V2HandshakeTimeout)
    );
    assert_eq!(
        stuck.on_timer(start + timeout, TransportKind::V1).err(),
        Some(DisconnectReason::VersionHandshakeTimeout)
    );

    let mut connected = connected_outbound(start);
    let twenty_minutes = Duration::from_secs(20 * 60);
    // The first ping is outstanding: it times out before the idle checks.
    let deadline = connected.next_deadline();
    assert_eq!(deadline, start + twenty_minutes + TIMER_SLACK);
    assert!(matches!(
        connected.on_timer(deadline, TransportKind::V2),
        Err(DisconnectReason::SendTimeout { .. } | DisconnectReason::PingTimeout { .. })
    ));
    let mut quiet = connected_outbound(start);
    quiet.note_sent(start + twenty_minutes);
    quiet.note_received(start + twenty_minutes);
    let late = start + twenty_minutes + SECOND;
    assert_eq!(
        quiet.on_timer(late, TransportKind::V2).err(),
        Some(DisconnectReason::PingTimeout { waited: twenty_minutes + SECOND })
    );
}

#[test]
fn undecodable_messages_follow_core_responses() {
    let start = Instant::now();
    let too_many = |command| MessageError::TooMany {
        command,
        field: Field::InventoryEntries,
        count: 50_001,
        limit: 50_000,
    };
    let mut outbound = connected_outbound(start);
    assert!(
        matches!(
            outbound.on_undecodable(Command::INVENTORY, &[], too_many(Command::INVENTORY)),
            Ok(Received::Nothing)
        ),
        "Core does not punish manual connections"
    );
    assert!(matches!(
        outbound.on_undecodable(Command::GET_HEADERS, &[], too_many(Command::GET_HEADERS)),
        Err(DisconnectReason::MessageRejected(_))
    ));
    let now = context(start, &not_own);
    let mut inbound = PeerProtocol::new(true, address(), our(), settings(), &now);
    assert!(
        matches!(
            inbound.on_undecodable(Command::INVENTORY, &[], too_many(Command::INVENTORY)),
            Ok(Received::Nothing)
        ),
        "before verack Core never decodes it"
    );
    assert!(inbound.on_message(their_version(70016, 1), &now).is_ok());
    assert!(inbound.on_message(NetworkMessage::Verack, &now).is_ok());
    let rejected = inbound.on_undecodable(Command::INVENTORY, &[], too_many(Command::INVENTORY));
    assert!(matches!(rejected, Err(ref reason) if reason.discourages()));
}

#[test]
fn automatic_outbound_peers_are_punished_for_an_oversized_addr() {
    let too_many = MessageError::TooMany {
        command: Command::ADDRESS,
        field: Field::Addresses,
        count: 1001,
        limit: 1000,
    };
    let mut manual = connected_outbound(Instant::now());
    let spared = manual.on_undecodable(Command::ADDRESS, &[], too_many.clone());
    assert!(matches!(spared, Ok(Received::Nothing)), "manual connections are spared");
    let mut automatic = connected_outbound(Instant::now());
    automatic.set_punishable(true);
    let rejected = automatic.on_undecodable(Command::ADDRESS, &[], too_many);
    let Err(reason) = rejected else { panic!("an automatic peer kept after 1,001 addresses") };
    assert!(reason.discourages());
    assert_eq!(reason.to_string(), "Misbehaving: addr message size = 1001");
}

/// The first ping a connection sends with `our`.
fn first_ping_nonce(our: OurVersion) -> u64 {
    let start = Instant::now();
    let now = context(start, &not_own);
    let mut protocol = PeerProtocol::new(false, address(), our, settings(), &now);
    assert!(protocol.on_message(their_version(70016, 9), &now).is_ok());
    assert!(protocol.on_message(NetworkMessage::Verack, &now).is_ok());
    let nonce = outgoing(&mut protocol).iter().find_map(|message| match message {
        NetworkMessage::Ping { nonce } => Some(*nonce),
        _ => None,
    });
    nonce.unwrap_or_else(|| panic!("a ping after verack"))
}

#[test]
fn ping_nonces_come_from_the_secret_seed_not_the_version_nonce() {
    let base = first_ping_nonce(our());
    // The version nonce, which the peer sees, changes nothing.
    assert_eq!(first_ping_nonce(OurVersion { nonce: our().nonce ^ 0xffff, ..our() }), base);
    // The secret seed, which it never sees, changes the nonce.
    let reseeded = OurVersion { ping_nonce_seed: our().ping_nonce_seed ^ 1, ..our() };
    assert_ne!(first_ping_nonce(reseeded), base);
    assert_ne!(base, 0, "a zero nonce means no ping outstanding");
}
