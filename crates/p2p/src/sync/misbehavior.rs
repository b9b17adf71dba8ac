//! Rules a peer can break during sync, with the words Core's `Misbehaving`
//! calls log for them ([`Misbehavior::core_message`]).

use ibex_primitives::BlockHash;

use crate::sync::action::PeerId;

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
    /// A block that failed validation: found invalid when the engine
    /// accepted or connected it, or sent unrequested with a parent we do not
    /// know (Core's `BlockChecked` calling `MaybePunishNodeForBlock` with no
    /// message: `BLOCK_CONSENSUS`, `BLOCK_INVALID_HEADER`,
    /// `BLOCK_INVALID_PREV`, `BLOCK_MISSING_PREV`).
    #[error("invalid block {hash}")]
    InvalidBlock {
        /// The block's hash.
        hash: BlockHash,
    },
    /// Its spent coins for a block (BIP 455 `bspent`) failed the block's
    /// checks: a lie, or coins served for an invalid block (an honest peer
    /// serves coins only for a block it connected). Core has no BIP 455;
    /// punished as an invalid block is.
    #[error("spent coins of block {hash} refused")]
    SpentCoinsRefused {
        /// The block.
        hash: BlockHash,
    },
}

impl Misbehavior {
    /// The message Core passes to `Misbehaving` for this (net_processing.cpp),
    /// so logs read as Core's; empty for [`Misbehavior::InvalidBlock`], which
    /// Core reports without one.
    pub fn core_message(&self) -> String {
        match self {
            Misbehavior::HeaderProofOfWork { .. } => "header with invalid proof of work".to_owned(),
            Misbehavior::NonContinuousHeaders { .. } => {
                "non-continuous headers sequence".to_owned()
            }
            Misbehavior::TooManyHeaders { count } => format!("headers message size = {count}"),
            Misbehavior::InvalidHeader { .. } => "invalid header received".to_owned(),
            Misbehavior::MutatedBlock { .. } => "mutated block".to_owned(),
            Misbehavior::InvalidBlock { .. } => String::new(),
            Misbehavior::SpentCoinsRefused { hash } => {
                format!("spent coins of block {hash} fail its checks")
            }
        }
    }

    /// Core's `Misbehaving` log line for `peer`: `Misbehaving: peer=N`, then
    /// `: <message>` when there is one.
    pub fn core_log_line(&self, peer: PeerId) -> String {
        match self.core_message() {
            message if message.is_empty() => format!("Misbehaving: {peer}"),
            message => format!("Misbehaving: {peer}: {message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_read_as_core_with_and_without_a_message() {
        let hash = BlockHash([7; 32]);
        let header = Misbehavior::HeaderProofOfWork { hash };
        assert_eq!(
            header.core_log_line(PeerId(4)),
            "Misbehaving: peer=4: header with invalid proof of work"
        );
        assert_eq!(
            Misbehavior::InvalidBlock { hash }.core_log_line(PeerId(4)),
            "Misbehaving: peer=4"
        );
    }
}
