//! Spending rules: Core's `Consensus::CheckTxInputs`, given the coins the
//! transaction spends (looked up by the chainstate, which reports missing ones).

use crate::error::TransactionError;
use crate::limits::COINBASE_MATURITY;
use ibex_primitives::amount::money_range;
use ibex_primitives::TransactionView;

/// What the rules need to know of a spent coin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpentCoin<'a> {
    /// Value in satoshis.
    pub value: i64,
    /// The locking script.
    pub script_pubkey: &'a [u8],
    /// Height of the block that created it.
    pub height: u32,
    /// Whether a coinbase created it.
    pub is_coinbase: bool,
}

/// Core's `CheckTxInputs` for a non-coinbase transaction spent at `spend_height`;
/// `spent[i]` is the coin input `i` spends. Returns the fee.
pub fn check_transaction_inputs(
    transaction: &TransactionView<'_>,
    spent: &[SpentCoin<'_>],
    spend_height: u32,
) -> Result<i64, TransactionError> {
    if spent.len() != transaction.inputs().len() {
        return Err(TransactionError::MissingOrSpent { input: spent.len() });
    }
    let mut value_in: i64 = 0;
    for (input, coin) in spent.iter().enumerate() {
        if coin.is_coinbase {
            let depth = spend_height.saturating_sub(coin.height);
            if depth < COINBASE_MATURITY {
                return Err(TransactionError::PrematureCoinbaseSpend { input, depth });
            }
        }
        if !money_range(coin.value) {
            return Err(TransactionError::InputValuesOutOfRange { input });
        }
        value_in += coin.value;
        if !money_range(value_in) {
            return Err(TransactionError::InputValuesOutOfRange { input });
        }
    }
    // CheckTransaction has bounded every output and their sum by MAX_MONEY.
    let value_out: i64 = transaction.outputs().iter().map(|output| output.value).sum();
    if value_in < value_out {
        return Err(TransactionError::InputsBelowOutputs { value_in, value_out });
    }
    let fee = value_in - value_out;
    if !money_range(fee) {
        return Err(TransactionError::FeeOutOfRange);
    }
    Ok(fee)
}
