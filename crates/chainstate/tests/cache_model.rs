#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Property test: the UTXO cache over RocksDB against a `BTreeMap` model.
//! Random add/spend/fetch/flush/reopen sequences, with flushes written on
//! the background writer thread while operations go on; the visible set
//! always equals the model, and after each flush the database equals the
//! model as it was when that flush started. A prefetch may be started and
//! finished later, with any operations in between (as the connecting
//! thread reads the next block's coins while it connects the current one).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::TempDirectory;
use ibex_chainstate::PrefetchInFlight;
use ibex_chainstate::{
    ChainstateError, Coin, CoinsCache, CoinsDatabase, DatabaseOptions, FlushMode,
};
use ibex_primitives::txoutset::{Coin as SetCoin, TxOutSetHashType, TxOutSetHasher};
use ibex_primitives::{Amount, BlockHash, OutPoint, Txid};
use proptest::prelude::*;

/// Few outpoints, so adds, spends and re-adds collide often.
const OUTPOINT_COUNT: u8 = 12;

#[derive(Debug, Clone)]
enum Operation {
    Add { outpoint: u8, coin: CoinSeed, possible_overwrite: bool },
    Spend { outpoint: u8 },
    Fetch { outpoint: u8 },
    Prefetch,
    StartPrefetch { outpoints: u16, read_at_once: bool },
    FinishPrefetch,
    Flush { keep_coins: bool },
    BackgroundFlush { keep_coins: bool },
    CollectBackground,
    Reopen,
}

#[derive(Debug, Clone)]
struct CoinSeed {
    satoshis: i64,
    script: u8,
    height: u32,
    is_coinbase: bool,
}

impl CoinSeed {
    fn coin(&self) -> Coin {
        let script = match self.script % 4 {
            0 => vec![0x51],
            1 => [&[0x00, 20][..], &[self.script; 20]].concat(),
            2 => vec![0x6a, self.script], // OP_RETURN: never added
            _ => vec![self.script; usize::from(self.script)],
        };
        Coin::new(Amount::from_sat(self.satoshis).unwrap(), script, self.height, self.is_coinbase)
            .unwrap()
    }
}

fn outpoint(index: u8) -> OutPoint {
    OutPoint { txid: Txid([index / 3; 32]), vout: u32::from(index % 3) * 200 }
}

fn operation() -> impl Strategy<Value = Operation> {
    let coin = (0..=ibex_primitives::MAX_MONEY, any::<u8>(), 0..1_000_000u32, any::<bool>())
        .prop_map(|(satoshis, script, height, is_coinbase)| CoinSeed {
            satoshis,
            script,
            height,
            is_coinbase,
        });
    prop_oneof![
        6 => (0..OUTPOINT_COUNT, coin, any::<bool>()).prop_map(|(outpoint, coin, possible_overwrite)| Operation::Add { outpoint, coin, possible_overwrite }),
        5 => (0..OUTPOINT_COUNT).prop_map(|outpoint| Operation::Spend { outpoint }),
        2 => (0..OUTPOINT_COUNT).prop_map(|outpoint| Operation::Fetch { outpoint }),
        1 => Just(Operation::Prefetch),
        2 => (any::<u16>(), any::<bool>()).prop_map(|(outpoints, read_at_once)| Operation::StartPrefetch { outpoints, read_at_once }),
        2 => Just(Operation::FinishPrefetch),
        2 => any::<bool>().prop_map(|keep_coins| Operation::Flush { keep_coins }),
        2 => any::<bool>().prop_map(|keep_coins| Operation::BackgroundFlush { keep_coins }),
        1 => Just(Operation::CollectBackground),
        1 => Just(Operation::Reopen),
    ]
}

struct Harness {
    directory: TempDirectory,
    slot: Option<CoinsCache>,
    model: BTreeMap<OutPoint, Coin>,
    flush_count: u64,
    /// The model and tip when the running background flush started.
    background_snapshot: Option<(BTreeMap<OutPoint, Coin>, BlockHash)>,
    /// A prefetch started and not finished, with the flush count then.
    in_flight: Option<(PrefetchInFlight, u64)>,
}

impl Harness {
    fn new(batch_bytes: usize) -> Harness {
        let directory = TempDirectory::new("model");
        let slot = Some(open_cache(&directory, batch_bytes));
        Harness {
            directory,
            slot,
            model: BTreeMap::new(),
            flush_count: 0,
            background_snapshot: None,
            in_flight: None,
        }
    }

    fn cache(&mut self) -> &mut CoinsCache {
        self.slot.as_mut().unwrap()
    }

