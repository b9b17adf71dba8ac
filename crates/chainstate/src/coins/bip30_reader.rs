//! BIP30's lookups for a run of transactions, with one database iterator
//! kept across them ([`crate::coins::database::CoinPrefixSeeker`]) instead of a
//! new one per transaction.
//!
//! # Why a kept iterator sees what it must
//! An iterator reads the database as it was when it was made. The cache's
//! maps (live and frozen) answer first, and they cannot change during a
//! block's BIP30 check (it holds the cache shared), except for one thing:
//! a background flush's writer releasing a frozen shard after writing it
//! (`frozen_map`). A key of a shard released after the iterator
//! was made would be missing from both the frozen map and the iterator's
//! view. So the reader notes the frozen map's release count when it makes
//! its iterator and makes a new one whenever the count has moved by the
//! time the database is asked; the count rises before a shard is taken,
//! so a lookup that found a shard gone sees its release counted. Releases
//! come every few hundred milliseconds at most, against ~1,200 questions a
//! block on the `utxo-heavy` chain.

use ibex_primitives::{OutPoint, Txid};

use crate::coins::cache::CoinsCache;
use crate::coins::database::CoinPrefixSeeker;
use crate::error::ChainstateError;

/// What BIP30's question for a whole transaction found
/// ([`CoinsCache::has_unspent_output_of`], `Bip30Reader::has_unspent_output_of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputsLookup {
    /// One of the outputs is an unspent coin already.
    pub unspent: bool,
    /// Outputs looked at that neither map had: the database answered for
    /// them (with one prefix seek, or a point read each).
    pub answered_by_database: u32,
}

impl CoinsCache {
    /// BIP30's question for a whole transaction: whether any of the
    /// first `output_count` outputs of `txid` is an unspent coin
    /// (`Bip30Reader::has_unspent_output_of`; many questions in a row go
    /// to one `Bip30Reader`).
    pub fn has_unspent_output_of(
        &self,
        txid: &Txid,
        output_count: u32,
    ) -> Result<OutputsLookup, ChainstateError> {
        Bip30Reader::new(self).has_unspent_output_of(txid, output_count)
    }
}

/// Answers [`Bip30Reader::has_unspent_output_of`] for one thread's share of
/// a block.
#[derive(Debug)]
pub struct Bip30Reader<'c> {
    cache: &'c CoinsCache,
    /// The iterator, and the frozen map's release count when it was made.
    seeker: Option<(usize, CoinPrefixSeeker<'c>)>,
}

