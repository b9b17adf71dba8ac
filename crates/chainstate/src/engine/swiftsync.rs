//! The engine's side of a SwiftSync attempt ([`crate::swiftsync`]): while
//! a plan is set and the active chain stands at genesis, nothing is
//! connected. Once the best header chain reaches the hints' terminal
//! height `H` and `-assumevalid` covers its block, a pass starts
//! (`crate::swiftsync::run`): each block of that chain to `H` is handed to
//! it once, as it is accepted or, stored before, read back. When every one
//! was handed over, the chainstate either jumps to `H` (the proof held) or
//! the plan is dropped and the blocks are connected the usual way.
//!
//! Blocks 1 to `H` get no undo data: like a snapshot's base, `H` is the
//! lowest block the chain can be rolled back to (it lies below the
//! `-assumevalid` block, two weeks of work deep; `invalidateblock` refuses
//! to go below it).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ibex_primitives::BlockHash;

use super::{BlockSource, ChainEvent, Chainstate};
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::prepared::PreparedBlock;
use crate::swiftsync::full::ChainTimes;
use crate::swiftsync::{
    spent_coins_cutoff, ClaimedSpentCoins, LivePass, PassEnd, PassSetup, RunBlock,
    SpentCoinsRefusal, SwiftSyncEvent, SwiftSyncFailure, SwiftSyncMode, SwiftSyncPassStart,
    SwiftSyncPlan,
};

mod checkpoint;
mod recent;

use recent::recent_runs;

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
    /// The pass, once started (its terminal block covered by
    /// `-assumevalid`).
    live: Option<LivePass>,
    /// When it started.
    started: Option<Instant>,
    /// Spent coins refused so far (published to the network side, which
    /// asks other peers; at most `SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX`
    /// before the attempt ends, over every pass of the plan).
    refusals: Vec<SpentCoinsRefusal>,
    /// How often the pass keeps a checkpoint.
    checkpoint_interval: Duration,
}

/// How often the pass keeps a checkpoint while it runs
/// (`crate::swiftsync`'s `checkpoint`): a crash costs at most this much of
/// the pass. Each costs a drain of the blocks handed out (milliseconds)
/// and a sync of the bucket files written since the last (on mainnet's
/// ~10 GB over a pass of an hour or more, ~1 GB each).
pub const SWIFTSYNC_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// A best header younger than this is the network's present (Core's
/// `MAX_TIP_AGE`-like day used for headers sync).
const HEADERS_PRESENT_SECONDS: i64 = 24 * 60 * 60;

/// Fewest bytes of coins a worker holds before writing them as a run.
const RUN_BYTES_MIN: usize = 8 << 20;

impl Chainstate {
    /// Syncs with `plan` (SwiftSync, in the plan's mode) if the active
    /// chain is still at genesis when blocks come to be connected.
    pub fn set_swiftsync(&mut self, plan: SwiftSyncPlan) {
        self.swiftsync = Some(SwiftSyncState {
            plan,
            terminal: None,
            stored_through: 0,
            waiting_logged: false,
            live: None,
            started: None,
            refusals: Vec::new(),
            checkpoint_interval: SWIFTSYNC_CHECKPOINT_INTERVAL,
        });
        // Readers (the network side) see the plan pending from now on.
        self.shared.reads.publish_swiftsync(Some(0));
    }

    /// Whether a SwiftSync plan still waits for its blocks.
    pub fn swiftsync_pending(&self) -> bool {
        self.swiftsync.is_some()
    }

