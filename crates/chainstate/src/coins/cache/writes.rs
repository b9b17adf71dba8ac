//! The cache's changes, Core's `AddCoin` and `SpendCoin`: the transitions
//! of the state table in the [module docs](super), each checked against it
//! ([`CacheEntry::is_in_state_table`]).

use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::OutPoint;

use super::CoinsCache;
use crate::coins::coin::Coin;
use crate::coins::coin_map::Entry as MapEntry;
use crate::coins::coin_reads::CoinSource;
use crate::coins::entry::{CacheEntry, DIRTY, FRESH, FROM_DATABASE, FROM_FROZEN, SOURCE_FLAGS};
use crate::error::ChainstateError;

impl CoinsCache {
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
                debug_assert!(entry.is_in_state_table(), "{entry:?}");
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
                let was_fresh = entry.is_fresh();
                entry.set_coin(coin);
                entry.set_flags((entry.flags() | DIRTY) & !SOURCE_FLAGS);
                // Unspent DIRTY, FRESH only if it was (an overwrite never
                // makes an entry FRESH).
                debug_assert!(entry.is_in_state_table(), "{entry:?}");
                debug_assert_eq!(entry.is_fresh(), was_fresh);
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
    /// prefetch) or now. Connect counts it ([`crate::coins::coin_reads`]).
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
        debug_assert!(entry.is_in_state_table(), "{entry:?}");
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
            // Spent DIRTY, not FRESH: the next flush writes its erasure.
            entry.set_flags(DIRTY);
            debug_assert!(entry.is_in_state_table(), "{entry:?}");
            if !was_dirty {
                self.dirty_count += 1;
            }
        }
        Ok((coin, source))
    }
}

