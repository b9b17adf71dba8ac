//! Flushes written as sorted tables and ingested into the coins database,
//! instead of write batches through RocksDB's memtables.
//!
//! # Why
//! A write batch goes into a skip-list memtable (a search per key), the
//! memtable is written to a level-0 table later, and that table is
//! compacted into the levels below. A flush already holds its coins in
//! memory and can sort them itself (~0.1 us a key): written as a table
//! (RocksDB's `SstFileWriter`, here `super::table_writer`) and ingested
//! (`IngestExternalFile`, the file moved into the database), it skips the
//! memtable inserts (a fifth of the import's CPU with scripts skipped) and
//! the memtable flushes, and the memory the memtables held goes to the
//! UTXO maps ([`crate::budget`]). Measured on the `utxo-heavy` chain to
//! height 2,000 at `-dbcache=100`, scripts skipped (docs/utxo-heavy.md):
//! the import's CPU came to ~75 s against ~92 s with write batches.
//!
//! # Crash safety
//! A flush is one table or several ([`TableFlush`], whose docs give the
//! protocol): a table of one flush holds `'B'` = the new tip (the smallest
//! key), the coins, and an erasure of `'H'` (the largest); a flush of
//! several puts `'H'` in its first table (the highest keys) and `'B'` in
//! its last (the lowest), so that the tables' key ranges do not overlap.
//! RocksDB ingests a file atomically: its MANIFEST names the file or does not, so
//! after a crash the database holds a prefix of the tables, never part of
//! one. Ingestion gives each table a sequence number above every write
//! before it, and RocksDB first writes any memtable that holds keys in the
//! table's range, so what survives a crash is still a prefix of the writes
//! (the `database` module docs). A table written but not ingested is left
//! in `TABLES_DIRECTORY`, which the next open empties.
//!
//! `-dbcrashratio` (tests) keeps the batch path: it crashes between
//! batches, which a table never has.

use std::sync::atomic::Ordering;

use ibex_primitives::{BlockHash, OutPoint};
use rocksdb::IngestExternalFileOptions;

use super::key_order::KeyedCoinWrite;
use super::options::COIN_TXID_PREFIX_BYTES;
use super::store::{
    head_blocks_record, CoinsDatabase, FlushStats, BEST_BLOCK_KEY, HEAD_BLOCKS_KEY,
};
use super::table_writer::{TableFilters, TableWriter, TableWrites};
use crate::coins::coin::{Coin, CoinKey};
use crate::error::ChainstateError;

/// How many writes ahead the loop that writes a flush table asks the
/// CPU for the coin it will encode.
///
/// # Why
/// The writes are in key order, so their entries lie at random places in
/// the frozen map: each one is a cache miss (~100 ns). `perf annotate` of
/// the flush writer at `-dbcache=100`: 77 % of the loop's
/// samples on the first load of the outpoint, ~540 samples a quarter, a
/// quarter of the writer's CPU. Sixteen entries ahead (~16 x 0.1-0.2 us of
/// work a coin) covers the miss.
const WRITE_PREFETCH_DISTANCE: usize = 16;

