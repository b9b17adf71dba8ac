//! Moving the tip to the most-work valid chain (Core's `ActivateBestChain`,
//! `ConnectTip`, `DisconnectTip`).
//!
//! The loop is the engine's ([`Chainstate::activate_step`]): between two
//! blocks it answers the readers, who read the whole engine. The steps it
//! runs (connect a block, disconnect the tip, flush when due) are a
//! chainstate's ([`CoinsChain`]), each given the [`Shared`] record, so the
//! same loop moves the active chainstate or one beside it
//! ([`ChainRole`]).

use ibex_consensus::{block_script_flags, BlockRejection, ConnectRules};
use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::Height;

use super::coins_chain::ChainRole;
use super::{ChainEvent, Chainstate, CoinsChain, FlushReason, Shared, TipUpdate};
use crate::block_read_ahead::{
    read_ahead_bytes, BlockToRead, READ_AHEAD_BLOCKS_MIN, READ_AHEAD_SEGMENT_BLOCKS,
};
use crate::coins::cache::FlushMode;
use crate::connect::{Bip30Check, ConnectContext, ConnectError, ConnectedBlock};
use crate::disconnect::DisconnectResult;
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::prepared::PreparedBlock;
use crate::stages::script_queue::{ScriptJob, SCRIPT_PIPELINE_BLOCKS};

/// Where a chainstate stands against a target after disconnecting.
enum ToFork {
    /// Disconnected down to the fork (`None`: no block in common).
    Reached(Option<EntryId>),
    /// A pending block failed while settling: the chain changed, so the
    /// caller picks the target again.
    ChainChanged,
}

/// Core's assumevalid distance: scripts are skipped only for blocks at
/// least two weeks' worth of work below the best header.
const ASSUME_VALID_MARGIN_SECONDS: u64 = 60 * 60 * 24 * 7 * 2;

impl Chainstate {
    /// Connects and disconnects until the tip is the best candidate and
    /// every connected block's scripts are checked, or the `-stopatheight`
    /// height is reached: a fixed point. Invalid blocks met on the way
    /// (their scripts included) are marked and the next best chain is tried,
    /// as Core's `ActivateBestChain` goes on after `InvalidChainFound` until
    /// no candidate with more work than the tip is left.
    ///
    /// Ends with nothing pending: each round either settles every pending
    /// block valid (done) or marks one invalid (finitely many), so it
    /// terminates.
    pub fn activate_best_chain(&mut self) -> Result<(), ChainstateError> {
        self.activate_best_chain_of(ChainRole::Active)
    }

    /// [`Self::activate_best_chain`] of the chainstate in `role` (nothing
    /// when the engine has none in that role).
    pub(crate) fn activate_best_chain_of(
        &mut self,
        role: ChainRole,
    ) -> Result<(), ChainstateError> {
        loop {
            self.advance_best_chain_of(role)?;
            let Some((shared, coins_chain)) = self.parts(role) else { return Ok(()) };
            if coins_chain.settle_pending(shared)? {
                return Ok(());
            }
        }
    }

    /// [`Self::activate_best_chain`] without waiting for the last blocks'
    /// scripts: the step after each block of a stream (an import, a
    /// download), so that scripts overlap the next blocks (see
    /// `crate::stages::script_queue`). Up to [`SCRIPT_PIPELINE_BLOCKS`] blocks may be
    /// left pending, and one of them may still fail: once no more blocks
    /// are coming, call [`Self::activate_best_chain`] to reach the fixed
    /// point.
    pub fn advance_best_chain(&mut self) -> Result<(), ChainstateError> {
        self.advance_best_chain_of(ChainRole::Active)
    }

    /// [`Self::advance_best_chain`] of the chainstate in `role`.
    fn advance_best_chain_of(&mut self, role: ChainRole) -> Result<(), ChainstateError> {
        if role == ChainRole::Active && !self.swiftsync_gate()? {
            return Ok(());
        }
        loop {
            let Some((shared, coins_chain)) = self.parts(role) else { return Ok(()) };
            if coins_chain.reached_stop_height(shared) || shared.interrupted() {
                return Ok(());
            }
            let Some(best) = coins_chain.candidates.best_valid(&shared.index) else {
                return Ok(());
            };
            if Some(best) == coins_chain.chain.tip() {
                return Ok(());
            }
            self.activate_step(role, best)?;
        }
    }

