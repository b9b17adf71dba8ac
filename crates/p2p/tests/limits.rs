//! Every list and string limit just at and just past its bound, with the
//! response Core gives past it, and the count checks that come before any
//! allocation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_p2p::{
    encode_message, AddressEntry, AddressV2Entry, Command, CoreResponse, Field, FrameError,
    Inventory, InventoryType, MessageError, NetworkAddress, NetworkMessage, ServiceAddress,
    ServiceFlags, UserAgent, ADDRESSES_PER_MESSAGE_MAX, ADDRESS_V2_BYTES_MAX,
    HEADERS_PER_MESSAGE_MAX, INVENTORY_ENTRIES_MAX, LOCATOR_HASHES_MAX, MESSAGE_PAYLOAD_BYTES_MAX,
    USER_AGENT_BYTES_MAX,
};
use ibex_primitives::encode::write_compact_size;
use ibex_primitives::{BlockHash, DecodeError, Hash256, Header};

fn payload_of(message: &NetworkMessage) -> Vec<u8> {
    let mut out = Vec::new();
    message.encode_payload(&mut out);
    out
}

/// Encodes `message`, decodes it back and returns the result.
fn round(message: &NetworkMessage) -> Result<NetworkMessage, MessageError> {
    NetworkMessage::decode(message.command(), &payload_of(message))
}

fn assert_too_many(
    result: Result<NetworkMessage, MessageError>,
    count: u64,
    response: CoreResponse,
) {
    let error = result.unwrap_err();
    assert!(matches!(error, MessageError::TooMany { count: c, .. } if c == count), "{error}");
    assert_eq!(error.core_response(), response, "{error}");
}

fn header(nonce: u32) -> Header {
    Header {
        version: 4,
        previous_block_hash: BlockHash([1; 32]),
        merkle_root: Hash256([2; 32]),
        time: 1_700_000_000,
        bits: 0x1d00_ffff,
        nonce,
    }
}

#[test]
fn headers_limit_is_checked_before_any_header_is_read() {
    let at_limit: Vec<Header> = (0..HEADERS_PER_MESSAGE_MAX as u32).map(header).collect();
    let message = NetworkMessage::Headers(at_limit.clone());
    assert_eq!(round(&message), Ok(message));
    let mut past = at_limit;
    past.push(header(0));
    assert_too_many(round(&NetworkMessage::Headers(past)), 2001, CoreResponse::Misbehaving);
    // Only the count: Core checks it before reading headers.
    let error = NetworkMessage::decode(Command::HEADERS, &[0xfd, 0xd1, 0x07]);
    assert_too_many(error, 2001, CoreResponse::Misbehaving);
}

fn inventory(count: usize) -> Vec<Inventory> {
    (0..count)
        .map(|index| Inventory {
            inventory_type: InventoryType::from_bits(index as u32 % 7),
            hash: Hash256([index as u8; 32]),
        })
        .collect()
}

#[test]
fn inventory_limits_and_core_responses() {
    type Build = fn(Vec<Inventory>) -> NetworkMessage;
    let cases: [(Build, CoreResponse); 3] = [
        (NetworkMessage::Inventory, CoreResponse::Misbehaving),
        (NetworkMessage::GetData, CoreResponse::Misbehaving),
        // Core ignores a notfound of more than 5,016 entries.
        (NetworkMessage::NotFound, CoreResponse::IgnoreMessage),
    ];
    for (build, response) in cases {
        let message = build(inventory(INVENTORY_ENTRIES_MAX));
        assert_eq!(round(&message), Ok(message));
        assert_too_many(round(&build(inventory(INVENTORY_ENTRIES_MAX + 1))), 50_001, response);
    }
}

#[test]
fn a_list_past_its_limit_that_ends_early_is_a_read_failure_as_in_core() {
    // Core reads the whole vector before comparing its size: 50,001 entries
    // declared but 10 present throws at the end of the data (no penalty).
    let mut payload = Vec::new();
    write_compact_size(&mut payload, 50_001);
    payload.extend_from_slice(&[0; 36 * 10]);
    let error = NetworkMessage::decode(Command::INVENTORY, &payload).unwrap_err();
    assert!(
        matches!(error, MessageError::Malformed { field: Field::InventoryEntries, .. }),
        "{error}"
    );
    assert_eq!(error.core_response(), CoreResponse::IgnoreMessage);
}

#[test]
fn counts_past_the_payload_fail_before_allocation() {
    // 2,000 inventory entries declared, none present: no 72 kB vector.
    let mut payload = Vec::new();
    write_compact_size(&mut payload, 2_000);
    let error = NetworkMessage::decode(Command::GET_DATA, &payload).unwrap_err();
    assert!(matches!(error, MessageError::Malformed { source: DecodeError::Truncated { .. }, .. }));
    // MAX_SIZE + 1 and a non-canonical count.
    let error =
        NetworkMessage::decode(Command::INVENTORY, &[0xfe, 0x01, 0x00, 0x00, 0x02]).unwrap_err();
    assert!(matches!(
        error,
        MessageError::Malformed { source: DecodeError::CompactSizeTooLarge { .. }, .. }
    ));
    let error = NetworkMessage::decode(Command::ADDRESS, &[0xfd, 0x10, 0x00]).unwrap_err();
    assert!(matches!(
        error,
        MessageError::Malformed { source: DecodeError::NonCanonicalCompactSize { .. }, .. }
    ));
}

fn locator(count: usize) -> NetworkMessage {
    NetworkMessage::GetHeaders(ibex_p2p::LocatorRequest {
        locator_version: 70_016,
        locator_hashes: (0..count).map(|index| BlockHash([index as u8; 32])).collect(),
        stop_hash: BlockHash([0xee; 32]),
    })
}

