//! Tests of lower modules that need a whole engine as their fixture (the
//! block read-ahead over a chain's stored blocks, the metrics the engine
//! publishes): here, above both, so those modules and their own tests never
//! reach up into the engine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::block_read_ahead::{BlockFiles, BlockReadAhead, BlockToRead};
use crate::engine::Chainstate;
use crate::error::ChainstateError;
use crate::metrics::QueueGauge;
use crate::test_chain::accepted_chain;

/// The stored blocks of `chainstate`'s index at heights 0..=5.
fn stored_blocks(chainstate: &Chainstate, blocks: &[Vec<u8>]) -> Vec<BlockToRead> {
    let index = chainstate.index();
    blocks
        .iter()
        .map(|bytes| {
            let hash = ibex_primitives::BlockView::parse(bytes).unwrap().block_hash();
            let id = index.get(&hash).unwrap();
            let position = index.entry(id).block_position.unwrap();
            BlockToRead { id, hash, position }
        })
        .collect()
}

fn files(chainstate: &Chainstate) -> BlockFiles {
    BlockFiles {
        directory: chainstate.blocks_directory().to_path_buf(),
        magic: chainstate.params().message_start,
        obfuscation: *chainstate.obfuscation(),
    }
}

#[test]
fn reads_blocks_in_order_within_its_byte_budget() {
    let root = tempfile::tempdir().unwrap();
    let (blocks, mut chainstate) = accepted_chain(root.path());
    chainstate.flush(crate::FlushReason::Shutdown, crate::FlushMode::KeepCoins).unwrap();
    let to_read = stored_blocks(&chainstate, &blocks);
    // A budget of one byte: one block at a time, never a deadlock.
    let gauge = Arc::new(QueueGauge::default());
    let mut read_ahead =
        BlockReadAhead::start(files(&chainstate), to_read.clone(), 1, gauge.clone()).unwrap();
    // Asked out of order, it gives nothing and keeps the block.
    assert!(read_ahead.take(to_read[1].id).is_none());
    // The block kept is held in the budget: the gauge counts it.
    assert_eq!(gauge.blocks(), 1);
    assert_eq!(gauge.bytes(), blocks[0].len() as u64);
    for (block, bytes) in to_read.iter().zip(&blocks) {
        let read = read_ahead.take(block.id).unwrap().unwrap();
        assert_eq!(read.hash(), block.hash);
        assert_eq!(read.bytes(), &bytes[..]);
        assert_eq!(read.position, Some(block.position));
    }
    // Past the end: nothing.
    assert!(read_ahead.take(to_read[0].id).is_none());
    drop(read_ahead);
    assert_eq!((gauge.bytes(), gauge.blocks()), (0, 0));
}

#[test]
fn a_file_holding_another_block_is_an_error_and_stops_the_reading() {
    let root = tempfile::tempdir().unwrap();
    let (blocks, mut chainstate) = accepted_chain(root.path());
    chainstate.flush(crate::FlushReason::Shutdown, crate::FlushMode::KeepCoins).unwrap();
    let mut to_read = stored_blocks(&chainstate, &blocks);
    // The index says block 2 is where block 3 is.
    to_read[2].position = to_read[3].position;
    let expected = to_read[2].hash;
    let mut read_ahead =
        BlockReadAhead::start(files(&chainstate), to_read.clone(), 1 << 20, Arc::default())
            .unwrap();
    assert!(read_ahead.take(to_read[0].id).unwrap().is_ok());
    assert!(read_ahead.take(to_read[1].id).unwrap().is_ok());
    let error = read_ahead.take(to_read[2].id).unwrap().unwrap_err();
    assert!(
        matches!(error, ChainstateError::WrongBlockInFile { expected: named, .. } if named == expected),
        "{error}"
    );
    assert!(read_ahead.take(to_read[3].id).is_none(), "the thread stops at a failure");
}

#[test]
fn the_engine_publishes_its_counters_levels_and_flushes() {
    let root = tempfile::tempdir().unwrap();
    let (blocks, mut chainstate) = accepted_chain(root.path());
    let metrics = chainstate.metrics();
    assert_eq!(metrics.read().tip_height, None, "nothing connected yet");
    let top = u32::try_from(blocks.len() - 1).unwrap();
    chainstate.activate_best_chain().unwrap();
    let reading = metrics.read();
    let statistics = chainstate.statistics();
    assert_eq!(reading.tip_height, Some(top));
    assert_eq!(reading.best_header_height, Some(top));
    assert_eq!(reading.blocks_connected, statistics.blocks_connected);
    assert_eq!(reading.transactions_connected, statistics.transactions_connected);
    assert_eq!(reading.inputs_connected, statistics.inputs_connected);
    assert_eq!(reading.scripts_checked, statistics.scripts_checked);
    assert!(reading.transactions_connected > u64::from(top));
    assert_eq!(reading.cache_bytes, chainstate.cache().memory_bytes() as u64);
    assert_eq!(reading.cache_coins, chainstate.cache().entry_count() as u64);
    assert_eq!(reading.cache_bytes_max, 1 << 20);
    assert_eq!(reading.script_pipeline_blocks, 0, "activation settles every block");
    assert_eq!(reading.coin_reads, statistics.coin_reads);
    assert_eq!(reading.coin_reads.total_spends(), reading.inputs_connected);
    let io = metrics.coins_database_io().expect("the chainstate is open");
    assert_eq!(io.files_per_level.len(), crate::DATABASE_LEVELS);
    assert_eq!((reading.flushes, metrics.flush_durations.read().count), (0, 0));
    chainstate.flush(crate::FlushReason::Shutdown, crate::FlushMode::KeepCoins).unwrap();
    let reading = metrics.read();
    assert_eq!(reading.flushes, 1);
    assert_eq!(metrics.flush_durations.read().count, 1);
    assert!(reading.coins_database_written_bytes > 0);
    let io = metrics.coins_database_io().unwrap();
    assert_eq!(io.user_written_bytes, reading.coins_database_written_bytes);
    drop(chainstate);
    assert_eq!(metrics.coins_database_io(), None, "nothing kept open");
}
