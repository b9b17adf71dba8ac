//! Coins written into an empty database in key order, straight to tables
//! that the database ingests (a UTXO snapshot's load): no memtable, no
//! compaction, each table going to the bottom level because no key of it
//! overlaps another's.
//!
//! # Napkin math
//! A coin is ~38 bytes of key and ~30 of value: 2 M coins make a ~140 MB
//! table. Mainnet's 164 M coins are ~80 tables, ~11 GB written once; the
//! writer costs ~0.3 µs a key (RocksDB's `SstFileWriter` with a bloom
//! filter), ~50 s for mainnet, beside the file's reading and the hash.
//!
//! # Crash safety
//! The tables carry coins only: the best block (`'B'`) is written after
//! the last one, by [`BulkCoinWriter::finish`]'s caller once the coins'
//! hash is checked. A database with coins and no best block is an
//! unfinished load, which its owner deletes.

use std::sync::atomic::Ordering;

use ibex_primitives::OutPoint;
use rocksdb::IngestExternalFileOptions;

use super::options::COIN_TXID_PREFIX_BYTES;
use super::table_writer::{TableFilters, TableWriter, TableWrites};
use super::CoinsDatabase;
use crate::coins::coin::{Coin, CoinKey};
use crate::error::ChainstateError;

/// Coins in one table of a bulk load (~140 MB).
pub const BULK_TABLE_COINS_MAX: u64 = 2_000_000;

/// Coins going into `database` in strictly increasing key order.
pub struct BulkCoinWriter<'a> {
    database: &'a CoinsDatabase,
    table: Option<TableWriter>,
    table_coins: u64,
    coins_written: u64,
    value: Vec<u8>,
    /// How its tables are written.
    writes: TableWrites,
}

impl std::fmt::Debug for BulkCoinWriter<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BulkCoinWriter")
            .field("coins_written", &self.coins_written)
            .finish_non_exhaustive()
    }
}

impl CoinsDatabase {
    /// A bulk writer into this database, which must hold no coins (its
    /// tables are ingested below everything).
    pub fn bulk_coin_writer(&self) -> Result<BulkCoinWriter<'_>, ChainstateError> {
        self.prepare_tables_directory()?;
        Ok(self.table_sequence(TableWrites::PageCache))
    }

    /// A bulk writer into the tables directory as it is (prepared once
    /// by the caller): several may write at once, each into its own key
    /// range, its tables written as `writes` says.
    pub(crate) fn table_sequence(&self, writes: TableWrites) -> BulkCoinWriter<'_> {
        BulkCoinWriter {
            database: self,
            table: None,
            table_coins: 0,
            coins_written: 0,
            value: Vec::with_capacity(64),
            writes,
        }
    }
}

impl BulkCoinWriter<'_> {
    /// Adds `coin` at `outpoint`, after every coin added before it in key
    /// order (RocksDB refuses a table whose keys do not increase).
    pub fn put(&mut self, outpoint: &OutPoint, coin: &Coin) -> Result<(), ChainstateError> {
        let mut value = std::mem::take(&mut self.value);
        value.clear();
        coin.encode_into(&mut value);
        let written = self.put_encoded(CoinKey::new(outpoint).as_ref(), &value);
        self.value = value;
        written
    }

    /// Adds a coin as its key and encoded value, after every coin added
    /// before it in key order.
    pub(crate) fn put_encoded(&mut self, key: &[u8], value: &[u8]) -> Result<(), ChainstateError> {
        if self.table_coins == BULK_TABLE_COINS_MAX {
            self.ingest_table()?;
        }
        let table = match self.table.as_mut() {
            Some(table) => table,
            None => {
                let number = self.database.next_table_number();
                let path = self.database.tables_directory().join(format!("bulk-{number}.sst"));
                let whole_keys = self.database.whole_key_filters.load(Ordering::Relaxed);
                // Ingested into the last level: its filters, as a
                // compaction there would make them.
                let filters = TableFilters::last_level(whole_keys);
                let table =
                    TableWriter::create(&path, filters, COIN_TXID_PREFIX_BYTES, self.writes)?;
                self.table.insert(table)
            }
        };
        table.put(key, value)?;
        self.table_coins += 1;
        self.coins_written += 1;
        Ok(())
    }

    /// Ingests the last table; the coins written.
    pub fn finish(mut self) -> Result<u64, ChainstateError> {
        self.ingest_table()?;
        Ok(self.coins_written)
    }

    fn ingest_table(&mut self) -> Result<(), ChainstateError> {
        let Some(table) = self.table.take() else { return Ok(()) };
        let (path, file_bytes) = table.finish()?;
        let mut options = IngestExternalFileOptions::default();
        options.set_move_files(true);
        self.database.raw().ingest_external_file_opts(&options, vec![path])?;
        self.database.add_written_bytes(file_bytes);
        self.table_coins = 0;
        Ok(())
    }
}

impl CoinsDatabase {
    /// Records `best_block` as the block the coins are at (`'B'`), synced:
    /// the last step of a bulk load, once its coins are checked.
    pub fn set_best_block(
        &self,
        best_block: &ibex_primitives::BlockHash,
    ) -> Result<(), ChainstateError> {
        let mut options = rocksdb::WriteOptions::default();
        options.set_sync(true);
        self.raw().put_opt(super::store::BEST_BLOCK_KEY, best_block.as_bytes(), &options)?;
        Ok(())
    }
}