    /// A harness whose database holds `coin` at each of `keys`, its cache
    /// empty (flushed with [`FlushMode::EmptyCache`]).
    fn with_flushed_coins(keys: &[OutPoint], coin: &Coin) -> Harness {
        let mut harness = Harness::new(1 << 20);
        for key in keys {
            harness.cache().add(key, coin.clone(), false).unwrap();
        }
        harness.cache().flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        harness
    }

    fn apply(&mut self, operation: &Operation) {
        match operation {
            Operation::Add { outpoint: index, coin, possible_overwrite } => {
                self.add(outpoint(*index), coin.coin(), *possible_overwrite)
            }
            Operation::Spend { outpoint: index } => {
                let key = outpoint(*index);
                match self.model.remove(&key) {
                    Some(expected) => {
                        assert_eq!(self.slot.as_mut().unwrap().spend(&key).unwrap(), expected)
                    }
                    None => assert!(matches!(
                        self.slot.as_mut().unwrap().spend(&key),
                        Err(ChainstateError::MissingCoin { .. })
                    )),
                }
            }
            Operation::Fetch { outpoint: index } => {
                let key = outpoint(*index);
                assert_eq!(self.slot.as_mut().unwrap().fetch(&key).unwrap(), self.model.get(&key));
            }
            Operation::Prefetch => {
                let all: Vec<OutPoint> = (0..OUTPOINT_COUNT).map(outpoint).collect();
                self.slot.as_mut().unwrap().prefetch(&all).unwrap();
            }
            Operation::StartPrefetch { outpoints, read_at_once } => {
                // A new start replaces a read nobody waited for.
                if let Some((earlier, _)) = self.in_flight.take() {
                    earlier.discard();
                }
                let chosen: Vec<OutPoint> = (0..OUTPOINT_COUNT)
                    .filter(|index| outpoints & (1 << index) != 0)
                    .map(outpoint)
                    .collect();
                let mut in_flight = self.cache().start_prefetch(&chosen);
                // Read now, so that what follows cannot be seen by the read
                // (otherwise it may or may not be: the read runs on its own).
                if let (true, Some(in_flight)) = (read_at_once, in_flight.as_mut()) {
                    in_flight.wait_for_read();
                }
                self.in_flight = in_flight.map(|in_flight| (in_flight, self.flush_count));
            }
            Operation::FinishPrefetch => {
                if let Some((in_flight, flush_count)) = self.in_flight.take() {
                    let inserted = self.cache().finish_prefetch(in_flight).unwrap();
                    // A flush since the start makes the read stale: nothing
                    // is inserted then, and always inserted otherwise.
                    assert_eq!(inserted, flush_count == self.flush_count);
                }
            }
            Operation::Flush { keep_coins } => {
                let mode = if *keep_coins { FlushMode::KeepCoins } else { FlushMode::EmptyCache };
                self.flush(mode);
            }
            Operation::BackgroundFlush { keep_coins } => {
                let mode = if *keep_coins { FlushMode::KeepCoins } else { FlushMode::EmptyCache };
                self.flush_count += 1;
                let tip = BlockHash([self.flush_count as u8; 32]);
                self.collect_background();
                self.cache().start_background_flush(tip, mode).unwrap();
                assert_eq!(self.cache().dirty_count(), 0);
                self.background_snapshot = Some((self.model.clone(), tip));
            }
            Operation::CollectBackground => self.collect_background(),
            Operation::Reopen => {
                if let Some((in_flight, _)) = self.in_flight.take() {
                    in_flight.discard();
                }
                self.flush(FlushMode::KeepCoins);
                let batch_bytes = self.slot.as_mut().unwrap().database().flush_batch_bytes_max();
                // Close the database (RocksDB's lock) before opening it again.
                self.slot = None;
                self.slot = Some(open_cache(&self.directory, batch_bytes));
                self.check_database();
            }
        }
    }

    fn add(&mut self, key: OutPoint, coin: Coin, possible_overwrite: bool) {
        let unspendable = coin.script_pubkey().first() == Some(&0x6a);
        if !possible_overwrite && self.model.contains_key(&key) {
            // Core's contract: without overwrite the caller has checked the coin
            // is absent; an unspent coin the cache knows of is an error.
            self.slot.as_mut().unwrap().fetch(&key).unwrap();
            let result = self.slot.as_mut().unwrap().add(&key, coin, false);
            assert!(
                unspendable || matches!(result, Err(ChainstateError::OverwriteUnspentCoin { .. }))
            );
            return;
        }
        self.slot.as_mut().unwrap().add(&key, coin.clone(), possible_overwrite).unwrap();
        if !unspendable {
            self.model.insert(key, coin);
        }
    }

