//! `ibex bench ibd` end to end on a tiny generated chain: the same `ibexd`
//! under two names (results, ratio, logs, charts, flame graphs), the p2p
//! mode, its refusals and a failing run; with `IBEX_CORE_BIN` set, also
//! `bitcoind` against `ibexd` by `-reindex` and over P2P from `bitcoind`.
//! The tests of this file run one at a time: a benchmark sharing the two
//! cores with another would time the other.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../ibexd/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;

use serde_json::Value;

/// Blocks of the tiny chain: about a second of `-reindex`.
const CHAIN_BLOCKS: u32 = 200;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A tiny chain in `<root>/chain`.
fn tiny_chain(root: &Path) -> PathBuf {
    let chain = root.join("chain");
    common::generate_chain(&chain, "tiny", &CHAIN_BLOCKS.to_string(), "7", &[]);
    chain
}

fn bench(chain: &Path, out: &Path, arguments: &[&str]) -> Output {
    common::ibex()
        .args(["bench", "ibd"])
        .arg(chain)
        .arg("--out")
        .arg(out)
        .args(["--dbcache", "16"])
        .args(arguments)
        .output()
        .unwrap()
}

fn succeeded(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "ibex bench failed:\n{stderr}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn results(out: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap()
}

/// Every run has every field, with a type that fits, and reached the tip.
fn check_runs(results: &Value, expected_runs: usize) {
    let runs = results["runs"].as_array().unwrap();
    assert_eq!(runs.len(), expected_runs, "{results:#}");
    for run in runs {
        assert!(run["node"].is_string() && run["run_index"].as_u64().unwrap() >= 1);
        assert!(run["warmup"].is_boolean());
        for field in ["wall_s", "user_s", "system_s"] {
            assert!(run[field].as_f64().unwrap() >= 0.0, "{field} in {run}");
        }
        assert!(run["wall_s"].as_f64().unwrap() > 0.0);
        assert!(run["user_s"].as_f64().unwrap() > 0.0, "a node validating blocks uses CPU");
        assert!(run["peak_rss_kib"].as_u64().unwrap() > 1024, "{run}");
        // A node that connected blocks left a coins database on disk.
        assert!(run["chainstate_bytes"].as_u64().unwrap() > 0, "{run}");
        assert_eq!(run["exit_status"], 0);
        assert!(run["exit_signal"].is_null());
        assert_eq!(run["final_height"], CHAIN_BLOCKS);
        let log = std::fs::read_to_string(run["log"].as_str().unwrap()).unwrap();
        assert!(log.contains(&format!(" height={CHAIN_BLOCKS} ")), "{log}");
    }
}

/// Each node's summary has every statistic of every measure.
fn check_summaries(results: &Value, nodes: &[&str], runs: u64) {
    let summaries = results["summaries"].as_array().unwrap();
    assert_eq!(summaries.len(), nodes.len());
    for (summary, name) in summaries.iter().zip(nodes) {
        assert_eq!(summary["node"], *name);
        assert_eq!(summary["runs"], runs);
        for measure in ["wall_s", "user_s", "system_s", "peak_rss_kib", "chainstate_bytes"] {
            let statistics = &summary[measure];
            let (min, max) =
                (statistics["min"].as_f64().unwrap(), statistics["max"].as_f64().unwrap());
            for statistic in ["mean", "median"] {
                let value = statistics[statistic].as_f64().unwrap();
                assert!(min <= value && value <= max, "{measure} {statistic} in {summary}");
            }
            assert_eq!(statistics["standard_deviation"].is_f64(), runs > 1, "{summary}");
        }
        assert!(summary["warnings"].is_array());
    }
}

