//! Banned and discouraged addresses, in memory, each with an expiry
//! (Core's `BanMan` without its `banlist.json`).
//!
//! Core keeps the operator's bans (`setban`, its `m_banned`) apart from
//! the addresses of peers that misbehaved (its `m_discouraged`, a rolling
//! bloom filter of 50,000 entries), so that any number of misbehaving
//! addresses can never push out an operator's ban. `BanList` does the
//! same with two bounded `ExpiringSet`s: a discouragement only ever
//! evicts another discouragement, and a manual ban only another manual
//! ban. Each set indexes its entries by address (a hash map) and by end
//! (an ordered set), so an insert, a look-up, the removal of expired
//! entries and of the soonest-ending one cost O(log n) each, never a scan
//! of the list under the registry's lock.

use std::collections::{BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use crate::net::address::canonical_ip;
use crate::net::reason::BanReason;

/// The most addresses discouraged at once (Core's rolling bloom filter
/// holds 50,000). At about 100 bytes an entry (map and index) this is
/// 5 MB; when full, the discouragement that ends soonest makes room.
pub const DISCOURAGED_ADDRESSES_MAX: usize = 50_000;
/// The most manual bans at once (Core sets no bound: its bans are operator
/// input). When full, the manual ban that ends soonest makes room; a
/// discouragement never does.
pub const MANUAL_BANS_MAX: usize = 50_000;

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

/// Entries by address, at most `capacity`, with an index by end.
#[derive(Debug)]
pub(crate) struct ExpiringSet {
    entries: HashMap<IpAddr, BanEntry>,
    by_end: BTreeSet<(SystemTime, IpAddr)>,
    capacity: usize,
    /// Entries examined or removed so far, to show (in tests) that the
    /// work per operation stays bounded.
    steps: u64,
}

impl ExpiringSet {
    fn with_capacity(capacity: usize) -> ExpiringSet {
        ExpiringSet { entries: HashMap::new(), by_end: BTreeSet::new(), capacity, steps: 0 }
    }

    /// Records `entry` (its address canonical already); an entry for the
    /// same address that ends later is kept. When full, expired entries
    /// go first, then the one ending soonest.
    fn insert(&mut self, entry: BanEntry, now: SystemTime) {
        if let Some(existing) = self.entries.get(&entry.address) {
            if existing.until >= entry.until {
                return;
            }
            self.by_end.remove(&(existing.until, existing.address));
        } else if self.entries.len() >= self.capacity {
            self.remove_expired(now);
            if self.entries.len() >= self.capacity {
                self.remove_soonest_ending();
            }
        }
        self.by_end.insert((entry.until, entry.address));
        self.entries.insert(entry.address, entry);
        debug_assert_eq!(self.entries.len(), self.by_end.len());
    }

    /// The entry for `address` in force at `now` (an expired one is
    /// removed).
    fn get(&mut self, address: IpAddr, now: SystemTime) -> Option<BanEntry> {
        let entry = *self.entries.get(&address)?;
        if entry.until <= now {
            self.remove(address);
            return None;
        }
        Some(entry)
    }

    fn remove(&mut self, address: IpAddr) -> bool {
        self.steps += 1;
        let Some(entry) = self.entries.remove(&address) else { return false };
        self.by_end.remove(&(entry.until, entry.address));
        true
    }

    /// Removes the entries ended by `now`, soonest first: each costs one
    /// removal from the index, and stops at the first still in force.
    fn remove_expired(&mut self, now: SystemTime) {
        while let Some(&(until, address)) = self.by_end.first() {
            self.steps += 1;
            if until > now {
                break;
            }
            self.remove(address);
        }
    }

    fn remove_soonest_ending(&mut self) {
        if let Some(&(_, address)) = self.by_end.first() {
            self.remove(address);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn clear(&mut self) {
        self.entries.clear();
        self.by_end.clear();
    }
}

/// The operator's bans and the discouraged addresses, kept apart.
#[derive(Debug)]
pub(crate) struct BanList {
    manual: ExpiringSet,
    discouraged: ExpiringSet,
}

impl Default for BanList {
    fn default() -> BanList {
        BanList {
            manual: ExpiringSet::with_capacity(MANUAL_BANS_MAX),
            discouraged: ExpiringSet::with_capacity(DISCOURAGED_ADDRESSES_MAX),
        }
    }
}

impl BanList {
    /// Bans (`BanReason::Manual`, Core's `Ban`) or discourages
    /// (`BanReason::Misbehaving`, Core's `Discourage`) `address` from `now`
    /// for `duration`; an existing entry of the same kind that ends later
    /// is kept. Each kind fills its own bounded set.
    pub fn insert(
        &mut self,
        address: IpAddr,
        reason: BanReason,
        now: SystemTime,
        duration: Duration,
    ) {
        let address = canonical_ip(address);
        let until = now.checked_add(duration).unwrap_or(now + Duration::from_secs(u32::MAX as u64));
        let entry = BanEntry { address, reason, created: now, until };
        match reason {
            BanReason::Manual => self.manual.insert(entry, now),
            BanReason::Misbehaving => self.discouraged.insert(entry, now),
        }
    }

    /// The manual ban on `address` in force at `now`, if any (Core's
    /// `IsBanned`).
    pub fn banned(&mut self, address: IpAddr, now: SystemTime) -> Option<BanEntry> {
        self.manual.get(canonical_ip(address), now)
    }

    /// Whether `address` is discouraged at `now` (Core's `IsDiscouraged`).
    pub fn is_discouraged(&mut self, address: IpAddr, now: SystemTime) -> bool {
        self.discouraged.get(canonical_ip(address), now).is_some()
    }

    /// The manual ban on `address`, else its discouragement, in force at
    /// `now`.
    pub fn get(&mut self, address: IpAddr, now: SystemTime) -> Option<BanEntry> {
        let address = canonical_ip(address);
        self.manual.get(address, now).or_else(|| self.discouraged.get(address, now))
    }

    /// Lifts the manual ban on `address`; whether there was one (Core's
    /// `Unban`: a discouragement stays).
    pub fn remove(&mut self, address: IpAddr) -> bool {
        self.manual.remove(canonical_ip(address))
    }

    /// Lifts every manual ban (Core's `ClearBanned`: discouragements stay).
    pub fn clear_manual(&mut self) {
        self.manual.clear();
    }

    /// The manual bans in force at `now`, soonest ending first (Core's
    /// `GetBanned`, what `listbanned` shows).
    pub fn list(&mut self, now: SystemTime) -> Vec<BanEntry> {
        self.manual.remove_expired(now);
        let manual = &self.manual;
        manual
            .by_end
            .iter()
            .filter_map(|(_, address)| manual.entries.get(address).copied())
            .collect()
    }

    /// Manual bans and discouragements held (expired ones included until
    /// they are purged).
    #[cfg(test)]
    pub fn counts(&self) -> (usize, usize) {
        (self.manual.len(), self.discouraged.len())
    }

    /// Entries examined or removed so far by both sets.
    #[cfg(test)]
    pub fn steps(&self) -> u64 {
        self.manual.steps + self.discouraged.steps
    }

    /// Whether each set's index matches its map (tests).
    #[cfg(test)]
    pub fn is_consistent(&self) -> bool {
        [&self.manual, &self.discouraged].iter().all(|set| {
            set.entries.len() == set.by_end.len()
                && set.entries.len() <= set.capacity
                && set.by_end.iter().all(|(until, address)| {
                    set.entries.get(address).is_some_and(|entry| entry.until == *until)
                })
        })
    }
}

#[cfg(test)]
mod tests;
