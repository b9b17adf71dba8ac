//! How each measured run progressed, from its log: the time by quarter of
//! the heights ([`super::quarters`]) and, on a chain `ibex gen` made (its
//! `manifest.json` records the UTXO set's size by height), the cost of a
//! block against the set's size ([`crate::plot::cost_growth`]), what the
//! chain's blocks hold in each quarter and how each node's UTXO cache
//! filled ([`super::run_context`]); their parts of `results.json` and
//! `results.md`.

use std::fmt::Write as _;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::chain_input::MANIFEST_FILE_NAME;
use super::quarters::{quarter_table, QuarterTable, QUARTER_COUNT};
use super::run_context::{
    caches_json, caches_markdown, chain_json, chain_markdown, chain_quarters, node_cache,
    read_cache_allowance, CacheAllowance, ChainQuarter, NodeCache,
};
use super::runner::{Bench, RunRecord};
use super::statistics::{Ratio, Summary};
use super::{io_error, BenchError};
use crate::plot::command::READ_BUFFER_BYTES;
use crate::plot::cost_growth::{
    cost_growth, read_utxo_counts, CostGrowth, LinearFit, UtxoCounts, COST_WINDOW_BLOCKS_DEFAULT,
    MAINNET_UTXO_COUNT_MILLIONS,
};
use crate::plot::parse::{read_series, ParseOptions, RunSeries};

/// Every run starts from the genesis block (a fresh data directory).
pub const START_HEIGHT: u32 = 0;

/// One measured run's tips.
#[derive(Debug, Clone)]
pub struct MeasuredRun {
    /// The node's name.
    pub node: String,
    /// The run's number among the node's measured runs, from 1.
    pub run_index: u32,
    /// The tips, named as the run's log (`NAME-RUN`).
    pub series: RunSeries,
    /// What its log says the UTXO cache may use.
    pub cache_allowance: Option<CacheAllowance>,
}

/// The cost growth of the measured runs.
#[derive(Debug, Clone)]
pub struct CostReport {
    /// The manifest the UTXO counts came from.
    pub manifest: PathBuf,
    /// The windows and lines, one entry per measured run.
    pub growth: CostGrowth,
    /// The node of each entry.
    pub nodes: Vec<String>,
}

/// What the measured runs' logs show.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Time by quarter of the heights.
    pub quarters: QuarterTable,
    /// Cost against the UTXO set's size, with the chain's manifest.
    pub cost: Option<CostReport>,
    /// The chain's blocks by quarter.
    pub chain: Vec<ChainQuarter>,
    /// The run whose log gave the chain's transactions (`NAME-RUN`).
    pub chain_source: Option<String>,
    /// Each node's UTXO cache, in the nodes' order.
    pub caches: Vec<NodeCache>,
}

/// Reads the logs of the measured runs.
pub fn read_measured_runs(records: &[RunRecord]) -> Result<Vec<MeasuredRun>, BenchError> {
    let mut runs = Vec::new();
    for record in records.iter().filter(|record| !record.warmup) {
        let file = File::open(&record.outcome.log).map_err(io_error(&record.outcome.log))?;
        let reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
        let label = format!("{}-{}", record.node, record.run_index);
        let series = read_series(&label, reader, ParseOptions::default())
            .map_err(io_error(&record.outcome.log))?;
        let cache_allowance =
            read_cache_allowance(&record.outcome.log).map_err(io_error(&record.outcome.log))?;
        runs.push(MeasuredRun {
            node: record.node.clone(),
            run_index: record.run_index,
            series,
            cache_allowance,
        });
    }
    Ok(runs)
}

/// The UTXO set's size by height from the chain's manifest, if it has
/// one; otherwise a note says why there is none.
fn utxo_counts(bench: &Bench<'_>, notes: &mut Vec<String>) -> Option<(PathBuf, UtxoCounts)> {
    let manifest = bench.chain.directory.join(MANIFEST_FILE_NAME);
    if !manifest.exists() {
        return None;
    }
    match read_utxo_counts(&manifest) {
        Ok(counts) => Some((manifest, counts)),
        Err(error) => {
            notes.push(format!("no cost growth: {error}"));
            None
        }
    }
}

