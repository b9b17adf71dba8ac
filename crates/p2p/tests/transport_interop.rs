//! Interoperability with rust-bitcoin's `bip324` crate as the other side
//! (its handshake and ciphers are checked against BIP324's test vectors in
//! its own repository): both roles, its garbage and decoys in the handshake
//! and after, every message type both ways, rekeying, and the packet
//! length bound at and past 4,000,013 bytes of contents.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod transport_support;

use bip324::{
    CipherSession, GarbageResult, Handshake, Initialized, PacketType, ReceivedKey, Role,
    VersionResult, NUM_LENGTH_BYTES,
};
use ibex_p2p::transport::message_type::short_message_id;
use ibex_p2p::{NetworkMessage, Transport, TransportError, TransportKind};
use transport_support::{every_message, feed, mainnet, messages, regtest, secrets};

/// Completes a handshake between the crate's side (`their_role`) and ours,
/// with the crate sending garbage and decoy packets; returns the crate's
/// session and our transport.
fn handshake_with_crate(their_role: Role, magic: [u8; 4]) -> (CipherSession, Transport) {
    let mut ours = match their_role {
        Role::Initiator => Transport::v2_responder(magic, secrets(21, 333)),
        Role::Responder => Transport::v2_initiator(magic, secrets(22, 444)),
    };
    let their_garbage = vec![0xa5; 1234];
    let decoys: Vec<Vec<u8>> = vec![vec![1; 10], Vec::new(), vec![2; 3000]];
    let decoy_slices: Vec<&[u8]> = decoys.iter().map(Vec::as_slice).collect();

    let handshake = Handshake::<Initialized>::new(magic, their_role).unwrap();
    let mut their_key = vec![0; Handshake::<Initialized>::send_key_len(Some(&their_garbage))];
    let handshake = handshake.send_key(Some(&their_garbage), &mut their_key).unwrap();

    // Our key (and garbage) first if we initiate; theirs reaches us either way.
    let mut from_ours = Vec::new();
    ours.take_output(&mut from_ours);
    assert!(feed(&mut ours, &their_key, &[7]).is_empty());
    ours.take_output(&mut from_ours);
    let mut our_key = [0u8; 64];
    our_key.copy_from_slice(&from_ours[..64]);
    let handshake = handshake.receive_key(our_key).unwrap();
    let version_bytes = Handshake::<ReceivedKey>::send_version_len(Some(&decoy_slices));
    let mut their_version = vec![0; version_bytes];
    let handshake = handshake.send_version(&mut their_version, Some(&decoy_slices)).unwrap();
    assert!(feed(&mut ours, &their_version, &[5]).is_empty());
    ours.take_output(&mut from_ours);
    assert_eq!(ours.kind(), TransportKind::V2);

    // The crate reads our garbage, terminator and version packet.
    let rest = &from_ours[64..];
    let GarbageResult::FoundGarbage { mut handshake, consumed_bytes } =
        handshake.receive_garbage(rest).unwrap()
    else {
        panic!("our garbage terminator was not found");
    };
    let mut packets = &rest[consumed_bytes..];
    loop {
        let mut length = [0u8; NUM_LENGTH_BYTES];
        length.copy_from_slice(&packets[..NUM_LENGTH_BYTES]);
        let packet_bytes = handshake.decrypt_packet_len(length).unwrap();
        let mut packet = packets[NUM_LENGTH_BYTES..NUM_LENGTH_BYTES + packet_bytes].to_vec();
        packets = &packets[NUM_LENGTH_BYTES + packet_bytes..];
        match handshake.receive_version(&mut packet).unwrap() {
            VersionResult::Complete { cipher } => {
                assert!(packets.is_empty(), "we send nothing after the version packet yet");
                assert_eq!(cipher.id(), &ours.session_id().unwrap());
                return (cipher, ours);
            }
            VersionResult::Decoy(next) => handshake = next,
        }
    }
}

/// The contents (message type and payload) of every packet in `wire`, as
/// the crate decrypts them.
fn crate_reads(cipher: &mut CipherSession, mut wire: &[u8]) -> Vec<Vec<u8>> {
    let mut contents = Vec::new();
    while !wire.is_empty() {
        let mut length = [0u8; NUM_LENGTH_BYTES];
        length.copy_from_slice(&wire[..NUM_LENGTH_BYTES]);
        let packet_bytes = cipher.inbound().decrypt_packet_len(length);
        let mut packet = wire[NUM_LENGTH_BYTES..NUM_LENGTH_BYTES + packet_bytes].to_vec();
        wire = &wire[NUM_LENGTH_BYTES + packet_bytes..];
        let (packet_type, plaintext) =
            cipher.inbound().decrypt_in_place(&mut packet, None).unwrap();
        assert_eq!(packet_type, PacketType::Genuine);
        contents.push(plaintext[1..].to_vec());
    }
    contents
}

