//! The cache's table: 16 to 31 hashbrown maps (shards) chosen by two bytes
//! of the txid, so that a table grows one shard at a time and a flush
//! can write and free it a shard at a time ([`crate::frozen_map`]).
//!
//! # Why shards
//! A hash table doubles when it fills: for a moment the old and the new
//! bucket arrays both exist. One table of ~2 M coins (4 M buckets of 97
//! bytes, 390 MiB) passes through 195 MiB + 390 MiB = 585 MiB while it
//! rehashes, ~200 MiB over the `-dbcache` it is accounted against; Core's
//! node-based map only doubles an array of 8-byte pointers. Split in 16
//! shards, the shards reach their thresholds at about the same height but
//! rehash one insert at a time, so the extra memory at any moment is one
//! shard's old array: ~1/32 of the table (~13 MiB here).
//!
//! # Why 16 to 31 of them
//! A shard's buckets are a power of two, and uniform keys fill every shard
//! alike, so a map of 16 shards can only be 16 x 2^k buckets: its share of
//! `-dbcache` was either used up to a power of two or wasted up to half
//! (at 300 MiB, 220 MiB of table or 440). [`shard_count_for`] picks the
//! count whose full table comes closest to the share from below: within
//! 1/16 of it.
//!
//! # Growth ahead
//! Keys are uniform, so every shard reaches its threshold within a block
//! or two of the others: when one doubles, all do soon after, and a limit
//! checked between blocks could be passed by several shards' new arrays in
//! one block. [`CoinMap::projected_bytes`] counts a shard within 1/16 of
//! its threshold ([`GROWTH_MARGIN_DIVISOR`]) at its doubled size, so the
//! cache is flushed before the doubling instead of after (a block adding
//! more than 1/16 of a shard's capacity to it, ~7,000 coins a shard at
//! `-dbcache=450`, ~140,000 for the map, more than a block can create,
//! still doubles it).
//!
//! # Napkin math
//! Choosing the shard is a 16-bit load, a multiply and a shift (txids are
//! double SHA-256, so their bytes are uniform; a miner grinding txids into
//! one shard only brings back the single table's rehash, and the keyed
//! hash inside the shard still protects the buckets). Iterating or writing
//! the shards in parallel splits a flush across threads for free.

use foldhash::fast::SeedableRandomState;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use ibex_primitives::OutPoint;
use rayon::prelude::*;

use crate::cache::CacheEntry;
use crate::hasher::salted_hash_builder;
use crate::heap::TableAllocator;

/// Fewest shards of a table.
pub const SHARD_COUNT_MIN: usize = 16;
/// Most shards of a table.
pub const SHARD_COUNT_MAX: usize = 31;
/// A shard within 1/this of its capacity counts at its doubled size in
/// [`CoinMap::projected_bytes`].
pub const GROWTH_MARGIN_DIVISOR: usize = 16;
/// Bytes a bucket of a shard takes: the entry and its control byte.
pub(crate) const BUCKET_BYTES: usize = std::mem::size_of::<(OutPoint, CacheEntry)>() + 1;
/// Control bytes after the buckets (hashbrown's group width).
const TRAILING_CONTROL_BYTES: usize = 16;
/// Buckets of a shard [`shard_count_for`] plans for at most (2^36: 7 TB).
const BUCKETS_MAX: usize = 1 << 36;

pub(crate) type Shard = HashMap<OutPoint, CacheEntry, SeedableRandomState, TableAllocator>;

/// A new, empty shard with its own secret hash key.
pub(crate) fn new_shard() -> Shard {
    HashMap::with_hasher_in(salted_hash_builder(), TableAllocator)
}

/// The shard of `outpoint` among `shard_count`: the txid's first two
/// bytes (uniform, and unrelated to the bits hashbrown takes from the
/// keyed hash inside the shard) scaled to the count. The database's keys
/// start with the txid, so each shard holds one range of keys, in the
/// shards' order: a flush can write its shards as tables that do not
/// overlap ([`crate::background`]).
pub(crate) fn shard_index(outpoint: &OutPoint, shard_count: usize) -> usize {
    let bytes = u16::from_be_bytes([outpoint.txid.0[0], outpoint.txid.0[1]]);
    (usize::from(bytes) * shard_count) >> 16
}

/// Bytes of one shard's table of `buckets` buckets (a power of two).
pub(crate) fn table_bytes(buckets: usize) -> usize {
    buckets * BUCKET_BYTES + TRAILING_CONTROL_BYTES
}

/// The shard count whose tables, grown to a common power of two, come
/// closest to `target_bytes` without passing it.
pub(crate) fn shard_count_for(target_bytes: usize) -> usize {
    let full_table_bytes = |count: usize| {
        let mut buckets = 1usize;
        while buckets < BUCKETS_MAX && count * table_bytes(buckets * 2) <= target_bytes {
            buckets *= 2;
        }
        count * table_bytes(buckets)
    };
    (SHARD_COUNT_MIN..=SHARD_COUNT_MAX)
        .max_by_key(|&count| (full_table_bytes(count), std::cmp::Reverse(count)))
        .unwrap_or(SHARD_COUNT_MIN)
}

