//! Drawing the runs as charts with `plotters`, on any backend: SVG, and PNG
//! when a font is found ([`super::output`], [`super::font`]). The legends
//! are drawn here rather than by plotters' series labels, which measure
//! their text with the font directly; these measure through the backend,
//! so an SVG chart needs no font.

use std::error::Error;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::cost_growth::{CostGrowth, LinearFit, COINS_PER_MILLION};
use super::metrics::{
    format_duration, rate_window_blocks, rates, speedups, thin, time_unit, RatePoint,
    MICROS_PER_HOUR,
};
use super::parse::RunSeries;

/// A chart `ibex plot` draws.
#[derive(Debug, Clone, Copy)]
pub enum Chart<'a> {
    /// Sync time by height ([`draw_sync_time`]).
    SyncTime(&'a [RunSeries]),
    /// Speed-up over the baseline, the second field ([`draw_speedup`]).
    Speedup(&'a [RunSeries], &'a RunSeries),
    /// Rates and cache by height ([`draw_rates`]).
    Rates(&'a [RunSeries]),
    /// Time per block against the UTXO set's size ([`draw_cost_growth`]).
    CostGrowth(&'a CostGrowth),
}

impl Chart<'_> {
    /// The chart's name in its file names (`PREFIX-NAME.svg`).
    pub fn name(&self) -> &'static str {
        match self {
            Chart::SyncTime(_) => "sync-time",
            Chart::Speedup(..) => "speedup",
            Chart::Rates(_) => "rates",
            Chart::CostGrowth(_) => "cost-growth",
        }
    }

    /// Its size in pixels.
    pub fn size_pixels(&self) -> (u32, u32) {
        match self {
            Chart::Rates(_) => RATES_SIZE_PIXELS,
            _ => CHART_SIZE_PIXELS,
        }
    }

    /// Draws it on `root` (already filled, presented by the caller).
    pub fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        match self {
            Chart::SyncTime(runs) => draw_sync_time(root, runs),
            Chart::Speedup(runs, baseline) => draw_speedup(root, runs, baseline),
            Chart::Rates(runs) => draw_rates(root, runs),
            Chart::CostGrowth(growth) => draw_cost_growth(root, growth),
        }
    }
}

/// The most points drawn per series: enough for a smooth line on a
/// 1,200-pixel-wide chart, small enough to keep a mainnet SVG under a few MB.
pub const SERIES_POINTS_MAX: usize = 3_000;
/// Chart size in pixels.
pub const CHART_SIZE_PIXELS: (u32, u32) = (1_200, 700);
/// The three-panel rates chart's size in pixels.
pub const RATES_SIZE_PIXELS: (u32, u32) = (1_200, 1_500);

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

/// A height tick's label, without decimals.
fn format_height(height: &f64) -> String {
    format!("{height:.0}")
}

/// The run's color, the same in every chart.
fn color(index: usize) -> RGBColor {
    let (red, green, blue) = Palette99::pick(index).rgb();
    RGBColor(red, green, blue)
}

/// A legend's corner of the plotting area.
#[derive(Debug, Clone, Copy)]
enum Corner {
    UpperLeft,
    UpperRight,
}

/// Sync time by height: elapsed time against height (in seconds, minutes
/// or hours, as the longest run suits), one line per run, the final time
/// in the legend.
pub fn draw_sync_time<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    runs: &[RunSeries],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let longest_micros =
        runs.iter().flat_map(|run| run.final_point()).map(|point| point.elapsed_micros).max();
    let (unit_micros, unit_name) = time_unit(longest_micros.unwrap_or(0));
    let in_unit = |micros: i64| micros as f64 / unit_micros;
    let time_max = axis_max(
        runs.iter().flat_map(|run| run.final_point()).map(|point| in_unit(point.elapsed_micros)),
    );
    let mut chart = ChartBuilder::on(root)
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
    let mut legend = Vec::with_capacity(runs.len());
    for (index, run) in runs.iter().enumerate() {
        let final_time = format_duration(run.final_point().map_or(0, |point| point.elapsed_micros));
        let line = thin(&run.points, SERIES_POINTS_MAX)
            .into_iter()
            .map(|point| (f64::from(point.height), in_unit(point.elapsed_micros)));
        chart.draw_series(LineSeries::new(line, color(index).stroke_width(2)))?;
        legend.push((format!("{} ({final_time})", run.name), color(index)));
    }
    draw_legend(&chart.plotting_area().strip_coord_spec(), &legend, Corner::UpperLeft)
}