    /// The terminal height of a fully validating plan still pending: the
    /// network side fetches the spent coins of its blocks.
    pub fn swiftsync_spent_coins_wanted(&self) -> Option<u32> {
        let state = self.swiftsync.as_ref()?;
        (state.plan.mode() == SwiftSyncMode::FullyValidating).then(|| state.plan.terminal_height())
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
            self.give_up_swiftsync(failure)?;
        }
        Ok(())
    }

    /// What keeps a waiting plan from its pass, as a failure: its
    /// terminal block not covered by `-assumevalid`, a block not stored,
    /// or a chain shorter than the hints.
    fn waiting_failure(&self) -> SwiftSyncFailure {
        if let Some(state) = &self.swiftsync {
            let all_stored = state.stored_through == state.plan.terminal_height();
            let full = state.plan.mode() == SwiftSyncMode::FullyValidating;
            if let (Some(live), true) = (&state.live, all_stored && full) {
                if let Some(height) = live.first_wanted() {
                    let hash = self.shared.index.ancestor(live.terminal(), height);
                    let hash = hash.map_or(BlockHash::ZERO, |id| self.shared.index.entry(id).hash);
                    return SwiftSyncFailure::SpentCoinsMissing { height, hash };
                }
            }
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

    fn give_up_swiftsync(&mut self, failure: SwiftSyncFailure) -> Result<(), ChainstateError> {
        let live = self.swiftsync.as_mut().and_then(|state| state.live.take());
        if let Some(live) = live {
            // Its workers stop first; then the coins it staged go, before
            // any block is connected into the same database.
            drop(live);
            self.active.connector.cache().database().discard_staged()?;
        }
        self.discard_kept_checkpoint()?;
        self.drop_swiftsync();
        self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::GivenUp { failure }));
        Ok(())
    }

    /// Before connecting: true when blocks may be connected the usual way
    /// (no plan, or the plan is done with), false while the plan waits for
    /// blocks. Runs the pass once every block is stored.
    pub(crate) fn swiftsync_gate(&mut self) -> Result<bool, ChainstateError> {
        let Some(terminal_height) =
            self.swiftsync.as_ref().map(|state| state.plan.terminal_height())
        else {
            self.discard_kept_checkpoint()?;
            return Ok(true);
        };
        // The genesis block is connected as usual (it creates no coin): the
        // node shows a chain at height 0 while the plan waits.
        if self.active.chain.tip().is_none() {
            let genesis = self.shared.index.get(&self.shared.options.params.genesis_hash);
            if let Some(genesis) =
                genesis.filter(|&id| self.shared.index.entry(id).status.has(BlockStatus::HAVE_DATA))
            {
                self.activate_step(super::ChainRole::Active, genesis)?;
            }
        }
        let height = self.active.chain.height().unwrap_or(0);
        if height > 0 || self.snapshot.is_some() {
            self.discard_kept_checkpoint()?;
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
            self.give_up_swiftsync(failure)?;
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
        if let Some(terminal) = terminal {
            if let Some(going_on) = self.pass_step(terminal, stored_through == terminal_height)? {
                return Ok(going_on);
            }
        }
        let Some(state) = self.swiftsync.as_mut() else { return Ok(true) };
        if !std::mem::replace(&mut state.waiting_logged, true) {
            self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::Waiting { terminal_height }));
        }
        Ok(false)
    }

    /// Starts, feeds or ends the pass to `terminal` (every block to it
    /// stored when `all_stored`). `Some` answers the gate; `None` waits.
    fn pass_step(
        &mut self,
        terminal: EntryId,
        all_stored: bool,
    ) -> Result<Option<bool>, ChainstateError> {
        let database = self.active.connector.cache().database().clone();
        let Some(state) = self.swiftsync.as_mut() else { return Ok(Some(true)) };
        // The best header chain moved below `H`: what was accounted was
        // for other blocks.
        if state.live.as_ref().is_some_and(|live| live.terminal() != terminal) {
            state.live = None;
            database.discard_staged()?;
        }
        if state.live.is_none() {
            // A node shutting down starts no pass: its workers would stage
            // coins the next open only discards.
            if self.shared.interrupted() {
                return Ok(None);
            }
            // Within an import the headers above come with their blocks:
            // `-assumevalid`'s margin may be reached later. The fully
            // validating mode checks scripts and needs no margin.
            let mode = state.plan.mode();
            if mode == SwiftSyncMode::AssumeValid
                && !super::activate::assume_valid_covers(&self.shared, terminal)
            {
                if all_stored && self.headers_reach_present() {
                    self.give_up_swiftsync(self.waiting_failure())?;
                    return Ok(Some(true));
                }
                return Ok(None);
            }
            if !self.start_pass(terminal)? {
                return Ok(Some(true));
            }
        }
        let finish = self
            .swiftsync
            .as_ref()
            .and_then(|state| state.live.as_ref())
            .is_some_and(|live| live.stopped() || (all_stored && live.all_handed()));
        let all_taken = self
            .swiftsync
            .as_ref()
            .and_then(|state| state.live.as_ref())
            .is_some_and(LivePass::all_handed_or_held);
        // Blocks that waited with their coins for the blocks below them.
        let index = &self.shared.index;
        if let Some(live) = self.swiftsync.as_mut().and_then(|state| state.live.as_mut()) {
            live.release_stored(&|block: &RunBlock, cutoff: u32| recent_runs(index, block, cutoff));
        }
        if all_stored && !finish && !all_taken {
            // Blocks stored before the pass started, or missed.
            self.hand_stored_blocks(terminal);
        }
        if all_stored && self.live_pass().is_some_and(LivePass::all_handed) {
            // Every block is out: wait for the workers to settle them, so
            // that no refusal comes after the judgement.
            if let Some(live) = self.live_pass() {
                live.settle();
            }
        }
        if !self.reopen_refused_blocks()? {
            return Ok(Some(true));
        }
        let finish = self
            .live_pass()
            .is_some_and(|live| live.stopped() || (all_stored && live.all_handed()));
        if !finish {
            self.keep_checkpoint_if_due()?;
            return Ok(None);
        }
        let Some(live) = self.swiftsync.as_mut().and_then(|state| state.live.take()) else {
            return Ok(Some(true));
        };
        self.end_pass(live, terminal)?;
        Ok(Some(!self.swiftsync_pending()))
    }

    /// Starts the pass's workers; false when the attempt was given up.
    fn start_pass(&mut self, terminal: EntryId) -> Result<bool, ChainstateError> {
        let database = self.active.connector.cache().database().clone();
        if database.iter_coins().next().is_some() {
            self.give_up_swiftsync(SwiftSyncFailure::CoinsPresent)?;
            return Ok(false);
        }
        let Some(plan) = self.swiftsync.as_ref().map(|state| state.plan.clone()) else {
            return Ok(false);
        };
        let worker_count = self.shared.options.script_threads.max(1) + 1;
        let run_bytes_max =
            (self.shared.options.memory.coins_bytes / worker_count).max(RUN_BYTES_MIN);
        let times = match plan.mode() {
            SwiftSyncMode::AssumeValid => ChainTimes::default(),
            SwiftSyncMode::FullyValidating => self.chain_times(terminal),
        };
        let terminal_hash = self.shared.index.entry(terminal).hash;
        let resume = self.take_kept_checkpoint(terminal_hash, &plan)?;
        let setup = PassSetup {
            files: self.shared.persistence.block_files(),
            hints: plan.shared_hints(),
            database,
            params: self.shared.options.params.clone(),
            worker_count,
            run_bytes_max,
            interrupt: self.shared.interrupt.clone(),
            mode: plan.mode(),
            times,
            terminal_hash,
            checkpoint_interval: self
                .swiftsync
                .as_ref()
                .map_or(SWIFTSYNC_CHECKPOINT_INTERVAL, |state| state.checkpoint_interval),
        };
        let live = match LivePass::start(setup, terminal, resume)? {
            Ok(live) => live,
            Err(failure) => {
                self.give_up_swiftsync(failure)?;
                return Ok(false);
            }
        };
        let terminal_height = self.shared.index.entry(terminal).height;
        self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::Started {
            terminal: terminal_hash,
            terminal_height,
            worker_count,
        }));
        if let Some(accounted_count) = live.resumed_count() {
            let event = SwiftSyncEvent::Resumed { accounted_count, terminal_height };
            self.emit(ChainEvent::SwiftSync(event));
        }
        // The network side asks for no spent coins of a height accounted
        // before (a resumed pass), and for none until it knows which.
        let start = SwiftSyncPassStart { terminal: terminal_hash, accounted: live.handed().into() };
        self.shared.reads.publish_swiftsync_pass(Some(Arc::new(start)));
        if let Some(state) = self.swiftsync.as_mut() {
            state.live = Some(live);
            state.started = Some(Instant::now());
        }
        self.hand_stored_blocks(terminal);
        Ok(true)
    }

    /// The median times past of `terminal`'s chain, by height.
    fn chain_times(&self, terminal: EntryId) -> ChainTimes {
        let index = &self.shared.index;
        let mut times = vec![0i64; index.entry(terminal).height as usize + 1];
        let mut walk = Some(terminal);
        while let Some(id) = walk {
            let entry = index.entry(id);
            times[entry.height as usize] = index.median_time_past(id);
            walk = entry.parent;
        }
        ChainTimes::new(times)
    }

    /// The pass, while one runs.
    fn live_pass(&self) -> Option<&LivePass> {
        self.swiftsync.as_ref().and_then(|state| state.live.as_ref())
    }

    /// Takes the pass's refusals of spent coins (`crate::swiftsync`'s
    /// `refusals`): their blocks wait for coins again, and the refusals
    /// are logged and published for the network side. False when one
    /// ended the attempt (a block refused too often: given up).
    fn reopen_refused_blocks(&mut self) -> Result<bool, ChainstateError> {
        let Some(state) = self.swiftsync.as_mut() else { return Ok(true) };
        let Some(live) = state.live.as_mut() else { return Ok(true) };
        let refusals = match live.reopen_refused(state.refusals.len()) {
            Ok(refusals) => refusals,
            Err(failure) => {
                self.give_up_swiftsync(failure)?;
                return Ok(false);
            }
        };
        if refusals.is_empty() {
            return Ok(true);
        }
        state.refusals.extend(refusals.iter().cloned());
        let published: Arc<[SpentCoinsRefusal]> = state.refusals.as_slice().into();
        self.shared.reads.publish_swiftsync_refusals(published);
        for refusal in refusals {
            self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::SpentCoinsRefused(refusal)));
        }
        Ok(true)
    }

    /// Coins claimed for the inputs of block `hash` (BIP 455, from
    /// `source`), one per input after the coinbase in block order, for a
    /// fully validating plan: the block is accounted once it and its coins
    /// both came. Whether they were taken (not when no such pass runs, the
    /// block is not one of it, or it was accounted already). Claims are
    /// not trusted: coins the block's checks refuse are published as
    /// refused and the block waits for others (`crate::swiftsync`'s
    /// `refusals`); a lie no rule catches unbalances the aggregate, and
    /// the attempt is given up. When they complete the pass, it ends here
    /// (the chain jumps to `H`, or the attempt is given up).
    pub fn swiftsync_spent_coins(
        &mut self,
        hash: &BlockHash,
        coins: ClaimedSpentCoins,
        source: BlockSource,
    ) -> Result<bool, ChainstateError> {
        if !self.reopen_refused_blocks()? {
            return Ok(false);
        }
        let Some(id) = self.shared.index.get(hash) else { return Ok(false) };
        let height = self.shared.index.entry(id).height;
        // A cutoff further back than the recent blocks the pass reads is
        // not one this node asks with.
        if coins.cutoff_height != 0 && coins.cutoff_height < spent_coins_cutoff(height) {
            return Ok(false);
        }
        let index = &self.shared.index;
        let Some(live) = self.swiftsync.as_mut().and_then(|state| state.live.as_mut()) else {
            return Ok(false);
        };
        if index.ancestor(live.terminal(), height) != Some(id) {
            return Ok(false);
        }
        let recent = |block: &RunBlock, cutoff: u32| recent_runs(index, block, cutoff);
        let taken = live.hand_coins((height, *hash), coins, source, &recent);
        if taken && live.all_handed() {
            self.activate_best_chain()?;
        }
        Ok(taken)
    }

    /// Hands every stored block of `terminal`'s chain not handed yet to
    /// the pass (read back from its file).
    fn hand_stored_blocks(&mut self, terminal: EntryId) {
        let Some(live) = self.swiftsync.as_mut().and_then(|state| state.live.as_mut()) else {
            return;
        };
        let index = &self.shared.index;
        let mut blocks = Vec::new();
        let mut walk = Some(terminal);
        while let Some(id) = walk {
            let entry = index.entry(id);
            if entry.height == 0 {
                break;
            }
            if live.wants(entry.height) && entry.status.has(BlockStatus::HAVE_DATA) {
                if let Some(position) = entry.block_position {
                    blocks.push(RunBlock { id, height: entry.height, hash: entry.hash, position });
                }
            }
            walk = entry.parent;
        }
        // File order: the reads run along the files.
        blocks
            .sort_unstable_by_key(|block| (block.position.file_number, block.position.data_offset));
        let recent = |block: &RunBlock, cutoff: u32| recent_runs(index, block, cutoff);
        for block in blocks {
            live.hand(block, None, &recent);
        }
    }

    /// A block just stored: handed to the pass, parsed, when it is one of
    /// its blocks still to account; else given back.
    pub(crate) fn swiftsync_take(
        &mut self,
        id: EntryId,
        block: PreparedBlock,
    ) -> Option<PreparedBlock> {
        let Some(live) = self.swiftsync.as_mut().and_then(|state| state.live.as_mut()) else {
            return Some(block);
        };
        let index = &self.shared.index;
        let entry = index.entry(id);
        let Some(position) = entry.block_position else { return Some(block) };
        if !live.wants(entry.height) || index.ancestor(live.terminal(), entry.height) != Some(id) {
            return Some(block);
        }
        let run_block = RunBlock { id, height: entry.height, hash: entry.hash, position };
        let recent = |block: &RunBlock, cutoff: u32| recent_runs(index, block, cutoff);
        live.hand(run_block, Some(block), &recent);
        None
    }

    /// Waits for the pass to `terminal` and acts on its end.
    fn end_pass(&mut self, live: LivePass, terminal: EntryId) -> Result<(), ChainstateError> {
        let database = self.active.connector.cache().database().clone();
        let (terminal_hash, terminal_height) = {
            let entry = self.shared.index.entry(terminal);
            (entry.hash, entry.height)
        };
        let started = self.swiftsync.as_ref().and_then(|state| state.started);
        match live.finish()? {
            PassEnd::Suspended { accounted_count } => {
                let event = SwiftSyncEvent::Suspended { accounted_count, terminal_height };
                self.emit(ChainEvent::SwiftSync(event));
                Ok(())
            }
            PassEnd::Failed(failure) => {
                database.discard_staged()?;
                self.give_up_swiftsync(failure)?;
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
                let elapsed_ms = started.map_or(0, |started| started.elapsed().as_millis() as u64);
                self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::Completed {
                    terminal: terminal_hash,
                    terminal_height,
                    coin_count: totals.coin_count,
                    input_count: totals.input_count,
                    elapsed_ms,
                    tables_ms: totals.tables_ms,
                }));
                let input_count = usize::try_from(totals.input_count).unwrap_or(usize::MAX);
                self.active.announce_tip(&mut self.shared, terminal, input_count);
                Ok(())
            }
        }
    }

    /// Forgets the plan (done with, or given up) and stops its pass.
    fn drop_swiftsync(&mut self) {
        self.swiftsync = None;
        self.shared.reads.publish_swiftsync(None);
        self.shared.reads.publish_swiftsync_refusals(Arc::default());
        self.shared.reads.publish_swiftsync_pass(None);
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
