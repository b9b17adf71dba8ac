//! What every chainstate of the engine shares (Core's `ChainstateManager`
//! less its chainstates: the `BlockManager`, `m_best_header`, the script
//! check queue): the block index and its invalid marks, the block and undo
//! files and the index database, the best header and the blocks waiting
//! for a parent's data, the script threads, the observer, and what is
//! published to readers and monitoring.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::{reader, ChainObserver, ChainStatistics, ChainstateOptions};
use crate::index::BlockIndex;
use crate::metrics::ChainMetrics;
use crate::stages::persistence::Persistence;
use crate::stages::selection::ChainSelection;

/// The engine's shared record and services.
pub(crate) struct Shared {
    pub(crate) options: ChainstateOptions,
    /// Every known block header and its state.
    pub(crate) index: BlockIndex,
    /// Headers and chain selection: candidates, blocks waiting for a
    /// parent, the best header, invalid marks.
    pub(crate) selection: ChainSelection,
    /// Block and undo files, the index database.
    pub(crate) persistence: Persistence,
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
}
