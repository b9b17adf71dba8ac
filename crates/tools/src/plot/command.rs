//! The `ibex plot` subcommand: reads the logs, writes the charts and the
//! CSV, and returns the text summary.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use super::cost_growth::{
    cost_growth, cost_summary, read_utxo_counts, write_cost_csv, COST_WINDOW_BLOCKS_DEFAULT,
};
use super::draw::{Chart, DrawResult};
use super::font::{chart_font, FONT_VARIABLE};
use super::metrics::{summary, write_csv};
use super::output::{write_png, write_svg};
use super::parse::{read_series, ParseOptions, RunSeries};
use super::PlotError;

/// The read buffer per log, in bytes.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// `ibex plot`'s arguments.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "\
Writes PREFIX-sync-time.svg (elapsed hours by height, one line per run), \
PREFIX-speedup.svg (with --baseline: baseline time / run time at each height, \
against the run's hours), PREFIX-rates.svg (blocks/s and transactions/s by \
height over a moving window of 1 % of the final height, at most 1,000 blocks; \
UTXO cache MiB by height with flushes marked), each also as .png, and \
PREFIX.csv (one line per run: name,elapsed_seconds:height,...), and prints the \
time to each 10 % of the final height. With --utxo-counts MANIFEST (an ibex gen \
manifest.json with utxo_count_by_height): PREFIX-cost-growth.svg/.png \
(milliseconds per block over windows of --cost-window-blocks blocks against \
the UTXO set's size in millions of coins, one line per run, with its \
least-squares line), PREFIX-cost-growth.csv \
(run,first_height,last_height,utxo_count,milliseconds_per_block) and each \
run's line (intercept in ms/block, slope in ms per million coins) in the \
summary. PNG text needs a TrueType or OpenType \
font from the system: the file IBEX_PLOT_FONT names, else DejaVu Sans (Debian: \
fonts-dejavu-core) or another usual sans-serif font, else fontconfig's choice; \
without one, only SVG is written, and the summary says so. After a \
reorganisation each height keeps the time it was first reached.")]
pub struct PlotArguments {
    /// The logs (`debug.log` of Bitcoin Core or Ibex), each `PATH` or
    /// `NAME=PATH`; a run is named after its file (or, for `debug.log`,
    /// its directory) unless named.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<OsString>,
    /// The output files' prefix.
    #[arg(long, value_name = "PREFIX", default_value = "ibex-plot")]
    pub out: PathBuf,
    /// The run the speed-up is measured against.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Plot from this height on, timing each run from when it reached it.
    #[arg(long, value_name = "H", default_value_t = 0)]
    pub from_height: u32,
    /// Skip each log up to its first `Shutdown: done` (an earlier run).
    #[arg(long)]
    pub after_shutdown: bool,
    /// An `ibex gen` manifest (`utxo_count_by_height`): also chart the
    /// time per block against the UTXO set's size.
    #[arg(long, value_name = "MANIFEST")]
    pub utxo_counts: Option<PathBuf>,
    /// Blocks per window of the cost-growth chart.
    #[arg(long, value_name = "BLOCKS", default_value_t = COST_WINDOW_BLOCKS_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub cost_window_blocks: u32,
}

/// Splits `NAME=PATH`; a plain path (or one that exists with an `=` in it)
/// has no name.
pub fn split_log_argument(argument: &OsString) -> (Option<String>, PathBuf) {
    let path = PathBuf::from(argument);
    if path.exists() {
        return (None, path);
    }
    match argument.to_str().and_then(|text| text.split_once('=')) {
        Some((name, path)) if !name.is_empty() && !name.contains('/') => {
            (Some(name.to_owned()), PathBuf::from(path))
        }
        _ => (None, path),
    }
}

/// A run's default name: the file name without `.log`, or for `debug.log`
/// the directory holding it.
pub fn default_run_name(path: &Path) -> String {
    let stem = path.file_stem().map(|stem| stem.to_string_lossy().into_owned());
    let parent = path.parent().and_then(Path::file_name).map(|name| name.to_string_lossy());
    match (stem, parent) {
        (Some(stem), Some(parent)) if stem == "debug" => parent.into_owned(),
        (Some(stem), _) => stem,
        (None, _) => path.display().to_string(),
    }
}

/// `name`, or `name-2`, `name-3`, ... if taken.
fn unique_name(name: String, taken: &[RunSeries]) -> String {
    let is_taken = |candidate: &str| taken.iter().any(|run| run.name == candidate);
    if !is_taken(&name) {
        return name;
    }
    (2..)
        .map(|number| format!("{name}-{number}"))
        .find(|candidate| !is_taken(candidate))
        .unwrap_or(name)
}

