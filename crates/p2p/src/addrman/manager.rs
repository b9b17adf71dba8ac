//! [`AddressManager`]: the tables and the operations on them (see the
//! module docs of [`crate::addrman`] for the design and its bounds).

use std::collections::HashMap;

use crate::addrman::address::{AddressNetwork, AddressPolicy, NetworkSet, PeerAddress};
use crate::addrman::buckets::{BucketKey, BUCKET_SLOTS, NEW_BUCKETS, TRIED_BUCKETS};
use crate::addrman::group::NetworkGroup;
use crate::addrman::random::FastRandom;
use crate::addrman::record::{
    AddressCandidate, AddressRecord, AddressSource, Slot, DAY_SECONDS, HOUR_SECONDS,
};
use crate::services::ServiceFlags;

mod collisions;

pub use collisions::TRIED_COLLISIONS_MAX;

/// An empty slot.
const EMPTY: u32 = u32::MAX;
/// A known address's last-seen time moves forward at most this often while
/// it is seen online (Core's `AddSingle`: an hour, or a day otherwise).
const ONLINE_UPDATE_SECONDS: i64 = HOUR_SECONDS;
/// A connected peer's last-seen time is refreshed when older than this
/// (Core's `Connected`).
const CONNECTED_UPDATE_SECONDS: i64 = 20 * 60;
/// The age given to an address learned by connecting to it (it was never
/// announced): as if announced by a peer, so `getaddr` answers do not
/// tell who we are connected to right now.
const CONNECTED_ADDRESS_AGE_SECONDS: i64 = 2 * HOUR_SECONDS;
/// Buckets visited by one [`AddressManager::select`] at most per bucket of
/// the table: with one address in 1,024 buckets, the chance of missing it
/// in 64 x 1,024 visits is e^-64.
const SELECT_VISITS_PER_BUCKET: usize = 64;

/// A known address, as [`AddressManager::info`] shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressInfo {
    /// The address.
    pub address: PeerAddress,
    /// Its services, as last announced or seen.
    pub services: ServiceFlags,
    /// Last seen, seconds since the epoch.
    pub time_seconds: i64,
    /// Last connection attempt (0: never).
    pub last_try_seconds: i64,
    /// Last successful connection (0: never).
    pub last_success_seconds: i64,
    /// Failed attempts since then.
    pub attempts: u32,
    /// Whether it is in the tried table.
    pub tried: bool,
}

/// An address picked to connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectedAddress {
    /// The address.
    pub address: PeerAddress,
    /// Its services.
    pub services: ServiceFlags,
    /// Its last connection attempt (0: never).
    pub last_try_seconds: i64,
}

/// Core's `AddrMan`, simplified: see [`crate::addrman`].
#[derive(Debug)]
pub struct AddressManager {
    buckets: BucketKey,
    policy: AddressPolicy,
    records: Vec<Option<AddressRecord>>,
    free_ids: Vec<u32>,
    ids: HashMap<PeerAddress, u32>,
    new_table: Vec<u32>,
    tried_table: Vec<u32>,
    /// Addresses per network, new then tried.
    counts: [[usize; 2]; 5],
    /// The last successful connection to any address (Core's
    /// `m_last_good`): failures before it are not counted again.
    last_good_seconds: i64,
    random: FastRandom,
    /// Addresses that connected but whose tried slot is taken, waiting
    /// for a feeler to test the occupant (Core's `m_tried_collisions`; at
    /// most [`collisions::TRIED_COLLISIONS_MAX`], not kept in the file).
    tried_collisions: Vec<PeerAddress>,
}

impl AddressManager {
    /// An empty manager; `seed` (32 random bytes) gives the secret bucket
    /// key and the random numbers.
    pub fn new(policy: AddressPolicy, seed: &[u8; 32]) -> AddressManager {
        let key = ibex_primitives::hash::sha256_parts(&[&b"ibex addrman key"[..], &seed[..]]);
        AddressManager::with_key(policy, key, FastRandom::from_seed(seed), 0)
    }

