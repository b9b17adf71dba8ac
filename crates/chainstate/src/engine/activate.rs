//! Moving the tip to the most-work valid chain (Core's `ActivateBestChain`,
//! `ConnectTip`, `DisconnectTip`).

use ibex_consensus::{block_script_flags, BlockRejection, ConnectRules};
use ibex_primitives::params::BuriedDeployment;

use super::{ChainEvent, Chainstate, FlushReason, TipUpdate};
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
use crate::undo::BlockUndo;

fn view_height(chainstate: &Chainstate, id: EntryId) -> u32 {
    chainstate.index.entry(id).height
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
        loop {
            self.advance_best_chain()?;
            if self.settle_pending()? {
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
        loop {
            if self.reached_stop_height() || self.interrupted() {
                return Ok(());
            }
            let Some(best) = self.selection.best() else {
                return Ok(());
            };
            if Some(best) == self.chain.tip() {
                return Ok(());
            }
            self.activate_step(best)?;
        }
    }

    /// Disconnects to the fork with `target`'s chain, then connects towards
    /// `target` until it is reached, a block fails, or the stop height.
    pub(super) fn activate_step(&mut self, target: EntryId) -> Result<(), ChainstateError> {
        let mut fork = self.chain.find_fork(&self.index, target);
        if fork != self.chain.tip() {
            // Disconnecting needs a settled tip; a failed pending block
            // changes the chain, so the caller picks the target again.
            if !self.settle_pending()? {
                return Ok(());
            }
            fork = self.chain.find_fork(&self.index, target);
        }
        let mut disconnected_count = 0u32;
        while self.chain.tip().is_some() && self.chain.tip() != fork {
            self.disconnect_tip()?;
            disconnected_count += 1;
        }
        if disconnected_count > 0 {
            let fork_height = fork.map_or(0, |id| self.index.entry(id).height);
            let new_best = self.index.entry(target).hash;
            self.emit(ChainEvent::Reorganization { disconnected_count, fork_height, new_best });
        }
        let start_height = fork.map_or(0, |id| self.index.entry(id).height + 1);
        let target_height = self.index.entry(target).height;
        for height in start_height..=target_height {
            if (height - start_height) % READ_AHEAD_SEGMENT_BLOCKS == 0 {
                self.start_read_ahead(target, height)?;
            }
            let Some(id) = self.index.ancestor(target, height) else { break };
            let next =
                (height < target_height).then(|| self.index.ancestor(target, height + 1)).flatten();
            if !self.connect_tip(id, next)? || self.reached_stop_height() || self.interrupted() {
                break;
            }
            // Readers waiting get a settled state between two blocks; a
            // pending block that failed changed the chain: pick again.
            if !self.serve_reads()? {
                break;
            }
        }
        self.connector.stop_read_ahead();
        self.prune_candidates();
        Ok(())
    }

    /// Starts reading the stored blocks from `start_height` towards
    /// `target` (at most [`READ_AHEAD_SEGMENT_BLOCKS`] of them, so the list
    /// stays small on a path of 900,000 blocks) ahead of the connecting
    /// (see [`crate::block_read_ahead`]), when there are enough of them to
    /// be worth a thread.
    fn start_read_ahead(
        &mut self,
        target: EntryId,
        start_height: u32,
    ) -> Result<(), ChainstateError> {
        self.connector.stop_read_ahead();
        let target_height = self.index.entry(target).height;
        let end_height =
            target_height.min(start_height.saturating_add(READ_AHEAD_SEGMENT_BLOCKS - 1));
        let recent = self.connector.recent_id();
        let mut blocks = Vec::new();
        for height in start_height..=end_height {
            let Some(id) = self.index.ancestor(target, height) else { break };
            let entry = self.index.entry(id);
            let Some(position) = entry.block_position else { break };
            if Some(id) != recent {
                blocks.push(BlockToRead { id, hash: entry.hash, position });
            }
        }
        if blocks.len() < READ_AHEAD_BLOCKS_MIN {
            return Ok(());
        }
        let files = self.persistence.block_files();
        let bytes_max = read_ahead_bytes(&self.options.memory);
        let gauge = self.metrics.stored_block_read_ahead.clone();
        self.connector.start_read_ahead(files, blocks, bytes_max, gauge)
    }

    /// Drops candidates worse than the settled tip (Core's
    /// `PruneBlockIndexCandidates`).
    ///
    /// Core prunes against a tip whose scripts were checked. Here the tip
    /// may be a pending block whose scripts may still fail; pruning against
    /// it would drop its equal-work siblings received later, so when it and
    /// the next sibling failed no candidate would be left and the import
    /// would end on the parent. So the bar is the block below the oldest
    /// pending one: candidates that would be worth trying if every pending
    /// block failed stay.
    pub(crate) fn prune_candidates(&mut self) {
        let settled_tip = match self.scripts.oldest() {
            Some(oldest) => self.index.entry(oldest).parent,
            None => self.chain.tip(),
        };
        let Some(tip) = settled_tip else { return };
        self.selection.prune_worse_than(&self.index, tip);
    }

    /// The block `id`'s bytes and ids: from the connector when it is ready
    /// in memory (the block accepted last, or read ahead), else read from
    /// its block file.
    pub(crate) fn load_block(&mut self, id: EntryId) -> Result<PreparedBlock, ChainstateError> {
        if let Some(ready) = self.connector.take_ready(id) {
            return ready;
        }
        self.persistence.read_block(self.index.entry(id))
    }

    /// The undo data of block `id`.
    pub(crate) fn load_undo(&self, id: EntryId) -> Result<BlockUndo, ChainstateError> {
        self.persistence.read_undo(self.index.entry(id))
    }

    /// Connects block `id` on the tip, reading the coins of `next` (the
    /// block to connect after it, if any) meanwhile. False when it is
    /// invalid (then it is marked and logged).
    fn connect_tip(&mut self, id: EntryId, next: Option<EntryId>) -> Result<bool, ChainstateError> {
        let block = self.load_block(id)?;
        let view = block.view();
        if self.index.entry(id).parent.is_none() {
            // Core never connects the genesis block's transactions: its
            // coinbase is not spendable.
            let (transaction_count, input_count) = (view.transaction_count(), view.input_count());
            self.finish_genesis(id, transaction_count, input_count);
            return Ok(true);
        }
        self.connector.prefetch_inputs(id, &block)?;
        if let Some(next) = next {
            self.connector.start_next_prefetch(next, &block);
        }
        let script_flags = (!self.assume_valid_covers(id)).then(|| {
            block_script_flags(&self.options.params, view_height(self, id), &block.hash())
        });
        match self.connect_with_context(id, &block) {
            Ok(connected) => {
                self.chain.push(id);
                let no_scripts = script_flags.is_none();
                self.scripts.start(id, ScriptJob { block, connected }, script_flags);
                // Earlier blocks' scripts were checked while this one
                // connected; if one failed, it and everything above it
                // (this block included) were rolled back.
                let left = if no_scripts { 0 } else { SCRIPT_PIPELINE_BLOCKS };
                if !self.settle_pending_to(left)? {
                    return Ok(false);
                }
                // A flush settles the blocks just started: if their scripts
                // failed, they were rolled back and nothing may follow them.
                self.flush_if_needed()?;
                Ok(self.chain.tip() == Some(id))
            }
            Err(ConnectError::Invalid(rejection)) => {
                // A failure of an earlier block comes first: this one is
                // then its descendant and marked with it.
                if self.settle_pending()? {
                    self.connect_failed(id, rejection);
                }
                Ok(false)
            }
            Err(ConnectError::Chainstate(error)) => Err(error),
        }
    }

    /// Makes the genesis block the tip (no coins, no undo data).
    fn finish_genesis(&mut self, id: EntryId, transaction_count: usize, input_count: usize) {
        self.index.entry_mut(id).status.raise_validity(BlockStatus::VALID_SCRIPTS);
        self.chain.push(id);
        self.statistics.blocks_connected += 1;
        self.statistics.transactions_connected += transaction_count as u64;
        let update = self.tip_update_for(id, input_count);
        self.emit(ChainEvent::TipUpdated(update));
        self.publish(Some(id));
    }

    /// Applies block `id`'s coins with every rule but its scripts, which
    /// the pipeline checks (see [`crate::stages::script_queue`]).
    fn connect_with_context(
        &mut self,
        id: EntryId,
        block: &PreparedBlock,
    ) -> Result<ConnectedBlock, ConnectError> {
        let hash = block.hash();
        let entry = self.index.entry(id);
        let height = entry.height;
        let parent = entry.parent.ok_or(ChainstateError::MissingBlockData { hash })?;
        let params = &self.options.params;
        let bip34_ancestor = self
            .index
            .ancestor(parent, params.bip34_height)
            .map(|ancestor| self.index.entry(ancestor).hash);
        let bip30 = if !params.bip30_check_required(height, &hash, bip34_ancestor.as_ref()) {
            Bip30Check::Skip
        } else if params.bip34_from_first_block() {
            Bip30Check::OnFailure
        } else {
            Bip30Check::BeforeConnect
        };
        let index = &self.index;
        let chain = &self.chain;
        let median_time_past_at =
            |at: u32| chain.at(at).map_or(0, |ancestor| index.median_time_past(ancestor));
        let context = ConnectContext {
            rules: ConnectRules {
                params,
                height,
                flags: block_script_flags(params, height, &hash),
                enforce_sequence_locks: params
                    .deployment_active_at(BuriedDeployment::CheckSequenceVerify, height),
                previous_median_time_past: index.median_time_past(parent),
                median_time_past_at: &median_time_past_at,
            },
            bip30,
            threads: self.scripts.threads(),
        };
        self.connector.connect(block, &context)
    }

    /// Whether `-assumevalid` lets block `id` skip its scripts (Core's
    /// conditions in `ConnectBlock`): it is an ancestor of the assumed-valid
    /// block and of the best header, the best header has the minimum chain
    /// work, and the best header is at least two weeks of work past it.
    fn assume_valid_covers(&self, id: EntryId) -> bool {
        let Some(assumed) = self.options.assume_valid.and_then(|hash| self.index.get(&hash)) else {
            return false;
        };
        let Some(best) = self.selection.best_header() else { return false };
        let params = &self.options.params;
        let best_entry = self.index.entry(best);
        if !self.index.is_ancestor(id, assumed)
            || !self.index.is_ancestor(id, best)
            || best_entry.chain_work < params.minimum_chain_work
        {
            return false;
        }
        let work_above =
            best_entry.chain_work.to_u256().wrapping_sub(self.index.entry(id).chain_work.to_u256());
        let tip_proof = ibex_primitives::pow::block_proof(ibex_primitives::CompactTarget(
            best_entry.header.bits,
        ));
        let seconds = work_above
            .wrapping_mul_u64(params.pow_target_spacing_seconds.unsigned_abs())
            .checked_div(tip_proof.to_u256())
            .unwrap_or(ibex_primitives::U256::MAX);
        seconds.bits() > 63 || seconds.low_u64() > ASSUME_VALID_MARGIN_SECONDS
    }

    /// Marks a block that failed to connect and logs why.
    pub(crate) fn connect_failed(&mut self, id: EntryId, rejection: BlockRejection) {
        let entry = self.index.entry(id);
        let (hash, height) = (entry.hash, entry.height);
        self.mark_invalid(id);
        self.emit(ChainEvent::BlockInvalid {
            hash,
            height,
            reason: rejection.reject_reason(),
            marked: true,
        });
    }

    /// Disconnects the tip with its undo data.
    pub(super) fn disconnect_tip(&mut self) -> Result<(), ChainstateError> {
        let Some(id) = self.chain.tip() else { return Ok(()) };
        let entry = self.index.entry(id);
        let (hash, height) = (entry.hash, entry.height);
        let block = self.load_block(id)?;
        let undo = self.load_undo(id)?;
        let result = self.connector.disconnect(&block, &undo, height)?;
        if result != DisconnectResult::Clean {
            return Err(ChainstateError::ReplayFailed { hash });
        }
        self.chain.pop();
        self.statistics.blocks_disconnected += 1;
        // The disconnected block stays a valid candidate should the new
        // branch fail (unless `invalidateblock` marked it failed).
        if !self.index.entry(id).status.is_failed() {
            self.selection.insert(&self.index, id);
        }
        if let Some(tip) = self.chain.tip() {
            let update = self.tip_update_for(tip, 0);
            self.emit(ChainEvent::TipUpdated(update));
        }
        self.publish(self.chain.tip());
        Ok(())
    }

    /// The `UpdateTip` fields for block `id` as the tip.
    pub(crate) fn tip_update_for(&self, id: EntryId, input_count: usize) -> TipUpdate {
        let entry = self.index.entry(id);
        let best_header_height =
            self.selection.best_header().map_or(entry.height, |best| self.index.entry(best).height);
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
    fn flush_if_needed(&mut self) -> Result<(), ChainstateError> {
        self.collect_background_flush(super::flush::Collect::Poll)?;
        self.count_table_readers()?;
        let cache = self.connector.cache();
        if cache.is_full() {
            self.flush_in_background(FlushReason::CacheFull, FlushMode::EmptyCache)?;
        } else if cache.needs_room() {
            self.wait_for_flush_room()?;
        } else if self.persistence.last_flush.elapsed() >= self.options.periodic_flush_interval {
            // Keeping the coins frees nothing until the write ends: only
            // while the live map can grow as much meanwhile.
            let half_full = cache.memory_bytes() <= cache.limit_bytes() / 2;
            let mode = if half_full { FlushMode::KeepCoins } else { FlushMode::EmptyCache };
            self.flush_in_background(FlushReason::Periodic, mode)?;
        }
        Ok(())
    }
}