#[test]
fn locator_limit_disconnects_only_when_the_stop_hash_was_read() {
    let message = locator(LOCATOR_HASHES_MAX);
    assert_eq!(round(&message), Ok(message));
    assert_too_many(round(&locator(LOCATOR_HASHES_MAX + 1)), 102, CoreResponse::Disconnect);
    let mut payload = payload_of(&locator(LOCATOR_HASHES_MAX + 1));
    payload.truncate(payload.len() - 1);
    let error = NetworkMessage::decode(Command::GET_BLOCKS, &payload).unwrap_err();
    assert!(
        matches!(error, MessageError::Malformed { field: Field::LocatorHashes, .. }),
        "{error}"
    );
}

fn address_entries(count: usize) -> Vec<AddressEntry> {
    (0..count)
        .map(|index| AddressEntry {
            time_seconds: index as u32,
            address: ServiceAddress {
                services: ServiceFlags::NETWORK,
                ip_bytes: [index as u8; 16],
                port: 8333,
            },
        })
        .collect()
}

fn address_v2_entries(count: usize) -> Vec<AddressV2Entry> {
    (0..count)
        .map(|index| AddressV2Entry {
            time_seconds: index as u32,
            services: ServiceFlags::WITNESS,
            address: NetworkAddress::TorV3([index as u8; 32]),
            port: 9050,
        })
        .collect()
}

#[test]
fn address_limits() {
    let message = NetworkMessage::Address(address_entries(ADDRESSES_PER_MESSAGE_MAX));
    assert_eq!(round(&message), Ok(message));
    let past = NetworkMessage::Address(address_entries(ADDRESSES_PER_MESSAGE_MAX + 1));
    assert_too_many(round(&past), 1001, CoreResponse::Misbehaving);
    let message = NetworkMessage::AddressV2(address_v2_entries(ADDRESSES_PER_MESSAGE_MAX));
    assert_eq!(round(&message), Ok(message));
    let past = NetworkMessage::AddressV2(address_v2_entries(ADDRESSES_PER_MESSAGE_MAX + 1));
    assert_too_many(round(&past), 1001, CoreResponse::Misbehaving);
}

#[test]
fn addrv2_list_past_the_limit_with_a_bad_entry_is_that_entry_s_error() {
    let mut entries = address_v2_entries(ADDRESSES_PER_MESSAGE_MAX + 1);
    entries[500].address = NetworkAddress::Unknown { network_id: 9, address_bytes: vec![0; 513] };
    let error = round(&NetworkMessage::AddressV2(entries)).unwrap_err();
    assert!(matches!(
        error,
        MessageError::TooLong { field: Field::AddressBytes, length_bytes: 513, .. }
    ));
    assert_eq!(error.core_response(), CoreResponse::IgnoreMessage);
}

#[test]
fn addrv2_address_length_limit() {
    let entry = |length: usize| {
        NetworkMessage::AddressV2(vec![AddressV2Entry {
            time_seconds: 1,
            services: ServiceFlags::NONE,
            address: NetworkAddress::Unknown { network_id: 200, address_bytes: vec![0xa5; length] },
            port: 1,
        }])
    };
    let message = entry(ADDRESS_V2_BYTES_MAX);
    assert_eq!(round(&message), Ok(message));
    let error = round(&entry(ADDRESS_V2_BYTES_MAX + 1)).unwrap_err();
    assert_eq!(
        error,
        MessageError::TooLong {
            command: Command::ADDRESS_V2,
            field: Field::AddressBytes,
            length_bytes: 513,
            limit_bytes: 512,
        }
    );
}

#[test]
fn user_agent_limit() {
    assert!(UserAgent::new(vec![b'a'; USER_AGENT_BYTES_MAX]).is_ok());
    assert!(matches!(
        UserAgent::new(vec![b'a'; USER_AGENT_BYTES_MAX + 1]),
        Err(MessageError::TooLong { length_bytes: 257, limit_bytes: 256, .. })
    ));
    // On the wire: a version whose user agent declares 257 bytes.
    let mut payload = vec![0; 4 + 8 + 8 + 26 + 26 + 8];
    write_compact_size(&mut payload, 257);
    payload.extend_from_slice(&[b'a'; 257]);
    let error = NetworkMessage::decode(Command::VERSION, &payload).unwrap_err();
    assert!(matches!(error, MessageError::TooLong { field: Field::UserAgent, .. }));
    assert_eq!(error.core_response(), CoreResponse::IgnoreMessage);
    payload.truncate(payload.len() - 257 - 3);
    write_compact_size(&mut payload, 256);
    payload.extend_from_slice(&[b'a'; 256]);
    assert!(NetworkMessage::decode(Command::VERSION, &payload).is_ok());
}

#[test]
fn encode_message_refuses_a_payload_past_the_limit() {
    let magic = [0xfa, 0xbf, 0xb5, 0xda];
    let mut out = vec![7];
    let message = NetworkMessage::Block(vec![0; MESSAGE_PAYLOAD_BYTES_MAX]);
    encode_message(magic, &message, &mut out).unwrap();
    assert_eq!(out.len(), 1 + 24 + MESSAGE_PAYLOAD_BYTES_MAX);
    let mut out = vec![7];
    let message = NetworkMessage::Block(vec![0; MESSAGE_PAYLOAD_BYTES_MAX + 1]);
    let error = encode_message(magic, &message, &mut out).unwrap_err();
    assert!(matches!(error, FrameError::PayloadTooLarge { payload_bytes: 4_000_001, .. }));
    assert_eq!(out, [7], "nothing appended");
}
