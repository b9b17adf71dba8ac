//! What every chainstate of the engine shares (Core's `ChainstateManager`
//! less its chainstates: the `BlockManager`, `m_best_header`, the script
//! check queue): the block index and its invalid marks, the block and undo
//! files and the index database, the best header and the blocks waiting
//! for a parent's data, the script threads, the observer, and what is
//! published to readers and monitoring.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{reader, ChainEvent, ChainObserver, ChainStatistics, ChainstateOptions};
use crate::coins::database::FlushStats;
use crate::connect::ConnectedBlock;
use crate::error::ChainstateError;
use crate::index::{BlockIndex, EntryId};
use crate::metrics::ChainMetrics;
use crate::scripts::ScriptThreads;
use crate::stages::persistence::Persistence;
use crate::stages::selection::{Candidates, ChainSelection};
use crate::undo::BlockUndo;

/// The engine's shared record and services.
pub(crate) struct Shared {
    pub(crate) options: ChainstateOptions,
    /// Every known block header and its state.
    pub(crate) index: BlockIndex,
    /// Chain selection's shared part: blocks waiting for a parent's data,
    /// the best header (each chainstate has its candidates).
    pub(crate) selection: ChainSelection,
    /// Block and undo files, the index database.
    pub(crate) persistence: Persistence,
    /// The `-par` threads every chainstate's scripts are checked on.
    pub(crate) script_threads: ScriptThreads,
    pub(crate) observer: Box<dyn ChainObserver>,
    pub(crate) statistics: ChainStatistics,
    /// Snapshots published for readers and their queries.
    pub(crate) reads: reader::ReadService,
    /// Counters and levels published for monitoring.
    pub(crate) metrics: Arc<ChainMetrics>,
    /// Set by the node on shutdown: connecting stops between two blocks
    /// ([`Chainstate::set_interrupt`](super::Chainstate::set_interrupt)).
    pub(crate) interrupt: Option<Arc<AtomicBool>>,
    /// The clock's reading for header checks, when the node pretends the
    /// time (`-mocktime`,
    /// [`Chainstate::set_mock_time`](super::Chainstate::set_mock_time)).
    pub(crate) mock_time_seconds: Option<i64>,
    /// Core's `-dbcrashratio`, given to every coins database the engine
    /// opens (0: never).
    pub(crate) flush_crash_ratio: u64,
    /// Core's `IsInitialBlockDownload`, latched false once the active tip
    /// is recent and has the minimum chain work (pruning's IBD buffer).
    pub(crate) in_initial_download: bool,
    /// An import reads block files (`-reindex`, `-loadblock`): nothing is
    /// pruned meanwhile.
    pub(crate) importing_files: bool,
    /// The active coins database holds a SwiftSync checkpoint the last run
    /// kept (`crate::swiftsync`'s `checkpoint`): a pass with the same hints
    /// resumes from it; anything else discards it first.
    pub(crate) swiftsync_checkpoint_kept: bool,
}

impl Shared {
    /// Tells the observer.
    pub(crate) fn emit(&mut self, event: ChainEvent) {
        self.observer.on_event(&event);
    }

    /// Latches [`Self::in_initial_download`] off once the active tip `tip`
    /// has the minimum chain work and is less than a day old.
    pub(crate) fn note_initial_download(&mut self, tip: Option<EntryId>) {
        if !self.in_initial_download {
            return;
        }
        let Some(tip) = tip else { return };
        let entry = self.index.entry(tip);
        let now = crate::stages::headers::now_seconds(self.mock_time_seconds);
        let recent = i64::from(entry.header.time) >= now.saturating_sub(super::MAX_TIP_AGE_SECONDS);
        if recent && entry.chain_work >= self.options.params.minimum_chain_work {
            self.in_initial_download = false;
        }
    }

    /// Whether the node's shutdown flag is set.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupt.as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed))
    }

    /// Marks `id` failed with its descendants in the index and drops them
    /// from `candidates` (the chainstate that found it).
    pub(crate) fn mark_invalid(&mut self, candidates: &mut Candidates, id: EntryId) {
        self.statistics.blocks_invalid += 1;
        self.selection.mark_invalid(&mut self.index, candidates, id);
    }

    /// The undo data of block `id`.
    pub(crate) fn load_undo(&self, id: EntryId) -> Result<BlockUndo, ChainstateError> {
        self.persistence.read_undo(self.index.entry(id))
    }

    /// Writes block `id`'s undo data unless it already has some (another
    /// chainstate connected it first: the undo data of a block is the same
    /// on every chain it is connected on).
    pub(crate) fn write_undo(
        &mut self,
        id: EntryId,
        connected: &ConnectedBlock,
    ) -> Result<(), ChainstateError> {
        let entry = self.index.entry(id);
        if entry.undo_position.is_some() {
            return Ok(());
        }
        let position = self.persistence.append_undo(entry, &connected.undo)?;
        let entry = self.index.entry_mut(id);
        entry.undo_position = Some(position);
        entry.status.set_have_undo();
        Ok(())
    }

    /// Counts a coins flush that took `duration_ms`, validation waiting
    /// `stall_ms` of it.
    pub(crate) fn record_flush(&mut self, duration_ms: u64, stall_ms: u64, stats: &FlushStats) {
        self.statistics.flushes += 1;
        self.statistics.longest_flush_ms = self.statistics.longest_flush_ms.max(duration_ms);
        self.note_stall(stall_ms);
        self.metrics.flush_finished(self.statistics.flushes, duration_ms, stats.batch_bytes);
    }

    /// Counts a wait of validation for a flush.
    pub(crate) fn note_stall(&mut self, stall_ms: u64) {
        self.statistics.longest_flush_stall_ms =
            self.statistics.longest_flush_stall_ms.max(stall_ms);
        self.statistics.flush_stall_ms_total += stall_ms;
    }
}
