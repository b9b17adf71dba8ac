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
use crate::signet::check_signet_block_solution;
use crate::transaction::check_transaction;
use ibex_primitives::{
    check_witness_commitment, merkle_root, BlockHash, BlockView, Params, TransactionView, Txid,
    WitnessCommitmentError,
};
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
    check_merkle_root(block, txids)?;
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

/// Core's `CheckBlock` after the proof of work on `params`' network: the
/// signet solution first where the network has signet blocks (BIP325, run
/// by Core between the header and the merkle root, so a signet block with
/// a mutated body fails as `bad-signet-blksig`), then [`check_block`].
/// `block_hash` is the block's hash, computed once at parse.
pub fn check_block_on_network(
    block: &BlockView<'_>,
    txids: &[Txid],
    block_hash: &BlockHash,
    params: &Params,
) -> Result<(), BlockError> {
    check_signet_block_solution(block, txids, block_hash, params)
        .map_err(BlockError::BadSignetSolution)?;
    check_block(block, txids)
}

/// How a block's transactions fail to match what its header commits to
/// (Core's `IsBlockMutated`): another copy of the same header may be valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockMutation {
    /// The merkle root differs, or duplicated siblings hash to it
    /// (CVE-2012-2459).
    #[error("{0}")]
    Merkle(BlockError),
    /// No coinbase first and a transaction of 64 bytes without witness: the
    /// bytes may be an inner node of the real block's merkle tree read as a
    /// transaction ("Weaknesses in Bitcoin's Merkle Root Construction",
    /// 3.1), so the header proves nothing about them.
    #[error("64-byte transaction {index} in a block without a coinbase")]
    SixtyFourByteTransaction {
        /// Its position in the block.
        index: usize,
    },
    /// The witnesses do not match the coinbase's commitment, or are present
    /// where none may be.
    #[error("{0}")]
    Witness(WitnessCommitmentError),
}

/// Core's `IsBlockMutated`, run on a peer's block before it is processed:
/// `Some` when the transactions may be a mangled copy of the header's
/// block. `check_witness_root` is whether segwit is active for the block
/// (Core's `DeploymentActiveAfter(prev, SEGWIT)`): then the witness
/// commitment is checked; otherwise any witness is a mutation.
pub fn is_block_mutated(
    block: &BlockView<'_>,
    txids: &[Txid],
    check_witness_root: bool,
) -> Option<BlockMutation> {
    merkle_mutation(block, txids).or_else(|| mutation_after_merkle(block, check_witness_root))
}

/// The merkle half of [`is_block_mutated`] (Core's `CheckMerkleRoot`).
pub fn merkle_mutation(block: &BlockView<'_>, txids: &[Txid]) -> Option<BlockMutation> {
    check_merkle_root(block, txids).err().map(BlockMutation::Merkle)
}

/// Core's `CheckMerkleRoot`: the header's root is the txids' root, and no
/// level of the tree duplicates its last node to reach it. `txids` are the
/// block's, one per transaction (a caller's invariant).
fn check_merkle_root(block: &BlockView<'_>, txids: &[Txid]) -> Result<(), BlockError> {
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
    Ok(())
}

/// The rest of [`is_block_mutated`], for a block whose merkle root is
/// known to be right (a `CheckBlock` verdict that got past it): the 64-byte
/// transaction rule and the witnesses.
pub fn mutation_after_merkle(
    block: &BlockView<'_>,
    check_witness_root: bool,
) -> Option<BlockMutation> {
    if !block.transactions().next().is_some_and(|first| first.is_coinbase()) {
        // Not a consensus rule: such a block is invalid anyway (no
        // coinbase), so only whether to blame its header is at stake. A
        // block with a 64-byte coinbase could be mutated too, but making
        // one takes 224 bits of work, which Core neglects as well.
        return block
            .transactions()
            .position(|transaction| transaction.base_size() == 64)
            .map(|index| BlockMutation::SixtyFourByteTransaction { index });
    }
    let witness = if check_witness_root {
        check_witness_commitment(block)
    } else if block.has_witness() {
        Err(WitnessCommitmentError::UnexpectedWitness)
    } else {
        Ok(())
    };
    witness.err().map(BlockMutation::Witness)
}
