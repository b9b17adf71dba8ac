//! The benchmark's results: per-node statistics, `results.json`,
//! `results.md` and the summary printed at the end, as hyperfine prints it.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};

use super::arguments::Mode;
use super::disk_use::SAMPLE_INTERVAL_MS;
use super::progress::{context_json, cost_json, progress_markdown, quarters_json, Progress};
use super::runner::{Bench, NodeRun, RunRecord};
use super::statistics::{ratio_of_means, spread_warnings, summarize, Ratio, Summary};
use super::{io_error, BenchError};

/// KiB in a MiB, for the peak memory shown in MiB.
const KIBIBYTES_PER_MEBIBYTE: f64 = 1024.0;
/// Bytes in a MiB, for the coins database's size shown in MiB.
const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;

/// One node's statistics over its measured runs.
#[derive(Debug, Clone)]
pub struct NodeSummary {
    /// The node's name.
    pub name: String,
    /// Wall time, seconds.
    pub wall_seconds: Summary,
    /// User CPU time, seconds.
    pub user_seconds: Summary,
    /// System CPU time, seconds.
    pub system_seconds: Summary,
    /// Peak resident memory, KiB.
    pub peak_rss_kibibytes: Summary,
    /// The coins database's size on disk once the node stopped
    /// (`chainstate/`), bytes.
    pub chainstate_bytes: Summary,
    /// The largest size of the block and undo files while it ran, bytes.
    pub peak_blocks_bytes: Summary,
    /// The largest size of the coins database while it ran, bytes.
    pub peak_chainstate_bytes: Summary,
    /// The largest sum of both at one sample, bytes.
    pub peak_total_bytes: Summary,
    /// Mean wall time over the baseline's, with its uncertainty.
    pub ratio: Option<Ratio>,
    /// Warnings about the spread of its wall times.
    pub warnings: Vec<String>,
}

/// The summary of node `name` over its measured `runs`, without its
/// ratio; `None` without runs.
fn node_summary(name: &str, runs: &[&RunRecord]) -> Option<NodeSummary> {
    let summary_of = |measure: &dyn Fn(&NodeRun) -> f64| -> Option<Summary> {
        summarize(&runs.iter().map(|run| measure(&run.outcome)).collect::<Vec<f64>>())
    };
    let wall: Vec<f64> =
        runs.iter().map(|run| run.outcome.measurement.wall.as_secs_f64()).collect();
    Some(NodeSummary {
        name: name.to_owned(),
        wall_seconds: summarize(&wall)?,
        user_seconds: summary_of(&|run| run.measurement.user.as_secs_f64())?,
        system_seconds: summary_of(&|run| run.measurement.system.as_secs_f64())?,
        peak_rss_kibibytes: summary_of(&|run| run.measurement.peak_rss_kibibytes as f64)?,
        chainstate_bytes: summary_of(&|run| run.chainstate_bytes as f64)?,
        peak_blocks_bytes: summary_of(&|run| run.disk_use.peak_blocks_bytes as f64)?,
        peak_chainstate_bytes: summary_of(&|run| run.disk_use.peak_chainstate_bytes as f64)?,
        peak_total_bytes: summary_of(&|run| run.disk_use.peak_total_bytes as f64)?,
        ratio: None,
        warnings: spread_warnings(name, &wall),
    })
}

/// Each node's summary, in the nodes' order (every node has measured runs).
pub fn summarize_nodes(bench: &Bench<'_>, records: &[RunRecord]) -> Vec<NodeSummary> {
    let mut summaries = Vec::new();
    for node in &bench.nodes {
        let runs: Vec<&RunRecord> =
            records.iter().filter(|run| run.node == node.name && !run.warmup).collect();
        summaries.extend(node_summary(&node.name, &runs));
    }
    let baseline_name = &bench.nodes[bench.roles.baseline].name;
    let baseline = summaries.iter().find(|summary| &summary.name == baseline_name);
    let baseline_wall = baseline.map(|summary| summary.wall_seconds);
    for summary in &mut summaries {
        // The baseline against itself is exactly 1, as hyperfine shows it.
        summary.ratio = if &summary.name == baseline_name {
            Some(Ratio {
                value: 1.0,
                uncertainty: summary.wall_seconds.standard_deviation.map(|_| 0.0),
            })
        } else {
            baseline_wall.and_then(|base| ratio_of_means(&summary.wall_seconds, &base))
        };
    }
    summaries
}

