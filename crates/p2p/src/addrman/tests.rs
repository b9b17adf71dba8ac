//! The address manager's bounds, eviction, selection and file.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};

use super::buckets::{BucketKey, BUCKET_SLOTS, NEW_BUCKETS_PER_SOURCE_GROUP};
use super::file::{decode, encode};
use super::record::{DAY_SECONDS, HORIZON_SECONDS};
use super::*;
use crate::services::ServiceFlags;

const NOW: i64 = 1_700_000_000;
const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
const FULL_NODE: ServiceFlags = ServiceFlags::from_bits(1 | 8);

fn manager() -> AddressManager {
    AddressManager::new(AddressPolicy::default(), &[7; 32])
}

/// The `index`th of many distinct routable IPv4 addresses, spread over
/// many /16 groups.
fn address(index: u32) -> PeerAddress {
    let value = 0x0b00_0000u64 + u64::from(index) * 7919;
    let [a, b, c, d] = u32::try_from(value).unwrap().to_be_bytes();
    PeerAddress::from_socket_address(SocketAddr::from((Ipv4Addr::new(a, b, c, d), 8333)))
}

fn candidate(address: PeerAddress, time_seconds: i64) -> AddressCandidate {
    AddressCandidate { address, services: FULL_NODE, time_seconds }
}

/// A peer source in its own /16 group (`index` below 256).
fn peer_source(index: u32) -> AddressSource {
    let ip = Ipv4Addr::new(200, u8::try_from(index).unwrap(), 1, 1);
    let peer = PeerAddress::from_socket_address(SocketAddr::from((ip, 8333)));
    AddressSource::peer(peer, AddressPolicy::default())
}

#[test]
fn a_flood_from_one_source_fills_only_its_buckets() {
    let mut manager = manager();
    let source = peer_source(1);
    let flood: Vec<AddressCandidate> =
        (0..100_000).map(|index| candidate(address(index), NOW)).collect();
    // In messages of 1,000 entries, as a peer would send them.
    for message in flood.chunks(1000) {
        manager.add(message, source, 2 * 3600, NOW);
    }
    manager.assert_consistent();
    let bound = NEW_BUCKETS_PER_SOURCE_GROUP as usize * BUCKET_SLOTS;
    assert!(manager.len() <= bound, "{} addresses from one source", manager.len());
    assert!(manager.len() > bound / 2, "the source's buckets fill: {}", manager.len());
    let key = BucketKey::new(*manager.key());
    let buckets: HashSet<usize> = manager
        .records()
        .map(|record| {
            key.new_slot(&record.address, &record.source, AddressPolicy::default()).bucket
        })
        .collect();
    assert!(buckets.len() <= NEW_BUCKETS_PER_SOURCE_GROUP as usize, "{} buckets", buckets.len());
    // Another source still has room: most of its addresses (from 100
    // groups) get in; only those hashed to a bucket the flood filled (6 %
    // of them, on average) or colliding in a bucket are dropped.
    let others: Vec<AddressCandidate> =
        (0..100).map(|index| candidate(address(200_000 + index * 10), NOW)).collect();
    let added = manager.add(&others, peer_source(2), 0, NOW);
    assert!(added >= 80, "only {added} of 100 from a second source");
    manager.assert_consistent();
}