    /// Disconnects the chainstate in `role` to the fork with `target`'s
    /// chain, then connects towards `target` until it is reached, a block
    /// fails, or the stop height. Readers are answered between blocks.
    pub(super) fn activate_step(
        &mut self,
        role: ChainRole,
        target: EntryId,
    ) -> Result<(), ChainstateError> {
        self.connect_toward(role, target, u32::MAX)
    }

    /// [`Self::activate_step`], connecting `blocks_max` blocks at most: the
    /// background chainstate's steps between two looks at the commands.
    /// A step that stops at that bound keeps reading ahead (blocks, and the
    /// next block's coins), so the next step goes on where it stopped as
    /// one long step would.
    pub(super) fn connect_toward(
        &mut self,
        role: ChainRole,
        target: EntryId,
        blocks_max: u32,
    ) -> Result<(), ChainstateError> {
        let Some((shared, coins_chain)) = self.parts(role) else { return Ok(()) };
        let ToFork::Reached(fork) = coins_chain.disconnect_to_fork(shared, target)? else {
            coins_chain.connector.stop_read_ahead();
            return Ok(());
        };
        let start_height = fork.map_or(0, |id| shared.index.entry(id).height + 1);
        let target_height = shared.index.entry(target).height;
        let end_height = target_height.min(start_height.saturating_add(blocks_max.max(1) - 1));
        let mut stopped_at_bound = end_height < target_height;
        for height in start_height..=end_height {
            let Some((shared, coins_chain)) = self.parts(role) else { return Ok(()) };
            let Some(id) = shared.index.ancestor(target, height) else {
                stopped_at_bound = false;
                break;
            };
            if !coins_chain.connector.reads_ahead(height, id) {
                coins_chain.start_read_ahead(shared, target, height)?;
            }
            let next = (height < target_height)
                .then(|| shared.index.ancestor(target, height + 1))
                .flatten();
            if !coins_chain.connect_tip(shared, id, next)?
                || coins_chain.reached_stop_height(shared)
                || shared.interrupted()
            {
                stopped_at_bound = false;
                break;
            }
            // Readers waiting get a settled state between two blocks; a
            // pending block that failed changed the chain: pick again.
            // (Readers see the active chainstate: what settling it found
            // does not change another one's target.)
            if !self.serve_reads()? && role == ChainRole::Active {
                stopped_at_bound = false;
                break;
            }
        }
        let Some((shared, coins_chain)) = self.parts(role) else { return Ok(()) };
        if !stopped_at_bound {
            coins_chain.connector.stop_read_ahead();
        }
        coins_chain.prune_candidates(&shared.index);
        Ok(())
    }
}

impl CoinsChain {
    /// Disconnects down to the fork with `target`'s chain, settling the
    /// pending blocks first if any must go.
    fn disconnect_to_fork(
        &mut self,
        shared: &mut Shared,
        target: EntryId,
    ) -> Result<ToFork, ChainstateError> {
        let mut fork = self.chain.find_fork(&shared.index, target);
        if fork != self.chain.tip() {
            // Disconnecting needs a settled tip.
            if !self.settle_pending(shared)? {
                return Ok(ToFork::ChainChanged);
            }
            fork = self.chain.find_fork(&shared.index, target);
        }
        let mut disconnected_count = 0u32;
        while self.chain.tip().is_some() && self.chain.tip() != fork {
            self.disconnect_tip(shared)?;
            disconnected_count += 1;
        }
        if disconnected_count > 0 && self.role == ChainRole::Active {
            let fork_height = fork.map_or(0, |id| shared.index.entry(id).height);
            let new_best = shared.index.entry(target).hash;
            shared.emit(ChainEvent::Reorganization { disconnected_count, fork_height, new_best });
        }
        Ok(ToFork::Reached(fork))
    }

