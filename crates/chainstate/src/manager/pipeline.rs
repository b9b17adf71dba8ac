//! Script checks that overlap the next block (Ibex's pipeline; Core waits
//! for every block's checks before starting the next one).
//!
//! Block N's coins are applied and N is pushed on the chain, then its
//! scripts are handed to the script threads while this thread reads,
//! prefetches and connects block N+1. Only then does it wait for N's
//! verdict. A block is *pending* until then: its undo data is not written,
//! its tip is not announced, and nothing is flushed (every flush and every
//! disconnect settles the pending block first). If N's scripts fail after
//! N+1 was connected, N+1 and N are rolled back with their in-memory undo
//! data and N is marked invalid, so the result is exactly that of checking
//! N before connecting N+1.
//!
//! # Napkin math
//! With every script checked, connect work (coins, undo, parsing) is
//! ~10-20 % of a block's time and script checks the rest. Without the
//! overlap the script threads idle during that part; with it, the cores are
//! busy for both, which is worth up to that 10-20 %.

use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use ibex_primitives::BlockView;
use ibex_script::VerifyFlags;

use super::{ChainEvent, Chainstate};
use crate::connect::{rollback, ConnectedBlock};
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};
use crate::prepared::PreparedBlock;
use crate::rejection::BlockRejection;
use crate::scripts::verify_block_scripts;

/// What the script threads need of a block: owned, shared with the job.
#[derive(Debug)]
pub(crate) struct ScriptJob {
    pub(crate) block: PreparedBlock,
    pub(crate) connected: ConnectedBlock,
}

/// A connected block whose scripts are being checked.
#[derive(Debug)]
pub(crate) struct PendingBlock {
    pub(crate) id: EntryId,
    pub(crate) job: Arc<ScriptJob>,
    /// `None` when no scripts are checked (the verdict is known: valid).
    pub(crate) verdict: Option<Receiver<Result<u64, BlockRejection>>>,
}

impl Chainstate {
    /// Starts checking `job`'s scripts (if `flags` is `Some`) and makes it
    /// the pending block; the previous pending block must be settled.
    pub(crate) fn start_pending(
        &mut self,
        id: EntryId,
        job: ScriptJob,
        flags: Option<VerifyFlags>,
    ) {
        let job = Arc::new(job);
        let verdict = flags.map(|flags| {
            let (sender, receiver) = sync_channel(1);
            let shared = job.clone();
            let threads = self.scripts.clone();
            self.scripts.spawn(move || {
                let result = match BlockView::parse(&shared.block.bytes) {
                    Ok(view) => verify_block_scripts(
                        &view,
                        &shared.block.txids,
                        &shared.connected.undo,
                        flags,
                        &threads,
                    ),
                    // The block parsed when it was connected; it cannot fail now.
                    Err(_) => Ok(0),
                };
                let _ = sender.send(result);
            });
            receiver
        });
        self.pending = Some(PendingBlock { id, job, verdict });
    }

    /// Waits for the pending block's verdict and finishes it: undo data,
    /// validity, tip announcement. On a script failure, rolls back `above`
    /// (a block connected on top of it, with its undo data) and the pending
    /// block, and marks the pending block invalid. True when it was valid.
    pub(crate) fn settle_pending(
        &mut self,
        above: Option<(&PreparedBlock, &ConnectedBlock)>,
    ) -> Result<bool, ChainstateError> {
        let Some(pending) = self.pending.take() else { return Ok(true) };
        let verdict = match &pending.verdict {
            None => Ok(0),
            Some(receiver) => receiver.recv().unwrap_or(Ok(0)),
        };
        match verdict {
            Ok(scripts_checked) => {
                self.finalize_connected(pending.id, &pending.job, scripts_checked)?;
                Ok(true)
            }
            Err(rejection) => {
                if let Some((block, connected)) = above {
                    self.roll_back_connected(block, connected)?;
                }
                self.roll_back_connected(&pending.job.block, &pending.job.connected)?;
                self.connect_failed(pending.id, rejection);
                Ok(false)
            }
        }
    }

    /// Undoes a connected block's coins and takes it off the chain.
    fn roll_back_connected(
        &mut self,
        block: &PreparedBlock,
        connected: &ConnectedBlock,
    ) -> Result<(), ChainstateError> {
        let view = BlockView::parse(&block.bytes)
            .map_err(|reason| ChainstateError::CorruptBlock { hash: block.hash, reason })?;
        let transaction_count = view.transaction_count();
        rollback(&mut self.cache, &view, &block.txids, &connected.undo, transaction_count)?;
        self.chain.pop();
        Ok(())
    }

    /// Writes a verified block's undo data, raises its validity and
    /// announces it.
    pub(crate) fn finalize_connected(
        &mut self,
        id: EntryId,
        job: &ScriptJob,
        scripts_checked: u64,
    ) -> Result<(), ChainstateError> {
        self.write_undo(id, &job.connected)?;
        self.index.entry_mut(id).status.raise_validity(BlockStatus::VALID_SCRIPTS);
        self.statistics.blocks_connected += 1;
        self.statistics.transactions_connected += job.block.txids.len() as u64;
        self.statistics.inputs_connected += job.connected.input_count;
        self.statistics.scripts_checked += scripts_checked;
        let update = self.tip_update_for(id, job.block.input_count);
        self.emit(ChainEvent::TipUpdated(update));
        Ok(())
    }

    /// Settles the pending block, if any; true when the chain is unchanged
    /// by it (it was valid or there was none).
    pub fn settle(&mut self) -> Result<bool, ChainstateError> {
        self.settle_pending(None)
    }
}
