//! Locators and serving `getheaders`, against Core's rules: the locator's
//! stepping, the fork point of a received locator, 2,000 headers at most,
//! the stop hash, an empty locator.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_p2p::sync::locator::{
    find_fork, headers_to_serve, locator_entries, ChainView, HashChain, LOCATOR_ENTRIES_MAX,
};
use ibex_p2p::LocatorRequest;
use ibex_primitives::BlockHash;

fn hash(branch: u8, height: u32) -> BlockHash {
    let mut bytes = [branch; 32];
    bytes[..4].copy_from_slice(&height.to_le_bytes());
    BlockHash(bytes)
}

fn chain(branch_from: u32, tip_height: u32) -> HashChain {
    let hashes: Vec<BlockHash> = (0..=tip_height)
        .map(|height| if height < branch_from { hash(0, height) } else { hash(1, height) })
        .collect();
    HashChain::from_hashes(&hashes).unwrap()
}

fn request(locator_hashes: Vec<BlockHash>, stop_hash: BlockHash) -> LocatorRequest {
    LocatorRequest { locator_version: 70_016, locator_hashes, stop_hash }
}

#[test]
fn locator_is_dense_then_doubles_and_ends_at_genesis() {
    let ours = chain(u32::MAX, 900_000);
    let locator = locator_entries(&ours, 900_000);
    let heights: Vec<u32> = locator.iter().map(|entry| ours.height_of(entry).unwrap()).collect();
    assert_eq!(&heights[..11], &(899_990..=900_000).rev().collect::<Vec<u32>>()[..]);
    // After the 11 dense entries each gap doubles: 1, 2, 4, ...
    let gaps: Vec<u32> = heights.windows(2).skip(10).map(|pair| pair[0] - pair[1]).collect();
    for (index, gap) in gaps.iter().take(gaps.len() - 1).enumerate() {
        assert_eq!(*gap, 1 << index, "gap {index}");
    }
    assert_eq!(*heights.last().unwrap(), 0);
    assert!(locator.len() <= LOCATOR_ENTRIES_MAX);
    assert_eq!(locator.len(), 31);
}

#[test]
fn fork_is_the_first_locator_hash_on_our_chain() {
    let ours = chain(u32::MAX, 5_000);
    // The peer's chain left ours after height 3,999.
    let theirs = chain(4_000, 6_000);
    let locator = locator_entries(&theirs, 6_000);
    let fork = find_fork(&ours, &locator).unwrap();
    assert!(fork < 4_000, "{fork}");
    assert_eq!(ours.hash_at(fork), theirs.hash_at(fork));
    // Unknown hashes only: genesis.
    assert_eq!(find_fork(&ours, &[hash(9, 1), hash(9, 2)]), Some(0));
    assert_eq!(find_fork(&HashChain::new(), &[hash(0, 0)]), None);
}

#[test]
fn serves_at_most_2000_headers_after_the_fork() {
    let ours = chain(u32::MAX, 5_000);
    let range = headers_to_serve(&ours, &request(vec![hash(0, 100)], BlockHash::ZERO)).unwrap();
    assert_eq!(range, 101..=2_100);
    // Close to our tip: up to the tip.
    let range = headers_to_serve(&ours, &request(vec![hash(0, 4_500)], BlockHash::ZERO)).unwrap();
    assert_eq!(range, 4_501..=5_000);
    // The peer has our tip: an empty reply.
    let range = headers_to_serve(&ours, &request(vec![hash(0, 5_000)], BlockHash::ZERO)).unwrap();
    assert_eq!(range.count(), 0);
}

#[test]
fn stops_at_the_stop_hash() {
    let ours = chain(u32::MAX, 5_000);
    let range = headers_to_serve(&ours, &request(vec![hash(0, 100)], hash(0, 150))).unwrap();
    assert_eq!(range, 101..=150);
    // A stop hash past the 2,000 limit, or below the fork, or unknown,
    // changes nothing.
    let range = headers_to_serve(&ours, &request(vec![hash(0, 100)], hash(0, 4_000))).unwrap();
    assert_eq!(range, 101..=2_100);
    let range = headers_to_serve(&ours, &request(vec![hash(0, 100)], hash(0, 50))).unwrap();
    assert_eq!(range, 101..=2_100);
    let range = headers_to_serve(&ours, &request(vec![hash(0, 100)], hash(7, 7))).unwrap();
    assert_eq!(range, 101..=2_100);
}

#[test]
fn empty_locator_asks_for_the_stop_hash_alone() {
    let ours = chain(u32::MAX, 300);
    assert_eq!(headers_to_serve(&ours, &request(Vec::new(), hash(0, 42))), Some(42..=42));
    assert_eq!(headers_to_serve(&ours, &request(Vec::new(), hash(5, 42))), None);
}

#[test]
fn a_locator_from_another_branch_serves_our_branch_from_the_fork() {
    let ours = chain(3_000, 3_500);
    let theirs = chain(u32::MAX, 4_000);
    let locator = locator_entries(&theirs, 4_000);
    let range = headers_to_serve(&ours, &request(locator, BlockHash::ZERO)).unwrap();
    let first = *range.start();
    assert!(first <= 3_000, "{first}");
    assert_eq!(*range.end(), 3_500);
    assert_eq!(ours.hash_at(first - 1), theirs.hash_at(first - 1));
}
