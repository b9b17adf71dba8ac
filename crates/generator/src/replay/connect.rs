//! Core's `ConnectBlock` for one block on a [`ChainView`]: inputs present and
//! unspent, `CheckTxInputs`, BIP68 sequence locks, the sigops cost limit,
//! every input's script under full consensus flags, and the coinbase amount.

use std::collections::{HashMap, HashSet};

use ibex_consensus::finality::{sequence_locks, sequence_locks_satisfied};
use ibex_consensus::subsidy::block_subsidy;
use ibex_consensus::{check_transaction_inputs, SpentCoin};
use ibex_primitives::{BlockView, OutPoint, TransactionView};
use ibex_script::script::is_pay_to_script_hash;
use ibex_script::sigops::{legacy_sigop_count, p2sh_sigop_count, witness_sigop_count};
use ibex_script::{
    verify_script, PrecomputedTransactionData, SpentOutput, TransactionChecker, VerifyFlags,
};

use super::{BlockChanges, ChainView, Rejection, StoredCoin};
use crate::chain::BLOCK_SIGOPS_COST_MAX;
use crate::regtest::REGTEST_HALVING_INTERVAL_BLOCKS;
use crate::script_kind::OP_RETURN;

/// Core's MAX_SCRIPT_SIZE: longer output scripts never enter the UTXO set.
const SCRIPT_BYTES_MAX: usize = 10_000;

/// The flags every regtest block is checked with (all deployments active).
pub fn consensus_flags() -> VerifyFlags {
    [
        VerifyFlags::P2SH,
        VerifyFlags::DERSIG,
        VerifyFlags::CHECKLOCKTIMEVERIFY,
        VerifyFlags::CHECKSEQUENCEVERIFY,
        VerifyFlags::WITNESS,
        VerifyFlags::NULLDUMMY,
        VerifyFlags::TAPROOT,
    ]
    .into_iter()
    .fold(VerifyFlags::NONE, VerifyFlags::union)
}

/// Core's `IsUnspendable`: OP_RETURN outputs and oversized scripts.
fn is_unspendable(script: &[u8]) -> bool {
    script.first() == Some(&OP_RETURN) || script.len() > SCRIPT_BYTES_MAX
}

/// Core's `GetTransactionSigOpCost`.
fn sigop_cost(transaction: &TransactionView<'_>, spent: &[&StoredCoin], flags: VerifyFlags) -> u64 {
    let legacy: usize = transaction
        .inputs()
        .iter()
        .map(|input| legacy_sigop_count(input.script_sig, false))
        .chain(
            transaction
                .outputs()
                .iter()
                .map(|output| legacy_sigop_count(output.script_pubkey, false)),
        )
        .sum();
    let mut cost = legacy as u64 * 4;
    for (input, coin) in transaction.inputs().iter().zip(spent) {
        if is_pay_to_script_hash(&coin.script_pubkey) {
            cost += p2sh_sigop_count(&coin.script_pubkey, input.script_sig) as u64 * 4;
        }
        let last = input.witness.iter().last();
        cost += witness_sigop_count(input.script_sig, &coin.script_pubkey, last, flags) as u64;
    }
    cost
}

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
            .map_err(|error| {
                let text = error.to_string();
                let mut characters = text.chars();
                let capitalised: String = characters
                    .next()
                    .map(|first| first.to_uppercase().chain(characters).collect())
                    .unwrap_or_default();
                format!("block-script-verify-flag-failed ({capitalised})")
            })?;
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
    let locks = sequence_locks(transaction, true, &heights, median_time_past_of);
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
pub(crate) fn connect(base: &ChainView, block: &BlockView<'_>) -> Result<BlockChanges, Rejection> {
    let flags = consensus_flags();
    let height = base.height + 1;
    let mut created: HashMap<OutPoint, StoredCoin> = HashMap::new();
    let mut spent: HashSet<OutPoint> = HashSet::new();
    let mut changes = BlockChanges::default();
    let (mut fees, mut sigops) = (0i64, 0u64);
    let mut script_failure = None;
    for (index, transaction) in block.transactions().enumerate() {
        if index > 0 {
            let coins = find_coins(base, &created, &spent, &transaction)?;
            fees += check_spend(base, &transaction, &coins)?;
            sigops += sigop_cost(&transaction, &coins, flags);
            match verify_inputs(&transaction, &coins, flags) {
                Ok(count) => changes.inputs_verified += count,
                Err(reason) => script_failure = script_failure.or(Some(reason)),
            }
            for input in transaction.inputs() {
                spent.insert(input.previous_output());
                changes.spent.push(input.previous_output());
            }
        } else {
            sigops += sigop_cost(&transaction, &[], flags);
        }
        if sigops > BLOCK_SIGOPS_COST_MAX {
            return Err(Rejection::new("bad-blk-sigops"));
        }
        add_outputs(&transaction, height, index == 0, &mut created, &mut changes);
    }
    let coinbase_value: i64 = block
        .transaction(0)
        .map_or(0, |coinbase| coinbase.outputs().iter().map(|output| output.value).sum());
    if coinbase_value > fees + block_subsidy(height, REGTEST_HALVING_INTERVAL_BLOCKS) {
        return Err(Rejection::new("bad-cb-amount"));
    }
    match script_failure {
        Some(reason) => Err(Rejection::new(reason)),
        None => Ok(changes),
    }
}
