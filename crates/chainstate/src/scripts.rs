//! Checking a block's input scripts on every core (Core's `CCheckQueue`
//! with `-par` threads).
//!
//! # Napkin math
//! An input costs ~32 us of signature work (ECDSA or Schnorr verify) and
//! ~1 us of everything else (sighash midstates are precomputed once per
//! transaction, BIP143/BIP341). A 2017-era block has ~5,000 inputs: ~160 ms
//! on one core, ~80 ms on two. Work is split per transaction and, inside
//! transactions with many inputs, per input, so one large consolidation
//! does not leave cores idle (rayon's work stealing balances both levels).
//! The first failure in block order is reported, so the reason does not
//! depend on thread timing.

use ibex_primitives::{BlockView, SpentCoin, TransactionView, Txid};
use ibex_script::{
    verify_input, PrecomputedTransactionData, ScriptError, SpentOutput, TransactionChecker,
    VerifyFlags,
};
use rayon::prelude::*;

use crate::error::ChainstateError;
pub use crate::error::ScriptCheckBroken;
use crate::undo::BlockUndo;
use ibex_consensus::BlockRejection;

/// Inputs of one transaction below which they are checked on one thread.
const PARALLEL_INPUTS_MIN: usize = 16;

/// The threads scripts are checked on (cheap to clone: one shared pool).
#[derive(Debug, Clone)]
pub struct ScriptThreads {
    pool: std::sync::Arc<rayon::ThreadPool>,
}

impl ScriptThreads {
    /// A pool of `thread_count` threads (at least one).
    pub fn new(thread_count: usize) -> Result<ScriptThreads, ChainstateError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(thread_count.max(1))
            .thread_name(|index| format!("ibex-script-{index}"))
            .build()
            .map_err(|source| ChainstateError::ThreadPool { source })?;
        Ok(ScriptThreads { pool: std::sync::Arc::new(pool) })
    }

    /// Starts `work` on the pool and returns at once.
    pub fn spawn(&self, work: impl FnOnce() + Send + 'static) {
        self.pool.spawn(work);
    }

    /// Runs `work` on the pool.
    pub fn install<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        self.pool.install(work)
    }
}

/// What stops a block's script check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptCheckError {
    /// An input's script fails: the block is invalid.
    Rejected(BlockRejection),
    /// The check could not be run as asked (see [`ScriptCheckBroken`]).
    Broken(ScriptCheckBroken),
}

impl From<ScriptCheckBroken> for ScriptCheckError {
    fn from(broken: ScriptCheckBroken) -> ScriptCheckError {
        ScriptCheckError::Broken(broken)
    }
}

/// Why one transaction's check stopped.
enum TransactionFailure {
    /// Input `input` fails with `error`.
    Script(usize, ScriptError),
    /// A broken invariant.
    Broken(ScriptCheckBroken),
}

/// Checks every non-coinbase input of `block` against the coins in `undo`
/// under `flags`. Returns the number of inputs checked. Every input is
/// checked or the check fails: a block, transaction ids and undo data that
/// do not fit together are [`ScriptCheckError::Broken`], never a pass.
pub fn verify_block_scripts(
    block: &BlockView<'_>,
    txids: &[Txid],
    undo: &BlockUndo,
    flags: VerifyFlags,
    threads: &ScriptThreads,
) -> Result<u64, ScriptCheckError> {
    let transaction_count = block.transaction_count();
    if txids.len() != transaction_count {
        let transactions = transaction_count;
        return Err(ScriptCheckBroken::TxidCount { txids: txids.len(), transactions }.into());
    }
    let transactions = transaction_count.saturating_sub(1);
    if undo.transactions.len() != transactions {
        let records = undo.transactions.len();
        return Err(ScriptCheckBroken::UndoRecordCount { records, transactions }.into());
    }
    let failure = threads.install(|| {
        (1..transaction_count).into_par_iter().find_map_first(|index| {
            let Some(transaction) = block.transaction(index) else {
                return Some(ScriptCheckBroken::MissingTransaction { index }.into());
            };
            let spent = &undo.transactions[index - 1].spent;
            match verify_transaction(index, &transaction, spent, flags) {
                Ok(()) => None,
                Err(TransactionFailure::Broken(broken)) => Some(broken.into()),
                Err(TransactionFailure::Script(input, error)) => {
                    let txid = txids[index];
                    Some(ScriptCheckError::Rejected(BlockRejection::Script { txid, input, error }))
                }
            }
        })
    });
    match failure {
        Some(failure) => Err(failure),
        None => Ok(block.input_count().saturating_sub(1) as u64),
    }
}

/// Checks the inputs of transaction `index`; the first failure.
fn verify_transaction(
    index: usize,
    transaction: &TransactionView<'_>,
    spent: &[crate::coins::coin::Coin],
    flags: VerifyFlags,
) -> Result<(), TransactionFailure> {
    let spent_outputs: Vec<SpentOutput<'_>> =
        spent.iter().map(|coin| SpentOutput::from(coin.as_spent_coin())).collect();
    verify_inputs(index, transaction, &spent_outputs, flags, true)
}

