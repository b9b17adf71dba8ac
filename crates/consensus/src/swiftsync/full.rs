//! SwiftSync's per-block accounting in its fully validating mode (BIP 457
//! with BIP 455's spent coins from peers): the block is checked as Core's
//! `ConnectBlock` checks it, with the coins a peer claims its inputs spent
//! standing in for the UTXO set, and the aggregate takes whole coins, so
//! at the terminal height a zero sum proves every claim was the coin its
//! output created.
//!
//! Per block, beside the assumevalid mode's work ([`super::account_block`]):
//! - one claimed coin per input after the coinbase, in block order, or the
//!   block cannot be checked;
//! - every claimed coin subtracted as a coin (outpoint, height, coinbase
//!   flag, value, script), every spendable output not hinted added as the
//!   coin it creates;
//! - Core's connect rules with the claimed coins ([`BlockConnectCheck`]:
//!   maturity, amounts and fees, BIP68 sequence locks, the sigop cost,
//!   the coinbase amount), so the supply check of the assumevalid mode is
//!   not needed;
//! - a claimed coin created above this block is refused: the aggregate
//!   cannot see order, and the claim, once proven, is the coin's true
//!   height. An input spending an output of its own block must follow its
//!   creator, as in the assumevalid mode.
//!
//! What stays with the caller: the scripts (checked with the same claimed
//! coins, on every core), and BIP30 (no duplicate coinbase txid below
//! BIP34, checked over the whole sync as in the assumevalid mode).

use ibex_primitives::hints::OutpointHasher;
use ibex_primitives::SpentCoin;
use thiserror::Error;

use super::{BlockAccount, BlockToAccount, BlockWalk, SwiftSyncBlockError};
use crate::connect::{BlockConnectCheck, BlockTotals, ConnectRules};
use crate::rejection::BlockRejection;

/// Why a block failed its fully validating accounting.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FullAccountError {
    /// What the assumevalid mode refuses too.
    #[error(transparent)]
    Account(#[from] SwiftSyncBlockError),
    /// The claimed coins are not one per input after the coinbase (BIP 455:
    /// an answer missing or adding coins is the peer's fault, not the
    /// block's).
    #[error("block {height} has {input_count} inputs after its coinbase, {coin_count} spent coins were given")]
    CoinCount {
        /// The block's height.
        height: u32,
        /// Its inputs after the coinbase.
        input_count: usize,
        /// The coins given.
        coin_count: usize,
    },
    /// A claimed coin was created above the block that spends it.
    #[error("bad-txns-inputs-missingorspent: block {height} transaction {transaction} input {input} spends a coin of height {coin_height}")]
    CoinFromLaterBlock {
        /// The block's height.
        height: u32,
        /// The spending transaction's index in the block.
        transaction: usize,
        /// The input.
        input: usize,
        /// The height the coin claims.
        coin_height: u32,
    },
    /// Core's connect rules refuse the block with the claimed coins.
    #[error("block {height}: {rejection}")]
    Rejected {
        /// The block's height.
        height: u32,
        /// Core's reason.
        rejection: BlockRejection,
    },
}

/// What one block adds to a fully validating proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullBlockAccount<'a> {
    /// The assumevalid mode's account, its aggregate over whole coins.
    pub account: BlockAccount<'a>,
    /// The block's fees and sigop cost.
    pub totals: BlockTotals,
}

/// Accounts `to_account` with `spent`, the coins claimed for its inputs
/// after the coinbase in block order, under `rules` (the block's place in
/// the chain), with the sync's keyed `hasher`.
pub fn account_block_with_coins<'b>(
    to_account: &BlockToAccount<'_, 'b>,
    spent: &[SpentCoin<'_>],
    rules: &ConnectRules<'_>,
    hasher: &OutpointHasher,
) -> Result<FullBlockAccount<'b>, FullAccountError> {
    let height = to_account.height;
    let block = to_account.block;
    let input_count: usize =
        block.transactions().skip(1).map(|transaction| transaction.inputs().len()).sum();
    if input_count != spent.len() {
        return Err(FullAccountError::CoinCount { height, input_count, coin_count: spent.len() });
    }
    let rejected = |rejection| FullAccountError::Rejected { height, rejection };
    let mut check = BlockConnectCheck::new(rules);
    let mut walk = BlockWalk::new(to_account);
    let mut remaining = spent;
    for ((index, transaction), txid) in block.transactions().enumerate().zip(to_account.txids) {
        if index == 0 {
            check.coinbase(&transaction).map_err(rejected)?;
        } else {
            let (coins, rest) = remaining.split_at(transaction.inputs().len());
            remaining = rest;
            for (input_index, (input, coin)) in transaction.inputs().iter().zip(coins).enumerate() {
                let spent_txid = &input.previous_output().txid;
                walk.check_in_block_order(spent_txid, index, input_index)?;
                if coin.height.to_u32() > height {
                    return Err(FullAccountError::CoinFromLaterBlock {
                        height,
                        transaction: index,
                        input: input_index,
                        coin_height: coin.height.to_u32(),
                    });
                }
                walk.account.aggregate.subtract_coin(hasher, input.previous_output_bytes(), coin);
            }
            check.transaction(&transaction, txid, coins).map_err(rejected)?;
        }
        walk.outputs(index, &transaction, txid, |aggregate, outpoint, coin| {
            aggregate.add_coin(hasher, outpoint, coin);
        })?;
    }
    let totals = check.finish(block).map_err(rejected)?;
    Ok(FullBlockAccount { account: walk.finish()?, totals })
}

#[cfg(test)]
mod tests;
