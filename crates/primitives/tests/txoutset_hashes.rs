//! The UTXO-set hashes against Bitcoin Core 30's `gettxoutsetinfo` on the shared
//! regtest chain `core-wallet-mix`: the active chain is replayed into a plain
//! in-memory UTXO map, and `muhash`, `txouts`, `bogosize` and `total_amount` are
//! compared at every height Core reported (`expected.json` holds 11 of them),
//! `hash_serialized_3` and `transactions` at the tip. At every height the running
//! statistics are also checked against a fresh walk of the whole set, and at the
//! reported heights the walked MuHash against the running one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use ibex_primitives::txoutset::{
    is_unspendable, Coin, RunningTxOutSetStats, TxOutSetHashType, TxOutSetHasher, TxOutSetStats,
};
use ibex_primitives::{Amount, BlockHash, BlockView, OutPoint};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

const REGTEST_MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
const REGTEST_GENESIS: &str = "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206";

fn chain_directory() -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../../../shared/chains/core-wallet-mix")
}

/// `blk00000.dat` with Core's XOR obfuscation removed (`xor.dat` is the 8-byte
/// key, applied from file offset 0).
fn read_block_file(directory: &Path) -> Vec<u8> {
    let key = std::fs::read(directory.join("blocks/xor.dat")).unwrap();
    assert_eq!(key.len(), 8);
    let mut data = std::fs::read(directory.join("blocks/blk00000.dat")).unwrap();
    for (index, byte) in data.iter_mut().enumerate() {
        *byte ^= key[index % 8];
    }
    data
}

/// Every framed block (magic, u32 LE length, block) up to the first gap, by hash.
fn blocks_by_hash(data: &[u8]) -> HashMap<BlockHash, &[u8]> {
    let mut blocks = HashMap::new();
    let mut position = 0;
    while data.len() >= position + 8 && data[position..position + 4] == REGTEST_MAGIC {
        let length_bytes: [u8; 4] = data[position + 4..position + 8].try_into().unwrap();
        let start = position + 8;
        let end = start + u32::from_le_bytes(length_bytes) as usize;
        let bytes = &data[start..end];
        blocks.insert(BlockView::parse(bytes).unwrap().block_hash(), bytes);
        position = end;
    }
    blocks
}

/// The active chain, genesis first, walked back from the tip.
fn active_chain<'a>(blocks: &HashMap<BlockHash, &'a [u8]>, tip: BlockHash) -> Vec<&'a [u8]> {
    let mut chain = Vec::new();
    let mut hash = tip;
    while hash != BlockHash::ZERO {
        let bytes = blocks.get(&hash).unwrap_or_else(|| panic!("block {hash} missing"));
        chain.push(*bytes);
        hash = BlockView::parse(bytes).unwrap().header().previous_block_hash;
    }
    chain.reverse();
    chain
}

struct StoredCoin {
    height: u32,
    is_coinbase: bool,
    value: Amount,
    script_pubkey: Vec<u8>,
}

impl StoredCoin {
    fn coin(&self, outpoint: OutPoint) -> Coin<'_> {
        Coin {
            outpoint,
            height: self.height.into(),
            is_coinbase: self.is_coinbase,
            value: self.value,
            script_pubkey: &self.script_pubkey,
        }
    }
}

/// Spends every input and adds every spendable output of the block, as
/// `ConnectBlock` does to the UTXO set (no validation).
fn connect(
    block: &BlockView<'_>,
    height: u32,
    utxos: &mut BTreeMap<OutPoint, StoredCoin>,
    stats: &mut RunningTxOutSetStats,
) {
    for transaction in block.transactions() {
        let is_coinbase = transaction.is_coinbase();
        if !is_coinbase {
            for input in transaction.inputs() {
                let outpoint = input.previous_output();
                let spent = utxos.remove(&outpoint).expect("spent coin exists");
                stats.remove_coin(&spent.coin(outpoint));
            }
        }
        let txid = transaction.txid();
        for (vout, output) in transaction.outputs().iter().enumerate() {
            if is_unspendable(output.script_pubkey) {
                continue;
            }
            let outpoint = OutPoint { txid, vout: vout as u32 };
            let stored = StoredCoin {
                height,
                is_coinbase,
                value: Amount::from_sat(output.value).unwrap(),
                script_pubkey: output.script_pubkey.to_vec(),
            };
            stats.add_coin(&stored.coin(outpoint));
            assert!(utxos.insert(outpoint, stored).is_none(), "duplicate coin {outpoint:?}");
        }
    }
}