/// A message's contents as BIP324 lays them out, written independently of
/// the transport: the short id or 0x00 and the 12-byte command, then the
/// payload.
fn contents_of(message: &NetworkMessage) -> Vec<u8> {
    let command = message.command();
    let mut contents = match short_message_id(command) {
        Some(id) => vec![id],
        None => {
            let mut long = vec![0];
            long.extend_from_slice(&command.to_bytes());
            long
        }
    };
    message.encode_payload(&mut contents);
    contents
}

#[test]
fn every_message_crosses_both_ways_with_the_crate_in_either_role() {
    for (their_role, magic) in [(Role::Initiator, mainnet()), (Role::Responder, regtest())] {
        let (mut cipher, mut ours) = handshake_with_crate(their_role, magic);
        let sent = every_message();
        let mut wire = Vec::new();
        for message in &sent {
            ours.encode(message, &mut wire).unwrap();
        }
        let expected: Vec<Vec<u8>> = sent.iter().map(contents_of).collect();
        assert_eq!(crate_reads(&mut cipher, &wire), expected);

        let mut wire = Vec::new();
        for message in &sent {
            wire.extend(cipher.outbound().encrypt_to_vec(&[7, 7, 7], PacketType::Decoy, None));
            wire.extend(cipher.outbound().encrypt_to_vec(
                &contents_of(message),
                PacketType::Genuine,
                None,
            ));
        }
        assert_eq!(messages(feed(&mut ours, &wire, &[1, 100, 9])), sent, "decoys skipped");
    }
}

#[test]
fn five_hundred_messages_each_way_across_rekeys() {
    let (mut cipher, mut ours) = handshake_with_crate(Role::Initiator, mainnet());
    let sent: Vec<NetworkMessage> =
        (0..500).map(|nonce| NetworkMessage::Pong { nonce: Some(nonce) }).collect();
    let mut wire = Vec::new();
    for message in &sent {
        ours.encode(message, &mut wire).unwrap();
    }
    let expected: Vec<Vec<u8>> = sent.iter().map(contents_of).collect();
    assert_eq!(crate_reads(&mut cipher, &wire), expected);
    let mut wire = Vec::new();
    for message in &sent {
        wire.extend(cipher.outbound().encrypt_to_vec(
            &contents_of(message),
            PacketType::Genuine,
            None,
        ));
    }
    assert_eq!(messages(feed(&mut ours, &wire, &[4096])), sent);
}

#[test]
fn the_contents_limit_holds_at_and_past_its_bound() {
    let (mut cipher, mut ours) = handshake_with_crate(Role::Responder, mainnet());
    // 4,000,013 bytes: a long message type and a 4,000,000-byte payload.
    let mut largest = vec![0];
    largest.extend_from_slice(b"abcdefghijkl");
    largest.resize(4_000_013, 0x33);
    let wire = cipher.outbound().encrypt_to_vec(&largest, PacketType::Genuine, None);
    let frames = feed(&mut ours, &wire, &[1 << 20]);
    assert_eq!(frames.len(), 1);
    let frame = frames.into_iter().next().unwrap().unwrap();
    assert_eq!((frame.command.name(), frame.payload.len()), ("abcdefghijkl", 4_000_000));

    // One byte more is refused from its 3 length bytes, nothing allocated.
    largest.push(0);
    let wire = cipher.outbound().encrypt_to_vec(&largest, PacketType::Genuine, None);
    assert_eq!(ours.push(&wire[..NUM_LENGTH_BYTES]), NUM_LENGTH_BYTES);
    assert_eq!(
        ours.next_message(),
        Err(TransportError::PacketTooLarge { contents_bytes: 4_000_014 })
    );
    assert_eq!(ours.allocated_bytes(), 0);
    assert_eq!(ours.push(&wire[NUM_LENGTH_BYTES..]), 0, "a failed stream takes nothing more");
}

#[test]
fn unknown_ids_and_empty_contents_drop_one_message_each() {
    let (mut cipher, mut ours) = handshake_with_crate(Role::Initiator, regtest());
    let mut wire = cipher.outbound().encrypt_to_vec(&[33, 1, 2], PacketType::Genuine, None);
    wire.extend(cipher.outbound().encrypt_to_vec(&[], PacketType::Genuine, None));
    wire.extend(cipher.outbound().encrypt_to_vec(
        &contents_of(&NetworkMessage::Verack),
        PacketType::Genuine,
        None,
    ));
    let outcomes = feed(&mut ours, &wire, &[2]);
    assert_eq!(outcomes.len(), 3);
    assert_eq!(outcomes[0], Err(TransportError::UnknownShortId { id: 33 }));
    assert_eq!(outcomes[1], Err(TransportError::EmptyContents));
    assert_eq!(
        NetworkMessage::from_frame(outcomes[2].clone().unwrap()),
        Ok(NetworkMessage::Verack)
    );
}
