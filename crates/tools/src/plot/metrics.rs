//! Figures derived from parsed runs: smoothed rates, speed-up against a
//! baseline, time to each tenth of the final height, the CSV and the text
//! summary.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::parse::{RunSeries, TipPoint};

/// Microseconds in one second.
pub const MICROS_PER_SECOND: f64 = 1_000_000.0;
/// Microseconds in one hour.
pub const MICROS_PER_HOUR: f64 = 3_600.0 * MICROS_PER_SECOND;
/// The widest window the rates are smoothed over, in blocks.
pub const RATE_WINDOW_BLOCKS_MAX: u32 = 1_000;
/// The share of the final height a rate window covers, in percent (so short
/// test chains still get a useful window).
pub const RATE_WINDOW_PERCENT_OF_HEIGHT: u32 = 1;

/// Hours from microseconds.
pub fn hours(elapsed_micros: i64) -> f64 {
    elapsed_micros as f64 / MICROS_PER_HOUR
}

/// Microseconds as seconds in the shortest exact decimal form (`12`,
/// `12.5`, `0.000001`).
pub fn format_seconds(elapsed_micros: i64) -> String {
    let whole = elapsed_micros.div_euclid(1_000_000);
    let fraction = elapsed_micros.rem_euclid(1_000_000);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:06}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// A run's length for a legend: seconds under two minutes, minutes under
/// two hours, hours beyond (`32.5 s`, `12.3 min`, `7.41 h`).
pub fn format_duration(elapsed_micros: i64) -> String {
    let seconds = elapsed_micros as f64 / MICROS_PER_SECOND;
    if seconds < 120.0 {
        format!("{seconds:.1} s")
    } else if seconds < 7_200.0 {
        format!("{:.1} min", seconds / 60.0)
    } else {
        format!("{:.2} h", seconds / 3_600.0)
    }
}

/// The unit a chart's time axis uses, chosen from its longest time as
/// [`format_duration`] chooses: `(microseconds per unit, unit name)`.
pub fn time_unit(longest_micros: i64) -> (f64, &'static str) {
    let seconds = longest_micros as f64 / MICROS_PER_SECOND;
    if seconds < 120.0 {
        (MICROS_PER_SECOND, "seconds")
    } else if seconds < 7_200.0 {
        (60.0 * MICROS_PER_SECOND, "minutes")
    } else {
        (MICROS_PER_HOUR, "hours")
    }
}

/// The smoothing window for a run ending at `final_height`, in blocks:
/// [`RATE_WINDOW_PERCENT_OF_HEIGHT`] % of the height, at least 1 and at
/// most [`RATE_WINDOW_BLOCKS_MAX`].
pub fn rate_window_blocks(final_height: u32) -> u32 {
    (final_height / 100 * RATE_WINDOW_PERCENT_OF_HEIGHT).clamp(1, RATE_WINDOW_BLOCKS_MAX)
}

/// Throughput at one height, averaged over the window ending there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RatePoint {
    /// The height at the window's end.
    pub height: u32,
    /// Blocks connected per second over the window.
    pub blocks_per_second: f64,
    /// Transactions connected per second over the window.
    pub transactions_per_second: f64,
}

/// The shortest time a rate window spans when the log's timestamps are
/// whole seconds (no `-logtimemicros`), in microseconds: over a few seconds
/// the one-second steps would make a 12-block window read 4, 6 or 12
/// blocks/s; over 30 s they move a rate by at most ~3 %.
pub const COARSE_RATE_WINDOW_MICROS_MIN: i64 = 30_000_000;

/// Whether every tip of `points` was logged at a whole second after the
/// first (a log without `-logtimemicros`).
fn has_whole_second_timestamps(points: &[TipPoint]) -> bool {
    points.iter().all(|point| point.elapsed_micros % 1_000_000 == 0)
}

/// Blocks/s and transactions/s at each tip, each over the window from the
/// last tip at or below `window_blocks` blocks earlier, or, in a log with
/// whole-second timestamps, from further back if that spans less than
/// [`COARSE_RATE_WINDOW_MICROS_MIN`]. Tips whose window spans no time are
/// left out.
pub fn rates(points: &[TipPoint], window_blocks: u32) -> Vec<RatePoint> {
    let time_span_min_micros =
        if has_whole_second_timestamps(points) { COARSE_RATE_WINDOW_MICROS_MIN } else { 0 };
    let mut result = Vec::new();
    let (mut height_start_index, mut time_start_index) = (0, 0);
    for point in points {
        let window_start = point.height.saturating_sub(window_blocks);
        // The window starts at the last tip at or below `window_start`...
        while points.get(height_start_index + 1).is_some_and(|next| next.height <= window_start) {
            height_start_index += 1;
        }
        // ...or at the last tip at least the shortest span earlier, if
        // that is further back.
        let time_start = point.elapsed_micros - time_span_min_micros;
        while points.get(time_start_index + 1).is_some_and(|next| next.elapsed_micros <= time_start)
        {
            time_start_index += 1;
        }
        let Some(start) = points.get(height_start_index.min(time_start_index)) else {
            continue;
        };
        let duration_micros = point.elapsed_micros - start.elapsed_micros;
        if duration_micros <= 0 || point.height <= start.height {
            continue;
        }
        let seconds = duration_micros as f64 / MICROS_PER_SECOND;
        result.push(RatePoint {
            height: point.height,
            blocks_per_second: f64::from(point.height - start.height) / seconds,
            transactions_per_second: point.transaction_count.saturating_sub(start.transaction_count)
                as f64
                / seconds,
        });
    }
    result
}

