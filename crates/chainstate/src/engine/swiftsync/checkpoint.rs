//! The engine's side of a SwiftSync checkpoint (`crate::swiftsync`'s
//! `checkpoint`): kept while the pass runs and at the shutdown, resumed by
//! the next pass in the same mode with the same hints, discarded by any
//! other start before a block is connected.

#[cfg(test)]
use std::time::Duration;

use ibex_primitives::BlockHash;

use crate::engine::{ChainEvent, Chainstate};
use crate::error::ChainstateError;
use crate::swiftsync::{hints_digest, PassCheckpoint, SwiftSyncEvent, SwiftSyncPlan};

impl Chainstate {
    /// Keeps a checkpoint of the running pass when one is due.
    pub(super) fn keep_checkpoint_if_due(&mut self) -> Result<(), ChainstateError> {
        let Some(state) = self.swiftsync.as_mut() else { return Ok(()) };
        let terminal_height = state.plan.terminal_height();
        let Some(live) = state.live.as_mut().filter(|live| live.checkpoint_due()) else {
            return Ok(());
        };
        if let Some(accounted_count) = live.checkpoint()? {
            let event = SwiftSyncEvent::Checkpointed { accounted_count, terminal_height };
            self.emit(ChainEvent::SwiftSync(event));
        }
        Ok(())
    }

    /// Sets how often the pass keeps a checkpoint (a test's short
    /// interval).
    #[cfg(test)]
    pub(crate) fn set_swiftsync_checkpoint_interval(&mut self, interval: Duration) {
        if let Some(state) = self.swiftsync.as_mut() {
            state.checkpoint_interval = interval;
        }
        if let Some(live) = self.swiftsync.as_mut().and_then(|state| state.live.as_mut()) {
            live.set_checkpoint_interval(interval);
        }
    }

    /// The shutdown: a pass still running ends here, keeping a checkpoint
    /// to resume from (or, every block handed over, ends as usual).
    pub(crate) fn suspend_swiftsync(&mut self) -> Result<(), ChainstateError> {
        let Some(state) = self.swiftsync.as_mut() else { return Ok(()) };
        let Some(live) = state.live.take() else { return Ok(()) };
        let terminal = live.terminal();
        self.end_pass(live, terminal)
    }

    /// The checkpoint the last run kept (at its shutdown or while its pass
    /// ran), when it is for `plan`'s hints, mode and `terminal`; any other
    /// is discarded (its coins with it).
    pub(super) fn take_kept_checkpoint(
        &mut self,
        terminal: BlockHash,
        plan: &SwiftSyncPlan,
    ) -> Result<Option<PassCheckpoint>, ChainstateError> {
        if !std::mem::take(&mut self.shared.swiftsync_checkpoint_kept) {
            return Ok(None);
        }
        let database = self.active.connector.cache().database().clone();
        let record = database.staging_record()?;
        let checkpoint = record.as_deref().and_then(PassCheckpoint::decode).filter(|checkpoint| {
            checkpoint.mode == plan.mode()
                && checkpoint.terminal == terminal
                && checkpoint.accounted.len() == plan.terminal_height() as usize
                && checkpoint.hints_digest == hints_digest(plan.hints())
        });
        if checkpoint.is_none() {
            database.discard_staged()?;
            self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::UnfinishedDiscarded));
        }
        Ok(checkpoint)
    }

    /// Discards a checkpoint the last run kept that no pass resumed (no
    /// plan, or one given up or not needed): before any block is connected
    /// into the same database.
    pub(super) fn discard_kept_checkpoint(&mut self) -> Result<(), ChainstateError> {
        if std::mem::take(&mut self.shared.swiftsync_checkpoint_kept) {
            self.active.connector.cache().database().discard_staged()?;
            self.emit(ChainEvent::SwiftSync(SwiftSyncEvent::UnfinishedDiscarded));
        }
        Ok(())
    }
}
