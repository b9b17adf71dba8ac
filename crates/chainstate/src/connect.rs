//! Connecting a block to the UTXO cache (Core's `ConnectBlock` after the
//! header and block checks): inputs exist and are unspent, BIP30, coinbase
//! maturity and amounts (`CheckTxInputs`), BIP68 sequence locks, the sigop
//! cost limit and the coinbase value: every rule but the scripts.
//!
//! The cache is changed in place while the block is checked: spends and
//! new coins go straight in, and the spent coins become the block's undo
//! data. If a rule fails, the partial changes are rolled back with that
//! undo data ([`rollback`]), which leaves the cache logically as it was
//! (flags may differ, values not). This costs nothing for valid blocks,
//! unlike Core's temporary view which every coin passes through twice.
//!
//! Scripts are checked afterwards, on all cores, by the pipeline
//! ([`crate::manager::pipeline`], [`crate::scripts`]), after every other
//! rule of the block, so the coinbase-amount failure is reported before a
//! script failure as in Core with parallel script checks.

use ibex_consensus::finality::{sequence_locks, sequence_locks_satisfied};
use ibex_consensus::limits::BLOCK_SIGOPS_COST_MAX;
use ibex_consensus::TransactionError;
use ibex_consensus::{
    check_coinbase_amount, check_transaction_inputs, transaction_sigop_cost, SpentCoin,
};
use ibex_primitives::amount::money_range;
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{Amount, BlockView, OutPoint, Params, TransactionView, Txid};
use ibex_script::VerifyFlags;

use crate::cache::CoinsCache;
use crate::coin::Coin;
use crate::error::ChainstateError;
use crate::rejection::BlockRejection;
use crate::undo::{BlockUndo, TransactionUndo};

/// Everything about the block's place in the chain that connecting it needs.
pub struct ConnectContext<'a> {
    /// Network parameters.
    pub params: &'a Params,
    /// The block's height.
    pub height: u32,
    /// Script flags in force for this block.
    pub flags: VerifyFlags,
    /// Whether BIP30 requires that no output already exists.
    pub enforce_bip30: bool,
    /// Whether BIP68 sequence locks apply (CSV active).
    pub enforce_sequence_locks: bool,
    /// Median time past of the parent.
    pub previous_median_time_past: i64,
    /// Median time past of the active-chain block at a height up to the parent's.
    pub median_time_past_at: &'a dyn Fn(u32) -> i64,
}

/// A connected block's results.
#[derive(Debug)]
pub struct ConnectedBlock {
    /// The coins it spent, for its undo file record.
    pub undo: BlockUndo,
    /// Total fees.
    pub fees: i64,
    /// Inputs (excluding the coinbase's).
    pub input_count: u64,
}

/// Why a block could not be connected.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The block breaks a rule; the cache is as before.
    #[error("invalid block: {0}")]
    Invalid(BlockRejection),
    /// Storage failed; the cache may be inconsistent and must not be flushed.
    #[error(transparent)]
    Chainstate(#[from] ChainstateError),
}

impl From<BlockRejection> for ConnectError {
    fn from(rejection: BlockRejection) -> Self {
        ConnectError::Invalid(rejection)
    }
}

/// Connects `block` (whose transaction ids are `txids`) to `cache`.
pub fn connect_block(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    context: &ConnectContext<'_>,
) -> Result<ConnectedBlock, ConnectError> {
    let mut undo = BlockUndo { transactions: Vec::with_capacity(block.transaction_count()) };
    let mut outputs_added = 0;
    let result = apply_transactions(cache, block, txids, context, &mut undo, &mut outputs_added);
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(error) => return Err(rollback_after(cache, block, txids, &undo, outputs_added, error)),
    };
    if let Err(rejection) =
        check_coinbase_amount(block, outcome.fees, context.height, context.params)
    {
        let error = BlockRejection::Block(rejection).into();
        return Err(rollback_after(cache, block, txids, &undo, outputs_added, error));
    }
    // Scripts are checked by the pipeline once the block is connected
    // (`manager::pipeline`), never here.
    Ok(ConnectedBlock { undo, fees: outcome.fees, input_count: outcome.input_count })
}

struct Totals {
    fees: i64,
    input_count: u64,
}

/// Spends and adds every transaction's coins, checking the non-script rules.
fn apply_transactions(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    context: &ConnectContext<'_>,
    undo: &mut BlockUndo,
    outputs_added: &mut usize,
) -> Result<Totals, ConnectError> {
    let mut totals = Totals { fees: 0, input_count: 0 };
    let mut sigop_cost = 0u64;
    for (index, (transaction, txid)) in block.transactions().zip(txids).enumerate() {
        if context.enforce_bip30 {
            check_bip30(cache, &transaction, txid)?;
        }
        if index > 0 {
            undo.transactions
                .push(TransactionUndo { spent: Vec::with_capacity(transaction.inputs().len()) });
            let spent = spend_inputs(cache, &transaction, txid, undo)?;
            let fee = check_inputs(&transaction, txid, spent, context)?;
            totals.fees = totals
                .fees
                .checked_add(fee)
                .filter(|total| money_range(*total))
                .ok_or(BlockRejection::FeesOutOfRange)?;
            totals.input_count += transaction.inputs().len() as u64;
            let scripts: Vec<&[u8]> = spent.iter().map(Coin::script_pubkey).collect();
            sigop_cost += transaction_sigop_cost(&transaction, &scripts, context.flags);
        } else {
            sigop_cost += transaction_sigop_cost(&transaction, &[], context.flags);
        }
        if sigop_cost > BLOCK_SIGOPS_COST_MAX {
            return Err(BlockRejection::Block(ibex_consensus::BlockError::Sigops {
                cost: sigop_cost,
            })
            .into());
        }
        add_outputs(cache, &transaction, txid, context.height, index == 0)?;
        *outputs_added = index + 1;
    }
    Ok(totals)
}