/// The cost growth of `runs` against `counts`.
fn cost_report(manifest: PathBuf, counts: &UtxoCounts, runs: &[MeasuredRun]) -> CostReport {
    let series = runs.iter().map(|run| &run.series);
    let growth = cost_growth(series, counts, COST_WINDOW_BLOCKS_DEFAULT);
    let nodes = runs.iter().map(|run| run.node.clone()).collect();
    CostReport { manifest, growth, nodes }
}

/// The runs of the node named `name`.
fn runs_of<'a>(runs: &'a [MeasuredRun], name: &'a str) -> impl Iterator<Item = &'a MeasuredRun> {
    runs.iter().filter(move |run| run.node == name)
}

/// The progress of the measured runs in `records`.
pub fn progress(
    bench: &Bench<'_>,
    records: &[RunRecord],
    notes: &mut Vec<String>,
) -> Result<Progress, BenchError> {
    let mut runs = read_measured_runs(records)?;
    // By node, in the nodes' order, then by run (not in the order run).
    let position = |name: &str| bench.nodes.iter().position(|node| node.name == name);
    runs.sort_by_key(|run| (position(&run.node), run.run_index));
    let nodes: Vec<(String, Vec<&RunSeries>)> = bench
        .nodes
        .iter()
        .map(|node| {
            (node.name.clone(), runs_of(&runs, &node.name).map(|run| &run.series).collect())
        })
        .collect();
    let baseline = &bench.nodes[bench.roles.baseline].name;
    let quarters = quarter_table(&nodes, baseline, START_HEIGHT, bench.stop_height);
    let counts = utxo_counts(bench, notes);
    let source = runs_of(&runs, baseline).next();
    let chain = chain_quarters(
        &quarters,
        source.map(|run| &run.series),
        counts.as_ref().map(|(_, counts)| counts),
    );
    let caches = nodes
        .iter()
        .filter_map(|(name, series)| {
            let allowance = runs_of(&runs, name).find_map(|run| run.cache_allowance);
            node_cache(name, allowance, series)
        })
        .collect();
    let cost = counts.map(|(manifest, counts)| cost_report(manifest, &counts, &runs));
    Ok(Progress {
        quarters,
        cost,
        chain,
        chain_source: source.map(|run| run.series.name.clone()),
        caches,
    })
}

fn ratio_json(ratio: Option<Ratio>) -> Value {
    match ratio {
        Some(ratio) => json!({ "ratio": ratio.value, "uncertainty": ratio.uncertainty }),
        None => json!({ "ratio": null, "uncertainty": null }),
    }
}

fn statistics_json(summary: &Summary) -> Value {
    json!({
        "mean": summary.mean,
        "standard_deviation": summary.standard_deviation,
        "min": summary.min,
        "max": summary.max,
    })
}

