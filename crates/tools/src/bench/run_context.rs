//! What a quarter's time depends on besides the node itself: the chain's
//! blocks in that quarter, and the node's UTXO cache.
//!
//! - **The chain by quarter**: transactions per block (from the
//!   baseline's first run's log) and, on a chain `ibex gen` made, the UTXO
//!   set's size at each quarter's end and the coins a block added on
//!   average (from its manifest). Nodes pay for different things: a
//!   quarter whose blocks change shape costs them differently, so its
//!   ratio moves even when neither node's cost per coin does. On the
//!   `utxo-heavy` chain to 4,000 the set stops growing near height 3,300
//!   and blocks then hold twice the transactions: Core, whose cost follows
//!   the coins it creates, gets cheaper there, while Ibex's cost follows
//!   the coins it reads from its database (docs/utxo-heavy.md).
//! - **Each node's UTXO cache**: the share its log says the in-memory UTXO
//!   set may use (`* Using X MiB for in-memory UTXO set`), plus what Core
//!   lends it (`(plus up to Y MiB of unused mempool space)`: Core adds the
//!   empty mempool's `-maxmempool` to its coins cache during IBD, so at
//!   `-dbcache=100` its cache may hold 376 MiB where Ibex's whole process
//!   stays within `-dbcache` + 256 MiB); the largest cache a tip line
//!   logged; and how often it was emptied (a tip whose coin count is under
//!   half the previous tip's: a flush of the whole cache).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufReader, Read as _};
use std::path::Path;

use serde_json::{json, Value};

use super::quarters::{QuarterTable, QUARTER_COUNT};
use super::statistics::{summarize, Summary};
use crate::plot::command::READ_BUFFER_BYTES;
use crate::plot::cost_growth::UtxoCounts;
use crate::plot::parse::{read_bounded_line, RunSeries, TipPoint};

/// Bytes from the start of a log searched for the cache's allowance: the
/// nodes print it before their first block (Core's whole start-up log is
/// a few KiB; this bounds the read on a log that lacks the line).
pub const LOG_HEAD_BYTES_MAX: u64 = 4 << 20;
/// A tip whose cache holds fewer than 1/this of the previous tip's coins
/// was preceded by a flush that emptied it.
const EMPTIED_DIVISOR: u64 = 2;
/// Coins a cache must hold for its emptying to count (a nearly empty
/// cache at the first blocks is not a flush).
const EMPTIED_COINS_MIN: u64 = 1_000;
/// Coins in a million, for the set's size in millions.
const COINS_PER_MILLION: f64 = 1e6;

/// The chain's blocks in one quarter of the heights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainQuarter {
    /// The quarter's first height.
    pub first_height: u32,
    /// Its last height.
    pub last_height: u32,
    /// Transactions per block, from a run's tips at both ends.
    pub transactions_per_block: Option<f64>,
    /// Coins in the UTXO set at the quarter's last height (manifest).
    pub utxo_count_at_end: Option<f64>,
    /// Coins the set grew by per block over the quarter (manifest;
    /// negative when it shrank).
    pub coins_added_per_block: Option<f64>,
}

/// The tip at exactly `height`, if the run logged it.
fn tip_at(series: &RunSeries, height: u32) -> Option<&TipPoint> {
    let index = series.points.partition_point(|point| point.height < height);
    series.points.get(index).filter(|point| point.height == height)
}

/// Each quarter of `table`'s heights: its transactions per block from
/// `series` and its UTXO set from `counts`, where given.
pub fn chain_quarters(
    table: &QuarterTable,
    series: Option<&RunSeries>,
    counts: Option<&UtxoCounts>,
) -> Vec<ChainQuarter> {
    (0..QUARTER_COUNT)
        .map(|index| {
            let (first_height, last_height) = (table.first_height(index), table.end_heights[index]);
            let before = first_height.saturating_sub(1);
            let blocks = f64::from(last_height.saturating_sub(before).max(1));
            let transactions_per_block = series.and_then(|series| {
                let (from, to) = (tip_at(series, before)?, tip_at(series, last_height)?);
                let added = to.transaction_count.checked_sub(from.transaction_count)?;
                Some(added as f64 / blocks)
            });
            let at = |height: u32| counts.and_then(|counts| counts.at_height(f64::from(height)));
            let (start_count, end_count) = (at(before), at(last_height));
            let coins_added_per_block =
                start_count.zip(end_count).map(|(start, end)| (end - start) / blocks);
            ChainQuarter {
                first_height,
                last_height,
                transactions_per_block,
                utxo_count_at_end: end_count,
                coins_added_per_block,
            }
        })
        .collect()
}