/// The times by quarter of the heights (0-200): every node, four quarters
/// that add up, the baseline's ratio 1 and the other's positive.
fn check_quarters(results: &Value, nodes: &[&str], runs: u64) {
    let quarters = &results["quarters"];
    assert_eq!(quarters["start_height"], 0);
    assert_eq!(quarters["end_heights"], serde_json::json!([50, 100, 150, 200]));
    let mean = |value: &Value| value["mean"].as_f64().unwrap();
    for (node, name) in quarters["nodes"].as_array().unwrap().iter().zip(nodes) {
        assert_eq!(node["node"], *name);
        assert_eq!(node["runs"], runs);
        let first_block = mean(&node["first_block_s"]);
        let list = node["quarters"].as_array().unwrap();
        assert_eq!(list.len(), 4);
        let mut within_sum = 0.0;
        for (index, quarter) in list.iter().enumerate() {
            assert_eq!(quarter["quarter"], index + 1);
            assert_eq!(quarter["last_height"], 50 * (index + 1));
            let within = mean(&quarter["within_s"]);
            assert!(within > 0.0, "{quarter}");
            // The first quarter times 49 blocks (from block 1), the others 50.
            let blocks = if index == 0 { 49.0 } else { 50.0 };
            let per_block = quarter["within_ms_per_block"].as_f64().unwrap();
            assert!((per_block - within * 1_000.0 / blocks).abs() < 1e-6, "{quarter}");
            within_sum += within;
            let from_start = mean(&quarter["to_end_from_start_s"]);
            let from_first_block = mean(&quarter["to_end_from_first_block_s"]);
            assert!((from_start - from_first_block - first_block).abs() < 1e-6, "{node}");
            assert!((from_first_block - within_sum).abs() < 1e-6, "quarters add up: {node}");
            let ratio = quarter["ratio"].as_f64().unwrap();
            if *name == results["baseline"] {
                assert_eq!(ratio, 1.0);
            } else {
                assert!(ratio > 0.0 && ratio.is_finite(), "{quarter}");
            }
        }
    }
    assert_eq!(quarters["nodes"].as_array().unwrap().len(), nodes.len());
    // Every node but the baseline: what holding its first ratio asked.
    let holds = quarters["ratio_holds"].as_array().unwrap();
    assert_eq!(holds.len(), nodes.len() - 1, "{quarters:#}");
    for hold in holds {
        assert_ne!(hold["node"], results["baseline"]);
        let first = hold["first_ratio"].as_f64().unwrap();
        let allowed = hold["baseline_last_ms_per_block_max"].as_f64().unwrap();
        let node_last = hold["node_ms_per_block"][1].as_f64().unwrap();
        assert!((allowed * first - node_last).abs() < 1e-6, "{hold}");
        let baseline_last = hold["baseline_ms_per_block"][1].as_f64().unwrap();
        assert_eq!(hold["held"], baseline_last <= allowed, "{hold}");
    }
}

/// The cost growth from the chain's manifest: a line per measured run, the
/// chart and the CSV of its windows (50 blocks of 200, block 1 left out).
fn check_cost_growth(results: &Value, out: &Path, runs: &[&str]) {
    let cost = &results["cost_growth"];
    assert_eq!(cost["window_blocks"], 50);
    assert!(cost["manifest"].as_str().unwrap().ends_with("manifest.json"));
    let names: Vec<&str> =
        cost["runs"].as_array().unwrap().iter().map(|run| run["run"].as_str().unwrap()).collect();
    assert_eq!(names, runs);
    assert_svg(&out.join("plot/ibd-cost-growth.svg"));
    let csv = std::fs::read_to_string(out.join("plot/ibd-cost-growth.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 4 * runs.len(), "{csv}");
    assert!(csv.contains(&format!("\n{},2,51,", runs[0])), "{csv}");
    assert!(results["files"].to_string().contains("ibd-cost-growth.svg"));
}

/// The chain by quarter (transactions per block from the baseline's log,
/// the UTXO set from the manifest, which the tiny chain's tip count ends)
/// and each node's UTXO cache (its log's allowance, positive sizes).
fn check_context(results: &Value, out: &Path, nodes: &[&str]) {
    let chain = results["chain_by_quarter"].as_array().unwrap();
    assert_eq!(chain.len(), 4, "{results:#}");
    for (index, quarter) in chain.iter().enumerate() {
        assert_eq!(quarter["last_height"], 50 * (index + 1));
        assert!(quarter["transactions_per_block"].as_f64().unwrap() >= 1.0, "{quarter}");
        assert!(quarter["utxo_count_at_end"].as_f64().unwrap() > 0.0, "{quarter}");
        assert!(quarter["coins_added_per_block"].is_f64(), "{quarter}");
    }
    let caches = results["utxo_caches"].as_array().unwrap();
    assert_eq!(caches.len(), nodes.len());
    for (cache, name) in caches.iter().zip(nodes) {
        assert_eq!(cache["node"], *name);
        assert!(cache["allowed_mib"].as_f64().unwrap() > 0.0, "{cache}");
        assert!(cache["largest_logged_mib"].as_f64().unwrap() > 0.0, "{cache}");
        assert!(cache["emptied"].as_f64().unwrap() >= 0.0, "{cache}");
    }
    let markdown = std::fs::read_to_string(out.join("results.md")).unwrap();
    assert!(markdown.contains("## The chain by quarter"), "{markdown}");
    assert!(markdown.contains("## UTXO cache"), "{markdown}");
}

fn assert_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|_| panic!("{}", path.display()));
    assert!(text.contains("<svg"), "{} is no SVG", path.display());
}

