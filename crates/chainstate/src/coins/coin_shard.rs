//! One shard of the cache's table ([`crate::coins::coin_map`]): its entries packed
//! in chunks of memory, and a hash table of 4-byte positions into them.
//!
//! # Why not a `HashMap` of entries
//! A hash table keeps a bucket for every slot it may fill, and fills at most
//! 7/8 of them before it doubles: between doublings its buckets are 44-88 %
//! used. With the entry in the bucket (84 bytes and a control byte), a coin
//! costs 97-194 bytes. On the `utxo-heavy` chain it is worse: a batch
//! payout's hundreds of outputs share a txid, so a shard, and the shards'
//! loads spread so far that the fullest reaches its doubling point while
//! the table as a whole is 63 % used: ~141 bytes a coin at every flush
//! (docs/utxo-heavy.md), where Core's node-based map takes ~131.
//!
//! Here the hash table holds only a `u32` position (5 bytes a slot with its
//! tag, [`crate::coins::position_table`]) and the entries sit in chunks of
//! [`CoinShard::chunk_entries`] that fill completely, one after another:
//! a coin costs its 84 bytes, plus 6-11 bytes of table, plus at most one
//! chunk not yet full a shard: ~92 bytes, whatever the chain's shape, so the
//! same `-dbcache` holds ~50 % more coins on that chain and ~17 % more on
//! mainnet's (where the loads spread little and a table of entries flushes
//! at ~82 % used). A doubling rebuilds 4-byte positions, not 84-byte
//! entries, and the chunks never move.
//!
//! Removing an entry moves the last one into its place (and repoints its
//! position), so the chunks stay dense and iterating them visits entries
//! only.
//!
//! # Napkin math
//! A lookup reads a group of tags and positions (one or two neighbouring cache
//! lines) and the entry: about what an entry in its bucket took (84 bytes
//! straddle a line boundary most of the time). With hashbrown's table of
//! positions, whose tags and positions lie apart, it is three dependent misses,
//! and a third slower where the set fits in memory (docs/utxo-heavy.md). The
//! chunks' list (24 bytes a chunk, ~120 KB for 5 M coins in chunks of 1,024)
//! stays in the CPU's caches. A removal costs a second probe, to repoint the
//! moved entry: ~40 ns, for the ~3,000 coins a block spends while fresh.
//! Growing a table rehashes every key, read from the chunks in order (~10 ns
//! each): ~10 ms for a million, once for every doubling of the shard.

use foldhash::fast::SeedableRandomState;
use ibex_primitives::OutPoint;
use rayon::prelude::*;
use std::hash::BuildHasher;

use crate::coins::entry::CacheEntry;
use crate::coins::hasher::salted_hash_builder;
use crate::coins::position_table::PositionTable;

/// An entry with its key, as a chunk holds it.
pub(crate) type Slot = (OutPoint, CacheEntry);
/// A chunk of entries.
type Chunk = Vec<Slot>;

/// Fewest entries a chunk holds.
pub const CHUNK_ENTRIES_MIN: usize = 16;
/// Most entries a chunk holds (84 KiB of 84-byte entries).
pub const CHUNK_ENTRIES_MAX: usize = 1024;

/// A shard: entries in chunks, found through a table of positions.
pub(crate) struct CoinShard {
    /// Positions into `chunks`, hashed by the entry's outpoint.
    positions: PositionTable,
    /// Every chunk but the last in use is full; at most one empty chunk
    /// follows them, kept for the next insert.
    chunks: Vec<Chunk>,
    /// Entries held.
    len: usize,
    /// log2 of the entries a chunk holds.
    chunk_shift: u32,
    hasher: SeedableRandomState,
}

impl std::fmt::Debug for CoinShard {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CoinShard")
            .field("len", &self.len)
            .field("chunks", &self.chunks.len())
            .field("chunk_entries", &self.chunk_entries())
            .field("position_buckets", &self.positions.capacity())
            .finish()
    }
}

/// The entry at `position` of `chunks`.
fn slot_at(chunks: &[Chunk], chunk_shift: u32, position: u32) -> &Slot {
    let position = position as usize;
    &chunks[position >> chunk_shift][position & ((1 << chunk_shift) - 1)]
}

