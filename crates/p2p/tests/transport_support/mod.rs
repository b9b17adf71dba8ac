//! Shared by the transport tests: sample messages, deterministic secrets,
//! and feeding a transport in pieces.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_p2p::{
    AddressEntry, AddressV2Entry, Command, Frame, HandshakeSecrets, Inventory, InventoryType,
    LocatorRequest, NetworkAddress, NetworkMessage, ServiceAddress, ServiceFlags, Transport,
    TransportError, TransportKind, UserAgent, VersionMessage, PROTOCOL_VERSION,
};
use ibex_primitives::{BlockHash, Hash256, Network, Params};

/// Mainnet's magic.
pub fn mainnet() -> [u8; 4] {
    Params::for_network(Network::Main).message_start
}

/// Regtest's magic.
pub fn regtest() -> [u8; 4] {
    Params::for_network(Network::Regtest).message_start
}

/// Secrets from a seed, with `garbage_bytes` bytes of garbage.
pub fn secrets(seed: u8, garbage_bytes: usize) -> HandshakeSecrets {
    let garbage = (0..garbage_bytes).map(|index| (index as u8) ^ seed).collect();
    HandshakeSecrets::new([seed.max(1); 32], [seed.wrapping_mul(7); 32], garbage).unwrap()
}

/// A `version` message as Core sends it.
pub fn sample_version() -> VersionMessage {
    VersionMessage {
        protocol_version: PROTOCOL_VERSION,
        services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        timestamp_seconds: 1_700_000_000,
        receiver: ServiceAddress::default(),
        sender: ServiceAddress::default(),
        nonce: 0x0123_4567_89ab_cdef,
        user_agent: UserAgent::new(b"/Ibex:0.1.0/".to_vec()).unwrap(),
        start_height: 800_000,
        relay: Some(true),
    }
}

/// One message of every type the crate decodes, plus unknown commands with
/// and without a BIP324 short id.
pub fn every_message() -> Vec<NetworkMessage> {
    let genesis = Params::for_network(Network::Main).genesis.header;
    let locator = LocatorRequest {
        locator_version: 70_016,
        locator_hashes: vec![BlockHash([1; 32]), BlockHash([2; 32])],
        stop_hash: BlockHash::default(),
    };
    let inventory =
        vec![Inventory { inventory_type: InventoryType::WITNESS_BLOCK, hash: Hash256([3; 32]) }];
    let address = ServiceAddress { services: ServiceFlags::NETWORK, ip_bytes: [1; 16], port: 8333 };
    let address_v2 = AddressV2Entry {
        time_seconds: 1_650_000_000,
        services: ServiceFlags::NETWORK,
        address: NetworkAddress::TorV3([0x44; 32]),
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
        NetworkMessage::AddressV2(vec![address_v2]),
        NetworkMessage::GetAddress,
        NetworkMessage::FeeFilter { fee_rate_sat_per_kvb: 1_000 },
        NetworkMessage::Mempool,
        NetworkMessage::Unknown { command: Command::new("sendtxrcncl").unwrap() },
        NetworkMessage::Unknown { command: Command::new("tx").unwrap() },
        NetworkMessage::Unknown { command: Command::new("").unwrap() },
    ]
}

/// Feeds `wire` in chunks of the given sizes (cycled; 0 counts as 1) and
/// collects every outcome, stopping at an error that disconnects.
pub fn feed(
    transport: &mut Transport,
    wire: &[u8],
    chunk_sizes: &[usize],
) -> Vec<Result<Frame, TransportError>> {
    let mut outcomes = Vec::new();
    let mut position = 0;
    let mut chunk_index = 0;
    while position < wire.len() {
        let size = chunk_sizes[chunk_index % chunk_sizes.len()].max(1);
        chunk_index += 1;
        let mut chunk = &wire[position..wire.len().min(position + size)];
        position += chunk.len();
        loop {
            let consumed = transport.push(chunk);
            chunk = &chunk[consumed..];
            match transport.next_message() {
                Ok(Some(frame)) => outcomes.push(Ok(frame)),
                Ok(None) => {
                    assert!(chunk.is_empty(), "no message and bytes left");
                    break;
                }
                Err(error) => {
                    let disconnects = error.disconnects();
                    outcomes.push(Err(error));
                    if disconnects {
                        return outcomes;
                    }
                }
            }
        }
    }
    outcomes
}

/// The messages of the frames, all of which must be `Ok`.
pub fn messages(outcomes: Vec<Result<Frame, TransportError>>) -> Vec<NetworkMessage> {
    outcomes
        .into_iter()
        .map(|outcome| NetworkMessage::from_frame(outcome.unwrap()).unwrap())
        .collect()
}

/// Runs the handshake between two transports in memory, passing all
/// output each round, until both speak v2.
pub fn complete_handshake(initiator: &mut Transport, responder: &mut Transport) {
    for _round in 0..4 {
        let mut wire = Vec::new();
        initiator.take_output(&mut wire);
        assert!(feed(responder, &wire, &[wire.len()]).is_empty());
        let mut wire = Vec::new();
        responder.take_output(&mut wire);
        assert!(feed(initiator, &wire, &[wire.len()]).is_empty());
    }
    assert_eq!(initiator.kind(), TransportKind::V2);
    assert_eq!(responder.kind(), TransportKind::V2);
    assert_eq!(initiator.session_id(), responder.session_id());
}

/// Encodes every message into one stream.
pub fn encode_all(transport: &mut Transport, messages: &[NetworkMessage]) -> Vec<u8> {
    let mut wire = Vec::new();
    for message in messages {
        transport.encode(message, &mut wire).unwrap();
    }
    wire
}
