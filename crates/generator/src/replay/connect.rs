//! Core's `ConnectBlock` for one block on a [`ChainView`]: inputs present and
//! unspent (here, on the view's maps), the rules on the spent coins
//! (`CheckTxInputs`, fee total, BIP68, sigop cost, coinbase amount: the
//! same [`BlockConnectCheck`] the chainstate uses), and every input's script
//! under full consensus flags. Every verdict is a [`BlockRejection`], the
//! chainstate's own, so the reject reasons are consensus's words.

use std::collections::{HashMap, HashSet};

use ibex_consensus::{
    block_script_flags, output_amount, BlockConnectCheck, BlockRejection, ConnectRules,
};
use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{
    BlockView, Height, OutPoint, Params, SpentCoin, SpentCoinBuf, TransactionView, Txid,
};
use ibex_script::{
    verify_script, PrecomputedTransactionData, SpentOutput, TransactionChecker, VerifyFlags,
};

use super::{BlockChanges, ChainView, Rejection};

/// Verifies every input's script; the first failure as consensus words it
/// ([`BlockRejection::Script`]). The precomputation and the checker fail
/// only on counts and indices, which `find_coins` made match.
fn verify_inputs(
    transaction: &TransactionView<'_>,
    txid: Txid,
    spent: &[&SpentCoinBuf],
    flags: VerifyFlags,
) -> Result<u64, Rejection> {
    let spent_outputs: Vec<SpentOutput<'_>> =
        spent.iter().map(|coin| SpentOutput::from(coin.as_spent_coin())).collect();
    let precomputed = PrecomputedTransactionData::new(transaction, &spent_outputs)
        .map_err(|error| Rejection::new(error.to_string()))?;
    for (input, (spending, spent_output)) in
        transaction.inputs().iter().zip(&spent_outputs).enumerate()
    {
        let checker = TransactionChecker::new(*transaction, input, *spent_output, &precomputed)
            .map_err(|error| Rejection::new(error.to_string()))?;
        let witness = spending.witness.to_vec();
        verify_script(spending.script_sig, spent_output.script_pubkey, &witness, flags, &checker)
            .map_err(|error| BlockRejection::Script { txid, input, error })?;
    }
    Ok(transaction.inputs().len() as u64)
}

/// Looks up every input's coin: in the block's own earlier outputs or the
/// view, and not spent yet (consensus's verdict when one is not).
fn find_coins<'a>(
    base: &'a ChainView,
    created: &'a HashMap<OutPoint, SpentCoinBuf>,
    spent: &HashSet<OutPoint>,
    transaction: &TransactionView<'_>,
    txid: Txid,
) -> Result<Vec<&'a SpentCoinBuf>, BlockRejection> {
    transaction
        .inputs()
        .iter()
        .enumerate()
        .map(|(input, spending)| {
            let outpoint = spending.previous_output();
            let coin = created.get(&outpoint).or_else(|| base.coins.get(&outpoint));
            match coin {
                Some(coin) if !spent.contains(&outpoint) => Ok(coin),
                _ => Err(BlockRejection::MissingInput { txid, input }),
            }
        })
        .collect()
}

/// The coins as consensus's connect rules read them.
fn spent_coins<'a>(coins: &[&'a SpentCoinBuf]) -> Vec<SpentCoin<'a>> {
    coins.iter().map(|coin| coin.as_spent_coin()).collect()
}

/// Adds a transaction's spendable outputs to the block's new coins.
fn add_outputs(
    transaction: &TransactionView<'_>,
    height: Height,
    is_coinbase: bool,
    created: &mut HashMap<OutPoint, SpentCoinBuf>,
    changes: &mut BlockChanges,
) -> Result<(), Rejection> {
    let txid = transaction.txid();
    for (vout, output) in transaction.outputs().iter().enumerate() {
        if is_unspendable(output.script_pubkey) {
            continue;
        }
        // CheckTransaction bounded every output value already; a block that
        // skipped it fails with its reason.
        let value = output_amount(output.value, vout)
            .map_err(|source| BlockRejection::Transaction { txid, source })?;
        let script_pubkey = output.script_pubkey.to_vec();
        let coin = SpentCoinBuf { value, script_pubkey, height, is_coinbase };
        let outpoint = OutPoint { txid, vout: vout as u32 };
        created.insert(outpoint, coin.clone());
        changes.created.push((outpoint, coin));
    }
    Ok(())
}

/// Connects `block` on `base` without changing it; returns what it would change.
pub(crate) fn connect(
    params: &Params,
    base: &ChainView,
    block: &BlockView<'_>,
) -> Result<BlockChanges, Rejection> {
    let height = Height::new(base.height + 1);
    let flags = block_script_flags(params, height, &block.block_hash());
    let median_time_past_at =
        |at: Height| base.median_time_past.get(at.to_u32() as usize).copied().unwrap_or(0);
    let rules = ConnectRules {
        params,
        height,
        flags,
        enforce_sequence_locks: params
            .deployment_active_at(BuriedDeployment::CheckSequenceVerify, height),
        previous_median_time_past: base.median_time_past.last().copied().unwrap_or(0),
        median_time_past_at: &median_time_past_at,
    };
    let mut check = BlockConnectCheck::new(&rules);
    let mut created: HashMap<OutPoint, SpentCoinBuf> = HashMap::new();
    let mut spent: HashSet<OutPoint> = HashSet::new();
    let mut changes = BlockChanges::default();
    let mut script_failure = None;
    for (index, transaction) in block.transactions().enumerate() {
        if index > 0 {
            let txid = transaction.txid();
            let coins = find_coins(base, &created, &spent, &transaction, txid)?;
            check.transaction(&transaction, &txid, &spent_coins(&coins))?;
            match verify_inputs(&transaction, txid, &coins, flags) {
                Ok(count) => changes.inputs_verified += count,
                Err(rejection) => script_failure = script_failure.or(Some(rejection)),
            }
            for input in transaction.inputs() {
                spent.insert(input.previous_output());
                changes.spent.push(input.previous_output());
            }
        } else {
            check.coinbase(&transaction)?;
        }
        add_outputs(&transaction, height, index == 0, &mut created, &mut changes)?;
    }
    // Core checks the amount before it waits for the (parallel) script checks.
    check.finish(block)?;
    match script_failure {
        Some(rejection) => Err(rejection),
        None => Ok(changes),
    }
}