/// `results.json`'s `quarters`.
pub fn quarters_json(table: &QuarterTable, baseline: &str) -> Value {
    let nodes: Vec<Value> = table
        .nodes
        .iter()
        .map(|node| {
            let quarters: Vec<Value> = (0..QUARTER_COUNT)
                .map(|index| {
                    let ratio = ratio_json(node.ratios[index]);
                    json!({
                        "quarter": index + 1,
                        "first_height": table.first_height(index),
                        "last_height": table.end_heights[index],
                        "to_end_from_start_s": statistics_json(&node.to_end_seconds[index]),
                        "to_end_from_first_block_s":
                            statistics_json(&node.to_end_from_first_block_seconds[index]),
                        "within_s": statistics_json(&node.within_seconds[index]),
                        "within_ms_per_block": table.milliseconds_per_block(node, index),
                        "ratio": ratio["ratio"],
                        "uncertainty": ratio["uncertainty"],
                    })
                })
                .collect();
            json!({
                "node": node.node,
                "runs": node.within_seconds[0].count,
                "first_block_s": statistics_json(&node.first_block_seconds),
                "quarters": quarters,
            })
        })
        .collect();
    let holds: Vec<Value> = table
        .ratio_holds(baseline)
        .iter()
        .map(|hold| {
            json!({
                "node": hold.node,
                "first_ratio": hold.first_ratio,
                "last_ratio": hold.last_ratio,
                "node_ms_per_block": hold.node_milliseconds,
                "baseline_ms_per_block": hold.baseline_milliseconds,
                "baseline_last_ms_per_block_max": hold.baseline_last_milliseconds_max,
                "held": hold.held(),
            })
        })
        .collect();
    json!({
        "start_height": table.start_height,
        "end_heights": table.end_heights,
        "baseline": baseline,
        "ratio_holds": holds,
        "times": "to_end_from_start_s: from the log's first line (the process's start); \
                  to_end_from_first_block_s: from the first block connected (height 1); \
                  within_s: from the previous quarter's end, the first quarter from the first \
                  block connected; ratio: within_s's mean over the baseline's",
        "nodes": nodes,
    })
}

fn fit_json(fit: Option<&LinearFit>) -> Value {
    match fit {
        Some(fit) => json!({
            "intercept_ms": fit.intercept_milliseconds,
            "slope_ms_per_million_coins": fit.slope_milliseconds_per_million_coins,
            "r_squared": fit.r_squared,
            "windows": fit.window_count,
            "ms_per_block_at_mainnet_utxo_count":
                fit.milliseconds_per_block_at(MAINNET_UTXO_COUNT_MILLIONS),
        }),
        None => Value::Null,
    }
}

/// `results.json`'s `cost_growth`.
pub fn cost_json(report: &CostReport) -> Value {
    let runs: Vec<Value> = report
        .growth
        .runs
        .iter()
        .zip(&report.nodes)
        .map(|(run, node)| json!({ "run": run.name, "node": node, "fit": fit_json(run.fit.as_ref()) }))
        .collect();
    json!({
        "manifest": report.manifest.display().to_string(),
        "window_blocks": report.growth.window_blocks,
        "mainnet_utxo_count_millions": MAINNET_UTXO_COUNT_MILLIONS,
        "runs": runs,
    })
}

fn ratio_cell(ratio: Option<Ratio>) -> String {
    match ratio {
        Some(Ratio { value, uncertainty: Some(uncertainty) }) => {
            format!("{value:.3} ± {uncertainty:.3}")
        }
        Some(Ratio { value, uncertainty: None }) => format!("{value:.3}"),
        None => "-".to_owned(),
    }
}

/// `results.md`'s table of the quarters.
fn quarters_markdown(table: &QuarterTable, baseline: &str) -> String {
    let mut text = format!(
        "\n## By quarter of the heights\n\nHeights {}-{} in four quarters. Times are means over \
         the measured runs: to each quarter's last height from the process's start (the log's \
         first line) and from the first block connected (height {}: `bitcoind -reindex` indexes \
         the block files before it connects one); within each quarter from the previous \
         quarter's end, the first quarter from the first block connected. Relative: the time \
         within the quarter over `{baseline}`'s.\n\n",
        table.start_height,
        table.end_heights[QUARTER_COUNT - 1],
        table.start_height + 1,
    );
    text.push_str("| Node | Quarter | Heights | First block [s] | To its end from start [s] | To its end from first block [s] | Within [s] | Relative |\n");
    text.push_str("|:---|---:|:---|---:|---:|---:|---:|---:|\n");
    for node in &table.nodes {
        for index in 0..QUARTER_COUNT {
            // The first block's time is the node's, shown once.
            let first_block = match index {
                0 => format!("{:.3}", node.first_block_seconds.mean),
                _ => String::new(),
            };
            let _ = writeln!(
                text,
                "| `{}` | {} | {}-{} | {first_block} | {:.3} | {:.3} | {:.3} | {} |",
                node.node,
                index + 1,
                table.first_height(index),
                table.end_heights[index],
                node.to_end_seconds[index].mean,
                node.to_end_from_first_block_seconds[index].mean,
                node.within_seconds[index].mean,
                ratio_cell(node.ratios[index])
            );
        }
    }
    text
}

