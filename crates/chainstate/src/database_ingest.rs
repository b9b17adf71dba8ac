//! Flushes written as one sorted table and ingested into the coins
//! database, instead of write batches through RocksDB's memtables.
//!
//! # Why
//! A write batch goes into a skip-list memtable (a search per key), the
//! memtable is written to a level-0 table later, and that table is
//! compacted into the levels below. A flush already holds its coins in
//! memory and can sort them itself (~0.1 us a key): written as a table
//! (RocksDB's `SstFileWriter`, here [`crate::table_writer`]) and ingested
//! (`IngestExternalFile`, the file moved into the database), it skips the
//! memtable inserts (a fifth of the import's CPU with scripts skipped) and
//! the memtable flushes, and the memory the memtables held goes to the
//! UTXO maps ([`crate::budget`]). Measured on the `utxo-heavy` chain to
//! height 2,000 at `-dbcache=100`, scripts skipped (session 15,
//! docs/utxo-heavy.md): the import's CPU fell from ~92 to ~75 s.
//!
//! # Crash safety
//! The table holds the whole flush: `'B'` = the new tip (the smallest key),
//! the coins, and an erasure of `'H'` (the largest). RocksDB ingests a file
//! atomically: its MANIFEST names the file or does not, so after a crash
//! the database holds the old state or the new one, never a mix, and a
//! flush of this kind never leaves `'H'` behind. Ingestion gives the table
//! a sequence number above every write before it, and RocksDB first
//! writes any memtable that holds keys in the table's range (every key of
//! the coins database lies between `'B'` and `'H'`), so what survives a
//! crash is still a prefix of the writes (the `database` module docs).
//! A table written but not ingested is left in [`TABLES_DIRECTORY`], which
//! the next open empties.
//!
//! `-dbcrashratio` (tests) keeps the batch path: it crashes between
//! batches, which a table never has.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use ibex_primitives::{BlockHash, OutPoint};
use rocksdb::IngestExternalFileOptions;

use crate::cache::CacheEntry;
use crate::coin::{Coin, CoinKey};
use crate::database::{CoinsDatabase, FlushStats, COIN_TXID_PREFIX_BYTES};
use crate::error::ChainstateError;
use crate::table_writer::TableWriter;

/// Directory, inside the coins database's, of tables written and not yet
/// ingested.
pub const TABLES_DIRECTORY: &str = "ibex-flush-tables";

/// A coin write (`Some`) or erasure (`None`) of a flush.
pub type CoinWrite<'a> = (&'a OutPoint, Option<&'a Coin>);

/// The database's key order of two outpoints (`'C' || txid ||
/// VARINT(vout)`): by transaction id, then by the encoded output index
/// (Core's VARINT does not sort as the numbers do past 16,511).
pub fn key_order(left: &OutPoint, right: &OutPoint) -> std::cmp::Ordering {
    left.txid.0.cmp(&right.txid.0).then_with(|| {
        if left.vout == right.vout {
            return std::cmp::Ordering::Equal;
        }
        CoinKey::new(left).as_ref().cmp(CoinKey::new(right).as_ref())
    })
}

/// A coin write with a number that sorts nearly as its key does: `'C'`, the
/// first ten bytes of the transaction id and the output index's VARINT
/// (five bytes at most, zero-padded: the VARINT is prefix-free, so padded
/// numbers compare as the bytes do).
pub type KeyedCoinWrite<'a> = (u128, CoinWrite<'a>);

/// Bytes of the transaction id in a [`KeyedCoinWrite`]'s number.
const SORT_TXID_BYTES: usize = 10;