impl<'c> Bip30Reader<'c> {
    /// A reader over `cache`; the iterator is made on the first question
    /// the maps cannot answer.
    pub fn new(cache: &'c CoinsCache) -> Bip30Reader<'c> {
        Bip30Reader { cache, seeker: None }
    }

    /// BIP30's question for a whole transaction: whether any of the
    /// first `output_count` outputs of `txid` is an unspent coin, in
    /// memory, in a background flush's frozen map or in the database.
    ///
    /// Outputs with an entry in memory are answered by it (a spent entry
    /// hides the database's coin until the flush). If any is not in
    /// memory, the database is asked once for the whole transaction, with a
    /// prefix seek: a transaction id is unique to its transaction, so a new
    /// one almost never has a coin on disk, and the prefix bloom filters
    /// say so without reading a block. Only if the seek finds a coin of
    /// `txid` are the outputs read one by one. The same answer as
    /// [`CoinsCache::has_unspent`] per output.
    ///
    /// Seeking only from 3 outputs not in memory (point reads below) was
    /// measured on the `utxo-heavy` chain at `-dbcache=100` with scripts
    /// skipped: within noise of always seeking (48.0 against 46.0 s; 70
    /// against 66 s of CPU), so it always seeks.
    pub fn has_unspent_output_of(
        &mut self,
        txid: &Txid,
        output_count: u32,
    ) -> Result<OutputsLookup, ChainstateError> {
        let mut not_in_memory = 0u32;
        for vout in 0..output_count {
            match self.cache.memory_entry(&OutPoint { txid: *txid, vout }) {
                Some(true) => {
                    return Ok(OutputsLookup { unspent: true, answered_by_database: not_in_memory })
                }
                Some(false) => {}
                None => not_in_memory += 1,
            }
        }
        let answer = |unspent| OutputsLookup { unspent, answered_by_database: not_in_memory };
        if not_in_memory == 0 || !self.database_has_coin_of(txid)? {
            return Ok(answer(false));
        }
        for vout in 0..output_count {
            let outpoint = OutPoint { txid: *txid, vout };
            if self.cache.memory_entry(&outpoint).is_none()
                && self.cache.database().has_coin(&outpoint)?
            {
                return Ok(answer(true));
            }
        }
        Ok(answer(false))
    }

    /// The database's answer for `txid`, from an iterator made after the
    /// last shard release the maps' lookups could have seen.
    fn database_has_coin_of(&mut self, txid: &Txid) -> Result<bool, ChainstateError> {
        let releases = self.cache.frozen_release_count();
        let seeker = match &mut self.seeker {
            Some((made_at, seeker)) if *made_at == releases => seeker,
            slot => &mut slot.insert((releases, self.cache.database().prefix_seeker())).1,
        };
        seeker.has_coin_of(txid)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ibex_primitives::{Amount, BlockHash};

    use super::*;
    use crate::coins::cache::FlushMode;
    use crate::coins::coin::Coin;
    use crate::coins::database::{CoinsDatabase, DatabaseOptions};

    fn outpoint(index: u32) -> OutPoint {
        let mut txid = [0u8; 32];
        txid[2..6].copy_from_slice(&index.to_le_bytes());
        // Spread over the shards as real txids are.
        txid[..2].copy_from_slice(&(index.wrapping_mul(40_503) as u16).to_be_bytes());
        OutPoint { txid: Txid(txid), vout: 0 }
    }

    /// A reader whose iterator was made before a background flush's writer
    /// released its shards still finds every coin those shards held: the
    /// release count moved, so it reads through a new iterator.
    #[test]
    fn a_kept_iterator_is_renewed_when_the_writer_frees_shards() {
        let directory = tempfile::tempdir().unwrap();
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        // Shards are released as they are written only by batch flushes
        // (an ingested flush holds them until its table is in).
        database.set_batch_flushes(true);
        let mut cache = CoinsCache::new(Arc::new(database), 24 << 20);
        let mut count = 0u32;
        while !cache.is_full() {
            let coin = Coin::new(Amount::from_sat_u32(count + 1), [0x51u8; 22], 7, false).unwrap();
            cache.add(&outpoint(count), coin, false).unwrap();
            count += 1;
        }
        cache.start_background_flush(BlockHash([3; 32]), FlushMode::EmptyCache).unwrap();
        let mut reader = Bip30Reader::new(&cache);
        // A transaction nobody has: the database is asked, the iterator made.
        let absent = reader.has_unspent_output_of(&Txid([0xee; 32]), 2).unwrap();
        assert!(!absent.unspent);
        assert_eq!(absent.answered_by_database, 2);
        let releases_at_first_question = cache.frozen_release_count();
        while !cache.background_flush_finished() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(
            cache.frozen_release_count() > releases_at_first_question,
            "the writer freed shards after the iterator was made ({releases_at_first_question})"
        );
        for index in 0..count {
            let txid = outpoint(index).txid;
            let lookup = reader.has_unspent_output_of(&txid, 1).unwrap();
            assert!(lookup.unspent, "coin {index} written by the flush not seen");
            assert_eq!(lookup.answered_by_database, 1, "coin {index}: its shard was freed");
        }
        drop(reader);
        cache.finish_background_flush().unwrap();
    }
}
