#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use ibex_primitives::hints::{HintNumbering, HintsFile, HintsVersion};
use ibex_primitives::{BlockBuffers, OutPoint, ParsedBlock};

use super::{build_hints, build_hints_on, Spread};
use crate::engine::read_api::coin_set::chain_to_height;
use crate::engine::read_api::CoinSetTargetError;
use crate::snapshot::roll_back_to_target;
use crate::test_chain::{accept, generated_chain_and_chainstate};

/// Blocks above genesis: enough for coinbases to mature and be spent.
const CHAIN_BLOCKS: u32 = 130;

/// The hints of `blocks` (genesis first) for `terminal_height`, by a
/// forward replay: every numbered output enters a map, every input leaves
/// it; what is left at the terminal height is unspent there.
fn replayed_hints(blocks: &[Vec<u8>], terminal_height: u32) -> Vec<Vec<u32>> {
    let mut unspent: HashMap<OutPoint, (u32, u32)> = HashMap::new();
    let mut buffers = BlockBuffers::default();
    for (height, bytes) in (1u32..=terminal_height).zip(&blocks[1..]) {
        let parsed = ParsedBlock::parse(bytes.clone(), &mut buffers).unwrap();
        let numbering = HintNumbering::for_block(height, &parsed.hash());
        let mut number = 0u32;
        for ((index, transaction), txid) in
            parsed.view().transactions().enumerate().zip(parsed.txids())
        {
            if index > 0 {
                for input in transaction.inputs() {
                    // Every input spends a numbered output (nothing spends
                    // an unspendable one).
                    assert!(unspent.remove(&input.previous_output()).is_some());
                }
            }
            for (vout, output) in (0u32..).zip(transaction.outputs()) {
                if numbering.numbers(index, output) {
                    unspent.insert(OutPoint { txid: *txid, vout }, (height, number));
                    number += 1;
                }
            }
        }
        buffers = parsed.into_parts().1;
    }
    let mut hints = vec![Vec::new(); terminal_height as usize];
    for (height, number) in unspent.into_values() {
        hints[height as usize - 1].push(number);
    }
    for indices in &mut hints {
        indices.sort_unstable();
    }
    hints
}

#[test]
fn hints_at_the_tip_and_below_it_match_a_replay_of_the_chain() {
    let root = tempfile::tempdir().unwrap();
    let (blocks, mut chainstate) = generated_chain_and_chainstate(root.path(), 11, CHAIN_BLOCKS);
    for bytes in &blocks {
        accept(&mut chainstate, bytes);
    }
    chainstate.activate_best_chain().unwrap();
    assert_eq!(chainstate.tip().unwrap().1, CHAIN_BLOCKS);
    for terminal_height in [CHAIN_BLOCKS, CHAIN_BLOCKS - 9] {
        let expected = replayed_hints(&blocks, terminal_height);
        let mut source = chain_to_height(&chainstate, Some(terminal_height)).unwrap();
        assert_eq!(source.blocks.len() as u32, terminal_height);
        roll_back_to_target(&chainstate.reader(), &mut source.at).unwrap();
        for version in [HintsVersion::EliasFano, HintsVersion::GapList] {
            let written =
                build_hints(&chainstate.reader(), &source.at.view, &source.blocks, version)
                    .unwrap();
            let expected_unspent: usize = expected.iter().map(Vec::len).sum();
            assert_eq!(written.unspent_count, expected_unspent as u64);
            // The chain spends: the test would prove little otherwise.
            assert!(written.unspent_count + 100 < written.outputs_numbered, "{written:?}");
            // Any spread over threads and batches writes the same file.
            for (threads, batch_blocks) in [(1, 130), (3, 7), (2, 1)] {
                let spread = Spread { threads, batch_blocks };
                let reader = chainstate.reader();
                let other =
                    build_hints_on(&reader, &source.at.view, &source.blocks, version, spread);
                assert_eq!(other.unwrap(), written, "{threads} threads, batches of {batch_blocks}");
            }
            let file = HintsFile::parse(written.bytes, Some(terminal_height)).unwrap();
            assert_eq!(file.version(), version);
            let mut indices = Vec::new();
            for (height, expected_indices) in (1u32..).zip(&expected) {
                file.unspent_indices(height, &mut indices).unwrap();
                assert_eq!(&indices, expected_indices, "block {height} at {terminal_height}");
            }
        }
    }
    assert_eq!(
        chain_to_height(&chainstate, Some(CHAIN_BLOCKS + 1)).unwrap_err(),
        CoinSetTargetError::HeightAboveTip { height: CHAIN_BLOCKS + 1, tip_height: CHAIN_BLOCKS }
    );
}
