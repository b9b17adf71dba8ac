//! The engine's side of a SwiftSync attempt ([`crate::swiftsync`]): while
//! a plan is set and the active chain stands at genesis, nothing is
//! connected; once every block of the best header chain to the hints'
//! terminal height `H` is stored, they are accounted at once on every
//! core, and the chainstate either jumps to `H` (the proof held) or the
//! plan is dropped and the blocks are connected the usual way.
//!
//! Blocks 1 to `H` get no undo data: like a snapshot's base, `H` is the
//! lowest block the chain can be rolled back to (it lies below the
//! `-assumevalid` block, two weeks of work deep).

use std::time::Instant;

use super::{ChainEvent, Chainstate};
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::swiftsync::{
    run_pass, PassEnd, PassInputs, RunBlock, SwiftSyncEvent, SwiftSyncFailure, SwiftSyncPlan,
};

/// A plan handed to the engine and how far its blocks are stored.
#[derive(Debug)]
pub(crate) struct SwiftSyncState {
    plan: SwiftSyncPlan,
    /// The terminal block the stored heights were counted towards.
    terminal: Option<EntryId>,
    /// Heights 1 to this all have their blocks stored.
    stored_through: u32,
    /// Whether the wait was logged.
    waiting_logged: bool,
}

/// A best header younger than this is the network's present (Core's
/// `MAX_TIP_AGE`-like day used for headers sync).
const HEADERS_PRESENT_SECONDS: i64 = 24 * 60 * 60;

/// Fewest bytes of coins a worker holds before writing them as a run.
const RUN_BYTES_MIN: usize = 8 << 20;

impl Chainstate {
    /// Syncs with `plan` (SwiftSync's assumevalid mode) if the active chain
    /// is still at genesis when blocks come to be connected.
    pub fn set_swiftsync(&mut self, plan: SwiftSyncPlan) {
        self.swiftsync =
            Some(SwiftSyncState { plan, terminal: None, stored_through: 0, waiting_logged: false });
    }

    /// Whether a SwiftSync plan still waits for its blocks.
    pub fn swiftsync_pending(&self) -> bool {
        self.swiftsync.is_some()
    }

    /// The height to which every block of the plan's chain is stored,
    /// while a plan waits (a download window starts there).
    pub fn swiftsync_stored_height(&self) -> Option<u32> {
        self.swiftsync.as_ref().map(|state| state.stored_through)
    }

    /// No more blocks are coming (an import of block files ended): a plan
    /// still waiting is given up, and the blocks stored are connected the
    /// usual way by the next activation.
    pub fn end_swiftsync_wait(&mut self) -> Result<(), ChainstateError> {
        if !self.swiftsync_gate()? {
            let failure = self.waiting_failure();
            self.give_up_swiftsync(failure);
        }
        Ok(())
    }

    /// What keeps a waiting plan from its pass, as a failure: its
    /// terminal block not covered by `-assumevalid`, a block not stored,
    /// or a chain shorter than the hints.
    fn waiting_failure(&self) -> SwiftSyncFailure {
        if let Some(state) = &self.swiftsync {
            if let Some(terminal) = state.terminal {
                if state.stored_through == state.plan.terminal_height() {
                    let entry = self.shared.index.entry(terminal);
                    return SwiftSyncFailure::ScriptsRequired {
                        height: entry.height,
                        hash: entry.hash,
                    };
                }
            }
        }
        self.missing_block_failure()
    }

    /// The first block not stored, or a chain shorter than the hints.
    fn missing_block_failure(&self) -> SwiftSyncFailure {
        let index = &self.shared.index;
        let terminal_height =
            self.swiftsync.as_ref().map_or(0, |state| state.plan.terminal_height());
        let best = self.shared.selection.best_header();
        let best_height = best.map_or(0, |id| index.entry(id).height);
        let stored = self.swiftsync.as_ref().map_or(0, |state| state.stored_through);
        match best.and_then(|best| index.ancestor(best, stored + 1)) {
            Some(id) if best_height >= terminal_height => {
                SwiftSyncFailure::BlockMissing { height: stored + 1, hash: index.entry(id).hash }
            }
            _ => SwiftSyncFailure::TerminalAboveChain { terminal_height, best_height },
        }
    }

    /// Whether the best header is less than a day old (Core's test that
    /// headers are synced to the present): a plan whose terminal height
    /// lies above it waits for headers that will not come.
    fn headers_reach_present(&self) -> bool {
        let Some(best) = self.shared.selection.best_header() else { return false };
        let now = crate::stages::headers::now_seconds(self.shared.mock_time_seconds);
        i64::from(self.shared.index.entry(best).header.time) >= now - HEADERS_PRESENT_SECONDS
    }

