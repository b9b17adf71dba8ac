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

use ibex_primitives::{BlockView, TransactionView, Txid};
use ibex_script::{
    verify_input, PrecomputedTransactionData, ScriptError, SpentOutput, TransactionChecker,
    VerifyFlags,
};
use rayon::prelude::*;

use crate::error::ChainstateError;
use crate::rejection::BlockRejection;
use crate::undo::BlockUndo;

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

    /// Threads in the pool.
    pub fn thread_count(&self) -> usize {
        self.pool.current_num_threads()
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

/// Checks every non-coinbase input of `block` against the coins in `undo`
/// under `flags`. Returns the number of inputs checked.
pub fn verify_block_scripts(
    block: &BlockView<'_>,
    txids: &[Txid],
    undo: &BlockUndo,
    flags: VerifyFlags,
    threads: &ScriptThreads,
) -> Result<u64, BlockRejection> {
    let transaction_count = block.transaction_count();
    let failure = threads.install(|| {
        (1..transaction_count).into_par_iter().find_map_first(|index| {
            let transaction = block.transaction(index)?;
            let record = undo.transactions.get(index - 1)?;
            verify_transaction(&transaction, &record.spent, flags)
                .err()
                .map(|(input, error)| BlockRejection::Script { txid: txids[index], input, error })
        })
    });
    match failure {
        Some(rejection) => Err(rejection),
        None => Ok(block.input_count().saturating_sub(1) as u64),
    }
}

/// Checks one transaction's inputs; the first failure (input, error).
fn verify_transaction(
    transaction: &TransactionView<'_>,
    spent: &[crate::coin::Coin],
    flags: VerifyFlags,
) -> Result<(), (usize, ScriptError)> {
    let spent_outputs: Vec<SpentOutput<'_>> = spent
        .iter()
        .map(|coin| SpentOutput {
            amount: coin.amount().to_sat(),
            script_pubkey: coin.script_pubkey(),
        })
        .collect();
    let precomputed = PrecomputedTransactionData::new(transaction, &spent_outputs)
        .map_err(|_| (0, ScriptError::UnknownError))?;
    let check = |input_index: usize| -> Result<(), (usize, ScriptError)> {
        let input = &transaction.inputs()[input_index];
        let spent_output = spent_outputs[input_index];
        let checker =
            TransactionChecker::new(*transaction, input_index, spent_output, &precomputed)
                .map_err(|_| (input_index, ScriptError::UnknownError))?;
        verify_input(input.script_sig, spent_output.script_pubkey, input.witness, flags, &checker)
            .map_err(|error| (input_index, error))
    };
    let input_count = transaction.inputs().len().min(spent_outputs.len());
    if input_count < PARALLEL_INPUTS_MIN {
        return (0..input_count).try_for_each(check);
    }
    match (0..input_count).into_par_iter().find_map_first(|index| check(index).err()) {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}
