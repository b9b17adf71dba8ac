//! A chainstate (Core's `Chainstate`): a chain of connected blocks and what
//! is only its own, beside the engine's [`Shared`](super::shared::Shared)
//! record that every chainstate reads and marks.
//!
//! | per chainstate ([`CoinsChain`]) | shared ([`Shared`](super::shared::Shared)) |
//! |---|---|
//! | the chain, genesis to its tip | the block index, its invalid marks |
//! | the UTXO cache over its own coins database directory, the blocks read ahead for it | the block and undo files, the index database |
//! | the blocks pending on the script threads | the script threads |
//! | its coins flush schedule | the best header, the blocks waiting for a parent's data |
//!
//! Core's `ChainstateManager` holds one (or, with AssumeUTXO, two) such
//! chainstates over one `BlockManager`; the engine holds the active one.

use std::time::Instant;

use crate::index::ActiveChain;
use crate::stages::connector::Connector;
use crate::stages::script_queue::ScriptQueue;
use crate::vocabulary::FlushReason;

/// A chain of connected blocks with its coins.
pub(crate) struct CoinsChain {
    /// The blocks connected, genesis to tip.
    pub(crate) chain: ActiveChain,
    /// Connect: the UTXO cache and the blocks ready ahead of the tip.
    pub(crate) connector: Connector,
    /// Scripts: the threads and the blocks pending on them.
    pub(crate) scripts: ScriptQueue,
    /// When the coins were last flushed and the flush being written.
    pub(crate) flush_schedule: FlushSchedule,
}

/// When a chainstate's coins were last made durable, and the coins flush
/// being written on the writer thread (Core's `m_next_write` and
/// `m_last_flushed_block`, per chainstate).
pub(crate) struct FlushSchedule {
    /// When the files, index and coins were last made durable.
    pub(crate) last_flush: Instant,
    /// The coins flush being written on the writer thread.
    pub(crate) background_flush: Option<BackgroundFlushInfo>,
}

impl FlushSchedule {
    /// A schedule that starts now, no flush running.
    pub(crate) fn new() -> FlushSchedule {
        FlushSchedule { last_flush: Instant::now(), background_flush: None }
    }
}

/// A coins flush being written on the writer thread, for its report.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BackgroundFlushInfo {
    pub(crate) started: Instant,
    pub(crate) index_records: usize,
    pub(crate) reason: FlushReason,
    /// Milliseconds validation has waited for the writer to free room so
    /// far ([`crate::coins::background`]).
    pub(crate) room_wait_ms: u64,
}
