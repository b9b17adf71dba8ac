//! Spent coins a block's checks refused, in the fully validating mode.
//!
//! BIP 455 answers come from strangers. A block whose claimed coins fail
//! its checks (a count that does not match its inputs, a coin from a later
//! block, a rule of `ConnectBlock`, a script) cannot tell a lying peer from
//! an invalid block; but an honest peer serves coins only for a block it
//! connected, so either way the peer that sent them is at fault. A worker
//! that fails a block on its claimed coins records a refusal instead of
//! stopping the pass; the engine reopens the block's height (the block
//! waits for coins again) and publishes the refusal, and the network side
//! punishes the peer and asks another. A block refused
//! [`SPENT_COINS_REFUSALS_PER_BLOCK_MAX`] times is taken to be invalid
//! itself, and more than [`SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX`] refusals in
//! one attempt mean too many lying peers for the attempt to pay off: either
//! ends the attempt, and the blocks are connected the usual way, which
//! finds whatever is wrong with the chain.
//!
//! Before the pass is judged at `H`, the engine waits for every block
//! handed to a worker to be settled ([`JobsOut::settle`]): a refusal
//! arriving after the proof was judged would be lost.
//!
//! A lie that every rule lets through (a coin's height one block off, in a
//! range where nothing depends on it) is found only by the aggregate at
//! `H`, which cannot say which block or peer lied: the attempt is given
//! up then (per-block commitments, a BIP 457 idea without a format yet,
//! would be needed to blame a peer for it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use ibex_primitives::BlockHash;

use super::job::RunBlock;
use super::SwiftSyncFailure;
use crate::block_source::BlockSource;

/// Refusals of one block's coins after which the block is taken to be
/// invalid and the attempt ends (each refusal comes from another peer:
/// the network side asks no peer twice for a block it was refused).
pub const SPENT_COINS_REFUSALS_PER_BLOCK_MAX: u32 = 3;
/// Refusals in one attempt (over every pass a moving header chain
/// restarts) after which it ends: this also bounds the list published to
/// the network side.
pub const SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX: usize = 1024;

/// How long [`JobsOut::settle`] sleeps between looks at a stopped pass.
const SETTLE_POLL: Duration = Duration::from_millis(100);

/// Coins a peer claimed for a block, refused by the block's checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpentCoinsRefusal {
    /// The block's height.
    pub height: u32,
    /// The block.
    pub hash: BlockHash,
    /// Who sent the coins.
    pub source: BlockSource,
    /// What the checks found.
    pub failure: SwiftSyncFailure,
}

/// A refusal as a worker records it: with the block, to hold it again.
#[derive(Debug)]
pub(crate) struct RefusedJob {
    pub(crate) block: RunBlock,
    pub(crate) source: BlockSource,
    pub(crate) failure: SwiftSyncFailure,
}

/// Blocks handed to the workers and not settled yet, and the refusals
/// they made.
#[derive(Debug, Default)]
pub(crate) struct JobsOut {
    count: Mutex<usize>,
    settled: Condvar,
    refused: Mutex<Vec<RefusedJob>>,
}

impl JobsOut {
    /// One more block handed over.
    pub(crate) fn handed(&self) {
        *self.count.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    }

    /// A block handed over is settled (accounted, refused, failed, or
    /// never taken by a worker).
    pub(crate) fn settled(&self) {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.settled.notify_all();
        }
    }

    /// Records a refusal; the caller settles the job after.
    pub(crate) fn refuse(&self, job: RefusedJob) {
        self.refused.lock().unwrap_or_else(PoisonError::into_inner).push(job);
    }

    /// The refusals recorded since the last call.
    pub(crate) fn take_refused(&self) -> Vec<RefusedJob> {
        std::mem::take(&mut *self.refused.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Waits until every block handed over is settled, or the pass
    /// stopped (its workers leave the blocks still queued untaken).
    pub(crate) fn settle(&self, stop: &AtomicBool) {
        let mut count = self.count.lock().unwrap_or_else(PoisonError::into_inner);
        while *count > 0 && !stop.load(Ordering::Relaxed) {
            count = self
                .settled
                .wait_timeout(count, SETTLE_POLL)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}

impl SwiftSyncFailure {
    /// Whether the failure lies with the spent coins claimed for a block
    /// (and so with the peer that sent them), not with the hints or a
    /// check that needs no coins.
    pub fn blames_spent_coins(&self) -> bool {
        use ibex_consensus::swiftsync::full::FullAccountError;
        match self {
            SwiftSyncFailure::FullBlock { source, .. } => matches!(
                source,
                FullAccountError::CoinCount { .. }
                    | FullAccountError::CoinFromLaterBlock { .. }
                    | FullAccountError::Rejected { .. }
            ),
            SwiftSyncFailure::Script { .. } | SwiftSyncFailure::SpentCoinsClaim { .. } => true,
            _ => false,
        }
    }
}
