//! Context-free block checks: Core's `CheckBlock` (without the header's proof of
//! work, which [`crate::check_block_header`] checks with the network's parameters).
//!
//! Napkin math: the txids behind the merkle root are the block's most
//! expensive context-free work (~0.6 ms per MB with SHA-NI); they are
//! computed once, when the block is parsed
//! ([`ibex_primitives::ParsedBlock`]), and passed in here, so no stage
//! hashes a transaction twice.

use crate::error::{BlockError, LocatedTransactionError};
use crate::limits::{BLOCK_SIGOPS_COST_MAX, BLOCK_WEIGHT_MAX, WITNESS_SCALE_FACTOR};
use crate::transaction::check_transaction;
use ibex_primitives::{merkle_root, BlockView, TransactionView, Txid};
use ibex_script::sigops::legacy_sigop_count;

/// Core's `GetLegacySigOpCount`: inaccurate counts of every scriptSig and scriptPubKey.
pub fn transaction_legacy_sigops(transaction: &TransactionView<'_>) -> u64 {
    let inputs: usize =
        transaction.inputs().iter().map(|input| legacy_sigop_count(input.script_sig, false)).sum();
    let outputs: usize = transaction
        .outputs()
        .iter()
        .map(|output| legacy_sigop_count(output.script_pubkey, false))
        .sum();
    (inputs + outputs) as u64
}

/// Core's `CheckBlock` after the header: merkle root and mutation, size limits,
/// coinbase placement, every transaction's `CheckTransaction`, and the legacy
/// sigop limit. `txids` are the block's transaction ids in block order
/// (a caller's invariant: one per transaction).
pub fn check_block(block: &BlockView<'_>, txids: &[Txid]) -> Result<(), BlockError> {
    assert_eq!(txids.len(), block.transaction_count(), "one txid per transaction");
    let merkle = merkle_root(txids.iter().map(|txid| txid.0).collect());
    if merkle.root != block.header().merkle_root {
        return Err(BlockError::BadMerkleRoot);
    }
    // CVE-2012-2459: a list with duplicated siblings hashes to the same root as
    // the list without them; Core rejects it so the valid block stays acceptable.
    if merkle.mutated {
        return Err(BlockError::DuplicateTransactions);
    }
    let count = block.transaction_count();
    if count == 0
        || count * WITNESS_SCALE_FACTOR > BLOCK_WEIGHT_MAX
        || block.stripped_size() * WITNESS_SCALE_FACTOR > BLOCK_WEIGHT_MAX
    {
        return Err(BlockError::BadLength);
    }
    let mut transactions = block.transactions();
    if !transactions.next().is_some_and(|coinbase| coinbase.is_coinbase()) {
        return Err(BlockError::CoinbaseMissing);
    }
    if transactions.any(|transaction| transaction.is_coinbase()) {
        return Err(BlockError::CoinbaseMultiple);
    }
    let mut sigops: u64 = 0;
    for ((index, transaction), txid) in block.transactions().enumerate().zip(txids) {
        check_transaction(&transaction).map_err(|source| {
            BlockError::Transaction(LocatedTransactionError { index, txid: *txid, source })
        })?;
        sigops += transaction_legacy_sigops(&transaction);
    }
    if sigops * WITNESS_SCALE_FACTOR as u64 > BLOCK_SIGOPS_COST_MAX {
        return Err(BlockError::Sigops { cost: sigops * WITNESS_SCALE_FACTOR as u64 });
    }
    Ok(())
}