    pub(crate) fn with_key(
        policy: AddressPolicy,
        key: [u8; 32],
        random: FastRandom,
        last_good_seconds: i64,
    ) -> AddressManager {
        AddressManager {
            buckets: BucketKey::new(key),
            policy,
            records: Vec::new(),
            free_ids: Vec::new(),
            ids: HashMap::new(),
            new_table: vec![EMPTY; NEW_BUCKETS * BUCKET_SLOTS],
            tried_table: vec![EMPTY; TRIED_BUCKETS * BUCKET_SLOTS],
            counts: [[0; 2]; 5],
            last_good_seconds,
            random,
            tried_collisions: Vec::new(),
        }
    }

    /// What the manager accepts.
    pub fn policy(&self) -> AddressPolicy {
        self.policy
    }

    /// Addresses known.
    pub fn len(&self) -> usize {
        self.counts.iter().map(|[new, tried]| new + tried).sum()
    }

    /// Whether no address is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Addresses in the new table.
    pub fn new_count(&self) -> usize {
        self.counts.iter().map(|[new, _]| new).sum()
    }

    /// Addresses in the tried table.
    pub fn tried_count(&self) -> usize {
        self.counts.iter().map(|[_, tried]| tried).sum()
    }

    /// Addresses known on `network`.
    pub fn count(&self, network: AddressNetwork) -> usize {
        let [new, tried] = self.counts[network as usize];
        new + tried
    }

    /// What is known of `address`.
    pub fn info(&self, address: &PeerAddress) -> Option<AddressInfo> {
        let record = self.record(*self.ids.get(address)?)?;
        Some(AddressInfo {
            address: record.address,
            services: record.services,
            time_seconds: record.time_seconds,
            last_try_seconds: record.last_try_seconds,
            last_success_seconds: record.last_success_seconds,
            attempts: record.attempts,
            tried: record.is_tried(),
        })
    }

    /// Offers addresses from `source`, aged by `time_penalty_seconds`
    /// (Core gives 2 hours to those relayed by peers), at `now_seconds`;
    /// returns how many were new. Unacceptable addresses are dropped; a
    /// known one only has its time and services refreshed; a new one
    /// takes its slot in the new table if that is free or holds a
    /// terrible address, and is dropped otherwise.
    pub fn add(
        &mut self,
        candidates: &[AddressCandidate],
        source: AddressSource,
        time_penalty_seconds: i64,
        now_seconds: i64,
    ) -> usize {
        let mut added = 0;
        for candidate in candidates {
            if self.add_one(candidate, &source, time_penalty_seconds, now_seconds) {
                added += 1;
            }
        }
        added
    }

    fn add_one(
        &mut self,
        candidate: &AddressCandidate,
        source: &AddressSource,
        time_penalty_seconds: i64,
        now_seconds: i64,
    ) -> bool {
        if !candidate.address.is_acceptable(self.policy) {
            return false;
        }
        let penalty = if source.is_self(&candidate.address) { 0 } else { time_penalty_seconds };
        if let Some(&id) = self.ids.get(&candidate.address) {
            if let Some(record) = self.record_mut(id) {
                refresh(record, candidate, penalty, now_seconds);
            }
            return false;
        }
        let record = AddressRecord {
            address: candidate.address,
            services: candidate.services,
            time_seconds: candidate.time_seconds.saturating_sub(penalty).max(0),
            last_try_seconds: 0,
            last_count_attempt_seconds: 0,
            last_success_seconds: 0,
            attempts: 0,
            source: source.group,
            slot: None,
        };
        let slot = self.new_slot(&record);
        if !self.make_room(slot, now_seconds) {
            return false;
        }
        let id = self.allocate(record);
        self.place(id, slot);
        true
    }

