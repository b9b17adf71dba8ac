use super::*;
use std::net::Ipv4Addr;

fn address(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
}

fn numbered(index: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0b00_0000 + index as u32))
}

fn start() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000)
}

#[test]
fn bans_expire_and_longer_bans_win() {
    let start = start();
    let mut bans = BanList::default();
    bans.insert(address(1), BanReason::Manual, start, Duration::from_secs(60));
    assert!(bans.banned(address(1), start + Duration::from_secs(59)).is_some());
    let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap_or(address(0));
    assert!(bans.banned(mapped, start).is_some(), "an IPv4-mapped address is the IPv4 address");
    bans.insert(address(1), BanReason::Manual, start, Duration::from_secs(30));
    assert_eq!(
        bans.banned(address(1), start).map(|entry| entry.until),
        Some(start + Duration::from_secs(60)),
        "the ban ending later is kept"
    );
    assert!(bans.banned(address(1), start + Duration::from_secs(60)).is_none());
    assert!(bans.list(start).is_empty(), "expired entries are dropped");
    bans.insert(address(2), BanReason::Manual, start, Duration::MAX);
    assert!(bans.remove(address(2)));
    assert!(!bans.remove(address(2)));
    assert!(bans.is_consistent());
}

#[test]
fn manual_bans_and_discouragements_are_kept_apart() {
    let start = start();
    let mut bans = BanList::default();
    bans.insert(address(1), BanReason::Manual, start, Duration::from_secs(60));
    bans.insert(address(1), BanReason::Misbehaving, start, Duration::from_secs(100));
    assert_eq!(bans.get(address(1), start).map(|entry| entry.reason), Some(BanReason::Manual));
    assert!(bans.is_discouraged(address(1), start));
    bans.insert(address(3), BanReason::Misbehaving, start, Duration::from_secs(100));
    assert!(bans.banned(address(3), start).is_none(), "a discouragement is no manual ban");
    let listed: Vec<IpAddr> = bans.list(start).iter().map(|entry| entry.address).collect();
    assert_eq!(listed, [address(1)], "listbanned shows manual bans only");
    assert!(!bans.remove(address(3)), "setban remove lifts manual bans only");
    assert!(bans.is_discouraged(address(3), start));
    bans.clear_manual();
    assert!(bans.banned(address(1), start).is_none());
    assert!(bans.is_discouraged(address(1), start), "clearbanned keeps discouragements");
    assert_eq!(bans.counts(), (0, 2));
}

/// The attacker: 50,000 and then 50,000 more addresses misbehave (each
/// connection from a fresh address). The operator's bans all stay, the
/// discouraged set never passes its bound, and the work per insert and
/// look-up stays a few entries (counted, not timed).
#[test]
fn discouraged_floods_never_remove_manual_bans_and_cost_a_few_steps_each() {
    let now = start();
    let mut bans = BanList::default();
    let operator: Vec<IpAddr> = (1..=100).map(address).collect();
    for &banned in &operator {
        bans.insert(banned, BanReason::Manual, now, Duration::from_secs(60));
    }
    let inserts = 2 * DISCOURAGED_ADDRESSES_MAX;
    let steps_before = bans.steps();
    for index in 0..inserts {
        let at = now + Duration::from_millis(index as u64);
        bans.insert(numbered(index), BanReason::Misbehaving, at, Duration::from_secs(86_400));
        assert!(bans.counts().1 <= DISCOURAGED_ADDRESSES_MAX);
    }
    let insert_steps = bans.steps() - steps_before;
    assert!(
        insert_steps <= 3 * inserts as u64,
        "{insert_steps} steps for {inserts} inserts: a scan per insert"
    );
    assert_eq!(bans.counts(), (100, DISCOURAGED_ADDRESSES_MAX));
    for &banned in &operator {
        let entry = bans.banned(banned, now);
        assert_eq!(entry.map(|entry| entry.reason), Some(BanReason::Manual), "{banned}");
    }
    assert!(!bans.is_discouraged(numbered(0), now), "the oldest discouragement made room");
    assert!(bans.is_discouraged(numbered(inserts - 1), now));
    let steps_before = bans.steps();
    for index in 0..1_000 {
        bans.get(numbered(inserts - 1 - index), now);
    }
    assert_eq!(bans.steps(), steps_before, "look-ups in force touch no other entry");
    assert!(bans.is_consistent());
}

#[test]
fn a_full_set_drops_the_entry_ending_soonest_and_expired_ones_first() {
    let now = start();
    let mut bans = BanList::default();
    for index in 0..MANUAL_BANS_MAX {
        let duration = Duration::from_secs(100 + index as u64);
        bans.insert(numbered(index), BanReason::Manual, now, duration);
    }
    bans.insert(address(7), BanReason::Manual, now, Duration::from_secs(1_000_000));
    assert_eq!(bans.list(now).len(), MANUAL_BANS_MAX);
    assert!(bans.banned(numbered(0), now).is_none(), "the soonest-ending ban went");
    assert!(bans.banned(numbered(1), now).is_some());
    assert!(bans.banned(address(7), now).is_some());
    let later = now + Duration::from_secs(110);
    let steps_before = bans.steps();
    bans.insert(address(8), BanReason::Manual, later, Duration::from_secs(60));
    let steps = bans.steps() - steps_before;
    assert!(steps <= 21, "{steps} steps: ten expired bans went, two steps each");
    assert_eq!(bans.counts().0, MANUAL_BANS_MAX - 9);
    assert!(bans.is_consistent());
}