    /// Starts reading the stored blocks from `start_height` towards
    /// `target` (at most [`READ_AHEAD_SEGMENT_BLOCKS`] of them, so the list
    /// stays small on a path of 900,000 blocks) ahead of the connecting
    /// (see [`crate::block_read_ahead`]), when there are enough of them to
    /// be worth a thread.
    fn start_read_ahead(
        &mut self,
        shared: &Shared,
        target: EntryId,
        start_height: u32,
    ) -> Result<(), ChainstateError> {
        self.connector.stop_read_ahead();
        let index = &shared.index;
        let target_height = index.entry(target).height;
        let end_height =
            target_height.min(start_height.saturating_add(READ_AHEAD_SEGMENT_BLOCKS - 1));
        let recent = self.connector.recent_id();
        let mut blocks = Vec::new();
        let mut path = Vec::new();
        for height in start_height..=end_height {
            let Some(id) = index.ancestor(target, height) else { break };
            let entry = index.entry(id);
            let Some(position) = entry.block_position else { break };
            path.push(id);
            if Some(id) != recent {
                blocks.push(BlockToRead { id, hash: entry.hash, position });
            }
        }
        if blocks.len() < READ_AHEAD_BLOCKS_MIN {
            return Ok(());
        }
        let files = shared.persistence.block_files();
        let bytes_max = read_ahead_bytes(&shared.options.memory);
        let gauge = shared.metrics.stored_block_read_ahead.clone();
        self.connector.start_read_ahead(files, blocks, (start_height, path), bytes_max, gauge)
    }

    /// Connects block `id` on the tip, reading the coins of `next` (the
    /// block to connect after it, if any) meanwhile. False when it is
    /// invalid (then it is marked and logged).
    fn connect_tip(
        &mut self,
        shared: &mut Shared,
        id: EntryId,
        next: Option<EntryId>,
    ) -> Result<bool, ChainstateError> {
        let block = self.load_block(shared, id)?;
        let view = block.view();
        if shared.index.entry(id).parent.is_none() {
            // Core never connects the genesis block's transactions: its
            // coinbase is not spendable.
            let (transaction_count, input_count) = (view.transaction_count(), view.input_count());
            self.finish_genesis(shared, id, transaction_count, input_count);
            return Ok(true);
        }
        self.connector.prefetch_inputs(id, &block)?;
        if let Some(next) = next {
            self.connector.start_next_prefetch(next, &block);
        }
        let script_flags = (!assume_valid_covers(shared, id)).then(|| {
            let height = shared.index.entry(id).height;
            block_script_flags(&shared.options.params, height.into(), &block.hash())
        });
        match self.connect_with_context(shared, id, &block) {
            Ok(connected) => {
                self.chain.push(id);
                let no_scripts = script_flags.is_none();
                let job = ScriptJob { block, connected };
                self.scripts.start(&shared.script_threads, id, job, script_flags);
                // Earlier blocks' scripts were checked while this one
                // connected; if one failed, it and everything above it
                // (this block included) were rolled back.
                let left = if no_scripts { 0 } else { SCRIPT_PIPELINE_BLOCKS };
                if !self.settle_pending_to(shared, left)? {
                    return Ok(false);
                }
                // A flush settles the blocks just started: if their scripts
                // failed, they were rolled back and nothing may follow them.
                self.flush_if_needed(shared)?;
                Ok(self.chain.tip() == Some(id))
            }
            Err(ConnectError::Invalid(rejection)) => {
                // A failure of an earlier block comes first: this one is
                // then its descendant and marked with it.
                if self.settle_pending(shared)? {
                    self.connect_failed(shared, id, rejection);
                }
                Ok(false)
            }
            Err(ConnectError::Chainstate(error)) => Err(error),
        }
    }

