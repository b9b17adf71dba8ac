//! What headers sync did that Core writes to its log ([`HeadersNote`]): the
//! node takes them with [`super::HeadersSync::take_notes`] and logs them in
//! Core's words (net_processing.cpp and headerssync.cpp).

use std::collections::VecDeque;

use ibex_primitives::ChainWork;

use crate::sync::action::PeerId;
use crate::sync::headers_presync::{Finish, HeadersSyncAbort};

/// Notes kept until the node takes them; older ones are dropped past this
/// (one `headers` message makes at most three).
pub const HEADERS_NOTES_MAX: usize = 64;

/// One thing worth a log line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeadersNote {
    /// A chain that ends below the anti-DoS work threshold in a message
    /// that was not full: dropped, nothing stored, no penalty.
    LowWorkChainIgnored {
        /// Who sent it.
        peer: PeerId,
        /// The height its last header would have.
        height: u32,
    },
    /// A low-work headers sync (presync) started.
    PresyncStarted {
        /// With whom.
        peer: PeerId,
        /// The height it starts from.
        height: u32,
        /// The most commitments it may store.
        max_commitments: u64,
        /// The work the chain must reach.
        minimum_work: ChainWork,
    },
    /// Presync reached the work: the chain is downloaded again.
    RedownloadStarted {
        /// With whom.
        peer: PeerId,
        /// The height presync reached.
        height: u32,
        /// The height the redownload starts after.
        redownload_from: u32,
    },
    /// The sync ended without fault.
    Finished {
        /// With whom.
        peer: PeerId,
        /// How.
        finish: Finish,
    },
    /// The sync was given up: the peer served something wrong.
    Aborted {
        /// With whom.
        peer: PeerId,
        /// Why.
        abort: HeadersSyncAbort,
    },
    /// A `noban` sync peer timed out: its sync ended, it stays connected
    /// (Core's "Timeout downloading headers from noban peer").
    NoBanSyncTimeout {
        /// Which.
        peer: PeerId,
    },
}

impl std::fmt::Display for HeadersNote {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeadersNote::LowWorkChainIgnored { peer, height } => {
                write!(formatter, "Ignoring low-work chain (height={height}) from {peer}")
            }
            HeadersNote::PresyncStarted { peer, height, max_commitments, minimum_work } => write!(
                formatter,
                "Initial headers sync started with {peer}: height={height}, max_commitments={max_commitments}, min_work={minimum_work}"
            ),
            HeadersNote::RedownloadStarted { peer, height, redownload_from } => write!(
                formatter,
                "Initial headers sync transition with {peer}: reached sufficient work at height={height}, redownloading from height={redownload_from}"
            ),
            HeadersNote::Finished { peer, finish } => match finish {
                Finish::LowWorkChainEnded { height } => write!(
                    formatter,
                    "Initial headers sync aborted with {peer}: incomplete headers message at height={height} (presync phase)"
                ),
                Finish::AllReleased { height } => write!(
                    formatter,
                    "Initial headers sync complete with {peer}: releasing all at height={height} (redownload phase)"
                ),
                Finish::RedownloadIncomplete { height } => write!(
                    formatter,
                    "Initial headers sync aborted with {peer}: incomplete headers message at height={height} (redownload phase)"
                ),
            },
            HeadersNote::Aborted { peer, abort } => {
                write!(formatter, "Initial headers sync aborted with {peer}: {abort}")
            }
            HeadersNote::NoBanSyncTimeout { peer } => write!(
                formatter,
                "Timeout downloading headers from noban peer, not disconnecting {peer}"
            ),
        }
    }
}

/// The notes not taken yet, oldest first, at most [`HEADERS_NOTES_MAX`].
#[derive(Debug, Clone, Default)]
pub(super) struct Notes {
    queue: VecDeque<HeadersNote>,
}

impl Notes {
    pub(super) fn push(&mut self, note: HeadersNote) {
        if self.queue.len() == HEADERS_NOTES_MAX {
            self.queue.pop_front();
        }
        self.queue.push_back(note);
    }

    pub(super) fn take(&mut self) -> Vec<HeadersNote> {
        self.queue.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::headers_presync::Phase;

    #[test]
    fn lines_read_as_core() {
        let peer = PeerId(7);
        let ignored = HeadersNote::LowWorkChainIgnored { peer, height: 12 };
        assert_eq!(ignored.to_string(), "Ignoring low-work chain (height=12) from peer=7");
        let ended =
            HeadersNote::Finished { peer, finish: Finish::LowWorkChainEnded { height: 2050 } };
        assert_eq!(
            ended.to_string(),
            "Initial headers sync aborted with peer=7: incomplete headers message at height=2050 (presync phase)"
        );
        let abort = HeadersSyncAbort::NonContinuous { height: 9, phase: Phase::Redownload };
        assert_eq!(
            HeadersNote::Aborted { peer, abort }.to_string(),
            "Initial headers sync aborted with peer=7: non-continuous headers at height=9 (redownload phase)"
        );
    }

    #[test]
    fn the_queue_keeps_the_newest() {
        let mut notes = Notes::default();
        for height in 0..(HEADERS_NOTES_MAX as u32 + 5) {
            notes.push(HeadersNote::LowWorkChainIgnored { peer: PeerId(1), height });
        }
        let taken = notes.take();
        assert_eq!(taken.len(), HEADERS_NOTES_MAX);
        assert_eq!(taken[0], HeadersNote::LowWorkChainIgnored { peer: PeerId(1), height: 5 });
        assert!(notes.take().is_empty());
    }
}
