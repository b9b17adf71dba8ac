//! Context-free transaction checks: Core's `CheckTransaction`.
//!
//! Napkin math: run on every transaction of every block (~2,500 per full block).
//! All checks are a pass over the views; the duplicate-input check is the only
//! non-linear one. Most transactions have one or two inputs, compared directly;
//! larger ones sort borrowed 36-byte outpoints (no hashing, no allocation per
//! input beyond one vector of references), as Core's recent CheckBlock does.

use crate::error::TransactionError;
use crate::limits::{BLOCK_WEIGHT_MAX, WITNESS_SCALE_FACTOR};
use ibex_primitives::{Amount, AmountError, TransactionView};

/// Inputs up to this count are checked for duplicates pairwise.
const DUPLICATE_CHECK_PAIRWISE_INPUTS_MAX: usize = 8;

/// Index of an input spending the same outpoint as an earlier one, if any.
pub fn find_duplicate_input(transaction: &TransactionView<'_>) -> Option<usize> {
    let inputs = transaction.inputs();
    match inputs.len() {
        0 | 1 => None,
        2 => (inputs[0].previous_output_bytes() == inputs[1].previous_output_bytes()).then_some(1),
        count if count <= DUPLICATE_CHECK_PAIRWISE_INPUTS_MAX => (1..count).find(|&later| {
            let outpoint = inputs[later].previous_output_bytes();
            inputs[..later].iter().any(|earlier| earlier.previous_output_bytes() == outpoint)
        }),
        _ => {
            let mut sorted: Vec<(&[u8; 36], usize)> = inputs
                .iter()
                .enumerate()
                .map(|(index, input)| (input.previous_output_bytes(), index))
                .collect();
            sorted.sort_unstable();
            sorted.windows(2).find(|pair| pair[0].0 == pair[1].0).map(|pair| pair[1].1)
        }
    }
}

/// Output `output`'s value, as decoded from the wire (any `i64`), as an
/// [`Amount`]: CheckTransaction's per-output rules (`bad-txns-vout-negative`,
/// `bad-txns-vout-toolarge`).
pub fn output_amount(value: i64, output: usize) -> Result<Amount, TransactionError> {
    Amount::from_sat(value).map_err(|error| match error {
        AmountError::Negative(_) => TransactionError::NegativeOutput { output },
        _ => TransactionError::OutputTooLarge { output },
    })
}

/// The sum of the transaction's outputs (Core's `GetValueOut`), with
/// CheckTransaction's rules and reasons: each output in the money range,
/// then each running sum (`bad-txns-txouttotal-toolarge`). Past
/// CheckTransaction it cannot fail; where Core's `GetValueOut` would throw
/// on a transaction that skipped it, this gives CheckTransaction's reason.
pub fn transaction_value_out(
    transaction: &TransactionView<'_>,
) -> Result<Amount, TransactionError> {
    let mut value_out = Amount::ZERO;
    for (output, view) in transaction.outputs().iter().enumerate() {
        let value = output_amount(view.value, output)?;
        value_out = value_out.checked_add(value).ok_or(TransactionError::OutputTotalTooLarge)?;
    }
    Ok(value_out)
}

