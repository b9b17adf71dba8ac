//! Parallel prevout prefetch: read a block's missing coins from the database
//! on all cores before the block is connected, so connect finds them in memory.
//!
//! Three steps, so the read can run on another thread while the cache is in
//! use: [`CoinsCache::prefetch_request`] lists the outpoints missing from the
//! cache, [`CoinsDatabase::read_prefetch`] reads them (`&self`, in parallel
//! chunks of RocksDB `MultiGet`), [`CoinsCache::insert_prefetched`] inserts the
//! coins found as clean entries. [`CoinsCache::prefetch`] does all three.
//!
//! A result is only inserted if no flush happened since the request: a flush
//! may erase a coin the read saw, and inserting that stale coin would let a
//! later block spend it twice. Within one flush epoch the database does not
//! change and entries present in the cache are never overwritten.
//!
//! # Napkin math
//! A 1 MB block spends ~6,000 coins; a cold point lookup in RocksDB is
//! ~2-5 us from the page cache (block index, bloom filter, data block,
//! decode), so ~20 ms a block one at a time, the largest cost of connect when
//! scripts are skipped. `MultiGet` batches the index and filter probes, and
//! chunks of [`PREFETCH_CHUNK_OUTPOINTS`] spread the work on every core.

use crate::coins::coin_map::Entry as MapEntry;
use ibex_primitives::OutPoint;
use rayon::prelude::*;

use crate::coins::cache::CoinsCache;
use crate::coins::coin::Coin;
use crate::coins::database::CoinsDatabase;
use crate::coins::entry::{CacheEntry, FROM_DATABASE, FROM_FROZEN};
use crate::error::ChainstateError;

/// Outpoints per parallel `MultiGet` call: large enough to amortise the call,
/// small enough that a 6,000-input block makes work for many cores.
pub const PREFETCH_CHUNK_OUTPOINTS: usize = 256;

/// Outpoints to read, tagged with the cache's flush epoch.
#[derive(Debug, Clone)]
pub struct PrefetchRequest {
    flush_epoch: u64,
    outpoints: Vec<OutPoint>,
}

impl PrefetchRequest {
    /// The outpoints that were missing from the cache.
    pub fn outpoints(&self) -> &[OutPoint] {
        &self.outpoints
    }
}

/// Coins read for a [`PrefetchRequest`].
#[derive(Debug, Clone)]
pub struct PrefetchedCoins {
    flush_epoch: u64,
    coins: Vec<(OutPoint, Coin)>,
}

impl PrefetchedCoins {
    /// How many coins were found in the database.
    pub fn found_count(&self) -> usize {
        self.coins.len()
    }
}

impl CoinsDatabase {
    /// The coins at `outpoints`, in order, read in parallel chunks of
    /// [`PREFETCH_CHUNK_OUTPOINTS`] on rayon's pool.
    pub fn coins_parallel(
        &self,
        outpoints: &[OutPoint],
    ) -> Result<Vec<Option<Coin>>, ChainstateError> {
        let chunks: Vec<Vec<Option<Coin>>> = outpoints
            .par_chunks(PREFETCH_CHUNK_OUTPOINTS)
            .map(|chunk| self.coins(chunk))
            .collect::<Result<_, _>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    /// Reads the coins of `request` in parallel.
    pub fn read_prefetch(
        &self,
        request: &PrefetchRequest,
    ) -> Result<PrefetchedCoins, ChainstateError> {
        let found = self.coins_parallel(&request.outpoints)?;
        let coins = request
            .outpoints
            .iter()
            .zip(found)
            .filter_map(|(outpoint, coin)| coin.map(|coin| (*outpoint, coin)))
            .collect();
        Ok(PrefetchedCoins { flush_epoch: request.flush_epoch, coins })
    }
}

impl CoinsCache {
    /// The outpoints among `outpoints` that are not in memory (duplicates
    /// and the coinbase's null outpoint left out).
    pub fn prefetch_request<'a>(
        &self,
        outpoints: impl IntoIterator<Item = &'a OutPoint>,
    ) -> PrefetchRequest {
        let mut missing: Vec<OutPoint> = outpoints
            .into_iter()
            .filter(|outpoint| {
                !outpoint.is_null()
                    && !self.map.contains_key(outpoint)
                    && self.frozen_lookup(outpoint, |_| ()).is_none()
            })
            .copied()
            .collect();
        missing.sort_unstable();
        missing.dedup();
        PrefetchRequest { flush_epoch: self.flush_epoch, outpoints: missing }
    }

    /// Inserts prefetched coins as clean entries where the cache has none,
    /// marked as read from the database (their spends count so:
    /// [`crate::coins::coin_reads`]). Returns how many were inserted: none if a
    /// flush happened since the request was made.
    pub fn insert_prefetched(&mut self, prefetched: PrefetchedCoins) -> usize {
        if prefetched.flush_epoch != self.flush_epoch {
            return 0;
        }
        let mut inserted_count = 0;
        for (outpoint, coin) in prefetched.coins {
            if let MapEntry::Vacant(slot) = self.map.entry(outpoint) {
                self.script_heap_bytes += coin.heap_bytes();
                slot.insert(CacheEntry::new(Some(coin), FROM_DATABASE));
                inserted_count += 1;
            }
        }
        inserted_count
    }

