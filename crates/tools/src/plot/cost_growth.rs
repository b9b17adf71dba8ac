//! How the cost of a block grows with the UTXO set: milliseconds
//! per block over windows of consecutive blocks, against the set's size
//! that `ibex gen` records in its manifest (`utxo_count_by_height`), a CSV
//! of the same, and per run a least-squares line (milliseconds per block =
//! intercept + slope x millions of coins) for napkin math about larger sets.
//!
//! A window of blocks `(a, b]` costs the time from the tip reaching `a` to
//! it reaching `b`, over `b - a` blocks; its UTXO count is the manifest's,
//! interpolated at the window's middle height (the set grows by a few
//! thousand coins a block, so within a 50-block window it changes by a few
//! percent at most past the first hundred blocks). The windows start at
//! the first block connected after the log's first tip: on `-reindex`
//! Core logs its genesis tip, then indexes the block files for seconds
//! before it connects block 1, and that indexing is no block's cost. A
//! flush lands in one window and shows as its spike: windows of 50 blocks
//! smooth the single slow blocks and keep the flushes visible.
//!
//! The line is fitted to the windows of typical blocks only: those with at
//! least half the run's median transactions per block (from the tips'
//! `tx=`). A generated chain starts with 100 blocks holding only their
//! coinbase (until coins mature), which cost next to nothing at next to no
//! coins and would pull the line's intercept down and its slope up; they
//! stay in the chart and the CSV.
//!
//! Napkin math: a manifest holds at most ~400 entries (a few KB); a
//! mainnet-length log of 900,000 tips makes 18,000 windows of 50 blocks,
//! 40 bytes each. Everything is linear in the tips.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use super::parse::{RunSeries, TipPoint};
use super::PlotError;

/// The largest manifest read, in bytes (a generated one is ~20 KB).
pub const MANIFEST_BYTES_MAX: u64 = 16 * 1024 * 1024;
/// Blocks per window unless `--cost-window-blocks` says otherwise.
pub const COST_WINDOW_BLOCKS_DEFAULT: u32 = 50;
/// Coins in a million, the x axis' unit.
pub const COINS_PER_MILLION: f64 = 1_000_000.0;
/// Mainnet's UTXO set, in millions of coins (about 180 M in 2025-2026):
/// where the summary reads each line.
pub const MAINNET_UTXO_COUNT_MILLIONS: f64 = 180.0;
/// Microseconds in a millisecond.
const MICROS_PER_MILLISECOND: f64 = 1_000.0;

/// The UTXO set's size at some heights, strictly increasing.
#[derive(Debug, Clone, PartialEq)]
pub struct UtxoCounts {
    entries: Vec<(u32, u64)>,
}

impl UtxoCounts {
    /// The counts `entries` gives (`(height, coins)`), or why they cannot
    /// be used: none, or heights not strictly increasing.
    pub fn new(entries: Vec<(u32, u64)>) -> Result<UtxoCounts, &'static str> {
        if entries.is_empty() {
            return Err("utxo_count_by_height is empty");
        }
        if entries.windows(2).any(|pair| pair[0].0 >= pair[1].0) {
            return Err("utxo_count_by_height's heights do not increase");
        }
        Ok(UtxoCounts { entries })
    }

    /// The entries, by increasing height.
    pub fn entries(&self) -> &[(u32, u64)] {
        &self.entries
    }

    /// The count at `height` (which may fall between two heights),
    /// interpolated linearly between the entries around it; `None` outside
    /// the entries' heights.
    pub fn at_height(&self, height: f64) -> Option<f64> {
        let after = self.entries.partition_point(|&(entry, _)| f64::from(entry) < height);
        let &(high_height, high_count) = self.entries.get(after)?;
        if f64::from(high_height) == height {
            return Some(high_count as f64);
        }
        let &(low_height, low_count) = self.entries.get(after.checked_sub(1)?)?;
        let share = (height - f64::from(low_height)) / f64::from(high_height - low_height);
        Some(low_count as f64 + share * (high_count as f64 - low_count as f64))
    }
}

fn manifest_error(path: &Path, reason: impl Into<String>) -> PlotError {
    PlotError::Manifest { path: path.to_path_buf(), reason: reason.into() }
}

