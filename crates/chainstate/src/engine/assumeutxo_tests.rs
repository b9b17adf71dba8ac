//! AssumeUTXO end to end on a generated chain: a snapshot dumped by one
//! node, loaded by another that follows the tip from the base while its
//! background chainstate validates from genesis; the snapshot proved and
//! the background dropped, or a forged one refused with the node back on
//! the validated chain; and what a restart finds on disk.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use ibex_primitives::params::AssumeUtxoEntry;
use ibex_primitives::txoutset::{TxOutSetHashType, TxOutSetStats};
use ibex_primitives::{Amount, BlockBuffers, BlockHash, Header, Height, Params};

use super::assumeutxo::{snapshot_chainstate_directory, SnapshotActivationError};
use crate::coins::database::{CoinsDatabase, DatabaseOptions};
use crate::engine::Chainstate;
use crate::error::ChainstateError;
use crate::prepared::PreparedBlock;
use crate::snapshot::{load_snapshot, SnapshotMetadata, SnapshotReader, SnapshotWriter};
use crate::test_chain::accept;

const BLOCKS_ABOVE_GENESIS: u32 = 40;
const BASE_HEIGHT: u32 = 25;
const HASH_TYPE: TxOutSetHashType = TxOutSetHashType::HashSerialized3;

fn open(root: &Path, params: Params) -> Chainstate {
    crate::test_chain::open_chainstate(root, params)
}

/// What the source node gives: the blocks, the snapshot at the base (its
/// coins, to forge from), the entry that proves it, and the coins' stats
/// at the top.
struct Source {
    blocks: Vec<Vec<u8>>,
    coins_at_base: Vec<(ibex_primitives::OutPoint, crate::Coin)>,
    entry: AssumeUtxoEntry,
    stats_at_top: TxOutSetStats,
}

fn source(root: &Path) -> Source {
    let (blocks, mut node) =
        crate::test_chain::generated_chain_and_chainstate(root, 11, BLOCKS_ABOVE_GENESIS);
    node.set_stop_at_height(Some(BASE_HEIGHT));
    for bytes in &blocks {
        accept(&mut node, bytes);
    }
    node.activate_best_chain().unwrap();
    let (base_hash, height) = node.tip().unwrap();
    assert_eq!(height, BASE_HEIGHT);
    let view = node.cache().coin_set_view();
    let coins_at_base: Vec<_> = view.coins().map(Result::unwrap).collect();
    let stats = node.txoutset_stats(HASH_TYPE).unwrap();
    let base = node.index().get(&base_hash).unwrap();
    let entry = AssumeUtxoEntry {
        height: BASE_HEIGHT,
        block_hash: base_hash,
        hash_serialized: stats.hash.unwrap(),
        chain_transaction_count: node.index().entry(base).chain_transaction_count,
    };
    node.set_stop_at_height(None);
    node.activate_best_chain().unwrap();
    assert_eq!(node.tip().unwrap().1, BLOCKS_ABOVE_GENESIS);
    let stats_at_top = node.txoutset_stats(HASH_TYPE).unwrap();
    Source { blocks, coins_at_base, entry, stats_at_top }
}

/// A snapshot file of `coins` based on `base`.
fn snapshot_file(path: &Path, base: BlockHash, coins: &[(ibex_primitives::OutPoint, crate::Coin)]) {
    let metadata = SnapshotMetadata {
        message_start: Params::regtest().message_start,
        base_block: base,
        coin_count: coins.len() as u64,
    };
    let file = std::fs::File::create(path).unwrap();
    let mut writer = SnapshotWriter::new(std::io::BufWriter::new(file), &metadata).unwrap();
    for (outpoint, coin) in coins {
        writer.add(outpoint, coin).unwrap();
    }
    writer.finish().unwrap();
}

fn headers(blocks: &[Vec<u8>]) -> Vec<Header> {
    let params = Params::regtest();
    let mut buffers = BlockBuffers::default();
    blocks
        .iter()
        .map(|bytes| {
            *PreparedBlock::prepare(bytes.clone(), None, &params, &mut buffers).unwrap().header()
        })
        .collect()
}

/// Loads the snapshot at `path` into the node's snapshot directory, off
/// the engine, as `loadtxoutset` does.
fn load(node: &Chainstate, root: &Path, path: &Path, entry: &AssumeUtxoEntry) -> PathBuf {
    let directory = snapshot_chainstate_directory(&root.join("chainstate"));
    let database = CoinsDatabase::open(&directory, &DatabaseOptions::default()).unwrap();
    let file = std::fs::File::open(path).unwrap();
    let length = file.metadata().unwrap().len();
    let reader =
        SnapshotReader::new(file, node.params(), Some(length), Height::new(entry.height)).unwrap();
    load_snapshot(reader, &database, entry, |_| {}).unwrap();
    directory
}

