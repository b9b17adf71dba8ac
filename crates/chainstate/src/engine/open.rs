//! Opening a chainstate: directories, the obfuscation key, the block index,
//! the coins database, and recovery from an interrupted flush.

use std::path::Path;
use std::sync::Arc;

use super::assumeutxo::SnapshotBase;
use super::coins_chain::ChainRole;
use super::{
    ChainEvent, ChainObserver, ChainStatistics, Chainstate, ChainstateOptions, CoinsChain, Shared,
    SnapshotEvent,
};
use crate::error::ChainstateError;
use crate::scripts::ScriptThreads;
use crate::stages::persistence::{create_directory, Persistence};
use crate::stages::selection::{CandidateScope, ChainSelection};

pub use crate::stages::persistence::INDEX_DIRECTORY;

impl Chainstate {
    /// Opens the chainstate described by `options`, replaying an interrupted
    /// flush if there was one. Events go to `observer`.
    pub fn open(
        options: ChainstateOptions,
        observer: Box<dyn ChainObserver>,
    ) -> Result<Chainstate, ChainstateError> {
        create_directory(&options.chainstate_directory)?;
        let magic = options.params.message_start;
        let (persistence, index) =
            Persistence::open(&options.blocks_directory, magic, options.fast_prune)?;
        let selection = ChainSelection::from_index(&index);
        let persistence_files = persistence.block_files();
        let script_threads = ScriptThreads::new(options.script_threads)?;
        let coins_directory = options.chainstate_directory.clone();
        let mut shared = Shared {
            options,
            index,
            selection,
            persistence,
            script_threads,
            observer,
            statistics: ChainStatistics::default(),
            reads: super::reader::ReadService::new(persistence_files),
            metrics: Arc::default(),
            interrupt: None,
            mock_time_seconds: None,
            flush_crash_ratio: 0,
            in_initial_download: true,
            swiftsync_checkpoint_kept: false,
            importing_files: false,
        };
        let snapshot_base =
            super::assumeutxo::prepare_snapshot_directory(&mut shared, &coins_directory)?;
        let (active, background, snapshot) = match snapshot_base {
            None => {
                let active = CoinsChain::open(
                    &mut shared,
                    &coins_directory,
                    ChainRole::Active,
                    CandidateScope::Everything,
                )?;
                (active, None, None)
            }
            Some(base_hash) => open_with_snapshot(&mut shared, &coins_directory, &base_hash)?,
        };
        let mut chainstate = Chainstate { shared, active, background, snapshot, swiftsync: None };
        chainstate.publish(chainstate.active.chain.tip());
        chainstate.publish_assumeutxo();
        chainstate.rebalance_caches();
        chainstate.remove_leftover_pruned_files()?;
        Ok(chainstate)
    }

    /// Opens a second chainstate beside the active one, over the coins
    /// database in `coins_directory` (created if new), sharing the block
    /// index, the block files and the script threads (the seam of
    /// AssumeUTXO's background validation). Its candidates are the usable
    /// blocks of the index now; [`Chainstate::activate_best_chain_of`] with
    /// [`ChainRole::Background`] connects them, reading the blocks from the
    /// shared files. Its cache takes the same share of `-dbcache` as the
    /// active one's. Replaces a background chainstate already open.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn open_background(
        &mut self,
        coins_directory: &Path,
    ) -> Result<(), ChainstateError> {
        // Closed first: its database may be the one opened again.
        self.background = None;
        let background = CoinsChain::open(
            &mut self.shared,
            coins_directory,
            ChainRole::Background,
            CandidateScope::Everything,
        )?;
        self.background = Some(background);
        Ok(())
    }
}

/// Opens the snapshot chainstate (active) and the chainstate validating
/// towards its base `base_hash` (background), as Core's
/// `DetectSnapshotChainstate` does at start.
fn open_with_snapshot(
    shared: &mut Shared,
    coins_directory: &Path,
    base_hash: &ibex_primitives::BlockHash,
) -> Result<(CoinsChain, Option<CoinsChain>, Option<SnapshotBase>), ChainstateError> {
    let unknown = || ChainstateError::UnknownSnapshotBase { hash: *base_hash };
    let params = &shared.options.params;
    let entry = *params
        .assumeutxo
        .iter()
        .find(|entry| entry.block_hash == *base_hash)
        .ok_or_else(unknown)?;
    let base = shared.index.get(base_hash).ok_or_else(unknown)?;
    shared.emit(ChainEvent::Snapshot(SnapshotEvent::Detected { base: *base_hash }));
    shared.selection.assume_chain_data(&mut shared.index, base, entry.chain_transaction_count);
    let snapshot_directory = super::assumeutxo::snapshot_chainstate_directory(coins_directory);
    let active = CoinsChain::open(
        shared,
        &snapshot_directory,
        ChainRole::Active,
        CandidateScope::Above(base),
    )?;
    let background = CoinsChain::open(
        shared,
        coins_directory,
        ChainRole::Background,
        CandidateScope::Toward(base),
    )?;
    let snapshot = SnapshotBase { base, entry, validated: false };
    Ok((active, Some(background), Some(snapshot)))
}

impl Chainstate {
    /// Indexes and connects the genesis block if the index lacks it (Core's
    /// `LoadGenesisBlock`), writing it to a block file.
    pub fn ensure_genesis(&mut self) -> Result<(), ChainstateError> {
        let params = &self.shared.options.params;
        if self.shared.index.get(&params.genesis_hash).is_some() {
            return Ok(());
        }
        let bytes = params.genesis.encode();
        let mut buffers = ibex_primitives::BlockBuffers::default();
        let block = crate::prepared::PreparedBlock::prepare(bytes, None, params, &mut buffers)
            .map_err(|error| ChainstateError::CorruptBlock {
                hash: params.genesis_hash,
                reason: error.reason,
            })?;
        self.accept_block(block)?;
        self.activate_best_chain()
    }
}
