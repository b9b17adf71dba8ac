//! The script stage: input scripts checked on the `-par` threads while
//! the next blocks connect (Ibex's pipeline; Core waits for every block's
//! checks before starting the next one). Each chainstate owns its queue of
//! pending blocks, bounded by [`SCRIPT_PIPELINE_BLOCKS`] + 1; the threads
//! are the engine's, shared by its chainstates (as Core's script check
//! queue is the `ChainstateManager`'s);
//! settling a verdict (undo data, tip announcement, or a roll back) is the
//! engine's ([`crate::engine::settle`]), since it spans every stage.
//!
//! Block N's coins are applied and N is pushed on the chain, then its
//! scripts are handed to the script threads while this thread reads,
//! prefetches and connects the next blocks. Up to
//! [`SCRIPT_PIPELINE_BLOCKS`] blocks are *pending* (their scripts queued or
//! being checked) while the next one connects; the oldest is settled
//! (its verdict awaited) when one more would exceed that. Until it is
//! settled a block's undo data is not written, its tip is not announced,
//! and nothing is flushed (every flush and every disconnect settles all
//! pending blocks first). If N's scripts fail, every block connected on top
//! of it is rolled back with its in-memory undo data, newest first, then N,
//! and N is marked invalid (with those descendants), so the result is
//! exactly that of checking N before connecting N+1.
//!
//! # Napkin math
//! With every script checked, connect work (coins, undo, parsing) is
//! ~5-20 % of a block's time and script checks the rest. Without the
//! overlap the script threads idle during that part; with it, the cores are
//! busy for both. With only one block pending, each block still ended with
//! a bubble: the last transactions keep one thread while the other has
//! nothing to steal, then both wait for this thread to wake, write the undo
//! data and hand over the next block (~5 ms of a ~200 ms full block, measured
//! with `perf sched` on the bench chain: ~6 % of two cores idle). With the
//! next block's job already queued, a thread that runs out of work takes it
//! at once.

use std::collections::VecDeque;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use ibex_script::VerifyFlags;

use crate::connect::ConnectedBlock;
use crate::index::EntryId;
use crate::prepared::PreparedBlock;
use crate::scripts::{verify_block_scripts, ScriptCheckBroken, ScriptCheckError, ScriptThreads};

/// Blocks whose scripts may be queued or checked while the next block
/// connects.
pub const SCRIPT_PIPELINE_BLOCKS: usize = 2;

/// What the script threads need of a block: owned, shared with the job.
#[derive(Debug)]
pub(crate) struct ScriptJob {
    pub(crate) block: PreparedBlock,
    pub(crate) connected: ConnectedBlock,
}

/// A connected block whose scripts are queued or being checked.
#[derive(Debug)]
pub(crate) struct PendingBlock {
    pub(crate) id: EntryId,
    pub(crate) job: Arc<ScriptJob>,
    /// `None` when no scripts are checked (the verdict is known: valid).
    pub(crate) verdict: Option<Receiver<Result<u64, ScriptCheckError>>>,
}

/// The blocks pending on the script threads, oldest first.
pub(crate) struct ScriptQueue {
    pending: VecDeque<PendingBlock>,
}

impl ScriptQueue {
    /// An empty queue.
    pub(crate) fn new() -> ScriptQueue {
        ScriptQueue { pending: VecDeque::with_capacity(SCRIPT_PIPELINE_BLOCKS + 1) }
    }

    /// Blocks pending.
    pub(crate) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no block is pending.
    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The oldest pending block.
    pub(crate) fn oldest(&self) -> Option<EntryId> {
        self.pending.front().map(|pending| pending.id)
    }

    /// Starts checking `job`'s scripts on `threads` (if `flags` is `Some`)
    /// and adds it as the newest pending block.
    pub(crate) fn start(
        &mut self,
        threads: &ScriptThreads,
        id: EntryId,
        job: ScriptJob,
        flags: Option<VerifyFlags>,
    ) {
        // The engine settles down to SCRIPT_PIPELINE_BLOCKS after each start.
        assert!(self.pending.len() <= SCRIPT_PIPELINE_BLOCKS, "script queue over its bound");
        let job = Arc::new(job);
        let verdict = flags.map(|flags| {
            let (sender, receiver) = sync_channel(1);
            let shared = job.clone();
            let pool = threads.clone();
            threads.spawn(move || {
                let result = verify_block_scripts(
                    shared.block.view(),
                    shared.block.txids(),
                    &shared.connected.undo,
                    flags,
                    &pool,
                );
                let _ = sender.send(result);
            });
            receiver
        });
        self.pending.push_back(PendingBlock { id, job, verdict });
    }

    /// Takes the oldest pending block and waits for its verdict. A verdict
    /// that never comes (its job's sender dropped) is not a pass:
    /// [`ScriptCheckBroken::VerdictLost`].
    pub(crate) fn next_verdict(&mut self) -> Option<(PendingBlock, Result<u64, ScriptCheckError>)> {
        let pending = self.pending.pop_front()?;
        let verdict = match &pending.verdict {
            None => Ok(0),
            Some(receiver) => receiver
                .recv()
                .unwrap_or(Err(ScriptCheckError::Broken(ScriptCheckBroken::VerdictLost))),
        };
        Some((pending, verdict))
    }

    /// Takes the newest pending block (to roll it back).
    pub(crate) fn take_newest(&mut self) -> Option<PendingBlock> {
        self.pending.pop_back()
    }

    /// The oldest pending block, for tests that break its verdict.
    #[cfg(test)]
    pub(crate) fn oldest_mut(&mut self) -> Option<&mut PendingBlock> {
        self.pending.front_mut()
    }
}
