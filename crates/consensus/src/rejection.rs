//! Why a block was rejected, in Bitcoin Core's words: every reason a
//! block can fail for, from its header to its scripts, with where (txid,
//! input). Used by the chainstate and by the generator's replay alike.

use ibex_primitives::Txid;
use ibex_script::ScriptError;

use crate::error::{BlockError, BlockFailureKind, TransactionError};

/// A block that breaks a rule: what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockRejection {
    /// A block-level rule (header, context-free, contextual, coinbase amount).
    #[error("{0}")]
    Block(BlockError),
    /// A transaction's inputs break a rule (`CheckTxInputs`).
    #[error("transaction {txid}: {source}")]
    Transaction {
        /// The transaction.
        txid: Txid,
        /// What is wrong.
        source: TransactionError,
    },
    /// An input spends a coin that does not exist or is already spent.
    #[error("bad-txns-inputs-missingorspent: {txid} input {input}")]
    MissingInput {
        /// The transaction.
        txid: Txid,
        /// Input index.
        input: usize,
    },
    /// A transaction overwrites an unspent output (BIP30).
    #[error("bad-txns-BIP30: {txid}")]
    Bip30 {
        /// The transaction.
        txid: Txid,
    },
    /// BIP68 relative locks are not satisfied.
    #[error("bad-txns-nonfinal: {txid} sequence locks")]
    SequenceLocks {
        /// The transaction.
        txid: Txid,
    },
    /// The block's parent (or an ancestor) is invalid (`bad-prevblk`).
    #[error("bad-prevblk")]
    InvalidParent,
    /// The block is already indexed and marked invalid, or descends from a
    /// block that is (Core's `duplicate-invalid`, `BLOCK_CACHED_INVALID`):
    /// refused before any check, nothing marked again.
    #[error("duplicate-invalid")]
    DuplicateInvalid,
    /// The block's total fees are out of range.
    #[error("bad-txns-accumulated-fee-outofrange")]
    FeesOutOfRange,
    /// An input's script failed.
    #[error("block-script-verify-flag-failed: {txid} input {input}: {error}")]
    Script {
        /// The transaction.
        txid: Txid,
        /// Input index.
        input: usize,
        /// The failure.
        error: ScriptError,
    },
}

impl BlockRejection {
    /// Core's reject reason, as `debug.log` and `getblock`-style tools print it.
    pub fn reject_reason(&self) -> String {
        match self {
            BlockRejection::Block(error) => error.reject_reason().to_string(),
            BlockRejection::Transaction { source, .. } => source.reject_reason().to_string(),
            BlockRejection::MissingInput { .. } => "bad-txns-inputs-missingorspent".to_string(),
            BlockRejection::Bip30 { .. } => "bad-txns-BIP30".to_string(),
            BlockRejection::SequenceLocks { .. } => "bad-txns-nonfinal".to_string(),
            BlockRejection::InvalidParent => "bad-prevblk".to_string(),
            BlockRejection::DuplicateInvalid => "duplicate-invalid".to_string(),
            BlockRejection::FeesOutOfRange => "bad-txns-accumulated-fee-outofrange".to_string(),
            BlockRejection::Script { error, .. } => script_failure_reason(*error),
        }
    }

    /// Whether the block must not be marked invalid: a possibly mutated
    /// copy of a valid block (bad merkle root, duplicated transactions, bad
    /// witness commitment), or a header time too far in the future (Core
    /// rejects both without marking, since a good copy or a later clock may
    /// accept the same header).
    pub fn is_possible_mutation(&self) -> bool {
        match self {
            BlockRejection::Block(error) => {
                matches!(error.kind(), BlockFailureKind::Mutated | BlockFailureKind::TimeFuture)
            }
            _ => false,
        }
    }
}

use crate::script_reason::script_failure_reason;

impl From<BlockError> for BlockRejection {
    fn from(error: BlockError) -> Self {
        BlockRejection::Block(error)
    }
}
