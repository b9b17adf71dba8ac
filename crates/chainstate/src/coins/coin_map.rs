//! The cache's table: 16 to 31 shards ([`crate::coins::coin_shard`]) chosen by
//! two bytes of the txid, so that each holds one range of keys and a flush
//! can write and free it a shard at a time ([`crate::coins::frozen_map`]).
//!
//! # Why shards
//! A flush writes the frozen map as a few tables of neighbouring key
//! ranges, and frees each group of shards once its table is in the
//! database, so the next live map grows into memory the writer gave back.
//! Each shard also grows on its own: when its table of positions doubles,
//! the old and the new table exist together for a moment, which is ~1/31
//! of the positions' few bytes a coin.
//!
//! # Growth ahead
//! A limit checked between blocks could be passed by a block's inserts.
//! The chunks grow one at a time, as entries come, but a shard's table of
//! positions doubles: [`CoinMap::projected_bytes`] counts a shard within
//! 1/16 of its table's threshold ([`GROWTH_MARGIN_DIVISOR`]) at its doubled
//! size, and a shard whose chunks are full with one more chunk, so the
//! cache is flushed before the growth instead of after.
//!
//! # Napkin math
//! Choosing the shard is a 16-bit load, a multiply and a shift (txids are
//! double SHA-256, so their bytes are uniform; a miner grinding txids into
//! one shard only makes that shard larger, and the keyed hash inside the
//! shard still protects its table). Iterating or writing the shards in
//! parallel splits a flush across threads for free.

use ibex_primitives::OutPoint;
use rayon::prelude::*;

pub(crate) use crate::coins::coin_shard::{CoinShard as Shard, Entry};
use crate::coins::coin_shard::{Slot, CHUNK_ENTRIES_MIN};
use crate::coins::entry::CacheEntry;

/// Fewest shards of a table.
pub const SHARD_COUNT_MIN: usize = 16;
/// Most shards of a table: what [`CoinMap::with_chunk_entries`] makes.
pub const SHARD_COUNT_MAX: usize = 31;
/// A shard within 1/this of its table's capacity counts with that table
/// doubled in [`CoinMap::projected_bytes`].
pub const GROWTH_MARGIN_DIVISOR: usize = 16;
/// A shard's chunk not yet full wastes at most 1/this of the map's share
/// over all shards ([`chunk_entries_for`]).
pub const CHUNK_WASTE_DIVISOR: usize = 64;

/// A new, empty shard with its own secret hash key, in chunks of the
/// fewest entries.
pub(crate) fn new_shard() -> Shard {
    Shard::new(CHUNK_ENTRIES_MIN)
}

/// Entries a chunk holds in a map for a share of `target_bytes`: as many
/// as keep the [`SHARD_COUNT_MAX`] shards' unfilled chunks within
/// 1/[`CHUNK_WASTE_DIVISOR`] of it, a power of two (the shard clamps it).
pub(crate) fn chunk_entries_for(target_bytes: usize) -> usize {
    let chunk_bytes = target_bytes / (SHARD_COUNT_MAX * CHUNK_WASTE_DIVISOR);
    let chunk_entries = chunk_bytes / std::mem::size_of::<Slot>();
    // The largest power of two not above it.
    (chunk_entries / 2 + 1).next_power_of_two()
}

/// The shard of `outpoint` among `shard_count`: the txid's first two
/// bytes (uniform, and unrelated to the bits the shard's table takes from
/// its keyed hash) scaled to the count. The database's keys
/// start with the txid, so each shard holds one range of keys, in the
/// shards' order: a flush can write its shards as tables that do not
/// overlap ([`crate::coins::background`]).
pub(crate) fn shard_index(outpoint: &OutPoint, shard_count: usize) -> usize {
    let bytes = u16::from_be_bytes([outpoint.txid.0[0], outpoint.txid.0[1]]);
    (usize::from(bytes) * shard_count) >> 16
}

