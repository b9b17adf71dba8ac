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
//! prefetch, not put there by connect): the spend counts it ([`crate::coin_reads`]); any
//! change of the entry clears it, and it takes no part in the table.
//! `add` of an unspendable script (OP_RETURN or over 10,000 bytes) does
//! nothing, as in Core. `add` without overwrite on an
//! absent entry trusts the caller (BIP30/BIP34) that the database has no
//! unspent coin there, exactly as Core's `AddCoin(possible_overwrite=false)`.
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
//! ([`crate::hasher`]): ~1-2 ns for a 36-byte key against ~27 ns for Core's
//! SipHash-2-4 of 32 bytes on this machine (`shared/anchors.md`; the bench
//! `prefetch` measures both in Rust). A 1 MB block does ~20,000 lookups
//! (fetch + spend per input, add per output): ~0.04 ms with foldhash
//! against ~0.5 ms with SipHash, ~10 % of the ~4 ms per block budget when
//! scripts are skipped. Keys are SHA256d outputs under a secret seed: to
//! force collisions an attacker must both learn the seed and grind
//! double-SHA256 for every colliding transaction, so the weaker
//! (non-cryptographic) keyed hash is an acceptable trade here.

use std::sync::Arc;

use crate::coin_map::Entry as MapEntry;
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{BlockHash, OutPoint, Txid};

use crate::bip30_reader::Bip30Reader;
use crate::coin::Coin;
use crate::coin_map::{chunk_entries_for, CoinMap};
use crate::coin_reads::CoinSource;
use crate::database::{CoinsDatabase, FlushStats};
use crate::error::ChainstateError;

const DIRTY: u8 = 1;
const FRESH: u8 = 2;
/// The coin was read from the database (by the prefetch or a lookup):
/// statistics only ([`crate::coin_reads`]).
pub(crate) const FROM_DATABASE: u8 = 4;
/// The coin was copied from a background flush's frozen map by the
/// prefetch: statistics only, like [`FROM_DATABASE`].
pub(crate) const FROM_FROZEN: u8 = 8;
/// The flags that only say where a clean coin came from.
const SOURCE_FLAGS: u8 = FROM_DATABASE | FROM_FROZEN;

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
/// ([`crate::database`]): the excess is still counted.
pub const TABLE_READERS_UNCOUNTED_BYTES_MAX: usize = 64 << 20;
/// A flush starts with 1/this of the limit left for the next live map
/// ([`CoinsCache::flush_headroom_bytes`]).
pub const FLUSH_HEADROOM_DIVISOR: usize = 16;
/// ... and at least this much (a few full blocks' new coins), at most a
/// quarter of the limit.
pub const FLUSH_HEADROOM_BYTES_MIN: usize = 8 << 20;

/// The entry is a spent coin: its [`Coin`] is a placeholder.
const SPENT: u8 = 16;

/// One cache slot: the coin (none when spent) and its flags.
///
/// The flags and whether the coin is spent live in the coin's own spare
/// byte ([`Coin::cache_bits`]), so an entry is a [`Coin`] and nothing
/// more: 48 bytes, and 84 with its outpoint (the coin's amount is two
/// 4-byte halves), where an `Option<Coin>` and a flag byte would take 64
/// and 104 (with the script an enum of inline bytes and a box, the coin
/// alone would take 56). docs/utxo-heavy.md has what the smaller entries
/// do to the flushes.
#[derive(Clone)]
pub(crate) struct CacheEntry {
    slot: Coin,
}

/// Shows the coin (`None` when spent) and the flags, not the placeholder
/// coin a spent entry holds.
impl std::fmt::Debug for CacheEntry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("CacheEntry")
            .field("coin", &self.coin())
            .field("flags", &self.flags())
            .finish()
    }
}

impl CacheEntry {
    /// An entry holding `coin` (`None`: spent) with `flags`.
    pub(crate) fn new(coin: Option<Coin>, flags: u8) -> CacheEntry {
        assert!(flags & SPENT == 0, "flags {flags:#x} hold the spent bit");
        let slot = match coin {
            Some(mut coin) => {
                coin.set_cache_bits(flags);
                coin
            }
            None => Coin::placeholder(flags | SPENT),
        };
        CacheEntry { slot }
    }