fn summary_json(summary: &Summary) -> Value {
    json!({
        "mean": summary.mean,
        "standard_deviation": summary.standard_deviation,
        "median": summary.median,
        "min": summary.min,
        "max": summary.max,
    })
}

fn run_json(run: &RunRecord) -> Value {
    let measurement = &run.outcome.measurement;
    json!({
        "node": run.node,
        "run_index": run.run_index,
        "warmup": run.warmup,
        "wall_s": measurement.wall.as_secs_f64(),
        "user_s": measurement.user.as_secs_f64(),
        "system_s": measurement.system.as_secs_f64(),
        "peak_rss_kib": measurement.peak_rss_kibibytes,
        "chainstate_bytes": run.outcome.chainstate_bytes,
        "peak_blocks_bytes": run.outcome.disk_use.peak_blocks_bytes,
        "peak_chainstate_bytes": run.outcome.disk_use.peak_chainstate_bytes,
        "peak_total_bytes": run.outcome.disk_use.peak_total_bytes,
        "disk_samples": run.outcome.disk_use.sample_count,
        "exit_status": measurement.end.exit_code(),
        "exit_signal": measurement.end.signal(),
        "final_height": run.outcome.final_height,
        "log": run.outcome.log.display().to_string(),
    })
}

fn settings_json(bench: &Bench<'_>) -> Value {
    let arguments = bench.arguments;
    json!({
        "chain": bench.chain.directory.display().to_string(),
        "network": bench.chain.network.name(),
        "block_files": bench.chain.block_files.len(),
        "mode": arguments.mode.name(),
        "stop_height": bench.stop_height,
        "dbcache_mib": arguments.dbcache_mebibytes,
        "assumevalid": arguments.assumevalid,
        "runs": arguments.runs,
        "warmup": arguments.warmup,
        "drop_caches": arguments.drop_caches,
        "nice": arguments.nice,
        "node_options": arguments.node_options,
        "node_options_for": arguments.node_options_for.iter()
            .map(|option| json!({ "node": option.node, "option": option.option }))
            .collect::<Vec<_>>(),
        "disk_sample_interval_ms": SAMPLE_INTERVAL_MS,
        "serving_node": (arguments.mode == Mode::P2p)
            .then(|| bench.nodes[bench.roles.serving].name.clone()),
    })
}

fn node_summary_json(summary: &NodeSummary) -> Value {
    json!({
        "node": summary.name,
        "runs": summary.wall_seconds.count,
        "wall_s": summary_json(&summary.wall_seconds),
        "user_s": summary_json(&summary.user_seconds),
        "system_s": summary_json(&summary.system_seconds),
        "peak_rss_kib": summary_json(&summary.peak_rss_kibibytes),
        "chainstate_bytes": summary_json(&summary.chainstate_bytes),
        "peak_blocks_bytes": summary_json(&summary.peak_blocks_bytes),
        "peak_chainstate_bytes": summary_json(&summary.peak_chainstate_bytes),
        "peak_total_bytes": summary_json(&summary.peak_total_bytes),
        "coefficient_of_variation": summary.wall_seconds.coefficient_of_variation(),
        "warnings": summary.warnings,
    })
}

