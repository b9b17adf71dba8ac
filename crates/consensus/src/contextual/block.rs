//! Block rules that need the block's height: Core's `ContextualCheckBlock`
//! (finality, BIP34 height, witness commitment, weight) and ConnectBlock's
//! coinbase amount check.

use crate::error::{BlockError, LocatedTransactionError, TransactionError};
use crate::finality::{bip34_height_prefix, is_final};
use crate::limits::BLOCK_WEIGHT_MAX;
use crate::subsidy::block_subsidy;
use crate::transaction::transaction_value_out;
use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::{
    check_witness_commitment, Amount, BlockView, Height, Params, WitnessCommitmentError,
};

/// Core's `ContextualCheckBlock` for the block at `height` whose parent's
/// median time past is `previous_median_time_past`, in Core's order:
/// every transaction final (`bad-txns-nonfinal`), the coinbase height once
/// BIP34 is active (`bad-cb-height`), the witness commitment
/// (`bad-witness-nonce-size`, `bad-witness-merkle-match`,
/// `unexpected-witness`), then the weight (`bad-blk-weight`).
///
/// Expects a block that passed [`crate::check_block`] (a coinbase first).
pub fn contextual_check_block(
    block: &BlockView<'_>,
    height: Height,
    previous_median_time_past: i64,
    params: &Params,
) -> Result<(), BlockError> {
    contextual_check_block_known(block, height, previous_median_time_past, params, false)
}

/// [`contextual_check_block`] for a block whose witness commitment is
/// already known to match with segwit active, when `witness_checked` says
/// so (Core's `m_checked_witness_commitment`, set by `IsBlockMutated` on a
/// peer's block): the commitment is not hashed again.
pub fn contextual_check_block_known(
    block: &BlockView<'_>,
    height: Height,
    previous_median_time_past: i64,
    params: &Params,
    witness_checked: bool,
) -> Result<(), BlockError> {
    // BIP113: once CSV is active, time locks are compared with the parent's
    // median time past instead of the block's own (miner-chosen) time.
    let lock_time_cutoff =
        if params.deployment_active_at(BuriedDeployment::CheckSequenceVerify, height) {
            previous_median_time_past
        } else {
            i64::from(block.header().time)
        };
    for (index, transaction) in block.transactions().enumerate() {
        if !is_final(&transaction, height, lock_time_cutoff) {
            return Err(BlockError::Transaction(LocatedTransactionError {
                index,
                txid: transaction.txid(),
                source: TransactionError::NonFinal,
            }));
        }
    }
    if params.deployment_active_at(BuriedDeployment::HeightInCoinbase, height) {
        check_coinbase_height(block, height)?;
    }
    let segwit_active = params.deployment_active_at(BuriedDeployment::Segwit, height);
    if !(witness_checked && segwit_active) {
        check_witness(block, segwit_active)?;
    }
    // Only after the commitment is checked: before, padding the coinbase
    // witness (which the block hash does not commit to) could make a valid
    // block look too heavy, and the block would be wrongly marked invalid.
    let weight = block.weight();
    if weight > BLOCK_WEIGHT_MAX {
        return Err(BlockError::BadWeight { weight });
    }
    Ok(())
}

/// BIP34: the coinbase scriptSig starts with `CScript() << height` (more
/// bytes may follow).
fn check_coinbase_height(block: &BlockView<'_>, height: Height) -> Result<(), BlockError> {
    let prefix = bip34_height_prefix(height);
    let starts_with_height = block
        .transaction(0)
        .and_then(|coinbase| {
            coinbase.inputs().first().map(|input| input.script_sig.starts_with(&prefix))
        })
        .unwrap_or(false);
    if !starts_with_height {
        return Err(BlockError::BadCoinbaseHeight);
    }
    Ok(())
}

/// Core's `CheckWitnessMalleation`: once segwit is active a commitment, if
/// present, must match; with no commitment (or before segwit) no
/// transaction may carry witness data.
fn check_witness(block: &BlockView<'_>, segwit_active: bool) -> Result<(), BlockError> {
    if segwit_active {
        return check_witness_commitment(block).map_err(BlockError::WitnessCommitment);
    }
    if block.transactions().any(|transaction| transaction.has_witness()) {
        return Err(BlockError::WitnessCommitment(WitnessCommitmentError::UnexpectedWitness));
    }
    Ok(())
}

/// ConnectBlock's coinbase check: the coinbase of the block at `height` pays
/// at most the subsidy plus `fees`, the sum of the block's transaction fees
/// (`bad-cb-amount`). Core runs it after every transaction is connected,
/// before it waits for the script checks.
pub fn check_coinbase_amount(
    block: &BlockView<'_>,
    fees: Amount,
    height: Height,
    params: &Params,
) -> Result<(), BlockError> {
    let value = coinbase_value_out(block)?;
    let subsidy = block_subsidy(height, params.subsidy_halving_interval);
    // Core compares with `nFees + GetBlockSubsidy` unchecked. A reward above
    // MAX_MONEY (fees near MAX_MONEY, which real coins cannot pay) is above
    // any coinbase's value out, which GetValueOut bounds by MAX_MONEY, so
    // Core accepts: so does this.
    match fees.checked_add(subsidy) {
        Some(limit) if value > limit => Err(BlockError::CoinbaseAmount { value, limit }),
        _ => Ok(()),
    }
}

/// The coinbase's value out (Core's `GetValueOut`); zero without a
/// coinbase. CheckBlock has checked its outputs already; a block that
/// skipped it fails here with CheckTransaction's reason.
fn coinbase_value_out(block: &BlockView<'_>) -> Result<Amount, BlockError> {
    let Some(coinbase) = block.transaction(0) else {
        return Ok(Amount::ZERO);
    };
    transaction_value_out(&coinbase).map_err(|source| {
        BlockError::Transaction(LocatedTransactionError { index: 0, txid: coinbase.txid(), source })
    })
}