fn slot_at_mut(chunks: &mut [Chunk], chunk_shift: u32, position: u32) -> &mut Slot {
    let position = position as usize;
    &mut chunks[position >> chunk_shift][position & ((1 << chunk_shift) - 1)]
}

impl CoinShard {
    /// An empty shard with its own secret hash key, in chunks of
    /// `chunk_entries` (rounded to a power of two within
    /// [`CHUNK_ENTRIES_MIN`]..=[`CHUNK_ENTRIES_MAX`]).
    pub(crate) fn new(chunk_entries: usize) -> CoinShard {
        let chunk_entries = chunk_entries.clamp(CHUNK_ENTRIES_MIN, CHUNK_ENTRIES_MAX);
        CoinShard {
            positions: PositionTable::new(),
            chunks: Vec::new(),
            len: 0,
            chunk_shift: chunk_entries.next_power_of_two().trailing_zeros(),
            hasher: salted_hash_builder(),
        }
    }

    /// Entries a chunk holds.
    pub(crate) fn chunk_entries(&self) -> usize {
        1 << self.chunk_shift
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Entries the table of positions holds before it doubles.
    pub(crate) fn capacity(&self) -> usize {
        self.positions.capacity()
    }

    /// Bytes of the table of positions.
    pub(crate) fn positions_bytes(&self) -> usize {
        self.positions.allocation_size()
    }

    /// Bytes of one chunk.
    pub(crate) fn chunk_bytes(&self) -> usize {
        self.chunk_entries() * std::mem::size_of::<Slot>()
    }

    /// Entries the chunks allocated can still take.
    pub(crate) fn chunk_room(&self) -> usize {
        self.chunks.len() * self.chunk_entries() - self.len
    }

    /// Bytes allocated: the table of positions, the chunks and their list.
    pub(crate) fn allocation_size(&self) -> usize {
        self.positions.allocation_size()
            + self.chunks.len() * self.chunk_bytes()
            + self.chunks.capacity() * std::mem::size_of::<Chunk>()
    }

    fn position_of(&self, hash: u64, outpoint: &OutPoint) -> Option<u32> {
        let (chunks, shift) = (&self.chunks, self.chunk_shift);
        self.positions.find(hash, |position| slot_at(chunks, shift, position).0 == *outpoint)
    }

    pub(crate) fn get(&self, outpoint: &OutPoint) -> Option<&CacheEntry> {
        let position = self.position_of(self.hasher.hash_one(outpoint), outpoint)?;
        Some(&slot_at(&self.chunks, self.chunk_shift, position).1)
    }

    pub(crate) fn contains_key(&self, outpoint: &OutPoint) -> bool {
        self.position_of(self.hasher.hash_one(outpoint), outpoint).is_some()
    }

    /// Puts `entry` at `outpoint`; gives back the entry it replaced.
    pub(crate) fn insert(&mut self, outpoint: OutPoint, entry: CacheEntry) -> Option<CacheEntry> {
        match self.entry(outpoint) {
            Entry::Occupied(mut slot) => Some(std::mem::replace(slot.get_mut(), entry)),
            Entry::Vacant(slot) => {
                slot.insert(entry);
                None
            }
        }
    }

    /// The entry at `outpoint`, to read, change, remove or fill.
    pub(crate) fn entry(&mut self, outpoint: OutPoint) -> Entry<'_> {
        let hash = self.hasher.hash_one(outpoint);
        match self.position_of(hash, &outpoint) {
            Some(position) => Entry::Occupied(OccupiedEntry { shard: self, position, hash }),
            None => Entry::Vacant(VacantEntry { shard: self, outpoint, hash }),
        }
    }