    /// The coin, `None` when spent.
    pub(crate) fn coin(&self) -> Option<&Coin> {
        if self.slot.cache_bits() & SPENT != 0 {
            None
        } else {
            Some(&self.slot)
        }
    }

    /// The coin, leaving the entry spent with the same flags.
    pub(crate) fn take_coin(&mut self) -> Option<Coin> {
        let bits = self.slot.cache_bits();
        if bits & SPENT != 0 {
            return None;
        }
        let mut coin = std::mem::replace(&mut self.slot, Coin::placeholder(bits | SPENT));
        coin.set_cache_bits(0);
        Some(coin)
    }

    /// The coin, `None` when spent.
    pub(crate) fn into_coin(mut self) -> Option<Coin> {
        self.take_coin()
    }

    /// Puts `coin` in the entry, with the same flags.
    pub(crate) fn set_coin(&mut self, mut coin: Coin) {
        coin.set_cache_bits(self.flags());
        self.slot = coin;
    }

    /// The entry's flags ([`DIRTY`], [`FRESH`], [`FROM_DATABASE`], [`FROM_FROZEN`]).
    pub(crate) fn flags(&self) -> u8 {
        self.slot.cache_bits() & !SPENT
    }

    /// Sets the entry's flags; whether it is spent stays.
    pub(crate) fn set_flags(&mut self, flags: u8) {
        assert!(flags & SPENT == 0, "flags {flags:#x} hold the spent bit");
        let spent = self.slot.cache_bits() & SPENT;
        self.slot.set_cache_bits(flags | spent);
    }

    pub(crate) fn is_dirty(&self) -> bool {
        self.flags() & DIRTY != 0
    }

    fn is_fresh(&self) -> bool {
        self.flags() & FRESH != 0
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.coin().map_or(0, Coin::heap_bytes)
    }
}

/// What BIP30's question for a whole transaction found
/// ([`CoinsCache::has_unspent_output_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputsLookup {
    /// One of the outputs is an unspent coin already.
    pub unspent: bool,
    /// Outputs looked at that neither map had: the database answered for
    /// them (with one prefix seek, or a point read each).
    pub answered_by_database: u32,
}

/// Whether a flush keeps clean coins in memory (Core's `Sync`) or empties
/// the cache (Core's `Flush`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushMode {
    /// Keep unspent coins as clean entries (periodic flush, warm cache).
    KeepCoins,
    /// Drop every entry (the cache is full).
    EmptyCache,
}

/// The UTXO cache over a [`CoinsDatabase`].
#[derive(Debug)]
pub struct CoinsCache {
    pub(crate) map: CoinMap,
    pub(crate) database: Arc<CoinsDatabase>,
    cache_bytes_max: usize,
    /// What the coins database's table readers hold, counted against the
    /// share ([`CoinsCache::set_table_readers_bytes`]).
    table_readers_bytes: usize,
    /// What of the table readers is not counted
    /// ([`TABLE_READERS_UNCOUNTED_BYTES_MAX`] by default).
    table_readers_uncounted_bytes: usize,
    pub(crate) script_heap_bytes: usize,
    pub(crate) dirty_count: usize,
    pub(crate) flush_epoch: u64,
    /// A flush being written on a writer thread (see [`crate::background`]).
    pub(crate) background: Option<crate::background::BackgroundFlush>,
    /// Entries of a chunk of the maps' shards ([`crate::coin_shard`]),
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

    /// Counts `bytes` held by the coins database's table readers (bloom
    /// filters and indexes) against the share, beyond
    /// [`TABLE_READERS_UNCOUNTED_BYTES_MAX`]: they grow with the
    /// database, ~1.8 bytes a coin with whole-key filters (fewer once the
    /// engine drops them: [`crate::engine::flush::WHOLE_KEY_FILTERS_SHARE_DIVISOR`]).
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
    /// 1/[`MAP_SHARE_FLOOR_DIVISOR`] of it (past that, on a set of hundreds
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
    /// anything: 1/[`FLUSH_HEADROOM_DIVISOR`] of the limit (the live map
    /// starts empty and takes ~14 MB a second with scripts skipped; the
    /// first shard is freed within ~0.4 s).
    pub fn flush_headroom_bytes(&self) -> usize {
        let limit = self.limit_bytes();
        (limit / FLUSH_HEADROOM_DIVISOR).max(FLUSH_HEADROOM_BYTES_MIN.min(limit / 4))
    }