/// What a node's log says its in-memory UTXO set may use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CacheAllowance {
    /// `-dbcache`'s share for the in-memory UTXO set, MiB.
    pub share_mebibytes: f64,
    /// The unused mempool space it may use besides (Core), MiB.
    pub lent_mebibytes: Option<f64>,
}

impl CacheAllowance {
    /// The most the cache may hold, MiB.
    pub fn total_mebibytes(&self) -> f64 {
        self.share_mebibytes + self.lent_mebibytes.unwrap_or(0.0)
    }
}

/// The number in `text` between `before` and the next `after`, if it is
/// a finite, non-negative decimal; with the text after it.
fn number_between<'a>(text: &'a str, before: &str, after: &str) -> Option<(f64, &'a str)> {
    let start = text.find(before)? + before.len();
    let length = text[start..].find(after)?;
    let value: f64 = text[start..start + length].trim().parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some((value, &text[start + length + after.len()..]))
}

/// The allowance a log line states (`* Using 90.0 MiB for in-memory UTXO
/// set (plus up to 286.1 MiB of unused mempool space)`, the parenthesis
/// Core's only), if it is such a line.
pub fn parse_cache_allowance(line: &str) -> Option<CacheAllowance> {
    let (share_mebibytes, rest) = number_between(line, "Using ", " MiB for in-memory UTXO set")?;
    let lent_mebibytes = number_between(rest, "(plus up to ", " MiB of unused mempool space")
        .map(|(value, _)| value);
    Some(CacheAllowance { share_mebibytes, lent_mebibytes })
}

/// The first allowance stated in the first [`LOG_HEAD_BYTES_MAX`] bytes
/// of the log at `path`.
pub fn read_cache_allowance(path: &Path) -> io::Result<Option<CacheAllowance>> {
    let file = File::open(path)?;
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file.take(LOG_HEAD_BYTES_MAX));
    let mut line = Vec::new();
    while read_bounded_line(&mut reader, &mut line)?.is_some() {
        if let Some(allowance) = std::str::from_utf8(&line).ok().and_then(parse_cache_allowance) {
            return Ok(Some(allowance));
        }
    }
    Ok(None)
}

/// How one run's cache filled: the largest it logged (MiB) and how many
/// times it was emptied.
pub fn cache_use(series: &RunSeries) -> (f64, u64) {
    let largest = series.points.iter().map(|point| point.cache_mebibytes).fold(0.0, f64::max);
    let emptied = series
        .points
        .windows(2)
        .filter(|pair| {
            let (before, after) = (pair[0].cache_coin_count, pair[1].cache_coin_count);
            before >= EMPTIED_COINS_MIN && after < before / EMPTIED_DIVISOR
        })
        .count();
    (largest, emptied as u64)
}

/// One node's UTXO cache over its measured runs.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeCache {
    /// The node's name.
    pub node: String,
    /// What its first run's log says the cache may use.
    pub allowance: Option<CacheAllowance>,
    /// The largest cache logged, MiB, over the runs.
    pub largest_mebibytes: Summary,
    /// The times the cache was emptied, over the runs.
    pub emptied: Summary,
}

/// The cache of `node` over its runs' series and its first run's
/// allowance; `None` without runs.
pub fn node_cache(
    node: &str,
    allowance: Option<CacheAllowance>,
    runs: &[&RunSeries],
) -> Option<NodeCache> {
    let uses: Vec<(f64, u64)> = runs.iter().map(|series| cache_use(series)).collect();
    let largest: Vec<f64> = uses.iter().map(|&(largest, _)| largest).collect();
    let emptied: Vec<f64> = uses.iter().map(|&(_, emptied)| emptied as f64).collect();
    Some(NodeCache {
        node: node.to_owned(),
        allowance,
        largest_mebibytes: summarize(&largest)?,
        emptied: summarize(&emptied)?,
    })
}