    /// Makes the genesis block the tip (no coins, no undo data).
    fn finish_genesis(
        &mut self,
        shared: &mut Shared,
        id: EntryId,
        transaction_count: usize,
        input_count: usize,
    ) {
        shared.index.entry_mut(id).status.raise_validity(BlockStatus::VALID_SCRIPTS);
        self.chain.push(id);
        shared.statistics.blocks_connected += 1;
        shared.statistics.transactions_connected += transaction_count as u64;
        self.announce_tip(shared, id, input_count);
    }

    /// Says block `id` (whose inputs were `input_count`) is the settled
    /// tip: [`ChainEvent::TipUpdated`] and a published snapshot for the
    /// active chainstate, [`ChainEvent::BackgroundTipUpdated`] alone for a
    /// background one (see [`ChainRole`]).
    pub(crate) fn announce_tip(&self, shared: &mut Shared, id: EntryId, input_count: usize) {
        let update = self.tip_update_for(shared, id, input_count);
        if self.role != ChainRole::Active {
            shared.emit(ChainEvent::BackgroundTipUpdated(update));
            return;
        }
        shared.emit(ChainEvent::TipUpdated(update));
        self.publish(shared, Some(id));
    }

    /// Applies block `id`'s coins with every rule but its scripts, which
    /// the pipeline checks (see [`crate::stages::script_queue`]).
    fn connect_with_context(
        &mut self,
        shared: &Shared,
        id: EntryId,
        block: &PreparedBlock,
    ) -> Result<ConnectedBlock, ConnectError> {
        let hash = block.hash();
        let index = &shared.index;
        let entry = index.entry(id);
        let height = entry.height;
        let parent = entry.parent.ok_or(ChainstateError::MissingBlockData { hash })?;
        let params = &shared.options.params;
        let bip34_ancestor =
            index.ancestor(parent, params.bip34_height).map(|ancestor| index.entry(ancestor).hash);
        let bip30 = if !params.bip30_check_required(height, &hash, bip34_ancestor.as_ref()) {
            Bip30Check::Skip
        } else if params.bip34_from_first_block() {
            Bip30Check::OnFailure
        } else {
            Bip30Check::BeforeConnect
        };
        let chain = &self.chain;
        let median_time_past_at = |at: Height| {
            chain.at(at.to_u32()).map_or(0, |ancestor| index.median_time_past(ancestor))
        };
        let context = ConnectContext {
            rules: ConnectRules {
                params,
                height: height.into(),
                flags: block_script_flags(params, height.into(), &hash),
                enforce_sequence_locks: params
                    .deployment_active_at(BuriedDeployment::CheckSequenceVerify, height.into()),
                previous_median_time_past: index.median_time_past(parent),
                median_time_past_at: &median_time_past_at,
            },
            bip30,
            threads: &shared.script_threads,
        };
        self.connector.connect(block, &context)
    }

    /// Marks a block that failed to connect and logs why.
    pub(crate) fn connect_failed(
        &mut self,
        shared: &mut Shared,
        id: EntryId,
        rejection: BlockRejection,
    ) {
        let entry = shared.index.entry(id);
        let (hash, height) = (entry.hash, entry.height);
        shared.mark_invalid(&mut self.candidates, id);
        shared.emit(ChainEvent::BlockInvalid {
            hash,
            height,
            reason: rejection.reject_reason(),
            marked: true,
        });
    }

    /// Disconnects the tip with its undo data.
    pub(crate) fn disconnect_tip(&mut self, shared: &mut Shared) -> Result<(), ChainstateError> {
        let Some(id) = self.chain.tip() else { return Ok(()) };
        let entry = shared.index.entry(id);
        let (hash, height) = (entry.hash, entry.height);
        let block = self.load_block(shared, id)?;
        let undo = shared.load_undo(id)?;
        let result = self.connector.disconnect(&block, &undo, height)?;
        if result != DisconnectResult::Clean {
            return Err(ChainstateError::ReplayFailed { hash });
        }
        self.chain.pop();
        shared.statistics.blocks_disconnected += 1;
        // The disconnected block stays a valid candidate should the new
        // branch fail (unless `invalidateblock` marked it failed).
        if !shared.index.entry(id).status.is_failed() {
            self.candidates.insert(&shared.index, id);
        }
        if self.role != ChainRole::Active {
            return Ok(());
        }
        if let Some(tip) = self.chain.tip() {
            let update = self.tip_update_for(shared, tip, 0);
            shared.emit(ChainEvent::TipUpdated(update));
        }
        self.publish(shared, self.chain.tip());
        Ok(())
    }

