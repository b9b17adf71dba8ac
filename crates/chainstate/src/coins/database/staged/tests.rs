use super::*;
use crate::coins::database::DatabaseOptions;
use ibex_primitives::{Amount, Txid};

fn coin(height: u32) -> Coin {
    Coin::new(Amount::from_sat(i64::from(height) * 10).unwrap(), [0x51u8], height, false).unwrap()
}

fn outpoint(seed: u8, vout: u32) -> OutPoint {
    OutPoint { txid: Txid([seed; 32]), vout }
}

/// An empty database in a temporary directory, marked as staging.
fn staging_database() -> (tempfile::TempDir, CoinsDatabase) {
    let directory = tempfile::tempdir().unwrap();
    let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
    database.begin_staging().unwrap();
    (directory, database)
}

#[test]
fn buckets_become_tables_in_key_order_then_commit_and_discard() {
    let (_directory, database) = staging_database();
    assert!(database.holds_staged().unwrap());
    // Four buckets: 200 coins of ~70 bytes, 4 KB each.
    let buckets = CoinBuckets::create(&database, 200, 4_000).unwrap();
    assert_eq!(buckets.files.len(), 4);
    let mut run = CoinRun::default();
    for seed in [0xf9u8, 0x01, 0x85, 0x40] {
        run.push(&outpoint(seed, 0), &coin(u32::from(seed)));
    }
    assert_eq!(run.len(), 4);
    assert!(run.bytes() > 0);
    buckets.append(&mut run).unwrap();
    assert!(run.is_empty());
    for seed in [0x02u8, 0xc7] {
        run.push(&outpoint(seed, 300), &coin(u32::from(seed)));
    }
    buckets.append(&mut run).unwrap();
    // Nothing reaches the database before the buckets are written.
    assert_eq!(database.iter_coins().count(), 0);
    assert_eq!(buckets.write_into(&database, 2).unwrap(), 6);
    assert!(!database.buckets_directory().exists());
    let seeds: Vec<u8> = database.iter_coins().map(|item| item.unwrap().0.txid.0[0]).collect();
    assert_eq!(seeds, [0x01, 0x02, 0x40, 0x85, 0xc7, 0xf9]);
    assert_eq!(database.coin(&outpoint(0xc7, 300)).unwrap(), Some(coin(0xc7)));
    assert_eq!(database.best_block().unwrap(), None);

    let best = BlockHash([3; 32]);
    database.commit_staged(&best).unwrap();
    assert!(!database.holds_staged().unwrap());
    assert_eq!(database.best_block().unwrap(), Some(best));

    database.begin_staging().unwrap();
    let buckets = CoinBuckets::create(&database, 1, 1 << 20).unwrap();
    assert_eq!(buckets.files.len(), 1);
    drop(buckets);
    database.discard_staged().unwrap();
    assert!(!database.holds_staged().unwrap());
    assert!(!database.buckets_directory().exists());
    assert_eq!(database.iter_coins().count(), 0);
    assert_eq!(database.best_block().unwrap(), Some(best));
}

#[test]
fn chunks_merge_in_the_byte_order_of_whole_keys() {
    let (_directory, database) = staging_database();
    let buckets = CoinBuckets::create(&database, 1, 1 << 20).unwrap();
    // Transaction ids equal in their first eight bytes, and outputs
    // whose index encodings differ in length (127, 128, 300).
    let txid = |ninth: u8, last: u8| {
        let mut bytes = [0x33u8; 32];
        bytes[8] = ninth;
        bytes[31] = last;
        Txid(bytes)
    };
    let mut outpoints = Vec::new();
    for (ninth, last) in [(0xff, 0), (0x00, 9), (0x00, 1), (0x80, 0)] {
        for vout in [300, 0, 128, 127, 1] {
            outpoints.push(OutPoint { txid: txid(ninth, last), vout });
        }
    }
    // Three runs, each a chunk of the one bucket, the merge
    // interleaving them.
    let mut run = CoinRun::default();
    for first in 0..3 {
        for outpoint in outpoints.iter().skip(first).step_by(3) {
            run.push(outpoint, &coin(outpoint.vout));
        }
        buckets.append(&mut run).unwrap();
    }
    assert_eq!(buckets.write_into(&database, 1).unwrap(), outpoints.len() as u64);
    let read: Vec<OutPoint> = database.iter_coins().map(|item| item.unwrap().0).collect();
    let mut expected = outpoints.clone();
    expected.sort_by(|left, right| CoinKey::new(left).as_ref().cmp(CoinKey::new(right).as_ref()));
    assert_eq!(read, expected);
    assert_eq!(database.coin(&outpoints[0]).unwrap(), Some(coin(300)));
}

#[test]
fn a_bucket_cut_short_is_an_error() {
    let (_directory, database) = staging_database();
    let buckets = CoinBuckets::create(&database, 1, 1 << 20).unwrap();
    let mut run = CoinRun::default();
    run.push(&outpoint(7, 0), &coin(7));
    run.push(&outpoint(8, 0), &coin(8));
    buckets.append(&mut run).unwrap();
    buckets.files[0].lock().unwrap().as_mut().unwrap().flush().unwrap();
    let path = database.buckets_directory().join("bucket-0");
    let length = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(length - 3).unwrap();
    let error = buckets.write_into(&database, 1).unwrap_err();
    assert!(matches!(error, ChainstateError::CorruptRecord { record: "staged coin", .. }));
}

#[test]
fn staging_mark_survives_reopening() {
    let directory = tempfile::tempdir().unwrap();
    {
        let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
        database.begin_staging().unwrap();
        let buckets = CoinBuckets::create(&database, 1, 1 << 20).unwrap();
        let mut run = CoinRun::default();
        run.push(&outpoint(4, 1), &coin(4));
        buckets.append(&mut run).unwrap();
        buckets.write_into(&database, 1).unwrap();
    }
    let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
    assert!(database.holds_staged().unwrap());
    assert_eq!(database.iter_coins().count(), 1);
    database.discard_staged().unwrap();
    assert_eq!(database.iter_coins().count(), 0);
}

#[test]
fn a_commit_after_a_flush_of_several_tables_leaves_no_interrupted_flush() {
    let (_directory, database) = staging_database();
    // A flush at genesis while the attempt waited (a shutdown's): two
    // tables, the first putting `'H'`, the last `'B'`; `'H'` stays,
    // finished because it names the block `'B'` names.
    let genesis = BlockHash([1; 32]);
    let mut flush =
        crate::coins::database::ingest::TableFlush::begin(&database, genesis, 2).unwrap();
    flush.ingest_part(&[]).unwrap();
    flush.ingest_part(&[]).unwrap();
    flush.finish().unwrap();
    assert_eq!(database.best_block().unwrap(), Some(genesis));
    assert_eq!(database.head_blocks().unwrap(), None);
    let terminal = BlockHash([2; 32]);
    database.commit_staged(&terminal).unwrap();
    assert_eq!(database.best_block().unwrap(), Some(terminal));
    assert_eq!(database.head_blocks().unwrap(), None, "no flush reads as interrupted");
    // The next flush goes ahead.
    let tip = BlockHash([3; 32]);
    let mut flush = crate::coins::database::ingest::TableFlush::begin(&database, tip, 1).unwrap();
    flush.ingest_part(&[]).unwrap();
    flush.finish().unwrap();
    assert_eq!(database.best_block().unwrap(), Some(tip));
}
