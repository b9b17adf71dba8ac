//! The signature cache (Core's `SignatureCache`): a bounded, salted set of
//! signatures already verified, so a signature seen once (in the mempool, or
//! in a block reconnected after a reorg) is not verified again.
//!
//! An entry is SHA-256 over a random per-process salt, a domain byte block
//! (ECDSA or Schnorr), the sighash, the public key and the signature: 32 bytes
//! no attacker can predict, so its bits choose the shard, the bucket and are
//! the stored value. The salt keeps an attacker from aiming entries at one
//! bucket to evict others.
//!
//! Layout: `SHARD_COUNT` mutex-protected shards, each a flat array of buckets
//! of `BUCKET_WAYS` 32-byte slots (set-associative, like a CPU cache). Memory
//! is allocated once at construction and never grows: `cache_bytes_max / 32`
//! slots. A full bucket evicts round-robin. All-zero slots are empty.
//!
//! Napkin math: Core's default is 32 MiB, ~1M entries, enough for several
//! blocks' worth of inputs (~6,000 each). A lookup is one SHA-256 of ~170
//! bytes (~0.3 µs) and eight 32-byte compares in one 256-byte bucket (four
//! cache lines), against ~50 µs for the verification it saves. With 64 shards
//! and a handful of checking threads, lock contention is negligible.

use std::sync::{Mutex, MutexGuard};

use sha2::{Digest, Sha256};
use thiserror::Error;

/// Bytes per cached entry.
pub const ENTRY_BYTES: usize = 32;
/// Slots per bucket.
const BUCKET_WAYS: usize = 8;
/// Shards, each with its own lock.
const SHARD_COUNT_MAX: usize = 64;
/// Core's default `-maxsigcachesize`: 32 MiB.
pub const DEFAULT_CACHE_BYTES_MAX: usize = 32 << 20;

const _: () = assert!(ENTRY_BYTES * BUCKET_WAYS * SHARD_COUNT_MAX <= DEFAULT_CACHE_BYTES_MAX);

/// Why a cache could not be built.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The operating system gave no random salt.
    #[error("no randomness for the signature cache salt: {0}")]
    Randomness(getrandom::Error),
}

/// A cache key: the salted hash of one (sighash, public key, signature).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheEntry([u8; ENTRY_BYTES]);

impl CacheEntry {
    fn word(&self, index: usize) -> u64 {
        let mut bytes = [0u8; 8];
        if let Some(chunk) = self.0.get(index * 8..index * 8 + 8) {
            bytes.copy_from_slice(chunk);
        }
        u64::from_le_bytes(bytes)
    }

    fn is_empty_marker(&self) -> bool {
        self.0 == [0; ENTRY_BYTES]
    }
}

#[derive(Debug)]
struct Shard {
    slots: Box<[[u8; ENTRY_BYTES]]>,
    next_victim: usize,
}

impl Shard {
    fn bucket(&mut self, index: usize) -> Option<&mut [[u8; ENTRY_BYTES]]> {
        self.slots.get_mut(index * BUCKET_WAYS..(index + 1) * BUCKET_WAYS)
    }
}

/// A thread-safe, fixed-size set of verified signatures.
#[derive(Debug)]
pub struct SignatureCache {
    salted_ecdsa: Sha256,
    salted_schnorr: Sha256,
    shards: Box<[Mutex<Shard>]>,
    buckets_per_shard: usize,
}

impl SignatureCache {
    /// A cache of at most `cache_bytes_max` bytes of entries with a random salt.
    pub fn new(cache_bytes_max: usize) -> Result<SignatureCache, CacheError> {
        let mut salt = [0u8; 32];
        getrandom::fill(&mut salt).map_err(CacheError::Randomness)?;
        Ok(SignatureCache::with_salt(cache_bytes_max, salt))
    }

