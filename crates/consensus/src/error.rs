//! Rule violations, each with Bitcoin Core's reject reason
//! ([`TransactionError::reject_reason`]) so logs and RPC speak Core's language.

use std::borrow::Cow;

use crate::script_reason::script_failure_reason;
use ibex_primitives::{Amount, Txid, WitnessCommitmentError};
use ibex_script::ScriptError;
use thiserror::Error;

/// Why a transaction breaks a rule. Context (txid, block height) is added by
/// [`BlockError`] where the transaction sits in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TransactionError {
    /// No inputs.
    #[error("bad-txns-vin-empty")]
    NoInputs,
    /// No outputs.
    #[error("bad-txns-vout-empty")]
    NoOutputs,
    /// Witness-free size times four above the block weight limit.
    #[error("bad-txns-oversize: {base_bytes} bytes without witness")]
    Oversize {
        /// Witness-free serialised size.
        base_bytes: usize,
    },
    /// An output value below zero.
    #[error("bad-txns-vout-negative: output {output}")]
    NegativeOutput {
        /// Output index.
        output: usize,
    },
    /// An output value above MAX_MONEY.
    #[error("bad-txns-vout-toolarge: output {output}")]
    OutputTooLarge {
        /// Output index.
        output: usize,
    },
    /// The sum of outputs above MAX_MONEY.
    #[error("bad-txns-txouttotal-toolarge")]
    OutputTotalTooLarge,
    /// Two inputs spend the same outpoint.
    #[error("bad-txns-inputs-duplicate: input {input}")]
    DuplicateInputs {
        /// Index of one of the duplicated inputs.
        input: usize,
    },
    /// Coinbase scriptSig outside 2..=100 bytes.
    #[error("bad-cb-length: {length} bytes")]
    CoinbaseLength {
        /// scriptSig length.
        length: usize,
    },
    /// A non-coinbase input spends the null outpoint.
    #[error("bad-txns-prevout-null: input {input}")]
    NullPrevout {
        /// Input index.
        input: usize,
    },
    /// An input spends a coin that is missing or already spent.
    #[error("bad-txns-inputs-missingorspent: input {input}")]
    MissingOrSpent {
        /// Input index.
        input: usize,
    },
    /// A coinbase output spent before 100 confirmations.
    #[error("bad-txns-premature-spend-of-coinbase: input {input}, {depth} confirmations")]
    PrematureCoinbaseSpend {
        /// Input index.
        input: usize,
        /// Blocks between the coin and the spend.
        depth: u32,
    },
    /// A spent value, or the running input sum, outside the money range.
    #[error("bad-txns-inputvalues-outofrange: input {input}")]
    InputValuesOutOfRange {
        /// Input index.
        input: usize,
    },
    /// Outputs worth more than inputs.
    #[error("bad-txns-in-belowout: in {}, out {}", .value_in.to_sat(), .value_out.to_sat())]
    InputsBelowOutputs {
        /// Sum of spent values.
        value_in: Amount,
        /// Sum of output values.
        value_out: Amount,
    },
    /// The fee is outside the money range.
    #[error("bad-txns-fee-outofrange")]
    FeeOutOfRange,
    /// Not final at this height and time (BIP113 cutoff).
    #[error("bad-txns-nonfinal")]
    NonFinal,
    /// A BIP68 relative lock time is not met.
    #[error("bad-txns-nonfinal: sequence lock not satisfied")]
    SequenceLocks,
}

impl TransactionError {
    /// Core's reject reason.
    pub fn reject_reason(&self) -> &'static str {
        use TransactionError::*;
        match self {
            NoInputs => "bad-txns-vin-empty",
            NoOutputs => "bad-txns-vout-empty",
            Oversize { .. } => "bad-txns-oversize",
            NegativeOutput { .. } => "bad-txns-vout-negative",
            OutputTooLarge { .. } => "bad-txns-vout-toolarge",
            OutputTotalTooLarge => "bad-txns-txouttotal-toolarge",
            DuplicateInputs { .. } => "bad-txns-inputs-duplicate",
            CoinbaseLength { .. } => "bad-cb-length",
            NullPrevout { .. } => "bad-txns-prevout-null",
            MissingOrSpent { .. } => "bad-txns-inputs-missingorspent",
            PrematureCoinbaseSpend { .. } => "bad-txns-premature-spend-of-coinbase",
            InputValuesOutOfRange { .. } => "bad-txns-inputvalues-outofrange",
            InputsBelowOutputs { .. } => "bad-txns-in-belowout",
            FeeOutOfRange => "bad-txns-fee-outofrange",
            NonFinal | SequenceLocks => "bad-txns-nonfinal",
        }
    }
}