    /// A connection to `address` completed its handshake (Core's `Good`
    /// with test-before-evict): attempts reset, and the address moves to
    /// the tried table if its slot there is free. An address not known
    /// yet is learned (with `services`). If the slot is taken, the address
    /// stays new and the collision is queued: the occupant is tested by a
    /// feeler first, and replaced only if that fails or no test happens
    /// in time ([`AddressManager::resolve_collisions`]), so addresses an
    /// attacker makes us connect to cannot push good tried entries out.
    pub fn mark_good(&mut self, address: &PeerAddress, services: ServiceFlags, now_seconds: i64) {
        if !address.is_acceptable(self.policy) {
            return;
        }
        self.last_good_seconds = now_seconds;
        let id = match self.ids.get(address) {
            Some(&id) => id,
            None => self.allocate(AddressRecord {
                address: *address,
                services,
                time_seconds: (now_seconds - CONNECTED_ADDRESS_AGE_SECONDS).max(0),
                last_try_seconds: 0,
                last_count_attempt_seconds: 0,
                last_success_seconds: 0,
                attempts: 0,
                source: NetworkGroup::of(address, self.policy),
                slot: None,
            }),
        };
        let Some(record) = self.record_mut(id) else { return };
        record.last_success_seconds = now_seconds;
        record.last_try_seconds = now_seconds;
        record.attempts = 0;
        record.services = record.services | services;
        if !record.is_tried() {
            self.promote(id, now_seconds, true);
        }
    }

    /// A connection to `address` was attempted (Core's `Attempt`); a
    /// failure is counted only when `count_failure` and no attempt was
    /// counted since the last success with any address (so failures while
    /// offline count once).
    pub fn mark_attempt(&mut self, address: &PeerAddress, count_failure: bool, now_seconds: i64) {
        let last_good = self.last_good_seconds;
        let Some(&id) = self.ids.get(address) else { return };
        let Some(record) = self.record_mut(id) else { return };
        record.last_try_seconds = now_seconds;
        if count_failure && record.last_count_attempt_seconds < last_good {
            record.last_count_attempt_seconds = now_seconds;
            record.attempts = record.attempts.saturating_add(1);
        }
    }

    /// A full-relay connection to `address` ended (Core's `Connected`): its
    /// last-seen time is refreshed if older than 20 minutes.
    pub fn mark_connected(&mut self, address: &PeerAddress, now_seconds: i64) {
        let Some(&id) = self.ids.get(address) else { return };
        let Some(record) = self.record_mut(id) else { return };
        if now_seconds.saturating_sub(record.time_seconds) > CONNECTED_UPDATE_SECONDS {
            record.time_seconds = now_seconds;
        }
    }

    /// Picks an address on one of `networks` to connect to (Core's
    /// `Select`): from the tried or the new table with even odds (the new
    /// one only when `new_only`), a random bucket and position, accepted
    /// with the address's chance times a factor growing by 1.2 a miss.
    pub fn select(
        &mut self,
        new_only: bool,
        networks: NetworkSet,
        now_seconds: i64,
    ) -> Option<SelectedAddress> {
        let count_in = |table: usize| -> usize {
            networks.networks().map(|network| self.counts[network as usize][table]).sum()
        };
        let (new, tried) = (count_in(0), count_in(1));
        if new + tried == 0 || (new_only && new == 0) {
            return None;
        }
        let use_tried = !new_only && tried > 0 && (new == 0 || self.random.coin());
        let bucket_count = if use_tried { TRIED_BUCKETS } else { NEW_BUCKETS };
        let mut factor = 1.0;
        for _ in 0..bucket_count * SELECT_VISITS_PER_BUCKET {
            let bucket = self.random.index(bucket_count);
            let start = self.random.index(BUCKET_SLOTS);
            let Some(id) = self.first_in_bucket(use_tried, bucket, start, networks) else {
                continue;
            };
            let Some(record) = self.record(id) else { continue };
            let chance = factor * record.chance(now_seconds);
            let selected = SelectedAddress {
                address: record.address,
                services: record.services,
                last_try_seconds: record.last_try_seconds,
            };
            if self.random.unit() < chance {
                return Some(selected);
            }
            factor *= 1.2;
        }
        None
    }

    /// The first address on `networks` in `bucket`, from `start` on.
    fn first_in_bucket(
        &self,
        tried: bool,
        bucket: usize,
        start: usize,
        networks: NetworkSet,
    ) -> Option<u32> {
        let table = if tried { &self.tried_table } else { &self.new_table };
        (0..BUCKET_SLOTS)
            .map(|offset| table[bucket * BUCKET_SLOTS + (start + offset) % BUCKET_SLOTS])
            .filter(|&id| id != EMPTY)
            .find(|&id| {
                self.record(id).is_some_and(|record| networks.contains(record.address.network()))
            })
    }