/// Core's `CheckTransaction`: rules that need nothing but the transaction.
pub fn check_transaction(transaction: &TransactionView<'_>) -> Result<(), TransactionError> {
    if transaction.inputs().is_empty() {
        return Err(TransactionError::NoInputs);
    }
    if transaction.outputs().is_empty() {
        return Err(TransactionError::NoOutputs);
    }
    let base_bytes = transaction.base_size();
    if base_bytes * WITNESS_SCALE_FACTOR > BLOCK_WEIGHT_MAX {
        return Err(TransactionError::Oversize { base_bytes });
    }
    transaction_value_out(transaction)?;
    if let Some(input) = find_duplicate_input(transaction) {
        return Err(TransactionError::DuplicateInputs { input });
    }
    if transaction.is_coinbase() {
        let length = transaction.inputs()[0].script_sig.len();
        if !(2..=100).contains(&length) {
            return Err(TransactionError::CoinbaseLength { length });
        }
    } else if let Some(input) =
        transaction.inputs().iter().position(|input| input.previous_output().is_null())
    {
        return Err(TransactionError::NullPrevout { input });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput, Txid};

    fn spend(outpoints: &[(u8, u32)], values: &[i64]) -> Vec<u8> {
        Transaction {
            version: 2,
            inputs: outpoints
                .iter()
                .map(|&(byte, vout)| TxInput {
                    previous_output: OutPoint { txid: Txid([byte; 32]), vout },
                    script_sig: vec![],
                    sequence: u32::MAX,
                    witness: vec![],
                })
                .collect(),
            outputs: values
                .iter()
                .map(|&value| TxOutput { value, script_pubkey: vec![0x51] })
                .collect(),
            lock_time: 0,
        }
        .encode()
    }

    fn check(bytes: &[u8]) -> Result<(), TransactionError> {
        check_transaction(&ParsedTransaction::parse(bytes).unwrap().view())
    }

    #[test]
    fn duplicate_inputs_found_at_every_size() {
        for count in [2usize, 3, 8, 9, 50] {
            let mut outpoints: Vec<(u8, u32)> = (0..count).map(|i| (1, i as u32)).collect();
            assert_eq!(check(&spend(&outpoints, &[1])), Ok(()), "{count} distinct");
            outpoints[count - 1] = outpoints[0];
            assert!(
                matches!(
                    check(&spend(&outpoints, &[1])),
                    Err(TransactionError::DuplicateInputs { .. })
                ),
                "{count} with a duplicate"
            );
        }
    }

    #[test]
    fn output_value_rules() {
        let max = ibex_primitives::MAX_MONEY;
        assert_eq!(
            check(&spend(&[(1, 0)], &[-1])),
            Err(TransactionError::NegativeOutput { output: 0 })
        );
        assert_eq!(
            check(&spend(&[(1, 0)], &[max + 1])),
            Err(TransactionError::OutputTooLarge { output: 0 })
        );
        assert_eq!(check(&spend(&[(1, 0)], &[max, 1])), Err(TransactionError::OutputTotalTooLarge));
        assert_eq!(check(&spend(&[(1, 0)], &[max])), Ok(()));
        assert_eq!(check(&spend(&[(1, 0)], &[])), Err(TransactionError::NoOutputs));
        // No inputs: the only encoding Core's parser reads back as an empty input
        // list is version, 0x00, a zero flag byte and the lock time.
        assert_eq!(check(&[2, 0, 0, 0, 0, 0, 0, 0, 0, 0]), Err(TransactionError::NoInputs));
    }

    #[test]
    fn value_out_is_an_amount_with_check_transaction_reasons() {
        let max = ibex_primitives::MAX_MONEY;
        let value_out = |values: &[i64]| {
            let bytes = spend(&[(1, 0)], values);
            transaction_value_out(&ParsedTransaction::parse(&bytes).unwrap().view())
        };
        assert_eq!(value_out(&[max - 1, 1]), Ok(Amount::MAX));
        assert_eq!(value_out(&[]), Ok(Amount::ZERO));
        assert_eq!(value_out(&[5, i64::MIN]), Err(TransactionError::NegativeOutput { output: 1 }));
        assert_eq!(value_out(&[i64::MAX]), Err(TransactionError::OutputTooLarge { output: 0 }));
        // In Core's order: the running sum fails before a later bad output is seen.
        assert_eq!(value_out(&[max, 1, -1]), Err(TransactionError::OutputTotalTooLarge));
        assert_eq!(output_amount(0, 3), Ok(Amount::ZERO));
        assert_eq!(output_amount(-1, 3), Err(TransactionError::NegativeOutput { output: 3 }));
        assert_eq!(output_amount(max + 1, 3), Err(TransactionError::OutputTooLarge { output: 3 }));
    }

    #[test]
    fn coinbase_length_and_null_prevouts() {
        let mut coinbase = Transaction::decode(&spend(&[(0, 0)], &[1])).unwrap();
        coinbase.inputs[0].previous_output = OutPoint::NULL;
        coinbase.inputs[0].script_sig = vec![0x51];
        assert_eq!(check(&coinbase.encode()), Err(TransactionError::CoinbaseLength { length: 1 }));
        coinbase.inputs[0].script_sig = vec![0x51; 2];
        assert_eq!(check(&coinbase.encode()), Ok(()));
        coinbase.inputs.push(coinbase.inputs[0].clone());
        coinbase.inputs[1].previous_output.vout = 0;
        coinbase.inputs[1].script_sig.clear();
        // Two inputs: not a coinbase, and the first spends the null outpoint.
        assert_eq!(check(&coinbase.encode()), Err(TransactionError::NullPrevout { input: 0 }));
    }
}