/// BIP30: no output of the transaction may already be an unspent coin.
fn check_bip30(
    cache: &mut CoinsCache,
    transaction: &TransactionView<'_>,
    txid: &Txid,
) -> Result<(), ConnectError> {
    for vout in 0..transaction.outputs().len() as u32 {
        if cache.contains(&OutPoint { txid: *txid, vout })? {
            return Err(BlockRejection::Bip30 { txid: *txid }.into());
        }
    }
    Ok(())
}

/// Spends the transaction's inputs into its undo record (the last one
/// pushed); a missing coin stops with the record holding those spent so far.
fn spend_inputs<'u>(
    cache: &mut CoinsCache,
    transaction: &TransactionView<'_>,
    txid: &Txid,
    undo: &'u mut BlockUndo,
) -> Result<&'u [Coin], ConnectError> {
    let Some(record) = undo.transactions.last_mut() else {
        return Ok(&[]);
    };
    for (input_index, input) in transaction.inputs().iter().enumerate() {
        match cache.spend(&input.previous_output()) {
            Ok(coin) => record.spent.push(coin),
            Err(ChainstateError::MissingCoin { .. }) => {
                return Err(BlockRejection::MissingInput { txid: *txid, input: input_index }.into())
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(&record.spent)
}

/// `CheckTxInputs` and BIP68 for a transaction whose inputs spent `spent`.
fn check_inputs(
    transaction: &TransactionView<'_>,
    txid: &Txid,
    spent: &[Coin],
    context: &ConnectContext<'_>,
) -> Result<i64, ConnectError> {
    let coins: Vec<SpentCoin<'_>> = spent
        .iter()
        .map(|coin| SpentCoin {
            value: coin.amount().to_sat(),
            script_pubkey: coin.script_pubkey(),
            height: coin.height(),
            is_coinbase: coin.is_coinbase(),
        })
        .collect();
    let fee = check_transaction_inputs(transaction, &coins, context.height)
        .map_err(|source| BlockRejection::Transaction { txid: *txid, source })?;
    if context.enforce_sequence_locks {
        let heights: Vec<u32> = spent.iter().map(Coin::height).collect();
        let locks = sequence_locks(transaction, true, &heights, context.median_time_past_at);
        if !sequence_locks_satisfied(locks, context.height, context.previous_median_time_past) {
            return Err(BlockRejection::SequenceLocks { txid: *txid }.into());
        }
    }
    Ok(fee)
}

/// Adds the transaction's spendable outputs (Core's `AddCoins`; a coinbase
/// may overwrite, for BIP30's two historical duplicates).
fn add_outputs(
    cache: &mut CoinsCache,
    transaction: &TransactionView<'_>,
    txid: &Txid,
    height: u32,
    is_coinbase: bool,
) -> Result<(), ConnectError> {
    for (vout, output) in transaction.outputs().iter().enumerate() {
        // CheckTransaction bounded every output value already.
        let amount = Amount::from_sat(output.value).map_err(|_| BlockRejection::Transaction {
            txid: *txid,
            source: TransactionError::OutputTooLarge { output: vout },
        })?;
        let coin = Coin::new(amount, output.script_pubkey, height, is_coinbase)?;
        cache.add(&OutPoint { txid: *txid, vout: vout as u32 }, coin, is_coinbase)?;
    }
    Ok(())
}

/// Rolls back a partly or fully applied block and returns `error`.
fn rollback_after(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    undo: &BlockUndo,
    outputs_added: usize,
    error: ConnectError,
) -> ConnectError {
    if let ConnectError::Chainstate(_) = error {
        return error;
    }
    match rollback(cache, block, txids, undo, outputs_added) {
        Ok(()) => error,
        Err(storage) => ConnectError::Chainstate(storage),
    }
}

/// Undoes the effects of the first transactions of `block`: the outputs of
/// the first `outputs_added` are spent again and the coins in `undo` (one
/// record per non-coinbase transaction reached, the last maybe partial) are
/// put back.
pub fn rollback(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    undo: &BlockUndo,
    outputs_added: usize,
) -> Result<(), ChainstateError> {
    let touched = outputs_added.max(undo.transactions.len() + 1).min(block.transaction_count());
    for index in (0..touched).rev() {
        let Some(transaction) = block.transaction(index) else { continue };
        if index < outputs_added {
            let txid = txids[index];
            for (vout, output) in transaction.outputs().iter().enumerate() {
                if is_unspendable(output.script_pubkey) {
                    continue;
                }
                match cache.spend(&OutPoint { txid, vout: vout as u32 }) {
                    Ok(_) | Err(ChainstateError::MissingCoin { .. }) => {}
                    Err(error) => return Err(error),
                }
            }
        }
        let Some(record) = index.checked_sub(1).and_then(|slot| undo.transactions.get(slot)) else {
            continue;
        };
        for (input, coin) in transaction.inputs().iter().zip(&record.spent).rev() {
            cache.add(&input.previous_output(), coin.clone(), true)?;
        }
    }
    Ok(())
}