    /// As [`new`](Self::new) with a given salt (tests and benchmarks).
    pub fn with_salt(cache_bytes_max: usize, salt: [u8; 32]) -> SignatureCache {
        let salted = |domain: u8| {
            let mut hasher = Sha256::new();
            hasher.update(salt);
            hasher.update([domain; 32]);
            hasher
        };
        let buckets_total = cache_bytes_max / (ENTRY_BYTES * BUCKET_WAYS);
        let shard_count = buckets_total.clamp(1, SHARD_COUNT_MAX);
        let buckets_per_shard = buckets_total / shard_count;
        let shards = (0..shard_count)
            .map(|_| {
                let slots = vec![[0u8; ENTRY_BYTES]; buckets_per_shard * BUCKET_WAYS];
                Mutex::new(Shard { slots: slots.into_boxed_slice(), next_victim: 0 })
            })
            .collect();
        SignatureCache {
            salted_ecdsa: salted(b'E'),
            salted_schnorr: salted(b'S'),
            shards,
            buckets_per_shard,
        }
    }

    /// Entries the cache can hold.
    pub fn entries_max(&self) -> usize {
        self.shards.len() * self.buckets_per_shard * BUCKET_WAYS
    }

    /// Bytes of entries allocated (at most the `cache_bytes_max` asked for).
    pub fn bytes_allocated(&self) -> usize {
        self.entries_max() * ENTRY_BYTES
    }

    /// The key of an ECDSA signature (DER, without hash type) for `sighash`.
    pub fn ecdsa_entry(
        &self,
        sighash: &[u8; 32],
        public_key: &[u8],
        signature: &[u8],
    ) -> CacheEntry {
        Self::entry(&self.salted_ecdsa, sighash, public_key, signature)
    }

    /// The key of a Schnorr signature (64 bytes) for `sighash`.
    pub fn schnorr_entry(
        &self,
        sighash: &[u8; 32],
        public_key: &[u8; 32],
        signature: &[u8; 64],
    ) -> CacheEntry {
        Self::entry(&self.salted_schnorr, sighash, public_key, signature)
    }

    fn entry(
        salted: &Sha256,
        sighash: &[u8; 32],
        public_key: &[u8],
        signature: &[u8],
    ) -> CacheEntry {
        let mut hasher = salted.clone();
        hasher.update(sighash);
        // The key's length byte makes the key/signature boundary unambiguous
        // (keys are at most 65 bytes).
        hasher.update([public_key.len() as u8]);
        hasher.update(public_key);
        hasher.update(signature);
        CacheEntry(hasher.finalize().into())
    }

    fn locate(&self, entry: &CacheEntry) -> Option<(MutexGuard<'_, Shard>, usize)> {
        if self.buckets_per_shard == 0 || entry.is_empty_marker() {
            return None;
        }
        let shard_index = (entry.word(0) % self.shards.len() as u64) as usize;
        let bucket_index = (entry.word(1) % self.buckets_per_shard as u64) as usize;
        let shard = self.shards.get(shard_index)?;
        // A poisoned lock only means another thread panicked mid-insert; the
        // slots are plain bytes, still valid.
        let guard = shard.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Some((guard, bucket_index))
    }

    /// Whether `entry` was inserted (and not evicted since).
    pub fn contains(&self, entry: &CacheEntry) -> bool {
        let Some((mut shard, bucket_index)) = self.locate(entry) else {
            return false;
        };
        shard.bucket(bucket_index).is_some_and(|bucket| bucket.contains(&entry.0))
    }

    /// Records a verified signature, evicting an older entry of its bucket if full.
    pub fn insert(&self, entry: CacheEntry) {
        let Some((mut shard, bucket_index)) = self.locate(&entry) else {
            return;
        };
        let victim_way = shard.next_victim % BUCKET_WAYS;
        let Some(bucket) = shard.bucket(bucket_index) else {
            return;
        };
        if bucket.contains(&entry.0) {
            return;
        }
        let slot = match bucket.iter().position(|slot| *slot == [0; ENTRY_BYTES]) {
            Some(free) => free,
            None => victim_way,
        };
        if let Some(slot) = bucket.get_mut(slot) {
            *slot = entry.0;
        }
        shard.next_victim = shard.next_victim.wrapping_add(1);
    }

