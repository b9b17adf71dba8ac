//! Property tests: any split of a stream gives the same frames as the whole;
//! arbitrary bytes never panic the frame decoder or the message decoder;
//! arbitrary messages round-trip; whatever decodes re-encodes to a payload
//! that decodes to the same message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_p2p::messages::feature::FeatureMessage;
use ibex_p2p::messages::spent_coins::{GetSpentCoins, IndexedSpentCoin, SpentCoins};
use ibex_p2p::{
    encode_frame, encode_message, AddressEntry, AddressV2Entry, Command, Frame, FrameDecoder,
    FrameError, Inventory, InventoryType, LocatorRequest, NetworkAddress, NetworkMessage,
    ServiceAddress, ServiceFlags, UserAgent, VersionMessage, FRAME_HEADER_BYTES,
};
use ibex_primitives::{Amount, BlockHash, Hash256, Header, Height, SpentCoinBuf, MAX_MONEY};
use proptest::prelude::*;

const MAGIC: [u8; 4] = [0x0b, 0x11, 0x09, 0x07];

/// Feeds the chunks and collects every outcome, stopping at a disconnect.
fn decode_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<Result<Frame, FrameError>> {
    let mut decoder = FrameDecoder::new(MAGIC);
    let mut outcomes = Vec::new();
    for mut chunk in chunks {
        loop {
            let consumed = decoder.push(chunk);
            chunk = &chunk[consumed..];
            assert!(decoder.buffered_bytes() <= FRAME_HEADER_BYTES + 4_000_000);
            match decoder.next_frame() {
                Ok(Some(frame)) => outcomes.push(Ok(frame)),
                Ok(None) => break,
                Err(error) if error.disconnects() => {
                    outcomes.push(Err(error));
                    return outcomes;
                }
                Err(error) => outcomes.push(Err(error)),
            }
        }
    }
    outcomes
}

fn split_at_cuts(wire: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut positions: Vec<usize> = cuts.iter().map(|cut| cut % (wire.len() + 1)).collect();
    positions.push(0);
    positions.push(wire.len());
    positions.sort_unstable();
    positions.windows(2).map(|pair| wire[pair[0]..pair[1]].to_vec()).collect()
}

fn command() -> impl Strategy<Value = Command> {
    prop::collection::vec(0x20u8..0x7f, 0..=12)
        .prop_map(|name| Command::new(std::str::from_utf8(&name).unwrap()).unwrap())
}