fn satoshis(bitcoins: &Value) -> i64 {
    (bitcoins.as_f64().unwrap() * 100_000_000.0).round() as i64
}

fn check_height(expected: &Value, height: u32, stats: &RunningTxOutSetStats, best: BlockHash) {
    assert_eq!(expected["height"], height);
    assert_eq!(expected["bestblock"].as_str().unwrap(), best.to_hex(), "height {height}");
    assert_eq!(expected["muhash"].as_str().unwrap(), stats.muhash().to_hex(), "height {height}");
    assert_eq!(expected["txouts"].as_u64().unwrap(), stats.txouts(), "height {height}");
    assert_eq!(expected["bogosize"].as_u64().unwrap(), stats.bogosize(), "height {height}");
    assert_eq!(Some(satoshis(&expected["total_amount"])), stats.total_amount(), "height {height}");
}

/// Walks the set in database order (the map's order) as `gettxoutsetinfo` does.
fn walk(utxos: &BTreeMap<OutPoint, StoredCoin>, hash_type: TxOutSetHashType) -> TxOutSetStats {
    let mut hasher = TxOutSetHasher::new(hash_type);
    for (outpoint, stored) in utxos {
        hasher.add_coin(&stored.coin(*outpoint)).unwrap();
    }
    hasher.finish()
}

/// The running statistics agree with a fresh walk of the whole set.
fn check_walk_agrees(utxos: &BTreeMap<OutPoint, StoredCoin>, running: &RunningTxOutSetStats) {
    let stats = walk(utxos, TxOutSetHashType::None);
    assert_eq!(stats.txouts, running.txouts());
    assert_eq!(stats.bogosize, running.bogosize());
    assert_eq!(stats.total_amount, running.total_amount());
}

/// `hash_serialized_3`, `transactions` and the walked muhash at the tip.
fn check_tip(expected: &Value, utxos: &BTreeMap<OutPoint, StoredCoin>, running_muhash: &str) {
    let serialized = walk(utxos, TxOutSetHashType::HashSerialized3);
    let muhash = walk(utxos, TxOutSetHashType::MuHash);
    assert_eq!(serialized.hash.unwrap().to_hex(), expected["hash_serialized_3"].as_str().unwrap());
    assert_eq!(muhash.hash.unwrap().to_hex(), running_muhash);
    for stats in [serialized, muhash] {
        assert_eq!(stats.transactions, expected["transactions"].as_u64().unwrap());
        assert_eq!(stats.txouts, expected["txouts"].as_u64().unwrap());
        assert_eq!(stats.bogosize, expected["bogosize"].as_u64().unwrap());
        assert_eq!(stats.total_amount, Some(satoshis(&expected["total_amount"])));
    }
}

#[test]
fn utxo_set_hashes_match_core_on_the_regtest_chain() {
    let directory = chain_directory();
    let expected: Value =
        serde_json::from_slice(&std::fs::read(directory.join("expected.json")).unwrap()).unwrap();
    let data = read_block_file(&directory);
    let blocks = blocks_by_hash(&data);
    let tip = BlockHash::from_hex(expected["getblockchaininfo"]["bestblockhash"].as_str().unwrap())
        .unwrap();
    let chain = active_chain(&blocks, tip);
    assert_eq!(chain.len() as u64 - 1, expected["getblockchaininfo"]["blocks"].as_u64().unwrap());
    assert!(blocks.len() > chain.len(), "the file's stale blocks are skipped");

    let by_height = expected["gettxoutsetinfo"].as_object().unwrap();
    let mut utxos = BTreeMap::new();
    let mut stats = RunningTxOutSetStats::new();
    let mut heights_checked = 0;
    for (height, bytes) in chain.iter().enumerate() {
        let block = BlockView::parse(bytes).unwrap();
        let height = height as u32;
        if height == 0 {
            // Core never adds the genesis coinbase to the UTXO set.
            assert_eq!(block.block_hash().to_hex(), REGTEST_GENESIS);
        } else {
            connect(&block, height, &mut utxos, &mut stats);
        }
        check_walk_agrees(&utxos, &stats);
        if let Some(reported) = by_height.get(&height.to_string()) {
            check_height(&reported["muhash"], height, &stats, block.block_hash());
            let walked = walk(&utxos, TxOutSetHashType::MuHash).hash.unwrap();
            assert_eq!(walked, stats.muhash(), "height {height}");
            heights_checked += 1;
        }
    }
    assert_eq!(heights_checked, by_height.len());
    check_tip(&expected["gettxoutsetinfo_tip_hash_serialized_3"], &utxos, &stats.muhash().to_hex());
}
