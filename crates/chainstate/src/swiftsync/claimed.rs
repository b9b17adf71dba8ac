//! Spent coins as a peer claims them for a block (BIP 455 `bspent`), and
//! their completion with the coins the request left out (`super::recent`):
//! one coin per input after the coinbase, in block order, for the block's
//! checks and the aggregate.
//!
//! What is checked here, the peer blamed when it fails (an honest peer
//! answers exactly what was asked): the indices name inputs of the block,
//! every coin sent says it was created below the cutoff, and every input
//! without one spends an output of a block from the cutoff up or of an
//! earlier transaction of the block itself. A coin sent whose height is a
//! lie is not looked up here: its hash differs from the created output's,
//! and the aggregate shows it at the terminal height.

use std::collections::HashSet;
use std::sync::Arc;

use foldhash::fast::SeedableRandomState;
use ibex_primitives::{BlockHash, BlockView, OutPoint, SpentCoinBuf, Txid};

use super::recent::RecentBlock;
use super::SwiftSyncFailure;
use crate::coins::hasher::salted_hash_builder;

/// Coins a peer claimed for the inputs of a block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClaimedSpentCoins {
    /// The request's cutoff: only coins created below this height were
    /// asked for (0: every coin).
    pub cutoff_height: u32,
    /// Each coin with its input's index among the block's inputs after the
    /// coinbase, the indices increasing.
    pub coins: Vec<(u32, SpentCoinBuf)>,
}

impl ClaimedSpentCoins {
    /// Every coin, one per input in order (a request with no cutoff).
    pub fn every(coins: Vec<SpentCoinBuf>) -> ClaimedSpentCoins {
        ClaimedSpentCoins { cutoff_height: 0, coins: (0..).zip(coins).collect() }
    }
}

/// How claimed coins fail to fit their request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClaimMismatch {
    /// No coin sent for an input whose coin was created below the cutoff
    /// (or was never created).
    #[error("no coin sent, and none of the blocks from the cutoff up created it")]
    Left,
    /// A coin sent that says it was created at or above the cutoff.
    #[error("a coin sent that was created at or above the cutoff")]
    NotAsked,
    /// Indices beyond the block's inputs, or not increasing.
    #[error("an index the block's inputs do not have")]
    NoSuchInput,
}

/// One coin per input of `block` (at `height`, `hash`, with `txids`)
/// after the coinbase: `claimed`'s, and for the inputs it left out the
/// outputs of the block's earlier transactions (`this_block`, its own
/// outputs) or of `recent` (the blocks from its cutoff to `height - 1`,
/// newest first).
pub(crate) fn complete_claimed(
    block: &BlockView<'_>,
    txids: &[Txid],
    (height, hash): (u32, BlockHash),
    claimed: ClaimedSpentCoins,
    (this_block, recent): (&RecentBlock, &[Arc<RecentBlock>]),
) -> Result<Vec<SpentCoinBuf>, SwiftSyncFailure> {
    let mismatch = |input: u32, mismatch: ClaimMismatch| SwiftSyncFailure::SpentCoinsClaim {
        height,
        hash,
        input,
        mismatch,
    };
    let input_count = block.input_count().saturating_sub(1);
    let cutoff = claimed.cutoff_height;
    if cutoff == 0 {
        // Every coin was asked for: the accounting checks the count.
        return Ok(claimed.coins.into_iter().map(|(_, coin)| coin).collect());
    }
    let mut sent = claimed.coins.into_iter().peekable();
    let mut coins = Vec::with_capacity(input_count);
    // Earlier transactions of this block, by id: their outputs may be
    // spent here (created at `height`, above any cutoff).
    let mut earlier = HashSet::with_capacity_and_hasher(txids.len(), salted_hash_builder());
    let mut input: u32 = 0;
    for (position, transaction) in block.transactions().enumerate().skip(1) {
        if let Some(txid) = txids.get(position - 1) {
            earlier.insert(*txid);
        }
        for spending in transaction.inputs() {
            let outpoint = spending.previous_output();
            match sent.next_if(|(index, _)| *index <= input) {
                Some((index, _)) if index < input => {
                    return Err(mismatch(index, ClaimMismatch::NoSuchInput))
                }
                Some((_, coin)) if coin.height.to_u32() >= cutoff => {
                    return Err(mismatch(input, ClaimMismatch::NotAsked))
                }
                Some((_, coin)) => coins.push(coin),
                None => match recent_coin(&outpoint, &earlier, this_block, recent) {
                    Some(Some(coin)) => coins.push(coin),
                    Some(None) => return Err(SwiftSyncFailure::ValueOutOfRange { height, hash }),
                    None => return Err(mismatch(input, ClaimMismatch::Left)),
                },
            }
            input += 1;
        }
    }
    if let Some((index, _)) = sent.next() {
        return Err(mismatch(index, ClaimMismatch::NoSuchInput));
    }
    Ok(coins)
}

/// The coin `outpoint` names among the outputs of the earlier
/// transactions of this block and of `recent`, newest first.
fn recent_coin(
    outpoint: &OutPoint,
    earlier: &HashSet<Txid, SeedableRandomState>,
    this_block: &RecentBlock,
    recent: &[Arc<RecentBlock>],
) -> Option<Option<SpentCoinBuf>> {
    if earlier.contains(&outpoint.txid) {
        return this_block.coin(outpoint);
    }
    recent.iter().find_map(|block| block.coin(outpoint))
}
