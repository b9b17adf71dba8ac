//! Core's `ConnectBlock` for one block on a [`ChainView`]: inputs present and
//! unspent, `CheckTxInputs`, BIP68 sequence locks, the sigops cost limit,
//! every input's script under full consensus flags, and the coinbase amount.

use std::collections::{HashMap, HashSet};

use ibex_consensus::finality::{sequence_locks, sequence_locks_satisfied};
use ibex_consensus::limits::BLOCK_SIGOPS_COST_MAX;
use ibex_consensus::{
    block_script_flags, check_coinbase_amount, check_transaction_inputs, script_failure_reason,
    transaction_sigop_cost, BlockError, SpentCoin,
};
use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{BlockView, OutPoint, Params, TransactionView};
use ibex_script::{
    verify_script, PrecomputedTransactionData, SpentOutput, TransactionChecker, VerifyFlags,
};

use super::{BlockChanges, ChainView, Rejection, StoredCoin};

/// Verifies every input's script; the first failure in Core's words.
fn verify_inputs(
    transaction: &TransactionView<'_>,
    spent: &[&StoredCoin],
    flags: VerifyFlags,
) -> Result<u64, String> {
    let spent_outputs: Vec<SpentOutput<'_>> = spent
        .iter()
        .map(|coin| SpentOutput { amount: coin.value, script_pubkey: &coin.script_pubkey })
        .collect();
    let precomputed = PrecomputedTransactionData::new(transaction, &spent_outputs)
        .map_err(|error| error.to_string())?;
    for (index, (input, spent_output)) in
        transaction.inputs().iter().zip(&spent_outputs).enumerate()
    {
        let checker = TransactionChecker::new(*transaction, index, *spent_output, &precomputed)
            .map_err(|error| error.to_string())?;
        let witness = input.witness.to_vec();
        verify_script(input.script_sig, spent_output.script_pubkey, &witness, flags, &checker)
            .map_err(script_failure_reason)?;
    }
    Ok(transaction.inputs().len() as u64)
}

/// Looks up every input's coin: in the block's own earlier outputs or the
/// view, and not spent yet.
fn find_coins<'a>(
    base: &'a ChainView,
    created: &'a HashMap<OutPoint, StoredCoin>,
    spent: &HashSet<OutPoint>,
    transaction: &TransactionView<'_>,
) -> Result<Vec<&'a StoredCoin>, Rejection> {
    transaction
        .inputs()
        .iter()
        .map(|input| {
            let outpoint = input.previous_output();
            let coin = created.get(&outpoint).or_else(|| base.coins.get(&outpoint));
            match coin {
                Some(coin) if !spent.contains(&outpoint) => Ok(coin),
                _ => Err(Rejection::new("bad-txns-inputs-missingorspent")),
            }
        })
        .collect()
}

/// `CheckTxInputs` and BIP68 for one transaction spending `coins`; its fee.
fn check_spend(
    params: &Params,
    base: &ChainView,
    transaction: &TransactionView<'_>,
    coins: &[&StoredCoin],
) -> Result<i64, Rejection> {
    let height = base.height + 1;
    let spent_coins: Vec<SpentCoin<'_>> = coins
        .iter()
        .map(|coin| SpentCoin {
            value: coin.value,
            script_pubkey: &coin.script_pubkey,
            height: coin.height,
            is_coinbase: coin.is_coinbase,
        })
        .collect();
    let fee = check_transaction_inputs(transaction, &spent_coins, height)
        .map_err(|error| Rejection::new(error.reject_reason()))?;
    let heights: Vec<u32> = coins.iter().map(|coin| coin.height).collect();
    let median_time_past_of =
        |at: u32| base.median_time_past.get(at as usize).copied().unwrap_or(0);
    // BIP68 from CSV's activation (Core's LOCKTIME_VERIFY_SEQUENCE).
    let enforce = params.deployment_active_at(BuriedDeployment::CheckSequenceVerify, height);
    let locks = sequence_locks(transaction, enforce, &heights, median_time_past_of);
    let previous_median_time_past = base.median_time_past.last().copied().unwrap_or(0);
    if !sequence_locks_satisfied(locks, height, previous_median_time_past) {
        return Err(Rejection::new("bad-txns-nonfinal"));
    }
    Ok(fee)
}

/// Adds a transaction's spendable outputs to the block's new coins.
fn add_outputs(
    transaction: &TransactionView<'_>,
    height: u32,
    is_coinbase: bool,
    created: &mut HashMap<OutPoint, StoredCoin>,
    changes: &mut BlockChanges,
) {
    let txid = transaction.txid();
    for (vout, output) in transaction.outputs().iter().enumerate() {
        if is_unspendable(output.script_pubkey) {
            continue;
        }
        let coin = StoredCoin {
            value: output.value,
            script_pubkey: output.script_pubkey.to_vec(),
            height,
            is_coinbase,
        };
        let outpoint = OutPoint { txid, vout: vout as u32 };
        created.insert(outpoint, coin.clone());
        changes.created.push((outpoint, coin));
    }
}

/// Connects `block` on `base` without changing it; returns what it would change.
pub(crate) fn connect(
    params: &Params,
    base: &ChainView,
    block: &BlockView<'_>,
) -> Result<BlockChanges, Rejection> {
    let height = base.height + 1;
    let flags = block_script_flags(params, height, &block.block_hash());
    let mut created: HashMap<OutPoint, StoredCoin> = HashMap::new();
    let mut spent: HashSet<OutPoint> = HashSet::new();
    let mut changes = BlockChanges::default();
    let (mut fees, mut sigops) = (0i64, 0u64);
    let mut script_failure = None;
    for (index, transaction) in block.transactions().enumerate() {
        if index > 0 {
            let coins = find_coins(base, &created, &spent, &transaction)?;
            fees += check_spend(params, base, &transaction, &coins)?;
            let scripts: Vec<&[u8]> =
                coins.iter().map(|coin| coin.script_pubkey.as_slice()).collect();
            sigops += transaction_sigop_cost(&transaction, &scripts, flags);
            match verify_inputs(&transaction, &coins, flags) {
                Ok(count) => changes.inputs_verified += count,
                Err(reason) => script_failure = script_failure.or(Some(reason)),
            }
            for input in transaction.inputs() {
                spent.insert(input.previous_output());
                changes.spent.push(input.previous_output());
            }
        } else {
            sigops += transaction_sigop_cost(&transaction, &[], flags);
        }
        if sigops > BLOCK_SIGOPS_COST_MAX {
            return Err(BlockError::Sigops { cost: sigops }.into());
        }
        add_outputs(&transaction, height, index == 0, &mut created, &mut changes);
    }
    // Core checks the amount before it waits for the (parallel) script checks.
    check_coinbase_amount(block, fees, height, params)?;
    match script_failure {
        Some(reason) => Err(Rejection::new(reason)),
        None => Ok(changes),
    }
}