/// Reads `utxo_count_by_height` from the `ibex gen` manifest at `path`.
pub fn read_utxo_counts(path: &Path) -> Result<UtxoCounts, PlotError> {
    let read_error = |source| PlotError::Read { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(MANIFEST_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > MANIFEST_BYTES_MAX {
        return Err(manifest_error(path, format!("larger than {MANIFEST_BYTES_MAX} bytes")));
    }
    let manifest: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|error| manifest_error(path, error.to_string()))?;
    let Some(list) = manifest.get("utxo_count_by_height").and_then(|value| value.as_array()) else {
        return Err(manifest_error(
            path,
            "no utxo_count_by_height (a manifest of an older ibex gen? generate the chain again)",
        ));
    };
    let entry = |value: &serde_json::Value| -> Option<(u32, u64)> {
        let [height, count] = value.as_array()?.as_slice() else { return None };
        Some((u32::try_from(height.as_u64()?).ok()?, count.as_u64()?))
    };
    let entries =
        list.iter().map(entry).collect::<Option<Vec<_>>>().ok_or_else(|| {
            manifest_error(path, "utxo_count_by_height holds a non-[height, count]")
        })?;
    UtxoCounts::new(entries).map_err(|reason| manifest_error(path, reason))
}

/// One window of blocks: its cost and the UTXO set's size meanwhile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostWindow {
    /// The window's first block.
    pub first_height: u32,
    /// Its last block.
    pub last_height: u32,
    /// The UTXO set's size at the window's middle height (interpolated).
    pub utxo_count: f64,
    /// Milliseconds per block over the window.
    pub milliseconds_per_block: f64,
    /// Transactions per block over the window.
    pub transactions_per_block: f64,
}

/// The first tip of `run` at or above `height`.
fn tip_at(run: &RunSeries, height: u32) -> Option<&TipPoint> {
    run.points.get(run.points.partition_point(|point| point.height < height))
}

/// The windows of `window_blocks` blocks of `run` (see the module docs),
/// the last one shorter if the height ends inside it; windows outside the
/// counts' heights are left out. A height missing from the log is timed
/// at the next tip logged.
pub fn cost_windows(run: &RunSeries, counts: &UtxoCounts, window_blocks: u32) -> Vec<CostWindow> {
    let mut windows = Vec::new();
    let (Some(first), Some(last)) = (run.points.first(), run.final_point()) else {
        return windows;
    };
    let window_blocks = window_blocks.max(1);
    // The first block connected after the log's first tip starts the time.
    let mut start = first.height.saturating_add(1);
    while start < last.height {
        let end = start.saturating_add(window_blocks).min(last.height);
        let middle = (f64::from(start) + f64::from(end)) / 2.0;
        if let (Some(from), Some(to), Some(utxo_count)) =
            (tip_at(run, start), tip_at(run, end), counts.at_height(middle))
        {
            let blocks = f64::from(end - start);
            let transactions = to.transaction_count.saturating_sub(from.transaction_count);
            windows.push(CostWindow {
                first_height: start + 1,
                last_height: end,
                utxo_count,
                milliseconds_per_block: (to.elapsed_micros - from.elapsed_micros) as f64
                    / MICROS_PER_MILLISECOND
                    / blocks,
                transactions_per_block: transactions as f64 / blocks,
            });
        }
        start = end;
    }
    windows
}

/// The windows of typical blocks: at least half the median transactions
/// per block of `windows` (see the module docs).
pub fn typical_windows(windows: &[CostWindow]) -> Vec<CostWindow> {
    let mut transactions: Vec<f64> =
        windows.iter().map(|window| window.transactions_per_block).collect();
    transactions.sort_by(f64::total_cmp);
    let Some(&median) = transactions.get(transactions.len() / 2) else {
        return Vec::new();
    };
    windows.iter().filter(|window| window.transactions_per_block >= median / 2.0).copied().collect()
}

/// A least-squares line of milliseconds per block against millions of
/// coins in the UTXO set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearFit {
    /// Milliseconds per block added by each million coins.
    pub slope_milliseconds_per_million_coins: f64,
    /// Milliseconds per block with an empty set.
    pub intercept_milliseconds: f64,
    /// The share of the variance the line explains; `None` when every
    /// window took the same time.
    pub r_squared: Option<f64>,
    /// Windows fitted (the typical ones).
    pub window_count: usize,
}

impl LinearFit {
    /// The line's milliseconds per block at `millions` million coins.
    pub fn milliseconds_per_block_at(&self, millions: f64) -> f64 {
        self.intercept_milliseconds + self.slope_milliseconds_per_million_coins * millions
    }
}