    /// Waits for the background flush; the database then holds the model
    /// as it was when the flush started.
    fn collect_background(&mut self) {
        let collected = self.cache().finish_background_flush().unwrap();
        assert_eq!(collected.is_some(), self.background_snapshot.is_some());
        if let Some((snapshot, tip)) = self.background_snapshot.take() {
            assert_eq!(self.cache().database().best_block().unwrap(), Some(tip));
            let stored: BTreeMap<OutPoint, Coin> =
                self.cache().database().iter_coins().map(Result::unwrap).collect();
            assert_eq!(stored, snapshot);
        }
    }

    fn flush(&mut self, mode: FlushMode) {
        self.collect_background();
        self.flush_count += 1;
        let tip = BlockHash([self.flush_count as u8; 32]);
        self.slot.as_mut().unwrap().flush(tip, mode).unwrap();
        assert_eq!(self.slot.as_mut().unwrap().dirty_count(), 0);
        if mode == FlushMode::EmptyCache {
            assert_eq!(self.slot.as_mut().unwrap().entry_count(), 0);
            assert_eq!(self.slot.as_mut().unwrap().memory_bytes(), 0);
        }
        assert_eq!(self.slot.as_mut().unwrap().database().best_block().unwrap(), Some(tip));
        assert_eq!(self.slot.as_mut().unwrap().database().head_blocks().unwrap(), None);
        self.check_database();
    }

    fn check_database(&mut self) {
        let stored: BTreeMap<OutPoint, Coin> =
            self.slot.as_mut().unwrap().database().iter_coins().map(Result::unwrap).collect();
        assert_eq!(stored, self.model);
    }

    /// `gettxoutsetinfo` at this moment, cache and database merged (a
    /// background flush may be half written), equals the model's.
    fn check_set_statistics(&mut self) {
        let mut hasher = TxOutSetHasher::new(TxOutSetHashType::HashSerialized3);
        for (outpoint, coin) in &self.model {
            let set_coin = SetCoin::from_spent(*outpoint, coin.as_spent_coin());
            hasher.add_coin(&set_coin).unwrap();
        }
        let expected = hasher.finish();
        let cache = self.slot.as_ref().unwrap();
        assert_eq!(cache.txoutset_stats(TxOutSetHashType::HashSerialized3).unwrap(), expected);
    }

    fn check_visible(&mut self) {
        // BIP30's per-transaction question, before the fetches below load
        // coins into memory: with 401 outputs the database is asked with
        // one prefix seek, with 1 output by a point read.
        for txid_byte in 0..OUTPOINT_COUNT / 3 {
            let txid = Txid([txid_byte; 32]);
            let cache = self.slot.as_ref().unwrap();
            let any_output = self.model.keys().any(|key| key.txid == txid);
            assert_eq!(cache.has_unspent_output_of(&txid, 401).unwrap().unspent, any_output);
            let first_output = self.model.contains_key(&OutPoint { txid, vout: 0 });
            assert_eq!(cache.has_unspent_output_of(&txid, 1).unwrap().unspent, first_output);
        }
        for index in 0..OUTPOINT_COUNT {
            let key = outpoint(index);
            assert_eq!(
                self.slot.as_mut().unwrap().fetch(&key).unwrap(),
                self.model.get(&key),
                "outpoint {index}"
            );
        }
    }
}

fn open_cache(directory: &TempDirectory, batch_bytes: usize) -> CoinsCache {
    let options =
        DatabaseOptions { flush_batch_bytes_max: batch_bytes, ..DatabaseOptions::default() };
    let database = CoinsDatabase::open(directory.path(), &options).unwrap();
    CoinsCache::new(Arc::new(database), 1 << 20)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn cache_and_database_match_the_model(
        operations in proptest::collection::vec(operation(), 1..120),
        batch_bytes in prop_oneof![Just(1usize), Just(64), Just(32 << 20)],
    ) {
        let mut harness = Harness::new(batch_bytes);
        for operation in &operations {
            harness.apply(operation);
            harness.check_set_statistics();
            harness.check_visible();
        }
        harness.apply(&Operation::Reopen);
        harness.check_visible();
    }
}

