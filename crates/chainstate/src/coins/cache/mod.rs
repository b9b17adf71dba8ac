//! The UTXO cache: coins in memory over the coins database, with Bitcoin
//! Core's DIRTY/FRESH flags so that a coin created and spent between two
//! flushes never reaches the disk.
//!
//! # State table
//! Flags are per entry. DIRTY: the entry differs from the database. FRESH:
//! the database has no unspent coin at this outpoint. An absent entry means
//! "ask the database"; misses are not cached (Core 28+'s `FetchCoin`).
//!
//! | state              | database        | `spend`                  | `add` (no overwrite) | `add` (possible overwrite) | flush              |
//! |--------------------|-----------------|--------------------------|----------------------|----------------------------|--------------------|
//! | absent             | unknown         | fetch, then as below     | -> DIRTY FRESH       | -> DIRTY                   | -                  |
//! | unspent clean      | same coin       | -> spent DIRTY           | error                | -> DIRTY                   | kept clean or dropped |
//! | unspent DIRTY      | other or none   | -> spent DIRTY           | error                | stays DIRTY                | write, -> clean    |
//! | unspent DIRTY FRESH| none            | erased from cache        | error                | stays DIRTY FRESH          | write, -> clean    |
//! | spent DIRTY        | unspent coin    | error (missing coin)     | -> unspent DIRTY     | -> unspent DIRTY           | erase, dropped     |
//!
//! Never present: spent FRESH (erased at once), spent clean (misses are not
//! cached), FRESH without DIRTY. Two more flags, FROM_DATABASE and
//! FROM_FROZEN, only say where an unspent clean coin came from (read from
//! the database or copied from a background flush's frozen map by the
//! prefetch, not put there by connect): the spend counts it ([`crate::coins::coin_reads`]); any
//! change of the entry clears it, and it takes no part in the table.
//! `add` of an unspendable script (OP_RETURN or over 10,000 bytes) does
//! nothing, as in Core. `add` without overwrite on an
//! absent entry trusts the caller (BIP30/BIP34) that the database has no
//! unspent coin there, exactly as Core's `AddCoin(possible_overwrite=false)`.
//!
//! The table runs as assertions. Every entry `add` and `spend` find or
//! leave, and every DIRTY entry a flush writes, must be in one of its rows
//! (the entry's `is_in_state_table`: the never-present states above, and a
//! source flag only on an unspent clean entry), checked with
//! `debug_assert!` (on in the tests' `ci` profile, off in release, where
//! they would cost the hot path a few loads). The rules whose break would
//! write a wrong database are `assert!`s in release too: `add` without
//! overwrite over an entry finds it spent, DIRTY and not FRESH; a FRESH
//! coin spent is DIRTY, and is erased from memory, never written; a spent
//! entry a flush writes as an erasure is not FRESH. The tests of the
//! `writes` module drive the cache through each row.
//!
//! # Files
//! `mod.rs` holds the cache, its limits and its view of a background
//! flush's frozen map; `reads.rs` the lookups, `writes.rs` the table's
//! transitions (`add`, `spend`), `flush.rs` the synchronous flush and the
//! collection of a background one.
//!
//! # Napkin math
//! An entry is a 36-byte outpoint and a 48-byte value (the [`Coin`] with its
//! script inline, its flags in the coin's spare byte: `CacheEntry`), 84
//! bytes packed in its shard's chunks, plus a 4-byte position and a tag
//! byte in the shard's hash table at 44-88 % load (the crate's `coin_shard`
//! and `position_table` modules): ~92 bytes a coin, and no allocation for
//! scripts of up to 34 bytes (over 99 % of outputs). So 450 MiB holds ~5 M
//! coins, about 700 blocks of 2017-era traffic (7,000 outputs each) between
//! flushes. (With the entry in the hash table's bucket it was 100-200
//! bytes a coin, ~141 on the `utxo-heavy` chain; with the script on the
//! heap, a `malloc` per created coin and a `free` per spent one.)
//!
//! The hasher is foldhash keyed with secret seeds from the OS's randomness
//! ([`crate::coins::hasher`]): ~1-2 ns for a 36-byte key against ~27 ns for Core's
//! SipHash-2-4 of 32 bytes on this machine (`shared/anchors.md`; the bench
//! `prefetch` measures both in Rust). A 1 MB block does ~20,000 lookups
//! (fetch + spend per input, add per output): ~0.04 ms with foldhash
//! against ~0.5 ms with SipHash, ~10 % of the ~4 ms per block budget when
//! scripts are skipped. Keys are SHA256d outputs under a secret seed: to
//! force collisions an attacker must both learn the seed and grind
//! double-SHA256 for every colliding transaction, so the weaker
//! (non-cryptographic) keyed hash is an acceptable trade here.