/// Asks the CPU to load the cache lines of an entry a few writes ahead: its
/// outpoint and its coin (next to each other in the shard's chunk, over two
/// or three cache lines).
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch_entry(outpoint: &OutPoint, coin: Option<&Coin>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let outpoint_address: *const OutPoint = outpoint;
        // SAFETY: `prefetcht0` is a hint: it reads nothing into a register,
        // cannot fault, and the address comes from a live reference. SSE,
        // which it needs, is part of every x86_64 CPU.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(outpoint_address.cast()) };
        if let Some(coin) = coin {
            // A coin may straddle two cache lines: ask for its first and
            // last bytes.
            let first: *const i8 = std::ptr::from_ref(coin).cast();
            let last = first.wrapping_add(std::mem::size_of::<Coin>() - 1);
            // SAFETY: as above; both addresses are within the coin.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(first);
                _mm_prefetch::<_MM_HINT_T0>(last);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (outpoint, coin);
}

impl CoinsDatabase {
    /// Whether flushes go in as ingested tables ([`TableFlush`]):
    /// always, except under `-dbcrashratio`, whose crashes fall between
    /// write batches, and where a test asks for batches
    /// ([`CoinsDatabase::set_batch_flushes`]).
    pub fn ingests_flushes(&self) -> bool {
        self.crash_ratio() == 0 && !self.batch_flushes.load(Ordering::Relaxed)
    }

    /// Writes `writes` as a table and ingests it, with `'B'` and `'H'`
    /// changed around them as `edges` says.
    fn ingest_table(
        &self,
        edges: &TableEdges<'_>,
        writes: &[KeyedCoinWrite<'_>],
        stats: &mut FlushStats,
    ) -> Result<(), ChainstateError> {
        let number = self.next_table_number();
        let path = self.tables_directory().join(format!("flush-{number}.sst"));
        let mut table = TableWriter::create(
            &path,
            TableFilters::above_last_level(self.whole_key_filters.load(Ordering::Relaxed)),
            COIN_TXID_PREFIX_BYTES,
            TableWrites::PageCache,
        )?;
        // Keys in order: 'B' < 'C' || txid || VARINT(vout) < 'H'.
        edges.best_block.write(&mut table, BEST_BLOCK_KEY)?;
        let mut value = Vec::with_capacity(64);
        let mut table_bytes = 0u64;
        // RocksDB checks that each key is larger than the one before and
        // fails the table otherwise ([`ChainstateError::TableWrite`]).
        for (index, (_, (outpoint, coin))) in writes.iter().enumerate() {
            if let Some((_, (ahead, ahead_coin))) = writes.get(index + WRITE_PREFETCH_DISTANCE) {
                prefetch_entry(ahead, *ahead_coin);
            }
            let key = CoinKey::new(outpoint);
            match coin {
                Some(coin) => {
                    value.clear();
                    coin.encode_into(&mut value);
                    table.put(key.as_ref(), &value)?;
                    stats.coins_written += 1;
                    table_bytes += (key.as_ref().len() + value.len()) as u64;
                }
                None => {
                    table.delete(key.as_ref())?;
                    stats.coins_erased += 1;
                    table_bytes += key.as_ref().len() as u64;
                }
            }
        }
        edges.head_blocks.write(&mut table, HEAD_BLOCKS_KEY)?;
        let (path, _file_bytes) = table.finish()?;
        let mut options = IngestExternalFileOptions::default();
        options.set_move_files(true);
        self.raw().ingest_external_file_opts(&options, vec![path])?;
        self.add_written_bytes(table_bytes);
        stats.batch_count += 1;
        stats.batch_bytes += table_bytes;
        Ok(())
    }
}

/// What a table of a flush does to one of the records `'B'` and `'H'`.
#[derive(Debug, Clone, Copy)]
enum RecordChange<'a> {
    /// Leaves it alone.
    Keep,
    /// Erases it.
    Erase,
    /// Puts this value.
    Put(&'a [u8]),
}

impl RecordChange<'_> {
    /// Adds the change of the record at `key` to `table`.
    fn write(self, table: &mut TableWriter, key: &[u8]) -> Result<(), ChainstateError> {
        match self {
            RecordChange::Keep => Ok(()),
            RecordChange::Erase => table.delete(key),
            RecordChange::Put(value) => table.put(key, value),
        }
    }
}

/// What a table of a flush does to `'B'` (its first key) and `'H'` (its
/// last).
struct TableEdges<'a> {
    best_block: RecordChange<'a>,
    head_blocks: RecordChange<'a>,
}

/// A flush written as a given number of tables, ingested one after
/// another, so that a background flush can free each part of the frozen
/// map as soon as its table is in (`crate::coins::background`). The parts come
/// in descending key order: the first holds the highest coin keys, the
/// last the lowest.
///
/// # Crash safety
/// Core's protocol, with tables for batches, and its end marked by `'B'`
/// alone: the first table puts `'H'` = (new tip, old tip), the last one
/// puts `'B'` = the new tip. A crash leaves a prefix of the tables (each is
/// ingested atomically); one that ends inside the flush leaves `'H'` naming
/// a new tip that `'B'` does not, which makes the next start replay the
/// blocks between the tips ([`CoinsDatabase::head_blocks`]). Once `'B'`
/// names `'H'`'s new tip, the flush is finished. A flush of one table puts
/// `'B'` and erases `'H'` at once.
///
/// # Why `'B'` is not erased first nor `'H'` last
/// `'B'` sorts below every coin key and `'H'` above. A table's key range
/// runs from its smallest key to its largest, and a read passes the bloom
/// filter of every level-0 table whose range holds its key. Core's order
/// (erase `'B'` and put `'H'` first, put `'B'` and erase `'H'` last) puts
/// both records in the first and the last table, whose ranges then span
/// every coin: with two tables a flush (the default), each read probed
/// both tables' filters of every flush in level 0, not the one table that
/// can hold its key. Here `'H'` goes with the highest coins and `'B'` with
/// the lowest, so the tables of a flush split the coins' key space.
pub struct TableFlush<'a> {
    database: &'a CoinsDatabase,
    new_tip: BlockHash,
    head_blocks: Vec<u8>,
    table_count: usize,
    parts_ingested: usize,
    stats: FlushStats,
}