#[test]
fn terrible_addresses_are_evicted_and_good_ones_kept() {
    let mut manager = manager();
    let source = peer_source(3);
    let first: Vec<AddressCandidate> =
        (0..20_000).map(|index| candidate(address(index), NOW)).collect();
    manager.add(&first, source, 0, NOW);
    let full = manager.len();
    // The next day, from the same source: the slots hold good addresses,
    // so newcomers are dropped (a few take slots still free).
    let later = NOW + DAY_SECONDS;
    let second: Vec<AddressCandidate> =
        (50_000..70_000).map(|index| candidate(address(index), later)).collect();
    let added = manager.add(&second, source, 0, later);
    assert!(added < full / 10, "{added} newcomers displaced good addresses ({full})");
    // Past the horizon the old ones are terrible: newcomers replace them.
    let much_later = NOW + HORIZON_SECONDS + DAY_SECONDS;
    let third: Vec<AddressCandidate> =
        (80_000..100_000).map(|index| candidate(address(index), much_later)).collect();
    let added = manager.add(&third, source, 0, much_later);
    assert!(added > full / 2, "only {added} replaced terrible addresses ({full})");
    assert!(manager.len() <= full + 64, "the bound holds: {}", manager.len());
    manager.assert_consistent();
}

#[test]
fn unacceptable_addresses_and_repeats_are_not_added() {
    let mut manager = manager();
    let loopback = PeerAddress::from_socket_address(SocketAddr::from(([127, 0, 0, 1], 18444)));
    let private = PeerAddress::from_socket_address(SocketAddr::from(([10, 1, 2, 3], 8333)));
    let source = peer_source(4);
    assert_eq!(
        manager.add(&[candidate(loopback, NOW), candidate(private, NOW)], source, 0, NOW),
        0
    );
    assert_eq!(manager.add(&[candidate(address(1), NOW)], source, 0, NOW), 1);
    assert_eq!(manager.add(&[candidate(address(1), NOW + 10)], source, 0, NOW), 0);
    assert_eq!(manager.len(), 1);
    let mut regtest = AddressManager::new(AddressPolicy { loopback_allowed: true }, &[1; 32]);
    assert_eq!(regtest.add(&[candidate(loopback, NOW)], source, 0, NOW), 1);
}

#[test]
fn relayed_addresses_are_aged_but_self_announcements_are_not() {
    let mut manager = manager();
    let peer = address(42);
    let source = AddressSource::peer(peer, AddressPolicy::default());
    manager.add(&[candidate(peer, NOW), candidate(address(43), NOW)], source, 7200, NOW);
    assert_eq!(manager.info(&peer).map(|info| info.time_seconds), Some(NOW));
    assert_eq!(manager.info(&address(43)).map(|info| info.time_seconds), Some(NOW - 7200));
}

#[test]
fn good_moves_to_tried_and_failures_count_once_per_success() {
    let mut manager = manager();
    let source = peer_source(5);
    manager.add(&[candidate(address(1), NOW), candidate(address(2), NOW)], source, 0, NOW);
    assert_eq!((manager.new_count(), manager.tried_count()), (2, 0));
    manager.mark_good(&address(1), ServiceFlags::WITNESS, NOW);
    let info = manager.info(&address(1));
    assert!(info.is_some_and(|info| info.tried && info.last_success_seconds == NOW));
    assert_eq!((manager.new_count(), manager.tried_count()), (1, 1));
    // Failures after the last success count once each...
    manager.mark_attempt(&address(2), true, NOW + 1);
    assert_eq!(manager.info(&address(2)).map(|info| info.attempts), Some(1));
    // ...but not again until another success (offline, say).
    manager.mark_attempt(&address(2), true, NOW + 2);
    assert_eq!(manager.info(&address(2)).map(|info| info.attempts), Some(1));
    manager.mark_attempt(&address(2), false, NOW + 3);
    assert_eq!(manager.info(&address(2)).map(|info| info.last_try_seconds), Some(NOW + 3));
    // A connection to an unknown address teaches it, straight to tried.
    manager.mark_good(&address(9), FULL_NODE, NOW);
    assert!(manager.info(&address(9)).is_some_and(|info| info.tried));
    manager.assert_consistent();
}

