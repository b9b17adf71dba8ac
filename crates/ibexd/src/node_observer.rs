//! Turns the chainstate's events into Core-style `debug.log` lines and
//! progress updates.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use ibex_chainstate::{
    ChainEvent, ChainObserver, FlushReason, PruneReport, SnapshotEvent, TipUpdate,
};
use ibex_primitives::params::Params;

use crate::logging::{
    format_update_tip, verification_progress_near_tip, ChainTransactionData, Logger, TipHeights,
    UpdateTipFields,
};
use crate::p2p_node::invalid_blocks::InvalidBlockSender;
use crate::progress::{Progress, TipProgress};

/// The node's [`ChainObserver`]: the log and the progress display.
pub struct NodeObserver {
    logger: Logger,
    progress: Arc<Progress>,
    transaction_data: ChainTransactionData,
    target_spacing_seconds: i64,
    /// `-mocktime`: the clock Core's progress estimate reads, as Core's
    /// `NodeClock` is mocked.
    mock_time: Option<i64>,
    cache_bytes_max: u64,
    /// Where blocks marked invalid go for the P2P side to punish their
    /// senders.
    invalid_blocks: Option<InvalidBlockSender>,
}

impl NodeObserver {
    /// An observer writing to `logger` and `progress`, for the chain of
    /// `params`.
    pub fn new(
        logger: Logger,
        progress: Arc<Progress>,
        params: &Params,
        cache_bytes_max: u64,
    ) -> NodeObserver {
        NodeObserver {
            logger,
            progress,
            transaction_data: ChainTransactionData::for_network(params.network),
            target_spacing_seconds: params.pow_target_spacing_seconds,
            mock_time: None,
            cache_bytes_max,
            invalid_blocks: None,
        }
    }

    /// Also reports every block marked invalid to `sender`.
    pub fn with_invalid_block_feed(mut self, sender: InvalidBlockSender) -> NodeObserver {
        self.invalid_blocks = Some(sender);
        self
    }

    /// Reads `-mocktime` (regtest only) for now in the progress estimate.
    pub fn with_mock_time(mut self, mock_time: Option<i64>) -> NodeObserver {
        self.mock_time = mock_time;
        self
    }

    /// Core logs the background chainstate's tip every
    /// [`BACKGROUND_LOG_INTERVAL_BLOCKS`] blocks, its `UpdateTip` line after a
    /// `[background validation] ` prefix; the display shows its height.
    fn background_tip_updated(&self, update: &TipUpdate) {
        self.progress.set_background_height(Some(update.height));
        if update.height % BACKGROUND_LOG_INTERVAL_BLOCKS == 0 {
            let fields = self.update_tip_fields(update);
            self.logger.log(&format!("[background validation] {}", format_update_tip(&fields)));
        }
    }

    fn tip_updated(&self, update: &TipUpdate) {
        let fields = self.update_tip_fields(update);
        self.logger.log(&format_update_tip(&fields));
        self.progress.update(TipProgress {
            height: update.height,
            chain_transactions: update.chain_transaction_count,
            best_header_height: update.best_header_height,
            verification_progress: fields.progress,
            cache_bytes: update.cache_bytes as u64,
            cache_bytes_max: self.cache_bytes_max,
        });
    }

    /// The fields of Core's `UpdateTip` line for `update`.
    fn update_tip_fields(&self, update: &TipUpdate) -> UpdateTipFields {
        let now = self.mock_time.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
        });
        // Core v30's `GuessVerificationProgress`, as `UpdateTipLog` calls
        // it: exactly 1 once the tip is the best header and its time is
        // within two hours of now; counted from its time otherwise (so an
        // old regtest chain ends below 1 in Core too).
        let heights =
            TipHeights { height: update.height, best_header_height: update.best_header_height };
        let progress = verification_progress_near_tip(
            update.chain_transaction_count,
            update.time,
            heights,
            self.target_spacing_seconds,
            now,
            &self.transaction_data,
        );
        UpdateTipFields {
            block_hash: update.hash,
            height: update.height,
            version: update.version,
            log2_work: update.log2_work,
            chain_transaction_count: update.chain_transaction_count,
            block_time: update.time,
            progress,
            cache_bytes: update.cache_bytes as u64,
            cache_coins: update.cache_coin_count as u64,
            warnings: Vec::new(),
        }
    }
}

/// Core's `BACKGROUND_LOG_INTERVAL`: the background chainstate's
/// `UpdateTip` line is logged at heights that are multiples of it.
pub const BACKGROUND_LOG_INTERVAL_BLOCKS: u32 = 2000;

fn reason_name(reason: FlushReason) -> &'static str {
    match reason {
        FlushReason::CacheFull => "cache full",
        FlushReason::Periodic => "periodic",
        FlushReason::Snapshot => "snapshot",
        FlushReason::Prune => "prune",
        FlushReason::Shutdown => "shutdown",
    }
}

/// Core's line for a look at pruning: its `Prune (Manual)` line always,
/// its `[prune]` line for an automatic look only when files go (Core logs
/// every look, under `-debug=prune`, which Ibex does not have: a look that
/// removes nothing is not worth a line in every node's log).
fn prune_line(report: &PruneReport) -> Option<String> {
    const MEBIBYTE: i128 = 1 << 20;
    let role = report.role;
    if report.manual {
        return Some(format!(
            "[{role}] Prune (Manual): prune_height={} removed {} blk/rev pairs",
            report.height_max,
            report.files.len()
        ));
    }
    if report.files.is_empty() {
        return None;
    }
    let (target, usage) = (i128::from(report.target_bytes), i128::from(report.usage_bytes));
    Some(format!(
        "[prune] [{role}] target={}MiB actual={}MiB diff={}MiB min_height={} max_prune_height={} removed {} blk/rev pairs",
        target / MEBIBYTE,
        usage / MEBIBYTE,
        (target - usage) / MEBIBYTE,
        report.height_min,
        report.height_max,
        report.files.len()
    ))
}