impl<'a> TableFlush<'a> {
    /// Begins a flush to `new_tip` in `table_count` parts (at least one).
    pub fn begin(
        database: &'a CoinsDatabase,
        new_tip: BlockHash,
        table_count: usize,
    ) -> Result<TableFlush<'a>, ChainstateError> {
        let old_tip = database.check_head_blocks(new_tip)?;
        Ok(TableFlush {
            database,
            new_tip,
            head_blocks: head_blocks_record(new_tip, old_tip),
            table_count: table_count.max(1),
            parts_ingested: 0,
            stats: FlushStats::default(),
        })
    }

    /// Writes and ingests the next part, `writes` sorted by
    /// `sort_in_key_order` and below the keys of the parts before it; a
    /// middle part with nothing to write is skipped. A part after the last
    /// is refused.
    pub fn ingest_part(&mut self, writes: &[KeyedCoinWrite<'_>]) -> Result<(), ChainstateError> {
        if self.parts_ingested >= self.table_count {
            return Err(ChainstateError::FlushTablesExceeded { table_count: self.table_count });
        }
        let first = self.parts_ingested == 0;
        let last = self.parts_ingested + 1 == self.table_count;
        self.parts_ingested += 1;
        let tip = self.new_tip;
        let edges = match (first, last) {
            (true, true) => TableEdges {
                best_block: RecordChange::Put(tip.as_bytes()),
                head_blocks: RecordChange::Erase,
            },
            (false, true) => TableEdges {
                best_block: RecordChange::Put(tip.as_bytes()),
                head_blocks: RecordChange::Keep,
            },
            (true, false) => TableEdges {
                best_block: RecordChange::Keep,
                head_blocks: RecordChange::Put(&self.head_blocks),
            },
            (false, false) if writes.is_empty() => return Ok(()),
            (false, false) => {
                TableEdges { best_block: RecordChange::Keep, head_blocks: RecordChange::Keep }
            }
        };
        self.database.ingest_table(&edges, writes, &mut self.stats)
    }

    /// Ends the flush: every part must have been ingested.
    pub fn finish(self) -> Result<FlushStats, ChainstateError> {
        if self.parts_ingested != self.table_count {
            return Err(ChainstateError::FlushTablesMissing {
                table_count: self.table_count,
                parts_ingested: self.parts_ingested,
            });
        }
        Ok(self.stats)
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::coins::database::key_order::tests::awkward_outpoints;
    use crate::coins::database::key_order::{key_order, keyed, sort_in_key_order};
    use crate::coins::database::DatabaseOptions;

    /// Puts of `coin` at `outpoints`, in key order.
    fn sorted_puts<'a>(outpoints: &'a [OutPoint], coin: &'a Coin) -> Vec<KeyedCoinWrite<'a>> {
        let mut writes: Vec<KeyedCoinWrite<'a>> =
            outpoints.iter().map(|outpoint| keyed((outpoint, Some(coin)))).collect();
        sort_in_key_order(&mut writes);
        writes
    }

    /// `writes` as a flush of one table to `new_tip`.
    fn ingest_one(
        database: &CoinsDatabase,
        new_tip: BlockHash,
        writes: &[KeyedCoinWrite<'_>],
    ) -> Result<FlushStats, ChainstateError> {
        let mut flush = TableFlush::begin(database, new_tip, 1)?;
        flush.ingest_part(writes)?;
        flush.finish()
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
            let mut writes = sorted_puts(&outpoints, &coin);
            let stats = ingest_one(&database, BlockHash([7; 32]), &writes).unwrap();
            assert_eq!(stats.coins_written, outpoints.len() as u64);
            // Unsorted writes are refused with RocksDB's reason, not written.
            writes.swap(0, 1);
            let refused = ingest_one(&database, BlockHash([8; 32]), &writes);
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

    /// [`awkward_outpoints`] in key order, a coin to put at each, and the
    /// number of outpoints in the lower half.
    fn halves_in_key_order() -> (Vec<OutPoint>, Coin, usize) {
        let mut in_order = awkward_outpoints();
        in_order.sort_by(key_order);
        let coin =
            Coin::new(ibex_primitives::Amount::from_sat_u32(9), [0x51u8; 22], 4, false).unwrap();
        let low_count = in_order.len() / 2;
        (in_order, coin, low_count)
    }

    #[test]
    fn a_flush_in_tables_leaves_a_prefix_the_head_blocks_record_marks() {
        let directory = tempfile::tempdir().unwrap();
        let (outpoints, coin, low_count) = halves_in_key_order();
        let (low, high) = outpoints.split_at(low_count);
        let sorted = |outpoints| sorted_puts(outpoints, &coin);
        let old_tip = BlockHash([1; 32]);
        let new_tip = BlockHash([2; 32]);
        {
            let database =
                CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
            ingest_one(&database, old_tip, &[]).unwrap();
            let mut flush = TableFlush::begin(&database, new_tip, 4).unwrap();
            flush.ingest_part(&sorted(high)).unwrap();
            // Inside the flush: the old best block, the two tips recorded,
            // the first part readable.
            assert_eq!(database.best_block().unwrap(), Some(old_tip));
            let heads = database.head_blocks().unwrap().unwrap();
            assert_eq!((heads.new_tip, heads.old_tip), (new_tip, old_tip));
            assert_eq!(database.coin(&high[0]).unwrap(), Some(coin.clone()));
            assert_eq!(database.coin(&low[0]).unwrap(), None);
            // A crash here: the flush is dropped unfinished.
            assert!(matches!(
                flush.finish(),
                Err(ChainstateError::FlushTablesMissing { table_count: 4, parts_ingested: 1 })
            ));
        }
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        assert_eq!(database.best_block().unwrap(), Some(old_tip));
        assert!(database.head_blocks().unwrap().is_some());
        // A flush to another tip than the interrupted one's is refused.
        let other = TableFlush::begin(&database, BlockHash([3; 32]), 2);
        assert!(matches!(other, Err(ChainstateError::InconsistentHeadBlocks { .. })));
        // The replayed flush to the same tip: its old tip is the recorded one.
        let mut flush = TableFlush::begin(&database, new_tip, 4).unwrap();
        flush.ingest_part(&sorted(high)).unwrap();
        flush.ingest_part(&[]).unwrap();
        flush.ingest_part(&sorted(low)).unwrap();
        flush.ingest_part(&[]).unwrap();
        assert!(matches!(
            flush.ingest_part(&[]),
            Err(ChainstateError::FlushTablesExceeded { table_count: 4 })
        ));
        let stats = flush.finish().unwrap();
        // The empty middle part wrote no table; the empty last one did.
        assert_eq!(stats.batch_count, 3);
        assert_eq!(stats.coins_written, outpoints.len() as u64);
        // Finished: `'H'` is left behind, naming the tip `'B'` names.
        assert_eq!(database.best_block().unwrap(), Some(new_tip));
        assert_eq!(database.head_blocks().unwrap(), None);
        let coins = database.iter_coins().map(Result::unwrap).count();
        assert_eq!(coins, outpoints.len());
        // The next flush starts from it, and a crash inside it shows.
        let next_tip = BlockHash([3; 32]);
        let mut next = TableFlush::begin(&database, next_tip, 2).unwrap();
        next.ingest_part(&[]).unwrap();
        let heads = database.head_blocks().unwrap().unwrap();
        assert_eq!((heads.new_tip, heads.old_tip), (next_tip, new_tip));
        next.ingest_part(&[]).unwrap();
        next.finish().unwrap();
        assert_eq!(database.head_blocks().unwrap(), None);
        assert_eq!(database.best_block().unwrap(), Some(next_tip));
    }

    /// The tables of one flush, as RocksDB lists them: (smallest key,
    /// largest key), lowest first.
    fn table_ranges(database: &CoinsDatabase) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = database
            .raw()
            .live_files()
            .unwrap()
            .into_iter()
            .map(|file| (file.start_key.unwrap(), file.end_key.unwrap()))
            .collect();
        ranges.sort();
        ranges
    }

    #[test]
    fn the_tables_of_a_flush_split_the_coin_keys_between_them() {
        let directory = tempfile::tempdir().unwrap();
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        let (outpoints, coin, low_count) = halves_in_key_order();
        let (low, high) = outpoints.split_at(low_count);
        let mut flush = TableFlush::begin(&database, BlockHash([2; 32]), 2).unwrap();
        flush.ingest_part(&sorted_puts(high, &coin)).unwrap();
        flush.ingest_part(&sorted_puts(low, &coin)).unwrap();
        flush.finish().unwrap();
        let ranges = table_ranges(&database);
        assert_eq!(ranges.len(), 2, "{ranges:?}");
        let ((low_start, low_end), (high_start, high_end)) = (&ranges[0], &ranges[1]);
        // `'B'` below the low coins, `'H'` above the high ones, and no
        // coin key in both tables' ranges: a read passes one filter.
        assert_eq!(low_start.as_slice(), BEST_BLOCK_KEY);
        assert_eq!(high_end.as_slice(), HEAD_BLOCKS_KEY);
        assert!(low_end < high_start, "{ranges:?}");
        assert_eq!(low_end.as_slice(), CoinKey::new(low.last().unwrap()).as_ref());
        assert_eq!(high_start.as_slice(), CoinKey::new(&high[0]).as_ref());
        assert_eq!(database.iter_coins().count(), outpoints.len());
    }
}
