//! Dropping whole coin keys from the coins database's filters
//! (`CoinsDatabase::drop_whole_key_filters`) keeps every other table option,
//! shrinks what the table readers hold, and never hides a coin: point reads,
//! batched reads and BIP30's prefix seeks give the same answers from tables
//! written before and after the change, and after a restart that starts with
//! whole-key filters again over a mix of both kinds of tables. The last
//! level's tables carry no filter at all (`database::LAST_LEVEL_FILTERS`),
//! and still answer every read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

mod options_file;

use ibex_chainstate::{Coin, CoinsDatabase, DatabaseOptions};
use ibex_primitives::{Amount, OutPoint, Txid};
use options_file::{sections, setting};

/// Outputs of each transaction written (payout-like, as on `utxo-heavy`).
const OUTPUTS_PER_TRANSACTION: u32 = 12;

fn txid(set: u8, index: u32) -> Txid {
    let mut bytes = [0u8; 32];
    // Spread over the key space as real txids are.
    bytes[0] = (index.wrapping_mul(2_654_435_761) >> 24) as u8;
    bytes[1] = set;
    bytes[2..6].copy_from_slice(&index.to_le_bytes());
    Txid(bytes)
}

fn coin(index: u32, vout: u32) -> Coin {
    Coin::new(Amount::from_sat_u32(index * 100 + vout + 1), [0x51u8; 22], 7, false).unwrap()
}

fn options() -> DatabaseOptions {
    DatabaseOptions {
        memtable_bytes: 1 << 20,
        block_cache_bytes: 5 << 20,
        ..DatabaseOptions::default()
    }
}

/// Writes set `set`'s `count` transactions and persists them to tables.
fn write_set(database: &CoinsDatabase, set: u8, count: u32) {
    let mut batches = database.coin_batches(256 << 10);
    for index in 0..count {
        for vout in 0..OUTPUTS_PER_TRANSACTION {
            batches.put(&OutPoint { txid: txid(set, index), vout }, &coin(index, vout)).unwrap();
        }
    }
    batches.finish().unwrap();
    database.persist_memtables().unwrap();
}

/// Spends output 0 of every third transaction of `set`.
fn spend_some(database: &CoinsDatabase, set: u8, count: u32) {
    let mut batches = database.coin_batches(256 << 10);
    for index in (0..count).step_by(3) {
        batches.erase(&OutPoint { txid: txid(set, index), vout: 0 }).unwrap();
    }
    batches.finish().unwrap();
    database.persist_memtables().unwrap();
}

/// Every read agrees with what was written and spent.
fn check_set(database: &CoinsDatabase, set: u8, count: u32, spent: bool) {
    let mut outpoints = Vec::new();
    for index in 0..count {
        for vout in 0..OUTPUTS_PER_TRANSACTION {
            outpoints.push(OutPoint { txid: txid(set, index), vout });
        }
    }
    let batched = database.coins(&outpoints).unwrap();
    for (outpoint, found) in outpoints.iter().zip(batched) {
        let index = u32::from_le_bytes(outpoint.txid.0[2..6].try_into().unwrap());
        let expected = if spent && outpoint.vout == 0 && index % 3 == 0 {
            None
        } else {
            Some(coin(index, outpoint.vout))
        };
        assert_eq!(found, expected, "set {set}, transaction {index}, output {}", outpoint.vout);
        assert_eq!(database.coin(outpoint).unwrap(), expected);
        assert_eq!(database.has_coin(outpoint).unwrap(), expected.is_some());
    }
    let mut seeker = database.prefix_seeker();
    for index in 0..count {
        assert!(seeker.has_coin_of(&txid(set, index)).unwrap(), "set {set}, {index}");
        // An output past the last never existed.
        let past = OutPoint { txid: txid(set, index), vout: OUTPUTS_PER_TRANSACTION };
        assert_eq!(database.coin(&past).unwrap(), None);
    }
    for index in count..count + 500 {
        assert!(!seeker.has_coin_of(&txid(set, index)).unwrap(), "absent {set}, {index}");
    }
}

/// One setting of the `[TableOptions/BlockBasedTable "default"]` section of
/// the newest `OPTIONS-*` file.
fn table_setting(path: &Path, name: &str) -> String {
    let table =
        sections(path, |header| header.starts_with("[TableOptions/BlockBasedTable \"default\""));
    setting(&table, name).to_owned()
}

#[test]
fn prefix_only_filters_keep_the_options_and_every_answer() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path();
    let count = 4_000;
    {
        let database = CoinsDatabase::open(path, &options()).unwrap();
        assert!(database.has_whole_key_filters());
        assert_eq!(table_setting(path, "whole_key_filtering"), "true");
        write_set(&database, 1, count);

        assert!(database.drop_whole_key_filters().unwrap(), "the first call makes the change");
        assert!(!database.drop_whole_key_filters().unwrap(), "and only the first");
        assert!(!database.has_whole_key_filters());
        assert_eq!(table_setting(path, "whole_key_filtering"), "false");
        // Everything else the table factory had is kept.
        assert!(table_setting(path, "filter_policy").contains("bloomfilter"));
        assert_eq!(table_setting(path, "data_block_index_type"), "kDataBlockBinarySearch");
        assert_eq!(database.block_cache_capacity_bytes(), Some(5 << 20));

        write_set(&database, 2, count);
        spend_some(&database, 1, count);
        spend_some(&database, 2, count);
        check_set(&database, 1, count, true);
        check_set(&database, 2, count, true);
    }
    // A restart starts with whole-key filters over tables of both kinds.
    let database = CoinsDatabase::open(path, &options()).unwrap();
    assert!(database.has_whole_key_filters());
    check_set(&database, 1, count, true);
    check_set(&database, 2, count, true);
    write_set(&database, 3, count);
    check_set(&database, 3, count, false);
}

#[test]
fn prefix_only_filters_take_a_fraction_of_the_memory() {
    let count = 8_000;
    let readers_bytes = |drop_whole_keys: bool| {
        let directory = tempfile::tempdir().unwrap();
        let database = CoinsDatabase::open(directory.path(), &options()).unwrap();
        if drop_whole_keys {
            database.drop_whole_key_filters().unwrap();
        }
        write_set(&database, 1, count);
        database.table_readers_bytes().unwrap()
    };
    let whole = readers_bytes(false);
    let prefixes = readers_bytes(true);
    // 96,000 coins: ~120 KB of whole-key filter at 10 bits a key, against
    // ~10 KB for 8,000 transaction ids (the indexes are alike in both).
    assert!(whole > 100_000, "{whole}");
    assert!(prefixes * 2 < whole, "prefix filters {prefixes} bytes, whole-key {whole}");
}

#[test]
fn the_last_level_holds_no_filters_and_answers_every_read() {
    let directory = tempfile::tempdir().unwrap();
    let database = CoinsDatabase::open(directory.path(), &options()).unwrap();
    let count = 8_000;
    write_set(&database, 1, count);
    spend_some(&database, 1, count);
    // Level 0 (memtables written): filters of 10 bits a coin, ~120 KB.
    let level0 = database.table_readers_bytes().unwrap();
    assert!(level0 > 100_000, "{level0}");
    database.compact_all().unwrap();
    let files_by_level = database.property_text("rocksdb.levelstats").unwrap();
    let last = database.table_readers_bytes().unwrap();
    // Only the index blocks are left (~0.4 bytes a coin).
    assert!(last * 3 < level0, "{last} bytes after, {level0} before: {files_by_level}");
    // Reads that find their coin, and those that find none (spent or
    // never written), answer as before.
    check_set(&database, 1, count, true);
}
