//! Pruning (Core's `-prune`): removing whole `blk`/`rev` file pairs whose
//! blocks all lie at least 288 (`BLOCKS_TO_KEEP_MIN`) below a chainstate's
//! tip, automatically to stay under a target (`FindFilesToPrune`) or up to
//! a height the operator names (`pruneblockchain`,
//! `FindFilesToPruneManual`). Which files go is
//! [`crate::stages::block_files`]'s pure choice; this module orders the
//! writes so that nothing is lost.
//!
//! # Order
//! Core marks the blocks pruned, writes the index, removes the files and
//! only then writes the coins, so a crash after the removal can leave
//! coins that still need blocks that are gone. Here the coins come first:
//! 1. the coins are flushed and made durable (an ordinary flush,
//!    [`FlushReason::Prune`], written in the background like the others;
//!    the files chosen ride with it and wait for it to be collected);
//! 2. the files' blocks lose their data and undo marks and the index is
//!    written, synced, with the `prunedblockfiles` flag;
//! 3. the files are removed.
//!
//! A crash before 2 prunes nothing (the next look finds the same files); a
//! crash between 2 and 3 leaves files the index no longer names, which the
//! next start removes ([`Chainstate::remove_leftover_pruned_files`], Core's
//! `ScanAndUnlinkAlreadyPrunedFiles`). The coins database never names a tip
//! below a pruned block, so a restart replays only blocks that are kept.
//!
//! # How often
//! Core looks each time a 16 MiB chunk of a block file (1 MiB of an undo
//! file) starts, and during initial block download adds 1 MB per missing
//! block to its buffer, so a syncing node removes every eligible file at
//! each look. On a chain of 1 MB blocks that is a prune flush every ~128
//! blocks (one file): each writes the coins changed since the last flush,
//! keeping the cache (Core's `Sync`), unless the cache is over half full.

use super::coins_chain::ChainRole;
use super::{ChainEvent, Chainstate, CoinsChain, FlushReason, Shared};
use crate::coins::cache::FlushMode;
use crate::error::ChainstateError;
use crate::index::{ActiveChain, BlockIndex, BlockStatus, EntryId};
use crate::stages::block_files::{PruneRange, BLOCKS_TO_KEEP_MIN};
use crate::vocabulary::{PruneMode, PruneReport, PruneShare};

/// Core's `MIN_DISK_SPACE_FOR_BLOCK_FILES`: the smallest automatic target
/// (550 MiB), and each chainstate's smallest share of it.
pub const PRUNE_TARGET_BYTES_MIN: u64 = 550 << 20;

impl Chainstate {
    /// Core's `PruneBlockFilesManual`: removes every file pair of the
    /// active chainstate's range whose blocks all lie at or below
    /// `height` (the caller keeps `height` at least
    /// 288 (`BLOCKS_TO_KEEP_MIN`) below the tip, as `pruneblockchain` does).
    /// The coins are flushed and made durable first. Returns Core's
    /// `GetPruneHeight` afterwards.
    pub fn prune_block_files_manually(
        &mut self,
        height: u32,
    ) -> Result<Option<u32>, ChainstateError> {
        if !self.shared.options.prune.is_enabled() {
            return Err(ChainstateError::NotPruning);
        }
        let (shared, active) = (&mut self.shared, &mut self.active);
        active.settle_pending(shared)?;
        // As Core, nothing is pruned while an import reads the files.
        let range = active.prune_range(shared, height).filter(|_| !shared.importing_files);
        if let Some(range) = range {
            let current_file = shared.persistence.current_file();
            let files = shared.persistence.files().files_to_prune_manual(range, current_file);
            let report = PruneReport {
                role: active.role_name(),
                manual: true,
                target_bytes: u64::MAX,
                usage_bytes: 0,
                height_min: range.height_min,
                height_max: range.height_max,
                files,
            };
            active.flush(shared, FlushReason::Prune, FlushMode::KeepCoins)?;
            active.prune(shared, report)?;
        }
        Ok(self.prune_height())
    }