/// `results.json`'s `chain_by_quarter`.
pub fn chain_json(quarters: &[ChainQuarter]) -> Value {
    let rows: Vec<Value> = quarters
        .iter()
        .enumerate()
        .map(|(index, quarter)| {
            json!({
                "quarter": index + 1,
                "first_height": quarter.first_height,
                "last_height": quarter.last_height,
                "transactions_per_block": quarter.transactions_per_block,
                "utxo_count_at_end": quarter.utxo_count_at_end,
                "coins_added_per_block": quarter.coins_added_per_block,
            })
        })
        .collect();
    Value::Array(rows)
}

/// `results.json`'s `utxo_caches`.
pub fn caches_json(caches: &[NodeCache]) -> Value {
    let rows: Vec<Value> = caches
        .iter()
        .map(|cache| {
            json!({
                "node": cache.node,
                "allowed_mib": cache.allowance.map(|allowance| allowance.share_mebibytes),
                "unused_mempool_mib": cache.allowance.and_then(|allowance| allowance.lent_mebibytes),
                "largest_logged_mib": cache.largest_mebibytes.mean,
                "largest_logged_mib_max": cache.largest_mebibytes.max,
                "emptied": cache.emptied.mean,
            })
        })
        .collect();
    Value::Array(rows)
}

fn optional_cell(value: Option<f64>, format: impl Fn(f64) -> String) -> String {
    value.map_or("-".to_owned(), format)
}

/// `results.md`'s table of the chain by quarter; `source` names the log
/// the transactions came from.
pub fn chain_markdown(quarters: &[ChainQuarter], source: &str) -> String {
    let mut text = format!(
        "\n## The chain by quarter\n\nWhat each quarter's blocks hold: transactions per block \
         from `{source}`'s log, the UTXO set from the chain's manifest. A quarter whose blocks \
         change shape costs each node differently, whatever the set's size.\n\n"
    );
    text.push_str("| Quarter | Heights | Transactions per block | UTXO set at its end [M coins] | Coins added per block |\n");
    text.push_str("|---:|:---|---:|---:|---:|\n");
    for (index, quarter) in quarters.iter().enumerate() {
        let _ = writeln!(
            text,
            "| {} | {}-{} | {} | {} | {} |",
            index + 1,
            quarter.first_height,
            quarter.last_height,
            optional_cell(quarter.transactions_per_block, |value| format!("{value:.0}")),
            optional_cell(quarter.utxo_count_at_end, |value| format!(
                "{:.2}",
                value / COINS_PER_MILLION
            )),
            optional_cell(quarter.coins_added_per_block, |value| format!("{value:.0}")),
        );
    }
    text
}

/// `results.md`'s table of the nodes' UTXO caches.
pub fn caches_markdown(caches: &[NodeCache]) -> String {
    let mut text = String::from(
        "\n## UTXO cache\n\nWhat each node's log says its in-memory UTXO set may use (Core adds \
         the unused mempool's space during IBD), the largest cache a tip line logged (mean of \
         the runs, largest), and the times the cache was emptied by a flush (a tip holding \
         under half the previous tip's coins; mean of the runs).\n\n",
    );
    text.push_str("| Node | Allowed [MiB] | Largest logged [MiB] | Emptied |\n");
    text.push_str("|:---|:---|---:|---:|\n");
    for cache in caches {
        let allowed = match cache.allowance {
            Some(CacheAllowance { share_mebibytes, lent_mebibytes: Some(lent) }) => format!(
                "{share_mebibytes:.1} + {lent:.1} of unused mempool = {:.1}",
                share_mebibytes + lent
            ),
            Some(CacheAllowance { share_mebibytes, lent_mebibytes: None }) => {
                format!("{share_mebibytes:.1}")
            }
            None => "-".to_owned(),
        };
        let _ = writeln!(
            text,
            "| `{}` | {allowed} | {:.1} ({:.1}) | {:.1} |",
            cache.node,
            cache.largest_mebibytes.mean,
            cache.largest_mebibytes.max,
            cache.emptied.mean
        );
    }
    text
}

#[cfg(test)]
#[path = "run_context_tests.rs"]
mod tests;