/// Bytes `shard` will take once it has grown for the next inserts: its
/// table of positions doubled if it is within its growth margin, and one
/// more chunk if it holds entries and its chunks are full (an empty shard
/// takes its first chunk only if an insert lands in it: counted once there).
fn projected_shard_bytes(shard: &Shard) -> usize {
    let margin = shard.capacity() / GROWTH_MARGIN_DIVISOR;
    let mut bytes = shard.allocation_size();
    if shard.positions_bytes() > 0 && shard.len() + margin >= shard.capacity() {
        bytes += shard.positions_bytes();
    }
    if shard.len() > 0 && shard.chunk_room() == 0 {
        bytes += shard.chunk_bytes();
    }
    bytes
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
    /// secret hash key, in chunks of the fewest entries.
    pub(crate) fn new(shard_count: usize) -> CoinMap {
        let shard_count = shard_count.clamp(SHARD_COUNT_MIN, SHARD_COUNT_MAX);
        CoinMap { shards: (0..shard_count).map(|_| new_shard()).collect() }
    }

    /// An empty map of [`SHARD_COUNT_MAX`] shards (the finest steps for a
    /// flush to free) in chunks of `chunk_entries` ([`chunk_entries_for`]).
    pub(crate) fn with_chunk_entries(chunk_entries: usize) -> CoinMap {
        let shards = (0..SHARD_COUNT_MAX).map(|_| Shard::new(chunk_entries));
        CoinMap { shards: shards.collect() }
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

    pub(crate) fn entry(&mut self, outpoint: OutPoint) -> Entry<'_> {
        let shard = self.shard_of(&outpoint);
        self.shards[shard].entry(outpoint)
    }

    /// Entries in all shards.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(Shard::len).sum()
    }

    /// Shards of the table.
    #[cfg(test)]
    pub(crate) fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Bytes of all shards' chunks and tables of positions.
    pub(crate) fn allocation_size(&self) -> usize {
        self.shards.iter().map(Shard::allocation_size).sum()
    }

    /// Bytes of all shards once the tables of positions close to their
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
    fn a_map_for_a_target_wastes_little_of_it_in_chunks() {
        for target_mebibytes in [1usize, 7, 73, 100, 440, 4000] {
            let target = target_mebibytes << 20;
            let chunk_entries = chunk_entries_for(target);
            let map = CoinMap::with_chunk_entries(chunk_entries);
            assert_eq!(map.shard_count(), SHARD_COUNT_MAX);
            let chunk_entries = map.shards[0].chunk_entries();
            let waste = SHARD_COUNT_MAX * map.shards[0].chunk_bytes();
            let at_least_min = chunk_entries == CHUNK_ENTRIES_MIN;
            assert!(waste <= target / CHUNK_WASTE_DIVISOR || at_least_min, "{target_mebibytes}");
            let at_most_max = chunk_entries == crate::coins::coin_shard::CHUNK_ENTRIES_MAX;
            assert!(2 * waste > target / CHUNK_WASTE_DIVISOR || at_most_max, "{target_mebibytes}");
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
        // Shards with entries whose chunks are full count one more.
        let chunk_bytes = map.shards[0].chunk_bytes();
        let next_chunks = |map: &CoinMap| {
            let full = map.shards.iter().filter(|shard| shard.len() > 0 && shard.chunk_room() == 0);
            full.count() * chunk_bytes
        };
        for index in 0..1000 {
            map.insert(in_first_shard(index), entry(0));
        }
        assert_eq!(map.shards[0].len(), 1000);
        let margin = map.shards[0].capacity() / GROWTH_MARGIN_DIVISOR;
        let mut index = 1000;
        // Below the margin: as allocated; within it: the table of positions
        // doubled, and the doubling then takes exactly that (the chunks
        // grow as entries come).
        while map.shards[0].len() + margin + 1 < map.shards[0].capacity() {
            assert_eq!(map.projected_bytes(), map.allocation_size() + next_chunks(&map));
            map.insert(in_first_shard(index), entry(0));
            index += 1;
        }
        map.insert(in_first_shard(index), entry(0));
        index += 1;
        let positions_bytes = map.shards[0].positions_bytes();
        let doubled = map.allocation_size() + positions_bytes + next_chunks(&map);
        assert_eq!(map.projected_bytes(), doubled);
        while map.shards[0].positions_bytes() == positions_bytes {
            map.insert(in_first_shard(index), entry(0));
            index += 1;
        }
        assert_eq!(map.shards[0].positions_bytes(), 2 * positions_bytes);
    }
}
