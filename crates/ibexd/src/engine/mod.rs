//! The node's work between startup and shutdown: prepare the directories
//! for `-reindex`/`-reindex-chainstate`, open the chainstate, import block
//! files (its own on a reindex, then every `-loadblock`), connect the best
//! chain, then sync from and serve peers until a signal, the `stop` RPC or
//! `-stopatheight`; flush, and report. As `bitcoind`, the node stays up
//! after its import even with nobody to reach (`-connect=0 -listen=0`),
//! idle and answering RPC: only a tip at `-stopatheight` ends it then, so
//! a run meant to end with its import says so with `-stopatheight`.
//!
//! The node starts its RPC server first, as Core does: while
//! the chainstate opens and its last blocks are verified, calls get -28
//! with the step ("Loading block index…", "Verifying blocks…"); from the
//! import on they are answered (the import answers the engine's reads
//! between blocks, so `getblockchaininfo` follows its height).

mod directories;
pub mod swiftsync_file;

use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibex_chainstate::{
    engine_service, import_blocks, ChainStatistics, Chainstate, ChainstateError, ChainstateOptions,
    CoinsDatabaseIo, DatabaseKind, FlushMode, FlushReason, ImportSource, ServiceEnd,
    PERIODIC_FLUSH_INTERVAL,
};
use ibex_chainstate::{BlockCheckError, CHECK_LEVEL_DONE_MAX};
use ibex_primitives::params::Network;

use crate::logging::Logger;
use crate::metrics::server::{MetricsServer, MetricsServerError};
use crate::metrics::NodeMetrics;
use crate::node_observer::NodeObserver;
use crate::options::NodeOptions;
use crate::p2p_node::address_store::{load_addresses, LoadedAddresses};
use crate::p2p_node::invalid_blocks::{
    invalid_block_feed, InvalidBlockReceiver, InvalidBlockSender,
};
use crate::p2p_node::sync_loop::start_services;
use crate::p2p_node::{random_seed, P2pError, P2pNode, P2pStart};
use crate::progress::Progress;
use crate::progress_estimate::SyncEstimator;
use crate::reindex_marker::{write_state, ReindexState};
use crate::rpc_network::NetworkRpc;
use crate::rpc_start::{start_rpc_server, NodeRpc, RpcStartError};
use directories::{prepare_directories, remove_leftovers, wipe_error};

/// Why the engine stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The chainstate failed.
    #[error(transparent)]
    Chainstate(ChainstateError),
    /// The block index or the coins database is corrupt or incomplete:
    /// which one and why, then Core's advice with the one option that
    /// rebuilds it (Core names both, "-reindex or -reindex-chainstate").
    #[error("{source}\nPlease restart with {} to recover.", .database.rebuild_option())]
    DatabaseUnusable {
        /// The database.
        database: DatabaseKind,
        /// The error opening it.
        source: ChainstateError,
    },
    /// The start's check of the last blocks failed (Core's "Corrupted
    /// block database detected"): what was found, then the remedy.
    #[error("Corrupted block database detected: {source}\n{}", .source.remedy())]
    BlockCheck {
        /// What the check found.
        source: BlockCheckError,
    },
    /// The block files were pruned and the node runs without `-prune`
    /// (Core's `CompleteChainstateInitialization`): a failed load, which
    /// Core offers to rebuild and `bitcoind` does not; its words, then its
    /// advice, shown with [`EngineError::caption`].
    #[error("{UNPRUNED_START_REFUSAL}.\nPlease restart with -reindex or -reindex-chainstate to recover.")]
    PrunedBlockFiles,
    /// The P2P side could not start.
    #[error(transparent)]
    Network(P2pError),
    /// The RPC server could not start.
    #[error(transparent)]
    Rpc(RpcStartError),
    /// The metrics endpoint could not start.
    #[error(transparent)]
    Metrics(MetricsServerError),
    /// `-swiftsync` cannot be used.
    #[error(transparent)]
    SwiftSync(swiftsync_file::SwiftSyncFileError),
    /// A directory could not be wiped for a reindex.
    #[error("cannot remove {path}: {source}")]
    Wipe {
        /// The directory or file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Core's reason to refuse a start without `-prune` on block files that
/// were pruned (two spaces after the first sentence, no final period).
pub const UNPRUNED_START_REFUSAL: &str = "You need to rebuild the database using -reindex to go back to unpruned mode.  This will redownload the entire blockchain";

/// The log line of a start on block files that were pruned (Core's
/// `LoadBlockIndexDB`).
pub const PREVIOUSLY_PRUNED_LINE: &str =
    "Loading block index db: Block files have previously been pruned";

/// Core's `MIN_BLOCKS_TO_KEEP`: a pruned data directory may hold no more
/// blocks than these below the tip.
pub const PRUNED_BLOCKS_KEPT_MIN: u32 = 288;

impl EngineError {
    /// What goes before the message on standard error and in the log:
    /// Core's `Error: ` of an init error, or `: ` (noui's empty caption)
    /// for a failed chainstate load, which Core puts as a question
    /// (rebuild now?) that `bitcoind` answers no.
    pub fn caption(&self) -> &'static str {
        match self {
            EngineError::PrunedBlockFiles => ": ",
            _ => "Error: ",
        }
    }
}

