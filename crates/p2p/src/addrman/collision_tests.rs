//! Test-before-evict against an attacker whose addresses collide with a
//! good tried entry (Core's `m_tried_collisions`).

use std::net::{Ipv4Addr, SocketAddr};

use super::manager::TRIED_COLLISIONS_MAX;
use super::record::HOUR_SECONDS;
use super::*;
use crate::services::ServiceFlags;

const NOW: i64 = 1_700_000_000;
const FULL_NODE: ServiceFlags = ServiceFlags::from_bits(1 | 8);

fn manager() -> AddressManager {
    AddressManager::new(AddressPolicy::default(), &[9; 32])
}

fn ipv4(a: u8, b: u8, c: u8, d: u8) -> PeerAddress {
    PeerAddress::from_socket_address(SocketAddr::from((Ipv4Addr::new(a, b, c, d), 8333)))
}

/// The good entry, in the tried table since `NOW`.
fn with_good_entry() -> (AddressManager, PeerAddress) {
    let mut manager = manager();
    let good = ipv4(11, 11, 0, 1);
    manager.mark_good(&good, FULL_NODE, NOW);
    assert!(manager.info(&good).is_some_and(|info| info.tried));
    (manager, good)
}

/// Up to `count` addresses of the attacker (its /16 and the good one's)
/// whose tried slot is `good`'s.
fn colliding(manager: &AddressManager, good: &PeerAddress, count: usize) -> Vec<PeerAddress> {
    let target = manager.tried_slot_index(good);
    (1..=u16::MAX)
        .map(|index| {
            let [high, low] = index.to_be_bytes();
            ipv4(11, 11, high, low)
        })
        .filter(|address| address != good && manager.tried_slot_index(address) == target)
        .take(count)
        .collect()
}

fn is_tried(manager: &AddressManager, address: &PeerAddress) -> bool {
    manager.info(address).is_some_and(|info| info.tried)
}

#[test]
fn a_colliding_address_waits_and_a_feeler_that_answers_keeps_the_good_entry() {
    let (mut manager, good) = with_good_entry();
    let attacker = colliding(&manager, &good, 1)[0];
    // Five hours on, the good entry last connected more than 4 hours ago:
    // replaced at once without test-before-evict.
    let later = NOW + 5 * HOUR_SECONDS;
    manager.mark_good(&attacker, FULL_NODE, later);
    assert!(is_tried(&manager, &good), "the good entry is not displaced");
    assert!(manager.info(&attacker).is_some_and(|info| !info.tried), "the attacker waits in new");
    assert_eq!(manager.tried_collisions(), 1);
    manager.resolve_collisions(later + 60);
    assert_eq!(manager.tried_collisions(), 1, "untested: still waiting");
    assert!(is_tried(&manager, &good));
    let tested = manager.select_tried_collision().map(|selected| selected.address);
    assert_eq!(tested, Some(good), "the feeler tests the occupant");

    // The feeler connects: the occupant stays and the collision ends.
    manager.mark_attempt(&good, true, later + 100);
    manager.mark_good(&good, FULL_NODE, later + 101);
    manager.resolve_collisions(later + 102);
    assert_eq!(manager.tried_collisions(), 0);
    assert!(is_tried(&manager, &good));
    assert!(!is_tried(&manager, &attacker));
    manager.assert_consistent();
}

#[test]
fn the_occupant_is_replaced_only_after_its_feeler_fails() {
    let (mut manager, good) = with_good_entry();
    let attacker = colliding(&manager, &good, 1)[0];
    let later = NOW + 10 * HOUR_SECONDS;
    manager.mark_good(&attacker, FULL_NODE, later);
    // The feeler to the occupant fails: it gets a minute, then goes.
    manager.mark_attempt(&good, true, later + 10);
    manager.resolve_collisions(later + 40);
    assert!(is_tried(&manager, &good), "within the feeler's minute");
    manager.resolve_collisions(later + 71);
    assert!(is_tried(&manager, &attacker), "the failed occupant was replaced");
    assert!(manager.info(&good).is_some_and(|info| !info.tried), "and went back to new");
    assert_eq!(manager.tried_collisions(), 0);
    manager.assert_consistent();
}

#[test]
fn an_occupant_that_connected_recently_always_stays() {
    let (mut manager, good) = with_good_entry();
    let attacker = colliding(&manager, &good, 1)[0];
    manager.mark_good(&attacker, FULL_NODE, NOW + HOUR_SECONDS);
    manager.mark_attempt(&good, true, NOW + HOUR_SECONDS);
    manager.resolve_collisions(NOW + 2 * HOUR_SECONDS);
    assert_eq!(manager.tried_collisions(), 0, "dropped: the occupant is good");
    assert!(is_tried(&manager, &good));
    assert!(!is_tried(&manager, &attacker));
}

#[test]
fn an_untested_collision_replaces_the_occupant_after_the_test_window() {
    let (mut manager, good) = with_good_entry();
    let attacker = colliding(&manager, &good, 1)[0];
    let later = NOW + 5 * HOUR_SECONDS;
    manager.mark_good(&attacker, FULL_NODE, later);
    manager.resolve_collisions(later + 39 * 60);
    assert!(is_tried(&manager, &good), "within Core's 40-minute window");
    manager.resolve_collisions(later + 41 * 60);
    assert!(is_tried(&manager, &attacker), "never tested: replaced as Core does");
    manager.assert_consistent();
}

/// The attacker makes us connect to 100 addresses that all collide with
/// the good entry: the queue holds 10, the good entry stays while none
/// of its feelers fails.
#[test]
fn many_colliding_addresses_queue_at_most_ten_and_displace_nothing() {
    let (mut manager, good) = with_good_entry();
    let attackers = colliding(&manager, &good, 100);
    assert!(attackers.len() > 2 * TRIED_COLLISIONS_MAX, "{} found", attackers.len());
    let later = NOW + 5 * HOUR_SECONDS;
    for (index, attacker) in attackers.iter().enumerate() {
        manager.mark_good(attacker, FULL_NODE, later + index as i64);
        assert!(manager.tried_collisions() <= TRIED_COLLISIONS_MAX);
    }
    assert_eq!(manager.tried_collisions(), TRIED_COLLISIONS_MAX);
    manager.resolve_collisions(later + 600);
    assert!(is_tried(&manager, &good));
    assert_eq!(manager.tried_count(), 1);
    manager.mark_good(&good, FULL_NODE, later + 700);
    manager.resolve_collisions(later + 701);
    assert_eq!(manager.tried_collisions(), 0);
    assert!(is_tried(&manager, &good));
    manager.assert_consistent();
}
