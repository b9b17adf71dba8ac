//! Typed messages: hand-checked encodings, a round trip through a frame for
//! every message type, and the fields Core reads in its own way (optional
//! `version` fields, short `pong`, ignored trailing bytes, ignored header
//! transaction counts, unknown inventory types and BIP155 networks).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_p2p::messages::feature::FeatureMessage;
use ibex_p2p::messages::spent_coins::{GetSpentCoins, IndexedSpentCoin, SpentCoins};
use ibex_p2p::{
    encode_message, AddressEntry, AddressV2Entry, Command, CoreResponse, Field, FrameDecoder,
    Inventory, InventoryType, LocatorRequest, MessageError, NetworkAddress, NetworkMessage,
    ServiceAddress, ServiceFlags, UserAgent, VersionMessage, PROTOCOL_VERSION,
};
use ibex_primitives::{
    Amount, BlockHash, DecodeError, Hash256, Height, Network, Params, SpentCoinBuf,
};

const MAINNET: [u8; 4] = [0xf9, 0xbe, 0xb4, 0xd9];

fn payload_of(message: &NetworkMessage) -> Vec<u8> {
    let mut out = Vec::new();
    message.encode_payload(&mut out);
    out
}

fn ipv4_mapped(address: [u8; 4]) -> [u8; 16] {
    let mut bytes = [0u8; 16];
    bytes[10] = 0xff;
    bytes[11] = 0xff;
    bytes[12..].copy_from_slice(&address);
    bytes
}

fn sample_version() -> VersionMessage {
    VersionMessage {
        protocol_version: PROTOCOL_VERSION,
        services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        timestamp_seconds: 1_700_000_000,
        receiver: ServiceAddress {
            services: ServiceFlags::NONE,
            ip_bytes: ipv4_mapped([127, 0, 0, 1]),
            port: 8333,
        },
        sender: ServiceAddress::default(),
        nonce: 0x0123_4567_89ab_cdef,
        user_agent: UserAgent::new(b"/Ibex:0.1.0/".to_vec()).unwrap(),
        start_height: 800_000,
        relay: Some(true),
    }
}

/// One message of every type this crate decodes.
fn every_message() -> Vec<NetworkMessage> {
    let genesis = Params::for_network(Network::Main).genesis.header;
    let hash = |byte: u8| Hash256([byte; 32]);
    let locator = LocatorRequest {
        locator_version: 70_016,
        locator_hashes: vec![BlockHash([1; 32]), BlockHash([2; 32])],
        stop_hash: BlockHash::default(),
    };
    let inventory = vec![
        Inventory { inventory_type: InventoryType::WITNESS_BLOCK, hash: hash(3) },
        Inventory { inventory_type: InventoryType::from_bits(0xdead), hash: hash(4) },
    ];
    let address = ServiceAddress {
        services: ServiceFlags::NETWORK_LIMITED,
        ip_bytes: ipv4_mapped([8, 8, 4, 4]),
        port: 18333,
    };
    let address_v2 = |address: NetworkAddress| AddressV2Entry {
        time_seconds: 1_650_000_000,
        services: ServiceFlags::from_bits(u64::MAX),
        address,
        port: 8333,
    };
    vec![
        NetworkMessage::Version(sample_version()),
        NetworkMessage::Verack,
        NetworkMessage::WtxidRelay,
        NetworkMessage::SendAddressV2,
        NetworkMessage::SendHeaders,
        NetworkMessage::SendCompact { high_bandwidth: true, compact_blocks_version: 2 },
        NetworkMessage::Ping { nonce: u64::MAX },
        NetworkMessage::Pong { nonce: Some(5) },
        NetworkMessage::Pong { nonce: None },
        NetworkMessage::GetHeaders(locator.clone()),
        NetworkMessage::GetBlocks(locator),
        NetworkMessage::Headers(vec![genesis, genesis]),
        NetworkMessage::GetData(inventory.clone()),
        NetworkMessage::Inventory(inventory.clone()),
        NetworkMessage::NotFound(inventory),
        NetworkMessage::Block(vec![0xbe; 1_000]),
        NetworkMessage::Address(vec![AddressEntry { time_seconds: 7, address }]),
        NetworkMessage::AddressV2(vec![
            address_v2(NetworkAddress::Ipv4([1, 2, 3, 4])),
            address_v2(NetworkAddress::Ipv6([0x20; 16])),
            address_v2(NetworkAddress::TorV3([0x44; 32])),
            address_v2(NetworkAddress::I2p([0x55; 32])),
            address_v2(NetworkAddress::Cjdns([0xfc; 16])),
            address_v2(NetworkAddress::Unknown { network_id: 42, address_bytes: vec![9; 7] }),
        ]),
        NetworkMessage::GetAddress,
        NetworkMessage::FeeFilter { fee_rate_sat_per_kvb: 1_000 },
        NetworkMessage::Mempool,
        NetworkMessage::Feature(FeatureMessage::new(b"blockspentcoinsv1", &[0])),
        NetworkMessage::GetSpentCoins(GetSpentCoins {
            block_hash: BlockHash([3; 32]),
            cutoff_height: 9,
        }),
        NetworkMessage::SpentCoins(SpentCoins {
            block_hash: BlockHash([3; 32]),
            coins: vec![IndexedSpentCoin {
                input_index: 2,
                coin: SpentCoinBuf {
                    value: Amount::from_sat(5_000).unwrap(),
                    script_pubkey: vec![0x51, 0x20, 9],
                    height: Height::new(8),
                    is_coinbase: true,
                },
            }],
        }),
        NetworkMessage::Unknown { command: Command::new("sendtxrcncl").unwrap() },
    ]
}