/// `results.json`'s content: the settings, the nodes, every run, each
/// node's statistics, the ratios to the baseline, the times by quarter of
/// the heights and the cost growth (see [`super::progress`]), the
/// warnings, the other files written and the notes (what was skipped and
/// why).
pub fn results_json(
    bench: &Bench<'_>,
    records: &[RunRecord],
    summaries: &[NodeSummary],
    progress: Option<&Progress>,
    extra_files: &[String],
    notes: &[String],
) -> Value {
    let baseline = &bench.nodes[bench.roles.baseline].name;
    let nodes: Vec<Value> = bench
        .nodes
        .iter()
        .map(|node| {
            json!({
                "name": node.name, "path": node.path.display().to_string(),
                "kind": node.kind.name(), "version": node.version,
            })
        })
        .collect();
    let ratios: Vec<Value> = summaries
        .iter()
        .filter_map(|summary| {
            let ratio = summary.ratio?;
            Some(json!({ "node": summary.name, "baseline": baseline,
                     "ratio": ratio.value, "uncertainty": ratio.uncertainty }))
        })
        .collect();
    let warnings: Vec<&String> = summaries.iter().flat_map(|summary| &summary.warnings).collect();
    let (chain, caches) = progress.map(context_json).unzip();
    json!({
        "benchmark": "ibd",
        "settings": settings_json(bench),
        "nodes": nodes,
        "baseline": baseline,
        "runs": records.iter().map(run_json).collect::<Vec<_>>(),
        "summaries": summaries.iter().map(node_summary_json).collect::<Vec<_>>(),
        "ratios": ratios,
        "quarters": progress.map(|progress| quarters_json(&progress.quarters, baseline)),
        "chain_by_quarter": chain,
        "utxo_caches": caches,
        "cost_growth": progress.and_then(|progress| progress.cost.as_ref()).map(cost_json),
        "warnings": warnings,
        "files": extra_files,
        "notes": notes,
    })
}

fn ratio_text(ratio: Option<Ratio>) -> String {
    match ratio {
        Some(Ratio { value, uncertainty: Some(uncertainty) }) => {
            format!("{value:.3} ± {uncertainty:.3}")
        }
        Some(Ratio { value, uncertainty: None }) => format!("{value:.3}"),
        None => "-".to_owned(),
    }
}

/// One node's row of `results.md`'s table.
fn markdown_row(bench: &Bench<'_>, summary: &NodeSummary) -> String {
    let kind = bench
        .nodes
        .iter()
        .find(|node| node.name == summary.name)
        .map_or("", |node| node.kind.name());
    let wall = &summary.wall_seconds;
    let mebibytes = |bytes: &Summary| format!("{:.1}", bytes.mean / BYTES_PER_MEBIBYTE);
    format!(
        "| `{}` | {kind} | {:.3} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {} | {} | {} | {} | {} |\n",
        summary.name,
        wall.mean,
        wall.standard_deviation.map_or("-".to_owned(), |deviation| format!("{deviation:.3}")),
        wall.median,
        wall.min,
        wall.max,
        summary.user_seconds.mean,
        summary.system_seconds.mean,
        summary.peak_rss_kibibytes.mean / KIBIBYTES_PER_MEBIBYTE,
        mebibytes(&summary.chainstate_bytes),
        mebibytes(&summary.peak_blocks_bytes),
        mebibytes(&summary.peak_chainstate_bytes),
        mebibytes(&summary.peak_total_bytes),
        ratio_text(summary.ratio)
    )
}