    /// Appends `slot` to the chunks and indexes it under `hash`.
    fn push(&mut self, hash: u64, slot: Slot) {
        let position = self.len;
        assert!(position < u32::MAX as usize, "a shard holds fewer than 2^32 entries");
        let chunk = position >> self.chunk_shift;
        if chunk == self.chunks.len() {
            let chunk = Chunk::with_capacity(self.chunk_entries());
            self.chunks.push(chunk);
        }
        self.chunks[chunk].push(slot);
        self.len += 1;
        let Self { positions, chunks, chunk_shift, hasher, .. } = self;
        let rehash = |position: u32| hasher.hash_one(slot_at(chunks, *chunk_shift, position).0);
        positions.insert_unique(hash, position as u32, rehash);
    }

    /// Removes the entry at `position` (indexed under `hash`): the last
    /// entry takes its place.
    fn remove_at(&mut self, position: u32, hash: u64) -> Slot {
        let removed = self.positions.remove(hash, position);
        assert!(removed, "every entry of a shard has its position in the table");
        let last = (self.len - 1) as u32;
        let last_chunk = (last as usize) >> self.chunk_shift;
        let Some(moved) = self.chunks[last_chunk].pop() else {
            unreachable!("the last position is in the last chunk in use");
        };
        self.len -= 1;
        // Keep at most one empty chunk after those in use.
        let chunks_in_use = self.len.div_ceil(self.chunk_entries());
        self.chunks.truncate(chunks_in_use + 1);
        if position == last {
            return moved;
        }
        let moved_hash = self.hasher.hash_one(moved.0);
        let repointed = self.positions.repoint(moved_hash, last, position);
        assert!(repointed, "the last entry has its position in the table");
        std::mem::replace(slot_at_mut(&mut self.chunks, self.chunk_shift, position), moved)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&OutPoint, &CacheEntry)> {
        self.chunks.iter().flatten().map(|(outpoint, entry)| (outpoint, entry))
    }

    /// Every entry, split across the global pool's threads by chunk.
    pub(crate) fn par_iter(&self) -> impl ParallelIterator<Item = (&OutPoint, &CacheEntry)> {
        self.chunks
            .par_iter()
            .flat_map_iter(|chunk| chunk.iter().map(|(outpoint, entry)| (outpoint, entry)))
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &CacheEntry> {
        self.chunks.iter().flatten().map(|(_, entry)| entry)
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut CacheEntry> {
        self.chunks.iter_mut().flatten().map(|(_, entry)| entry)
    }

    /// Keeps the entries for which `keep` says so (a flush that keeps its
    /// coins: rare, so the shard is rebuilt, its table's memory kept).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&OutPoint, &mut CacheEntry) -> bool) {
        let chunks = std::mem::take(&mut self.chunks);
        self.positions.clear();
        self.len = 0;
        for (outpoint, mut entry) in chunks.into_iter().flatten() {
            if keep(&outpoint, &mut entry) {
                let hash = self.hasher.hash_one(outpoint);
                self.push(hash, (outpoint, entry));
            }
        }
    }
}

impl IntoIterator for CoinShard {
    type Item = Slot;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Chunk>>;

    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

/// A shard's entry for one outpoint ([`CoinShard::entry`]).
pub(crate) enum Entry<'a> {
    /// The shard holds an entry there.
    Occupied(OccupiedEntry<'a>),
    /// It does not.
    Vacant(VacantEntry<'a>),
}

/// An entry the shard holds.
pub(crate) struct OccupiedEntry<'a> {
    shard: &'a mut CoinShard,
    position: u32,
    hash: u64,
}

impl OccupiedEntry<'_> {
    pub(crate) fn get_mut(&mut self) -> &mut CacheEntry {
        &mut slot_at_mut(&mut self.shard.chunks, self.shard.chunk_shift, self.position).1
    }

    /// Removes the entry and gives it back.
    pub(crate) fn remove(self) -> CacheEntry {
        self.shard.remove_at(self.position, self.hash).1
    }
}

/// An outpoint the shard holds no entry for.
pub(crate) struct VacantEntry<'a> {
    shard: &'a mut CoinShard,
    outpoint: OutPoint,
    hash: u64,
}

