//! Time by quarter of the measured heights: whether a node's
//! lead over the baseline holds as the chain, and its UTXO set, grows.
//!
//! The heights `start..=stop` a run connects are cut into four quarters
//! ending at `start + (stop - start) x k / 4`. From each run's `UpdateTip`
//! times (its log parsed by [`crate::plot::parse`], timed from the log's
//! first line, the process's start) come, per quarter:
//! - the time to its last height from the process's start;
//! - the same from the first block connected (the first tip above
//!   `start`): `bitcoind -reindex` logs its genesis tip, then indexes the
//!   block files for seconds before it connects block 1, while Ibex reads
//!   and connects at once, so only this column compares connecting alone;
//! - the time within it: from the previous quarter's end, and for the first
//!   quarter from the first block connected (start-up and indexing left
//!   out of every quarter).
//!
//! Each node's values are the means over its measured runs; the ratio of a
//! quarter is the node's mean time within it over the baseline's (with
//! hyperfine's propagated uncertainty when both have several runs).

use crate::plot::parse::RunSeries;

use super::statistics::{ratio_of_means, summarize, Ratio, Summary};

/// Quarters of the measured heights.
pub const QUARTER_COUNT: usize = 4;
/// Microseconds in one second.
const MICROS_PER_SECOND: f64 = 1_000_000.0;

/// The last height of each quarter of `start..=stop`.
pub fn quarter_end_heights(start_height: u32, stop_height: u32) -> [u32; QUARTER_COUNT] {
    let span = u64::from(stop_height.saturating_sub(start_height));
    std::array::from_fn(|index| {
        let share = span * (index as u64 + 1) / QUARTER_COUNT as u64;
        start_height.saturating_add(u32::try_from(share).unwrap_or(u32::MAX))
    })
}

/// One run's times by quarter, in microseconds from the log's first line
/// unless named otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunQuarters {
    /// Until the first block above the start height was connected.
    pub first_block_micros: i64,
    /// Until each quarter's last height.
    pub to_end_micros: [i64; QUARTER_COUNT],
    /// Within each quarter (the first from the first block connected).
    pub within_micros: [i64; QUARTER_COUNT],
}

impl RunQuarters {
    /// From the first block connected to the end of quarter `index`.
    pub fn to_end_from_first_block_micros(&self, index: usize) -> i64 {
        self.to_end_micros[index] - self.first_block_micros
    }
}

/// `run`'s times by quarter of `start..=stop`; `None` when the run did not
/// reach the stop height or the span is under one block a quarter.
pub fn run_quarters(run: &RunSeries, start_height: u32, stop_height: u32) -> Option<RunQuarters> {
    if stop_height.saturating_sub(start_height) < QUARTER_COUNT as u32 {
        return None;
    }
    let first_block_micros = run.elapsed_micros_at(start_height + 1)?;
    let ends = quarter_end_heights(start_height, stop_height);
    let mut to_end_micros = [0; QUARTER_COUNT];
    for (time, &height) in to_end_micros.iter_mut().zip(&ends) {
        *time = run.elapsed_micros_at(height)?;
    }
    let within_micros = std::array::from_fn(|index| {
        let previous = if index == 0 { first_block_micros } else { to_end_micros[index - 1] };
        to_end_micros[index] - previous
    });
    Some(RunQuarters { first_block_micros, to_end_micros, within_micros })
}

/// One node's times by quarter over its measured runs, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeQuarters {
    /// The node's name.
    pub node: String,
    /// Until the first block connected.
    pub first_block_seconds: Summary,
    /// Until each quarter's end, from the log's first line.
    pub to_end_seconds: [Summary; QUARTER_COUNT],
    /// Until each quarter's end, from the first block connected.
    pub to_end_from_first_block_seconds: [Summary; QUARTER_COUNT],
    /// Within each quarter.
    pub within_seconds: [Summary; QUARTER_COUNT],
    /// The time within each quarter over the baseline's.
    pub ratios: [Option<Ratio>; QUARTER_COUNT],
}

/// Every node's times by quarter.
#[derive(Debug, Clone, PartialEq)]
pub struct QuarterTable {
    /// The height the runs start from.
    pub start_height: u32,
    /// The last height of each quarter.
    pub end_heights: [u32; QUARTER_COUNT],
    /// The nodes with all their runs timed, in the order given.
    pub nodes: Vec<NodeQuarters>,
}

impl QuarterTable {
    /// The first height of quarter `index`.
    pub fn first_height(&self, index: usize) -> u32 {
        match index {
            0 => self.start_height + 1,
            _ => self.end_heights[index - 1] + 1,
        }
    }

