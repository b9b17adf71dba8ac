//! Banned addresses, in memory, each with an expiry (Core's `BanMan`
//! without its `banlist.json`; discouragement is a ban here, see
//! [`crate::net::manager`]).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use crate::net::address::canonical_ip;
use crate::net::reason::BanReason;

/// The most addresses banned at once. Core discourages into a rolling
/// bloom filter of 50,000 entries; at about 64 bytes an entry this is
/// 3.2 MB. When full, the ban that ends soonest makes room.
pub const BANNED_ADDRESSES_MAX: usize = 50_000;

/// One banned address (Core's `listbanned` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BanEntry {
    /// The address (IPv4-mapped addresses as IPv4).
    pub address: IpAddr,
    /// Why.
    pub reason: BanReason,
    /// When the ban was made.
    pub created: SystemTime,
    /// When it ends.
    pub until: SystemTime,
}

/// The banned addresses.
#[derive(Debug, Default)]
pub(crate) struct BanList {
    entries: HashMap<IpAddr, BanEntry>,
}

impl BanList {
    /// Bans `address` from `now` for `duration`; an existing ban of the
    /// same kind that ends later is kept. A manual ban (Core's `setban`)
    /// replaces a discouragement and is never replaced by one (Core keeps
    /// them apart: `listbanned` shows manual bans only).
    pub fn insert(
        &mut self,
        address: IpAddr,
        reason: BanReason,
        now: SystemTime,
        duration: Duration,
    ) {
        let address = canonical_ip(address);
        let until = now.checked_add(duration).unwrap_or(now + Duration::from_secs(u32::MAX as u64));
        if let Some(existing) = self.entries.get(&address) {
            let manual = |reason| reason == BanReason::Manual;
            let outranked = manual(existing.reason) && !manual(reason);
            let outranks = manual(reason) && !manual(existing.reason);
            if outranked || (existing.until >= until && !outranks) {
                return;
            }
        } else if self.entries.len() >= BANNED_ADDRESSES_MAX {
            self.remove_expired(now);
            if self.entries.len() >= BANNED_ADDRESSES_MAX {
                self.remove_soonest_ending();
            }
        }
        self.entries.insert(address, BanEntry { address, reason, created: now, until });
        assert!(self.entries.len() <= BANNED_ADDRESSES_MAX);
    }

    /// The ban on `address` in force at `now`, if any (an expired one is
    /// removed).
    pub fn get(&mut self, address: IpAddr, now: SystemTime) -> Option<BanEntry> {
        let address = canonical_ip(address);
        let entry = *self.entries.get(&address)?;
        if entry.until <= now {
            self.entries.remove(&address);
            return None;
        }
        Some(entry)
    }

    /// Lifts the ban on `address`; whether there was one.
    pub fn remove(&mut self, address: IpAddr) -> bool {
        self.entries.remove(&canonical_ip(address)).is_some()
    }

    /// The bans in force at `now`, soonest ending first.
    pub fn list(&mut self, now: SystemTime) -> Vec<BanEntry> {
        self.remove_expired(now);
        let mut entries: Vec<BanEntry> = self.entries.values().copied().collect();
        entries.sort_by_key(|entry| (entry.until, entry.address));
        entries
    }

    fn remove_expired(&mut self, now: SystemTime) {
        self.entries.retain(|_, entry| entry.until > now);
    }

    fn remove_soonest_ending(&mut self) {
        let soonest =
            self.entries.values().min_by_key(|entry| entry.until).map(|entry| entry.address);
        if let Some(address) = soonest {
            self.entries.remove(&address);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn address(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 0, 0, last))
    }

    #[test]
    fn bans_expire_and_longer_bans_win() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut bans = BanList::default();
        bans.insert(address(1), BanReason::Manual, start, Duration::from_secs(60));
        assert!(bans.get(address(1), start + Duration::from_secs(59)).is_some());
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap_or(address(0));
        assert!(bans.get(mapped, start).is_some(), "an IPv4-mapped address is the IPv4 address");
        bans.insert(address(1), BanReason::Misbehaving, start, Duration::from_secs(100));
        assert_eq!(
            bans.list(start)[0].reason,
            BanReason::Manual,
            "a discouragement does not replace a manual ban"
        );
        bans.insert(address(3), BanReason::Misbehaving, start, Duration::from_secs(100));
        bans.insert(address(3), BanReason::Manual, start, Duration::from_secs(10));
        let third = bans.get(address(3), start).map(|entry| entry.reason);
        assert_eq!(third, Some(BanReason::Manual), "a manual ban replaces a discouragement");
        bans.remove(address(3));
        assert!(bans.get(address(1), start + Duration::from_secs(60)).is_none());
        assert!(bans.list(start).is_empty(), "expired entries are dropped");
        bans.insert(address(2), BanReason::Manual, start, Duration::MAX);
        assert!(bans.remove(address(2)));
        assert!(!bans.remove(address(2)));
    }

    #[test]
    fn a_full_list_drops_the_ban_ending_soonest() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut bans = BanList::default();
        for index in 0..BANNED_ADDRESSES_MAX {
            let ip = IpAddr::V4(Ipv4Addr::from(index as u32 + 1));
            bans.insert(ip, BanReason::Misbehaving, now, Duration::from_secs(100 + index as u64));
        }
        bans.insert(address(7), BanReason::Manual, now, Duration::from_secs(1_000_000));
        assert_eq!(bans.list(now).len(), BANNED_ADDRESSES_MAX);
        assert!(
            bans.get(IpAddr::V4(Ipv4Addr::from(1)), now).is_none(),
            "the soonest-ending ban went"
        );
        assert!(bans.get(address(7), now).is_some());
    }
}
