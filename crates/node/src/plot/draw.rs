//! Drawing the runs as SVG charts with `plotters`.
//!
//! SVG only: plotters' bitmap backend rasterises text itself and so needs a
//! font library (`ttf`: font-kit and the system's fontconfig) or a font file
//! shipped with the program (`ab_glyph`); without either it panics on the
//! first label. SVG leaves the text to the viewer, builds from crates.io
//! alone, and converts to PNG with any SVG tool (`rsvg-convert`, a browser).

use std::error::Error;
use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::metrics::{
    format_duration, rate_window_blocks, rates, speedups, thin, time_unit, RatePoint,
    MICROS_PER_HOUR,
};
use super::parse::RunSeries;

/// The most points drawn per series: enough for a smooth line on a
/// 1,200-pixel-wide chart, small enough to keep a mainnet SVG under a few MB.
pub const SERIES_POINTS_MAX: usize = 3_000;
/// Chart size in pixels.
const CHART_SIZE_PIXELS: (u32, u32) = (1_200, 700);
/// The three-panel rates chart's size in pixels.
const RATES_SIZE_PIXELS: (u32, u32) = (1_200, 1_500);

/// Tick labels' and legends' font.
const LABEL_FONT: (&str, u32) = ("sans-serif", 16);
/// Axis descriptions' font.
const AXIS_FONT: (&str, u32) = ("sans-serif", 18);

/// The error a chart's drawing gives.
pub type DrawResult = Result<(), Box<dyn Error + Send + Sync>>;

/// The top of an axis showing `values`: 5 % above the largest, 1 if none is
/// above zero.
fn axis_max(values: impl Iterator<Item = f64>) -> f64 {
    let max = values.filter(|value| value.is_finite()).fold(0.0, f64::max);
    if max > 0.0 {
        max * 1.05
    } else {
        1.0
    }
}

/// The height axis's range over all runs.
fn height_range(runs: &[RunSeries]) -> std::ops::Range<f64> {
    let low = runs.iter().filter_map(|run| run.points.first()).map(|point| point.height);
    let low = f64::from(low.min().unwrap_or(0));
    let high = runs.iter().filter_map(RunSeries::final_point).map(|point| point.height);
    let high = f64::from(high.max().unwrap_or(0));
    low..high.max(low + 1.0)
}

fn legend_line(color: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
}

/// A height tick's label, without decimals.
fn format_height(height: &f64) -> String {
    format!("{height:.0}")
}

/// The run's color, the same in every chart.
fn color(index: usize) -> RGBColor {
    let (red, green, blue) = Palette99::pick(index).rgb();
    RGBColor(red, green, blue)
}

/// Sync time by height: elapsed time against height (in seconds, minutes
/// or hours, as the longest run suits), one line per run, the final time
/// in the legend.
pub fn draw_sync_time(path: &Path, runs: &[RunSeries]) -> DrawResult {
    let root = SVGBackend::new(path, CHART_SIZE_PIXELS).into_drawing_area();
    root.fill(&WHITE)?;
    let longest_micros =
        runs.iter().flat_map(|run| run.final_point()).map(|point| point.elapsed_micros).max();
    let (unit_micros, unit_name) = time_unit(longest_micros.unwrap_or(0));
    let in_unit = |micros: i64| micros as f64 / unit_micros;
    let time_max = axis_max(
        runs.iter().flat_map(|run| run.final_point()).map(|point| in_unit(point.elapsed_micros)),
    );
    let mut chart = ChartBuilder::on(&root)
        .caption("IBD: sync time by block height", ("sans-serif", 26))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(height_range(runs), 0.0..time_max)?;
    chart
        .configure_mesh()
        .label_style(LABEL_FONT)
        .axis_desc_style(AXIS_FONT)
        .x_label_formatter(&format_height)
        .x_desc("block height")
        .y_desc(format!("elapsed {unit_name}"))
        .draw()?;
    for (index, run) in runs.iter().enumerate() {
        let final_time = format_duration(run.final_point().map_or(0, |point| point.elapsed_micros));
        let line = thin(&run.points, SERIES_POINTS_MAX)
            .into_iter()
            .map(|point| (f64::from(point.height), in_unit(point.elapsed_micros)));
        chart
            .draw_series(LineSeries::new(line, color(index).stroke_width(2)))?
            .label(format!("{} ({final_time})", run.name))
            .legend(legend_line(color(index)));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
    root.present()?;
    Ok(())
}

/// Speed-up over the baseline as each run goes: baseline time / run time at
/// each height both reached, against the run's elapsed hours.
pub fn draw_speedup(path: &Path, runs: &[RunSeries], baseline: &RunSeries) -> DrawResult {
    let root = SVGBackend::new(path, CHART_SIZE_PIXELS).into_drawing_area();
    root.fill(&WHITE)?;
    let others: Vec<(usize, &RunSeries)> =
        runs.iter().enumerate().filter(|(_, run)| run.name != baseline.name).collect();
    let curves: Vec<Vec<(f64, f64)>> =
        others.iter().map(|(_, run)| thin(&speedups(run, baseline), SERIES_POINTS_MAX)).collect();
    let longest_hours = curves.iter().flatten().map(|&(hours, _)| hours).fold(0.0, f64::max);
    let (unit_micros, unit_name) = time_unit((longest_hours * MICROS_PER_HOUR) as i64);
    let to_unit = MICROS_PER_HOUR / unit_micros;
    let curves: Vec<Vec<(f64, f64)>> = curves
        .into_iter()
        .map(|curve| curve.into_iter().map(|(hours, ratio)| (hours * to_unit, ratio)).collect())
        .collect();
    let hours_max = axis_max(curves.iter().flatten().map(|&(time, _)| time));
    let ratio_max = axis_max(curves.iter().flatten().map(|&(_, ratio)| ratio).chain([1.0]));
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("IBD: speed-up over {}", baseline.name), ("sans-serif", 26))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..hours_max, 0.0..ratio_max)?;
    chart
        .configure_mesh()
        .label_style(LABEL_FONT)
        .axis_desc_style(AXIS_FONT)
        .x_desc(format!("elapsed {unit_name} of the run"))
        .y_desc(format!("{} time / run time at the same height", baseline.name))
        .draw()?;
    chart.draw_series(LineSeries::new([(0.0, 1.0), (hours_max, 1.0)], BLACK.mix(0.4)))?;
    for ((index, run), curve) in others.iter().zip(curves) {
        chart
            .draw_series(LineSeries::new(curve, color(*index).stroke_width(2)))?
            .label(run.name.as_str())
            .legend(legend_line(color(*index)));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    root.present()?;
    Ok(())
}