#[test]
fn every_message_round_trips_through_a_frame() {
    let messages = every_message();
    let mut wire = Vec::new();
    for message in &messages {
        encode_message(MAINNET, message, &mut wire).unwrap();
    }
    let mut decoder = FrameDecoder::new(MAINNET);
    let mut input = &wire[..];
    let mut decoded = Vec::new();
    loop {
        let consumed = decoder.push(input);
        input = &input[consumed..];
        match decoder.next_frame().unwrap() {
            Some(frame) => decoded.push(NetworkMessage::from_frame(frame).unwrap()),
            None => break,
        }
    }
    assert_eq!(decoded, messages);
    for message in &messages {
        let payload = payload_of(message);
        assert_eq!(NetworkMessage::decode(message.command(), &payload).as_ref(), Ok(message));
    }
}

#[test]
fn version_encoding_matches_hand_built_bytes() {
    let mut expected = Vec::new();
    expected.extend_from_slice(&70_016i32.to_le_bytes());
    expected.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
    expected.extend_from_slice(&1_700_000_000i64.to_le_bytes());
    expected.extend_from_slice(&[0; 8]);
    expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]);
    expected.extend_from_slice(&[0x20, 0x8d]); // 8333 big-endian
    expected.extend_from_slice(&[0; 26]);
    expected.extend_from_slice(&[0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01]);
    expected.push(12);
    expected.extend_from_slice(b"/Ibex:0.1.0/");
    expected.extend_from_slice(&800_000i32.to_le_bytes());
    expected.push(1);
    assert_eq!(expected.len(), 86 + 12);
    assert_eq!(payload_of(&NetworkMessage::Version(sample_version())), expected);
}

