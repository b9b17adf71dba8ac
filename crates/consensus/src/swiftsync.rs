//! SwiftSync's per-block accounting in its assumevalid mode (BIP 457
//! draft): what one block adds to the sync's proof, computed from the
//! block, its height and its hints alone, so blocks can be accounted in
//! any order and on every core.
//!
//! For each block:
//! - every non-coinbase input's outpoint is subtracted from the
//!   aggregate ([`OutpointAggregate`]);
//! - every spendable output the hints do not name is added to it (it must
//!   be spent by the terminal height, by exactly one input);
//! - every output the hints name is returned as a coin to store, never to
//!   be looked up during the sync;
//! - unspendable outputs (numbered by no hint) are neither.
//!
//! At the terminal height the aggregate of all blocks must be zero. With
//! no coin looked up, the per-transaction amount checks (`bad-txns-in-
//! belowout`, fees, `bad-cb-amount`) cannot be made; the draft replaces
//! them with one check of the whole supply: the values of the outputs left
//! unspent plus the values burnt in unspendable outputs must not exceed
//! the subsidies of blocks 1 to the terminal height
//! ([`supply_limit_through`]). The two sums are returned per block.
//!
//! What a block alone still shows and is checked here: a hint naming an
//! output the block does not have, and an input spending an output of its
//! own block that is created at or after it (Core finds no such coin when
//! it connects the transaction: `bad-txns-inputs-missingorspent`). An
//! input spending an output of a *later block* is invisible to the
//! aggregate (the draft's "order cannot be checked"); the assumevalid
//! block's ancestry is trusted for that, as for scripts.

use std::collections::HashMap;

use ibex_primitives::hints::{HintNumbering, OutpointAggregate, OutpointHasher, PairedAggregate};
use ibex_primitives::{
    Amount, BlockHash, BlockView, Height, OutPoint, SpentCoin, TransactionView, Txid,
};
use thiserror::Error;

use crate::subsidy::block_subsidy;

pub mod full;

/// Why a block's accounting failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SwiftSyncBlockError {
    /// A hint names an output beyond the block's spendable ones.
    #[error("hints for block {height} name output {index}, the block has {spendable_count} spendable outputs")]
    HintBeyondBlock {
        /// The block's height.
        height: u32,
        /// The index the hints name.
        index: u32,
        /// The block's spendable outputs.
        spendable_count: u32,
    },
    /// An output with a value outside `0..=MAX_MONEY` reached the
    /// accounting (`CheckTransaction` refuses it first:
    /// `bad-txns-vout-negative`, `bad-txns-vout-toolarge`).
    #[error("bad-txns-vout-negative: block {height} transaction {transaction} output {output} is out of range")]
    NegativeOutput {
        /// The block's height.
        height: u32,
        /// The transaction's index in the block.
        transaction: usize,
        /// The output.
        output: u32,
    },
    /// An input spends an output of its own block created by the same or
    /// a later transaction.
    #[error("bad-txns-inputs-missingorspent: block {height} transaction {transaction} input {input} spends an output created after it")]
    SpendsLaterOutput {
        /// The block's height.
        height: u32,
        /// The spending transaction's index in the block.
        transaction: usize,
        /// The input.
        input: usize,
    },
}

/// An output the hints say is unspent at the terminal height: a coin to
/// store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HintedOutput<'a> {
    /// Where it is.
    pub outpoint: OutPoint,
    /// Its value in satoshis (as serialised; `CheckTransaction` ranged it).
    pub value: i64,
    /// Its script.
    pub script_pubkey: &'a [u8],
    /// Whether a coinbase created it.
    pub is_coinbase: bool,
}

/// What one block adds to a SwiftSync proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockAccount<'a> {
    /// Its outputs spent later, minus its inputs.
    pub aggregate: OutpointAggregate,
    /// Its outputs unspent at the terminal height.
    pub unspent: Vec<HintedOutput<'a>>,
    /// The value of `unspent`, in satoshis.
    pub unspent_value: u64,
    /// The value of its unspendable outputs, in satoshis.
    pub unspendable_value: u64,
    /// Its spendable (numbered) outputs.
    pub spendable_count: u32,
}

/// A block to account: its view, transaction ids, height, hash and the
/// indices its hints name (increasing, as a hints file decodes them).
#[derive(Debug, Clone, Copy)]
pub struct BlockToAccount<'a, 'b> {
    /// The block.
    pub block: &'b BlockView<'a>,
    /// Its transaction ids, in order.
    pub txids: &'b [Txid],
    /// Its height.
    pub height: u32,
    /// Its hash.
    pub hash: BlockHash,
    /// The indices of its outputs unspent at the terminal height.
    pub unspent_indices: &'b [u32],
}

/// Accounts `to_account` (module docs) with the sync's keyed `hasher`.
pub fn account_block<'b>(
    to_account: &BlockToAccount<'_, 'b>,
    hasher: &OutpointHasher,
) -> Result<BlockAccount<'b>, SwiftSyncBlockError> {
    let mut walk = BlockWalk::new(to_account);
    // Outpoints hashed two at a time, the block's sum added once.
    let mut paired = PairedAggregate::default();
    for ((index, transaction), txid) in
        to_account.block.transactions().enumerate().zip(to_account.txids)
    {
        if index > 0 {
            for (input_index, input) in transaction.inputs().iter().enumerate() {
                walk.check_in_block_order(&input.previous_output().txid, index, input_index)?;
                paired.subtract(hasher, input.previous_output_bytes());
            }
        }
        walk.outputs(index, &transaction, txid, |_, outpoint, _| {
            paired.add(hasher, outpoint);
        })?;
    }
    walk.account.aggregate.merge(&paired.finish(hasher));
    walk.finish()
}