/// Every `n`-th item and the last, so at most about `count_max` remain (a
/// mainnet run has 900,000 tips; an SVG needs a few thousand).
pub fn thin<T: Copy>(items: &[T], count_max: usize) -> Vec<T> {
    let step = items.len().div_ceil(count_max.max(1)).max(1);
    let mut thinned: Vec<T> = items.iter().step_by(step).copied().collect();
    if items.len() % step != 1 && step > 1 {
        thinned.extend(items.last().copied());
    }
    thinned
}

/// The speed-up of `run` over `baseline` as the run goes: at each of the
/// run's tips up to the baseline's final height, (run hours, baseline time to
/// that height / run time to it).
pub fn speedups(run: &RunSeries, baseline: &RunSeries) -> Vec<(f64, f64)> {
    let baseline_height = baseline.final_point().map_or(0, |point| point.height);
    run.points
        .iter()
        .take_while(|point| point.height <= baseline_height)
        .filter(|point| point.elapsed_micros > 0)
        .filter_map(|point| {
            let baseline_micros = baseline.elapsed_micros_at(point.height)?;
            let ratio = baseline_micros as f64 / point.elapsed_micros as f64;
            Some((hours(point.elapsed_micros), ratio))
        })
        .collect()
}

/// The speed-up at the highest height both runs reached: (height, baseline
/// time / run time).
pub fn final_speedup(run: &RunSeries, baseline: &RunSeries) -> Option<(u32, f64)> {
    let height = run.final_point()?.height.min(baseline.final_point()?.height);
    let run_micros = run.elapsed_micros_at(height)?;
    let baseline_micros = baseline.elapsed_micros_at(height)?;
    (run_micros > 0).then(|| (height, baseline_micros as f64 / run_micros as f64))
}

/// Time to each tenth of the way from the first plotted height to the final
/// one (of the final height for a run from genesis): (percent, height,
/// microseconds).
pub fn milestones(run: &RunSeries) -> Vec<(u32, u32, i64)> {
    let Some(last) = run.final_point() else {
        return Vec::new();
    };
    let first_height = run.points.first().map_or(0, |point| point.height);
    (1..=10)
        .filter_map(|tenth| {
            let span = u64::from(last.height - first_height) * tenth / 10;
            let height = first_height + u32::try_from(span).ok()?;
            Some((tenth as u32 * 10, height, run.elapsed_micros_at(height)?))
        })
        .collect()
}

/// Writes the runs as the seed visualizer reads them: one line per run,
/// `name,elapsed_seconds:height,...`, no header.
pub fn write_csv<W: Write>(runs: &[RunSeries], mut writer: W) -> io::Result<()> {
    for run in runs {
        write!(writer, "{}", run.name)?;
        for point in &run.points {
            write!(writer, ",{}:{}", format_seconds(point.elapsed_micros), point.height)?;
        }
        writeln!(writer)?;
    }
    writer.flush()
}