/// A node whose params hold `entry`, with every header and the genesis
/// block, its snapshot chainstate activated from `path`.
fn node_from_snapshot(
    root: &Path,
    source: &Source,
    entry: AssumeUtxoEntry,
    path: &Path,
) -> Chainstate {
    let mut params = Params::regtest();
    params.assumeutxo.push(entry);
    let mut node = open(root, params);
    node.ensure_genesis().unwrap();
    let missing = node.check_snapshot_base(&entry.block_hash).unwrap_err();
    assert!(matches!(missing, SnapshotActivationError::BaseHeaderMissing { .. }), "{missing}");
    node.offer_headers(&headers(&source.blocks)).unwrap();
    node.check_snapshot_base(&entry.block_hash).unwrap();
    let directory = load(&node, root, path, &entry);
    let base = node.activate_snapshot(&directory, &entry.block_hash).unwrap();
    assert_eq!(node.tip(), Some((entry.block_hash, BASE_HEIGHT)));
    assert_eq!(node.index().entry(base).height, BASE_HEIGHT);
    assert_eq!(node.background_tip().map(|(_, height)| height), Some(0));
    let published = node.reader().snapshot().assumeutxo.unwrap();
    assert_eq!((published.base_hash, published.base_height), (entry.block_hash, BASE_HEIGHT));
    assert_eq!(published.background_tip.map(|(_, height)| height), Some(0));
    assert!(!published.validated);
    let again = node.check_snapshot_base(&entry.block_hash).unwrap_err();
    assert!(matches!(again, SnapshotActivationError::AlreadyActive));
    node
}

/// Offers the blocks above the base: the snapshot chainstate follows them.
fn follow_tip(node: &mut Chainstate, blocks: &[Vec<u8>]) {
    for bytes in &blocks[BASE_HEIGHT as usize + 1..] {
        accept(node, bytes);
    }
    node.activate_best_chain().unwrap();
    assert_eq!(node.tip().unwrap().1, BLOCKS_ABOVE_GENESIS);
}

#[test]
fn a_loaded_snapshot_follows_the_tip_and_the_background_proves_it() {
    let root = tempfile::tempdir().unwrap();
    let source = source(&root.path().join("source"));
    let path = root.path().join("utxo.dat");
    snapshot_file(&path, source.entry.block_hash, &source.coins_at_base);
    let node_root = root.path().join("node");
    let mut node = node_from_snapshot(&node_root, &source, source.entry, &path);
    // `-dbcache` is shared as Core shares it: 95% to the snapshot
    // chainstate while it catches up, then 95% to the background one.
    let total = node.shared.options.memory.coins_bytes;
    let cache_shares = |node: &Chainstate| {
        let background =
            node.background.as_ref().map(|chain| chain.connector.cache().cache_bytes_max());
        (node.cache().cache_bytes_max(), background)
    };
    assert_eq!(cache_shares(&node), (total - total / 20, Some(total / 20)));
    follow_tip(&mut node, &source.blocks);
    assert_eq!(node.txoutset_stats(HASH_TYPE).unwrap(), source.stats_at_top);
    // Without the blocks below the base the background has nothing to do.
    assert!(!node.advance_background(4).unwrap());
    assert_eq!(cache_shares(&node), (total / 20, Some(total - total / 20)));
    assert_eq!(node.background_tip().map(|(_, height)| height), Some(0));

    // A restart in the middle: both chainstates come back.
    node.flush(crate::FlushReason::Shutdown, crate::coins::cache::FlushMode::KeepCoins).unwrap();
    drop(node);
    let mut params = Params::regtest();
    params.assumeutxo.push(source.entry);
    let mut node = open(&node_root, params.clone());
    assert_eq!(node.tip().unwrap().1, BLOCKS_ABOVE_GENESIS);
    assert_eq!(
        node.snapshot_base().map(|(_, height, validated)| (height, validated)),
        Some((BASE_HEIGHT, false))
    );
    assert_eq!(node.background_tip().map(|(_, height)| height), Some(0));

    // The blocks below the base arrive, newest first: the background
    // chainstate connects them, a few at a time, and proves the snapshot.
    for bytes in source.blocks[1..=BASE_HEIGHT as usize].iter().rev() {
        accept(&mut node, bytes);
    }
    let base = node.shared.index.get(&source.entry.block_hash).unwrap();
    let mut steps = 0;
    let mut steps_reading_on = 0;
    while node.advance_background(4).unwrap() {
        steps += 1;
        assert!(steps < 100, "the background never finished");
        // A step that stopped at its bound keeps reading ahead for the next.
        let background = node.background.as_ref().unwrap();
        let next_height =
            background.chain.tip().map_or(0, |tip| node.shared.index.entry(tip).height + 1);
        if next_height <= BASE_HEIGHT {
            let next = node.shared.index.ancestor(base, next_height).unwrap();
            steps_reading_on += usize::from(background.connector.reads_ahead(next_height, next));
        }
    }
    assert!(steps >= (BASE_HEIGHT / 4) as usize, "{steps} steps of at most 4 blocks");
    assert!(steps_reading_on >= (BASE_HEIGHT / 4) as usize - 1, "{steps_reading_on} of {steps}");
    assert_eq!(node.snapshot_base().map(|(_, _, validated)| validated), Some(true));
    assert_eq!(node.background_tip(), None, "the background chainstate is dropped");
    assert_eq!(cache_shares(&node), (total, None));
    let published = node.reader().snapshot().assumeutxo.unwrap();
    assert!(published.validated && published.background_tip.is_none());
    assert!(!node_root.join("chainstate").exists(), "its directory is deleted");
    assert_eq!(node.tip().unwrap().1, BLOCKS_ABOVE_GENESIS);
    assert_eq!(node.txoutset_stats(HASH_TYPE).unwrap(), source.stats_at_top);

    // The next start makes the snapshot's directory the chainstate.
    node.flush(crate::FlushReason::Shutdown, crate::coins::cache::FlushMode::KeepCoins).unwrap();
    drop(node);
    let node = open(&node_root, params);
    assert!(!snapshot_chainstate_directory(&node_root.join("chainstate")).exists());
    assert_eq!(node.snapshot_base(), None);
    assert_eq!(node.tip().unwrap().1, BLOCKS_ABOVE_GENESIS);
    assert_eq!(node.txoutset_stats(HASH_TYPE).unwrap(), source.stats_at_top);
    assert_eq!(
        node.verify_last_blocks(BLOCKS_ABOVE_GENESIS, 2).unwrap().stopped_at_snapshot_base,
        None
    );
}