    /// Core's `GetPruneHeight`: the highest block of the active chain
    /// below the run of blocks with data and undo data that ends at the
    /// tip (the tip itself when it has none), or `None` when nothing is
    /// missing above genesis.
    pub fn prune_height(&self) -> Option<u32> {
        prune_height_of(&self.active.chain, &self.shared.index)
    }

    /// Whether a block file was ever pruned (the index's
    /// `prunedblockfiles` flag; Core's `m_have_pruned`).
    pub fn have_pruned(&self) -> bool {
        self.shared.persistence.have_pruned()
    }

    /// Bytes of block and undo data on disk (Core's
    /// `CalculateCurrentUsage`, `getblockchaininfo`'s `size_on_disk`).
    pub fn block_files_bytes(&self) -> u64 {
        self.shared.persistence.files().usage_bytes()
    }

    /// Removes file pairs a prune recorded and did not remove (a crash
    /// between writing the index and removing them; Core's
    /// `ScanAndUnlinkAlreadyPrunedFiles`), then asks for a look at pruning
    /// (Core's `PruneAndFlush` at startup).
    pub(crate) fn remove_leftover_pruned_files(&mut self) -> Result<(), ChainstateError> {
        let leftover = self.shared.persistence.leftover_pruned_files();
        if !leftover.is_empty() {
            let removed = self.shared.persistence.remove_files(&leftover)?;
            self.shared.emit(ChainEvent::PrunedFilesRemoved { files: removed });
        }
        if self.shared.options.prune.is_enabled() {
            self.shared.persistence.request_prune_check();
        }
        // Monitoring shows the prune height from the start, not only after
        // this run's first prune.
        if self.have_pruned() {
            let usage_bytes = self.block_files_bytes();
            self.shared.metrics.pruned(usage_bytes, self.prune_height());
        }
        Ok(())
    }

    /// Gives each chainstate its share of pruning: the snapshot chainstate
    /// prunes only above its base while the background one validates, and
    /// the target is split between them (Core's `GetPruneRange` and
    /// `FindFilesToPrune`).
    pub(crate) fn share_pruning(&mut self) {
        let Some(background) = self.background.as_mut() else {
            self.active.prune_share = PruneShare::default();
            return;
        };
        background.prune_share = PruneShare { floor_height: 0, chainstates: 2 };
        let base_height = self
            .snapshot
            .map_or(0, |snapshot| self.shared.index.entry(snapshot.base).height.saturating_add(1));
        self.active.prune_share = PruneShare { floor_height: base_height, chainstates: 2 };
    }
}

impl CoinsChain {
    /// Core's `GetPruneRange`: from this chainstate's floor to
    /// `last_height_can_prune`, never within 288 (`BLOCKS_TO_KEEP_MIN`) of its
    /// settled tip; `None` when empty.
    pub(crate) fn prune_range(
        &self,
        shared: &Shared,
        last_height_can_prune: u32,
    ) -> Option<PruneRange> {
        let tip = self.settled_tip(shared)?;
        let tip_height = shared.index.entry(tip).height;
        if tip_height == 0 {
            return None;
        }
        let height_max = tip_height.saturating_sub(BLOCKS_TO_KEEP_MIN).min(last_height_can_prune);
        let height_min = self.prune_share.floor_height;
        (height_min <= height_max).then_some(PruneRange { height_min, height_max })
    }

    /// The tip below every block whose scripts are pending.
    fn settled_tip(&self, shared: &Shared) -> Option<EntryId> {
        match self.scripts.oldest() {
            Some(oldest) => shared.index.entry(oldest).parent,
            None => self.chain.tip(),
        }
    }

