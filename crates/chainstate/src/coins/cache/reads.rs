//! The cache's reads: from the live map, a background flush's frozen map,
//! or the database, in that order (newest first).

use ibex_primitives::OutPoint;

use super::CoinsCache;
use crate::coins::coin::Coin;
use crate::coins::coin_reads::CoinSource;
use crate::coins::entry::{CacheEntry, FROM_DATABASE};
use crate::error::ChainstateError;

impl CoinsCache {
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
    pub(super) fn load(&mut self, outpoint: &OutPoint) -> Result<CoinSource, ChainstateError> {
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
    /// several threads at once (see `crate::connect`).
    pub fn has_unspent(&self, outpoint: &OutPoint) -> Result<bool, ChainstateError> {
        match self.memory_entry(outpoint) {
            Some(unspent) => Ok(unspent),
            None => self.database.has_coin(outpoint),
        }
    }

    /// The entry for `outpoint` in memory: `Some(true)` unspent,
    /// `Some(false)` spent and not yet flushed, `None` not in memory.
    pub(in crate::coins) fn memory_entry(&self, outpoint: &OutPoint) -> Option<bool> {
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
}