impl From<ChainstateError> for EngineError {
    fn from(source: ChainstateError) -> Self {
        match source.database_to_rebuild() {
            Some(database) => EngineError::DatabaseUnusable { database, source },
            None => EngineError::Chainstate(source),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Copy)]
pub struct RunSummary {
    /// Counters of the chainstate.
    pub statistics: ChainStatistics,
    /// Tip height at the end.
    pub height: Option<u32>,
    /// Wall time of the import and connect work.
    pub elapsed: Duration,
    /// Whether it ended short of its work: its import left blocks unread
    /// (a signal, the `stop` RPC, or `-stopatheight` reached before the
    /// files' end, which leaves a reindex to continue), or one of them
    /// ended its sync.
    pub interrupted: bool,
    /// The coins database's I/O and shape after the shutdown flush.
    pub coins_database: CoinsDatabaseIo,
}

/// The chainstate options for the node's options.
pub fn chainstate_options(options: &NodeOptions) -> ChainstateOptions {
    let assume_valid = options.assume_valid.resolve(&options.params);
    ChainstateOptions {
        params: options.params.clone(),
        blocks_directory: options.blocks_directory.clone(),
        chainstate_directory: options.chain_directory.join("chainstate"),
        memory: crate::memory_budget::memory_budget(options),
        script_threads: options.script_threads,
        assume_valid,
        periodic_flush_interval: PERIODIC_FLUSH_INTERVAL,
        stop_at_height: options.stop_at_height,
        prune: options.prune,
        fast_prune: options.fast_prune,
    }
}

/// A progress display that does not fight the console log: a bar only
/// when the log is not printed to the same terminal. Its target stops at
/// `-stopatheight`; on networks with real chain statistics (not regtest)
/// Core's progress estimate tells a sync from peers how many transactions
/// are left.
fn progress_display(options: &NodeOptions) -> Progress {
    let transaction_forecast = options.network != Network::Regtest;
    let estimator = SyncEstimator::new(options.stop_at_height, transaction_forecast);
    let interval_ms = options.progress_interval_ms;
    let console_log_on_terminal = options.print_to_console && std::io::stdout().is_terminal();
    if console_log_on_terminal {
        Progress::plain(estimator, interval_ms, Box::new(std::io::stderr()))
    } else {
        Progress::new(estimator, interval_ms)
    }
}

/// Runs the import and connect work until done, `-stopatheight`, or `shutdown`.
pub fn run_engine(
    options: &NodeOptions,
    logger: &Logger,
    shutdown: &Arc<AtomicBool>,
) -> Result<RunSummary, EngineError> {
    remove_leftovers(options)?;
    let node_metrics = Arc::new(NodeMetrics::new());
    // Bound before anything is wiped or opened: a port in use stops here.
    let _metrics_server = start_metrics(options, logger, &node_metrics)?;
    let addresses = load_addresses(&options.chain_directory, &options.params, &random_seed());
    // The node serves RPC from before the chainstate opens, as Core's
    // does: a client gets -28 with what the node is doing (loading,
    // verifying) instead of a refused connection, then answers during the
    // whole import and sync.
    let rpc = start_rpc(options, logger, shutdown)?;
    let warmup_status =
        |status: &str| rpc.iter().for_each(|rpc| rpc.server().set_warmup_status(status));
    warmup_status("Loading block index…");
    let reindex_state = prepare_directories(options, logger)?;
    let progress = Arc::new(progress_display(options));
    let (invalid_sender, invalid_blocks) = invalid_block_feed();
    let started = Instant::now();
    let mut chainstate = open_chainstate(options, logger, &progress, invalid_sender, shutdown)?;
    check_pruned_state(&chainstate, options, logger)?;
    swiftsync_file::set_plan(&mut chainstate, options, logger).map_err(EngineError::SwiftSync)?;
    node_metrics.attach_chain(chainstate.metrics());
    progress.attach_chain_metrics(chainstate.metrics());
    log_loaded(&chainstate, logger);
    if let Some(rpc) = &rpc {
        rpc.backend().attach_reader(chainstate.reader());
    }
    let reindexing = reindex_state == ReindexState::Importing;
    if let Some(line) = pruned_check_warning(chainstate.have_pruned(), options.block_check.blocks) {
        logger.log(&line);
    }
    // Core's `VerifyDB`, skipped as Core skips it when the coins are being
    // rebuilt from the block files anyway.
    if !reindexing && !options.reindex_chainstate {
        warmup_status("Verifying blocks…");
        verify_last_blocks(&chainstate, options, logger)?;
    }
    // Core ends warmup before its import thread connects block files: the
    // RPC answers with the chain as it grows (the import answers the
    // engine's reads between blocks).
    if let Some(rpc) = &rpc {
        rpc.server().finish_warmup();
    }
    let assumeutxo = chainstate.reader().snapshot().assumeutxo;
    let start_services =
        start_services(options.prune.is_enabled(), reindexing, assumeutxo.as_ref());
    start_services.lines.iter().for_each(|line| logger.log(line));
    let import = import_all(&mut chainstate, options, reindexing, logger, shutdown)?;
    // What was imported is flushed even when the P2P side fails (a port
    // in use, say).
    let network_end = if import.shuts_down {
        Ok(false)
    } else {
        let reporters = Reporters { logger, progress: &progress, metrics: &node_metrics };
        let node_network = start_services.node_network;
        let parts = NetworkParts { addresses, invalid_blocks, rpc: rpc.as_ref(), node_network };
        run_network(&mut chainstate, options, &reporters, shutdown, parts)
    };
    if let Some(rpc) = rpc {
        stop_rpc(rpc, &mut chainstate)?;
    }
    logger.log("Flushing chainstate to disk");
    chainstate.flush(FlushReason::Shutdown, FlushMode::EmptyCache)?;
    let coins_database = chainstate.coins_database_io();
    if reindexing && import.reindex_complete {
        let blocks = &options.blocks_directory;
        write_state(blocks, ReindexState::None).map_err(wipe_error(blocks))?;
    }
    let interrupted = import.interrupted || network_end?;
    progress.finish();
    Ok(RunSummary {
        statistics: chainstate.statistics(),
        height: chainstate.tip().map(|(_, height)| height),
        elapsed: started.elapsed(),
        interrupted,
        coins_database,
    })
}

/// Opens the chainstate, its events reported to `logger` and `progress`
/// and its invalid blocks to `invalid_sender`, interrupted by `shutdown`.
fn open_chainstate(
    options: &NodeOptions,
    logger: &Logger,
    progress: &Arc<Progress>,
    invalid_sender: InvalidBlockSender,
    shutdown: &Arc<AtomicBool>,
) -> Result<Chainstate, EngineError> {
    let chainstate_options = chainstate_options(options);
    // Freed cache tables and blocks reused, within -dbcache + 192 MiB
    // resident (see `ibex_chainstate::heap`); before the chainstate
    // allocates anything.
    ibex_chainstate::bound_heap_retention(chainstate_options.memory.dbcache_bytes);
    let observer = NodeObserver::new(
        logger.clone(),
        progress.clone(),
        &options.params,
        chainstate_options.memory.coins_bytes as u64,
    )
    .with_invalid_block_feed(invalid_sender)
    .with_mock_time(options.mock_time);
    let mut chainstate = Chainstate::open(chainstate_options, Box::new(observer))?;
    chainstate.set_flush_crash_ratio(options.database_crash_ratio);
    chainstate.set_interrupt(shutdown.clone());
    chainstate.set_mock_time(options.mock_time);
    Ok(chainstate)
}

/// Starts the metrics endpoint when `-metrics` asks for it.
fn start_metrics(
    options: &NodeOptions,
    logger: &Logger,
    metrics: &Arc<NodeMetrics>,
) -> Result<Option<MetricsServer>, EngineError> {
    let Some(address) = options.metrics.address else { return Ok(None) };
    let server = MetricsServer::start(address, metrics.clone()).map_err(EngineError::Metrics)?;
    logger.log(&format!("Serving metrics on http://{}/metrics", server.local_address()));
    Ok(Some(server))
}

/// Where the running node reports: the log, the progress display and the
/// metrics endpoint's sources.
#[derive(Clone, Copy)]
struct Reporters<'a> {
    logger: &'a Logger,
    progress: &'a Progress,
    metrics: &'a NodeMetrics,
}