    /// Entries currently held (a full scan: for tests and statistics).
    pub fn entries_len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| {
                let guard = shard.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                guard.slots.iter().filter(|slot| **slot != [0; ENTRY_BYTES]).count()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hit_after_insert_and_miss_otherwise() {
        let cache = SignatureCache::with_salt(1 << 16, [7; 32]);
        let entry = cache.ecdsa_entry(&[1; 32], &[2; 33], &[3; 71]);
        assert!(!cache.contains(&entry));
        cache.insert(entry);
        assert!(cache.contains(&entry));
        // Any change of sighash, key, signature or scheme is another entry.
        assert!(!cache.contains(&cache.ecdsa_entry(&[9; 32], &[2; 33], &[3; 71])));
        assert!(!cache.contains(&cache.ecdsa_entry(&[1; 32], &[2; 65], &[3; 71])));
        assert!(!cache.contains(&cache.ecdsa_entry(&[1; 32], &[2; 33], &[3; 70])));
        assert!(!cache.contains(&cache.schnorr_entry(&[1; 32], &[2; 32], &[3; 64])));
    }

    #[test]
    fn salt_changes_entries() {
        let first = SignatureCache::with_salt(1 << 16, [1; 32]);
        let second = SignatureCache::with_salt(1 << 16, [2; 32]);
        assert_ne!(
            first.schnorr_entry(&[0; 32], &[0; 32], &[0; 64]),
            second.schnorr_entry(&[0; 32], &[0; 32], &[0; 64])
        );
        let random_first = SignatureCache::new(1 << 16).unwrap();
        let random_second = SignatureCache::new(1 << 16).unwrap();
        assert_ne!(
            random_first.schnorr_entry(&[0; 32], &[0; 32], &[0; 64]),
            random_second.schnorr_entry(&[0; 32], &[0; 32], &[0; 64])
        );
    }

    #[test]
    fn size_is_bounded() {
        let cache_bytes_max = 64 * 1024;
        let cache = SignatureCache::with_salt(cache_bytes_max, [3; 32]);
        assert!(cache.bytes_allocated() <= cache_bytes_max);
        assert_eq!(cache.entries_max(), cache_bytes_max / ENTRY_BYTES);
        let inserted = cache.entries_max() * 4;
        let entries: Vec<CacheEntry> = (0..inserted as u32)
            .map(|index| {
                let mut sighash = [0u8; 32];
                sighash[..4].copy_from_slice(&index.to_le_bytes());
                cache.schnorr_entry(&sighash, &[0; 32], &[0; 64])
            })
            .collect();
        for entry in &entries {
            cache.insert(*entry);
        }
        let held = cache.entries_len();
        assert!(held <= cache.entries_max());
        assert!(held * 10 > cache.entries_max() * 9, "held {held}");
        // Most recent inserts survive; a large share of the old ones were evicted.
        let hits = entries.iter().filter(|entry| cache.contains(entry)).count();
        assert!(hits <= cache.entries_max());
        assert!(hits > cache.entries_max() / 2, "hits {hits}");
        assert!(cache.contains(&entries[inserted - 1]));
    }

    #[test]
    fn zero_size_cache_never_hits() {
        let cache = SignatureCache::with_salt(0, [0; 32]);
        let entry = cache.ecdsa_entry(&[1; 32], &[2; 33], &[3; 71]);
        cache.insert(entry);
        assert!(!cache.contains(&entry));
        assert_eq!(cache.entries_max(), 0);
    }

    #[test]
    fn shared_across_threads() {
        let cache = SignatureCache::with_salt(1 << 20, [5; 32]);
        std::thread::scope(|scope| {
            for thread in 0..4u8 {
                let cache = &cache;
                scope.spawn(move || {
                    for index in 0..1000u32 {
                        let mut sighash = [thread; 32];
                        sighash[..4].copy_from_slice(&index.to_le_bytes());
                        let entry = cache.schnorr_entry(&sighash, &[1; 32], &[2; 64]);
                        cache.insert(entry);
                        assert!(cache.contains(&entry));
                    }
                });
            }
        });
        assert_eq!(cache.entries_len(), 4000);
    }
}