impl ChainObserver for NodeObserver {
    fn on_event(&mut self, event: &ChainEvent) {
        match event {
            ChainEvent::Snapshot(snapshot) => {
                if matches!(snapshot, SnapshotEvent::Validated { .. }) {
                    self.progress.set_background_height(None);
                }
                let prefix = if snapshot.is_warning() { "[warning] " } else { "" };
                self.logger.log(&format!("{prefix}{snapshot}"));
            }
            ChainEvent::SwiftSync(event) => {
                let prefix = if event.is_warning() { "[warning] " } else { "" };
                self.logger.log(&format!("{prefix}{event}"));
            }
            ChainEvent::TipUpdated(update) => self.tip_updated(update),
            ChainEvent::BackgroundTipUpdated(update) => self.background_tip_updated(update),
            ChainEvent::BlockInvalid { hash, height, reason, marked } => {
                let verb = if *marked { "invalid block" } else { "rejected block (not marked)" };
                self.logger.log(&format!(
                    "InvalidChainFound: {verb}={hash} height={height} reason={reason}"
                ));
                if let Some(feed) = self.invalid_blocks.as_ref().filter(|_| *marked) {
                    feed.send(*hash);
                }
            }
            ChainEvent::BlockInvalidated { hash, height, disconnected_count } => {
                self.logger.log(&format!(
                    "InvalidateBlock: block={hash} height={height} marked invalid by the operator, {disconnected_count} blocks disconnected"
                ));
            }
            ChainEvent::BlockReconsidered { hash, height, cleared_count } => {
                self.logger.log(&format!(
                    "ReconsiderBlock: block={hash} height={height}, invalid marks cleared on {cleared_count} blocks"
                ));
            }
            ChainEvent::Reorganization { disconnected_count, fork_height, new_best } => {
                self.logger.log(&format!(
                    "Reorganize: disconnected {disconnected_count} blocks back to height {fork_height}, switching to {new_best}"
                ));
            }
            ChainEvent::FlushStarted {
                reason,
                height,
                changed_coin_count,
                cache_bytes,
                background,
            } => {
                // Not "FlushStateToDisk (": `ibex plot` counts those as
                // finished flushes.
                self.logger.log(&format!(
                    "FlushStateToDisk start ({}): writing {changed_coin_count} changed coins ({:.2} MiB of cache) at height {height}{}",
                    reason_name(*reason),
                    *cache_bytes as f64 / (1024.0 * 1024.0),
                    if *background { ", in the background" } else { "" }
                ));
            }
            ChainEvent::Flushed { stats, index_records, duration_ms, stall_ms, reason } => {
                self.logger.log(&format!(
                    "FlushStateToDisk ({}): {} coins written, {} erased, {} batches, {:.2} MiB, {} block index records, {} ms (validation waited {} ms)",
                    reason_name(*reason),
                    stats.coins_written,
                    stats.coins_erased,
                    stats.batch_count,
                    stats.batch_bytes as f64 / (1024.0 * 1024.0),
                    index_records,
                    duration_ms,
                    stall_ms
                ));
            }
            ChainEvent::CoinsDatabaseMeasured(io) => {
                self.logger.log(&crate::database_report::database_line(io));
            }
            ChainEvent::WholeKeyFiltersDropped { table_readers_bytes, share_bytes } => {
                self.logger.log(&format!(
                    "Coins database filters: the table readers hold {:.1} MiB of the UTXO cache's {:.1} MiB; tables written from now on filter on transaction ids only",
                    *table_readers_bytes as f64 / (1024.0 * 1024.0),
                    *share_bytes as f64 / (1024.0 * 1024.0)
                ));
            }
            ChainEvent::Replayed { rolled_back, rolled_forward } => {
                self.logger.log(&format!(
                    "Replaying blocks after an interrupted flush: rolled back {rolled_back}, rolled forward {rolled_forward}"
                ));
            }
            ChainEvent::ImportPlanned(plan) => {
                self.logger.log(&format!(
                    "Import plan: {} blocks to height {}, {:.1} MiB of block data",
                    plan.block_bytes.len(),
                    plan.best_header_height,
                    plan.total_bytes() as f64 / (1024.0 * 1024.0)
                ));
                self.progress.set_import_plan(plan);
            }
            ChainEvent::BlockFileCutOff(file) => {
                self.logger.log(&format!(
                    "[warning] {}: the last record is cut off: the file ends {} bytes into a block of {} bytes at offset {}, which is not imported",
                    file.path.display(),
                    file.record.bytes_present,
                    file.record.block_bytes,
                    file.record.data_offset
                ));
            }
            ChainEvent::PruneLooked(report) => {
                if let Some(line) = prune_line(report) {
                    self.logger.log(&line);
                }
            }
            ChainEvent::PrunedFilesRemoved { files } => {
                for file in files {
                    self.logger.log(&format!(
                        "[blockstorage] Prune: UnlinkPrunedFiles deleted blk/rev ({file:05})"
                    ));
                }
            }
            ChainEvent::BlockFileWithoutBlocks(file) => {
                self.logger.log(&format!(
                    "[warning] {}: no block found in {} bytes ({})",
                    file.path.display(),
                    file.length_bytes,
                    file.cause
                ));
            }
        }
    }
}
