//! Disconnecting a block with its undo data (Core's `DisconnectBlock`):
//! every output it created is spent again and every coin it spent is put
//! back, in reverse order.
//!
//! A mismatch (an output missing or different, a restored coin that is
//! already there) makes the result [`DisconnectResult::Unclean`], as in
//! Core: the state is still usable when replaying after a crash, where the
//! database may hold coins of both sides of the flush.

use ibex_primitives::params::is_bip30_unspendable;
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{BlockHash, BlockView, OutPoint, TransactionView, Txid};

use crate::coins::cache::CoinsCache;
use crate::coins::coin::Coin;
use crate::error::ChainstateError;
use crate::undo::BlockUndo;

/// How a disconnect went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisconnectResult {
    /// Every coin matched.
    Clean,
    /// Some coin did not match; the state is the best that can be made.
    Unclean,
}

/// Disconnects `block` at `height` (hash `hash`) whose transactions are
/// `txids`, restoring the coins in `undo`.
pub fn disconnect_block(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    height: u32,
    hash: &BlockHash,
    undo: &BlockUndo,
) -> Result<DisconnectResult, ChainstateError> {
    let transaction_count = block.transaction_count();
    if undo.transactions.len() + 1 != transaction_count {
        return Err(ChainstateError::UndoMismatch { hash: *hash });
    }
    let mut clean = true;
    // Core's DisconnectBlock: the two blocks whose coinbases were later
    // duplicated (BIP30) may find their outputs overwritten; not unclean.
    let bip30_exception = is_bip30_unspendable(height, hash);
    for index in (0..transaction_count).rev() {
        let Some(transaction) = block.transaction(index) else { continue };
        let is_coinbase = index == 0;
        let matched = spend_outputs_again(cache, &transaction, &txids[index], height, is_coinbase)?;
        clean &= matched || (is_coinbase && bip30_exception);
        if is_coinbase {
            continue;
        }
        let record = &undo.transactions[index - 1];
        if record.spent.len() != transaction.inputs().len() {
            return Err(ChainstateError::UndoMismatch { hash: *hash });
        }
        clean &= restore_spent_coins(cache, &transaction, &record.spent)?;
    }
    Ok(if clean { DisconnectResult::Clean } else { DisconnectResult::Unclean })
}

/// Spends again the spendable outputs `transaction` (id `txid`, in a block
/// at `height`) added: the one way this crate undoes a transaction's
/// outputs (disconnecting, rolling back a failed or pipelined block, replay
/// after a crash). True when every output was there as created.
pub(crate) fn spend_outputs_again(
    cache: &mut CoinsCache,
    transaction: &TransactionView<'_>,
    txid: &Txid,
    height: u32,
    is_coinbase: bool,
) -> Result<bool, ChainstateError> {
    let mut matched = true;
    for (vout, output) in transaction.outputs().iter().enumerate() {
        if is_unspendable(output.script_pubkey) {
            continue;
        }
        let outpoint = OutPoint { txid: *txid, vout: vout as u32 };
        matched &= match cache.spend(&outpoint) {
            Ok(coin) => {
                coin.amount().to_sat() == output.value
                    && coin.script_pubkey() == output.script_pubkey
                    && coin.height() == height
                    && coin.is_coinbase() == is_coinbase
            }
            Err(ChainstateError::MissingCoin { .. }) => false,
            Err(error) => return Err(error),
        };
    }
    Ok(matched)
}

/// Puts back the coins `transaction`'s inputs spent, last input first
/// (`spent` may be shorter than the inputs: a block rolled back in the
/// middle of a transaction). True when none was already there and each
/// carried its height.
pub(crate) fn restore_spent_coins(
    cache: &mut CoinsCache,
    transaction: &TransactionView<'_>,
    spent: &[Coin],
) -> Result<bool, ChainstateError> {
    let mut clean = true;
    for (input, coin) in transaction.inputs().iter().zip(spent).rev() {
        clean &= restore_coin(cache, &input.previous_output(), coin.clone())?;
    }
    Ok(clean)
}

/// Core's `ApplyTxInUndo`: puts a spent coin back; false if something was
/// already there (it is overwritten) or the undo record lacks its height.
fn restore_coin(
    cache: &mut CoinsCache,
    outpoint: &OutPoint,
    coin: Coin,
) -> Result<bool, ChainstateError> {
    let already_there = cache.contains(outpoint)?;
    // Undo records written by Core since 0.15 always carry the height; a
    // zero height would come from pre-0.15 records, which Ibex never reads.
    let has_height = coin.height() != 0;
    cache.add(outpoint, coin, already_there)?;
    Ok(!already_there && has_height)
}