/// A stream of frames, some with a corrupted checksum or command.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let frame = (command(), prop::collection::vec(any::<u8>(), 0..300), 0u8..8);
    prop::collection::vec(frame, 0..8).prop_map(|frames| {
        let mut wire = Vec::new();
        for (command, payload, corruption) in frames {
            let start = wire.len();
            encode_frame(MAGIC, command, &payload, &mut wire).unwrap();
            match corruption {
                0 => wire[start + 20] ^= 0x80,
                1 => wire[start + 4] = 0x07,
                _ => {}
            }
        }
        wire
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_split_gives_the_same_frames(
        wire in stream(),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
    ) {
        let whole = decode_chunks([&wire[..]]);
        let pieces = split_at_cuts(&wire, &cuts);
        prop_assert_eq!(&decode_chunks(pieces.iter().map(Vec::as_slice)), &whole);
        prop_assert_eq!(&decode_chunks(wire.chunks(1)), &whole);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_frame_decoder(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        with_magic in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut wire = if with_magic { MAGIC.to_vec() } else { Vec::new() };
        wire.extend_from_slice(&bytes);
        let pieces = split_at_cuts(&wire, &cuts);
        let outcomes = decode_chunks(pieces.iter().map(Vec::as_slice));
        prop_assert_eq!(outcomes, decode_chunks([&wire[..]]));
    }

    #[test]
    fn arbitrary_payloads_never_panic_and_decoded_messages_re_encode(
        command_index in 0usize..21,
        payload in prop::collection::vec(any::<u8>(), 0..400),
        count_prefix in prop_oneof![Just(None), (0u64..3000).prop_map(Some)],
    ) {
        let commands = [
            Command::VERSION, Command::VERACK, Command::WTXID_RELAY, Command::SEND_ADDRESS_V2,
            Command::SEND_HEADERS, Command::SEND_COMPACT, Command::PING, Command::PONG,
            Command::GET_HEADERS, Command::GET_BLOCKS, Command::HEADERS, Command::GET_DATA,
            Command::INVENTORY, Command::NOT_FOUND, Command::BLOCK, Command::ADDRESS,
            Command::ADDRESS_V2, Command::GET_ADDRESS, Command::FEE_FILTER, Command::MEMPOOL,
            Command::new("other").unwrap(),
        ];
        let command = commands[command_index];
        // A plausible count in front makes the list decoders go deeper.
        let mut bytes = Vec::new();
        if let Some(count) = count_prefix {
            ibex_primitives::encode::write_compact_size(&mut bytes, count);
        }
        bytes.extend_from_slice(&payload);
        if let Ok(message) = NetworkMessage::decode(command, &bytes) {
            let mut encoded = Vec::new();
            message.encode_payload(&mut encoded);
            prop_assert_eq!(NetworkMessage::decode(command, &encoded), Ok(message));
        }
    }

    #[test]
    fn arbitrary_messages_round_trip(message in network_message()) {
        let mut wire = Vec::new();
        encode_message(MAGIC, &message, &mut wire).unwrap();
        let outcomes = decode_chunks([&wire[..]]);
        prop_assert_eq!(outcomes.len(), 1);
        let frame = outcomes.into_iter().next().unwrap().unwrap();
        prop_assert_eq!(NetworkMessage::from_frame(frame), Ok(message));
    }
}

fn hash() -> impl Strategy<Value = [u8; 32]> {
    any::<[u8; 32]>()
}

fn service_address() -> impl Strategy<Value = ServiceAddress> {
    (any::<u64>(), any::<[u8; 16]>(), any::<u16>()).prop_map(|(services, ip_bytes, port)| {
        ServiceAddress { services: ServiceFlags::from_bits(services), ip_bytes, port }
    })
}

fn version() -> impl Strategy<Value = VersionMessage> {
    let head = (any::<i32>(), any::<u64>(), any::<i64>(), service_address(), service_address());
    let tail = (
        any::<u64>(),
        prop::collection::vec(any::<u8>(), 0..=256),
        any::<i32>(),
        any::<Option<bool>>(),
    );
    (head, tail).prop_map(
        |((protocol_version, services, timestamp_seconds, receiver, sender), tail)| {
            let (nonce, user_agent, start_height, relay) = tail;
            VersionMessage {
                protocol_version,
                services: ServiceFlags::from_bits(services),
                timestamp_seconds,
                receiver,
                sender,
                nonce,
                user_agent: UserAgent::new(user_agent).unwrap(),
                start_height,
                relay,
            }
        },
    )
}

fn network_address() -> impl Strategy<Value = NetworkAddress> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(NetworkAddress::Ipv4),
        any::<[u8; 16]>().prop_map(NetworkAddress::Ipv6),
        hash().prop_map(NetworkAddress::TorV3),
        hash().prop_map(NetworkAddress::I2p),
        any::<[u8; 16]>().prop_map(NetworkAddress::Cjdns),
        (7u8.., prop::collection::vec(any::<u8>(), 0..=512)).prop_map(
            |(network_id, address_bytes)| NetworkAddress::Unknown { network_id, address_bytes }
        ),
        prop::collection::vec(any::<u8>(), 0..20)
            .prop_map(|address_bytes| NetworkAddress::Unknown { network_id: 3, address_bytes }),
    ]
}

fn inventory() -> impl Strategy<Value = Vec<Inventory>> {
    prop::collection::vec((any::<u32>(), hash()), 0..40).prop_map(|entries| {
        entries
            .into_iter()
            .map(|(bits, hash)| Inventory {
                inventory_type: InventoryType::from_bits(bits),
                hash: Hash256(hash),
            })
            .collect()
    })
}