    /// [`Self::prefetch_request`] in one pass that also copies the
    /// unspent coins only a background flush's frozen map holds into the
    /// live map, clean (the database holds them once the writer ends). The
    /// writer frees the frozen map a shard at a time ([`crate::coins::frozen_map`]):
    /// a coin left there when its block's prefetch skips it would be read
    /// from the database, one at a time at the spend, if its shard were
    /// freed before the spend. A frozen spent entry is neither copied nor
    /// requested: the block cannot spend it.
    fn request_copying_frozen(&mut self, outpoints: &[OutPoint]) -> PrefetchRequest {
        let mut missing = Vec::new();
        for outpoint in outpoints {
            if outpoint.is_null() || self.map.contains_key(outpoint) {
                continue;
            }
            match self.frozen_lookup(outpoint, |coin| coin.cloned()) {
                Some(Some(coin)) => {
                    self.script_heap_bytes += coin.heap_bytes();
                    let entry = CacheEntry::new(Some(coin), FROM_FROZEN);
                    self.map.insert(*outpoint, entry);
                }
                Some(None) => {}
                None => missing.push(*outpoint),
            }
        }
        missing.sort_unstable();
        missing.dedup();
        PrefetchRequest { flush_epoch: self.flush_epoch, outpoints: missing }
    }

    /// Reads every coin of `outpoints` missing from memory, in parallel, and
    /// caches it clean, after copying the ones a background flush holds
    /// into the live map in the same pass (a frozen shard may be freed
    /// before the spend). Returns how many coins were inserted from the
    /// database.
    pub fn prefetch(&mut self, outpoints: &[OutPoint]) -> Result<usize, ChainstateError> {
        let request = self.request_copying_frozen(outpoints);
        if request.outpoints.is_empty() {
            return Ok(0);
        }
        let prefetched = self.database.read_prefetch(&request)?;
        Ok(self.insert_prefetched(prefetched))
    }

    /// [`Self::prefetch`] started, not finished: the request is made now
    /// (the frozen map's coins copied now), the database read on rayon's
    /// pool while the caller goes on. `None` when every coin is in memory.
    ///
    /// The connecting thread starts the next block's read this way before
    /// connecting the current block, so the read and the connect overlap
    /// (`crate::stages::connector`). What the current block does to the
    /// cache meanwhile cannot make the read's coins wrong: an outpoint is
    /// read only when no entry holds it, a block can only spend or
    /// overwrite an outpoint through an entry (which
    /// [`Self::insert_prefetched`] never replaces), and a flush in between
    /// changes the epoch, so [`Self::finish_prefetch`] then inserts nothing.
    pub fn start_prefetch(&mut self, outpoints: &[OutPoint]) -> Option<PrefetchInFlight> {
        let request = self.request_copying_frozen(outpoints);
        if request.outpoints.is_empty() {
            return None;
        }
        let database = self.database.clone();
        let (sender, receiver) = std::sync::mpsc::sync_channel(1);
        rayon::spawn(move || {
            // The receiver may be gone (the read was discarded): nothing to do.
            let _ = sender.send(database.read_prefetch(&request));
        });
        Some(PrefetchInFlight { receiver, answer: None })
    }

    /// Waits for a read begun by [`Self::start_prefetch`] and inserts its
    /// coins. False when nothing was inserted because a flush happened
    /// since the request (or the read was lost): the block's coins must
    /// then be prefetched again.
    pub fn finish_prefetch(
        &mut self,
        in_flight: PrefetchInFlight,
    ) -> Result<bool, ChainstateError> {
        let Some(prefetched) = in_flight.wait()? else {
            return Ok(false);
        };
        if prefetched.flush_epoch != self.flush_epoch {
            return Ok(false);
        }
        self.insert_prefetched(prefetched);
        Ok(true)
    }
}

/// A prefetch's database read running on rayon's pool
/// ([`CoinsCache::start_prefetch`]).
#[derive(Debug)]
pub struct PrefetchInFlight {
    receiver: std::sync::mpsc::Receiver<Result<PrefetchedCoins, ChainstateError>>,
    /// The read's answer once [`Self::wait_for_read`] took it.
    answer: Option<Result<PrefetchedCoins, ChainstateError>>,
}

impl PrefetchInFlight {
    /// Waits until the database has been read, and keeps the answer for
    /// [`CoinsCache::finish_prefetch`]: what the cache does after this
    /// cannot change what was read.
    pub fn wait_for_read(&mut self) {
        if self.answer.is_none() {
            self.answer = self.receiver.recv().ok();
        }
    }

    /// Waits for the read to end; `None` if its task ended without an
    /// answer.
    fn wait(mut self) -> Result<Option<PrefetchedCoins>, ChainstateError> {
        self.wait_for_read();
        self.answer.take().transpose()
    }

    /// Waits for the read to end and drops its coins (so no read of the
    /// database outlives the step that started it).
    pub fn discard(mut self) {
        self.wait_for_read();
    }
}