#[test]
fn coin_created_and_spent_between_flushes_never_reaches_disk() {
    let mut harness = Harness::new(1 << 20);
    let key = outpoint(0);
    let coin = CoinSeed { satoshis: 5, script: 1, height: 7, is_coinbase: false }.coin();
    harness.cache().add(&key, coin.clone(), false).unwrap();
    assert_eq!(harness.cache().dirty_count(), 1);
    assert_eq!(harness.cache().spend(&key).unwrap(), coin);
    // FRESH and spent: erased from memory at once.
    assert_eq!(harness.cache().entry_count(), 0);
    let stats = harness.cache().flush(BlockHash([1; 32]), FlushMode::KeepCoins).unwrap();
    assert_eq!((stats.coins_written, stats.coins_erased), (0, 0));
}

#[test]
fn spending_a_flushed_coin_erases_it_from_disk() {
    let key = outpoint(1);
    let coin = CoinSeed { satoshis: 9, script: 0, height: 3, is_coinbase: true }.coin();
    let mut harness = Harness::with_flushed_coins(&[key], &coin);
    assert_eq!(harness.cache().spend(&key).unwrap(), coin);
    assert_eq!(harness.cache().entry_count(), 1, "spent DIRTY entry kept until the flush");
    let stats = harness.cache().flush(BlockHash([2; 32]), FlushMode::KeepCoins).unwrap();
    assert_eq!((stats.coins_written, stats.coins_erased), (0, 1));
    assert_eq!(harness.cache().entry_count(), 0);
    assert!(harness.cache().database().coin(&key).unwrap().is_none());
}

#[test]
fn memory_accounting_counts_scripts_and_fills_up() {
    let directory = TempDirectory::new("memory");
    let database = CoinsDatabase::open(directory.path(), &DatabaseOptions::default()).unwrap();
    let mut cache = CoinsCache::new(Arc::new(database), 64 << 10);
    assert_eq!(cache.memory_bytes(), 0);
    let mut count = 0u32;
    while !cache.is_full() {
        let key = OutPoint { txid: Txid([7; 32]), vout: count };
        let coin = Coin::new(Amount::from_sat(1).unwrap(), [0x51u8; 100], 1, false).unwrap();
        cache.add(&key, coin, false).unwrap();
        count += 1;
    }
    // 64 KiB at >= 112 heap bytes plus ~80 table bytes per coin: a few hundred coins.
    assert!((100..600).contains(&count), "{count} coins filled 64 KiB");
    let before = cache.memory_bytes();
    cache.spend(&OutPoint { txid: Txid([7; 32]), vout: 0 }).unwrap();
    assert_eq!(before - cache.memory_bytes(), 128, "100-byte script: 128 heap bytes freed");
}

/// The connecting thread reads the next block's coins while it connects
/// the current one: a coin the current block spends meanwhile stays spent,
/// and the coins it does not touch arrive in memory.
#[test]
fn prefetch_finished_after_a_spend_leaves_the_coin_spent() {
    let (spent, kept) = (outpoint(0), outpoint(3));
    let coin = CoinSeed { satoshis: 5, script: 1, height: 7, is_coinbase: false }.coin();
    let mut harness = Harness::with_flushed_coins(&[spent, kept], &coin);
    let mut in_flight = harness.cache().start_prefetch(&[spent, kept]).unwrap();
    in_flight.wait_for_read();
    assert_eq!(harness.cache().spend(&spent).unwrap(), coin);
    assert!(harness.cache().finish_prefetch(in_flight).unwrap());
    assert!(matches!(harness.cache().spend(&spent), Err(ChainstateError::MissingCoin { .. })));
    // The kept coin is in memory: spending it reads nothing more.
    assert_eq!(harness.cache().entry_count(), 2);
    assert_eq!(harness.cache().spend(&kept).unwrap(), coin);
}

/// A read that began before a flush is stale: the flush may have erased a
/// coin it saw, so finishing it inserts nothing.
#[test]
fn prefetch_finished_after_a_flush_inserts_nothing() {
    let key = outpoint(0);
    let coin = CoinSeed { satoshis: 5, script: 1, height: 7, is_coinbase: false }.coin();
    let mut harness = Harness::with_flushed_coins(&[key], &coin);
    let mut in_flight = harness.cache().start_prefetch(&[key]).unwrap();
    in_flight.wait_for_read();
    assert_eq!(harness.cache().spend(&key).unwrap(), coin);
    harness.cache().flush(BlockHash([2; 32]), FlushMode::KeepCoins).unwrap();
    assert_eq!(harness.cache().entry_count(), 0);
    assert!(!harness.cache().finish_prefetch(in_flight).unwrap());
    assert_eq!(harness.cache().fetch(&key).unwrap(), None, "the spent coin came back");
}