/// How long the engine's service waits for a command before it answers
/// reads: the latency of every read of an idle engine. With it, a synced
/// 1,500-block regtest node serves another at ~770 blocks/s (at 20 ms:
/// ~180); idle, the node then takes ~2 % of a core (measured with
/// /proc/<pid>/stat over 5 s).
const SERVICE_IDLE_POLL: Duration = Duration::from_millis(1);

/// How long the P2P side gets to stop while the engine answers its reads.
const NETWORK_STOP_WAIT: Duration = Duration::from_secs(30);

/// What the P2P side starts with, and the RPC server it answers through.
struct NetworkParts<'a> {
    addresses: LoadedAddresses,
    invalid_blocks: InvalidBlockReceiver,
    rpc: Option<&'a NodeRpc>,
    /// Whether the start offered `NODE_NETWORK` ([`start_services`]).
    node_network: bool,
}

/// Syncs from and serves peers (the P2P side on its threads, the engine's
/// service on this one) until a signal or `-stopatheight` (or the P2P
/// side ends on its own). True when a signal or `-stopatheight` ended it.
fn run_network(
    chainstate: &mut Chainstate,
    options: &NodeOptions,
    reporters: &Reporters<'_>,
    shutdown: &Arc<AtomicBool>,
    parts: NetworkParts<'_>,
) -> Result<bool, EngineError> {
    let Reporters { logger, progress, metrics } = *reporters;
    let NetworkParts { addresses, invalid_blocks, rpc, node_network } = parts;
    if let Some(seconds) = options.mock_time {
        crate::p2p_node::engine_view::set_mock_time(seconds);
    }
    let (commands, notices, mut service) = engine_service();
    // An idle engine answers reads (serving peers' `getheaders` and
    // `getdata`) when its wait for a command times out: at the default
    // 20 ms, a peer downloading from us would get ~50 answers a second.
    service.idle_poll = SERVICE_IDLE_POLL;
    let start = P2pStart {
        options: &options.network_options,
        params: &options.params,
        incoming_blocks_serialised_bytes: crate::memory_budget::memory_budget(options)
            .incoming_blocks_serialised_bytes() as u64,
        reader: chainstate.reader(),
        commands,
        notices,
        invalid_blocks,
        logger: logger.clone(),
        gauges: progress.network_gauges(),
        addresses,
        pruning: options.prune.is_enabled(),
        node_network_at_start: node_network,
        spent_coins_terminal_height: chainstate.swiftsync_spent_coins_wanted(),
    };
    let network = P2pNode::start(start).map_err(EngineError::Network)?;
    let network_rpc = NetworkRpc::new(&network, chainstate.reader());
    metrics.attach_network(network_rpc.handle.clone());
    if let Some(rpc) = rpc {
        rpc.backend().attach_network(network_rpc);
        rpc.backend().attach_engine_control(service.control_sender());
    }
    // Core's last line of its start: from here every RPC method answers
    // (tests wait for it before calling the network's methods).
    logger.log("init message: Done loading");
    // The service settles what is pending (and reaches the fixed point
    // unless interrupted) before it returns.
    let end = chainstate.run_service(&service, shutdown);
    network.request_stop();
    // The sync thread may be waiting for a read: keep answering until it
    // has ended (each step of it is bounded by its reads' timeouts).
    let stop_started = Instant::now();
    while !network.sync_finished() && stop_started.elapsed() < NETWORK_STOP_WAIT {
        chainstate.wait_and_serve_reads(SERVICE_IDLE_POLL)?;
    }
    network.stop();
    Ok(end? != ServiceEnd::Stopped)
}

