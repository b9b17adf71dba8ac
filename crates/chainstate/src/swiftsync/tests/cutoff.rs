//! The fully validating mode with BIP 455's cutoff: coins created in the
//! ten blocks before a block (or in it) are not sent; the pass takes them
//! from the blocks, and refuses claims that do not fit the request.

use super::*;
use crate::swiftsync::{spent_coins_cutoff, ClaimMismatch};

/// What an honest peer answers for block `height` asked with its cutoff.
fn answered(height: u32, coins: &[SpentCoinBuf]) -> ClaimedSpentCoins {
    let cutoff_height = spent_coins_cutoff(height);
    let below = (0..).zip(coins.iter().cloned());
    ClaimedSpentCoins {
        cutoff_height,
        coins: below.filter(|(_, coin)| coin.height.to_u32() < cutoff_height).collect(),
    }
}

struct CutoffChain {
    root: tempfile::TempDir,
    blocks: Vec<Vec<u8>>,
    headers: Vec<ibex_primitives::Header>,
    expected: String,
    hints: Vec<u8>,
    /// Blocks 1 to the terminal height: hash, every coin, the answer.
    coins: Vec<(BlockHash, Vec<SpentCoinBuf>, ClaimedSpentCoins)>,
}

impl CutoffChain {
    fn new() -> CutoffChain {
        let chain = super::resume::ResumeChain::with_blocks(TERMINAL_HEIGHT + 40);
        let coins = (1..)
            .zip(chain.coins)
            .map(|(height, (hash, spent))| {
                let answer = answered(height, &spent);
                (hash, spent, answer)
            })
            .collect();
        let (root, blocks, headers) = (chain.root, chain.blocks, chain.headers);
        CutoffChain { root, blocks, headers, expected: chain.expected, hints: chain.hints, coins }
    }

    fn plan(&self) -> SwiftSyncPlan {
        SwiftSyncPlan::fully_validating(HintsFile::parse(self.hints.clone(), None).unwrap())
    }
}

#[test]
fn coins_left_out_by_the_cutoff_come_from_the_blocks_even_stored_after_them() {
    let chain = CutoffChain::new();
    let left_out: usize =
        chain.coins.iter().map(|(_, every, answer)| every.len() - answer.coins.len()).sum();
    let sent: usize = chain.coins.iter().map(|(_, _, answer)| answer.coins.len()).sum();
    assert!(left_out > 50 && sent > 50, "the chain spends young and old coins: {left_out}, {sent}");

    // Every header, the blocks to 50, every block's coins; then the rest
    // of the blocks from the top down: a block and its coins wait for the
    // blocks below them to be stored.
    let (mut node, events) = opened_with(&chain.root.path().join("swift"), None);
    node.offer_headers(&chain.headers).unwrap();
    for bytes in &chain.blocks[..=50] {
        accept(&mut node, bytes);
    }
    node.set_swiftsync(chain.plan());
    node.activate_best_chain().unwrap();
    for (hash, _, answer) in &chain.coins {
        assert!(node.swiftsync_spent_coins(hash, answer.clone(), FIRST_PEER).unwrap());
    }
    for bytes in chain.blocks[51..].iter().rev() {
        accept(&mut node, bytes);
        node.activate_best_chain().unwrap();
    }
    let seen = events.lock().unwrap().clone();
    assert_eq!(refusals(&events), []);
    assert!(matches!(seen.last(), Some(SwiftSyncEvent::Completed { .. })), "{seen:?}");
    assert_eq!(node.tip().unwrap().1, TERMINAL_HEIGHT + 40);
    assert_eq!(serialized_hash(&node), chain.expected);
}