    /// Blocks whose connecting quarter `index`'s time within holds: those
    /// after block 1 in the first quarter (timed from block 1 connected),
    /// every block of the others.
    pub fn timed_block_count(&self, index: usize) -> u32 {
        let from = match index {
            0 => self.start_height + 1,
            _ => self.end_heights[index - 1],
        };
        self.end_heights[index].saturating_sub(from)
    }

    /// `node`'s mean milliseconds a block within quarter `index` (`None`
    /// when the quarter times no block).
    pub fn milliseconds_per_block(&self, node: &NodeQuarters, index: usize) -> Option<f64> {
        let blocks = self.timed_block_count(index);
        (blocks > 0).then(|| node.within_seconds[index].mean * 1_000.0 / f64::from(blocks))
    }

    /// For each node but `baseline`, what holding its first quarter's
    /// ratio through the last would have asked of `baseline` (empty
    /// without a baseline, or where a quarter times no block).
    pub fn ratio_holds(&self, baseline: &str) -> Vec<RatioHold> {
        let Some(base) = self.nodes.iter().find(|node| node.node == baseline) else {
            return Vec::new();
        };
        let last = QUARTER_COUNT - 1;
        let per_block = |node: &NodeQuarters| {
            Some([self.milliseconds_per_block(node, 0)?, self.milliseconds_per_block(node, last)?])
        };
        let Some(baseline_milliseconds) = per_block(base) else { return Vec::new() };
        self.nodes
            .iter()
            .filter(|node| node.node != baseline)
            .filter_map(|node| {
                let node_milliseconds = per_block(node)?;
                let first_ratio = node_milliseconds[0] / baseline_milliseconds[0];
                let last_ratio = node_milliseconds[1] / baseline_milliseconds[1];
                (first_ratio.is_finite() && last_ratio.is_finite() && first_ratio > 0.0).then(
                    || RatioHold {
                        node: node.node.clone(),
                        first_ratio,
                        last_ratio,
                        node_milliseconds,
                        baseline_milliseconds,
                        baseline_last_milliseconds_max: node_milliseconds[1] / first_ratio,
                    },
                )
            })
            .collect()
    }
}

/// What holding a node's first-quarter ratio to the baseline through the
/// last quarter asks of the baseline, in milliseconds a block.
///
/// # Why
/// A fast node's ratio to a slow one eases as both get dearer even when
/// the fast one's cost grows by fewer milliseconds a block: its base is
/// smaller. This says how many: the baseline's last quarter may take the
/// node's last quarter over the first quarter's ratio at most.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioHold {
    /// The node compared with the baseline.
    pub node: String,
    /// The node's time a block over the baseline's, first quarter.
    pub first_ratio: f64,
    /// The same, last quarter.
    pub last_ratio: f64,
    /// The node's milliseconds a block, first and last quarter.
    pub node_milliseconds: [f64; 2],
    /// The baseline's milliseconds a block, first and last quarter.
    pub baseline_milliseconds: [f64; 2],
    /// The most the baseline could take a block in the last quarter with
    /// the first quarter's ratio held.
    pub baseline_last_milliseconds_max: f64,
}

impl RatioHold {
    /// Whether the ratio held (the baseline stayed within its allowance).
    pub fn held(&self) -> bool {
        self.baseline_milliseconds[1] <= self.baseline_last_milliseconds_max
    }
}

fn seconds(micros: i64) -> f64 {
    micros as f64 / MICROS_PER_SECOND
}

/// Summaries of `measure` over `runs` (not empty) for every quarter.
fn per_quarter(
    runs: &[RunQuarters],
    measure: impl Fn(&RunQuarters, usize) -> i64,
) -> Option<[Summary; QUARTER_COUNT]> {
    let summaries: Vec<Summary> = (0..QUARTER_COUNT)
        .map(|index| {
            let values: Vec<f64> = runs.iter().map(|run| seconds(measure(run, index))).collect();
            summarize(&values)
        })
        .collect::<Option<_>>()?;
    summaries.try_into().ok()
}

fn node_quarters(node: &str, runs: &[RunQuarters]) -> Option<NodeQuarters> {
    let first_block: Vec<f64> = runs.iter().map(|run| seconds(run.first_block_micros)).collect();
    Some(NodeQuarters {
        node: node.to_owned(),
        first_block_seconds: summarize(&first_block)?,
        to_end_seconds: per_quarter(runs, |run, index| run.to_end_micros[index])?,
        to_end_from_first_block_seconds: per_quarter(runs, |run, index| {
            run.to_end_from_first_block_micros(index)
        })?,
        within_seconds: per_quarter(runs, |run, index| run.within_micros[index])?,
        ratios: [None; QUARTER_COUNT],
    })
}