/// Reads every log into a run.
pub fn read_runs(arguments: &PlotArguments) -> Result<Vec<RunSeries>, PlotError> {
    let options = ParseOptions {
        after_shutdown: arguments.after_shutdown,
        from_height: arguments.from_height,
    };
    let mut runs: Vec<RunSeries> = Vec::with_capacity(arguments.logs.len());
    for argument in &arguments.logs {
        let (name, path) = split_log_argument(argument);
        let name = unique_name(name.unwrap_or_else(|| default_run_name(&path)), &runs);
        let read_error = |source| PlotError::Read { path: path.clone(), source };
        let file = File::open(&path).map_err(read_error)?;
        let reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
        let run = read_series(&name, reader, options).map_err(read_error)?;
        if run.points.is_empty() {
            return Err(PlotError::NoTips { path });
        }
        runs.push(run);
    }
    Ok(runs)
}

/// `PREFIX` followed by `suffix`.
fn output_path(prefix: &Path, suffix: &str) -> PathBuf {
    let mut path = prefix.as_os_str().to_owned();
    path.push(suffix);
    PathBuf::from(path)
}

fn drawn(path: PathBuf, result: DrawResult) -> Result<PathBuf, PlotError> {
    result.map(|()| path.clone()).map_err(|source| PlotError::Draw { path, source })
}

/// Writes `chart` as `PREFIX-NAME.svg` and, with a font, `.png`; returns
/// the files written.
fn write_chart(
    prefix: &Path,
    chart: &Chart<'_>,
    with_font: bool,
) -> Result<Vec<PathBuf>, PlotError> {
    let svg_path = output_path(prefix, &format!("-{}.svg", chart.name()));
    let mut written = vec![drawn(svg_path.clone(), write_svg(chart, &svg_path, with_font))?];
    if with_font {
        let png_path = output_path(prefix, &format!("-{}.png", chart.name()));
        written.push(drawn(png_path.clone(), write_png(chart, &png_path))?);
    }
    Ok(written)
}

/// Writes `PREFIX` + `suffix` with `write`; returns its path.
fn write_text_file(
    prefix: &Path,
    suffix: &str,
    write: impl FnOnce(BufWriter<File>) -> std::io::Result<()>,
) -> Result<PathBuf, PlotError> {
    let path = output_path(prefix, suffix);
    let write_error = |source| PlotError::Write { path: path.clone(), source };
    let file = File::create(&path).map_err(write_error)?;
    write(BufWriter::new(file)).map_err(write_error)?;
    Ok(path)
}

/// Runs `ibex plot`: writes the charts and the CSV, and returns the summary.
pub fn run(arguments: &PlotArguments) -> Result<String, PlotError> {
    let runs = read_runs(arguments)?;
    let baseline = match &arguments.baseline {
        Some(name) => Some(
            runs.iter()
                .find(|run| &run.name == name)
                .ok_or_else(|| PlotError::UnknownBaseline { name: name.clone() })?,
        ),
        None => None,
    };
    let utxo_counts = arguments.utxo_counts.as_deref().map(read_utxo_counts).transpose()?;
    let growth =
        utxo_counts.map(|counts| cost_growth(&runs, &counts, arguments.cost_window_blocks.max(1)));
    if let Some(parent) = arguments.out.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|source| PlotError::Write { path: parent.to_path_buf(), source })?;
    }
    let mut written = vec![write_text_file(&arguments.out, ".csv", |file| write_csv(&runs, file))?];
    let font = chart_font();
    let mut charts = vec![Chart::SyncTime(&runs)];
    if let Some(baseline) = baseline.filter(|_| runs.len() > 1) {
        charts.push(Chart::Speedup(&runs, baseline));
    }
    charts.push(Chart::Rates(&runs));
    let mut report = summary(&runs, baseline);
    if let Some(growth) = &growth {
        let csv = write_text_file(&arguments.out, "-cost-growth.csv", |file| {
            write_cost_csv(growth, file)
        })?;
        written.push(csv);
        charts.push(Chart::CostGrowth(growth));
        report.push('\n');
        report.push_str(&cost_summary(growth));
    }
    for chart in &charts {
        written.extend(write_chart(&arguments.out, chart, font.is_ok())?);
    }
    let files: Vec<String> = written.iter().map(|path| path.display().to_string()).collect();
    report.push_str(&format!("\nwrote {}", files.join(", ")));
    if let Err(error) = font {
        report.push_str(&format!(
            "\nPNG charts not written (font: {error}); install a TrueType font (Debian: fonts-dejavu-core) or set {FONT_VARIABLE} to one"
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_runs_from_arguments_and_files() {
        let (name, path) = split_log_argument(&OsString::from("core=/nonexistent/a.log"));
        assert_eq!((name.as_deref(), path), (Some("core"), PathBuf::from("/nonexistent/a.log")));
        let (name, path) = split_log_argument(&OsString::from("/nonexistent/x=y/a.log"));
        assert_eq!((name, path), (None, PathBuf::from("/nonexistent/x=y/a.log")));
        assert_eq!(default_run_name(Path::new("/runs/core-30/debug.log")), "core-30");
        assert_eq!(default_run_name(Path::new("/runs/ibex-dbcache.log")), "ibex-dbcache");
        let taken = [RunSeries { name: "a".to_owned(), ..RunSeries::default() }];
        assert_eq!(unique_name("a".to_owned(), &taken), "a-2");
        assert_eq!(unique_name("b".to_owned(), &taken), "b");
    }
}