#[test]
fn claims_that_do_not_fit_the_cutoff_are_refused_and_their_sender_blamed() {
    let chain = CutoffChain::new();
    // A block with a coin sent and one left out.
    let (at, (hash, every, answer)) = chain
        .coins
        .iter()
        .enumerate()
        .find(|(_, (_, every, answer))| {
            !answer.coins.is_empty() && answer.coins.len() < every.len()
        })
        .unwrap();
    let height = at as u32 + 1;
    let first_left =
        (0..).find(|index| answer.coins.iter().all(|(sent, _)| sent != index)).unwrap();
    let mut lies = Vec::new();
    // A coin created below the cutoff left out.
    let mut left = answer.clone();
    let (dropped, _) = left.coins.remove(0);
    lies.push((left, dropped, ClaimMismatch::Left));
    // A coin created at or above it sent.
    let mut not_asked = answer.clone();
    not_asked.coins.push((first_left, every[first_left as usize].clone()));
    not_asked.coins.sort_by_key(|(index, _)| *index);
    lies.push((not_asked, first_left, ClaimMismatch::NotAsked));
    // An index beyond the block's inputs.
    let mut beyond = answer.clone();
    let past = every.len() as u32;
    beyond.coins.push((past, every[0].clone()));
    lies.push((beyond, past, ClaimMismatch::NoSuchInput));

    let (mut node, events) = opened_with(&chain.root.path().join("lies"), None);
    for bytes in &chain.blocks {
        accept(&mut node, bytes);
    }
    node.set_swiftsync(chain.plan());
    node.activate_best_chain().unwrap();
    for (other, _, answer) in &chain.coins {
        if other != hash {
            assert!(node.swiftsync_spent_coins(other, answer.clone(), FIRST_PEER).unwrap());
        }
    }
    for (peer, (lie, input, mismatch)) in (2..).zip(&lies[..2]) {
        let source = BlockSource::Peer(peer);
        assert!(node.swiftsync_spent_coins(hash, lie.clone(), source).unwrap());
        node.activate_best_chain().unwrap();
        let refused = refusals(&events);
        let expected = SwiftSyncFailure::SpentCoinsClaim {
            height,
            hash: *hash,
            input: *input,
            mismatch: *mismatch,
        };
        assert_eq!(refused.last(), Some(&(*hash, source, expected)), "{refused:?}");
        assert_eq!(node.tip().unwrap().1, 0, "the block waits for other coins");
    }
    // A cutoff further back than this node asks with is not taken.
    let mut far = answer.clone();
    far.cutoff_height = spent_coins_cutoff(height) - 1;
    assert!(!node.swiftsync_spent_coins(hash, far, BlockSource::Peer(9)).unwrap());
    // The honest answer completes the proof (a third lie would end it).
    assert!(node.swiftsync_spent_coins(hash, answer.clone(), BlockSource::Peer(8)).unwrap());
    node.activate_best_chain().unwrap();
    assert!(matches!(events.lock().unwrap().last(), Some(SwiftSyncEvent::Completed { .. })));
    assert_eq!(serialized_hash(&node), chain.expected);
    drop(node);

    // The third lie, on its own.
    let (mut node, events) = opened_with(&chain.root.path().join("beyond"), None);
    for bytes in &chain.blocks {
        accept(&mut node, bytes);
    }
    node.set_swiftsync(chain.plan());
    node.activate_best_chain().unwrap();
    let (lie, input, mismatch) = &lies[2];
    assert!(node.swiftsync_spent_coins(hash, lie.clone(), FIRST_PEER).unwrap());
    // Every other block's coins: with all blocks handed over, the pass
    // waits for them to settle, so the refusal is in.
    for (other, _, answer) in &chain.coins {
        if other != hash {
            assert!(node.swiftsync_spent_coins(other, answer.clone(), FIRST_PEER).unwrap());
        }
    }
    node.activate_best_chain().unwrap();
    let expected = SwiftSyncFailure::SpentCoinsClaim {
        height,
        hash: *hash,
        input: *input,
        mismatch: *mismatch,
    };
    assert_eq!(refusals(&events), [(*hash, FIRST_PEER, expected)]);
}