/// `write` with its sort number, for [`sort_in_key_order`].
pub fn keyed(write: CoinWrite<'_>) -> KeyedCoinWrite<'_> {
    let key = CoinKey::new(write.0);
    let key = key.padded_bytes();
    let mut number = [0u8; 16];
    number[..1 + SORT_TXID_BYTES].copy_from_slice(&key[..1 + SORT_TXID_BYTES]);
    number[1 + SORT_TXID_BYTES..].copy_from_slice(&key[33..38]);
    (u128::from_be_bytes(number), write)
}

/// Sorts `writes` in key order ([`key_order`]).
///
/// # Napkin math
/// The writes point into the UTXO maps, scattered in memory: a comparison
/// through the pointers is a cache miss (~100 ns), ~20 a write for a sort,
/// which took 9 s of the flush thread over an import (session 15). The
/// inline numbers decide every comparison but those between transactions
/// whose ids share their first ten bytes (a chance of 2^-80 a pair, or
/// made on purpose): a pass over the sorted writes finds those runs and
/// sorts them again through the pointers.
pub fn sort_in_key_order(writes: &mut [KeyedCoinWrite<'_>]) {
    writes.sort_unstable_by_key(|(number, _)| *number);
    let prefix_of = |number: u128| number >> 40;
    let mut start = 0;
    while start < writes.len() {
        let prefix = prefix_of(writes[start].0);
        let mut end = start + 1;
        let mut one_transaction = true;
        while end < writes.len() && prefix_of(writes[end].0) == prefix {
            one_transaction &= writes[end].1 .0.txid == writes[start].1 .0.txid;
            end += 1;
        }
        if !one_transaction {
            writes[start..end]
                .sort_unstable_by(|(_, (left, _)), (_, (right, _))| key_order(left, right));
        }
        start = end;
    }
}

/// Writes the dirty ones of `entries` as one flush to `new_tip`: sorted
/// ([`sort_in_key_order`]) and ingested ([`CoinsDatabase::ingest_flush`]).
/// The background flush and the foreground one both come here.
pub(crate) fn ingest_dirty<'a>(
    database: &CoinsDatabase,
    entries: impl Iterator<Item = (&'a OutPoint, &'a CacheEntry)>,
    new_tip: BlockHash,
) -> Result<FlushStats, ChainstateError> {
    let mut writes: Vec<KeyedCoinWrite<'a>> = entries
        .filter(|(_, entry)| entry.is_dirty())
        .map(|(outpoint, entry)| keyed((outpoint, entry.coin.as_ref())))
        .collect();
    sort_in_key_order(&mut writes);
    database.ingest_flush(new_tip, &writes)
}

impl CoinsDatabase {
    /// Whether flushes go in as ingested tables ([`Self::ingest_flush`]):
    /// always, except under `-dbcrashratio`, whose crashes fall between
    /// write batches, and where a test asks for batches
    /// ([`CoinsDatabase::set_batch_flushes`]).
    pub fn ingests_flushes(&self) -> bool {
        self.crash_ratio() == 0 && !self.batch_flushes.load(Ordering::Relaxed)
    }

    /// Where tables wait to be ingested.
    pub(crate) fn tables_directory(&self) -> PathBuf {
        self.path().join(TABLES_DIRECTORY)
    }

    /// Empties (or makes) [`TABLES_DIRECTORY`]: a table left there by a
    /// crash was never ingested.
    pub(crate) fn prepare_tables_directory(&self) -> Result<(), ChainstateError> {
        let path = self.tables_directory();
        let error = |source| ChainstateError::TableDirectory { path: path.clone(), source };
        if path.exists() {
            std::fs::remove_dir_all(&path).map_err(error)?;
        }
        std::fs::create_dir_all(&path).map_err(error)
    }

    /// Writes one flush to `new_tip` as a table of `writes` (sorted by
    /// [`sort_in_key_order`]) and ingests it: the database moves from the
    /// old state to the new one at once (module docs).
    pub fn ingest_flush(
        &self,
        new_tip: BlockHash,
        writes: &[KeyedCoinWrite<'_>],
    ) -> Result<FlushStats, ChainstateError> {
        self.check_head_blocks(new_tip)?;
        let number = self.next_table_number();
        let path = self.tables_directory().join(format!("flush-{number}.sst"));
        let mut table = TableWriter::create(
            &path,
            self.whole_key_filters.load(Ordering::Relaxed),
            COIN_TXID_PREFIX_BYTES,
        )?;
        let mut stats = FlushStats { batch_count: 1, ..FlushStats::default() };
        table.put(crate::database::BEST_BLOCK_KEY, new_tip.as_bytes())?;
        let mut value = Vec::with_capacity(64);
        // RocksDB checks that each key is larger than the one before and
        // fails the table otherwise ([`ChainstateError::TableWrite`]).
        for (_, (outpoint, coin)) in writes {
            let key = CoinKey::new(outpoint);
            match coin {
                Some(coin) => {
                    value.clear();
                    coin.encode_into(&mut value);
                    table.put(key.as_ref(), &value)?;
                    stats.coins_written += 1;
                    stats.batch_bytes += (key.as_ref().len() + value.len()) as u64;
                }
                None => {
                    table.delete(key.as_ref())?;
                    stats.coins_erased += 1;
                    stats.batch_bytes += key.as_ref().len() as u64;
                }
            }
        }
        table.delete(crate::database::HEAD_BLOCKS_KEY)?;
        let (path, _file_bytes) = table.finish()?;
        let mut options = IngestExternalFileOptions::default();
        options.set_move_files(true);
        self.raw().ingest_external_file_opts(&options, vec![path])?;
        self.add_written_bytes(stats.batch_bytes);
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use ibex_primitives::Txid;

    use super::*;
    use crate::database::DatabaseOptions;

    /// Outpoints whose keys are hard to sort: output indexes across each
    /// VARINT length (127/128, 16,511/16,512), transaction ids equal in
    /// their first ten bytes and different after, and ordinary ones.
    fn awkward_outpoints() -> Vec<OutPoint> {
        let mut outpoints = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for transaction in 0..40u64 {
            let mut txid = [0u8; 32];
            for chunk in txid.chunks_mut(8) {
                chunk.copy_from_slice(&next().to_le_bytes());
            }
            if transaction % 3 == 0 {
                // The first ten bytes of the transaction before (one run).
                txid[..10].fill(0x5a);
            }
            for vout in [0, 1, 127, 128, 255, 16_511, 16_512, 2_113_663, 2_113_664, u32::MAX] {
                outpoints.push(OutPoint { txid: Txid(txid), vout });
            }
        }
        outpoints
    }

    #[test]
    fn writes_sort_as_their_keys_do() {
        let outpoints = awkward_outpoints();
        let mut writes: Vec<KeyedCoinWrite<'_>> =
            outpoints.iter().rev().map(|outpoint| keyed((outpoint, None))).collect();
        sort_in_key_order(&mut writes);
        let sorted: Vec<CoinKey> =
            writes.iter().map(|(_, (outpoint, _))| CoinKey::new(outpoint)).collect();
        let mut expected: Vec<CoinKey> = outpoints.iter().map(CoinKey::new).collect();
        expected.sort_by(|left, right| left.as_ref().cmp(right.as_ref()));
        assert_eq!(sorted, expected);
        // The VARINT's order is not the numbers' past 16,511.
        let low = OutPoint { txid: Txid([1; 32]), vout: 16_511 };
        let high = OutPoint { txid: Txid([1; 32]), vout: 16_512 };
        assert_eq!(key_order(&low, &high), std::cmp::Ordering::Greater);
    }

    #[test]
    fn an_ingested_table_holds_the_whole_flush_and_a_left_table_is_removed() {
        let directory = tempfile::tempdir().unwrap();
        let outpoints = awkward_outpoints();
        let coin =
            Coin::new(ibex_primitives::Amount::from_sat_u32(5), [0x51u8; 22], 3, false).unwrap();
        {
            let database =
                CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
            let mut writes: Vec<KeyedCoinWrite<'_>> =
                outpoints.iter().map(|outpoint| keyed((outpoint, Some(&coin)))).collect();
            sort_in_key_order(&mut writes);
            let stats = database.ingest_flush(BlockHash([7; 32]), &writes).unwrap();
            assert_eq!(stats.coins_written, outpoints.len() as u64);
            // Unsorted writes are refused with RocksDB's reason, not written.
            writes.swap(0, 1);
            let refused = database.ingest_flush(BlockHash([8; 32]), &writes);
            assert!(matches!(refused, Err(ChainstateError::TableWrite { .. })), "{refused:?}");
            assert_eq!(database.best_block().unwrap(), Some(BlockHash([7; 32])));
            // A crash between writing a table and ingesting it leaves it here.
            std::fs::write(database.tables_directory().join("flush-99.sst"), b"partial").unwrap();
        }
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        assert_eq!(std::fs::read_dir(database.tables_directory()).unwrap().count(), 0);
        assert_eq!(database.best_block().unwrap(), Some(BlockHash([7; 32])));
        assert_eq!(database.head_blocks().unwrap(), None);
        let coins: Vec<(OutPoint, Coin)> = database.iter_coins().map(Result::unwrap).collect();
        assert_eq!(coins.len(), outpoints.len());
        assert!(coins.iter().all(|(_, found)| *found == coin));
    }
}
