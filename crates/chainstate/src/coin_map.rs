//! The cache's table: [`SHARD_COUNT`] hashbrown maps chosen by a byte of
//! the txid, so that a table grows one shard at a time.
//!
//! # Why shards
//! A hash table doubles when it fills: for a moment the old and the new
//! bucket arrays both exist. One table of ~2 M coins (4 M buckets of 104
//! bytes, 420 MiB) passes through 210 MiB + 420 MiB = 630 MiB while it
//! rehashes, ~200 MiB over the `-dbcache` it is accounted against; Core's
//! node-based map only doubles an array of 8-byte pointers. Split in 16
//! shards, the shards reach their thresholds at about the same height but
//! rehash one insert at a time, so the extra memory at any moment is one
//! shard's old array: ~1/32 of the table (~13 MiB here).
//!
//! # Napkin math
//! Choosing the shard is one byte load and a mask (txids are double
//! SHA-256, so their bytes are uniform; a miner grinding txids into one
//! shard only brings back the single table's rehash, and the keyed hash
//! inside the shard still protects the buckets). Iterating or writing the
//! shards in parallel splits a flush across threads for free.

use foldhash::fast::SeedableRandomState;
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;
use ibex_primitives::OutPoint;
use rayon::prelude::*;

use crate::cache::CacheEntry;
use crate::hasher::salted_hash_builder;
use crate::heap::TableAllocator;

/// Shards of the table (a power of two).
pub const SHARD_COUNT: usize = 16;

type Shard = HashMap<OutPoint, CacheEntry, SeedableRandomState, TableAllocator>;

/// Outpoint -> cache entry, in [`SHARD_COUNT`] shards.
#[derive(Debug)]
pub(crate) struct CoinMap {
    shards: Box<[Shard]>,
}

impl Default for CoinMap {
    fn default() -> Self {
        CoinMap::new()
    }
}

impl CoinMap {
    /// An empty map, each shard with its own secret hash key.
    pub(crate) fn new() -> CoinMap {
        CoinMap {
            shards: (0..SHARD_COUNT)
                .map(|_| HashMap::with_hasher_in(salted_hash_builder(), TableAllocator))
                .collect(),
        }
    }

    fn shard_of(outpoint: &OutPoint) -> usize {
        // Byte 7 of the txid: uniform, and unrelated to the bits hashbrown
        // takes from the keyed hash inside the shard.
        usize::from(outpoint.txid.0[7]) & (SHARD_COUNT - 1)
    }

    pub(crate) fn get(&self, outpoint: &OutPoint) -> Option<&CacheEntry> {
        self.shards[Self::shard_of(outpoint)].get(outpoint)
    }

    pub(crate) fn contains_key(&self, outpoint: &OutPoint) -> bool {
        self.shards[Self::shard_of(outpoint)].contains_key(outpoint)
    }

    pub(crate) fn insert(&mut self, outpoint: OutPoint, entry: CacheEntry) {
        self.shards[Self::shard_of(&outpoint)].insert(outpoint, entry);
    }

    pub(crate) fn entry(
        &mut self,
        outpoint: OutPoint,
    ) -> Entry<'_, OutPoint, CacheEntry, SeedableRandomState, TableAllocator> {
        self.shards[Self::shard_of(&outpoint)].entry(outpoint)
    }

    /// Entries in all shards.
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(HashMap::len).sum()
    }

    /// Bytes of all shards' bucket arrays.
    pub(crate) fn allocation_size(&self) -> usize {
        self.shards.iter().map(HashMap::allocation_size).sum()
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
        txid[..4].copy_from_slice(&index.to_le_bytes());
        txid[7] = index as u8;
        OutPoint { txid: Txid(txid), vout: index % 3 }
    }

    fn entry(flags: u8) -> CacheEntry {
        CacheEntry { coin: None, flags }
    }

    #[test]
    fn behaves_as_one_map_across_shards() {
        let mut map = CoinMap::new();
        for index in 0..1000 {
            map.insert(outpoint(index), entry((index % 4) as u8));
        }
        assert_eq!(map.len(), 1000);
        assert!(map.shards.iter().all(|shard| shard.len() > 40), "keys spread over the shards");
        assert_eq!(map.get(&outpoint(17)).map(|entry| entry.flags), Some(1));
        assert!(map.contains_key(&outpoint(999)) && !map.contains_key(&outpoint(1000)));
        assert_eq!(map.iter().count(), 1000);
        assert_eq!(map.par_iter().filter(|(_, entry)| entry.flags == 0).count(), 250);
        map.retain(|_, entry| entry.flags != 0);
        assert_eq!(map.len(), 750);
        map.values_mut().for_each(|entry| entry.flags = 9);
        assert!(map.iter().all(|(_, entry)| entry.flags == 9));
        if let Entry::Occupied(slot) = map.entry(outpoint(1)) {
            slot.remove();
        }
        assert_eq!(map.len(), 749);
        assert!(map.allocation_size() >= 749 * std::mem::size_of::<(OutPoint, CacheEntry)>());
        assert_eq!(map.into_iter().count(), 749);
    }
}
