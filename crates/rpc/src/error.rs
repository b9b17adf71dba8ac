//! Why a JSON answer could not be written.

use ibex_primitives::{BlockHash, Txid};

/// A caller's data that does not fit the block or transaction being
/// written. The output buffer is left as it was before the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RpcJsonError {
    /// The spent coins given for a block are not one per input of its
    /// non-coinbase transactions (Core's undo data has one per input).
    #[error("block {block_hash} spends {expected} coins but {given} spent coins were given")]
    BlockSpentCoinCount {
        /// The block.
        block_hash: BlockHash,
        /// Inputs of the block's transactions after the coinbase.
        expected: usize,
        /// Spent coins given.
        given: usize,
    },
    /// The spent coins given for a transaction are not one per input.
    #[error("transaction {txid} has {expected} inputs but {given} spent coins were given")]
    TransactionSpentCoinCount {
        /// The transaction.
        txid: Txid,
        /// Its inputs.
        expected: usize,
        /// Spent coins given.
        given: usize,
    },
    /// The spent coins' values less the outputs' values is outside
    /// 0..=MAX_MONEY (Core's `CHECK_NONFATAL(MoneyRange(fee))` in
    /// `TxToUniv`, an internal error there too).
    #[error("transaction {txid} has a fee out of range: {fee_satoshis} satoshis")]
    FeeOutOfRange {
        /// The transaction.
        txid: Txid,
        /// Inputs less outputs, in satoshis.
        fee_satoshis: i128,
    },
}