fn locator() -> impl Strategy<Value = LocatorRequest> {
    (any::<i32>(), prop::collection::vec(hash(), 0..=101), hash()).prop_map(
        |(version, hashes, stop)| LocatorRequest {
            locator_version: version,
            locator_hashes: hashes.into_iter().map(BlockHash).collect(),
            stop_hash: BlockHash(stop),
        },
    )
}

fn headers() -> impl Strategy<Value = Vec<Header>> {
    prop::collection::vec(any::<[u8; 80]>(), 0..30)
        .prop_map(|headers| headers.iter().map(Header::decode).collect())
}

fn addresses() -> impl Strategy<Value = NetworkMessage> {
    let entry = (any::<u32>(), service_address())
        .prop_map(|(time_seconds, address)| AddressEntry { time_seconds, address });
    let entry_v2 = (any::<u32>(), any::<u64>(), network_address(), any::<u16>()).prop_map(
        |(time_seconds, services, address, port)| AddressV2Entry {
            time_seconds,
            services: ServiceFlags::from_bits(services),
            address,
            port,
        },
    );
    prop_oneof![
        prop::collection::vec(entry, 0..30).prop_map(NetworkMessage::Address),
        prop::collection::vec(entry_v2, 0..30).prop_map(NetworkMessage::AddressV2),
    ]
}

/// BIP 434 and BIP 455 messages within their bounds.
fn swiftsync_messages() -> impl Strategy<Value = NetworkMessage> {
    let feature =
        (prop::collection::vec(any::<u8>(), 4..=80), prop::collection::vec(any::<u8>(), 0..=512))
            .prop_map(|(id, data)| NetworkMessage::Feature(FeatureMessage::new(&id, &data)));
    let request = (hash(), any::<u32>()).prop_map(|(hash, cutoff_height)| {
        NetworkMessage::GetSpentCoins(GetSpentCoins { block_hash: BlockHash(hash), cutoff_height })
    });
    let coin = (
        any::<u32>(),
        0..=MAX_MONEY,
        prop::collection::vec(any::<u8>(), 0..40),
        0u32..1 << 31,
        any::<bool>(),
    )
        .prop_map(|(input_index, value, script_pubkey, height, is_coinbase)| {
            IndexedSpentCoin {
                input_index,
                coin: SpentCoinBuf {
                    value: Amount::from_sat(value).unwrap(),
                    script_pubkey,
                    height: Height::new(height),
                    is_coinbase,
                },
            }
        });
    let answer = (hash(), prop::collection::vec(coin, 0..20)).prop_map(|(hash, coins)| {
        NetworkMessage::SpentCoins(SpentCoins { block_hash: BlockHash(hash), coins })
    });
    prop_oneof![feature, request, answer]
}

fn network_message() -> impl Strategy<Value = NetworkMessage> {
    prop_oneof![
        version().prop_map(NetworkMessage::Version),
        prop_oneof![
            Just(NetworkMessage::Verack),
            Just(NetworkMessage::WtxidRelay),
            Just(NetworkMessage::SendAddressV2),
            Just(NetworkMessage::SendHeaders),
            Just(NetworkMessage::GetAddress),
            Just(NetworkMessage::Mempool),
        ],
        (any::<bool>(), any::<u64>()).prop_map(|(high_bandwidth, compact_blocks_version)| {
            NetworkMessage::SendCompact { high_bandwidth, compact_blocks_version }
        }),
        any::<u64>().prop_map(|nonce| NetworkMessage::Ping { nonce }),
        any::<Option<u64>>().prop_map(|nonce| NetworkMessage::Pong { nonce }),
        locator().prop_map(NetworkMessage::GetHeaders),
        locator().prop_map(NetworkMessage::GetBlocks),
        headers().prop_map(NetworkMessage::Headers),
        inventory().prop_map(NetworkMessage::GetData),
        inventory().prop_map(NetworkMessage::Inventory),
        inventory().prop_map(NetworkMessage::NotFound),
        prop::collection::vec(any::<u8>(), 0..2000).prop_map(NetworkMessage::Block),
        addresses(),
        any::<i64>()
            .prop_map(|fee_rate_sat_per_kvb| NetworkMessage::FeeFilter { fee_rate_sat_per_kvb }),
        swiftsync_messages(),
    ]
}