/// Starts the RPC server when `-server` asks for it, in warmup, and says
/// where it listens.
fn start_rpc(
    options: &NodeOptions,
    logger: &Logger,
    shutdown: &Arc<AtomicBool>,
) -> Result<Option<NodeRpc>, EngineError> {
    let rpc = start_rpc_server(options, shutdown.clone()).map_err(EngineError::Rpc)?;
    if let Some(rpc) = &rpc {
        crate::rpc_start::rpc_option_warnings(options).iter().for_each(|text| logger.log(text));
        for address in rpc.server().local_addresses() {
            logger.log(&format!("Binding RPC on address {address}"));
        }
    }
    Ok(rpc)
}

/// Stops the RPC server while the engine answers the reads its last calls
/// wait for (the server joins its workers, which may wait for one).
fn stop_rpc(rpc: NodeRpc, chainstate: &mut Chainstate) -> Result<(), EngineError> {
    std::thread::scope(|scope| {
        let stopping = scope.spawn(move || rpc.shutdown());
        while !stopping.is_finished() {
            chainstate.wait_and_serve_reads(SERVICE_IDLE_POLL)?;
        }
        Ok(())
    })
}

/// Checks the active chain's last blocks as `-checkblocks` and
/// `-checklevel` say ([`Chainstate::verify_last_blocks`]), with Core's log
/// lines.
fn verify_last_blocks(
    chainstate: &Chainstate,
    options: &NodeOptions,
    logger: &Logger,
) -> Result<(), EngineError> {
    let Some(height) = chainstate.chain().height() else { return Ok(()) };
    let chain_blocks = height.saturating_add(1);
    let depth = options.block_check.blocks.map_or(chain_blocks, |blocks| blocks.min(chain_blocks));
    let level = options.block_check.level.min(CHECK_LEVEL_DONE_MAX);
    logger.log(&format!("Verifying last {depth} blocks at level {level}"));
    match chainstate.verify_last_blocks(depth, level) {
        Ok(checked) if checked.interrupted => {
            logger.log(&format!(
                "Block verification was interrupted after {} blocks",
                checked.blocks
            ));
            Ok(())
        }
        Ok(checked) => {
            // Core's one line for both: no data below a snapshot's base,
            // or below the blocks a pruning node kept.
            for height in
                [checked.stopped_at_snapshot_base, checked.stopped_without_data].iter().flatten()
            {
                let stopped =
                    ibex_chainstate::SnapshotEvent::VerificationStopped { height: *height };
                logger.log(&stopped.to_string());
            }
            logger.log(&format!(
                "Verification: No block data inconsistencies in last {} blocks ({} transactions)",
                checked.blocks, checked.transactions
            ));
            Ok(())
        }
        Err(source) => {
            logger.log(&format!("Verification error: {source}"));
            Err(EngineError::BlockCheck { source })
        }
    }
}