/// The least-squares line through `windows` (each window counts once);
/// `None` for fewer than two windows or a single UTXO count.
pub fn fit_line(windows: &[CostWindow]) -> Option<LinearFit> {
    if windows.len() < 2 {
        return None;
    }
    let count = windows.len() as f64;
    let x = |window: &CostWindow| window.utxo_count / COINS_PER_MILLION;
    let y = |window: &CostWindow| window.milliseconds_per_block;
    let x_mean = windows.iter().map(x).sum::<f64>() / count;
    let y_mean = windows.iter().map(y).sum::<f64>() / count;
    let x_spread: f64 = windows.iter().map(|window| (x(window) - x_mean).powi(2)).sum();
    if x_spread <= 0.0 {
        return None;
    }
    let covariance: f64 =
        windows.iter().map(|window| (x(window) - x_mean) * (y(window) - y_mean)).sum();
    let slope = covariance / x_spread;
    let intercept = y_mean - slope * x_mean;
    let y_spread: f64 = windows.iter().map(|window| (y(window) - y_mean).powi(2)).sum();
    let residuals: f64 =
        windows.iter().map(|window| (y(window) - intercept - slope * x(window)).powi(2)).sum();
    Some(LinearFit {
        slope_milliseconds_per_million_coins: slope,
        intercept_milliseconds: intercept,
        r_squared: (y_spread > 0.0).then(|| 1.0 - residuals / y_spread),
        window_count: windows.len(),
    })
}

/// One run's windows and the line through its typical ones.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCost {
    /// The run's name.
    pub name: String,
    /// Its windows.
    pub windows: Vec<CostWindow>,
    /// The line through them.
    pub fit: Option<LinearFit>,
}

/// Every run's cost growth, in the runs' order.
#[derive(Debug, Clone, PartialEq)]
pub struct CostGrowth {
    /// Blocks per window.
    pub window_blocks: u32,
    /// One entry per run.
    pub runs: Vec<RunCost>,
}

/// The cost growth of `runs` over windows of `window_blocks` blocks.
pub fn cost_growth<'a>(
    runs: impl IntoIterator<Item = &'a RunSeries>,
    counts: &UtxoCounts,
    window_blocks: u32,
) -> CostGrowth {
    let runs = runs
        .into_iter()
        .map(|run| {
            let windows = cost_windows(run, counts, window_blocks);
            let fit = fit_line(&typical_windows(&windows));
            RunCost { name: run.name.clone(), windows, fit }
        })
        .collect();
    CostGrowth { window_blocks, runs }
}

/// Writes the windows as CSV, one line per window, with a header.
pub fn write_cost_csv<W: Write>(growth: &CostGrowth, mut writer: W) -> io::Result<()> {
    writeln!(
        writer,
        "run,first_height,last_height,utxo_count,milliseconds_per_block,transactions_per_block"
    )?;
    for run in &growth.runs {
        for window in &run.windows {
            writeln!(
                writer,
                "{},{},{},{:.0},{:.3},{:.1}",
                run.name,
                window.first_height,
                window.last_height,
                window.utxo_count,
                window.milliseconds_per_block,
                window.transactions_per_block
            )?;
        }
    }
    writer.flush()
}

/// A line's description: `A ms/block + B ms per million coins (...)`.
pub fn describe_fit(fit: &LinearFit) -> String {
    let r_squared = fit.r_squared.map_or("-".to_owned(), |value| format!("{value:.3}"));
    format!(
        "{:.3} ms/block + {:.3} ms per million coins (least squares over {} windows of typical \
         blocks, r² {r_squared}; at {MAINNET_UTXO_COUNT_MILLIONS:.0} M coins the line gives {:.1} \
         ms/block)",
        fit.intercept_milliseconds,
        fit.slope_milliseconds_per_million_coins,
        fit.window_count,
        fit.milliseconds_per_block_at(MAINNET_UTXO_COUNT_MILLIONS)
    )
}

/// The summary's lines: each run's line, or why it has none.
pub fn cost_summary(growth: &CostGrowth) -> String {
    let mut text = format!(
        "cost growth: ms per block over {}-block windows against the UTXO set's size\n",
        growth.window_blocks
    );
    for run in &growth.runs {
        let typical = typical_windows(&run.windows);
        let millions = typical.iter().map(|window| window.utxo_count / COINS_PER_MILLION);
        let range = format!(
            "{:.2}-{:.2} M coins",
            millions.clone().fold(f64::INFINITY, f64::min),
            millions.fold(0.0, f64::max)
        );
        let _ = match &run.fit {
            Some(fit) => writeln!(text, "  {} ({range}): {}", run.name, describe_fit(fit)),
            None => writeln!(text, "  {}: too few windows to fit a line", run.name),
        };
    }
    text.trim_end().to_owned()
}

#[cfg(test)]
#[path = "cost_growth_tests.rs"]
mod tests;