/// The table of `nodes` (each node's name and its measured runs' series)
/// over `start..=stop`, with ratios to `baseline`. A node with a run that
/// cannot be cut into quarters (it never reached the stop height) is left
/// out.
pub fn quarter_table(
    nodes: &[(String, Vec<&RunSeries>)],
    baseline: &str,
    start_height: u32,
    stop_height: u32,
) -> QuarterTable {
    let mut table = QuarterTable {
        start_height,
        end_heights: quarter_end_heights(start_height, stop_height),
        nodes: Vec::new(),
    };
    for (node, series) in nodes {
        let runs: Option<Vec<RunQuarters>> =
            series.iter().map(|run| run_quarters(run, start_height, stop_height)).collect();
        if let Some(quarters) = runs.and_then(|runs| node_quarters(node, &runs)) {
            table.nodes.push(quarters);
        }
    }
    let base =
        table.nodes.iter().find(|node| node.node == baseline).map(|node| node.within_seconds);
    for node in &mut table.nodes {
        for (index, ratio) in node.ratios.iter_mut().enumerate() {
            let within = &node.within_seconds[index];
            *ratio = if node.node == baseline {
                Some(Ratio { value: 1.0, uncertainty: within.standard_deviation.map(|_| 0.0) })
            } else {
                base.and_then(|base| ratio_of_means(within, &base[index]))
            };
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::parse::TipPoint;

    /// A run logging its first line at 0, its genesis tip at `genesis_s`,
    /// block 1 at `first_s`, then block `h` at `first_s + (h - 1) x
    /// per_block_s`, to `height`.
    fn run(genesis_s: i64, first_s: i64, per_block_s: i64, height: u32) -> RunSeries {
        let tip = |elapsed_s: i64, height: u32| TipPoint {
            elapsed_micros: elapsed_s * 1_000_000,
            height,
            transaction_count: 0,
            cache_mebibytes: 0.0,
            cache_coin_count: 0,
        };
        let mut points = vec![tip(genesis_s, 0)];
        points.extend((1..=height).map(|h| tip(first_s + i64::from(h - 1) * per_block_s, h)));
        RunSeries { name: "run".to_owned(), points, ..RunSeries::default() }
    }

    #[test]
    fn cuts_the_heights_into_four_quarters() {
        assert_eq!(quarter_end_heights(0, 2_000), [500, 1_000, 1_500, 2_000]);
        assert_eq!(quarter_end_heights(0, 201), [50, 100, 150, 201]);
        assert_eq!(quarter_end_heights(100, 200), [125, 150, 175, 200]);
        assert_eq!(quarter_end_heights(0, 3), [0, 1, 2, 3]);
        assert_eq!(quarter_end_heights(5, 5), [5, 5, 5, 5]);
        assert_eq!(quarter_end_heights(0, u32::MAX)[3], u32::MAX);
    }

    #[test]
    fn times_each_quarter_from_the_start_and_from_the_first_block() {
        // Core-like: genesis at 1 s, block 1 at 21 s (indexing), 2 s a block.
        let core = run(1, 21, 2, 100);
        let quarters = run_quarters(&core, 0, 100).expect("reached 100");
        assert_eq!(quarters.first_block_micros, 21_000_000);
        // Block h at 21 + 2 (h - 1) s: heights 25, 50, 75, 100.
        assert_eq!(quarters.to_end_micros, [69, 119, 169, 219].map(|s| s * 1_000_000));
        assert_eq!(quarters.to_end_from_first_block_micros(0), 48_000_000);
        assert_eq!(quarters.to_end_from_first_block_micros(3), 198_000_000);
        // The first quarter from block 1: 24 blocks of 2 s.
        assert_eq!(quarters.within_micros, [48, 50, 50, 50].map(|s| s * 1_000_000));
        assert_eq!(run_quarters(&core, 0, 101), None, "never reached 101");
        assert_eq!(run_quarters(&core, 0, 3), None, "under a block a quarter");
    }

    #[test]
    fn averages_runs_and_divides_each_quarter_by_the_baselines() {
        let core = run(1, 21, 2, 100);
        // Ibex-like: no indexing, 1 s a block, then slower past height 50.
        let mut ibex = run(0, 1, 1, 100);
        for point in ibex.points.iter_mut().filter(|point| point.height > 50) {
            point.elapsed_micros += i64::from(point.height - 50) * 1_000_000;
        }
        let ibex_again = run(0, 1, 1, 100);
        let short = run(0, 1, 1, 60);
        let nodes = vec![
            ("core".to_owned(), vec![&core]),
            ("ibex".to_owned(), vec![&ibex, &ibex_again]),
            ("short".to_owned(), vec![&short]),
        ];
        let table = quarter_table(&nodes, "core", 0, 100);
        assert_eq!(table.end_heights, [25, 50, 75, 100]);
        assert_eq!((table.first_height(0), table.first_height(3)), (1, 76));
        assert_eq!(table.nodes.len(), 2, "the run stopping at 60 has no quarters");
        let ibex = &table.nodes[1];
        assert_eq!(ibex.node, "ibex");
        // Quarters of 24, 25, 25 and 25 blocks at 1 s, plus 25 s in the
        // last two quarters of the slow run: means 24, 25, 37.5, 37.5 s.
        let within: Vec<f64> = ibex.within_seconds.iter().map(|summary| summary.mean).collect();
        assert_eq!(within, [24.0, 25.0, 37.5, 37.5]);
        let ratios: Vec<f64> =
            ibex.ratios.iter().map(|ratio| ratio.expect("ratio").value).collect();
        assert_eq!(ratios, [0.5, 0.5, 0.75, 0.75]);
        // One core run: no deviation to propagate.
        assert_eq!(ibex.ratios[2].expect("ratio").uncertainty, None);
        assert_eq!(ibex.first_block_seconds.mean, 1.0);
        assert_eq!(ibex.to_end_seconds[3].mean, 125.0);
        assert_eq!(ibex.to_end_from_first_block_seconds[3].mean, 124.0);
        let core = &table.nodes[0];
        assert_eq!(core.ratios[0], Some(Ratio { value: 1.0, uncertainty: None }));
        assert_eq!(core.to_end_seconds[0].mean, 69.0);
        let without_baseline = quarter_table(&nodes[1..], "core", 0, 100);
        assert!(without_baseline.nodes.iter().all(|node| node.ratios == [None; 4]));
    }

    #[test]
    fn says_what_holding_the_first_quarters_ratio_asks_of_the_baseline() {
        // Core: 2 s a block throughout. Ibex: 0.2 s a block, then 0.5 s
        // past height 50 (block h at 1 + 0.2 (h - 1) s, plus 0.3 s a block
        // above 50), in tenths of a second.
        let core = run(1, 21, 2, 100);
        let mut ibex = run(0, 1, 1, 100);
        for point in &mut ibex.points {
            let height = i64::from(point.height);
            point.elapsed_micros = match point.height {
                0 => 0,
                _ => 1_000_000 + (height - 1) * 200_000 + (height - 50).max(0) * 300_000,
            };
        }
        let nodes = vec![("ibex".to_owned(), vec![&ibex]), ("core".to_owned(), vec![&core])];
        let table = quarter_table(&nodes, "ibex", 0, 100);
        // The first quarter times blocks 2-25 (24), the others 25 each.
        assert_eq!((table.timed_block_count(0), table.timed_block_count(3)), (24, 25));
        let per_block = |index| table.milliseconds_per_block(&table.nodes[0], index).expect("ms");
        assert!((per_block(0) - 200.0).abs() < 1e-9 && (per_block(3) - 500.0).abs() < 1e-9);
        let holds = table.ratio_holds("ibex");
        assert_eq!(holds.len(), 1, "one node besides the baseline");
        let hold = &holds[0];
        assert_eq!(hold.node, "core");
        assert!((hold.first_ratio - 10.0).abs() < 1e-9, "{hold:?}");
        assert!((hold.last_ratio - 4.0).abs() < 1e-9, "{hold:?}");
        // Core's 2,000 ms over the first ratio of 10: Ibex could have
        // taken 200 ms a block in the last quarter; it took 500.
        assert!((hold.baseline_last_milliseconds_max - 200.0).abs() < 1e-9, "{hold:?}");
        assert!(!hold.held());
        assert!(table.ratio_holds("absent").is_empty(), "no baseline, nothing to hold");
        // A steady pair holds its ratio.
        let steady = run(0, 1, 1, 100);
        let nodes = vec![("ibex".to_owned(), vec![&steady]), ("core".to_owned(), vec![&core])];
        let table = quarter_table(&nodes, "ibex", 0, 100);
        assert!(table.ratio_holds("ibex")[0].held());
    }
}