    /// Up to `count_max` addresses on `networks`, and at most
    /// `percent_max` % of all known, in random order, none terrible (Core's
    /// `GetAddr`, what a `getaddr` is answered with).
    pub fn sample(
        &mut self,
        count_max: usize,
        percent_max: usize,
        networks: NetworkSet,
        now_seconds: i64,
    ) -> Vec<AddressCandidate> {
        let wanted = count_max.min(self.len() * percent_max / 100);
        let mut ids: Vec<u32> = self.ids.values().copied().collect();
        // Sorted first: the hash map's order must not decide the sample.
        ids.sort_unstable();
        let mut sample = Vec::with_capacity(wanted);
        for first in 0..ids.len() {
            if sample.len() >= wanted {
                break;
            }
            let other = first + self.random.index(ids.len() - first);
            ids.swap(first, other);
            let Some(record) = self.record(ids[first]) else { continue };
            if networks.contains(record.address.network()) && !record.is_terrible(now_seconds) {
                sample.push(record.candidate());
            }
        }
        sample
    }

    /// Moves `id` to its tried slot; the occupant, if any, goes back to
    /// the new table (Core's `MakeTried`). With `test_before_evict`, an
    /// occupied slot instead queues the collision (Core's `Good_`), `id`
    /// staying in (or, if unknown so far, entering) the new table.
    fn promote(&mut self, id: u32, now_seconds: i64, test_before_evict: bool) {
        let Some(record) = self.record(id) else { return };
        let address = record.address;
        let unplaced = record.slot.is_none();
        let tried_slot = self.buckets.tried_slot(&address, self.policy);
        let occupant = self.tried_table[tried_slot.index()];
        if occupant != EMPTY && test_before_evict {
            if unplaced {
                self.place_new_or_drop(id, now_seconds);
            }
            if self.ids.contains_key(&address) {
                self.queue_collision(address);
            }
            return;
        }
        self.unplace(id);
        if occupant != EMPTY {
            self.unplace(occupant);
            self.place_new_evicting(occupant);
        }
        self.place(id, tried_slot);
    }

    /// Puts `id` in its new slot, deleting whatever holds it.
    fn place_new_evicting(&mut self, id: u32) {
        let Some(record) = self.record(id) else { return };
        let slot = self.new_slot(record);
        let occupant = self.new_table[slot.index()];
        if occupant != EMPTY {
            self.delete(occupant);
        }
        self.place(id, slot);
    }

    /// Puts `id` in its new slot if free or terrible, else forgets it.
    fn place_new_or_drop(&mut self, id: u32, now_seconds: i64) {
        let Some(record) = self.record(id) else { return };
        let slot = self.new_slot(record);
        if self.make_room(slot, now_seconds) {
            self.place(id, slot);
        } else {
            self.delete(id);
        }
    }

    /// Frees a new-table slot for a newcomer: true if empty, or if it held
    /// a terrible address (deleted).
    fn make_room(&mut self, slot: Slot, now_seconds: i64) -> bool {
        let occupant = self.new_table[slot.index()];
        if occupant == EMPTY {
            return true;
        }
        if self.record(occupant).is_some_and(|old| old.is_terrible(now_seconds)) {
            self.delete(occupant);
            return true;
        }
        false
    }

    fn new_slot(&self, record: &AddressRecord) -> Slot {
        self.buckets.new_slot(&record.address, &record.source, self.policy)
    }

    pub(crate) fn record(&self, id: u32) -> Option<&AddressRecord> {
        self.records.get(id as usize).and_then(Option::as_ref)
    }

    fn record_mut(&mut self, id: u32) -> Option<&mut AddressRecord> {
        self.records.get_mut(id as usize).and_then(Option::as_mut)
    }