    /// A new, empty map ([`crate::coin_shard`]).
    pub(crate) fn new_map(&self) -> CoinMap {
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

    /// The coin at `outpoint`, from memory or else from the database (then
    /// cached clean). `None` when there is no unspent coin.
    pub fn fetch(&mut self, outpoint: &OutPoint) -> Result<Option<&Coin>, ChainstateError> {
        if !self.map.contains_key(outpoint) {
            self.load(outpoint)?;
        }
        Ok(self.map.get(outpoint).and_then(CacheEntry::coin))
    }

    /// Reads `outpoint` from a background flush's frozen map or else the
    /// database, and caches it clean if found; says which it read.
    fn load(&mut self, outpoint: &OutPoint) -> Result<CoinSource, ChainstateError> {
        // A background flush's frozen map is newer than the database.
        if let Some(frozen) = self.frozen_lookup(outpoint, |coin| coin.cloned()) {
            if let Some(coin) = frozen {
                self.script_heap_bytes += coin.heap_bytes();
                self.map.insert(*outpoint, CacheEntry::new(Some(coin), 0));
            }
            return Ok(CoinSource::FrozenMap);
        }
        if let Some(coin) = self.database.coin(outpoint)? {
            self.script_heap_bytes += coin.heap_bytes();
            let entry = CacheEntry::new(Some(coin), FROM_DATABASE);
            self.map.insert(*outpoint, entry);
        }
        Ok(CoinSource::DirectRead)
    }

    /// Whether an unspent coin exists at `outpoint`.
    pub fn contains(&mut self, outpoint: &OutPoint) -> Result<bool, ChainstateError> {
        Ok(self.fetch(outpoint)?.is_some())
    }

    /// Whether an unspent coin exists at `outpoint`, caching nothing: the
    /// BIP30 lookups, almost all for outpoints that do not exist, run on
    /// several threads at once (see [`crate::connect`]).
    pub fn has_unspent(&self, outpoint: &OutPoint) -> Result<bool, ChainstateError> {
        match self.memory_entry(outpoint) {
            Some(unspent) => Ok(unspent),
            None => self.database.has_coin(outpoint),
        }
    }

    /// BIP30's question for a whole transaction: whether any of the
    /// first `output_count` outputs of `txid` is an unspent coin
    /// ([`Bip30Reader::has_unspent_output_of`]; many questions in a row go
    /// to one [`Bip30Reader`]).
    pub fn has_unspent_output_of(
        &self,
        txid: &Txid,
        output_count: u32,
    ) -> Result<OutputsLookup, ChainstateError> {
        Bip30Reader::new(self).has_unspent_output_of(txid, output_count)
    }

    /// The entry for `outpoint` in memory: `Some(true)` unspent,
    /// `Some(false)` spent and not yet flushed, `None` not in memory.
    pub(crate) fn memory_entry(&self, outpoint: &OutPoint) -> Option<bool> {
        match self.map.get(outpoint) {
            Some(entry) => Some(entry.coin().is_some()),
            None => self.frozen_lookup(outpoint, |coin| coin.is_some()),
        }
    }

    /// The unspent coin at `outpoint` from memory, a background flush's
    /// frozen map or the database, caching nothing (readers on the engine's
    /// thread: an RPC's `gettxout` must not change what the cache holds).
    pub fn coin(&self, outpoint: &OutPoint) -> Result<Option<Coin>, ChainstateError> {
        if let Some(entry) = self.map.get(outpoint) {
            return Ok(entry.coin().cloned());
        }
        if let Some(frozen) = self.frozen_lookup(outpoint, |coin| coin.cloned()) {
            return Ok(frozen);
        }
        self.database.coin(outpoint)
    }

    /// The coin at `outpoint` if it is in memory (no database read).
    pub fn peek(&self, outpoint: &OutPoint) -> Option<&Coin> {
        self.map.get(outpoint).and_then(CacheEntry::coin)
    }

    /// Adds a coin (Core's `AddCoin`). With `possible_overwrite` false, an
    /// unspent coin already at `outpoint` is an error; with it true (BIP30's
    /// duplicate coinbases) the coin replaces it and is never marked FRESH.
    pub fn add(
        &mut self,
        outpoint: &OutPoint,
        coin: Coin,
        possible_overwrite: bool,
    ) -> Result<(), ChainstateError> {
        if is_unspendable(coin.script_pubkey()) {
            return Ok(());
        }
        let heap_bytes = coin.heap_bytes();
        match self.map.entry(*outpoint) {
            MapEntry::Vacant(slot) => {
                let flags = if possible_overwrite { DIRTY } else { DIRTY | FRESH };
                slot.insert(CacheEntry::new(Some(coin), flags));
                self.dirty_count += 1;
            }
            MapEntry::Occupied(mut slot) => {
                let entry = slot.get_mut();
                if !possible_overwrite && entry.coin().is_some() {
                    return Err(ChainstateError::OverwriteUnspentCoin { outpoint: *outpoint });
                }
                // Only a spent entry can be here without overwrite, and spent
                // entries are always DIRTY and never FRESH: the database has
                // the old coin, so the new one is not FRESH either.
                assert!(possible_overwrite || (entry.is_dirty() && !entry.is_fresh()));
                self.script_heap_bytes -= entry.heap_bytes();
                if !entry.is_dirty() {
                    self.dirty_count += 1;
                }
                entry.set_coin(coin);
                entry.set_flags((entry.flags() | DIRTY) & !SOURCE_FLAGS);
            }
        }
        self.script_heap_bytes += heap_bytes;
        Ok(())
    }

    /// Spends the coin at `outpoint` and returns it (for undo data). A FRESH
    /// coin is erased from memory; any other becomes a spent DIRTY entry
    /// that the next flush erases from the database.
    pub fn spend(&mut self, outpoint: &OutPoint) -> Result<Coin, ChainstateError> {
        self.spend_found(outpoint).map(|(coin, _source)| coin)
    }

    /// [`Self::spend`], saying where the coin was found: in memory (the
    /// live or the frozen map) or read from the database, ahead (the
    /// prefetch) or now. Connect counts it ([`crate::coin_reads`]).
    pub fn spend_found(
        &mut self,
        outpoint: &OutPoint,
    ) -> Result<(Coin, CoinSource), ChainstateError> {
        let loaded =
            if self.map.contains_key(outpoint) { None } else { Some(self.load(outpoint)?) };
        let MapEntry::Occupied(mut slot) = self.map.entry(*outpoint) else {
            return Err(ChainstateError::MissingCoin { outpoint: *outpoint });
        };
        let entry = slot.get_mut();
        let was_dirty = entry.is_dirty();
        let source = loaded.unwrap_or(if entry.flags() & FROM_DATABASE != 0 {
            CoinSource::Prefetch
        } else if entry.flags() & FROM_FROZEN != 0 {
            CoinSource::FrozenMap
        } else {
            CoinSource::LiveMap
        });
        let Some(coin) = entry.take_coin() else {
            return Err(ChainstateError::MissingCoin { outpoint: *outpoint });
        };
        self.script_heap_bytes -= coin.heap_bytes();
        if entry.is_fresh() {
            assert!(was_dirty, "a FRESH entry is always DIRTY");
            slot.remove();
            self.dirty_count -= 1;
        } else {
            entry.set_flags(DIRTY);
            if !was_dirty {
                self.dirty_count += 1;
            }
        }
        Ok((coin, source))
    }

    /// Writes every DIRTY entry to the database as the state at `best_block`,
    /// in batches, then erases spent entries and, per `mode`, keeps the
    /// unspent ones clean or empties the cache.
    pub fn flush(
        &mut self,
        best_block: BlockHash,
        mode: FlushMode,
    ) -> Result<FlushStats, ChainstateError> {
        self.finish_background_flush()?;
        self.flush_epoch += 1;
        let stats = write_dirty_in_parallel(&self.database, &self.map, best_block)?;
        match mode {
            FlushMode::EmptyCache => {
                self.map = self.new_map();
                self.script_heap_bytes = 0;
            }
            FlushMode::KeepCoins => {
                self.map.retain(|_, entry| entry.coin().is_some());
                self.map.values_mut().for_each(|entry| entry.set_flags(0));
            }
        }
        self.dirty_count = 0;
        crate::heap::release_free_memory();
        Ok(stats)
    }
}

/// Writes `map`'s dirty entries as one flush to `best_block`, encoding and
/// writing coin batches on every thread of the global pool (the head
/// record is written first and the best block last, so the crash rules of
/// [`crate::database`] hold whatever the order of the batches between).
///
/// # Napkin math
/// A whole-cache flush is ~3 us a coin on one thread (encoding, RocksDB's
/// write-ahead log and memtable): 2 M coins take ~6.5 s. RocksDB inserts
/// into its memtable from several writers at once, so two threads take
/// ~3.5 s. Each thread's batches are at most `-dbbatchsize` divided by the
/// thread count, so the batches in memory at once stay within one
/// `-dbbatchsize`.
fn write_dirty_in_parallel(
    database: &CoinsDatabase,
    map: &CoinMap,
    best_block: BlockHash,
) -> Result<FlushStats, ChainstateError> {
    use rayon::prelude::*;
    if database.ingests_flushes() {
        return crate::database_ingest::ingest_map(database, map, best_block);
    }
    let mut writer = database.begin_flush(best_block)?;
    writer.write_head()?;
    let batch_bytes_max = database.flush_batch_bytes_max() / rayon::current_num_threads().max(1);
    let stats = map
        .par_iter()
        .filter(|(_, entry)| entry.is_dirty())
        .try_fold(
            || database.coin_batches(batch_bytes_max),
            |mut batches, (outpoint, entry)| {
                match entry.coin() {
                    Some(coin) => batches.put(outpoint, coin)?,
                    None => {
                        assert!(!entry.is_fresh(), "spent FRESH entries are erased at spend");
                        batches.erase(outpoint)?;
                    }
                }
                Ok::<_, ChainstateError>(batches)
            },
        )
        .map(|batches| batches.and_then(|batches| batches.finish()))
        .try_reduce(FlushStats::default, |mut total, stats| {
            total += stats;
            Ok(total)
        })?;
    writer.add_stats(stats);
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The napkin math above assumes these sizes.
    #[test]
    fn entry_sizes_match_the_napkin_math() {
        assert_eq!(std::mem::size_of::<Coin>(), 48);
        assert_eq!(std::mem::size_of::<CacheEntry>(), 48);
        assert_eq!(std::mem::size_of::<(OutPoint, CacheEntry)>(), 84);
    }

    /// An entry keeps its flags and whether it is spent in the coin's
    /// spare byte: neither leaks into the coin it gives back, nor changes
    /// the other.
    #[test]
    fn an_entry_keeps_flags_and_spent_apart_from_its_coin() {
        let spent = format!("{:?}", CacheEntry::new(None, DIRTY));
        assert_eq!(spent, "CacheEntry { coin: None, flags: 1 }");
        let coin =
            Coin::new(ibex_primitives::Amount::from_sat(5_000).expect("amount"), [0x51], 7, true)
                .expect("coin");
        let mut entry = CacheEntry::new(Some(coin.clone()), DIRTY | FRESH);
        assert_eq!(entry.coin(), Some(&coin));
        assert!(entry.coin().is_some_and(Coin::is_coinbase));
        assert_eq!(entry.flags(), DIRTY | FRESH);
        entry.set_flags(FROM_FROZEN);
        assert_eq!((entry.flags(), entry.coin()), (FROM_FROZEN, Some(&coin)));
        let taken = entry.take_coin().expect("unspent");
        assert_eq!((taken.cache_bits(), taken.is_coinbase(), taken.height()), (0, true, 7));
        assert_eq!((entry.coin(), entry.flags(), entry.heap_bytes()), (None, FROM_FROZEN, 0));
        assert_eq!(entry.take_coin(), None);
        entry.set_flags(DIRTY);
        assert_eq!((entry.coin(), entry.flags()), (None, DIRTY));
        entry.set_coin(taken);
        assert_eq!((entry.flags(), entry.coin()), (DIRTY, Some(&coin)));
        let spent = CacheEntry::new(None, DIRTY);
        assert_eq!((spent.coin(), spent.flags()), (None, DIRTY));
        assert_eq!(spent.into_coin(), None);
        assert_eq!(entry.into_coin(), Some(coin));
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