/// `results.md`'s part on holding the first quarter's ratio through the
/// last ([`super::quarters::RatioHold`]).
fn ratio_holds_markdown(table: &QuarterTable, baseline: &str) -> String {
    let holds = table.ratio_holds(baseline);
    if holds.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "\n### Holding the first quarter's ratio\n\nMilliseconds a block within the first and \
         the last quarter. A ratio eases when both nodes get dearer, even if `{baseline}` gets \
         dearer by fewer milliseconds, because its base is smaller; the last column is the most \
         `{baseline}` could have taken a block in the last quarter with the first quarter's \
         ratio held.\n\n| Node | Ratio, first quarter | Ratio, last quarter | Node [ms/block] | \
         `{baseline}` [ms/block] | `{baseline}` to hold the ratio [ms/block] | Held |\n\
         |:---|---:|---:|---:|---:|---:|:---|\n"
    );
    let span = |milliseconds: [f64; 2]| {
        let [first, last] = milliseconds;
        format!("{first:.1} → {last:.1} ({:+.1})", last - first)
    };
    for hold in &holds {
        let _ = writeln!(
            text,
            "| `{}` | {:.2} | {:.2} | {} | {} | {:.1} | {} |",
            hold.node,
            hold.first_ratio,
            hold.last_ratio,
            span(hold.node_milliseconds),
            span(hold.baseline_milliseconds),
            hold.baseline_last_milliseconds_max,
            if hold.held() { "yes" } else { "no" }
        );
    }
    text
}

/// `results.md`'s table of the lines of cost growth.
fn cost_markdown(report: &CostReport) -> String {
    let mut text = format!(
        "\n## Cost growth\n\nMilliseconds per block over {}-block windows against the UTXO \
         set's size (`{}`), a least-squares line per run (chart and windows: \
         `plot/ibd-cost-growth.svg`, `plot/ibd-cost-growth.csv`).\n\n",
        report.growth.window_blocks,
        report.manifest.display()
    );
    text.push_str(&format!(
        "| Run | Windows | Intercept [ms/block] | Slope [ms per M coins] | r² | At {MAINNET_UTXO_COUNT_MILLIONS:.0} M coins [ms/block] |\n"
    ));
    text.push_str("|:---|---:|---:|---:|---:|---:|\n");
    for run in &report.growth.runs {
        let _ = match &run.fit {
            Some(fit) => writeln!(
                text,
                "| `{}` | {} | {:.3} | {:.3} | {} | {:.1} |",
                run.name,
                fit.window_count,
                fit.intercept_milliseconds,
                fit.slope_milliseconds_per_million_coins,
                fit.r_squared.map_or("-".to_owned(), |value| format!("{value:.3}")),
                fit.milliseconds_per_block_at(MAINNET_UTXO_COUNT_MILLIONS)
            ),
            None => writeln!(text, "| `{}` | {} | - | - | - | - |", run.name, run.windows.len()),
        };
    }
    text
}

/// `results.md`'s sections on the runs' progress.
pub fn progress_markdown(progress: &Progress, baseline: &str) -> String {
    let mut text = quarters_markdown(&progress.quarters, baseline);
    text.push_str(&ratio_holds_markdown(&progress.quarters, baseline));
    if let Some(source) = &progress.chain_source {
        text.push_str(&chain_markdown(&progress.chain, source));
    }
    text.push_str(&caches_markdown(&progress.caches));
    if let Some(report) = &progress.cost {
        text.push_str(&cost_markdown(report));
    }
    text
}