/// `results.md`: a Markdown table, one row per node, then the times by
/// quarter of the heights and the cost growth.
pub fn markdown(
    bench: &Bench<'_>,
    summaries: &[NodeSummary],
    progress: Option<&Progress>,
) -> String {
    let arguments = bench.arguments;
    let mut text = format!(
        "IBD by `--mode {}` of `{}` ({}) to height {}, `-dbcache={}`{}; {} runs per node after \
         {} warm-ups.\n\n",
        arguments.mode.name(),
        bench.chain.directory.display(),
        bench.chain.network,
        bench.stop_height,
        arguments.dbcache_mebibytes,
        arguments
            .assumevalid
            .as_ref()
            .map_or(String::new(), |hash| format!(", `-assumevalid={hash}`")),
        arguments.runs,
        arguments.warmup
    );
    for option in &arguments.node_options_for {
        let _ = writeln!(text, "`{}` also runs with `{}`.", option.node, option.option);
    }
    if !arguments.node_options_for.is_empty() {
        text.push('\n');
    }
    text.push_str("| Node | Kind | Mean [s] | σ [s] | Median [s] | Min [s] | Max [s] | User [s] | System [s] | Peak RSS [MiB] | Chainstate [MiB] | Peak blocks [MiB] | Peak chainstate [MiB] | Peak total [MiB] | Relative |\n");
    text.push_str("|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for summary in summaries {
        text.push_str(&markdown_row(bench, summary));
    }
    let _ = writeln!(
        text,
        "\nPeak blocks: the largest size of the node's blk/rev files, peak chainstate: of its \
         coins database, peak total: of their sum at one sample; sampled every \
         {SAMPLE_INTERVAL_MS} ms while it ran (means of the runs)."
    );
    for warning in summaries.iter().flat_map(|summary| &summary.warnings) {
        let _ = write!(text, "\nWarning: {warning}\n");
    }
    if let Some(progress) = progress {
        text.push_str(&progress_markdown(progress, &bench.nodes[bench.roles.baseline].name));
    }
    text
}

/// The summary printed at the end, as hyperfine prints its own.
pub fn terminal_summary(bench: &Bench<'_>, summaries: &[NodeSummary]) -> String {
    let mut text = String::new();
    for summary in summaries {
        let (wall, node) =
            (&summary.wall_seconds, bench.nodes.iter().find(|n| n.name == summary.name));
        let _ = writeln!(
            text,
            "{} ({}): {} runs",
            summary.name,
            node.map_or("", |node| node.kind.name()),
            wall.count
        );
        let deviation = wall.standard_deviation.map_or("-".to_owned(), |d| format!("{d:.3} s"));
        let _ = writeln!(
            text,
            "  Time (mean ± σ):     {:.3} s ± {deviation}    [User: {:.3} s, System: {:.3} s]",
            wall.mean, summary.user_seconds.mean, summary.system_seconds.mean
        );
        let _ = writeln!(
            text,
            "  Range (min … median … max):   {:.3} s … {:.3} s … {:.3} s    Peak RSS (mean): {:.1} MiB    Chainstate (mean): {:.1} MiB",
            wall.min,
            wall.median,
            wall.max,
            summary.peak_rss_kibibytes.mean / KIBIBYTES_PER_MEBIBYTE,
            summary.chainstate_bytes.mean / BYTES_PER_MEBIBYTE
        );
        let _ = writeln!(
            text,
            "  Peak disk (mean):     blocks {:.1} MiB, chainstate {:.1} MiB, both {:.1} MiB",
            summary.peak_blocks_bytes.mean / BYTES_PER_MEBIBYTE,
            summary.peak_chainstate_bytes.mean / BYTES_PER_MEBIBYTE,
            summary.peak_total_bytes.mean / BYTES_PER_MEBIBYTE
        );
        for warning in &summary.warnings {
            let _ = writeln!(text, "  Warning: {warning}");
        }
    }
    let baseline = &bench.nodes[bench.roles.baseline].name;
    for summary in summaries.iter().filter(|summary| &summary.name != baseline) {
        if summary.ratio.is_some() {
            let ratio = ratio_text(summary.ratio);
            let _ = writeln!(text, "{} took {ratio} times as long as {baseline}", summary.name);
        }
    }
    text
}

/// Writes `contents` to `path`.
pub fn write_file(path: &Path, contents: &[u8]) -> Result<(), BenchError> {
    std::fs::write(path, contents).map_err(io_error(path))
}