    /// The `UpdateTip` fields for block `id` as the tip.
    pub(crate) fn tip_update_for(
        &self,
        shared: &Shared,
        id: EntryId,
        input_count: usize,
    ) -> TipUpdate {
        let index = &shared.index;
        let entry = index.entry(id);
        let best_header_height =
            shared.selection.best_header().map_or(entry.height, |best| index.entry(best).height);
        TipUpdate {
            hash: entry.hash,
            height: entry.height,
            version: entry.header.version,
            log2_work: entry.chain_work.log2(),
            chain_transaction_count: entry.chain_transaction_count,
            time: entry.header.time,
            cache_bytes: self.connector.cache().memory_bytes(),
            cache_coin_count: self.connector.cache().entry_count(),
            input_count,
            best_header_height,
        }
    }

    /// Flushes when the cache is full or the periodic interval passed, and
    /// waits while a background flush has not freed enough for the live
    /// map to grow (see [`crate::coins::background`]).
    fn flush_if_needed(&mut self, shared: &mut Shared) -> Result<(), ChainstateError> {
        self.collect_background_flush(shared, super::flush::Collect::Poll)?;
        self.count_table_readers(shared)?;
        let cache = self.connector.cache();
        // Keeping the coins frees nothing until the write ends: only while
        // the live map can grow as much meanwhile.
        let half_full = cache.memory_bytes() <= cache.limit_bytes() / 2;
        let keep_mode = if half_full { FlushMode::KeepCoins } else { FlushMode::EmptyCache };
        if cache.is_full() {
            let prune = self.look_at_pruning(shared);
            self.flush_in_background(shared, FlushReason::CacheFull, FlushMode::EmptyCache, prune)?;
        } else if cache.needs_room() {
            self.wait_for_flush_room(shared)?;
        } else if self.flush_schedule.last_flush.elapsed() >= shared.options.periodic_flush_interval
        {
            let prune = self.look_at_pruning(shared);
            self.flush_in_background(shared, FlushReason::Periodic, keep_mode, prune)?;
        } else if self.flush_schedule.background_flush.is_none() {
            // A flush being written is left alone: the look waits for it.
            if let Some(prune) = self.look_at_pruning(shared) {
                self.flush_in_background(shared, FlushReason::Prune, keep_mode, Some(prune))?;
            }
        }
        Ok(())
    }
}

/// Whether `-assumevalid` lets block `id` skip its scripts (Core's
/// conditions in `ConnectBlock`): it is an ancestor of the assumed-valid
/// block and of the best header, the best header has the minimum chain
/// work, and the best header is at least two weeks of work past it.
pub(super) fn assume_valid_covers(shared: &Shared, id: EntryId) -> bool {
    let index = &shared.index;
    let Some(assumed) = shared.options.assume_valid.and_then(|hash| index.get(&hash)) else {
        return false;
    };
    let Some(best) = shared.selection.best_header() else { return false };
    let params = &shared.options.params;
    let best_entry = index.entry(best);
    if !index.is_ancestor(id, assumed)
        || !index.is_ancestor(id, best)
        || best_entry.chain_work < params.minimum_chain_work
    {
        return false;
    }
    let work_above =
        best_entry.chain_work.to_u256().wrapping_sub(index.entry(id).chain_work.to_u256());
    let tip_proof =
        ibex_primitives::pow::block_proof(ibex_primitives::CompactTarget(best_entry.header.bits));
    let seconds = work_above
        .wrapping_mul_u64(params.pow_target_spacing_seconds.unsigned_abs())
        .checked_div(tip_proof.to_u256())
        .unwrap_or(ibex_primitives::U256::MAX);
    seconds.bits() > 63 || seconds.low_u64() > ASSUME_VALID_MARGIN_SECONDS
}
