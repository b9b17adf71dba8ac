//! A shard's table of positions ([`crate::coins::coin_shard`]): an open-addressing
//! hash table of `u32` positions in groups of 16, each group's tags and
//! positions side by side.
//!
//! # Why by hand
//! hashbrown keeps its control bytes in one array and its buckets in
//! another, so a lookup that finds its key loads a control group, then the
//! bucket far from it, then (here) the entry the position points to: three
//! dependent cache misses. With the entry itself in the bucket that was
//! two, and where the whole set fits in memory the third made the lookup
//! twice as dear (`perf` at `-dbcache=450` to height 500: 21 % of the
//! samples against 10 %; docs/utxo-heavy.md). Here a group is
//! 16 tag bytes and 16 positions in 80 bytes, so the tags and the position
//! are one or two neighbouring cache lines, fetched together.
//!
//! # Layout and rules
//! - A slot's tag is `EMPTY`, `DELETED`, or the hash's top 7 bits with the
//!   high bit set. The hash's low bits pick the first group; probing goes
//!   on group by group and stops at a group with an `EMPTY` slot.
//! - A removal leaves `EMPTY` when its group already has one (no probe
//!   ever passed that group), else `DELETED`, which inserts reuse.
//! - At most 7/8 of the slots are used or `DELETED`; past that the table
//!   is rebuilt, twice as large when over half of the slots are in use. The
//!   positions of a shard are exactly `0..len`, so a rebuild walks the
//!   shard's chunks in order to rehash (sequential reads), where hashbrown
//!   reads each key where its bucket points.
//!
//! # Napkin math
//! A lookup: hash (~2 ns), a 16-byte tag compare (one SIMD compare on
//! x86-64), the position, the entry. A miss costs the tag line alone
//! unless a tag matches (1/128 for each slot in use of the group). 5 bytes a
//! slot, as hashbrown's `u32` table.

use crate::coins::heap::TableAllocator;

/// Slots of a group.
const GROUP_SLOTS: usize = 16;
/// A slot never used since the table was built.
const EMPTY: u8 = 0;
/// A slot whose position was removed.
const DELETED: u8 = 1;
/// Slots the table may use (with `DELETED` ones) per 8.
const LOAD_EIGHTHS: usize = 7;

/// 16 tags and their positions: 80 bytes.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Group {
    tags: [u8; GROUP_SLOTS],
    positions: [u32; GROUP_SLOTS],
}

const EMPTY_GROUP: Group = Group { tags: [EMPTY; GROUP_SLOTS], positions: [0; GROUP_SLOTS] };

impl Group {
    /// Bit `i` set where tag `i` equals `tag`.
    #[inline]
    fn matching(&self, tag: u8) -> u32 {
        let mut mask = 0u32;
        for (index, &held) in self.tags.iter().enumerate() {
            mask |= u32::from(held == tag) << index;
        }
        mask
    }

    /// Bit `i` set where slot `i` takes an insert (`EMPTY` or `DELETED`).
    #[inline]
    fn free(&self) -> u32 {
        let mut mask = 0u32;
        for (index, &held) in self.tags.iter().enumerate() {
            mask |= u32::from(held <= DELETED) << index;
        }
        mask
    }

    #[inline]
    fn has_empty(&self) -> bool {
        self.tags.contains(&EMPTY)
    }
}

/// The tag of `hash`: its top 7 bits, high bit set.
#[inline]
fn tag_of(hash: u64) -> u8 {
    ((hash >> 57) as u8) | 0x80
}

type Groups = allocator_api2::vec::Vec<Group, TableAllocator>;

/// Positions by hash.
pub(crate) struct PositionTable {
    groups: Groups,
    /// Slots holding a position or `DELETED`.
    used_or_deleted: usize,
}

impl PositionTable {
    /// An empty table; it allocates at the first insert.
    pub(crate) fn new() -> PositionTable {
        PositionTable { groups: Groups::new_in(TableAllocator), used_or_deleted: 0 }
    }

    /// Positions the table may hold before it is rebuilt larger.
    pub(crate) fn capacity(&self) -> usize {
        self.groups.len() * GROUP_SLOTS * LOAD_EIGHTHS / 8
    }

    /// Bytes of the groups.
    pub(crate) fn allocation_size(&self) -> usize {
        self.groups.capacity() * std::mem::size_of::<Group>()
    }

