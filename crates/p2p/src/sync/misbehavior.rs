//! Rules a peer can break during sync, with the words Core's `Misbehaving`
//! calls log for them ([`Misbehavior::core_message`]).

use ibex_primitives::BlockHash;

/// What a peer did wrong. Every variant means what Core's `Misbehaving`
/// means since v28: disconnect and discourage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misbehavior {
    /// A header's hash does not meet the target its own `nBits` encodes, or
    /// that target is invalid for the chain (Core's `CheckHeadersPoW`).
    #[error("header {hash} has invalid proof of work")]
    HeaderProofOfWork {
        /// The header's hash.
        hash: BlockHash,
    },
    /// A header's previous-block hash is not the hash of the header before it
    /// in the same message (Core's `CheckHeadersAreContinuous`).
    #[error("header {index} of the message does not follow the one before it")]
    NonContinuousHeaders {
        /// Its position in the message.
        index: usize,
    },
    /// A `headers` message with more than 2,000 headers. The decoder refuses
    /// such messages ([`crate::MessageError::TooMany`]); the node reports
    /// them with this.
    #[error("headers message with {count} headers")]
    TooManyHeaders {
        /// The count the message declared.
        count: u64,
    },
    /// The engine found a header invalid (Core's `MaybePunishNodeForBlock`
    /// with the message "invalid header received").
    #[error("invalid header {hash}")]
    InvalidHeader {
        /// The header's hash.
        hash: BlockHash,
    },
    /// A block whose transactions do not match its header's merkle root or
    /// witness commitment (Core's `IsBlockMutated`).
    #[error("block {hash} is mutated")]
    MutatedBlock {
        /// The block's hash.
        hash: BlockHash,
    },
    /// A block we did not request from this peer. Ibex's rule, not Core's:
    /// Core stores an unrequested block when it would be a new best tip and
    /// punishes nothing; Ibex downloads only what it scheduled, so a block
    /// pushed at it is wasted bandwidth and memory.
    #[error("unrequested block {hash}")]
    UnrequestedBlock {
        /// The block's hash.
        hash: BlockHash,
    },
}

impl Misbehavior {
    /// The message Core passes to `Misbehaving` for this (net_processing.cpp),
    /// so logs read as Core's. [`Misbehavior::UnrequestedBlock`] has no Core
    /// counterpart and reads "unrequested block".
    pub fn core_message(&self) -> String {
        match self {
            Misbehavior::HeaderProofOfWork { .. } => "header with invalid proof of work".to_owned(),
            Misbehavior::NonContinuousHeaders { .. } => {
                "non-continuous headers sequence".to_owned()
            }
            Misbehavior::TooManyHeaders { count } => format!("headers message size = {count}"),
            Misbehavior::InvalidHeader { .. } => "invalid header received".to_owned(),
            Misbehavior::MutatedBlock { .. } => "mutated block".to_owned(),
            Misbehavior::UnrequestedBlock { .. } => "unrequested block".to_owned(),
        }
    }
}