use std::sync::Arc;
use std::thread::JoinHandle;

use ibex_primitives::OutPoint;

use crate::coins::coin::Coin;
use crate::coins::coin_map::{chunk_entries_for, CoinMap};
use crate::coins::database::{CoinsDatabase, FlushStats};
use crate::coins::frozen_map::FrozenMap;
use crate::error::ChainstateError;

pub(in crate::coins) mod flush;
mod reads;
mod writes;

/// The maps keep at least 1/this of their share, however much the
/// database's table readers hold (see [`CoinsCache::limit_bytes`]).
pub const MAP_SHARE_FLOOR_DIVISOR: usize = 4;
/// Table-reader bytes (the coins database's bloom filters and indexes)
/// that are not taken from the maps' share: only what the readers hold
/// beyond this is ([`CoinsCache::limit_bytes`]).
///
/// # Why
/// Core leaves LevelDB's open tables (their indexes and filters) outside
/// `-dbcache`. Counted whole against the maps, the readers take too much
/// of them: at `-dbcache=100` on the `utxo-heavy` chain the readers reach
/// 36.5 MiB of the 72.8 MiB share by height 2,000, so the maps, and with
/// them each flush, shrink to a third of their size: 2.5 times the
/// flushes, level-0 tables and database reads late in the chain. With the
/// first 64 MiB outside the share (docs/utxo-heavy.md), Ibex
/// alone took 28.6 and 28.5 s against 33.3 and 29.7 s, the fourth quarter
/// 8.0 and 7.8 s against 10.1 and 8.6, and peak RSS 288-298 MiB against
/// 233-244, inside the budget of `-dbcache` + 256 MiB. A mainnet set of
/// 180 M coins holds ~90 MiB of readers without last-level filters
/// (`crate::coins::database`): the excess is still counted.
pub const TABLE_READERS_UNCOUNTED_BYTES_MAX: usize = 64 << 20;
/// A flush starts with 1/this of the limit left for the next live map
/// ([`CoinsCache::flush_headroom_bytes`]).
pub const FLUSH_HEADROOM_DIVISOR: usize = 16;
/// ... and at least this much (a few full blocks' new coins), at most a
/// quarter of the limit.
pub const FLUSH_HEADROOM_BYTES_MIN: usize = 8 << 20;

/// Whether a flush keeps clean coins in memory (Core's `Sync`) or empties
/// the cache (Core's `Flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// Keep unspent coins as clean entries (periodic flush, warm cache).
    KeepCoins,
    /// Drop every entry (the cache is full).
    EmptyCache,
}

/// A map being written by a background flush: the cache reads through it
/// until the writer ends ([`crate::coins::background`] starts the writer).
#[derive(Debug)]
pub(in crate::coins) struct FrozenCoins {
    pub(in crate::coins) map: FrozenMap,
    pub(in crate::coins) mode: FlushMode,
}

/// A background flush in progress.
#[derive(Debug)]
pub(in crate::coins) struct BackgroundFlush {
    pub(in crate::coins) frozen: Arc<FrozenCoins>,
    pub(in crate::coins) writer: JoinHandle<Result<FlushStats, ChainstateError>>,
}

/// The UTXO cache over a [`CoinsDatabase`].
#[derive(Debug)]
pub struct CoinsCache {
    pub(in crate::coins) map: CoinMap,
    pub(in crate::coins) database: Arc<CoinsDatabase>,
    cache_bytes_max: usize,
    /// What the coins database's table readers hold, counted against the
    /// share ([`CoinsCache::set_table_readers_bytes`]).
    table_readers_bytes: usize,
    /// What of the table readers is not counted
    /// ([`TABLE_READERS_UNCOUNTED_BYTES_MAX`] by default).
    table_readers_uncounted_bytes: usize,
    pub(in crate::coins) script_heap_bytes: usize,
    pub(in crate::coins) dirty_count: usize,
    pub(in crate::coins) flush_epoch: u64,
    /// A flush being written on a writer thread (see [`crate::coins::background`]).
    pub(in crate::coins) background: Option<BackgroundFlush>,
    /// Entries of a chunk of the maps' shards ([`crate::coins::coin_shard`]),
    /// fixed for the cache's life.
    chunk_entries: usize,
}

impl CoinsCache {
    /// An empty cache of at most `cache_bytes_max` bytes over `database`.
    pub fn new(database: Arc<CoinsDatabase>, cache_bytes_max: usize) -> CoinsCache {
        let mut cache = CoinsCache {
            map: CoinMap::default(),
            database,
            cache_bytes_max,
            table_readers_bytes: 0,
            table_readers_uncounted_bytes: TABLE_READERS_UNCOUNTED_BYTES_MAX,
            script_heap_bytes: 0,
            dirty_count: 0,
            flush_epoch: 0,
            background: None,
            chunk_entries: 0,
        };
        // Sized for the flush trigger with no table readers counted yet.
        let chunk_entries = chunk_entries_for(cache.limit_bytes() - cache.flush_headroom_bytes());
        cache.chunk_entries = chunk_entries;
        cache.map = cache.new_map();
        cache
    }