/// Core's checks of the block files' pruned state once the index is
/// loaded (`LoadBlockIndexDB`, `CompleteChainstateInitialization`): a
/// line when they were pruned, and a refusal when the node now runs
/// without `-prune` (going back needs every block again: `-reindex`).
fn check_pruned_state(
    chainstate: &Chainstate,
    options: &NodeOptions,
    logger: &Logger,
) -> Result<(), EngineError> {
    if !chainstate.have_pruned() {
        return Ok(());
    }
    logger.log(PREVIOUSLY_PRUNED_LINE);
    if !options.prune.is_enabled() {
        return Err(EngineError::PrunedBlockFiles);
    }
    Ok(())
}

/// Core's warning before it checks the last blocks of a data directory
/// that was pruned, when `-checkblocks` asks for more than such a one is
/// sure to hold (`InitAndLoadChainstate`; `check_blocks` is `None` for
/// every block, Core's 0 or less, which it does not warn about).
fn pruned_check_warning(have_pruned: bool, check_blocks: Option<u32>) -> Option<String> {
    let beyond_kept = check_blocks.is_some_and(|blocks| blocks > PRUNED_BLOCKS_KEPT_MIN);
    (have_pruned && beyond_kept).then(|| {
        format!(
            "[warning] pruned datadir may not have more than {PRUNED_BLOCKS_KEPT_MIN} blocks; only checking available blocks"
        )
    })
}

fn log_loaded(chainstate: &Chainstate, logger: &Logger) {
    logger.log(&format!("Loaded {} block index entries", chainstate.index().len()));
    match chainstate.tip() {
        Some((hash, height)) => {
            logger.log(&format!("Loaded best chain: hashBestChain={hash} height={height}"))
        }
        None => logger.log("Loaded best chain: none (empty chainstate)"),
    }
}

/// What the log says when an earlier `-reindex` did not finish (the
/// marker's `state`; `reindex_requested`: `-reindex` is given again).
fn unfinished_reindex_line(state: ReindexState, reindex_requested: bool) -> Option<&'static str> {
    match (state, reindex_requested) {
        (ReindexState::None, _) => None,
        (_, true) => Some("An earlier reindex was interrupted: -reindex starts it over"),
        (ReindexState::Wiping, false) => Some(
            "An earlier reindex was interrupted while wiping the block index: starting it over",
        ),
        (ReindexState::Importing, false) => Some(
            "An earlier reindex was interrupted: continuing it from the blocks already imported",
        ),
    }
}

