//! What `ibexd` does once its options are read: the Core-like startup lines,
//! then [`run_node`], which logs the configuration the chainstate engine
//! is built from, runs the engine and logs the run's closing figures.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use ibex_chainstate::PruneMode;

use crate::engine::{run_engine, EngineError, RunSummary};
use crate::logging::{LogError, Logger};
use crate::memory_budget::cache_lines;
use crate::options::{ConfigFileStatus, ConfigWarning, NodeOptions};
use crate::version::{version_string, CLIENT_NAME};

/// How the node stopped (both are a clean exit, status 0, as in Core).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeExit {
    /// `-stopatheight` was reached (or the P2P side ended on its own).
    Finished,
    /// SIGINT, SIGTERM or the `stop` RPC.
    Interrupted,
}

/// Why the node could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// The log failed.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The chainstate engine failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl NodeError {
    /// What goes before the message on standard error and in the log:
    /// `Error: `, or `: ` for a failed chainstate load that Core puts as a
    /// question ([`EngineError::caption`]).
    pub fn caption(&self) -> &'static str {
        match self {
            NodeError::Engine(error) => error.caption(),
            NodeError::Log(_) => "Error: ",
        }
    }
}

fn warning_line(warning: &ConfigWarning) -> String {
    match warning {
        // Core writes this one with its own "Warning:" prefix.
        ConfigWarning::DoubleNegative { .. } => warning.to_string(),
        _ => format!("[warning] {warning}"),
    }
}

/// Core's first lines: version, data directory, configuration file, every
/// configuration and command-line value, then any warnings.
pub fn startup_lines(options: &NodeOptions) -> Vec<String> {
    let build = if cfg!(debug_assertions) { "debug build" } else { "release build" };
    let mut lines = vec![
        format!("{CLIENT_NAME} version {} ({build})", version_string()),
        format!("Using data directory {}", options.chain_directory.display()),
    ];
    lines.push(match &options.config_file {
        ConfigFileStatus::Disabled => "Config file: <disabled>".to_owned(),
        ConfigFileStatus::Found(path) => format!("Config file: {}", path.display()),
        ConfigFileStatus::NotFound(path) => {
            format!("Config file: {} (not found, skipping)", path.display())
        }
    });
    for (section, name, value) in &options.config_file_arguments {
        let section = if section.is_empty() { String::new() } else { format!("[{section}] ") };
        lines.push(format!("Config file arg: {section}{name}={value}"));
    }
    for (name, value) in &options.command_line {
        lines.push(format!("Command-line arg: {name}={value}"));
    }
    lines.extend(options.warnings.iter().map(warning_line));
    // Core's `SigNetParams` says which signet a custom challenge makes.
    if let Some(challenge) =
        options.params.signet_challenge.as_ref().filter(|_| options.params.is_custom_signet())
    {
        lines.push(format!("Signet with challenge {}", ibex_primitives::hex::encode(challenge)));
    }
    lines
}

/// Writes [`startup_lines`] to the log.
pub fn log_startup(options: &NodeOptions, logger: &Logger) {
    for line in startup_lines(options) {
        logger.log(&line);
    }
}

/// The lines describing what the engine will be given.
pub fn configuration_lines(options: &NodeOptions) -> Vec<String> {
    let assume_valid = options.assume_valid.resolve(&options.params);
    let mut lines =
        vec![format!("Script verification uses {} additional threads", options.script_threads - 1)];
    lines.extend(cache_lines(options));
    lines.push(format!("Blocks directory: {}", options.blocks_directory.display()));
    lines.push(match assume_valid {
        Some(hash) => format!("Assuming ancestors of block {hash} have valid signatures."),
        None => "Validating signatures for all blocks.".to_owned(),
    });
    lines.push(format!("Setting nMinimumChainWork={}", options.params.minimum_chain_work));
    let default = options.params.chain_defaults().minimum_chain_work;
    if options.params.minimum_chain_work < default {
        lines.push(format!("[warning] nMinimumChainWork set below default value of {default}"));
    }
    lines.extend(prune_line(options.prune));
    lines
}

