//! Absolute and relative lock times: Core's `IsFinalTx` (with the BIP113 cutoff
//! chosen by the caller) and BIP68 sequence locks (`CalculateSequenceLocks`,
//! `EvaluateSequenceLocks`).

use crate::limits::{
    LOCKTIME_THRESHOLD, SEQUENCE_FINAL, SEQUENCE_LOCKTIME_DISABLE_FLAG,
    SEQUENCE_LOCKTIME_GRANULARITY, SEQUENCE_LOCKTIME_MASK, SEQUENCE_LOCKTIME_TYPE_FLAG,
};
use ibex_primitives::{Height, TransactionView};

/// Core's `IsFinalTx`: whether the transaction may be in a block at
/// `block_height` whose lock-time cutoff is `block_time` (the previous block's
/// median time past once BIP113 is active, else the block's own time).
pub fn is_final(transaction: &TransactionView<'_>, block_height: Height, block_time: i64) -> bool {
    let lock_time = transaction.lock_time();
    if lock_time == 0 {
        return true;
    }
    let threshold =
        if lock_time < LOCKTIME_THRESHOLD { i64::from(block_height) } else { block_time };
    if i64::from(lock_time) < threshold {
        return true;
    }
    transaction.inputs().iter().all(|input| input.sequence == SEQUENCE_FINAL)
}

/// The earliest height and time a transaction's BIP68 locks allow, as "last
/// invalid" values (-1 when unconstrained), like Core's `CalculateSequenceLocks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SequenceLocks {
    /// The transaction is invalid at this height and below.
    pub height: i64,
    /// The transaction is invalid while the previous block's median time past is at or below this.
    pub time: i64,
}

/// Core's `CalculateSequenceLocks` for a transaction whose `i`th input
/// spends a coin created at the `i`th of `coin_heights` (an iterator, so
/// the caller's spent coins are read in place). `enforce` is whether BIP68
/// is active (CSV deployment). `median_time_past_of_height(h)` gives the
/// median time past of the active-chain block at height `h` (for
/// time-based locks: Core uses the block *before* the coin's block).
pub fn sequence_locks(
    transaction: &TransactionView<'_>,
    enforce: bool,
    coin_heights: impl IntoIterator<Item = Height>,
    median_time_past_of_height: impl Fn(Height) -> i64,
) -> SequenceLocks {
    let mut locks = SequenceLocks { height: -1, time: -1 };
    // Core compares the version as unsigned: negative versions count as >= 2.
    let version_enforces = transaction.version() as u32 >= 2;
    if !enforce || !version_enforces {
        return locks;
    }
    for (input, coin_height) in transaction.inputs().iter().zip(coin_heights) {
        let sequence = input.sequence;
        if sequence & SEQUENCE_LOCKTIME_DISABLE_FLAG != 0 {
            continue;
        }
        let value = i64::from(sequence & SEQUENCE_LOCKTIME_MASK);
        if sequence & SEQUENCE_LOCKTIME_TYPE_FLAG != 0 {
            let coin_time = median_time_past_of_height(coin_height.saturating_sub(1));
            let lock_time = coin_time + (value << SEQUENCE_LOCKTIME_GRANULARITY) - 1;
            locks.time = locks.time.max(lock_time);
        } else {
            locks.height = locks.height.max(i64::from(coin_height) + value - 1);
        }
    }
    locks
}

/// Core's `EvaluateSequenceLocks`: whether a block at `block_height` whose
/// previous block has median time past `previous_median_time_past` satisfies them.
pub fn sequence_locks_satisfied(
    locks: SequenceLocks,
    block_height: Height,
    previous_median_time_past: i64,
) -> bool {
    locks.height < i64::from(block_height) && locks.time < previous_median_time_past
}