/// One test per row of the state table (module docs): each drives a cache
/// into the row, applies every operation of its columns from there, and
/// checks the row it lands in, the dirty count, and what a flush writes,
/// through the batch protocol and through ingested tables alike.
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ibex_primitives::{Amount, BlockHash, Txid};

    use super::*;
    use crate::coins::cache::FlushMode;
    use crate::coins::database::{CoinsDatabase, DatabaseOptions, FlushStats};
    use crate::coins::entry::EntryState;

    fn outpoint() -> OutPoint {
        OutPoint { txid: Txid([7; 32]), vout: 1 }
    }

    fn coin(satoshis: u32) -> Coin {
        Coin::new(Amount::from_sat_u32(satoshis), [0x51u8; 22], 5, false).unwrap()
    }

    /// An empty cache over a new database that holds `on_disk` at
    /// [`outpoint`], flushing in batches or in tables.
    fn cache_over(on_disk: Option<Coin>, batches: bool) -> (tempfile::TempDir, CoinsCache) {
        let directory = tempfile::tempdir().unwrap();
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        database.set_batch_flushes(batches);
        let mut cache = CoinsCache::new(Arc::new(database), 8 << 20);
        if let Some(coin) = on_disk {
            cache.add(&outpoint(), coin, false).unwrap();
            cache.flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        }
        assert_eq!((state(&cache), cache.dirty_count()), (None, 0));
        (directory, cache)
    }

    /// The row [`outpoint`]'s entry is in (`None`: absent).
    fn state(cache: &CoinsCache) -> Option<EntryState> {
        cache.map.get(&outpoint()).map(CacheEntry::state)
    }

    /// Flushes with `mode`: what the flush wrote (coins written, coins
    /// erased), what the database then holds at [`outpoint`], and the row
    /// the entry is left in.
    fn flush(
        cache: &mut CoinsCache,
        mode: FlushMode,
    ) -> ((u64, u64), Option<Coin>, Option<EntryState>) {
        let FlushStats { coins_written, coins_erased, .. } =
            cache.flush(BlockHash([2; 32]), mode).unwrap();
        let on_disk = cache.database().coin(&outpoint()).unwrap();
        ((coins_written, coins_erased), on_disk, state(cache))
    }

    /// Starts of each row: a cache with the entry in it, kept alive with
    /// its database's directory.
    fn unspent_clean(batches: bool) -> (tempfile::TempDir, CoinsCache) {
        let (directory, mut cache) = cache_over(Some(coin(1)), batches);
        assert_eq!(cache.fetch(&outpoint()).unwrap(), Some(&coin(1)));
        assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::UnspentClean), 0));
        (directory, cache)
    }

    fn unspent_dirty(batches: bool) -> (tempfile::TempDir, CoinsCache) {
        let (directory, mut cache) = unspent_clean(batches);
        cache.add(&outpoint(), coin(2), true).unwrap();
        assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::UnspentDirty), 1));
        (directory, cache)
    }

    fn unspent_dirty_fresh(batches: bool) -> (tempfile::TempDir, CoinsCache) {
        let (directory, mut cache) = cache_over(None, batches);
        cache.add(&outpoint(), coin(3), false).unwrap();
        assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::UnspentDirtyFresh), 1));
        (directory, cache)
    }

    fn spent_dirty(batches: bool) -> (tempfile::TempDir, CoinsCache) {
        let (directory, mut cache) = cache_over(Some(coin(1)), batches);
        assert_eq!(cache.spend(&outpoint()).unwrap(), coin(1));
        assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::SpentDirty), 1));
        (directory, cache)
    }

    fn is_overwrite_error(result: Result<(), ChainstateError>) -> bool {
        matches!(result, Err(ChainstateError::OverwriteUnspentCoin { .. }))
    }

    #[test]
    fn row_absent() {
        for batches in [false, true] {
            // spend: fetch, then as unspent clean; no coin anywhere is an error.
            let (_directory, mut cache) = cache_over(Some(coin(1)), batches);
            assert_eq!(cache.spend(&outpoint()).unwrap(), coin(1));
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::SpentDirty), 1));
            let (_directory, mut cache) = cache_over(None, batches);
            let missing = cache.spend(&outpoint());
            assert!(matches!(missing, Err(ChainstateError::MissingCoin { .. })), "{missing:?}");
            assert_eq!(state(&cache), None, "misses are not cached");
            // add without overwrite: DIRTY FRESH (the caller vouches for the database).
            let (_directory, mut cache) = cache_over(None, batches);
            cache.add(&outpoint(), coin(2), false).unwrap();
            assert_eq!(
                (state(&cache), cache.dirty_count()),
                (Some(EntryState::UnspentDirtyFresh), 1)
            );
            // add with possible overwrite: DIRTY, not FRESH.
            let (_directory, mut cache) = cache_over(Some(coin(1)), batches);
            cache.add(&outpoint(), coin(2), true).unwrap();
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::UnspentDirty), 1));
            // flush: nothing to write.
            let (_directory, mut cache) = cache_over(Some(coin(1)), batches);
            assert_eq!(flush(&mut cache, FlushMode::KeepCoins), ((0, 0), Some(coin(1)), None));
        }
    }

    #[test]
    fn row_unspent_clean() {
        for batches in [false, true] {
            let (_directory, mut cache) = unspent_clean(batches);
            assert_eq!(cache.spend(&outpoint()).unwrap(), coin(1));
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::SpentDirty), 1));
            let (_directory, mut cache) = unspent_clean(batches);
            assert!(is_overwrite_error(cache.add(&outpoint(), coin(2), false)));
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::UnspentClean), 0));
            let (_directory, mut cache) = unspent_clean(batches);
            cache.add(&outpoint(), coin(2), true).unwrap();
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::UnspentDirty), 1));
            // flush: kept clean, or dropped; nothing written either way.
            let (_directory, mut cache) = unspent_clean(batches);
            let kept = flush(&mut cache, FlushMode::KeepCoins);
            assert_eq!(kept, ((0, 0), Some(coin(1)), Some(EntryState::UnspentClean)));
            let (_directory, mut cache) = unspent_clean(batches);
            assert_eq!(flush(&mut cache, FlushMode::EmptyCache), ((0, 0), Some(coin(1)), None));
        }
    }

    #[test]
    fn row_unspent_dirty() {
        for batches in [false, true] {
            let (_directory, mut cache) = unspent_dirty(batches);
            assert_eq!(cache.spend(&outpoint()).unwrap(), coin(2));
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::SpentDirty), 1));
            let (_directory, mut cache) = unspent_dirty(batches);
            assert!(is_overwrite_error(cache.add(&outpoint(), coin(3), false)));
            assert_eq!(state(&cache), Some(EntryState::UnspentDirty));
            let (_directory, mut cache) = unspent_dirty(batches);
            cache.add(&outpoint(), coin(3), true).unwrap();
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::UnspentDirty), 1));
            // flush: written, then clean.
            let (_directory, mut cache) = unspent_dirty(batches);
            let kept = flush(&mut cache, FlushMode::KeepCoins);
            assert_eq!(kept, ((1, 0), Some(coin(2)), Some(EntryState::UnspentClean)));
            assert_eq!(cache.dirty_count(), 0);
        }
    }

    #[test]
    fn row_unspent_dirty_fresh() {
        for batches in [false, true] {
            // spend: erased from the cache, so a flush writes nothing of it.
            let (_directory, mut cache) = unspent_dirty_fresh(batches);
            assert_eq!(cache.spend(&outpoint()).unwrap(), coin(3));
            assert_eq!((state(&cache), cache.dirty_count()), (None, 0));
            assert_eq!(flush(&mut cache, FlushMode::KeepCoins), ((0, 0), None, None));
            let (_directory, mut cache) = unspent_dirty_fresh(batches);
            assert!(is_overwrite_error(cache.add(&outpoint(), coin(4), false)));
            assert_eq!(state(&cache), Some(EntryState::UnspentDirtyFresh));
            let (_directory, mut cache) = unspent_dirty_fresh(batches);
            cache.add(&outpoint(), coin(4), true).unwrap();
            let fresh = Some(EntryState::UnspentDirtyFresh);
            assert_eq!((state(&cache), cache.dirty_count()), (fresh, 1));
            // flush: written, then clean.
            let (_directory, mut cache) = unspent_dirty_fresh(batches);
            let kept = flush(&mut cache, FlushMode::KeepCoins);
            assert_eq!(kept, ((1, 0), Some(coin(3)), Some(EntryState::UnspentClean)));
        }
    }

    #[test]
    fn row_spent_dirty() {
        for batches in [false, true] {
            let (_directory, mut cache) = spent_dirty(batches);
            let missing = cache.spend(&outpoint());
            assert!(matches!(missing, Err(ChainstateError::MissingCoin { .. })), "{missing:?}");
            assert_eq!((state(&cache), cache.dirty_count()), (Some(EntryState::SpentDirty), 1));
            // add either way: unspent DIRTY, not FRESH (the database has the old coin).
            for possible_overwrite in [false, true] {
                let (_directory, mut cache) = spent_dirty(batches);
                cache.add(&outpoint(), coin(5), possible_overwrite).unwrap();
                let dirty = Some(EntryState::UnspentDirty);
                assert_eq!((state(&cache), cache.dirty_count()), (dirty, 1));
            }
            // flush: written as an erasure, then dropped, in either mode.
            for mode in [FlushMode::KeepCoins, FlushMode::EmptyCache] {
                let (_directory, mut cache) = spent_dirty(batches);
                assert_eq!(flush(&mut cache, mode), ((0, 1), None, None));
            }
        }
    }
}