/// Core's line for `-prune` (`LoadChainstate`, right after the minimum
/// chain work): manual pruning through the RPC, or the automatic target
/// in MiB; nothing when every block is kept.
pub fn prune_line(prune: PruneMode) -> Option<String> {
    match prune {
        PruneMode::Disabled => None,
        PruneMode::Manual => Some(
            "Block pruning enabled. Use RPC call pruneblockchain(height) to manually prune block and undo files."
                .to_owned(),
        ),
        PruneMode::Automatic { target_bytes } => Some(format!(
            "Prune configured to target {} MiB on disk for block and undo files.",
            target_bytes >> 20
        )),
    }
}

/// Runs the node until `-stopatheight` is reached or `shutdown` is set (a
/// signal, the `stop` RPC); the chainstate is flushed in every case.
pub fn run_node(
    options: NodeOptions,
    logger: Logger,
    shutdown: Arc<AtomicBool>,
) -> Result<NodeExit, NodeError> {
    for line in configuration_lines(&options) {
        logger.log(&line);
    }
    logger.flush()?;
    let summary = run_engine(&options, &logger, &shutdown)?;
    logger.log(&summary_line(&summary));
    logger.log(&crate::database_report::coin_reads_line(&summary.statistics.coin_reads));
    for line in crate::database_report::database_summary_lines(&summary.coins_database) {
        logger.log(&line);
    }
    logger.flush()?;
    if shutdown.load(Ordering::Acquire) {
        return Ok(NodeExit::Interrupted);
    }
    Ok(NodeExit::Finished)
}

/// The closing figures of a run.
pub fn summary_line(summary: &RunSummary) -> String {
    let statistics = &summary.statistics;
    let seconds = summary.elapsed.as_secs_f64().max(1e-9);
    format!(
        "Imported to height {}: {} blocks, {} transactions, {} inputs ({} scripts checked) in {:.2} s: {:.1} blocks/s, {:.0} transactions/s, {:.0} inputs/s; {} invalid blocks; {} flushes, longest {} ms, longest wait for a flush {} ms ({} ms in all), shutdown flush {} ms",
        summary.height.map_or_else(|| "none".to_owned(), |height| height.to_string()),
        statistics.blocks_connected,
        statistics.transactions_connected,
        statistics.inputs_connected,
        statistics.scripts_checked,
        seconds,
        statistics.blocks_connected as f64 / seconds,
        statistics.transactions_connected as f64 / seconds,
        statistics.inputs_connected as f64 / seconds,
        statistics.blocks_invalid,
        statistics.flushes,
        statistics.longest_flush_ms,
        statistics.longest_flush_stall_ms,
        statistics.flush_stall_ms_total,
        statistics.shutdown_flush_ms,
    ) + &engine_wait_text(statistics)
}

/// How long the engine's service waited for blocks and how often pending
/// blocks were settled before their turn (empty when it did not run: an
/// import from files).
fn engine_wait_text(statistics: &ibex_chainstate::ChainStatistics) -> String {
    if statistics.command_wait_ms == 0 && statistics.reads_settled == 0 {
        return String::new();
    }
    format!(
        "; engine waited {} ms for blocks, settled early for {} reads and {} pauses",
        statistics.command_wait_ms, statistics.reads_settled, statistics.pauses_settled,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prune_line_is_cores() {
        assert_eq!(prune_line(PruneMode::Disabled), None);
        assert_eq!(
            prune_line(PruneMode::Manual).unwrap(),
            "Block pruning enabled. Use RPC call pruneblockchain(height) to manually prune block and undo files."
        );
        let target = PruneMode::Automatic { target_bytes: 600 << 20 };
        assert_eq!(
            prune_line(target).unwrap(),
            "Prune configured to target 600 MiB on disk for block and undo files."
        );
    }

    #[test]
    fn a_refused_unpruned_start_has_cores_empty_caption() {
        let error = NodeError::Engine(EngineError::PrunedBlockFiles);
        assert_eq!(
            format!("{}{error}", error.caption()),
            ": You need to rebuild the database using -reindex to go back to unpruned mode.  This will redownload the entire blockchain.\nPlease restart with -reindex or -reindex-chainstate to recover."
        );
        let other = NodeError::Engine(EngineError::Wipe {
            path: "blocks/index".into(),
            source: std::io::Error::other("busy"),
        });
        assert_eq!(other.caption(), "Error: ");
    }
}
