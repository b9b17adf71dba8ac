//! What a `headers` message does to a low-work sync: its phase, how it
//! ends ([`Finish`], [`HeadersSyncAbort`]) and the headers it releases.

use ibex_primitives::Header;

/// Where a sync is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Summing work, keeping commitment bits.
    Presync,
    /// Downloading again, checking bits, releasing headers.
    Redownload,
    /// Over: nothing held; make a new state to sync again.
    Final,
}

impl std::fmt::Display for Phase {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Phase::Presync => "presync",
            Phase::Redownload => "redownload",
            Phase::Final => "final",
        })
    }
}

/// Why a sync was given up (Core's log lines "Initial headers sync aborted
/// with peer=%d: ...").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeadersSyncAbort {
    /// The first header does not follow the last one received.
    #[error("non-continuous headers at height={height} ({phase} phase)")]
    NonContinuous {
        /// The height it would have had.
        height: u32,
        /// The phase.
        phase: Phase,
    },
    /// A header's `nBits` is not a transition Core permits.
    #[error("invalid difficulty transition at height={height} ({phase} phase)")]
    InvalidDifficultyTransition {
        /// The header's height.
        height: u32,
        /// The phase.
        phase: Phase,
    },
    /// The chain is longer than any valid chain can be by now.
    #[error("exceeded max commitments at height={height} (presync phase)")]
    ExceededMaxCommitments {
        /// The header's height.
        height: u32,
    },
    /// The redownload needs more commitments than presync stored.
    #[error("commitment overrun at height={height} (redownload phase)")]
    CommitmentOverrun {
        /// The header's height.
        height: u32,
    },
    /// A redownloaded header's bit differs from the one stored: the peer
    /// served another chain.
    #[error("commitment mismatch at height={height} (redownload phase)")]
    CommitmentMismatch {
        /// The header's height.
        height: u32,
    },
    /// Heights past 2^32 - 1.
    #[error("header height past 2^32 - 1")]
    HeightOverflow,
    /// Headers given to a sync that is already over.
    #[error("headers sync already finished")]
    AlreadyFinished,
}

/// How a sync ended without fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Presync got a message that was not full: the peer's chain ends below
    /// the work threshold.
    LowWorkChainEnded {
        /// Height of its last header.
        height: u32,
    },
    /// The redownloaded chain reached the threshold and every header was
    /// released.
    AllReleased {
        /// Height of the last header released.
        height: u32,
    },
    /// The peer stopped serving the chain during redownload.
    RedownloadIncomplete {
        /// Height of the last header received.
        height: u32,
    },
}

/// What a `headers` message did to a sync (Core's `ProcessingResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Ask the peer for more: send `getheaders` with
    /// [`super::HeadersSyncState::next_request_locator`].
    RequestMore,
    /// The sync is over, without fault.
    Finished(Finish),
    /// The sync is over: the peer served something wrong.
    Aborted(HeadersSyncAbort),
}

/// The result of one `headers` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessingResult {
    /// Headers now known to lie on a chain with enough work, in order, to be
    /// offered to the engine. Empty unless the outcome is a success.
    pub headers_to_offer: Vec<Header>,
    /// What next.
    pub outcome: Outcome,
}

impl ProcessingResult {
    /// Not aborted (Core's `success`).
    pub fn success(&self) -> bool {
        !matches!(self.outcome, Outcome::Aborted(_))
    }

    pub(super) fn aborted(abort: HeadersSyncAbort) -> ProcessingResult {
        ProcessingResult { headers_to_offer: Vec::new(), outcome: Outcome::Aborted(abort) }
    }
}
