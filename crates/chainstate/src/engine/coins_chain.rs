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
//! chainstates over one `BlockManager`; the engine holds the active one and
//! may hold a second beside it ([`ChainRole::Background`]). Its steps
//! (connect, disconnect, settle, flush, replay: `activate`, `settle`,
//! `flush`, `recovery`) are methods of [`CoinsChain`] that take the
//! [`Shared`] record as a parameter, so the same step runs on either.
//!
//! Invalid marks live in the shared index: a chainstate that meets a block
//! another one marked drops it when it picks its next target
//! ([`Candidates::best_valid`]). Blocks whose data arrives are made
//! candidates of the active chainstate only: a background chainstate
//! validates the blocks its candidates held when it was opened.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use super::shared::Shared;
use crate::coins::cache::CoinsCache;
use crate::coins::database::{CoinsDatabase, DatabaseOptions};
use crate::error::{ChainstateError, DatabaseKind};
use crate::index::{ActiveChain, BlockIndex, EntryId};
use crate::metrics::PublishedLevels;
use crate::prepared::PreparedBlock;
use crate::stages::connector::Connector;
use crate::stages::persistence::{create_directory, opening};
use crate::stages::script_queue::ScriptQueue;
use crate::stages::selection::{CandidateScope, Candidates};
use crate::vocabulary::FlushReason;

/// What a chainstate is to the node (Core's `ChainstateRole`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChainRole {
    /// The chain the node serves: its tip is announced
    /// ([`ChainEvent::TipUpdated`](super::ChainEvent::TipUpdated),
    /// `Reorganization`) and published to readers and monitoring.
    Active,
    /// A chain validated beside the active one (AssumeUTXO's background
    /// validation): it announces and publishes nothing of its tip, which
    /// is no reader's.
    Background,
}

/// A chain of connected blocks with its coins.
pub(crate) struct CoinsChain {
    /// Whether its tip is the node's.
    pub(crate) role: ChainRole,
    /// The blocks connected, genesis to tip.
    pub(crate) chain: ActiveChain,
    /// Connect: the UTXO cache and the blocks ready ahead of the tip.
    pub(crate) connector: Connector,
    /// The blocks that could be its tip (Core's `setBlockIndexCandidates`).
    pub(crate) candidates: Candidates,
    /// The blocks connected whose scripts are pending on the threads.
    pub(crate) scripts: ScriptQueue,
    /// When the coins were last flushed and the flush being written.
    pub(crate) flush_schedule: FlushSchedule,
    /// What pruning allows it (`super::prune`).
    pub(crate) prune_share: crate::vocabulary::PruneShare,
}

impl CoinsChain {
    /// Opens the coins database in `directory` (creating it) with the
    /// memory `shared`'s options give, replays an interrupted flush, and
    /// sets the chain to the coins' best block; every usable block of the
    /// index within `scope` is a candidate.
    pub(crate) fn open(
        shared: &mut Shared,
        directory: &Path,
        role: ChainRole,
        scope: CandidateScope,
    ) -> Result<CoinsChain, ChainstateError> {
        create_directory(directory)?;
        let memory = &shared.options.memory;
        let database_options = DatabaseOptions::with_memory(&memory.coins_database);
        let database = CoinsDatabase::open(directory, &database_options)
            .map_err(opening(DatabaseKind::Coins, directory))?;
        database.set_crash_ratio(shared.flush_crash_ratio);
        let mut cache = CoinsCache::new(Arc::new(database), memory.coins_bytes);
        cache.set_table_readers_uncounted_bytes(memory.table_readers_uncounted_bytes);
        if role == ChainRole::Active {
            shared.metrics.watch_coins_database(cache.database());
        }
        let mut coins_chain = CoinsChain {
            role,
            chain: ActiveChain::default(),
            connector: Connector::new(cache),
            candidates: Candidates::from_index(&shared.index, scope),
            scripts: ScriptQueue::new(),
            flush_schedule: FlushSchedule::new(),
            prune_share: crate::vocabulary::PruneShare::default(),
        };
        coins_chain.recover(shared)?;
        Ok(coins_chain)
    }

    /// Whether the `-stopatheight` height is reached.
    pub(crate) fn reached_stop_height(&self, shared: &Shared) -> bool {
        match (shared.options.stop_at_height, self.chain.height()) {
            (Some(stop), Some(height)) => height >= stop,
            _ => false,
        }
    }

    /// The block `id`'s bytes and ids: from the connector when it is ready
    /// in memory (the block accepted last, or read ahead), else read from
    /// its block file.
    pub(crate) fn load_block(
        &mut self,
        shared: &Shared,
        id: EntryId,
    ) -> Result<PreparedBlock, ChainstateError> {
        if let Some(ready) = self.connector.take_ready(id) {
            return ready;
        }
        shared.persistence.read_block(shared.index.entry(id))
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
    pub(crate) fn prune_candidates(&mut self, index: &BlockIndex) {
        let settled_tip = match self.scripts.oldest() {
            Some(oldest) => index.entry(oldest).parent,
            None => self.chain.tip(),
        };
        let Some(tip) = settled_tip else { return };
        self.candidates.prune_worse_than(index, tip);
    }
}

impl CoinsChain {
    /// Publishes the settled tip `tip` (the active chain's hashes are made
    /// to end at it) and the best header; nothing for a chainstate that is
    /// not the active one (readers read the active chainstate).
    pub(crate) fn publish(&self, shared: &mut Shared, tip: Option<EntryId>) {
        if self.role != ChainRole::Active {
            return;
        }
        let best_header = shared.selection.best_header();
        shared.reads.publish(&shared.index, best_header, tip);
        shared.note_initial_download(tip);
        self.publish_metrics(shared, tip.map(|id| shared.index.entry(id).height));
    }

