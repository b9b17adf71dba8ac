//! `ibex bench`: the benchmark end to end, from the arguments to the files
//! written and the summary returned for printing.

use std::ffi::OsString;
use std::path::PathBuf;

use super::arguments::{BenchArguments, BenchCommand, IbdArguments};
use super::flamegraph::{flame_graphs, FlamegraphOutcome};
use super::report::{markdown, results_json, summarize_nodes, terminal_summary, write_file};
use super::runner::{Bench, RunRecord};
use super::serve::ServingNode;
use super::{datadir, BenchError};
use crate::plot::command::PlotArguments;

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

/// `ibex plot` on the measured runs' logs, against the baseline's first.
fn plot_runs(bench: &Bench<'_>, records: &[RunRecord]) -> Result<Vec<String>, BenchError> {
    let measured: Vec<&RunRecord> = records.iter().filter(|run| !run.warmup).collect();
    let baseline = &bench.nodes[bench.roles.baseline].name;
    let arguments = PlotArguments {
        logs: measured.iter().map(|run| OsString::from(&run.log)).collect(),
        out: bench.arguments.out.join("plot").join("ibd"),
        baseline: Some(format!("{baseline}-1")),
        from_height: 0,
        after_shutdown: false,
    };
    let summary =
        crate::plot::command::run(&arguments).map_err(|source| BenchError::Plot { source })?;
    let written = summary.lines().find_map(|line| line.strip_prefix("wrote ")).unwrap_or("");
    Ok(written.split(", ").filter(|file| !file.is_empty()).map(str::to_owned).collect())
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
    // The results are written before plotting, so a plotting error loses
    // nothing measured; the JSON is written again with the charts listed.
    let write_results = |files: &[String], notes: &[String]| -> Result<(), BenchError> {
        let json = results_json(&bench, &records, &summaries, files, notes);
        let text =
            serde_json::to_string_pretty(&json).map_err(|source| BenchError::Json { source })?;
        write_file(&out.join("results.json"), text.as_bytes())?;
        write_file(&out.join("results.md"), markdown(&bench, &summaries).as_bytes())
    };
    write_results(&files, &notes)?;
    match plot_runs(&bench, &records) {
        Ok(charts) => files.extend(charts),
        Err(error) => notes.push(error.to_string()),
    }
    write_results(&files, &notes)?;
    if !arguments.keep_datadirs {
        datadir::remove(&bench.work)?;
    }
    let mut summary = terminal_summary(&bench, &summaries);
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
