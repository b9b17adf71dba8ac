//! Context-free transaction checks: Core's `CheckTransaction`.
//!
//! Napkin math: run on every transaction of every block (~2,500 per full block).
//! All checks are a pass over the views; the duplicate-input check is the only
//! non-linear one. Most transactions have one or two inputs, compared directly;
//! larger ones sort borrowed 36-byte outpoints (no hashing, no allocation per
//! input beyond one vector of references), as Core's recent CheckBlock does.

use crate::error::TransactionError;
use crate::limits::{BLOCK_WEIGHT_MAX, WITNESS_SCALE_FACTOR};
use ibex_primitives::amount::money_range;
use ibex_primitives::TransactionView;

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
    let mut value_out: i64 = 0;
    for (output, view) in transaction.outputs().iter().enumerate() {
        if view.value < 0 {
            return Err(TransactionError::NegativeOutput { output });
        }
        if !money_range(view.value) {
            return Err(TransactionError::OutputTooLarge { output });
        }
        // Both terms are within 0..=MAX_MONEY, so the sum cannot overflow.
        value_out += view.value;
        if !money_range(value_out) {
            return Err(TransactionError::OutputTotalTooLarge);
        }
    }
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