#[test]
fn small_messages_match_hand_built_bytes() {
    let send_compact =
        NetworkMessage::SendCompact { high_bandwidth: false, compact_blocks_version: 2 };
    assert_eq!(payload_of(&send_compact), [0, 2, 0, 0, 0, 0, 0, 0, 0]);
    let fee_filter = NetworkMessage::FeeFilter { fee_rate_sat_per_kvb: -2 };
    assert_eq!(payload_of(&fee_filter), [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    let inventory = NetworkMessage::Inventory(vec![Inventory {
        inventory_type: InventoryType::WITNESS_TRANSACTION,
        hash: Hash256([0xab; 32]),
    }]);
    let mut expected = vec![1, 0x01, 0x00, 0x00, 0x40];
    expected.extend_from_slice(&[0xab; 32]);
    assert_eq!(payload_of(&inventory), expected);
    let get_headers = NetworkMessage::GetHeaders(LocatorRequest {
        locator_version: 70_016,
        locator_hashes: vec![BlockHash([0x11; 32])],
        stop_hash: BlockHash([0x22; 32]),
    });
    let mut expected = vec![0x80, 0x11, 0x01, 0x00, 1];
    expected.extend_from_slice(&[0x11; 32]);
    expected.extend_from_slice(&[0x22; 32]);
    assert_eq!(payload_of(&get_headers), expected);
}

#[test]
fn address_v2_entry_matches_hand_built_bytes() {
    let entry = AddressV2Entry {
        time_seconds: 0x6000_0000,
        services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        address: NetworkAddress::Ipv4([1, 2, 3, 4]),
        port: 8333,
    };
    let payload = payload_of(&NetworkMessage::AddressV2(vec![entry]));
    assert_eq!(payload, [1, 0, 0, 0, 0x60, 9, 1, 4, 1, 2, 3, 4, 0x20, 0x8d]);
}

#[test]
fn headers_message_carries_genesis_with_a_zero_count() {
    let params = Params::for_network(Network::Main);
    let headers = NetworkMessage::Headers(vec![params.genesis.header]);
    let payload = payload_of(&headers);
    assert_eq!(payload.len(), 1 + 80 + 1);
    assert_eq!((payload[0], payload[81]), (1, 0));
    let NetworkMessage::Headers(decoded) =
        NetworkMessage::decode(Command::HEADERS, &payload).unwrap()
    else {
        panic!("not headers");
    };
    assert_eq!(decoded[0].block_hash(), params.genesis_hash);
}

#[test]
fn headers_transaction_count_is_read_and_ignored_as_in_core() {
    let header = Params::for_network(Network::Main).genesis.header;
    let mut payload = vec![1];
    payload.extend_from_slice(&header.encode());
    let with_count = |count: &[u8]| {
        let mut bytes = payload.clone();
        bytes.extend_from_slice(count);
        NetworkMessage::decode(Command::HEADERS, &bytes)
    };
    // Nonzero: Core's "ignore tx count; assume it is 0".
    assert_eq!(with_count(&[0xfd, 0xd0, 0x07]), Ok(NetworkMessage::Headers(vec![header])));
    // Still a compact size: canonical and at most MAX_SIZE.
    let error = with_count(&[0xfd, 0x01, 0x00]).unwrap_err();
    assert!(matches!(
        error,
        MessageError::Malformed {
            field: Field::TransactionCount,
            source: DecodeError::NonCanonicalCompactSize { .. },
            ..
        }
    ));
    let error = with_count(&[0xfe, 0x01, 0x00, 0x00, 0x02]).unwrap_err();
    assert!(matches!(
        error,
        MessageError::Malformed { source: DecodeError::CompactSizeTooLarge { .. }, .. }
    ));
    assert_eq!(error.core_response(), CoreResponse::IgnoreMessage);
    assert!(with_count(&[]).is_err(), "the count is required");
    // MAX_SIZE itself is accepted.
    assert_eq!(
        with_count(&[0xfe, 0x00, 0x00, 0x00, 0x02]),
        Ok(NetworkMessage::Headers(vec![header]))
    );
}

#[test]
fn version_optional_fields_stop_where_the_payload_ends() {
    let full = payload_of(&NetworkMessage::Version(sample_version()));
    let decode = |length: usize| {
        VersionMessageResult(NetworkMessage::decode(Command::VERSION, &full[..length]))
    };
    // Required part: 4 + 8 + 8 + 26 = 46 bytes.
    assert!(decode(45).0.is_err());
    let minimal = decode(46).version();
    assert_eq!((minimal.nonce, minimal.start_height, minimal.relay), (1, -1, None));
    assert_eq!(minimal.sender, ServiceAddress::default());
    assert!(minimal.relays_transactions(), "an absent relay flag means relay");
    assert!(decode(47).0.is_err(), "sender address and nonce come together");
    assert!(decode(79).0.is_err());
    let with_nonce = decode(80).version();
    assert_eq!(
        (with_nonce.nonce, with_nonce.user_agent.as_bytes()),
        (0x0123_4567_89ab_cdef, &b""[..])
    );
    let with_agent = decode(80 + 13).version();
    assert_eq!(with_agent.user_agent.as_bytes(), b"/Ibex:0.1.0/");
    assert_eq!(with_agent.start_height, -1);
    assert!(decode(80 + 13 + 2).0.is_err(), "a start height is 4 bytes");
    assert_eq!(decode(80 + 13 + 4).version().relay, None);
    assert_eq!(decode(full.len()).version(), sample_version());
}

#[test]
fn required_version_fields_decode_alone_when_the_rest_is_malformed() {
    let mut payload = payload_of(&NetworkMessage::Version(sample_version()));
    payload.truncate(46 + 20); // inside the sender address
    assert!(NetworkMessage::decode(Command::VERSION, &payload).is_err());
    let required = VersionMessage::decode_required(&payload).unwrap();
    assert_eq!(required.protocol_version, PROTOCOL_VERSION);
    assert_eq!(required.services, ServiceFlags::NETWORK | ServiceFlags::WITNESS);
    assert_eq!((required.nonce, required.relay), (1, None));
    assert!(VersionMessage::decode_required(&payload[..45]).is_err());
}

struct VersionMessageResult(Result<NetworkMessage, MessageError>);

impl VersionMessageResult {
    fn version(self) -> VersionMessage {
        match self.0 {
            Ok(NetworkMessage::Version(version)) => version,
            other => panic!("not a version: {other:?}"),
        }
    }
}

#[test]
fn version_relay_byte_and_trailing_bytes_as_core_reads_them() {
    let mut payload = payload_of(&NetworkMessage::Version(sample_version()));
    let last = payload.len() - 1;
    payload[last] = 2;
    payload.extend_from_slice(b"future fields");
    let decoded =
        VersionMessageResult(NetworkMessage::decode(Command::VERSION, &payload)).version();
    assert_eq!(decoded.relay, Some(true), "any nonzero byte is true");
    assert_eq!(decoded, sample_version(), "bytes after the relay flag are ignored");
    payload[last] = 0;
    let decoded =
        VersionMessageResult(NetworkMessage::decode(Command::VERSION, &payload)).version();
    assert!(!decoded.relays_transactions());
}

#[test]
fn trailing_bytes_are_ignored_for_every_message() {
    for message in every_message() {
        let mut payload = payload_of(&message);
        payload.extend_from_slice(&[0xff, 0x00, 0x13]);
        let decoded = NetworkMessage::decode(message.command(), &payload).unwrap();
        match message {
            // Kept whole, trailing bytes included: parsing is not done here.
            NetworkMessage::Block(mut bytes) => {
                bytes.extend_from_slice(&[0xff, 0x00, 0x13]);
                assert_eq!(decoded, NetworkMessage::Block(bytes));
            }
            // Three bytes make a short pong a short pong still.
            NetworkMessage::Pong { nonce: None } => assert_eq!(decoded, message),
            _ => assert_eq!(decoded, message),
        }
    }
}

#[test]
fn short_pong_is_accepted_and_short_ping_is_not() {
    for length in 0..8 {
        let payload = vec![0x5a; length];
        assert_eq!(
            NetworkMessage::decode(Command::PONG, &payload),
            Ok(NetworkMessage::Pong { nonce: None })
        );
        let error = NetworkMessage::decode(Command::PING, &payload).unwrap_err();
        assert!(matches!(error, MessageError::Malformed { field: Field::Nonce, .. }));
    }
}

#[test]
fn unknown_commands_keep_no_payload() {
    let command = Command::new("cmpctblock").unwrap();
    let message = NetworkMessage::decode(command, &[1, 2, 3]).unwrap();
    assert_eq!(message, NetworkMessage::Unknown { command });
    assert!(payload_of(&message).is_empty());
}

#[test]
fn bip155_torv2_and_future_networks_are_kept_as_unknown() {
    // TORv2 (id 3, 10 bytes): Core no longer knows it and skips the bytes.
    let mut payload = vec![1, 0, 0, 0, 0, 0, 3, 10];
    payload.extend_from_slice(&[0x77; 10]);
    payload.extend_from_slice(&[0x1f, 0x90]);
    let decoded = NetworkMessage::decode(Command::ADDRESS_V2, &payload).unwrap();
    let NetworkMessage::AddressV2(entries) = decoded else { panic!("not addrv2") };
    assert_eq!(
        entries[0].address,
        NetworkAddress::Unknown { network_id: 3, address_bytes: vec![0x77; 10] }
    );
    assert_eq!((entries[0].port, entries[0].address.network_id()), (8080, 3));
}

#[test]
fn bip155_known_network_with_wrong_length_is_dropped() {
    for (network_id, length) in [(1u8, 16u8), (2, 4), (4, 31), (5, 33), (6, 4)] {
        let mut payload = vec![1, 0, 0, 0, 0, 0, network_id, length];
        payload.extend_from_slice(&vec![0; usize::from(length)]);
        payload.extend_from_slice(&[0, 0]);
        let error = NetworkMessage::decode(Command::ADDRESS_V2, &payload).unwrap_err();
        assert!(
            matches!(error, MessageError::AddressLengthMismatch { network_id: id, .. } if id == network_id)
        );
        assert_eq!(error.core_response(), CoreResponse::IgnoreMessage);
    }
}

#[test]
fn bip155_services_are_an_unbounded_but_canonical_compact_size() {
    let entry = |services: &[u8]| {
        let mut payload = vec![1, 0, 0, 0, 0];
        payload.extend_from_slice(services);
        payload.extend_from_slice(&[1, 4, 10, 0, 0, 1, 0x20, 0x8d]);
        NetworkMessage::decode(Command::ADDRESS_V2, &payload)
    };
    let huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    let NetworkMessage::AddressV2(entries) = entry(&huge).unwrap() else { panic!("not addrv2") };
    assert_eq!(entries[0].services.bits(), u64::MAX, "above MAX_SIZE is fine here");
    let error = entry(&[0xfe, 0xff, 0xff, 0x00, 0x00]).unwrap_err();
    assert!(matches!(
        error,
        MessageError::Malformed {
            field: Field::Services,
            source: DecodeError::NonCanonicalCompactSize { value: 0xffff, .. },
            ..
        }
    ));
}

#[test]
fn errors_name_the_command_and_field_in_lower_case() {
    let error = NetworkMessage::decode(Command::FEE_FILTER, &[1, 2]).unwrap_err();
    assert_eq!(error.command(), Command::FEE_FILTER);
    assert_eq!(
        error.to_string(),
        "feefilter message, fee rate: truncated at byte 0: needed 8 more bytes, 2 left"
    );
}