#[test]
fn benchmarks_the_same_ibexd_twice_with_flame_graphs() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let root = tempfile::tempdir().unwrap();
    let chain = tiny_chain(root.path());
    let chain_bytes = std::fs::read(chain.join("blk00000.dat")).unwrap();
    let out = root.path().join("out");
    let (a, b) = (
        format!("a={}", common::ibexd_path().display()),
        format!("b={}", common::ibexd_path().display()),
    );
    let arguments = ["--node", &a, "--node", &b, "--runs", "2", "--warmup", "1", "--flamegraph"];
    let stdout = succeeded(&bench(&chain, &out, &arguments));
    assert!(stdout.contains("b took "), "{stdout}");

    let results = results(&out);
    assert_eq!(results["settings"]["mode"], "reindex");
    assert_eq!(results["settings"]["network"], "regtest");
    assert_eq!(results["settings"]["stop_height"], CHAIN_BLOCKS, "the manifest's tip");
    assert_eq!(results["settings"]["dbcache_mib"], 16);
    assert_eq!(results["baseline"], "a");
    assert_eq!(results["nodes"][1]["kind"], "ibex");
    check_runs(&results, 6);
    let warmups = results["runs"].as_array().unwrap().iter().filter(|run| run["warmup"] == true);
    assert_eq!(warmups.count(), 2);
    check_summaries(&results, &["a", "b"], 2);
    // The same binary on the same chain: the ratio is 1 but for noise.
    // Runs of about a second on two shared cores vary by tens of percent
    // (another process's burst lands on one run), so the bound is wide:
    // it still fails on a ratio computed the wrong way round or from the
    // wrong runs (a warm-up, a profiled run), or a node timed twice.
    let ratio = &results["ratios"][1];
    assert_eq!((&ratio["node"], &ratio["baseline"]), (&Value::from("b"), &Value::from("a")));
    let value = ratio["ratio"].as_f64().unwrap();
    assert!((0.5..2.0).contains(&value), "ratio {value}");
    assert!(ratio["uncertainty"].as_f64().unwrap() >= 0.0);

    for run in ["a-1", "a-2", "b-1", "b-2", "a-warmup-1", "b-warmup-1"] {
        assert!(out.join(format!("logs/{run}.log")).is_file(), "{run}");
    }
    for chart in ["ibd-sync-time.svg", "ibd-speedup.svg", "ibd-rates.svg"] {
        assert_svg(&out.join("plot").join(chart));
    }
    let csv = std::fs::read_to_string(out.join("plot/ibd.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "one line per measured run: {csv}");
    let markdown = std::fs::read_to_string(out.join("results.md")).unwrap();
    assert!(markdown.contains("| `b` | ibex |"), "{markdown}");
    assert!(markdown.contains("| Chainstate [MiB] |"), "{markdown}");
    check_quarters(&results, &["a", "b"], 2);
    assert!(markdown.contains("## By quarter of the heights"), "{markdown}");
    assert!(markdown.contains("| `b` | 4 | 151-200 |"), "{markdown}");
    assert!(markdown.contains("### Holding the first quarter's ratio"), "{markdown}");
    check_cost_growth(&results, &out, &["a-1", "a-2", "b-1", "b-2"]);
    assert!(markdown.contains("## Cost growth"), "{markdown}");
    check_context(&results, &out, &["a", "b"]);
    // Ibex takes no mempool space: its cache's allowance is -dbcache's share alone.
    assert!(results["utxo_caches"][0]["unused_mempool_mib"].is_null(), "{results:#}");
    assert!(markdown.contains("from `a-1`'s log"), "{markdown}");
    assert!(stdout.contains("b against a by quarter of the heights (time within each): "));

    let notes = results["notes"].as_array().unwrap();
    if notes.iter().any(|note| note.as_str().unwrap().starts_with("flamegraph: perf")) {
        eprintln!("flame graphs skipped by the benchmark: {notes:?}");
    } else {
        for graph in ["flame-a.svg", "flame-b.svg", "flame-diff-a-b.svg"] {
            assert_svg(&out.join(graph));
        }
        let files = results["files"].to_string();
        assert!(files.contains("flame-diff-a-b.svg"), "{files}");
        assert!(out.join("logs/a-perf.log").is_file());
        // The same samples by quarter of the heights, timed by the log.
        assert!(files.contains("profile-quarters-b.md"), "{files}");
        let quarters = std::fs::read_to_string(out.join("profile-quarters-a.md")).unwrap();
        assert!(quarters.starts_with("# a: CPU time by quarter of the heights"), "{quarters}");
        for quarter in 1..=4 {
            assert!(quarters.contains(&format!("## Quarter {quarter}: ")), "{quarters}");
        }
    }
    assert!(!out.join("work").exists(), "the runs' data directories are removed");
    assert_eq!(std::fs::read(chain.join("blk00000.dat")).unwrap(), chain_bytes);
}

#[test]
fn benchmarks_over_p2p_and_reports_failures() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let root = tempfile::tempdir().unwrap();
    let chain = tiny_chain(root.path());
    let out = root.path().join("p2p");
    let (a, b) = (
        format!("a={}", common::ibexd_path().display()),
        format!("b={}", common::ibexd_path().display()),
    );
    let arguments = ["--node", &a, "--node", &b, "--runs", "1", "--mode", "p2p", "--serve", "b"];
    succeeded(&bench(&chain, &out, &arguments));
    let results = results(&out);
    assert_eq!(results["settings"]["serving_node"], "b");
    check_runs(&results, 2);
    check_summaries(&results, &["a", "b"], 1);
    let log = std::fs::read_to_string(out.join("logs/a-1.log")).unwrap();
    assert!(log.contains("peer connected"), "synced from the serving node: {log}");
    assert!(out.join("logs/serve-b.log").is_file());

    let refused =
        bench(&chain, &root.path().join("high"), &["--node", &a, "--stop-at-height", "999"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("above the chain's tip 200"));
    let unknown = bench(&chain, &root.path().join("unknown"), &["--node", "x=/bin/true"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("cannot tell whether"));
    // A node that refuses its options fails its run: the benchmark stops
    // and names the run and its log, and the chain stays as it was.
    let failing = root.path().join("failing");
    let output = bench(&chain, &failing, &["--node", &a, "--node-option=-nosuchoption"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("run a-1 failed: exit status 1"), "{stderr}");
    assert!(stderr.contains("logs/a-1.log"), "{stderr}");
    assert!(!failing.join("results.json").exists());
}

fn core_binaries() -> Option<PathBuf> {
    match std::env::var_os("IBEX_CORE_BIN") {
        Some(directory) => Some(PathBuf::from(directory)),
        None => {
            eprintln!("skipped: ibex bench ibd with bitcoind (IBEX_CORE_BIN not set)");
            None
        }
    }
}

#[test]
fn benchmarks_bitcoind_against_ibexd() {
    let Some(binaries) = core_binaries() else { return };
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let root = tempfile::tempdir().unwrap();
    let chain = tiny_chain(root.path());
    let core = format!("core={}", binaries.join("bitcoind").display());
    let ibex = format!("ibex={}", common::ibexd_path().display());
    for (mode, out) in [("reindex", "reindex"), ("p2p", "p2p")] {
        let out = root.path().join(out);
        let arguments =
            ["--node", &ibex, "--node", &core, "--runs", "1", "--mode", mode, "--serve", "core"];
        succeeded(&bench(&chain, &out, &arguments));
        let results = results(&out);
        assert_eq!(results["nodes"][1]["kind"], "core", "{results:#}");
        assert!(results["nodes"][1]["version"].as_str().unwrap().contains("Bitcoin Core"));
        check_runs(&results, 2);
        check_summaries(&results, &["ibex", "core"], 1);
        let log = std::fs::read_to_string(out.join("logs/core-1.log")).unwrap();
        assert!(log.contains("Bitcoin Core version"), "{log}");
        assert_svg(&out.join("plot/ibd-speedup.svg"));
        check_quarters(&results, &["ibex", "core"], 1);
        check_cost_growth(&results, &out, &["ibex-1", "core-1"]);
        check_context(&results, &out, &["ibex", "core"]);
        // Core lends its empty mempool's allowance (-maxmempool) to the
        // coins cache during IBD, and says so.
        let lent = results["utxo_caches"][1]["unused_mempool_mib"].as_f64().unwrap();
        assert!(lent > 0.0, "{results:#}");
    }
}