/// A transaction error located in a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("transaction {index} ({txid}): {source}")]
pub struct LocatedTransactionError {
    /// Position in the block.
    pub index: usize,
    /// The transaction's id.
    pub txid: Txid,
    /// What is wrong.
    pub source: TransactionError,
}

/// Why a block breaks a rule. [`BlockError::reject_reason`] gives Core's
/// reject reason; `Display` adds the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum BlockError {
    /// The header's hash does not meet its target, or the target is invalid
    /// for the network (Core's `CheckBlockHeader`).
    #[error("high-hash: proof of work failed")]
    HighHash,
    /// nBits is not the difficulty the chain requires.
    #[error("bad-diffbits: nBits {bits:#010x}, expected {expected:#010x}")]
    BadDifficultyBits {
        /// The header's nBits.
        bits: u32,
        /// What `GetNextWorkRequired` gives.
        expected: u32,
    },
    /// The header time is not after the parent's median time past.
    #[error("time-too-old: time {time}, median time past {median_time_past}")]
    TimeTooOld {
        /// The header's nTime.
        time: u32,
        /// The parent's median time past.
        median_time_past: i64,
    },
    /// BIP94: a retarget period's first block more than 600 seconds before its parent.
    #[error("time-timewarp-attack: time {time}, parent time {previous_time}")]
    TimeTimewarpAttack {
        /// The header's nTime.
        time: u32,
        /// The parent's nTime.
        previous_time: u32,
    },
    /// The header time is more than two hours after the node's clock.
    #[error("time-too-new: time {time}, limit {limit}")]
    TimeTooNew {
        /// The header's nTime.
        time: u32,
        /// The node's time plus two hours.
        limit: i64,
    },
    /// A version below what BIP34, BIP66 or BIP65 require once active.
    #[error("bad-version(0x{version:08x})")]
    BadVersion {
        /// The header's nVersion.
        version: i32,
    },
    /// A signet block whose solution does not satisfy the network's
    /// challenge (BIP325; Core's `CheckSignetBlockSolution` in `CheckBlock`).
    #[error("bad-signet-blksig: {0}")]
    BadSignetSolution(crate::signet::SignetError),
    /// The header's merkle root is not the transactions' root.
    #[error("bad-txnmrklroot")]
    BadMerkleRoot,
    /// The transaction list has duplicated merkle siblings (CVE-2012-2459).
    #[error("bad-txns-duplicate")]
    DuplicateTransactions,
    /// No transactions, or too many, or too large without witness data.
    #[error("bad-blk-length")]
    BadLength,
    /// The first transaction is not a coinbase.
    #[error("bad-cb-missing")]
    CoinbaseMissing,
    /// A coinbase after the first transaction.
    #[error("bad-cb-multiple")]
    CoinbaseMultiple,
    /// Too many signature operations.
    #[error("bad-blk-sigops: cost {cost}")]
    Sigops {
        /// The block's sigop cost (so far, when counted while connecting).
        cost: u64,
    },
    /// BIP34: the coinbase scriptSig does not start with the block height.
    #[error("bad-cb-height")]
    BadCoinbaseHeight,
    /// The witness data does not match the coinbase commitment, or is present
    /// without one (BIP141).
    #[error("{0}")]
    WitnessCommitment(WitnessCommitmentError),
    /// Heavier than 4,000,000 weight units.
    #[error("bad-blk-weight: {weight} weight units")]
    BadWeight {
        /// The block's weight.
        weight: usize,
    },
    /// The coinbase pays more than the subsidy plus the fees.
    #[error("bad-cb-amount: coinbase pays {}, limit {}", .value.to_sat(), .limit.to_sat())]
    CoinbaseAmount {
        /// Sum of the coinbase outputs.
        value: Amount,
        /// Subsidy plus fees.
        limit: Amount,
    },
    /// A transaction breaks a rule.
    #[error("{0}")]
    Transaction(LocatedTransactionError),
    /// An input's script fails under the block's flags.
    #[error("transaction {index} ({txid}) input {input}: {}", script_failure_reason(*error))]
    Script {
        /// Position of the transaction in the block.
        index: usize,
        /// The transaction's id.
        txid: Txid,
        /// Input index.
        input: usize,
        /// The script error.
        error: ScriptError,
    },
}

