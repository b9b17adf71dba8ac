//! `ibex bench`: the benchmark end to end, from the arguments to the files
//! written and the summary returned for printing.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::arguments::{BenchArguments, BenchCommand, IbdArguments};
use super::flamegraph::{flame_graphs, FlamegraphOutcome};
use super::progress::{progress, utxo_counts_manifest, Progress};
use super::quarters::QUARTER_COUNT;
use super::report::{markdown, results_json, summarize_nodes, terminal_summary, write_file};
use super::runner::{Bench, RunRecord};
use super::serve::ServingNode;
use super::{datadir, BenchError};
use crate::plot::command::PlotArguments;
use crate::plot::cost_growth::{describe_fit, COST_WINDOW_BLOCKS_DEFAULT};

/// Runs `ibex bench`; returns the summary to print.
pub fn run(arguments: &BenchArguments) -> Result<String, BenchError> {
    match &arguments.command {
        BenchCommand::Ibd(arguments) => run_ibd(arguments),
    }
}

/// The runs, then the profiled runs, with the serving node up throughout
/// (stopped however they end).
fn run_nodes(bench: &Bench<'_>) -> Result<(Vec<RunRecord>, FlamegraphOutcome), BenchError> {
    let mut server: Option<ServingNode> = bench.start_server()?;
    bench.prepare_block_indexes()?;
    let records = bench.run_rounds(server.as_mut())?;
    let flames =
        if bench.arguments.flamegraph { flame_graphs(bench) } else { FlamegraphOutcome::default() };
    if let Some(mut server) = server.take() {
        server.stop()?;
        bench.save_server_log()?;
    }
    Ok((records, flames))
}

/// `ibex plot` on the measured runs' logs, against the baseline's first,
/// with the chain's manifest for the cost growth chart if it has the UTXO
/// counts.
fn plot_runs(
    bench: &Bench<'_>,
    records: &[RunRecord],
    utxo_counts: Option<&Path>,
) -> Result<Vec<String>, BenchError> {
    let measured: Vec<&RunRecord> = records.iter().filter(|run| !run.warmup).collect();
    let baseline = &bench.nodes[bench.roles.baseline].name;
    let arguments = PlotArguments {
        logs: measured.iter().map(|run| OsString::from(&run.outcome.log)).collect(),
        out: bench.arguments.out.join("plot").join("ibd"),
        baseline: Some(format!("{baseline}-1")),
        from_height: 0,
        after_shutdown: false,
        utxo_counts: utxo_counts.map(Path::to_path_buf),
        cost_window_blocks: COST_WINDOW_BLOCKS_DEFAULT,
    };
    let summary =
        crate::plot::command::run(&arguments).map_err(|source| BenchError::Plot { source })?;
    let written = summary.lines().find_map(|line| line.strip_prefix("wrote ")).unwrap_or("");
    Ok(written.split(", ").filter(|file| !file.is_empty()).map(str::to_owned).collect())
}

/// The summary's lines on the runs' progress: each node's ratio to the
/// baseline per quarter, and each run's line of cost growth.
fn progress_summary(progress: &Progress, baseline: &str) -> String {
    let mut text = String::new();
    for node in progress.quarters.nodes.iter().filter(|node| node.node != baseline) {
        let ratios: Vec<String> = (0..QUARTER_COUNT)
            .map(|index| match node.ratios[index] {
                Some(ratio) => format!("{:.3}", ratio.value),
                None => "-".to_owned(),
            })
            .collect();
        let _ = writeln!(
            text,
            "{} against {baseline} by quarter of the heights (time within each): {}",
            node.node,
            ratios.join(", ")
        );
    }
    for run in progress.cost.iter().flat_map(|report| &report.growth.runs) {
        if let Some(fit) = &run.fit {
            let _ = writeln!(text, "{} cost growth: {}", run.name, describe_fit(fit));
        }
    }
    text
}

/// `ibex bench ibd`.
pub fn run_ibd(arguments: &IbdArguments) -> Result<String, BenchError> {
    let bench = Bench::new(arguments)?;
    eprintln!(
        "bench: {} nodes, --mode {}, {} to height {} ({}), {} warm-up and {} measured runs each",
        bench.nodes.len(),
        arguments.mode.name(),
        bench.chain.directory.display(),
        bench.stop_height,
        bench.chain.network,
        arguments.warmup,
        arguments.runs
    );
    let (records, flames) = run_nodes(&bench)?;
    let summaries = summarize_nodes(&bench, &records);
    let out = &arguments.out;
    let mut files: Vec<String> =
        flames.files.iter().map(|path| path.display().to_string()).collect();
    let mut notes = flames.notes.clone();
    let progress = progress(&bench, &records, &mut notes)
        .map_err(|error| notes.push(format!("no times by quarter: {error}")))
        .ok();
    // The results are written before plotting, so a plotting error loses
    // nothing measured; the JSON is written again with the charts listed.
    let write_results = |files: &[String], notes: &[String]| -> Result<(), BenchError> {
        let json = results_json(&bench, &records, &summaries, progress.as_ref(), files, notes);
        let text =
            serde_json::to_string_pretty(&json).map_err(|source| BenchError::Json { source })?;
        write_file(&out.join("results.json"), text.as_bytes())?;
        let text = markdown(&bench, &summaries, progress.as_ref());
        write_file(&out.join("results.md"), text.as_bytes())
    };
    write_results(&files, &notes)?;
    match plot_runs(&bench, &records, utxo_counts_manifest(progress.as_ref())) {
        Ok(charts) => files.extend(charts),
        Err(error) => notes.push(error.to_string()),
    }
    write_results(&files, &notes)?;
    if !arguments.keep_datadirs {
        datadir::remove(&bench.work)?;
    }
    let mut summary = terminal_summary(&bench, &summaries);
    if let Some(progress) = &progress {
        summary.push_str(&progress_summary(progress, &bench.nodes[bench.roles.baseline].name));
    }
    for note in &notes {
        summary.push_str(&format!("note: {note}\n"));
    }
    let results: PathBuf = out.join("results.json");
    summary.push_str(&format!("wrote {}, {}", results.display(), out.join("results.md").display()));
    for file in &files {
        summary.push_str(&format!(", {file}"));
    }
    Ok(summary)
}