    /// Empties the table, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.groups.iter_mut().for_each(|group| *group = EMPTY_GROUP);
        self.used_or_deleted = 0;
    }

    fn first_group(&self, hash: u64) -> usize {
        // The group count is a power of two.
        (hash as usize) & (self.groups.len() - 1)
    }

    /// Group and slot of the position under `hash` for which `eq` holds.
    #[inline]
    fn locate(&self, hash: u64, mut eq: impl FnMut(u32) -> bool) -> Option<(usize, usize)> {
        if self.groups.is_empty() {
            return None;
        }
        let tag = tag_of(hash);
        let mask = self.groups.len() - 1;
        let mut index = self.first_group(hash);
        for _ in 0..self.groups.len() {
            let group = &self.groups[index];
            let mut matches = group.matching(tag);
            while matches != 0 {
                let slot = matches.trailing_zeros() as usize;
                if eq(group.positions[slot]) {
                    return Some((index, slot));
                }
                matches &= matches - 1;
            }
            if group.has_empty() {
                return None;
            }
            index = (index + 1) & mask;
        }
        None
    }

    /// The position under `hash` for which `eq` holds.
    #[inline]
    pub(crate) fn find(&self, hash: u64, eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.locate(hash, eq).map(|(group, slot)| self.groups[group].positions[slot])
    }

    /// Removes `position` (held under `hash`); whether it was there.
    pub(crate) fn remove(&mut self, hash: u64, position: u32) -> bool {
        let Some((group, slot)) = self.locate(hash, |held| held == position) else {
            return false;
        };
        let group = &mut self.groups[group];
        if group.has_empty() {
            group.tags[slot] = EMPTY;
            self.used_or_deleted -= 1;
        } else {
            group.tags[slot] = DELETED;
        }
        true
    }

    /// Changes `from` (held under `hash`) to `to`; whether it was there.
    pub(crate) fn repoint(&mut self, hash: u64, from: u32, to: u32) -> bool {
        let Some((group, slot)) = self.locate(hash, |held| held == from) else {
            return false;
        };
        self.groups[group].positions[slot] = to;
        true
    }

    /// Adds `position` under `hash`: the shard's newest entry, so the
    /// table holds `0..position` and not `position` yet. When the table is
    /// full it is rebuilt from `all_hashes`, the hash of every position
    /// `0..=position`.
    pub(crate) fn insert_unique(
        &mut self,
        hash: u64,
        position: u32,
        all_hashes: impl Fn(u32) -> u64,
    ) {
        if self.used_or_deleted >= self.capacity() {
            self.rebuild(position as usize + 1, all_hashes);
            return;
        }
        self.place(hash, position);
    }

    fn place(&mut self, hash: u64, position: u32) {
        let tag = tag_of(hash);
        let mask = self.groups.len() - 1;
        let mut index = self.first_group(hash);
        loop {
            let group = &mut self.groups[index];
            let free = group.free();
            if free != 0 {
                let slot = free.trailing_zeros() as usize;
                if group.tags[slot] == EMPTY {
                    self.used_or_deleted += 1;
                }
                group.tags[slot] = tag;
                group.positions[slot] = position;
                return;
            }
            // The load limit leaves free slots, so this ends.
            index = (index + 1) & mask;
        }
    }

    /// A table for `position_count` positions (twice the slots when that
    /// is over half of them, else the same), filled from `all_hashes`.
    fn rebuild(&mut self, position_count: usize, all_hashes: impl Fn(u32) -> u64) {
        let mut group_count = self.groups.len().max(1);
        while position_count * 2 > group_count * GROUP_SLOTS {
            group_count *= 2;
        }
        if group_count != self.groups.len() {
            let mut groups = Groups::with_capacity_in(group_count, TableAllocator);
            groups.resize(group_count, EMPTY_GROUP);
            self.groups = groups;
        }
        self.clear();
        for position in 0..position_count {
            let position = position as u32;
            self.place(all_hashes(position), position);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl PositionTable {
        /// Slots holding a position.
        fn live_slots(&self) -> usize {
            self.groups.iter().flat_map(|group| group.tags).filter(|&tag| tag > DELETED).count()
        }
    }

    /// A hash with few distinct values, so that probes run long and
    /// groups fill, and tags collide.
    fn hash_of(key: u32) -> u64 {
        let spread = u64::from(key % 97).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        spread ^ u64::from(key % 3)
    }

    /// Inserts, removals (as a shard does them: the last position moves
    /// into the hole) and lookups agree with a model, through rebuilds.
    #[test]
    fn finds_what_it_holds_through_removals_and_rebuilds() {
        let mut table = PositionTable::new();
        // keys[position] = key; a position's hash is its key's.
        let mut keys: Vec<u32> = Vec::new();
        let mut state = 7u64;
        for step in 0..30_000u32 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = (state >> 40) as u32 % 5_000;
            let found = table.find(hash_of(key), |position| keys[position as usize] == key);
            assert_eq!(found, keys.iter().position(|&held| held == key).map(|p| p as u32));
            match (found, (state >> 20) % 3) {
                (None, _) => {
                    let position = keys.len() as u32;
                    keys.push(key);
                    let all = |position: u32| hash_of(keys[position as usize]);
                    table.insert_unique(hash_of(key), position, all);
                }
                (Some(position), 0) => {
                    assert!(table.remove(hash_of(key), position));
                    let last = (keys.len() - 1) as u32;
                    let moved = keys.pop().unwrap_or_default();
                    if position != last {
                        assert!(table.repoint(hash_of(moved), last, position));
                        keys[position as usize] = moved;
                    }
                }
                _ => {}
            }
            assert_eq!(table.live_slots(), keys.len(), "step {step}");
            assert!(table.used_or_deleted <= table.capacity().max(1) || table.groups.is_empty());
        }
        for (position, &key) in keys.iter().enumerate() {
            let found = table.find(hash_of(key), |held| keys[held as usize] == key);
            assert_eq!(found, Some(position as u32));
        }
        let bytes = table.allocation_size();
        assert_eq!(bytes % 80, 0);
        table.clear();
        assert_eq!((table.live_slots(), table.allocation_size()), (0, bytes));
        assert_eq!(table.find(hash_of(0), |_| true), None);
    }
}
