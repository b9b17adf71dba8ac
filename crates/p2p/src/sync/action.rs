//! What the sync state machines ask the node to do: [`Action`]s, and the
//! reasons for disconnecting a peer that has not misbehaved
//! ([`DisconnectReason`]).

use ibex_primitives::{BlockHash, Header};

use crate::messages::NetworkMessage;
use crate::sync::misbehavior::Misbehavior;

/// A peer, as the node numbers its connections (Core's `NodeId`). Never
/// reused while the node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerId(pub u64);

impl std::fmt::Display for PeerId {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "peer={}", self.0)
    }
}

/// One thing for the node to do. The state machines never do I/O; the
/// node carries these out in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send `message` to `peer`.
    Send {
        /// The peer.
        peer: PeerId,
        /// The message.
        message: NetworkMessage,
    },
    /// Disconnect `peer` without discouraging its address (Core's
    /// `fDisconnect = true`).
    Disconnect {
        /// The peer.
        peer: PeerId,
        /// Why.
        reason: DisconnectReason,
    },
    /// `peer` broke a rule: disconnect it and discourage its address (Core's
    /// `Misbehaving`, which since v28 always means both, unless the peer has
    /// the `noban` permission or was connected by hand).
    Misbehaving {
        /// The peer.
        peer: PeerId,
        /// What it did.
        reason: Misbehavior,
    },
    /// Offer these headers to the engine (`Chainstate::offer_headers`); they
    /// form a chain, in order, and passed the anti-DoS work checks.
    OfferHeaders {
        /// The peer that sent them (to punish if the engine finds them invalid).
        peer: PeerId,
        /// The headers.
        headers: Vec<Header>,
    },
    /// Offer this block to the engine (`Chainstate::offer_block`): requested
    /// from `peer` and delivered by it. Blocks come in any order; the engine
    /// connects them in chain order.
    OfferBlock {
        /// The peer that sent it.
        peer: PeerId,
        /// The hash of its header.
        hash: BlockHash,
        /// Its height on the best header chain it was requested from (its
        /// parent is indexed), for the checks that depend on it before the
        /// block reaches the engine (Core's `IsBlockMutated` asks whether
        /// segwit is active).
        height: u32,
        /// The `block` message's payload.
        bytes: Vec<u8>,
    },
}

/// Why a peer that has not misbehaved is disconnected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// It held the block at the start of the download window while other
    /// peers waited for window space, for longer than the stalling timeout.
    #[error("stalling block download for more than {timeout_seconds} s")]
    StallingBlockDownload {
        /// The stalling timeout that expired.
        timeout_seconds: u64,
    },
    /// The first block in flight from it did not arrive within the block
    /// download timeout.
    #[error("block {hash} not delivered within {timeout_ms} ms")]
    BlockDownloadTimeout {
        /// The block at the front of its queue.
        hash: BlockHash,
        /// The timeout that expired.
        timeout_ms: u64,
    },
    /// It was our only headers-sync peer and did not deliver the header
    /// chain in time.
    #[error("headers sync not finished in time")]
    HeadersDownloadTimeout,
    /// During initial block download its header chain ended below the
    /// minimum chain work.
    #[error("headers chain below the minimum chain work")]
    InsufficientWork,
    /// It asked for a block deeper below our tip than a
    /// `NODE_NETWORK_LIMITED` node serves, after we announced only that
    /// (Core disconnects it so that it does not stall waiting).
    #[error("block request below the NODE_NETWORK_LIMITED threshold")]
    BlockRequestBelowLimitedThreshold,
    /// It sent the spent coins of a block we did not ask it for (BIP 455:
    /// the client must disconnect).
    #[error("spent coins of block {hash} not requested")]
    SpentCoinsNotRequested {
        /// The block.
        hash: BlockHash,
    },
    /// It did not answer a `getbspent` in time (as
    /// [`DisconnectReason::BlockDownloadTimeout`] for a block).
    #[error("spent coins of block {hash} not delivered within {timeout_ms} ms")]
    SpentCoinsTimeout {
        /// The block asked for.
        hash: BlockHash,
        /// The timeout that expired.
        timeout_ms: u64,
    },
    /// Its spent coins for a block repeat inputs or name them out of order
    /// (BIP 455: un-requested coins disconnect; which inputs a cutoff
    /// leaves out the block tells, and the pass checks).
    #[error("spent coins of block {hash} do not name the inputs in order")]
    SpentCoinsIncomplete {
        /// The block.
        hash: BlockHash,
    },
}

impl DisconnectReason {
    /// The words Core logs when it disconnects for this reason
    /// (net_processing.cpp), before its `, disconnecting peer=N`: the block
    /// download timeout names the block (`Timeout downloading block <hash>`).
    pub fn core_log_message(&self) -> String {
        match self {
            DisconnectReason::StallingBlockDownload { .. } => {
                "Peer is stalling block download".to_owned()
            }
            DisconnectReason::BlockDownloadTimeout { hash, .. } => {
                format!("Timeout downloading block {hash}")
            }
            DisconnectReason::HeadersDownloadTimeout => "Timeout downloading headers".to_owned(),
            DisconnectReason::InsufficientWork => {
                "outbound peer headers chain has insufficient work".to_owned()
            }
            DisconnectReason::BlockRequestBelowLimitedThreshold => {
                "Ignore block request below NODE_NETWORK_LIMITED threshold".to_owned()
            }
            // Core has no BIP 455: our own words.
            DisconnectReason::SpentCoinsNotRequested { hash } => {
                format!("Unrequested spent coins of block {hash}")
            }
            DisconnectReason::SpentCoinsTimeout { hash, .. } => {
                format!("Timeout downloading spent coins of block {hash}")
            }
            DisconnectReason::SpentCoinsIncomplete { hash } => {
                format!("Spent coins of block {hash} repeat inputs or name them out of order")
            }
        }
    }
}
