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

use std::sync::Arc;

use ibex_primitives::{BlockHash, BlockView, OutPoint, SpentCoinBuf};

use super::recent::RecentBlock;
use super::SwiftSyncFailure;

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

/// One coin per input of `block` (at `height`, `hash`)
/// after the coinbase: `claimed`'s, and for the inputs it left out the
/// outputs of the block's earlier transactions (`this_block`, its own
/// outputs) or of `recent` (the blocks from its cutoff to `height - 1`,
/// newest first).
pub(crate) fn complete_claimed(
    block: &BlockView<'_>,
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
        // Every coin was asked for, in input order: the accounting checks
        // the count. Indices increase (the fetch refuses others), so the
        // first that is not its position skips that input, or lies past
        // the block's inputs.
        let skipped = claimed.coins.iter().zip(0u32..).find(|((index, _), at)| index != at);
        if let Some(((index, _), at)) = skipped {
            return Err(if (*index as usize) < input_count {
                mismatch(at, ClaimMismatch::Left)
            } else {
                mismatch(*index, ClaimMismatch::NoSuchInput)
            });
        }
        return Ok(claimed.coins.into_iter().map(|(_, coin)| coin).collect());
    }
    let mut sent = claimed.coins.into_iter().peekable();
    let mut coins = Vec::with_capacity(input_count);
    // The block's outputs numbered before the spending transaction's: an
    // earlier transaction's may be spent here (created at `height`, above
    // any cutoff).
    let mut outputs_before: u32 = 0;
    let mut input: u32 = 0;
    for (position, transaction) in block.transactions().enumerate() {
        let outputs_from = outputs_before;
        outputs_before += transaction.outputs().len() as u32;
        if position == 0 {
            continue;
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
                None => match recent_coin(&outpoint, outputs_from, this_block, recent) {
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

/// The coin `outpoint` names among the outputs of this block numbered
/// below `outputs_before` and of `recent`, newest first.
fn recent_coin(
    outpoint: &OutPoint,
    outputs_before: u32,
    this_block: &RecentBlock,
    recent: &[Arc<RecentBlock>],
) -> Option<Option<SpentCoinBuf>> {
    this_block
        .coin_before(outpoint, outputs_before)
        .or_else(|| recent.iter().find_map(|block| block.coin(outpoint)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ibex_primitives::owned::{Block, Transaction, TxInput, TxOutput};
    use ibex_primitives::{Amount, BlockBuffers, Header, Height, ParsedBlock, Txid};

    use super::*;

    const HEIGHT: u32 = 100;

    fn spending(outpoints: &[OutPoint], outputs: usize) -> Transaction {
        let input = |previous_output: OutPoint| TxInput {
            previous_output,
            script_sig: vec![0x51],
            sequence: u32::MAX,
            witness: Vec::new(),
        };
        Transaction {
            version: 2,
            inputs: outpoints.iter().copied().map(input).collect(),
            outputs: (0..outputs)
                .map(|at| TxOutput {
                    value: 1_000 + at as i64,
                    script_pubkey: vec![0x51, at as u8],
                })
                .collect(),
            lock_time: 0,
        }
    }

    fn old(byte: u8) -> OutPoint {
        OutPoint { txid: Txid([byte; 32]), vout: 0 }
    }

    fn old_coin() -> SpentCoinBuf {
        SpentCoinBuf {
            value: Amount::from_sat(5).unwrap(),
            script_pubkey: vec![0x51],
            height: Height::new(50),
            is_coinbase: false,
        }
    }

    /// Completes the coins of a block of `transactions` after a coinbase,
    /// the old coins sent for inputs `sent`.
    fn complete(
        transactions: Vec<Transaction>,
        sent: &[u32],
    ) -> Result<Vec<SpentCoinBuf>, SwiftSyncFailure> {
        let coinbase = spending(&[OutPoint { txid: Txid([0; 32]), vout: u32::MAX }], 1);
        let mut all = vec![coinbase];
        all.extend(transactions);
        let header = Header::decode(&[0u8; 80]);
        let bytes = Block { header, transactions: all }.encode();
        let parsed = ParsedBlock::parse(bytes, &mut BlockBuffers::default()).unwrap();
        let hash = parsed.hash();
        let this_block = RecentBlock::of(parsed.view(), parsed.txids(), hash, HEIGHT);
        let claimed = ClaimedSpentCoins {
            cutoff_height: HEIGHT - 10,
            coins: sent.iter().map(|index| (*index, old_coin())).collect(),
        };
        complete_claimed(parsed.view(), (HEIGHT, hash), claimed, (&this_block, &[]))
    }

    #[test]
    fn an_output_of_an_earlier_transaction_of_the_block_fills_a_coin_left_out() {
        let first = spending(&[old(1)], 2);
        let second = spending(&[OutPoint { txid: first.txid(), vout: 1 }, old(2)], 1);
        let coins = complete(vec![first, second], &[0, 2]).unwrap();
        assert_eq!(coins.len(), 3);
        assert_eq!(coins[0], old_coin());
        assert_eq!(coins[1].height, Height::new(HEIGHT));
        assert_eq!(coins[1].value, Amount::from_sat(1_001).unwrap());
        assert_eq!(coins[1].script_pubkey, vec![0x51, 1]);
        assert!(!coins[1].is_coinbase);
        assert_eq!(coins[2], old_coin());
    }

    #[test]
    fn an_output_of_a_later_transaction_or_one_beyond_its_outputs_is_left_out_wrongly() {
        let later = spending(&[old(3)], 1);
        let early = spending(&[OutPoint { txid: later.txid(), vout: 0 }], 1);
        let failure = complete(vec![early, later.clone()], &[1]).unwrap_err();
        assert!(
            matches!(
                failure,
                SwiftSyncFailure::SpentCoinsClaim { input: 0, mismatch: ClaimMismatch::Left, .. }
            ),
            "{failure:?}"
        );
        let beyond = spending(&[OutPoint { txid: later.txid(), vout: 1 }], 1);
        let failure = complete(vec![later, beyond], &[0]).unwrap_err();
        assert!(
            matches!(
                failure,
                SwiftSyncFailure::SpentCoinsClaim { input: 1, mismatch: ClaimMismatch::Left, .. }
            ),
            "{failure:?}"
        );
    }

    #[test]
    fn without_a_cutoff_the_coins_must_name_every_input_in_order() {
        // One transaction spending two old coins after the coinbase.
        let without_cutoff = |sent: &[u32]| {
            let block = spending(&[old(4), old(5)], 1);
            let coinbase = spending(&[OutPoint { txid: Txid([0; 32]), vout: u32::MAX }], 1);
            let bytes =
                Block { header: Header::decode(&[0u8; 80]), transactions: vec![coinbase, block] }
                    .encode();
            let parsed = ParsedBlock::parse(bytes, &mut BlockBuffers::default()).unwrap();
            let this_block = RecentBlock::of(parsed.view(), parsed.txids(), parsed.hash(), HEIGHT);
            let claimed = ClaimedSpentCoins {
                cutoff_height: 0,
                coins: sent.iter().map(|index| (*index, old_coin())).collect(),
            };
            let at = (HEIGHT, parsed.hash());
            complete_claimed(parsed.view(), at, claimed, (&this_block, &[]))
        };
        assert_eq!(without_cutoff(&[0, 1]).unwrap().len(), 2);
        let claim_failure = |sent: &[u32]| match without_cutoff(sent) {
            Err(SwiftSyncFailure::SpentCoinsClaim { input, mismatch, .. }) => (input, mismatch),
            other => panic!("{other:?}"),
        };
        // The first input skipped: its coin was left out.
        assert_eq!(claim_failure(&[1]), (0, ClaimMismatch::Left));
        // An index past the block's inputs.
        assert_eq!(claim_failure(&[0, 2]), (2, ClaimMismatch::NoSuchInput));
    }
}
