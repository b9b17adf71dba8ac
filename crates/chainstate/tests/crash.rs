#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Crash consistency of flushes: a flush interrupted between batches leaves
//! the head-blocks record naming the blocks to replay, no best block, and a
//! replayed flush reaches the same database as an uninterrupted one.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::TempDirectory;
use ibex_chainstate::{
    ChainstateError, Coin, CoinsCache, CoinsDatabase, DatabaseOptions, FlushMode, HeadBlocks,
};
use ibex_primitives::{Amount, BlockHash, OutPoint, Txid};

const TIP_A: BlockHash = BlockHash([0xaa; 32]);
const TIP_B: BlockHash = BlockHash([0xbb; 32]);
const BATCH_BYTES: usize = 256;

fn options() -> DatabaseOptions {
    DatabaseOptions { flush_batch_bytes_max: BATCH_BYTES, ..DatabaseOptions::default() }
}

fn outpoint(block: u8, index: u32) -> OutPoint {
    OutPoint { txid: Txid([block; 32]), vout: index }
}

fn coin(height: u32, index: u32) -> Coin {
    let script = [&[0x00, 0x14][..], &[index as u8; 20]].concat();
    Coin::new(Amount::from_sat(i64::from(index) * 1000).unwrap(), script, height, index == 0)
        .unwrap()
}

/// "Block A": 100 coins. "Block B": spends the even ones, creates 100 more.
fn connect_a(cache: &mut CoinsCache) {
    for index in 0..100 {
        cache.add(&outpoint(1, index), coin(1, index), false).unwrap();
    }
}

fn connect_b(cache: &mut CoinsCache) {
    for index in (0..100).step_by(2) {
        cache.spend(&outpoint(1, index)).unwrap();
    }
    for index in 0..100 {
        cache.add(&outpoint(2, index), coin(2, index), false).unwrap();
    }
}

fn contents(database: &CoinsDatabase) -> BTreeMap<OutPoint, Coin> {
    database.iter_coins().map(Result::unwrap).collect()
}

fn open_cache(directory: &TempDirectory) -> CoinsCache {
    CoinsCache::new(Arc::new(CoinsDatabase::open(directory.path(), &options()).unwrap()), 1 << 20)
}

#[test]
fn interrupted_flush_is_detected_and_replayed() {
    // The reference: A and B connected and flushed without a crash.
    let clean_directory = TempDirectory::new("clean");
    let mut clean = open_cache(&clean_directory);
    // Write batches, as the crash below interrupts (flushes are ingested
    // tables otherwise, one each, which no crash can split).
    clean.database().set_batch_flushes(true);
    connect_a(&mut clean);
    clean.flush(TIP_A, FlushMode::EmptyCache).unwrap();
    connect_b(&mut clean);
    let stats = clean.flush(TIP_B, FlushMode::EmptyCache).unwrap();
    assert!(stats.batch_count > 3, "small batches force a multi-batch flush: {stats:?}");
    let expected = contents(clean.database());

    // The crash: B's flush writes a few batches, then the process dies.
    let directory = TempDirectory::new("crash");
    {
        let mut cache = open_cache(&directory);
        connect_a(&mut cache);
        cache.flush(TIP_A, FlushMode::EmptyCache).unwrap();
        let database = cache.database().clone();
        let mut writer = database.begin_flush(TIP_B).unwrap();
        for index in 0..40 {
            writer.put(&outpoint(2, index), &coin(2, index)).unwrap();
        }
        drop(writer); // no finish(): the last batch and the best block are lost
    }

    // Restart: the database says a flush from A to B was interrupted.
    let mut cache = open_cache(&directory);
    let database = cache.database().clone();
    assert_eq!(database.best_block().unwrap(), None);
    assert_eq!(
        database.head_blocks().unwrap(),
        Some(HeadBlocks { new_tip: TIP_B, old_tip: TIP_A })
    );
    let partial = contents(&database);
    assert!(
        partial.len() > 100 && partial.len() <= 140,
        "some of B's batches landed: {}",
        partial.len()
    );

    // Flushing to another tip is refused: the disk mixes A and B.
    assert!(matches!(
        database.begin_flush(BlockHash([0xcc; 32])),
        Err(ChainstateError::InconsistentHeadBlocks { .. })
    ));

    // Replay B (as the restart would, from A's coins) with overwrites allowed
    // for coins a landed batch already wrote, then flush to B.
    for index in (0..100).step_by(2) {
        cache.spend(&outpoint(1, index)).unwrap();
    }
    for index in 0..100 {
        cache.add(&outpoint(2, index), coin(2, index), true).unwrap();
    }
    cache.flush(TIP_B, FlushMode::KeepCoins).unwrap();
    assert_eq!(database.best_block().unwrap(), Some(TIP_B));
    assert_eq!(database.head_blocks().unwrap(), None);
    assert_eq!(contents(&database), expected);
}

#[test]
fn crash_after_the_first_flush_keeps_an_empty_old_tip() {
    let directory = TempDirectory::new("first");
    {
        let database = CoinsDatabase::open(directory.path(), &options()).unwrap();
        let mut writer = database.begin_flush(TIP_A).unwrap();
        for index in 0..50 {
            writer.put(&outpoint(1, index), &coin(1, index)).unwrap();
        }
    }
    let database = CoinsDatabase::open(directory.path(), &options()).unwrap();
    assert_eq!(database.best_block().unwrap(), None);
    assert_eq!(
        database.head_blocks().unwrap(),
        Some(HeadBlocks { new_tip: TIP_A, old_tip: BlockHash::ZERO })
    );
}

#[test]
fn single_batch_flush_is_atomic() {
    let directory = TempDirectory::new("atomic");
    let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
    {
        let mut writer = database.begin_flush(TIP_A).unwrap();
        writer.put(&outpoint(1, 0), &coin(1, 0)).unwrap();
    }
    // Nothing reached the disk, not even the head-blocks record.
    assert_eq!(database.head_blocks().unwrap(), None);
    assert!(contents(&database).is_empty());
}