/// How Core classes a block failure (its `BlockValidationResult`): what
/// the node may remember about the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockFailureKind {
    /// The header breaks a rule: the block and its descendants are invalid.
    InvalidHeader,
    /// The header's time is too far ahead of the node's clock: not invalid,
    /// the block may be accepted later (Core does not mark it failed).
    TimeFuture,
    /// The transactions or witnesses do not match what the header commits
    /// to: another copy of the same block may be valid, so the header must
    /// not be marked invalid.
    Mutated,
    /// The block breaks a consensus rule.
    Consensus,
}

impl BlockError {
    /// Core's `BlockValidationResult` for this failure.
    pub fn kind(&self) -> BlockFailureKind {
        match self {
            BlockError::HighHash
            | BlockError::BadDifficultyBits { .. }
            | BlockError::TimeTooOld { .. }
            | BlockError::TimeTimewarpAttack { .. }
            | BlockError::BadVersion { .. } => BlockFailureKind::InvalidHeader,
            BlockError::TimeTooNew { .. } => BlockFailureKind::TimeFuture,
            BlockError::BadMerkleRoot
            | BlockError::DuplicateTransactions
            | BlockError::WitnessCommitment(_) => BlockFailureKind::Mutated,
            BlockError::BadLength
            | BlockError::CoinbaseMissing
            | BlockError::CoinbaseMultiple
            | BlockError::Sigops { .. }
            | BlockError::BadCoinbaseHeight
            | BlockError::BadWeight { .. }
            | BlockError::BadSignetSolution(_)
            | BlockError::CoinbaseAmount { .. }
            | BlockError::Transaction(_)
            | BlockError::Script { .. } => BlockFailureKind::Consensus,
        }
    }

    /// Core's reject reason (`bad-version(0x00000001)`,
    /// `block-script-verify-flag-failed (Script failed an OP_VERIFY operation)`
    /// and the witness reasons carry text, the others are fixed).
    pub fn reject_reason(&self) -> Cow<'static, str> {
        let fixed = match self {
            BlockError::HighHash => "high-hash",
            BlockError::BadDifficultyBits { .. } => "bad-diffbits",
            BlockError::TimeTooOld { .. } => "time-too-old",
            BlockError::TimeTimewarpAttack { .. } => "time-timewarp-attack",
            BlockError::TimeTooNew { .. } => "time-too-new",
            BlockError::BadVersion { version } => {
                return Cow::Owned(format!("bad-version(0x{version:08x})"))
            }
            BlockError::BadSignetSolution(_) => "bad-signet-blksig",
            BlockError::BadMerkleRoot => "bad-txnmrklroot",
            BlockError::DuplicateTransactions => "bad-txns-duplicate",
            BlockError::BadLength => "bad-blk-length",
            BlockError::CoinbaseMissing => "bad-cb-missing",
            BlockError::CoinbaseMultiple => "bad-cb-multiple",
            BlockError::Sigops { .. } => "bad-blk-sigops",
            BlockError::BadCoinbaseHeight => "bad-cb-height",
            BlockError::WitnessCommitment(error) => return witness_reason(*error),
            BlockError::BadWeight { .. } => "bad-blk-weight",
            BlockError::CoinbaseAmount { .. } => "bad-cb-amount",
            BlockError::Transaction(located) => located.source.reject_reason(),
            BlockError::Script { error, .. } => return Cow::Owned(script_failure_reason(*error)),
        };
        Cow::Borrowed(fixed)
    }
}

/// Core's reject reason for a witness commitment failure.
fn witness_reason(error: WitnessCommitmentError) -> Cow<'static, str> {
    match error {
        WitnessCommitmentError::BadNonceSize => Cow::Borrowed("bad-witness-nonce-size"),
        WitnessCommitmentError::MerkleMismatch => Cow::Borrowed("bad-witness-merkle-match"),
        WitnessCommitmentError::UnexpectedWitness => Cow::Borrowed("unexpected-witness"),
        // The enum is non-exhaustive; its `Display` is Core's reason too.
        other => Cow::Owned(other.to_string()),
    }
}