    fn give_up_swiftsync(&mut self, failure: SwiftSyncFailure) {
        self.drop_swiftsync();
        self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::GivenUp { failure }));
    }

    /// Before connecting: true when blocks may be connected the usual way
    /// (no plan, or the plan is done with), false while the plan waits for
    /// blocks. Runs the pass once every block is stored.
    pub(crate) fn swiftsync_gate(&mut self) -> Result<bool, ChainstateError> {
        let Some(terminal_height) =
            self.swiftsync.as_ref().map(|state| state.plan.terminal_height())
        else {
            return Ok(true);
        };
        let height = self.active.chain.height().unwrap_or(0);
        if height > 0 || self.snapshot.is_some() {
            self.drop_swiftsync();
            self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::NotNeeded { height }));
            return Ok(true);
        }
        let index = &self.shared.index;
        let terminal = self
            .shared
            .selection
            .best_header()
            .and_then(|best| index.ancestor(best, terminal_height));
        if terminal.is_none() && self.headers_reach_present() {
            let failure = self.waiting_failure();
            self.give_up_swiftsync(failure);
            return Ok(true);
        }
        let Some(state) = self.swiftsync.as_mut() else { return Ok(true) };
        let index = &self.shared.index;
        if terminal != state.terminal {
            state.terminal = terminal;
            state.stored_through = 0;
        }
        if let Some(terminal) = terminal {
            while state.stored_through < terminal_height {
                let Some(id) = index.ancestor(terminal, state.stored_through + 1) else { break };
                if !index.entry(id).status.has(BlockStatus::HAVE_DATA) {
                    break;
                }
                state.stored_through += 1;
            }
        }
        let stored_through = state.stored_through;
        self.shared.reads.publish_swiftsync(Some(stored_through));
        if let (Some(terminal), true) = (terminal, stored_through == terminal_height) {
            // Within an import the headers above come with their blocks:
            // `-assumevalid`'s margin may be reached later.
            if super::activate::assume_valid_covers(&self.shared, terminal) {
                let plan = self.swiftsync.as_ref().map(|state| state.plan.clone());
                if let Some(plan) = plan {
                    self.run_swiftsync(&plan, terminal)?;
                }
                return Ok(!self.swiftsync_pending());
            }
            if self.headers_reach_present() {
                self.give_up_swiftsync(self.waiting_failure());
                return Ok(true);
            }
        }
        let Some(state) = self.swiftsync.as_mut() else { return Ok(true) };
        if !std::mem::replace(&mut state.waiting_logged, true) {
            self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::Waiting { terminal_height }));
        }
        Ok(false)
    }

    /// Runs the pass to `terminal` and acts on its end.
    fn run_swiftsync(
        &mut self,
        plan: &SwiftSyncPlan,
        terminal: EntryId,
    ) -> Result<(), ChainstateError> {
        let started = Instant::now();
        let (terminal_hash, terminal_height) = {
            let entry = self.shared.index.entry(terminal);
            (entry.hash, entry.height)
        };
        let database = self.active.connector.cache().database().clone();
        if database.iter_coins().next().is_some() {
            self.give_up_swiftsync(SwiftSyncFailure::CoinsPresent);
            return Ok(());
        }
        let blocks = self.run_blocks(terminal)?;
        let worker_count = self.shared.options.script_threads.max(1) + 1;
        let run_bytes_max =
            (self.shared.options.memory.coins_bytes / worker_count).max(RUN_BYTES_MIN);
        self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::Started {
            terminal: terminal_hash,
            terminal_height,
            worker_count,
        }));
        database.begin_staging()?;
        let files = self.shared.persistence.block_files();
        let end = run_pass(PassInputs {
            files: &files,
            blocks,
            hints: plan.hints(),
            database: &database,
            params: &self.shared.options.params,
            worker_count,
            run_bytes_max,
            interrupt: self.shared.interrupt.as_deref(),
        })?;
        match end {
            // The staged coins stay marked: the next open discards them.
            PassEnd::Interrupted => Ok(()),
            PassEnd::Failed(failure) => {
                database.discard_staged()?;
                self.give_up_swiftsync(failure);
                Ok(())
            }
            PassEnd::Proven(totals) => {
                self.mark_connected_without_undo(terminal);
                self.shared.persistence.write_index(&mut self.shared.index)?;
                database.commit_staged(&terminal_hash)?;
                self.active.chain.set_tip(&self.shared.index, Some(terminal));
                self.active.prune_candidates(&self.shared.index);
                self.drop_swiftsync();
                self.shared.statistics.blocks_connected += u64::from(terminal_height);
                self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::Completed {
                    terminal: terminal_hash,
                    terminal_height,
                    coin_count: totals.coin_count,
                    input_count: totals.input_count,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                }));
                let input_count = usize::try_from(totals.input_count).unwrap_or(usize::MAX);
                self.active.announce_tip(&mut self.shared, terminal, input_count);
                Ok(())
            }
        }
    }

    /// Forgets the plan (done with, or given up).
    fn drop_swiftsync(&mut self) {
        self.swiftsync = None;
        self.shared.reads.publish_swiftsync(None);
    }

    /// Blocks 1 to `terminal`, with where each is stored.
    fn run_blocks(&self, terminal: EntryId) -> Result<Vec<RunBlock>, ChainstateError> {
        let index = &self.shared.index;
        let terminal_height = index.entry(terminal).height;
        let mut blocks = Vec::with_capacity(terminal_height as usize);
        let mut walk = Some(terminal);
        while let Some(id) = walk {
            let entry = index.entry(id);
            if entry.height == 0 {
                break;
            }
            let hash = entry.hash;
            let position =
                entry.block_position.ok_or(ChainstateError::MissingBlockData { hash })?;
            blocks.push(RunBlock { id, height: entry.height, hash, position });
            walk = entry.parent;
        }
        Ok(blocks)
    }

    /// Raises genesis to `terminal` to "connected" (Core's
    /// `BLOCK_VALID_SCRIPTS`, as assumevalid's blocks get); their undo
    /// flags stay clear.
    fn mark_connected_without_undo(&mut self, terminal: EntryId) {
        let mut walk = Some(terminal);
        while let Some(id) = walk {
            let entry = self.shared.index.entry_mut(id);
            entry.status.raise_validity(BlockStatus::VALID_SCRIPTS);
            walk = entry.parent;
            self.shared.index.mark_dirty(id);
        }
    }
}