    /// Core's name of this chainstate's role in its log lines.
    pub(crate) fn role_name(&self) -> &'static str {
        match (self.role, self.prune_share.chainstates) {
            (ChainRole::Background, _) => "background",
            (ChainRole::Active, 1) => "normal",
            (ChainRole::Active, _) => "assumedvalid",
        }
    }

    /// Core's `FindFilesToPrune` when a chunk was used since the last
    /// look: the files automatic pruning removes now, for the flush about
    /// to start to carry (`None` when not pruning automatically, nothing
    /// was used since the last look, or no file is due). Each look past
    /// Core's early returns is reported, as Core logs it.
    pub(crate) fn look_at_pruning(&self, shared: &mut Shared) -> Option<PruneReport> {
        let PruneMode::Automatic { target_bytes } = shared.options.prune else { return None };
        if shared.importing_files || !shared.persistence.take_prune_check() {
            return None;
        }
        let tip_height = shared.index.entry(self.settled_tip(shared)?).height;
        if tip_height <= shared.options.params.prune_after_height {
            return None;
        }
        // Core's share of the target per chainstate, at least the
        // minimum target (one chainstate keeps the whole target, which the
        // options hold at the minimum or more).
        let target_bytes = match self.prune_share.chainstates {
            1 => target_bytes,
            count => (target_bytes / count).max(PRUNE_TARGET_BYTES_MIN),
        };
        let range = self.prune_range(shared, u32::MAX)?;
        let best_header_height =
            shared.selection.best_header().map_or(tip_height, |id| shared.index.entry(id).height);
        let blocks_remaining = (shared.in_initial_download && best_header_height > tip_height)
            .then(|| u64::from(best_header_height - tip_height));
        let table = shared.persistence.files();
        let files = table.files_to_prune(
            target_bytes,
            range,
            blocks_remaining,
            shared.persistence.current_file(),
        );
        let pruned_bytes: u64 = files
            .iter()
            .map(|&file| table.file(file).block_bytes + table.file(file).undo_bytes)
            .sum();
        let report = PruneReport {
            role: self.role_name(),
            manual: false,
            target_bytes,
            usage_bytes: table.usage_bytes() - pruned_bytes,
            height_min: range.height_min,
            height_max: range.height_max,
            files,
        };
        shared.emit(ChainEvent::PruneLooked(report.clone()));
        (!report.files.is_empty()).then_some(report)
    }

    /// Steps 2 and 3 of the order (module docs) for `report.files`, once
    /// this chainstate's coins are durable at a tip at least
    /// 288 (`BLOCKS_TO_KEEP_MIN`) above every block in them.
    pub(crate) fn prune(
        &mut self,
        shared: &mut Shared,
        report: PruneReport,
    ) -> Result<(), ChainstateError> {
        if report.manual {
            shared.emit(ChainEvent::PruneLooked(PruneReport {
                usage_bytes: shared.persistence.files().usage_bytes(),
                ..report.clone()
            }));
        }
        if report.files.is_empty() {
            return Ok(());
        }
        let pruned = shared.persistence.prune_files(&mut shared.index, &report.files)?;
        shared.selection.forget_unlinked(&shared.index, &pruned);
        let removed = shared.persistence.remove_files(&report.files)?;
        shared.emit(ChainEvent::PrunedFilesRemoved { files: removed });
        if self.role == ChainRole::Active {
            let prune_height = prune_height_of(&self.chain, &shared.index);
            shared.metrics.pruned(shared.persistence.files().usage_bytes(), prune_height);
        }
        Ok(())
    }
}

/// Core's `GetPruneHeight` for `chain` (see [`Chainstate::prune_height`]).
fn prune_height_of(chain: &ActiveChain, index: &BlockIndex) -> Option<u32> {
    let tip = chain.tip()?;
    let stored = |id: EntryId| {
        let status = index.entry(id).status;
        status.has(BlockStatus::HAVE_DATA) && status.has(BlockStatus::HAVE_UNDO)
    };
    let tip_height = index.entry(tip).height;
    if tip_height == 0 {
        return None;
    }
    if !stored(tip) {
        return Some(tip_height);
    }
    // Walks down from the tip while the parent is stored; genesis (never
    // counted, it has no undo data) and block 1 end the walk.
    let mut first_stored = tip;
    while let Some(parent) = index.entry(first_stored).parent {
        if index.entry(parent).height == 0 || !stored(parent) {
            break;
        }
        first_stored = parent;
    }
    let first_height = index.entry(first_stored).height;
    (first_height > 1).then(|| first_height - 1)
}