impl VacantEntry<'_> {
    pub(crate) fn insert(self, entry: CacheEntry) {
        self.shard.push(self.hash, (self.outpoint, entry));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::Txid;

    /// Bytes of one position in the hash table, with its control byte.
    const POSITION_BUCKET_BYTES: usize = std::mem::size_of::<u32>() + 1;

    fn outpoint(index: u32) -> OutPoint {
        let mut txid = [0u8; 32];
        txid[..4].copy_from_slice(&index.to_le_bytes());
        OutPoint { txid: Txid(txid), vout: index % 5 }
    }

    fn entry(flags: u8) -> CacheEntry {
        CacheEntry::new(None, flags)
    }

    /// Inserts, replacements and removals in any order leave the shard
    /// equal to a map that did the same, its chunks dense.
    #[test]
    fn behaves_as_a_map_with_dense_chunks() {
        let mut shard = CoinShard::new(CHUNK_ENTRIES_MIN);
        let mut model = std::collections::HashMap::new();
        let mut state = 12_345u64;
        for step in 0..20_000u32 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = outpoint((state >> 40) as u32 % 3_000);
            let flags = (step % 7) as u8;
            match (state >> 20) % 4 {
                0 | 1 => {
                    let old = shard.insert(key, entry(flags)).map(|old| old.flags());
                    assert_eq!(old, model.insert(key, flags), "step {step}");
                }
                2 => {
                    let removed = match shard.entry(key) {
                        Entry::Occupied(slot) => Some(slot.remove().flags()),
                        Entry::Vacant(_) => None,
                    };
                    assert_eq!(removed, model.remove(&key), "step {step}");
                }
                _ => {
                    if let Entry::Occupied(mut slot) = shard.entry(key) {
                        slot.get_mut().set_flags(flags);
                        model.insert(key, flags);
                    }
                }
            }
            assert_eq!(shard.len(), model.len());
        }
        for (key, flags) in &model {
            assert_eq!(shard.get(key).map(CacheEntry::flags), Some(*flags));
        }
        assert!(!shard.contains_key(&outpoint(3_001)));
        assert_eq!(shard.iter().count(), model.len());
        assert_eq!(shard.par_iter().count(), model.len());
        // Dense: the chunks in use are full but the last, and at most one
        // empty chunk follows.
        let chunks_in_use = model.len().div_ceil(shard.chunk_entries());
        assert!(shard.chunks.len() <= chunks_in_use + 1);
        assert!(shard.chunks[..chunks_in_use.saturating_sub(1)]
            .iter()
            .all(|chunk| chunk.len() == shard.chunk_entries()));

        shard.retain(|_, entry| entry.flags() % 2 == 0);
        model.retain(|_, flags| *flags % 2 == 0);
        assert_eq!(shard.len(), model.len());
        shard.values_mut().for_each(|entry| entry.set_flags(6));
        assert!(model.keys().all(|key| shard.get(key).map(CacheEntry::flags) == Some(6)));
        assert_eq!(shard.values().count(), model.len());
        assert_eq!(shard.into_iter().count(), model.len());
    }

    /// Memory counts the table of positions and whole chunks: an entry
    /// costs its own bytes and a few more, however the table is loaded.
    #[test]
    fn memory_is_whole_chunks_and_small_positions() {
        let mut shard = CoinShard::new(1024);
        for index in 0..100_000 {
            shard.insert(outpoint(index), entry(1));
        }
        let entry_bytes = std::mem::size_of::<Slot>();
        let chunks = 100_000usize.div_ceil(1024);
        assert_eq!(shard.chunks.len(), chunks);
        assert!(shard.positions_bytes() >= 100_000 * POSITION_BUCKET_BYTES);
        let bytes = shard.allocation_size();
        assert!(bytes >= chunks * 1024 * entry_bytes + shard.positions_bytes());
        assert!(bytes < 100_000 * (entry_bytes + 12) + 1024 * entry_bytes, "{bytes}");
        assert_eq!(CoinShard::new(1).chunk_entries(), CHUNK_ENTRIES_MIN);
        assert_eq!(CoinShard::new(700).chunk_entries(), 1024);
        assert_eq!(CoinShard::new(1 << 20).chunk_entries(), CHUNK_ENTRIES_MAX);
    }
}