/// Speed-up over the baseline as each run goes: baseline time / run time at
/// each height both reached, against the run's elapsed hours.
pub fn draw_speedup<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    runs: &[RunSeries],
    baseline: &RunSeries,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
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
    let mut chart = ChartBuilder::on(root)
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
    let mut legend = Vec::with_capacity(others.len());
    for ((index, run), curve) in others.iter().zip(curves) {
        chart.draw_series(LineSeries::new(curve, color(*index).stroke_width(2)))?;
        legend.push((run.name.clone(), color(*index)));
    }
    draw_legend(&chart.plotting_area().strip_coord_spec(), &legend, Corner::UpperRight)
}

/// Three panels against height: blocks/s and transactions/s (smoothed over
/// [`rate_window_blocks`] of each run's final height), and the UTXO cache
/// size with each flush marked by a cross.
pub fn draw_rates<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    runs: &[RunSeries],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
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
    Ok(())
}

fn draw_rate_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[RunSeries],
    rate_series: &[Vec<RatePoint>],
    unit: &str,
    value: impl Fn(&RatePoint) -> f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
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
    let mut legend = Vec::with_capacity(runs.len());
    for (index, (run, points)) in runs.iter().zip(rate_series).enumerate() {
        let line = points.iter().map(|point| (f64::from(point.height), value(point)));
        chart.draw_series(LineSeries::new(line, color(index).stroke_width(2)))?;
        legend.push((run.name.clone(), color(index)));
    }
    draw_legend(&chart.plotting_area().strip_coord_spec(), &legend, Corner::UpperRight)
}

fn draw_cache_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    runs: &[RunSeries],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
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
    let mut legend = Vec::with_capacity(runs.len());
    for (index, run) in runs.iter().enumerate() {
        let line = thin(&run.points, SERIES_POINTS_MAX)
            .into_iter()
            .map(|point| (f64::from(point.height), point.cache_mebibytes));
        chart.draw_series(LineSeries::new(line, color(index).stroke_width(2)))?;
        legend.push((format!("{} ({} flushes)", run.name, run.flushes.len()), color(index)));
        // A flush is marked at the cache size of the tip it followed.
        let marks = thin(&run.flushes, SERIES_POINTS_MAX).into_iter().filter_map(|flush| {
            let at = run.points.partition_point(|point| point.height < flush.height);
            let point = run.points.get(at)?;
            Some(Cross::new((f64::from(flush.height), point.cache_mebibytes), 5, color(index)))
        });
        chart.draw_series(marks)?;
    }
    draw_legend(&chart.plotting_area().strip_coord_spec(), &legend, Corner::UpperLeft)
}

/// Milliseconds per block against the UTXO set's size, one line per run
/// through its windows, and its least-squares line dashed in a lighter
/// shade; the legend gives each line's intercept and slope.
pub fn draw_cost_growth<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    growth: &CostGrowth,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let windows = growth.runs.iter().flat_map(|run| &run.windows);
    let millions_max =
        axis_max(windows.clone().map(|window| window.utxo_count / COINS_PER_MILLION));
    let milliseconds_max = axis_max(windows.map(|window| window.milliseconds_per_block));
    let mut chart = ChartBuilder::on(root)
        .caption(
            format!(
                "IBD: time per block against the UTXO set's size ({}-block windows)",
                growth.window_blocks
            ),
            ("sans-serif", 26),
        )
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..millions_max, 0.0..milliseconds_max)?;
    chart
        .configure_mesh()
        .label_style(LABEL_FONT)
        .axis_desc_style(AXIS_FONT)
        .x_desc("UTXO set size (millions of coins)")
        .y_desc("milliseconds per block")
        .draw()?;
    let mut legend = Vec::with_capacity(growth.runs.len());
    for (index, run) in growth.runs.iter().enumerate() {
        let points = thin(&run.windows, SERIES_POINTS_MAX)
            .into_iter()
            .map(|window| (window.utxo_count / COINS_PER_MILLION, window.milliseconds_per_block));
        chart.draw_series(LineSeries::new(points, color(index).stroke_width(2)))?;
        let Some(fit) = run.fit else {
            legend.push((run.name.clone(), color(index)));
            continue;
        };
        if let Some(line) = line_in_box(&fit, millions_max, milliseconds_max) {
            let style = color(index).mix(0.6).stroke_width(2);
            chart.draw_series(DashedLineSeries::new(line, 8, 6, style))?;
        }
        legend.push((
            format!(
                "{}: {:.1} ms + {:.2} ms per M coins",
                run.name, fit.intercept_milliseconds, fit.slope_milliseconds_per_million_coins
            ),
            color(index),
        ));
    }
    draw_legend(&chart.plotting_area().strip_coord_spec(), &legend, Corner::UpperLeft)
}