/// How [`import_all`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ImportEnd {
    /// Blocks were left unread: a signal, the `stop` RPC, or
    /// `-stopatheight` reached before the end of the files.
    interrupted: bool,
    /// Every own block file was read again (true when not reindexing): the
    /// reindex marker goes once the import is flushed.
    reindex_complete: bool,
    /// The node shuts down rather than sync: a signal or the `stop` RPC,
    /// or the tip at or above `-stopatheight`.
    shuts_down: bool,
}

/// Reindex (or continues one), genesis, `-loadblock` files, best chain.
fn import_all(
    chainstate: &mut Chainstate,
    options: &NodeOptions,
    reindexing: bool,
    logger: &Logger,
    shutdown: &AtomicBool,
) -> Result<ImportEnd, EngineError> {
    use std::sync::atomic::Ordering;
    let signalled = || shutdown.load(Ordering::Relaxed);
    let stopped = |chainstate: &Chainstate| signalled() || chainstate.reached_stop_height();
    if reindexing {
        logger.log("Reindexing block files...");
        let summary = import_blocks(chainstate, &ImportSource::OwnBlockFiles, shutdown)?;
        // At `-stopatheight` the reindex ended where the operator asked.
        let end = if summary.interrupted && !chainstate.reached_stop_height() {
            "Reindexing interrupted (the next start continues it)"
        } else {
            "Reindexing finished"
        };
        logger.log(&format!(
            "{end}: {} blocks read, {} new, {} rejected, {} without parent",
            summary.blocks_read,
            summary.blocks_accepted,
            summary.blocks_rejected,
            summary.orphans_left
        ));
        // Cut short, the reindex stays unfinished and no `-loadblock` file
        // is read: the next start continues it.
        if summary.interrupted {
            if !signalled() {
                activate_and_check(chainstate, logger)?;
            }
            let end = ImportEnd { interrupted: true, reindex_complete: false, shuts_down: true };
            return Ok(end);
        }
    }
    chainstate.ensure_genesis()?;
    let mut interrupted = false;
    for path in &options.load_blocks {
        if stopped(chainstate) {
            interrupted = true;
            break;
        }
        logger.log(&format!("Importing blocks file {}...", path.display()));
        let summary =
            import_blocks(chainstate, &ImportSource::ExternalFile(path.clone()), shutdown)?;
        logger.log(&format!(
            "Loaded {} blocks from external file ({} new, {} rejected)",
            summary.blocks_read, summary.blocks_accepted, summary.blocks_rejected
        ));
        interrupted |= summary.interrupted;
    }
    // With no peer to bring the blocks a SwiftSync plan waits for, none
    // will come: the blocks stored are connected as usual.
    if chainstate.swiftsync_pending() && options.network_options.outbound_disabled {
        chainstate.advance_best_chain()?;
        chainstate.end_swiftsync_wait()?;
    }
    if !signalled() {
        activate_and_check(chainstate, logger)?;
    }
    let interrupted = interrupted || signalled();
    Ok(ImportEnd { interrupted, reindex_complete: true, shuts_down: stopped(chainstate) })
}

/// Activates the best chain to its fixed point and says so in the log
/// (`best valid candidate reached`, or the block left and why), as the
/// last step of every start and import.
fn activate_and_check(chainstate: &mut Chainstate, logger: &Logger) -> Result<(), EngineError> {
    let (check, restored) = chainstate.activate_to_fixed_point()?;
    if restored > 0 {
        logger.log(&format!(
            "Warning: {restored} candidate blocks were missing from chain selection and were restored from the block index"
        ));
    }
    logger.log(&format!("Chain activation: {check}"));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pruned_datadir_warns_of_a_check_deeper_than_the_blocks_kept() {
        let warning = "[warning] pruned datadir may not have more than 288 blocks; only checking available blocks";
        assert_eq!(pruned_check_warning(true, Some(289)).as_deref(), Some(warning));
        assert_eq!(pruned_check_warning(true, Some(288)), None);
        assert_eq!(pruned_check_warning(false, Some(1_000)), None);
        // Core compares -checkblocks itself: 0 (every block) is not above.
        assert_eq!(pruned_check_warning(true, None), None);
    }
}