/// Three panels against height: blocks/s and transactions/s (smoothed over
/// [`rate_window_blocks`] of each run's final height), and the UTXO cache
/// size with each flush marked by a cross.
pub fn draw_rates(path: &Path, runs: &[RunSeries]) -> DrawResult {
    let root = SVGBackend::new(path, RATES_SIZE_PIXELS).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((3, 1));
    let rate_series: Vec<Vec<RatePoint>> = runs
        .iter()
        .map(|run| {
            let window = rate_window_blocks(run.final_point().map_or(0, |point| point.height));
            thin(&rates(&run.points, window), SERIES_POINTS_MAX)
        })
        .collect();
    if let [blocks_panel, transactions_panel, cache_panel] = panels.as_slice() {
        let blocks = |point: &RatePoint| point.blocks_per_second;
        draw_rate_panel(blocks_panel, runs, &rate_series, "blocks/s", blocks)?;
        let transactions = |point: &RatePoint| point.transactions_per_second;
        draw_rate_panel(transactions_panel, runs, &rate_series, "transactions/s", transactions)?;
        draw_cache_panel(cache_panel, runs)?;
    }
    root.present()?;
    Ok(())
}

fn draw_rate_panel(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    runs: &[RunSeries],
    rate_series: &[Vec<RatePoint>],
    unit: &str,
    value: impl Fn(&RatePoint) -> f64,
) -> DrawResult {
    let value_max = axis_max(rate_series.iter().flatten().map(&value));
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{unit} by height (moving window)"), ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(height_range(runs), 0.0..value_max)?;
    chart
        .configure_mesh()
        .label_style(LABEL_FONT)
        .axis_desc_style(AXIS_FONT)
        .x_label_formatter(&format_height)
        .x_desc("block height")
        .y_desc(unit)
        .draw()?;
    for (index, (run, points)) in runs.iter().zip(rate_series).enumerate() {
        let line = points.iter().map(|point| (f64::from(point.height), value(point)));
        chart
            .draw_series(LineSeries::new(line, color(index).stroke_width(2)))?
            .label(run.name.as_str())
            .legend(legend_line(color(index)));
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)
}

fn draw_cache_panel(area: &DrawingArea<SVGBackend<'_>, Shift>, runs: &[RunSeries]) -> DrawResult {
    let cache_max =
        axis_max(runs.iter().flat_map(|run| &run.points).map(|point| point.cache_mebibytes));
    let mut chart = ChartBuilder::on(area)
        .caption("UTXO cache size by height (x: flush)", ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(80)
        .build_cartesian_2d(height_range(runs), 0.0..cache_max)?;
    chart
        .configure_mesh()
        .label_style(LABEL_FONT)
        .axis_desc_style(AXIS_FONT)
        .x_label_formatter(&format_height)
        .x_desc("block height")
        .y_desc("cache MiB")
        .draw()?;
    for (index, run) in runs.iter().enumerate() {
        let line = thin(&run.points, SERIES_POINTS_MAX)
            .into_iter()
            .map(|point| (f64::from(point.height), point.cache_mebibytes));
        chart
            .draw_series(LineSeries::new(line, color(index).stroke_width(2)))?
            .label(format!("{} ({} flushes)", run.name, run.flushes.len()))
            .legend(legend_line(color(index)));
        // A flush is marked at the cache size of the tip it followed.
        let marks = thin(&run.flushes, SERIES_POINTS_MAX).into_iter().filter_map(|flush| {
            let at = run.points.partition_point(|point| point.height < flush.height);
            let point = run.points.get(at)?;
            Some(Cross::new((f64::from(flush.height), point.cache_mebibytes), 5, color(index)))
        });
        chart.draw_series(marks)?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)
}

fn draw_legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    position: SeriesLabelPosition,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(position)
        .label_font(LABEL_FONT)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