/// Bytes `shard` will take once it has grown for the next inserts: its
/// table doubled if it is within its growth margin.
fn projected_shard_bytes(shard: &Shard) -> usize {
    let margin = shard.capacity() / GROWTH_MARGIN_DIVISOR;
    if shard.allocation_size() > 0 && shard.len() + margin >= shard.capacity() {
        // Twice the buckets, the same trailing control bytes.
        2 * shard.allocation_size() - TRAILING_CONTROL_BYTES
    } else {
        shard.allocation_size()
    }
}

/// Outpoint -> cache entry, in shards.
#[derive(Debug)]
pub(crate) struct CoinMap {
    shards: Box<[Shard]>,
}

impl Default for CoinMap {
    fn default() -> Self {
        CoinMap::new(SHARD_COUNT_MIN)
    }
}

impl CoinMap {
    /// An empty map of `shard_count` shards (within
    /// [`SHARD_COUNT_MIN`]..=[`SHARD_COUNT_MAX`]), each with its own
    /// secret hash key.
    pub(crate) fn new(shard_count: usize) -> CoinMap {
        let shard_count = shard_count.clamp(SHARD_COUNT_MIN, SHARD_COUNT_MAX);
        CoinMap { shards: (0..shard_count).map(|_| new_shard()).collect() }
    }

    fn shard_of(&self, outpoint: &OutPoint) -> usize {
        shard_index(outpoint, self.shards.len())
    }

    pub(crate) fn get(&self, outpoint: &OutPoint) -> Option<&CacheEntry> {
        self.shards[self.shard_of(outpoint)].get(outpoint)
    }

    pub(crate) fn contains_key(&self, outpoint: &OutPoint) -> bool {
        self.shards[self.shard_of(outpoint)].contains_key(outpoint)
    }

    pub(crate) fn insert(&mut self, outpoint: OutPoint, entry: CacheEntry) {
        let shard = self.shard_of(&outpoint);
        self.shards[shard].insert(outpoint, entry);
    }

    pub(crate) fn entry(
        &mut self,
        outpoint: OutPoint,
    ) -> Entry<'_, OutPoint, CacheEntry, SeedableRandomState, TableAllocator> {
        let shard = self.shard_of(&outpoint);
        self.shards[shard].entry(outpoint)
    }

    /// Entries in all shards.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(HashMap::len).sum()
    }

    /// Shards of the table.
    #[cfg(test)]
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Bytes of all shards' bucket arrays.
    pub(crate) fn allocation_size(&self) -> usize {
        self.shards.iter().map(HashMap::allocation_size).sum()
    }

    /// Bytes of all shards' bucket arrays once the shards close to their
    /// threshold have doubled (see the [module docs](self)).
    pub(crate) fn projected_bytes(&self) -> usize {
        self.shards.iter().map(projected_shard_bytes).sum()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&OutPoint, &CacheEntry)> {
        self.shards.iter().flat_map(|shard| shard.iter())
    }

    /// Every entry, split across the global pool's threads.
    pub(crate) fn par_iter(&self) -> impl ParallelIterator<Item = (&OutPoint, &CacheEntry)> {
        self.shards.par_iter().flat_map(|shard| shard.par_iter())
    }

    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&OutPoint, &mut CacheEntry) -> bool) {
        for shard in self.shards.iter_mut() {
            shard.retain(|outpoint, entry| keep(outpoint, entry));
        }
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut CacheEntry> {
        self.shards.iter_mut().flat_map(|shard| shard.values_mut())
    }

    /// The shards, in order (see [`shard_index`]).
    pub(crate) fn shards(&self) -> &[Shard] {
        &self.shards
    }

    /// The shards, in order (see [`shard_index`]).
    pub(crate) fn into_shards(self) -> Box<[Shard]> {
        self.shards
    }

    /// A map of `shards` given back by [`CoinMap::into_shards`].
    pub(crate) fn from_shards(shards: Box<[Shard]>) -> CoinMap {
        assert!((SHARD_COUNT_MIN..=SHARD_COUNT_MAX).contains(&shards.len()));
        CoinMap { shards }
    }
}

impl IntoIterator for CoinMap {
    type Item = (OutPoint, CacheEntry);
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Shard>>;