#[test]
fn a_forged_snapshot_fails_background_validation_and_the_node_falls_back() {
    let root = tempfile::tempdir().unwrap();
    let source = source(&root.path().join("source"));
    // One coin's amount changed, and an entry forged to match it: the load
    // takes it, only the background validation can tell.
    let mut forged = source.coins_at_base.clone();
    let (_, coin) = forged.last_mut().unwrap();
    let amount = Amount::from_sat(coin.amount().to_sat() + 1).unwrap();
    *coin =
        crate::Coin::new(amount, coin.script_pubkey(), coin.height(), coin.is_coinbase()).unwrap();
    let forged_stats = crate::stats_of_coins(forged.iter().cloned().map(Ok), HASH_TYPE).unwrap();
    let mut entry = source.entry;
    entry.hash_serialized = forged_stats.hash.unwrap();
    let path = root.path().join("forged.dat");
    snapshot_file(&path, entry.block_hash, &forged);
    let node_root = root.path().join("node");
    let mut node = node_from_snapshot(&node_root, &source, entry, &path);
    follow_tip(&mut node, &source.blocks);
    for bytes in &source.blocks[1..=BASE_HEIGHT as usize] {
        accept(&mut node, bytes);
    }
    let failure = loop {
        match node.advance_background(8) {
            Ok(true) => continue,
            Ok(false) => panic!("the forged snapshot was accepted"),
            Err(error) => break error,
        }
    };
    assert!(
        matches!(
            failure,
            ChainstateError::SnapshotValidationFailed { snapshot_height: 40, base_height: 25 }
        ),
        "{failure}"
    );
    assert!(failure.to_string().contains("resetting the chain height from 40 to 25"), "{failure}");
    // The validated chainstate is active again, at the base.
    assert_eq!(node.tip(), Some((entry.block_hash, BASE_HEIGHT)));
    assert_eq!(node.snapshot_base(), None);
    assert_eq!(node.background_tip(), None);
    assert_eq!(node.reader().snapshot().assumeutxo, None);
    let snapshot_directory = snapshot_chainstate_directory(&node_root.join("chainstate"));
    assert!(!snapshot_directory.exists());
    let mut invalid = snapshot_directory.into_os_string();
    invalid.push("_INVALID");
    assert!(PathBuf::from(invalid).exists(), "kept aside for diagnosis");
    drop(node);

    // The restart syncs on from the base without the snapshot.
    let mut params = Params::regtest();
    params.assumeutxo.push(entry);
    let mut node = open(&node_root, params);
    assert_eq!(node.tip().unwrap().1, BASE_HEIGHT);
    assert_eq!(node.snapshot_base(), None);
    node.activate_best_chain().unwrap();
    assert_eq!(node.tip().unwrap().1, BLOCKS_ABOVE_GENESIS);
    assert_eq!(node.txoutset_stats(HASH_TYPE).unwrap(), source.stats_at_top);
}

#[test]
fn a_load_that_did_not_finish_is_removed_at_the_next_start() {
    let root = tempfile::tempdir().unwrap();
    let directory = snapshot_chainstate_directory(&root.path().join("chainstate"));
    CoinsDatabase::open(&directory, &DatabaseOptions::default()).unwrap();
    assert!(directory.exists());
    let node = open(root.path(), Params::regtest());
    assert!(!directory.exists(), "no base_blockhash: an unfinished load");
    assert_eq!(node.snapshot_base(), None);
}
