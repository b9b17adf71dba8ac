//! Coins staged by a SwiftSync attempt ([`crate::swiftsync`]): written in
//! no particular order, as sorted runs, into a database that holds no
//! coins yet, and made the chainstate's only when the attempt's proof
//! holds.
//!
//! # Why runs that overlap
//! The coins a SwiftSync attempt keeps arrive in block order, which is no
//! key order. Each worker sorts what it holds (a share of `-dbcache`) and
//! writes it as one table, which RocksDB ingests beside the earlier ones:
//! their key ranges overlap, so they land in level 0 or above the levels
//! they overlap, and RocksDB's compactions merge them once, in the
//! background. No coin key is written twice (every outpoint is created
//! once: the two mainnet coinbases that were repeated are never numbered),
//! so the order of the ingestions does not matter.
//!
//! # Crash safety
//! [`CoinsDatabase::begin_staging`] writes the `'S'` record and makes it
//! durable before the first run: from then on, a database with `'S'`
//! holds coins of an attempt that did not finish, and the next open
//! discards them ([`CoinsDatabase::discard_staged`]). The attempt ends with
//! one write that sets the best block and erases `'S'`
//! ([`CoinsDatabase::commit_staged`]), made durable before the chain moves.
//! No write uses the WAL (the [module docs](super)).

use std::sync::atomic::Ordering;

use ibex_primitives::{BlockHash, OutPoint};
use rocksdb::{IngestExternalFileOptions, WriteBatch, WriteOptions};

use super::options::COIN_TXID_PREFIX_BYTES;
use super::store::BEST_BLOCK_KEY;
use super::table_writer::TableWriter;
use super::CoinsDatabase;
use crate::coins::coin::{Coin, CoinKey, COIN_KEY_PREFIX};
use crate::error::ChainstateError;

/// The record that says the database holds a SwiftSync attempt's coins.
pub(crate) const STAGING_KEY: &[u8] = b"S";

/// Coins in memory, in the order they came, to be sorted and written as
/// one table: each coin's key and its encoded value in one byte arena (no
/// allocation per coin).
#[derive(Debug, Default)]
pub(crate) struct CoinRun {
    /// Each coin's key and where its value lies in `values`.
    entries: Vec<(CoinKey, u32, u32)>,
    values: Vec<u8>,
}

/// Bytes a coin of the run holds beyond its value: its key and offsets.
const RUN_ENTRY_BYTES: usize = std::mem::size_of::<(CoinKey, u32, u32)>();

impl CoinRun {
    /// Adds `coin` at `outpoint`.
    pub(crate) fn push(&mut self, outpoint: &OutPoint, coin: &Coin) {
        let start = self.values.len();
        coin.encode_into(&mut self.values);
        // A run is written long before 4 GiB of values (a share of
        // `-dbcache`); a larger one is a broken caller.
        assert!(self.values.len() <= u32::MAX as usize, "a coin run outgrew its offsets");
        self.entries.push((CoinKey::new(outpoint), start as u32, self.values.len() as u32));
    }

    /// Coins held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no coin.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Memory held, in bytes (capacity, as the allocator sees it).
    pub(crate) fn bytes(&self) -> usize {
        self.entries.capacity() * RUN_ENTRY_BYTES + self.values.capacity()
    }
}

impl CoinsDatabase {
    /// Marks the database as holding a SwiftSync attempt's coins (durable
    /// before this returns) and readies the tables' directory. The
    /// database must hold no coin.
    pub(crate) fn begin_staging(&self) -> Result<(), ChainstateError> {
        self.prepare_tables_directory()?;
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        self.raw().put_opt(STAGING_KEY, [1u8], &options)?;
        self.persist_memtables()
    }

    /// Whether the database holds coins of an attempt that did not finish.
    pub(crate) fn holds_staged(&self) -> Result<bool, ChainstateError> {
        Ok(self.raw().get_pinned(STAGING_KEY)?.is_some())
    }