/// `results.json`'s `chain_by_quarter` and `utxo_caches`.
pub fn context_json(progress: &Progress) -> (Value, Value) {
    (chain_json(&progress.chain), caches_json(&progress.caches))
}

/// The manifest `ibex plot` gets as `--utxo-counts`, if any.
pub fn utxo_counts_manifest(progress: Option<&Progress>) -> Option<&Path> {
    progress.and_then(|progress| progress.cost.as_ref()).map(|report| report.manifest.as_path())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::parse::TipPoint;

    /// A run whose block 1 comes at `first_s` and each next one `per_block_s` later.
    fn run(first_s: i64, per_block_s: i64) -> RunSeries {
        let points = (0..=8u32)
            .map(|height| TipPoint {
                elapsed_micros: match height {
                    0 => 0,
                    _ => (first_s + i64::from(height - 1) * per_block_s) * 1_000_000,
                },
                height,
                transaction_count: u64::from(height),
                cache_mebibytes: 0.0,
                cache_coin_count: 0,
            })
            .collect();
        RunSeries { points, ..RunSeries::default() }
    }

    #[test]
    fn writes_the_quarters_as_json_and_markdown() {
        let (fast, slow) = (run(1, 1), run(10, 2));
        let nodes = vec![("ibex".to_owned(), vec![&fast]), ("core".to_owned(), vec![&slow])];
        let table = quarter_table(&nodes, "ibex", 0, 8);
        let json = quarters_json(&table, "ibex");
        assert_eq!(json["end_heights"], json!([2, 4, 6, 8]));
        let core = &json["nodes"][1];
        assert_eq!(core["first_block_s"]["mean"], 10.0);
        // Core's quarter 2 (heights 3-4): 4 s against Ibex's 2 s.
        assert_eq!(core["quarters"][1]["within_s"]["mean"], 4.0);
        assert_eq!(core["quarters"][1]["ratio"], 2.0);
        assert_eq!(core["quarters"][1]["to_end_from_start_s"]["mean"], 16.0);
        assert_eq!(core["quarters"][1]["to_end_from_first_block_s"]["mean"], 6.0);
        assert_eq!(core["quarters"][3]["first_height"], 7);
        let text = quarters_markdown(&table, "ibex");
        assert!(text.contains("Heights 0-8 in four quarters"), "{text}");
        assert!(
            text.contains("| `core` | 1 | 1-2 | 10.000 | 12.000 | 2.000 | 2.000 | 2.000 |"),
            "{text}"
        );
        assert!(
            text.contains("| `core` | 2 | 3-4 |  | 16.000 | 6.000 | 4.000 | 2.000 |"),
            "{text}"
        );
        assert!(text.contains("| `ibex` | 4 | 7-8 |  | 8.000 | 7.000 | 2.000 | 1.000 |"), "{text}");
        // Quarter 1 times one block (2, from block 1), the others two.
        assert_eq!(core["quarters"][0]["within_ms_per_block"], 2_000.0);
        assert_eq!(core["quarters"][3]["within_ms_per_block"], 2_000.0);
        // Both steady: Core's ratio of 2 held, Ibex allowed 1,000 ms a block.
        let hold = &json["ratio_holds"][0];
        assert_eq!(hold["node"], "core");
        assert_eq!(hold["baseline_last_ms_per_block_max"], 1_000.0);
        assert_eq!(hold["held"], true);
        let holds = ratio_holds_markdown(&table, "ibex");
        assert!(
            holds.contains(
                "| `core` | 2.00 | 2.00 | 2000.0 → 2000.0 (+0.0) | 1000.0 → 1000.0 (+0.0) | 1000.0 | yes |"
            ),
            "{holds}"
        );
        assert!(ratio_holds_markdown(&table, "absent").is_empty());
    }
}