#[test]
fn selection_prefers_untried_failures_less_and_keeps_to_networks() {
    let mut manager = manager();
    let source = peer_source(6);
    manager.add(&[candidate(address(1), NOW), candidate(address(2), NOW)], source, 0, NOW);
    // Address 2 was just tried and failed: 1 is picked far more often.
    manager.mark_attempt(&address(2), true, NOW);
    let mut picks = [0u32; 2];
    for _ in 0..400 {
        let picked = manager.select(false, NetworkSet::ALL, NOW + 60);
        match picked.map(|selected| selected.address) {
            Some(found) if found == address(1) => picks[0] += 1,
            Some(found) if found == address(2) => picks[1] += 1,
            other => panic!("selected {other:?}"),
        }
    }
    assert!(picks[0] > 20 * picks[1].max(1), "{picks:?}");
    // Tried and new are picked about evenly when both have addresses.
    manager.mark_good(&address(1), FULL_NODE, NOW);
    let tried = (0..400)
        .filter(|_| {
            manager.select(false, NetworkSet::ALL, NOW + 3600).map(|selected| selected.address)
                == Some(address(1))
        })
        .count();
    assert!((120..=280).contains(&tried), "tried picked {tried} of 400");
    // Feelers ask for new ones only; a network without addresses gives none.
    let new_only = manager.select(true, NetworkSet::ALL, NOW + 3600);
    assert_eq!(new_only.map(|selected| selected.address), Some(address(2)));
    let ipv6_only = NetworkSet::of(&[AddressNetwork::Ipv6]);
    assert_eq!(manager.select(false, ipv6_only, NOW), None);
    assert_eq!(manager.select(false, NetworkSet::EMPTY, NOW), None);
}

#[test]
fn getaddr_samples_are_bounded_and_skip_terrible_addresses() {
    let mut manager = manager();
    let candidates: Vec<AddressCandidate> =
        (0..4000).map(|index| candidate(address(index), NOW)).collect();
    for (index, chunk) in candidates.chunks(100).enumerate() {
        manager.add(chunk, peer_source(100 + index as u32), 0, NOW);
    }
    let known = manager.len();
    let sample = manager.sample(1000, 23, NetworkSet::ALL, NOW);
    assert_eq!(sample.len(), (known * 23 / 100).min(1000));
    let distinct: HashSet<PeerAddress> = sample.iter().map(|entry| entry.address).collect();
    assert_eq!(distinct.len(), sample.len());
    // Everything terrible past the horizon: nothing to share.
    assert!(manager.sample(1000, 23, NetworkSet::ALL, NOW + HORIZON_SECONDS + 1).is_empty());
    // Fewer than 5 addresses: 23 % of them is none (Core answers nothing).
    let mut small = self::manager();
    small.add(&[candidate(address(1), NOW)], peer_source(7), 0, NOW);
    assert!(small.sample(1000, 23, NetworkSet::ALL, NOW).is_empty());
}

#[test]
fn the_file_round_trips() {
    let mut manager = manager();
    let candidates: Vec<AddressCandidate> =
        (0..3000).map(|index| candidate(address(index), NOW - index as i64)).collect();
    manager.add(&candidates, peer_source(8), 3600, NOW);
    let onion = PeerAddress::new(AddressNetwork::Onion, &[0x42; 32], 8333);
    let onion = onion.map(|onion| candidate(onion, NOW));
    manager.add(&onion.into_iter().collect::<Vec<_>>(), AddressSource::named("seed"), 0, NOW);
    for index in 0..50 {
        manager.mark_good(&address(index), FULL_NODE, NOW + 5);
    }
    manager.mark_attempt(&address(60), false, NOW + 6);
    let bytes = encode(&manager, MAGIC);
    let decoded = decode(&bytes, MAGIC, AddressPolicy::default(), &[9; 32]);
    let decoded = decoded.unwrap();
    assert_eq!(decoded.entries, manager.len());
    let restored = decoded.manager;
    restored.assert_consistent();
    assert_eq!(restored.len(), manager.len());
    assert_eq!(restored.tried_count(), manager.tried_count());
    for record in manager.records() {
        assert_eq!(restored.info(&record.address), manager.info(&record.address));
    }
    // Written again, the same bytes: nothing was lost or reordered.
    assert_eq!(encode(&restored, MAGIC), bytes);
}