/// The part of `fit`'s line inside `0..millions_max` x `0..milliseconds_max`
/// (plotters does not clip a line to the plotting area), if any.
fn line_in_box(
    fit: &LinearFit,
    millions_max: f64,
    milliseconds_max: f64,
) -> Option<[(f64, f64); 2]> {
    let slope = fit.slope_milliseconds_per_million_coins;
    let intercept = fit.intercept_milliseconds;
    let (mut low, mut high) = (0.0, millions_max);
    if slope != 0.0 {
        // Where the line crosses the bottom and the top of the box.
        let bottom = -intercept / slope;
        let top = (milliseconds_max - intercept) / slope;
        low = f64::max(low, bottom.min(top));
        high = f64::min(high, bottom.max(top));
    } else if !(0.0..=milliseconds_max).contains(&intercept) {
        return None;
    }
    let at = |millions: f64| (millions, fit.milliseconds_per_block_at(millions));
    (low < high && low.is_finite() && high.is_finite()).then(|| [at(low), at(high)])
}

/// Pixels between a legend and the plotting area's edge, and around its
/// entries.
const LEGEND_PADDING_PIXELS: i32 = 10;
/// The length of a legend's line sample, in pixels.
const LEGEND_SAMPLE_PIXELS: i32 = 20;

/// A legend in `corner` of `area` (the plotting area in pixels): a framed
/// box with a line sample and the label of each entry, sized by the
/// backend's measure of the labels.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBColor)],
    corner: Corner,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    if entries.is_empty() {
        return Ok(());
    }
    let style = TextStyle::from(LABEL_FONT.into_font()).color(&BLACK);
    let mut text_width = 0i32;
    let mut line_height = 0i32;
    for (label, _) in entries {
        let (width, height) = area.estimate_text_size(label, &style)?;
        text_width = text_width.max(i32::try_from(width).unwrap_or(i32::MAX));
        line_height = line_height.max(i32::try_from(height).unwrap_or(0) + 6);
    }
    let padding = LEGEND_PADDING_PIXELS;
    let box_width = padding * 3 + LEGEND_SAMPLE_PIXELS + text_width;
    let box_height = padding * 2 + line_height * entries.len() as i32;
    let (area_width, _) = area.dim_in_pixel();
    let left = match corner {
        Corner::UpperLeft => padding,
        Corner::UpperRight => i32::try_from(area_width).unwrap_or(0) - padding - box_width,
    };
    let top = padding;
    let frame = [(left, top), (left + box_width, top + box_height)];
    area.draw(&Rectangle::new(frame, WHITE.mix(0.85).filled()))?;
    area.draw(&Rectangle::new(frame, BLACK))?;
    for (row, (label, color)) in entries.iter().enumerate() {
        let middle = top + padding + line_height * row as i32 + line_height / 2;
        let sample_left = left + padding;
        let sample = vec![(sample_left, middle), (sample_left + LEGEND_SAMPLE_PIXELS, middle)];
        area.draw(&PathElement::new(sample, color.stroke_width(2)))?;
        let anchor = Pos::new(HPos::Left, VPos::Center);
        let text_left = sample_left + LEGEND_SAMPLE_PIXELS + padding;
        area.draw_text(label, &style.pos(anchor), (text_left, middle))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(intercept: f64, slope: f64) -> LinearFit {
        LinearFit {
            slope_milliseconds_per_million_coins: slope,
            intercept_milliseconds: intercept,
            r_squared: None,
            window_count: 2,
        }
    }

    #[test]
    fn clips_a_fitted_line_to_the_chart() {
        assert_eq!(line_in_box(&fit(10.0, 2.0), 20.0, 100.0), Some([(0.0, 10.0), (20.0, 50.0)]));
        // Leaves through the top at 45 M coins.
        assert_eq!(line_in_box(&fit(10.0, 2.0), 60.0, 100.0), Some([(0.0, 10.0), (45.0, 100.0)]));
        // Enters through the bottom at 5 M coins.
        assert_eq!(line_in_box(&fit(-10.0, 2.0), 20.0, 100.0), Some([(5.0, 0.0), (20.0, 30.0)]));
        assert_eq!(line_in_box(&fit(50.0, -10.0), 20.0, 100.0), Some([(0.0, 50.0), (5.0, 0.0)]));
        assert_eq!(line_in_box(&fit(30.0, 0.0), 20.0, 100.0), Some([(0.0, 30.0), (20.0, 30.0)]));
        assert_eq!(line_in_box(&fit(130.0, 0.0), 20.0, 100.0), None);
        assert_eq!(line_in_box(&fit(130.0, 1.0), 20.0, 100.0), None);
    }
}