/// The text summary: per run, the final height and time, time to each 10 %
/// of the final height, and the ratio to the baseline at the end.
pub fn summary(runs: &[RunSeries], baseline: Option<&RunSeries>) -> String {
    let mut text = String::new();
    for run in runs {
        let Some(last) = run.final_point() else {
            continue;
        };
        let _ = writeln!(
            text,
            "{}: height {} in {:.3} h ({} s), {} tips, {} flushes, {} repeated tips (reorgs), {} lines skipped",
            run.name,
            last.height,
            hours(last.elapsed_micros),
            format_seconds(last.elapsed_micros),
            run.points.len(),
            run.flushes.len(),
            run.repeated_tip_count,
            run.skipped_line_count,
        );
        for (percent, height, elapsed_micros) in milestones(run) {
            let _ = writeln!(
                text,
                "  {percent:>3} %  height {height:>9}  {:>10.3} h  {:>12} s",
                hours(elapsed_micros),
                format_seconds(elapsed_micros)
            );
        }
        if let Some(baseline) = baseline.filter(|baseline| baseline.name != run.name) {
            if let Some((height, ratio)) = final_speedup(run, baseline) {
                let _ = writeln!(
                    text,
                    "  speed-up over {} at height {height}: {ratio:.3}x",
                    baseline.name
                );
            }
        }
    }
    text.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, points: &[(i64, u32, u64)]) -> RunSeries {
        RunSeries {
            name: name.to_owned(),
            points: points
                .iter()
                .map(|&(seconds, height, transaction_count)| TipPoint {
                    elapsed_micros: seconds * 1_000_000,
                    height,
                    transaction_count,
                    cache_mebibytes: 0.0,
                    cache_coin_count: 0,
                })
                .collect(),
            ..RunSeries::default()
        }
    }

    #[test]
    fn formats_seconds_exactly() {
        assert_eq!(format_seconds(0), "0");
        assert_eq!(format_seconds(12_000_000), "12");
        assert_eq!(format_seconds(12_500_000), "12.5");
        assert_eq!(format_seconds(1), "0.000001");
    }

    #[test]
    fn rates_are_averaged_over_the_window() {
        let mut series = run("a", &[(0, 0, 1), (10, 10, 101), (20, 20, 301), (20, 21, 302)]);
        // A microsecond log: no shortest time span.
        series.points[3].elapsed_micros += 1;
        let points = rates(&series.points, 10);
        assert_eq!(points.len(), 3);
        assert_eq!(
            points[0],
            RatePoint { height: 10, blocks_per_second: 1.0, transactions_per_second: 10.0 }
        );
        assert_eq!(points[1].transactions_per_second, 20.0);
        assert_eq!(points[2].height, 21);
        assert!((points[2].blocks_per_second - 11.0 / 10.000001).abs() < 1e-9);
        assert_eq!(rate_window_blocks(50), 1);
        assert_eq!(rate_window_blocks(50_000), 500);
        assert_eq!(rate_window_blocks(900_000), 1_000);
    }

    #[test]
    fn whole_second_logs_are_averaged_over_at_least_thirty_seconds() {
        // One block a second for 60 s, logged in whole seconds; tips 1 s
        // apart, with the odd-numbered ones at the same second as the next.
        let tips: Vec<(i64, u32, u64)> =
            (0..=60u32).map(|height| (i64::from(height / 2 * 2), height, 0)).collect();
        let series = run("coarse", &tips);
        let points = rates(&series.points, 2);
        // A 2-block window would read 2 or 0 (left out) blocks/s; once 30 s
        // have passed, the 30 s span reads 1 within the steps' 1/30.
        let settled = points.iter().filter(|point| point.height >= 30);
        assert!(settled.clone().count() == 31, "{points:?}");
        assert!(settled.into_iter().all(|point| (point.blocks_per_second - 1.0).abs() < 0.04));
        assert_eq!(points.last().map(|point| point.height), Some(60));
    }

    #[test]
    fn durations_in_readable_units() {
        assert_eq!(format_duration(32_481_000), "32.5 s");
        assert_eq!(format_duration(264_941_000), "4.4 min");
        assert_eq!(format_duration(26_676_000_000), "7.41 h");
        assert_eq!(time_unit(32_481_000), (1_000_000.0, "seconds"));
        assert_eq!(time_unit(264_941_000).1, "minutes");
        assert_eq!(time_unit(26_676_000_000).1, "hours");
    }

    #[test]
    fn thins_keeping_the_last() {
        let items: Vec<u32> = (0..10).collect();
        assert_eq!(thin(&items, 4), [0, 3, 6, 9]);
        assert_eq!(thin(&items, 3), [0, 4, 8, 9]);
        assert_eq!(thin(&items, 100), items);
    }

    #[test]
    fn speedup_and_milestones_against_a_baseline() {
        let baseline = run("core", &[(0, 0, 1), (100, 50, 1), (200, 100, 1)]);
        let fast = run("ibex", &[(0, 0, 1), (25, 50, 1), (50, 100, 1), (60, 110, 1)]);
        assert_eq!(
            speedups(&fast, &baseline),
            [(hours(25_000_000), 4.0), (hours(50_000_000), 4.0)]
        );
        assert_eq!(final_speedup(&fast, &baseline), Some((100, 4.0)));
        let tenths = milestones(&baseline);
        assert_eq!(tenths.len(), 10);
        assert_eq!(tenths[0], (10, 10, 100_000_000));
        assert_eq!(tenths[9], (100, 100, 200_000_000));
        let text = summary(&[baseline.clone(), fast], Some(&baseline));
        assert!(text.contains("ibex: height 110"), "{text}");
        assert!(text.contains("speed-up over core at height 100: 4.000x"), "{text}");
    }

    #[test]
    fn writes_one_csv_line_per_run() {
        let runs = [run("a", &[(0, 0, 1), (2, 1, 2)]), run("b", &[(1, 5, 1)])];
        let mut bytes = Vec::new();
        write_csv(&runs, &mut bytes).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), "a,0:0,2:1\nb,1:5\n");
    }
}
