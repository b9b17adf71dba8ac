//! What `ibexd` says of its progress: the `progress=` of each `UpdateTip` line
//! is Core v30's `GuessVerificationProgress` (an old regtest chain ends below
//! 1, as in Core; with the tip within two hours of the clock, `-mocktime` here,
//! and no header left, exactly 1), and the plain progress lines end at exactly
//! 100 % of the target: the best header, or `-stopatheight` when lower.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../ibexd/tests/common/mod.rs"]
mod common;

use std::path::Path;

use common::{datadir_with_blocks, debug_log, generate_chain, ibexd, REGTEST_QUIET};

/// Blocks in the generated chain.
const BLOCKS: u32 = 200;

/// Seconds since 1970 of `YYYY-MM-DDTHH:MM:SSZ` at the start of `text`
/// (`ibex plot`'s timestamp parser).
fn parse_iso8601(text: &str) -> i64 {
    ibex_tools::plot::parse::parse_timestamp_micros(text).expect("a timestamp") / 1_000_000
}

/// One `UpdateTip` line's figures.
#[derive(Debug)]
struct TipLine {
    logged_at: i64,
    height: u32,
    transactions: u64,
    block_time: i64,
    progress: String,
}

fn tip_lines(log: &str) -> Vec<TipLine> {
    let lines = log.lines().filter(|line| line.contains(" UpdateTip: "));
    lines
        .map(|line| {
            let field = |name: &str| {
                let start = line.find(&format!(" {name}=")).unwrap() + name.len() + 2;
                line[start..].split(' ').next().unwrap().trim_matches('\'').to_owned()
            };
            TipLine {
                logged_at: parse_iso8601(line),
                height: field("height").parse().unwrap(),
                transactions: field("tx").parse().unwrap(),
                block_time: parse_iso8601(&field("date")),
                progress: field("progress"),
            }
        })
        .collect()
}

/// Core v30's estimate on regtest (statistics: 0 transactions at time 0,
/// 0.001 a second): from `now - missing blocks x 600 s` when the block's
/// time is within two hours of `now`, from the block's time otherwise.
fn core_progress(tip: &TipLine, best_header_height: u32, now: i64) -> String {
    let near = (now - tip.block_time).abs() <= 7_200;
    let reference =
        if near { now - i64::from(best_header_height - tip.height) * 600 } else { tip.block_time };
    let count = tip.transactions as f64;
    let progress = (count / (count + (now - reference) as f64 * 0.001)).min(1.0);
    format!("{progress:.6}")
}

/// A `-reindex` of the chain in a fresh `datadir`, plain progress lines
/// every 100 ms, ending at the tip (or at a `-stopatheight` in `extra`,
/// the last value winning); returns the progress lines.
fn reindex(chain: &Path, datadir: &Path, extra: &[&str]) -> Vec<String> {
    datadir_with_blocks(datadir, chain);
    let stop = format!("-stopatheight={BLOCKS}");
    let options = ["-reindex", "-progressinterval=100", "-server=0", stop.as_str()];
    let output = ibexd(datadir, &REGTEST_QUIET, &options).args(extra).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stderr}");
    let lines: Vec<String> =
        stderr.lines().filter(|line| line.starts_with("progress:")).map(str::to_owned).collect();
    assert!(lines.len() >= 2, "{stderr}");
    lines
}

/// The last lines: the tip at 100 % of `target` with no time left, then
/// the time taken.
fn assert_ends_at_100_percent(lines: &[String], target: u32) {
    let [.., last_tip, done] = lines else { panic!("{lines:?}") };
    let expected = format!("progress: height {target}/{target} (100.00%) ");
    assert!(last_tip.starts_with(&expected), "{lines:?}");
    assert!(last_tip.ends_with(" ETA 0s"), "{lines:?}");
    assert!(done.starts_with("progress: done in "), "{lines:?}");
    for line in &lines[..lines.len() - 1] {
        assert!(line.contains(&format!("/{target} (")), "every line aims at {target}: {line}");
    }
}

#[test]
fn progress_is_cores_estimate_and_the_display_ends_at_100_percent() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "16", &[]);

    // An old chain (the generator's blocks start in 2011): Core's estimate
    // ends far below 1 at the tip, and so does Ibex's.
    let old = root.path().join("old");
    assert_ends_at_100_percent(&reindex(&chain, &old, &[]), BLOCKS);
    let log = debug_log(&old);
    assert!(log.contains(&format!(" blocks to height {BLOCKS}, ")), "the import plan is logged");
    let tips = tip_lines(&log);
    assert_eq!(tips.last().unwrap().height, BLOCKS);
    for tip in &tips {
        assert_eq!(tip.progress, core_progress(tip, BLOCKS, tip.logged_at), "{tip:?}");
    }
    assert!(tips.last().unwrap().progress.starts_with("0.0"), "{tips:?}");

    // The clock ten minutes after the tip: the last blocks are recent,
    // counted by the headers still missing, and the tip is exactly 1.
    let tip_time = tips.last().unwrap().block_time;
    let now = tip_time + 600;
    let recent = root.path().join("recent");
    assert_ends_at_100_percent(&reindex(&chain, &recent, &[&format!("-mocktime={now}")]), BLOCKS);
    let tips = tip_lines(&debug_log(&recent));
    for tip in &tips {
        assert_eq!(tip.progress, core_progress(tip, BLOCKS, now), "{tip:?}");
    }
    assert_eq!(tips.last().unwrap().progress, "1.000000");
    let below: Vec<&TipLine> =
        tips.iter().filter(|tip| tip.height < BLOCKS && now - tip.block_time <= 7_200).collect();
    assert!(!below.is_empty() && below.iter().all(|tip| tip.progress.as_str() < "1.000000"));

    // `-stopatheight` below the best header: the display's target.
    let stopped = root.path().join("stopped");
    assert_ends_at_100_percent(&reindex(&chain, &stopped, &["-stopatheight=150"]), 150);
}