    /// Sorts `run` and ingests it as one table; empties it (keeping its
    /// memory). Several threads may ingest at once.
    pub(crate) fn ingest_run(&self, run: &mut CoinRun) -> Result<(), ChainstateError> {
        if run.is_empty() {
            return Ok(());
        }
        run.entries.sort_unstable_by(|left, right| left.0.as_ref().cmp(right.0.as_ref()));
        let number = self.next_table_number();
        let path = self.tables_directory().join(format!("staged-{number}.sst"));
        let whole_keys = self.whole_key_filters.load(Ordering::Relaxed);
        let mut table = TableWriter::create(&path, whole_keys, COIN_TXID_PREFIX_BYTES)?;
        for (key, start, end) in &run.entries {
            table.put(key.as_ref(), &run.values[*start as usize..*end as usize])?;
        }
        let (path, file_bytes) = table.finish()?;
        let mut options = IngestExternalFileOptions::default();
        options.set_move_files(true);
        self.raw().ingest_external_file_opts(&options, vec![path])?;
        self.add_written_bytes(file_bytes);
        run.entries.clear();
        run.values.clear();
        Ok(())
    }

    /// Makes the staged coins the database's, at `best_block`: one write
    /// that sets `'B'` and erases `'S'`, durable before this returns.
    pub(crate) fn commit_staged(&self, best_block: &BlockHash) -> Result<(), ChainstateError> {
        let mut batch = WriteBatch::default();
        batch.put(BEST_BLOCK_KEY, best_block.as_bytes());
        batch.delete(STAGING_KEY);
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        self.raw().write_opt(batch, &options)?;
        self.persist_memtables()
    }

    /// Erases every coin and `'S'` (an attempt that failed or did not
    /// finish), durable before this returns, and compacts the coins' range
    /// away. The best block stays what it was: the attempt never moved it.
    pub(crate) fn discard_staged(&self) -> Result<(), ChainstateError> {
        let first = [COIN_KEY_PREFIX];
        let after = [COIN_KEY_PREFIX + 1];
        let mut batch = WriteBatch::default();
        batch.delete_range(first, after);
        batch.delete(STAGING_KEY);
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        self.raw().write_opt(batch, &options)?;
        self.persist_memtables()?;
        self.raw().compact_range(Some(first), Some(after));
        self.prepare_tables_directory()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coins::database::DatabaseOptions;
    use ibex_primitives::{Amount, Txid};

    fn coin(height: u32) -> Coin {
        Coin::new(Amount::from_sat(i64::from(height) * 10).unwrap(), [0x51u8], height, false).unwrap()
    }

    fn outpoint(seed: u8, vout: u32) -> OutPoint {
        OutPoint { txid: Txid([seed; 32]), vout }
    }

    #[test]
    fn overlapping_runs_commit_and_discard() {
        let directory = tempfile::tempdir().unwrap();
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        database.begin_staging().unwrap();
        assert!(database.holds_staged().unwrap());
        // Two runs whose key ranges interleave.
        let mut run = CoinRun::default();
        for seed in [9u8, 1, 5] {
            run.push(&outpoint(seed, 0), &coin(u32::from(seed)));
        }
        assert_eq!(run.len(), 3);
        assert!(run.bytes() > 0);
        database.ingest_run(&mut run).unwrap();
        assert!(run.is_empty());
        for seed in [2u8, 7] {
            run.push(&outpoint(seed, 300), &coin(u32::from(seed)));
        }
        database.ingest_run(&mut run).unwrap();
        let keys: Vec<OutPoint> = database.iter_coins().map(|item| item.unwrap().0).collect();
        let seeds: Vec<u8> = keys.iter().map(|outpoint| outpoint.txid.0[0]).collect();
        assert_eq!(seeds, [1, 2, 5, 7, 9]);
        assert_eq!(database.coin(&outpoint(7, 300)).unwrap(), Some(coin(7)));
        assert_eq!(database.best_block().unwrap(), None);

        let best = BlockHash([3; 32]);
        database.commit_staged(&best).unwrap();
        assert!(!database.holds_staged().unwrap());
        assert_eq!(database.best_block().unwrap(), Some(best));

        database.begin_staging().unwrap();
        database.discard_staged().unwrap();
        assert!(!database.holds_staged().unwrap());
        assert_eq!(database.iter_coins().count(), 0);
        assert_eq!(database.best_block().unwrap(), Some(best));
    }

    #[test]
    fn staging_mark_survives_reopening() {
        let directory = tempfile::tempdir().unwrap();
        {
            let database =
                CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
            database.begin_staging().unwrap();
            let mut run = CoinRun::default();
            run.push(&outpoint(4, 1), &coin(4));
            database.ingest_run(&mut run).unwrap();
        }
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        assert!(database.holds_staged().unwrap());
        assert_eq!(database.iter_coins().count(), 1);
        database.discard_staged().unwrap();
        assert_eq!(database.iter_coins().count(), 0);
    }
}
