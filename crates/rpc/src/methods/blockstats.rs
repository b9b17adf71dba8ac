//! `getblockstats` (Core's `rpc/blockchain.cpp`): per-block statistics
//! from the block and its undo data (the coins its inputs spent give the
//! fees), every one of Core's 31 values, or those the `stats` array
//! selects (sorted by name then, as Core's `std::set` orders them).
//!
//! Every value is computed whatever is selected: Core skips some loops
//! when few are asked for, but the values it then returns are the same.
//! Amounts are satoshis; fee rates are satoshis per virtual byte, rounded
//! down, as Core's integer division gives them.
//!
//! # Napkin math
//! A 1 MB block of ~2,500 transactions: one pass over the outputs and the
//! undo coins (~7,000 each), a sort of ~2,500 fees, sizes and fee rates:
//! well under a millisecond beside the block and undo reads (~1 ms each).

use std::collections::BTreeSet;

use ibex_primitives::params::is_bip30_repeat;
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{BlockHash, BlockView, Height, SpentCoinBuf, TransactionView, MAX_MONEY};
use serde_json::Value;

use super::error::{RpcError, RpcErrorCode};
use super::params::{hash, integer, string, wrong_type, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::BlockData;
use crate::json::{close_object, hash_string, key, open_object};
use crate::number::write_i64;

/// Core's `PER_UTXO_OVERHEAD`: an outpoint (36 bytes) and the height and
/// coinbase flag (4 bytes) per coin.
const PER_UTXO_OVERHEAD_BYTES: i64 = 36 + 4;
/// Core's `WITNESS_SCALE_FACTOR`.
const WITNESS_SCALE_FACTOR: i64 = 4;
/// Core's `MAX_BLOCK_SERIALIZED_SIZE`: `mintxsize`'s start value.
const BLOCK_SERIALIZED_BYTES_MAX: i64 = 4_000_000;

pub(super) const GETBLOCKSTATS: Method = Method {
    name: "getblockstats",
    category: "blockchain",
    args: &[
        arg("hash_or_height", ArgType::HashOrHeight, false, "the block's hash or its height in the active chain"),
        arg("stats", ArgType::Array, true, "the statistics to give, by name (default: all)"),
    ],
    description: "Statistics of one block: fees, fee rates, sizes, inputs and outputs, UTXO set change. Amounts in satoshis.",
    result: "{\"avgfee\",\"avgfeerate\",...,\"utxo_size_inc_actual\"}",
    handler: getblockstats,
};

fn getblockstats(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let block_hash = hash_or_height(context, params.get(0))?;
    let selected = selected_stats(params.optional(1))?;
    let stored = context.backend.block(&block_hash, true)?.ok_or_else(RpcError::block_not_found)?;
    let block = BlockView::parse(&stored.bytes).map_err(|_| {
        RpcError::with_message(
            RpcErrorCode::MiscError,
            format!("Block {block_hash} on disk does not parse"),
        )
    })?;
    let height = stored.entry.height;
    // The genesis block has no undo data (Core's `GetUndoChecked`).
    let spent_coins: &[SpentCoinBuf] = match (&stored.spent_coins, stored.entry.data) {
        _ if height == 0 => &[],
        (Some(coins), _) => coins,
        (None, BlockData::Pruned) => {
            return Err(RpcError::new(
                RpcErrorCode::MiscError,
                "Undo data not available (pruned data)",
            ))
        }
        (None, _) => return Err(RpcError::new(RpcErrorCode::MiscError, "Undo data not available")),
    };
    let subsidy = ibex_consensus::subsidy::block_subsidy(
        Height::new(height),
        context.params.subsidy_halving_interval,
    );
    let facts = BlockFacts {
        hash: block_hash,
        height,
        time: i64::from(stored.entry.header.time),
        median_time_past: stored.entry.median_time_past,
        subsidy_satoshis: subsidy.to_sat(),
    };
    let stats = compute(&block, spent_coins, &facts)?;
    write_stats(out, &stats, &selected)
}

/// Core's `ParseHashOrHeight`: a height in the active chain (as an `int`)
/// or a block hash.
pub(super) fn hash_or_height(
    context: &MethodContext,
    value: &Value,
) -> Result<BlockHash, RpcError> {
    if !value.is_number() {
        return Ok(BlockHash(hash(value, "hash_or_height")?));
    }
    let height = integer::<i32>(value)?;
    if height < 0 {
        return Err(RpcError::invalid_parameter(format!(
            "Target block height {height} is negative"
        )));
    }
    let tip = context.backend.tip()?;
    let after_tip = || {
        RpcError::invalid_parameter(format!(
            "Target block height {height} after current tip {}",
            tip.height
        ))
    };
    let height = height.unsigned_abs();
    if height > tip.height {
        return Err(after_tip());
    }
    context.backend.block_hash_at(height)?.ok_or_else(after_tip)
}

/// The names in `stats`, sorted and without repeats; empty for all.
fn selected_stats(value: Option<&Value>) -> Result<BTreeSet<&str>, RpcError> {
    let Some(value) = value else { return Ok(BTreeSet::new()) };
    let Value::Array(items) = value else { return Err(wrong_type(value, "array")) };
    items.iter().map(string).collect()
}

/// What the index says about the block.
struct BlockFacts {
    hash: BlockHash,
    height: u32,
    time: i64,
    median_time_past: i64,
    subsidy_satoshis: i64,
}

/// One statistic's value.
enum Stat {
    Number(i64),
    Hash(BlockHash),
    Percentiles([i64; 5]),
}

/// Running totals over the block's transactions.
#[derive(Default)]
struct Totals {
    inputs: i64,
    outputs: i64,
    total_out: i64,
    total_size: i64,
    total_weight: i64,
    total_fee: i64,
    segwit_transactions: i64,
    segwit_size: i64,
    segwit_weight: i64,
    utxos: i64,
    utxo_size_increase: i64,
    utxo_size_increase_actual: i64,
    fees: Vec<i64>,
    sizes: Vec<i64>,
    /// (fee rate, weight) of each transaction after the coinbase.
    fee_rates: Vec<(i64, i64)>,
}

/// A serialised output's size plus Core's per-coin overhead.
fn output_utxo_bytes(script_bytes: usize) -> i64 {
    let length_prefix = match script_bytes {
        0..=252 => 1,
        253..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    };
    8 + length_prefix + script_bytes as i64 + PER_UTXO_OVERHEAD_BYTES
}

/// Adds one transaction's outputs; returns their total value.
fn add_outputs(
    totals: &mut Totals,
    transaction: &TransactionView<'_>,
    counts_in_utxo_set: bool,
) -> i64 {
    let mut total_out = 0;
    for output in transaction.outputs() {
        total_out += output.value;
        let size = output_utxo_bytes(output.script_pubkey.len());
        totals.utxo_size_increase += size;
        if counts_in_utxo_set && !is_unspendable(output.script_pubkey) {
            totals.utxos += 1;
            totals.utxo_size_increase_actual += size;
        }
    }
    total_out
}

/// Adds a transaction after the coinbase, with the coins it spent.
fn add_spending_transaction(
    totals: &mut Totals,
    transaction: &TransactionView<'_>,
    spent: &[SpentCoinBuf],
    total_out: i64,
) -> Result<(), RpcError> {
    totals.inputs += transaction.inputs().len() as i64;
    totals.total_out += total_out;
    let size = transaction.total_size() as i64;
    let weight = transaction.weight() as i64;
    totals.sizes.push(size);
    totals.total_size += size;
    totals.total_weight += weight;
    if transaction.has_witness() {
        totals.segwit_transactions += 1;
        totals.segwit_size += size;
        totals.segwit_weight += weight;
    }
    let mut total_in = 0;
    for coin in spent {
        total_in += coin.value.to_sat();
        let size = output_utxo_bytes(coin.script_pubkey.len());
        totals.utxo_size_increase -= size;
        totals.utxo_size_increase_actual -= size;
    }
    let fee = total_in - total_out;
    if !(0..=MAX_MONEY).contains(&fee) {
        return Err(RpcError::with_message(
            RpcErrorCode::MiscError,
            format!("Internal bug detected: fee {fee} of {} out of range", transaction.txid()),
        ));
    }
    totals.fees.push(fee);
    totals.total_fee += fee;
    let fee_rate = if weight != 0 { fee * WITNESS_SCALE_FACTOR / weight } else { 0 };
    totals.fee_rates.push((fee_rate, weight));
    Ok(())
}

/// Every statistic, in Core's order (`ret_all`).
fn compute(
    block: &BlockView<'_>,
    spent_coins: &[SpentCoinBuf],
    facts: &BlockFacts,
) -> Result<Vec<(&'static str, Stat)>, RpcError> {
    let mut totals = Totals::default();
    let mut next_coin = 0;
    let duplicate_coinbase = is_bip30_repeat(facts.height, &facts.hash);
    for transaction in block.transactions() {
        totals.outputs += transaction.outputs().len() as i64;
        let coinbase = transaction.is_coinbase();
        // The genesis block's and the repeated BIP30 coinbases' outputs never
        // entered the UTXO set.
        let counts = facts.height != 0 && !(duplicate_coinbase && coinbase);
        let total_out = add_outputs(&mut totals, &transaction, counts);
        if coinbase {
            continue;
        }
        let inputs = transaction.inputs().len();
        let spent = spent_coins.get(next_coin..next_coin + inputs).ok_or_else(|| {
            RpcError::new(RpcErrorCode::MiscError, "Can't read undo data from disk")
        })?;
        next_coin += inputs;
        add_spending_transaction(&mut totals, &transaction, spent, total_out)?;
    }
    Ok(assemble(block.transaction_count() as i64, totals, facts))
}

/// Core's start value of a minimum, printed as 0 when nothing lowered it.
fn minimum_or_zero(values: impl Iterator<Item = i64>, start: i64) -> i64 {
    let minimum = values.fold(start, i64::min);
    if minimum == start {
        0
    } else {
        minimum
    }
}

fn assemble(
    transactions: i64,
    mut totals: Totals,
    facts: &BlockFacts,
) -> Vec<(&'static str, Stat)> {
    let spending = transactions - 1;
    let per_transaction = |total: i64| if spending > 0 { total / spending } else { 0 };
    let average_fee_rate = if totals.total_weight != 0 {
        totals.total_fee * WITNESS_SCALE_FACTOR / totals.total_weight
    } else {
        0
    };
    let rates = || totals.fee_rates.iter().map(|(rate, _)| *rate);
    let max_fee_rate = rates().fold(0, i64::max);
    let min_fee_rate = minimum_or_zero(rates(), MAX_MONEY);
    let max_fee = totals.fees.iter().copied().fold(0, i64::max);
    let min_fee = minimum_or_zero(totals.fees.iter().copied(), MAX_MONEY);
    let max_size = totals.sizes.iter().copied().fold(0, i64::max);
    let min_size = minimum_or_zero(totals.sizes.iter().copied(), BLOCK_SERIALIZED_BYTES_MAX);
    let median_fee = truncated_median(&mut totals.fees);
    let median_size = truncated_median(&mut totals.sizes);
    let percentiles = percentiles_by_weight(&mut totals.fee_rates, totals.total_weight);
    use Stat::Number;
    vec![
        ("avgfee", Number(per_transaction(totals.total_fee))),
        ("avgfeerate", Number(average_fee_rate)),
        ("avgtxsize", Number(per_transaction(totals.total_size))),
        ("blockhash", Stat::Hash(facts.hash)),
        ("feerate_percentiles", Stat::Percentiles(percentiles)),
        ("height", Number(i64::from(facts.height))),
        ("ins", Number(totals.inputs)),
        ("maxfee", Number(max_fee)),
        ("maxfeerate", Number(max_fee_rate)),
        ("maxtxsize", Number(max_size)),
        ("medianfee", Number(median_fee)),
        ("mediantime", Number(facts.median_time_past)),
        ("mediantxsize", Number(median_size)),
        ("minfee", Number(min_fee)),
        ("minfeerate", Number(min_fee_rate)),
        ("mintxsize", Number(min_size)),
        ("outs", Number(totals.outputs)),
        ("subsidy", Number(facts.subsidy_satoshis)),
        ("swtotal_size", Number(totals.segwit_size)),
        ("swtotal_weight", Number(totals.segwit_weight)),
        ("swtxs", Number(totals.segwit_transactions)),
        ("time", Number(facts.time)),
        ("total_out", Number(totals.total_out)),
        ("total_size", Number(totals.total_size)),
        ("total_weight", Number(totals.total_weight)),
        ("totalfee", Number(totals.total_fee)),
        ("txs", Number(transactions)),
        ("utxo_increase", Number(totals.outputs - totals.inputs)),
        ("utxo_size_inc", Number(totals.utxo_size_increase)),
        ("utxo_increase_actual", Number(totals.utxos - totals.inputs)),
        ("utxo_size_inc_actual", Number(totals.utxo_size_increase_actual)),
    ]
}

/// Core's `CalculateTruncatedMedian`: the middle value, or the mean of the
/// two middle ones rounded toward zero; 0 when empty.
fn truncated_median(values: &mut [i64]) -> i64 {
    values.sort_unstable();
    let middle = values.len() / 2;
    match values.len() {
        0 => 0,
        length if length % 2 == 0 => (values[middle - 1] + values[middle]) / 2,
        _ => values[middle],
    }
}

/// Core's `CalculatePercentilesByWeight`: the fee rate at which the
/// cumulative weight (fee rates ascending) first reaches 10, 25, 50, 75
/// and 90 % of the total; the highest rate for any not reached.
fn percentiles_by_weight(fee_rates: &mut [(i64, i64)], total_weight: i64) -> [i64; 5] {
    let mut result = [0; 5];
    let Some(highest) = fee_rates.iter().copied().max() else { return result };
    fee_rates.sort_unstable();
    // Core's expressions, in floating point as Core computes them.
    let total = total_weight as f64;
    let thresholds =
        [total / 10.0, total / 4.0, total / 2.0, total * 3.0 / 4.0, total * 9.0 / 10.0];
    let mut next = 0;
    let mut cumulative_weight: i64 = 0;
    for (fee_rate, weight) in fee_rates.iter() {
        cumulative_weight += weight;
        while next < thresholds.len() && cumulative_weight as f64 >= thresholds[next] {
            result[next] = *fee_rate;
            next += 1;
        }
    }
    for slot in result.iter_mut().skip(next) {
        *slot = highest.0;
    }
    result
}

/// Writes every statistic, or the selected ones (an unknown name is -8).
fn write_stats(
    out: &mut Vec<u8>,
    stats: &[(&'static str, Stat)],
    selected: &BTreeSet<&str>,
) -> Result<(), RpcError> {
    let chosen: Vec<&(&'static str, Stat)> = if selected.is_empty() {
        stats.iter().collect()
    } else {
        let mut chosen = Vec::with_capacity(selected.len());
        for name in selected {
            let stat = stats.iter().find(|(known, _)| known == name).ok_or_else(|| {
                RpcError::invalid_parameter(format!("Invalid selected statistic '{name}'"))
            })?;
            chosen.push(stat);
        }
        chosen
    };
    for (index, (name, stat)) in chosen.iter().enumerate() {
        if index == 0 {
            open_object(out, name);
        } else {
            key(out, name);
        }
        match stat {
            Stat::Number(value) => write_i64(out, *value),
            Stat::Hash(hash) => hash_string(out, &hash.0),
            Stat::Percentiles(values) => {
                out.push(b'[');
                for (position, value) in values.iter().enumerate() {
                    if position != 0 {
                        out.push(b',');
                    }
                    write_i64(out, *value);
                }
                out.push(b']');
            }
        }
    }
    if chosen.is_empty() {
        out.push(b'{');
    }
    close_object(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles_as_core_computes_them() {
        assert_eq!(truncated_median(&mut []), 0);
        assert_eq!(truncated_median(&mut [5]), 5);
        assert_eq!(truncated_median(&mut [9, 1, 4]), 4);
        assert_eq!(truncated_median(&mut [3, 1, 4, 2]), 2);
        assert_eq!(truncated_median(&mut [1, 2]), 1);
        assert_eq!(percentiles_by_weight(&mut [], 0), [0; 5]);
        // Weights 100 (rate 1), 300 (rate 5), 600 (rate 2): sorted by rate
        // the cumulative weights are 100, 700, 1000 for rates 1, 2, 5;
        // thresholds 100, 250, 500, 750, 900.
        let mut rates = [(1, 100), (5, 300), (2, 600)];
        assert_eq!(percentiles_by_weight(&mut rates, 1000), [1, 2, 2, 5, 5]);
        // A total weight of zero: every threshold is 0, reached at once.
        let mut zero = [(7, 0)];
        assert_eq!(percentiles_by_weight(&mut zero, 0), [7; 5]);
        // Thresholds past the last cumulative weight (a total larger than
        // the rates' weights) take the highest rate.
        let mut short = [(3, 10), (9, 10)];
        assert_eq!(percentiles_by_weight(&mut short, 100), [3, 9, 9, 9, 9]);
        assert_eq!(output_utxo_bytes(67), 8 + 1 + 67 + 40);
        assert_eq!(output_utxo_bytes(300), 8 + 3 + 300 + 40);
    }
}
