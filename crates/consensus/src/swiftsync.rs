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

use ibex_primitives::hints::{HintNumbering, OutpointAggregate, OutpointHasher};
use ibex_primitives::{BlockHash, BlockView, Height, OutPoint, Txid};
use thiserror::Error;

use crate::subsidy::block_subsidy;

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
    /// An output with a negative value reached the accounting
    /// (`CheckTransaction` refuses it first: `bad-txns-vout-negative`).
    #[error("bad-txns-vout-negative: block {height} transaction {transaction} output {output}")]
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
    let height = to_account.height;
    let numbering = HintNumbering::for_block(height, &to_account.hash);
    let position_of: HashMap<Txid, usize> =
        to_account.txids.iter().enumerate().map(|(index, txid)| (*txid, index)).collect();
    let mut hints = to_account.unspent_indices.iter().copied().peekable();
    let mut account = BlockAccount {
        aggregate: OutpointAggregate::ZERO,
        unspent: Vec::with_capacity(to_account.unspent_indices.len()),
        unspent_value: 0,
        unspendable_value: 0,
        spendable_count: 0,
    };
    for ((index, transaction), txid) in
        to_account.block.transactions().enumerate().zip(to_account.txids)
    {
        if index > 0 {
            for (input_index, input) in transaction.inputs().iter().enumerate() {
                let spent = input.previous_output();
                if position_of.get(&spent.txid).is_some_and(|&creator| creator >= index) {
                    return Err(SwiftSyncBlockError::SpendsLaterOutput {
                        height,
                        transaction: index,
                        input: input_index,
                    });
                }
                account.aggregate.subtract(hasher, input.previous_output_bytes());
            }
        }
        for (vout, output) in (0u32..).zip(transaction.outputs()) {
            // `CheckTransaction` ranged every value to 0..=MAX_MONEY; a
            // negative one here fails rather than count as nothing.
            let value = u64::try_from(output.value).map_err(|_| {
                SwiftSyncBlockError::NegativeOutput { height, transaction: index, output: vout }
            })?;
            if !numbering.numbers(index, output) {
                account.unspendable_value = account.unspendable_value.saturating_add(value);
                continue;
            }
            let number = account.spendable_count;
            account.spendable_count += 1;
            let outpoint = OutPoint { txid: *txid, vout };
            if hints.next_if_eq(&number).is_some() {
                account.unspent_value = account.unspent_value.saturating_add(value);
                account.unspent.push(HintedOutput {
                    outpoint,
                    value: output.value,
                    script_pubkey: output.script_pubkey,
                    is_coinbase: index == 0,
                });
            } else {
                account.aggregate.add(hasher, &outpoint);
            }
        }
    }
    if let Some(index) = hints.next() {
        return Err(SwiftSyncBlockError::HintBeyondBlock {
            height,
            index,
            spendable_count: account.spendable_count,
        });
    }
    Ok(account)
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