    /// `cache_bytes_max` for a `-dbcache` of `megabytes` MiB.
    pub fn bytes_for_dbcache_mebibytes(megabytes: u64) -> usize {
        usize::try_from(megabytes.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
    }

    /// The database under the cache.
    pub fn database(&self) -> &Arc<CoinsDatabase> {
        &self.database
    }

    /// The share of `-dbcache` for the maps and the database's table
    /// readers, in bytes.
    pub fn cache_bytes_max(&self) -> usize {
        self.cache_bytes_max
    }

    /// Changes the share to `bytes` (AssumeUTXO's two chainstates share
    /// `-dbcache`, as Core's `MaybeRebalanceCaches` shares it): a cache
    /// above its new share is flushed at its next block.
    pub fn set_cache_bytes_max(&mut self, bytes: usize) {
        self.cache_bytes_max = bytes;
    }

    /// Counts `bytes` held by the coins database's table readers (bloom
    /// filters and indexes) against the share, beyond
    /// [`TABLE_READERS_UNCOUNTED_BYTES_MAX`]: they grow with the
    /// database, ~1.8 bytes a coin with whole-key filters (fewer once the
    /// engine drops them: `crate::engine::flush::WHOLE_KEY_FILTERS_SHARE_DIVISOR`).
    pub fn set_table_readers_bytes(&mut self, bytes: usize) {
        self.table_readers_bytes = bytes;
    }

    /// Leaves `bytes` of the table readers outside the share instead of
    /// [`TABLE_READERS_UNCOUNTED_BYTES_MAX`] (tests that reach the share
    /// with small chains set 0).
    pub fn set_table_readers_uncounted_bytes(&mut self, bytes: usize) {
        self.table_readers_uncounted_bytes = bytes;
    }

    /// What the coins database's table readers were last counted at.
    pub fn table_readers_bytes(&self) -> usize {
        self.table_readers_bytes
    }

    /// The maps' limit: the share less what the table readers take from it
    /// ([`CoinsCache::counted_table_readers_bytes`]), at least
    /// 1/`MAP_SHARE_FLOOR_DIVISOR` of it (past that, on a set of hundreds
    /// of millions of coins with a small `-dbcache`, the readers are not
    /// all counted).
    pub fn limit_bytes(&self) -> usize {
        let floor = self.cache_bytes_max / MAP_SHARE_FLOOR_DIVISOR;
        self.cache_bytes_max.saturating_sub(self.counted_table_readers_bytes()).max(floor)
    }

    /// What the table readers take from the maps' share: what they hold
    /// beyond [`TABLE_READERS_UNCOUNTED_BYTES_MAX`] (or what
    /// [`CoinsCache::set_table_readers_uncounted_bytes`] set).
    pub fn counted_table_readers_bytes(&self) -> usize {
        self.table_readers_bytes.saturating_sub(self.table_readers_uncounted_bytes)
    }

    /// Whether the table readers take more than 1/`share_divisor` of the
    /// share from the maps ([`CoinsCache::counted_table_readers_bytes`]).
    pub fn table_readers_take_more_than(&self, share_divisor: usize) -> bool {
        self.counted_table_readers_bytes() > self.cache_bytes_max / share_divisor.max(1)
    }

    /// Room a flush leaves the next live map before the writer frees
    /// anything: 1/`FLUSH_HEADROOM_DIVISOR` of the limit (the live map
    /// starts empty and takes ~14 MB a second with scripts skipped; the
    /// first shard is freed within ~0.4 s).
    pub fn flush_headroom_bytes(&self) -> usize {
        let limit = self.limit_bytes();
        (limit / FLUSH_HEADROOM_DIVISOR).max(FLUSH_HEADROOM_BYTES_MIN.min(limit / 4))
    }

    /// A new, empty map ([`crate::coins::coin_shard`]).
    pub(in crate::coins) fn new_map(&self) -> CoinMap {
        CoinMap::with_chunk_entries(self.chunk_entries)
    }

    /// Bytes used: the table's allocation plus the scripts' heap bytes,
    /// plus a map still being written by a background flush.
    pub fn memory_bytes(&self) -> usize {
        self.live_memory_bytes() + self.frozen_memory_bytes()
    }

    /// Bytes of the live map alone.
    pub fn live_memory_bytes(&self) -> usize {
        self.map.allocation_size() + self.script_heap_bytes
    }

    /// Bytes of the live map once the shards close to their threshold
    /// have grown (the next block's inserts may double them).
    pub fn projected_live_bytes(&self) -> usize {
        self.map.projected_bytes() + self.script_heap_bytes
    }

    /// Whether the live map should be flushed: grown for the next inserts,
    /// it reaches the limit less the room the next live map needs.
    pub fn is_full(&self) -> bool {
        self.projected_live_bytes() >= self.limit_bytes() - self.flush_headroom_bytes()
    }

    /// Entries in the cache (unspent and spent-not-yet-flushed).
    pub fn entry_count(&self) -> usize {
        self.map.len()
    }

    /// Entries that differ from the database.
    pub fn dirty_count(&self) -> usize {
        self.dirty_count
    }

    /// `visit` of the frozen map's entry for `outpoint` (its coin, `None`
    /// when spent); `None` when the frozen map does not hold it (or there
    /// is none).
    pub(in crate::coins) fn frozen_lookup<R>(
        &self,
        outpoint: &OutPoint,
        visit: impl FnOnce(Option<&Coin>) -> R,
    ) -> Option<R> {
        self.background.as_ref()?.frozen.map.lookup(outpoint, visit)
    }

    /// Shard releases the running background flush has begun (0 without
    /// one): see [`FrozenMap::release_count`].
    pub(in crate::coins) fn frozen_release_count(&self) -> usize {
        self.background.as_ref().map_or(0, |flush| flush.frozen.map.release_count())
    }

    /// Bytes of the frozen map still held by a background flush.
    pub(in crate::coins) fn frozen_memory_bytes(&self) -> usize {
        self.background.as_ref().map_or(0, |flush| flush.frozen.map.held_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coins::entry::CacheEntry;

    /// The napkin math above assumes these sizes.
    #[test]
    fn entry_sizes_match_the_napkin_math() {
        assert_eq!(std::mem::size_of::<Coin>(), 48);
        assert_eq!(std::mem::size_of::<CacheEntry>(), 48);
        assert_eq!(std::mem::size_of::<(OutPoint, CacheEntry)>(), 84);
    }

    /// An empty cache with a share of `share_bytes` over a new database
    /// (kept alive by the returned directory).
    fn cache_with_share(share_bytes: usize) -> (tempfile::TempDir, CoinsCache) {
        let temporary = tempfile::tempdir().expect("temporary directory");
        let database =
            Arc::new(CoinsDatabase::open(temporary.path(), &Default::default()).expect("open"));
        (temporary, CoinsCache::new(database, share_bytes))
    }

    #[test]
    fn only_table_readers_beyond_the_allowance_shrink_the_maps() {
        let share_bytes = 400 << 20;
        let (_directory, mut cache) = cache_with_share(share_bytes);
        assert_eq!(cache.limit_bytes(), share_bytes);
        cache.set_table_readers_bytes(TABLE_READERS_UNCOUNTED_BYTES_MAX);
        assert_eq!(cache.limit_bytes(), share_bytes);
        cache.set_table_readers_bytes(TABLE_READERS_UNCOUNTED_BYTES_MAX + (10 << 20));
        assert_eq!(cache.limit_bytes(), share_bytes - (10 << 20));
        // However large the readers, the maps keep their floor.
        cache.set_table_readers_bytes(usize::MAX);
        assert_eq!(cache.limit_bytes(), share_bytes / MAP_SHARE_FLOOR_DIVISOR);
    }

    #[test]
    fn table_readers_take_from_the_share_only_beyond_the_allowance() {
        let share_bytes = 72 << 20;
        let (_directory, mut cache) = cache_with_share(share_bytes);
        // Half the share in readers, all within the allowance: nothing taken.
        cache.set_table_readers_bytes(share_bytes / 2 + 1);
        assert_eq!(cache.counted_table_readers_bytes(), 0);
        assert!(!cache.table_readers_take_more_than(2));
        let past_allowance = TABLE_READERS_UNCOUNTED_BYTES_MAX + share_bytes / 2;
        cache.set_table_readers_bytes(past_allowance);
        assert_eq!(cache.counted_table_readers_bytes(), share_bytes / 2);
        assert!(!cache.table_readers_take_more_than(2));
        cache.set_table_readers_bytes(past_allowance + 1);
        assert!(cache.table_readers_take_more_than(2));
        assert!(!cache.table_readers_take_more_than(1));
        // With no allowance every reader byte counts.
        cache.set_table_readers_uncounted_bytes(0);
        cache.set_table_readers_bytes(share_bytes / 2 + 1);
        assert!(cache.table_readers_take_more_than(2));
        assert_eq!(cache.limit_bytes(), share_bytes - (share_bytes / 2 + 1));
    }
}