/// What [`account_block`] and [`full::account_block_with_coins`] share: the
/// block's numbering, where each of its transactions sits, the hints still
/// to match, and the account so far.
pub(crate) struct BlockWalk<'b> {
    pub(crate) height: u32,
    numbering: HintNumbering,
    position_of: HashMap<Txid, usize>,
    hints: std::iter::Peekable<std::iter::Copied<std::slice::Iter<'b, u32>>>,
    pub(crate) account: BlockAccount<'b>,
}

impl<'b> BlockWalk<'b> {
    pub(crate) fn new(to_account: &BlockToAccount<'_, 'b>) -> BlockWalk<'b> {
        BlockWalk {
            height: to_account.height,
            numbering: HintNumbering::for_block(to_account.height, &to_account.hash),
            position_of: to_account
                .txids
                .iter()
                .enumerate()
                .map(|(index, txid)| (*txid, index))
                .collect(),
            hints: to_account.unspent_indices.iter().copied().peekable(),
            account: BlockAccount {
                aggregate: OutpointAggregate::ZERO,
                unspent: Vec::with_capacity(to_account.unspent_indices.len()),
                unspent_value: 0,
                unspendable_value: 0,
                spendable_count: 0,
            },
        }
    }

    /// Refuses an input of transaction `index` that spends an output of
    /// this block created by it or a later transaction.
    pub(crate) fn check_in_block_order(
        &self,
        spent_txid: &Txid,
        index: usize,
        input: usize,
    ) -> Result<(), SwiftSyncBlockError> {
        if self.position_of.get(spent_txid).is_some_and(|&creator| creator >= index) {
            return Err(SwiftSyncBlockError::SpendsLaterOutput {
                height: self.height,
                transaction: index,
                input,
            });
        }
        Ok(())
    }

    /// Accounts transaction `index`'s outputs: hinted ones kept as coins,
    /// other spendable ones given to `add_spent_later`.
    pub(crate) fn outputs<F>(
        &mut self,
        index: usize,
        transaction: &TransactionView<'b>,
        txid: &Txid,
        mut add_spent_later: F,
    ) -> Result<(), SwiftSyncBlockError>
    where
        F: FnMut(&mut OutpointAggregate, &OutPoint, &SpentCoin<'_>),
    {
        let height = self.height;
        for (vout, output) in (0u32..).zip(transaction.outputs()) {
            // `CheckTransaction` ranged every value to 0..=MAX_MONEY; a
            // value outside fails rather than count as nothing.
            let amount = Amount::from_sat(output.value).map_err(|_| {
                SwiftSyncBlockError::NegativeOutput { height, transaction: index, output: vout }
            })?;
            let value = amount.to_sat().unsigned_abs();
            if !self.numbering.numbers(index, output) {
                self.account.unspendable_value =
                    self.account.unspendable_value.saturating_add(value);
                continue;
            }
            let number = self.account.spendable_count;
            self.account.spendable_count += 1;
            let outpoint = OutPoint { txid: *txid, vout };
            if self.hints.next_if_eq(&number).is_some() {
                self.account.unspent_value = self.account.unspent_value.saturating_add(value);
                self.account.unspent.push(HintedOutput {
                    outpoint,
                    value: output.value,
                    script_pubkey: output.script_pubkey,
                    is_coinbase: index == 0,
                });
            } else {
                let coin = SpentCoin {
                    value: amount,
                    script_pubkey: output.script_pubkey,
                    height: Height::new(height),
                    is_coinbase: index == 0,
                };
                add_spent_later(&mut self.account.aggregate, &outpoint, &coin);
            }
        }
        Ok(())
    }

    /// The account, once no hint is left beyond the block's outputs.
    pub(crate) fn finish(mut self) -> Result<BlockAccount<'b>, SwiftSyncBlockError> {
        if let Some(index) = self.hints.next() {
            return Err(SwiftSyncBlockError::HintBeyondBlock {
                height: self.height,
                index,
                spendable_count: self.account.spendable_count,
            });
        }
        Ok(self.account)
    }
}

/// The most value blocks 1 to `terminal_height` may have created: the sum
/// of their subsidies (the genesis coinbase is not spendable and creates
/// no coin), in satoshis.
pub fn supply_limit_through(terminal_height: u32, halving_interval: u32) -> u64 {
    let interval = u64::from(halving_interval.max(1));
    let end = u64::from(terminal_height) + 1;
    let mut total = 0u64;
    let mut height = 1u64;
    while height < end {
        // Whole halving periods at once: the subsidy is constant in each.
        let period_end = (height / interval + 1).saturating_mul(interval).min(end);
        // `height < end <= 2^32` and `interval <= u32::MAX`: both fit.
        let subsidy = block_subsidy(Height::new(height as u32), interval as u32).to_sat();
        let Ok(subsidy) = u64::try_from(subsidy) else { break };
        if subsidy == 0 {
            break;
        }
        total += subsidy * (period_end - height);
        height = period_end;
    }
    total
}

#[cfg(test)]
mod tests;