    fn allocate(&mut self, record: AddressRecord) -> u32 {
        let address = record.address;
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.records[id as usize] = Some(record);
                id
            }
            None => {
                // At most one record per slot plus one moving: below u32::MAX.
                let id = u32::try_from(self.records.len()).unwrap_or(EMPTY - 1);
                self.records.push(Some(record));
                id
            }
        };
        self.ids.insert(address, id);
        id
    }

    fn place(&mut self, id: u32, slot: Slot) {
        let table = if slot.tried { &mut self.tried_table } else { &mut self.new_table };
        assert!(table[slot.index()] == EMPTY, "an address placed in an occupied slot");
        table[slot.index()] = id;
        if let Some(record) = self.records.get_mut(id as usize).and_then(Option::as_mut) {
            record.slot = Some(slot);
            self.counts[record.address.network() as usize][usize::from(slot.tried)] += 1;
        }
    }

    fn unplace(&mut self, id: u32) {
        let Some(record) = self.records.get_mut(id as usize).and_then(Option::as_mut) else {
            return;
        };
        let Some(slot) = record.slot.take() else { return };
        self.counts[record.address.network() as usize][usize::from(slot.tried)] -= 1;
        let table = if slot.tried { &mut self.tried_table } else { &mut self.new_table };
        table[slot.index()] = EMPTY;
    }

    fn delete(&mut self, id: u32) {
        self.unplace(id);
        if let Some(record) = self.records.get_mut(id as usize).and_then(Option::take) {
            self.ids.remove(&record.address);
            self.free_ids.push(id);
        }
    }

    /// Every record with its table, for the file.
    pub(crate) fn records(&self) -> impl Iterator<Item = &AddressRecord> {
        self.records.iter().flatten()
    }

    pub(crate) fn key(&self) -> &[u8; 32] {
        self.buckets.key()
    }

    pub(crate) fn last_good_seconds(&self) -> i64 {
        self.last_good_seconds
    }

    /// Puts a record read from the file back in its table (its slot is
    /// computed again from the key); false if the address is known already
    /// or unacceptable, or its slot is taken.
    pub(crate) fn restore(&mut self, mut record: AddressRecord, tried: bool) -> bool {
        if !record.address.is_acceptable(self.policy) || self.ids.contains_key(&record.address) {
            return false;
        }
        record.slot = None;
        let slot = if tried {
            self.buckets.tried_slot(&record.address, self.policy)
        } else {
            self.new_slot(&record)
        };
        let table = if tried { &self.tried_table } else { &self.new_table };
        if table[slot.index()] != EMPTY {
            return false;
        }
        let id = self.allocate(record);
        self.place(id, slot);
        true
    }

    /// Whether `first` and `second` take the same tried slot, so that
    /// promoting one while the other holds it is a collision (for tests
    /// that play an attacker aiming at a tried entry: the slot depends on
    /// the secret bucket key).
    pub fn shares_tried_slot(&self, first: &PeerAddress, second: &PeerAddress) -> bool {
        self.buckets.tried_slot(first, self.policy) == self.buckets.tried_slot(second, self.policy)
    }

    /// The index of `address`'s tried slot (tests).
    #[cfg(test)]
    pub(crate) fn tried_slot_index(&self, address: &PeerAddress) -> usize {
        self.buckets.tried_slot(address, self.policy).index()
    }

    /// Checks that the tables, records, index and counts agree (tests).
    #[cfg(test)]
    pub(crate) fn assert_consistent(&self) {
        let mut counted = [[0usize; 2]; 5];
        for (tried, table) in [(false, &self.new_table), (true, &self.tried_table)] {
            for (index, &id) in table.iter().enumerate() {
                if id == EMPTY {
                    continue;
                }
                let record = self.record(id).expect("a slot names a live record");
                let slot = record.slot.expect("a placed record knows its slot");
                assert_eq!((slot.tried, slot.index()), (tried, index));
                assert_eq!(self.ids.get(&record.address), Some(&id));
                counted[record.address.network() as usize][usize::from(tried)] += 1;
            }
        }
        assert_eq!(counted, self.counts);
        assert_eq!(self.ids.len(), self.len(), "every record is placed");
    }
}

/// Core's update of a known address: a newer last-seen time (beyond an
/// hour, or a day if it was not seen in the last day), services added.
fn refresh(
    record: &mut AddressRecord,
    candidate: &AddressCandidate,
    penalty: i64,
    now_seconds: i64,
) {
    let online = now_seconds.saturating_sub(candidate.time_seconds) < DAY_SECONDS;
    let update_interval = if online { ONLINE_UPDATE_SECONDS } else { DAY_SECONDS };
    let announced = candidate.time_seconds.saturating_sub(penalty);
    if record.time_seconds < announced.saturating_sub(update_interval) {
        record.time_seconds = announced.max(0);
    }
    record.services = record.services | candidate.services;
}