/// The scriptSig prefix BIP34 requires of a coinbase at `height`: Core's
/// `CScript() << height` (OP_0, OP_1..OP_16, or a minimal little-endian push).
pub fn bip34_height_prefix(height: Height) -> Vec<u8> {
    let height = height.to_u32();
    match height {
        0 => vec![0x00],
        1..=16 => vec![0x50 + height as u8],
        _ => {
            let mut number = Vec::with_capacity(5);
            let mut rest = height;
            while rest > 0 {
                number.push((rest & 0xff) as u8);
                rest >>= 8;
            }
            // A set high bit would read as negative: add a zero byte.
            if number.last().is_some_and(|byte| byte & 0x80 != 0) {
                number.push(0);
            }
            let mut script = Vec::with_capacity(number.len() + 1);
            script.push(number.len() as u8);
            script.extend_from_slice(&number);
            script
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::{OutPoint, ParsedTransaction, Transaction, TxInput, TxOutput};

    fn transaction(version: i32, lock_time: u32, sequences: &[u32]) -> Vec<u8> {
        Transaction {
            version,
            inputs: sequences
                .iter()
                .enumerate()
                .map(|(index, &sequence)| TxInput {
                    previous_output: OutPoint {
                        txid: ibex_primitives::Txid([1; 32]),
                        vout: index as u32,
                    },
                    sequence,
                    ..TxInput::default()
                })
                .collect(),
            outputs: vec![TxOutput { value: 1, script_pubkey: vec![] }],
            lock_time,
        }
        .encode()
    }

    #[test]
    fn finality_by_height_time_and_sequence() {
        let bytes = transaction(1, 100, &[0]);
        let view = ParsedTransaction::parse(&bytes).unwrap();
        let at = Height::new;
        assert!(!is_final(&view.view(), at(100), 0), "lock time equal to height is not final");
        assert!(is_final(&view.view(), at(101), 0));
        let bytes = transaction(1, 100, &[SEQUENCE_FINAL]);
        assert!(is_final(&ParsedTransaction::parse(&bytes).unwrap().view(), at(1), 0));
        let bytes = transaction(1, LOCKTIME_THRESHOLD + 10, &[0]);
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        assert!(!is_final(&parsed.view(), at(1_000_000), i64::from(LOCKTIME_THRESHOLD + 10)));
        assert!(is_final(&parsed.view(), at(1), i64::from(LOCKTIME_THRESHOLD + 11)));
    }

    #[test]
    fn bip68_height_and_time_locks() {
        let time_lock = SEQUENCE_LOCKTIME_TYPE_FLAG | 3; // 3 * 512 seconds
        let bytes = transaction(2, 0, &[10, time_lock, SEQUENCE_LOCKTIME_DISABLE_FLAG | 500]);
        let parsed = ParsedTransaction::parse(&bytes).unwrap();
        let coin_heights = [100, 200, 300].map(Height::new);
        let locks =
            sequence_locks(&parsed.view(), true, coin_heights, |height| i64::from(height) * 1000);
        assert_eq!(locks, SequenceLocks { height: 109, time: 199_000 + 3 * 512 - 1 });
        assert!(!sequence_locks_satisfied(locks, Height::new(109), 1_000_000));
        assert!(!sequence_locks_satisfied(locks, Height::new(110), locks.time));
        assert!(sequence_locks_satisfied(locks, Height::new(110), locks.time + 1));
        let unenforced = sequence_locks(&parsed.view(), false, coin_heights, |_| 0);
        assert_eq!(unenforced, SequenceLocks { height: -1, time: -1 });
        // Version 1 does not enforce; a negative version does (unsigned compare).
        for (version, enforced) in [(1, false), (-1, true)] {
            let bytes = transaction(version, 0, &[10]);
            let locks = sequence_locks(
                &ParsedTransaction::parse(&bytes).unwrap().view(),
                true,
                [Height::new(5)],
                |_| 0,
            );
            assert_eq!(locks.height != -1, enforced, "version {version}");
        }
    }

    #[test]
    fn bip34_prefixes_match_core_script_numbers() {
        let prefix = |height: u32| bip34_height_prefix(Height::new(height));
        assert_eq!(prefix(0), [0x00]);
        assert_eq!(prefix(16), [0x60]);
        assert_eq!(prefix(17), [0x01, 0x11]);
        assert_eq!(prefix(128), [0x02, 0x80, 0x00]);
        assert_eq!(prefix(227_931), [0x03, 0x5b, 0x7a, 0x03]);
    }
}