#[test]
fn damaged_files_are_refused_with_their_reason() {
    let mut manager = manager();
    manager.add(&[candidate(address(1), NOW), candidate(address(2), NOW)], peer_source(9), 0, NOW);
    let bytes = encode(&manager, MAGIC);
    let read = |bytes: &[u8]| decode(bytes, MAGIC, AddressPolicy::default(), &[0; 32]).err();
    let mut flipped = bytes.clone();
    flipped[70] ^= 1;
    assert!(matches!(read(&flipped), Some(AddressFileError::ChecksumMismatch)));
    for cut in [0, 10, 40, bytes.len() - 1] {
        assert!(read(&bytes[..cut]).is_some(), "cut at {cut}");
    }
    let mut wrong_magic = bytes.clone();
    wrong_magic[0] = b'X';
    assert!(matches!(read(&wrong_magic), Some(AddressFileError::WrongMagic)));
    let mut future = bytes.clone();
    future[8] = 2;
    assert!(matches!(read(&future), Some(AddressFileError::UnsupportedVersion { version: 2 })));
    let other_network =
        decode(&bytes, [0xf9, 0xbe, 0xb4, 0xd9], AddressPolicy::default(), &[0; 32]);
    assert!(matches!(other_network.err(), Some(AddressFileError::WrongNetwork { .. })));
    // A count beyond the tables, with a valid checksum: refused, not allocated.
    let mut huge = bytes[..bytes.len() - 32].to_vec();
    huge[56..60].copy_from_slice(&u32::MAX.to_le_bytes());
    let checksum = ibex_primitives::hash::sha256d(&huge);
    huge.extend_from_slice(&checksum);
    assert!(matches!(read(&huge), Some(AddressFileError::TooManyEntries { .. })));
    // A count larger than the entries present: truncated.
    let mut short = bytes[..bytes.len() - 32].to_vec();
    short[56..60].copy_from_slice(&3u32.to_le_bytes());
    let checksum = ibex_primitives::hash::sha256d(&short);
    short.extend_from_slice(&checksum);
    assert!(matches!(read(&short), Some(AddressFileError::Truncated { entry: 3, .. })));
    // A time no clock gives (valid checksum): the entry is refused, so no
    // arithmetic on it can overflow later.
    let mut absurd = bytes[..bytes.len() - 32].to_vec();
    absurd[76..84].copy_from_slice(&i64::MIN.to_le_bytes());
    let checksum = ibex_primitives::hash::sha256d(&absurd);
    absurd.extend_from_slice(&checksum);
    assert!(matches!(read(&absurd), Some(AddressFileError::BadEntry { entry: 1 })));
    // Random bytes of every length never panic.
    let mut random = FastRandom::from_seed(&[5; 32]);
    for length in 0..300 {
        let noise: Vec<u8> = (0..length).map(|_| random.next_u64() as u8).collect();
        assert!(read(&noise).is_some());
    }
}

#[test]
fn files_on_disk_are_replaced_atomically() {
    let directory = std::env::temp_dir().join(format!("ibex-addrman-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("ibex_peers.dat");
    assert!(file::read_file(&path).unwrap().is_none());
    let mut manager = manager();
    manager.add(&[candidate(address(1), NOW)], peer_source(10), 0, NOW);
    file::write_file_atomically(&path, &encode(&manager, MAGIC)).unwrap();
    let bytes = file::read_file(&path).unwrap().unwrap();
    let decoded = decode(&bytes, MAGIC, AddressPolicy::default(), &[0; 32]).unwrap();
    assert_eq!(decoded.manager.len(), 1);
    assert!(!directory.join("ibex_peers.dat.new").exists());
    std::fs::remove_dir_all(&directory).unwrap();
}