/// Checks the inputs of transaction `index` against `spent`, on the
/// calling thread: for SwiftSync's fully validating pass, whose workers
/// each take whole blocks. The first failing input and its error, or a
/// broken invariant (coins that do not fit the inputs).
pub(crate) fn verify_transaction_here(
    index: usize,
    transaction: &TransactionView<'_>,
    spent: &[SpentCoin<'_>],
    flags: VerifyFlags,
) -> Result<(), Result<(usize, ScriptError), ScriptCheckBroken>> {
    let spent_outputs: Vec<SpentOutput<'_>> =
        spent.iter().copied().map(SpentOutput::from).collect();
    verify_inputs(index, transaction, &spent_outputs, flags, false).map_err(|failure| match failure
    {
        TransactionFailure::Script(input, error) => Ok((input, error)),
        TransactionFailure::Broken(broken) => Err(broken),
    })
}

/// Checks each input against its spent output, spread over the pool's
/// threads when `parallel` and the inputs are many.
fn verify_inputs(
    index: usize,
    transaction: &TransactionView<'_>,
    spent_outputs: &[SpentOutput<'_>],
    flags: VerifyFlags,
    parallel: bool,
) -> Result<(), TransactionFailure> {
    let input_count = transaction.inputs().len();
    let broken = || {
        TransactionFailure::Broken(ScriptCheckBroken::SpentCoinCount {
            index,
            inputs: input_count,
            spent: spent_outputs.len(),
        })
    };
    if spent_outputs.len() != input_count {
        return Err(broken());
    }
    // Both constructors fail only on counts and indices checked above.
    let precomputed =
        PrecomputedTransactionData::new(transaction, spent_outputs).map_err(|_| broken())?;
    let check = |input_index: usize| -> Result<(), TransactionFailure> {
        let input = &transaction.inputs()[input_index];
        let spent_output = spent_outputs[input_index];
        let checker =
            TransactionChecker::new(*transaction, input_index, spent_output, &precomputed)
                .map_err(|_| broken())?;
        verify_input(input.script_sig, spent_output.script_pubkey, input.witness, flags, &checker)
            .map_err(|error| TransactionFailure::Script(input_index, error))
    };
    if !parallel || input_count < PARALLEL_INPUTS_MIN {
        return (0..input_count).try_for_each(check);
    }
    match (0..input_count).into_par_iter().find_map_first(|index| check(index).err()) {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::undo::TransactionUndo;

    fn mainnet_block() -> Vec<u8> {
        let path = std::path::PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("../../../shared/vectors/blocks/mainnet-413567.raw");
        std::fs::read(path).unwrap()
    }

    /// Undo records with `spent(index, inputs)` coins for transaction `index`.
    fn undo_for(block: &BlockView<'_>, spent: impl Fn(usize, usize) -> usize) -> BlockUndo {
        let coin = crate::coins::coin::Coin::new(
            ibex_primitives::Amount::from_sat(1).unwrap(),
            [0x51],
            1,
            false,
        )
        .unwrap();
        let transactions = (1..block.transaction_count())
            .map(|index| {
                let inputs = block.transaction(index).unwrap().inputs().len();
                TransactionUndo { spent: vec![coin.clone(); spent(index, inputs)] }
            })
            .collect();
        BlockUndo { transactions }
    }

    fn check(bytes: &[u8], txids: &[Txid], undo: &BlockUndo) -> Result<u64, ScriptCheckError> {
        let block = BlockView::parse(bytes).unwrap();
        let threads = ScriptThreads::new(2).unwrap();
        verify_block_scripts(&block, txids, undo, VerifyFlags::NONE, &threads)
    }

    #[test]
    fn undo_and_ids_that_do_not_fit_the_block_fail_closed() {
        let bytes = mainnet_block();
        let block = BlockView::parse(&bytes).unwrap();
        let txids = block.txids();
        let transactions = block.transaction_count() - 1;

        // A missing undo record.
        let mut short = undo_for(&block, |_, inputs| inputs);
        short.transactions.pop();
        let broken = ScriptCheckBroken::UndoRecordCount { records: transactions - 1, transactions };
        assert_eq!(check(&bytes, &txids, &short), Err(broken.into()));

        // One spent coin short in the first transaction: a check of only
        // the inputs it has coins for would pass.
        let inputs = block.transaction(1).unwrap().inputs().len();
        let one_short = undo_for(&block, |index, inputs| inputs - usize::from(index == 1));
        let broken = ScriptCheckBroken::SpentCoinCount { index: 1, inputs, spent: inputs - 1 };
        assert_eq!(check(&bytes, &txids, &one_short), Err(broken.into()));

        // Transaction ids of another block.
        let broken = ScriptCheckBroken::TxidCount { txids: 1, transactions: transactions + 1 };
        let undo = undo_for(&block, |_, inputs| inputs);
        assert_eq!(check(&bytes, &txids[..1], &undo), Err(broken.into()));
    }
}
