//! Spending rules: Core's `Consensus::CheckTxInputs`, given the coins the
//! transaction spends (looked up by the chainstate, which reports missing ones).

use crate::error::TransactionError;
use crate::limits::COINBASE_MATURITY;
use crate::transaction::transaction_value_out;
use ibex_primitives::{Amount, Height, SpentCoin, TransactionView};

/// Core's `CheckTxInputs` for a non-coinbase transaction spent at `spend_height`;
/// `spent[i]` is the coin input `i` spends. Returns the fee.
///
/// Core checks `MoneyRange` on each spent value and on the running sum
/// (`bad-txns-inputvalues-outofrange`): each value is an [`Amount`], so
/// only the sum can leave the range.
pub fn check_transaction_inputs(
    transaction: &TransactionView<'_>,
    spent: &[SpentCoin<'_>],
    spend_height: Height,
) -> Result<Amount, TransactionError> {
    if spent.len() != transaction.inputs().len() {
        return Err(TransactionError::MissingOrSpent { input: spent.len() });
    }
    let mut value_in = Amount::ZERO;
    for (input, coin) in spent.iter().enumerate() {
        if coin.is_coinbase {
            let depth = spend_height.blocks_since(coin.height);
            if depth < COINBASE_MATURITY {
                return Err(TransactionError::PrematureCoinbaseSpend { input, depth });
            }
        }
        value_in = value_in
            .checked_add(coin.value)
            .ok_or(TransactionError::InputValuesOutOfRange { input })?;
    }
    // CheckTransaction has bounded every output and their sum by MAX_MONEY;
    // a transaction that skipped it fails here with its reason.
    let value_out = transaction_value_out(transaction)?;
    if value_in < value_out {
        return Err(TransactionError::InputsBelowOutputs { value_in, value_out });
    }
    // Core's `MoneyRange(txfee)`: cannot fail once value_in >= value_out.
    value_in.checked_sub(value_out).ok_or(TransactionError::FeeOutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};
    use ibex_primitives::{COIN, MAX_MONEY};

    /// A transaction spending `input_count` outpoints into `outputs`.
    fn spending(input_count: u8, outputs: &[i64]) -> Vec<u8> {
        Transaction {
            version: 2,
            inputs: (0..input_count)
                .map(|index| TxInput {
                    previous_output: OutPoint { txid: Txid([index + 1; 32]), vout: 0 },
                    script_sig: vec![],
                    sequence: u32::MAX,
                    witness: vec![],
                })
                .collect(),
            outputs: outputs
                .iter()
                .map(|&value| TxOutput { value, script_pubkey: vec![0x51] })
                .collect(),
            lock_time: 0,
        }
        .encode()
    }

    fn coin(satoshis: i64) -> SpentCoin<'static> {
        let value = Amount::from_sat(satoshis).unwrap();
        SpentCoin { value, script_pubkey: &[0x51], height: Height::new(1), is_coinbase: false }
    }

    fn check(bytes: &[u8], spent: &[SpentCoin<'_>]) -> Result<Amount, TransactionError> {
        check_transaction_inputs(
            &ParsedTransaction::parse(bytes).unwrap().view(),
            spent,
            Height::new(200),
        )
    }

    #[test]
    fn the_fee_is_inputs_minus_outputs() {
        let bytes = spending(2, &[COIN, 2 * COIN]);
        assert_eq!(
            check(&bytes, &[coin(2 * COIN), coin(COIN + 500)]),
            Ok(Amount::from_sat_u32(500))
        );
        assert_eq!(check(&bytes, &[coin(2 * COIN), coin(COIN)]), Ok(Amount::ZERO));
        assert_eq!(
            check(&bytes, &[coin(2 * COIN), coin(COIN - 1)]),
            Err(TransactionError::InputsBelowOutputs {
                value_in: Amount::from_sat(3 * COIN - 1).unwrap(),
                value_out: Amount::from_sat(3 * COIN).unwrap(),
            })
        );
    }

    #[test]
    fn the_input_sum_must_stay_in_the_money_range() {
        let bytes = spending(3, &[1]);
        assert_eq!(
            check(&bytes, &[coin(MAX_MONEY - 2), coin(1), coin(1)]),
            Ok(Amount::MAX.checked_sub(Amount::from_sat_u32(1)).unwrap())
        );
        assert_eq!(
            check(&bytes, &[coin(MAX_MONEY), coin(0), coin(1)]),
            Err(TransactionError::InputValuesOutOfRange { input: 2 })
        );
        assert_eq!(
            check(&bytes, &[coin(MAX_MONEY), coin(MAX_MONEY), coin(0)]),
            Err(TransactionError::InputValuesOutOfRange { input: 1 })
        );
    }

    #[test]
    fn outputs_that_skipped_check_transaction_fail_with_its_reason() {
        let bytes = spending(1, &[-5]);
        assert_eq!(
            check(&bytes, &[coin(COIN)]),
            Err(TransactionError::NegativeOutput { output: 0 })
        );
        let bytes = spending(1, &[MAX_MONEY, MAX_MONEY]);
        assert_eq!(check(&bytes, &[coin(MAX_MONEY)]), Err(TransactionError::OutputTotalTooLarge));
    }

    #[test]
    fn coinbase_coins_mature_after_one_hundred_blocks() {
        let bytes = spending(1, &[1]);
        let young = SpentCoin { height: Height::new(101), is_coinbase: true, ..coin(COIN) };
        assert_eq!(
            check(&bytes, &[young]),
            Err(TransactionError::PrematureCoinbaseSpend { input: 0, depth: 99 })
        );
        let mature = SpentCoin { height: Height::new(100), ..young };
        assert_eq!(check(&bytes, &[mature]), Ok(Amount::from_sat(COIN - 1).unwrap()));
    }
}