    fn into_iter(self) -> Self::IntoIter {
        self.shards.into_vec().into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::Txid;

    fn outpoint(index: u32) -> OutPoint {
        let mut txid = [0u8; 32];
        txid[2..6].copy_from_slice(&index.to_le_bytes());
        txid[0] = (index as u8).wrapping_mul(37);
        txid[1] = (index >> 3) as u8;
        OutPoint { txid: Txid(txid), vout: index % 3 }
    }

    fn entry(flags: u8) -> CacheEntry {
        CacheEntry::new(None, flags)
    }

    #[test]
    fn behaves_as_one_map_across_shards() {
        for shard_count in [SHARD_COUNT_MIN, 23, SHARD_COUNT_MAX] {
            let mut map = CoinMap::new(shard_count);
            assert_eq!(map.shard_count(), shard_count);
            for index in 0..1000 {
                map.insert(outpoint(index), entry((index % 4) as u8));
            }
            assert_eq!(map.len(), 1000);
            assert!(map.shards.iter().all(|shard| shard.len() > 15), "keys spread over the shards");
            assert_eq!(map.get(&outpoint(17)).map(|entry| entry.flags()), Some(1));
            assert!(map.contains_key(&outpoint(999)) && !map.contains_key(&outpoint(1000)));
            assert_eq!(map.iter().count(), 1000);
            assert_eq!(map.par_iter().filter(|(_, entry)| entry.flags() == 0).count(), 250);
            map.retain(|_, entry| entry.flags() != 0);
            assert_eq!(map.len(), 750);
            map.values_mut().for_each(|entry| entry.set_flags(9));
            assert!(map.iter().all(|(_, entry)| entry.flags() == 9));
            if let Entry::Occupied(slot) = map.entry(outpoint(1)) {
                slot.remove();
            }
            assert_eq!(map.len(), 749);
            assert!(map.allocation_size() >= 749 * std::mem::size_of::<(OutPoint, CacheEntry)>());
            assert_eq!(map.into_iter().count(), 749);
        }
    }

    #[test]
    fn shard_indexes_cover_every_shard_evenly_in_key_order() {
        for shard_count in [SHARD_COUNT_MIN, 19, SHARD_COUNT_MAX] {
            let mut counts = vec![0usize; shard_count];
            let mut previous = 0;
            for high in 0..=u16::MAX {
                let mut txid = [0u8; 32];
                txid[..2].copy_from_slice(&high.to_be_bytes());
                let index = shard_index(&OutPoint { txid: Txid(txid), vout: 0 }, shard_count);
                // Keys in order, shards in order: one key range a shard.
                assert!(index == previous || index == previous + 1, "{high}: {index}");
                previous = index;
                counts[index] += 1;
            }
            let (least, most) = (counts.iter().min(), counts.iter().max());
            assert!(most.zip(least).is_some_and(|(most, least)| most - least <= 1), "{counts:?}");
        }
    }

    #[test]
    fn table_bytes_match_hashbrown() {
        for buckets in [16usize, 1024, 1 << 14] {
            let mut shard = new_shard();
            // hashbrown holds 7/8 of its buckets before it grows.
            shard.reserve(buckets * 7 / 8);
            assert_eq!(shard.allocation_size(), table_bytes(buckets), "{buckets}");
        }
    }

    #[test]
    fn shard_counts_fill_their_target_within_a_sixteenth() {
        for target_mebibytes in [2usize, 7, 73, 100, 255, 300, 338, 440, 1000, 4000] {
            let target = target_mebibytes << 20;
            let count = shard_count_for(target);
            assert!((SHARD_COUNT_MIN..=SHARD_COUNT_MAX).contains(&count));
            let mut buckets = 1usize;
            while count * table_bytes(buckets * 2) <= target {
                buckets *= 2;
            }
            let full = count * table_bytes(buckets);
            assert!(full <= target && full > target - target / 16, "{target_mebibytes}: {full}");
        }
    }

    #[test]
    fn shards_near_their_threshold_count_doubled() {
        // Keys of shard 0 alone (the txid's first two bytes zero).
        let in_first_shard = |index: u32| {
            let mut txid = [0u8; 32];
            txid[2..6].copy_from_slice(&index.to_le_bytes());
            OutPoint { txid: Txid(txid), vout: 0 }
        };
        let mut map = CoinMap::new(SHARD_COUNT_MIN);
        assert_eq!(map.projected_bytes(), 0);
        for index in 0..1000 {
            map.insert(in_first_shard(index), entry(0));
        }
        let shard = &map.shards[0];
        assert_eq!(shard.len(), 1000);
        let margin = shard.capacity() / GROWTH_MARGIN_DIVISOR;
        let mut index = 1000;
        // Below the margin: as allocated; within it: doubled, and the
        // doubling then takes exactly that.
        while map.shards[0].len() + margin + 1 < map.shards[0].capacity() {
            assert_eq!(map.projected_bytes(), map.allocation_size());
            map.insert(in_first_shard(index), entry(0));
            index += 1;
        }
        map.insert(in_first_shard(index), entry(0));
        index += 1;
        let projected = map.projected_bytes();
        assert_eq!(projected, 2 * map.allocation_size() - TRAILING_CONTROL_BYTES);
        while map.allocation_size() < projected {
            map.insert(in_first_shard(index), entry(0));
            index += 1;
        }
        assert_eq!(map.allocation_size(), projected);
    }
}