    /// Copies the counters and levels to the engine's metrics, with the
    /// settled tip at `tip_height` (a few relaxed stores: see
    /// [`crate::metrics`]).
    fn publish_metrics(&self, shared: &Shared, tip_height: Option<u32>) {
        let cache = self.connector.cache();
        let index = &shared.index;
        let levels = PublishedLevels {
            tip_height,
            best_header_height: shared.selection.best_header().map(|id| index.entry(id).height),
            cache_bytes: cache.memory_bytes(),
            cache_coins: cache.entry_count(),
            cache_bytes_max: cache.cache_bytes_max(),
            script_pipeline_blocks: self.scripts.len(),
            block_files_bytes: shared.persistence.files().usage_bytes(),
        };
        shared.metrics.publish(&shared.statistics, &levels);
    }
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
#[derive(Debug, Clone)]
pub(crate) struct BackgroundFlushInfo {
    pub(crate) started: Instant,
    pub(crate) index_records: usize,
    pub(crate) reason: FlushReason,
    /// Milliseconds validation has waited for the writer to free room so
    /// far ([`crate::coins::background`]).
    pub(crate) room_wait_ms: u64,
    /// The files to prune once the flush is durable (`super::prune`).
    pub(crate) prune: Option<crate::vocabulary::PruneReport>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ibex_primitives::txoutset::TxOutSetHashType;

    use super::ChainRole;
    use crate::coins::cache::FlushMode;
    use crate::test_chain::accepted_chain;
    use crate::FlushReason;

    #[test]
    fn a_second_chainstate_connects_the_same_blocks_to_the_same_coins() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = accepted_chain(root.path());
        chainstate.activate_best_chain().unwrap();
        let top = u32::try_from(blocks.len() - 1).unwrap();
        let tip = chainstate.tip().unwrap();
        assert_eq!(tip.1, top);
        let hash_type = TxOutSetHashType::HashSerialized3;
        let coins = chainstate.txoutset_stats(hash_type).unwrap();
        assert!(coins.txouts > 0, "the chain made no coins");
        let undo_positions = |chainstate: &crate::Chainstate| -> Vec<_> {
            let index = chainstate.index();
            index.ids().map(|id| index.entry(id).undo_position).collect()
        };
        let undo_before = undo_positions(&chainstate);
        let published_before = chainstate.reader().snapshot().sequence;
        let connected_before = chainstate.statistics().blocks_connected;

        // A second chainstate over its own coins directory, the index and
        // the block files shared: it starts with no coins and no tip.
        let background_directory = root.path().join("background");
        chainstate.open_background(&background_directory).unwrap();
        let background = chainstate.background.as_ref().unwrap();
        assert_eq!(background.chain.tip(), None);
        assert_eq!(background.connector.cache().txoutset_stats(hash_type).unwrap().txouts, 0);

        // The same steps connect the stored blocks into it from genesis.
        chainstate.activate_best_chain_of(ChainRole::Background).unwrap();
        let background = chainstate.background.as_ref().unwrap();
        assert_eq!(background.chain.height(), Some(top));
        for height in 0..=top {
            assert_eq!(background.chain.at(height), chainstate.chain().at(height), "{height}");
        }
        assert!(background.scripts.is_empty(), "activation settles every block");
        let background_coins = background.connector.cache().txoutset_stats(hash_type).unwrap();
        assert_eq!(background_coins, coins);
        assert_eq!(
            chainstate.statistics().blocks_connected,
            connected_before * 2,
            "every block connected again"
        );

        // The active chainstate is as it was: tip, coins, what readers see;
        // the undo data written once is kept.
        assert_eq!(chainstate.tip(), Some(tip));
        assert_eq!(chainstate.txoutset_stats(hash_type).unwrap(), coins);
        assert_eq!(chainstate.reader().snapshot().sequence, published_before);
        assert_eq!(undo_positions(&chainstate), undo_before);

        // Its coins are durable in its own directory: opened again, it is
        // at the same tip with the same coins.
        let (shared, background) = chainstate.parts(ChainRole::Background).unwrap();
        background.flush(shared, FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
        chainstate.open_background(&background_directory).unwrap();
        let background = chainstate.background.as_ref().unwrap();
        assert_eq!(background.chain.tip(), chainstate.chain().tip());
        assert_eq!(background.connector.cache().txoutset_stats(hash_type).unwrap(), coins);
        assert_eq!(chainstate.txoutset_stats(hash_type).unwrap(), coins);
    }
}
