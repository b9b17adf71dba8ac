//! `--flamegraph`: one more, untimed run of each node under `perf record`
//! (call graphs, `--perf-frequency-hz` samples a second), its samples
//! folded into stacks with `inferno` (`perf script` streamed through
//! inferno's perf collapser into `flame-NAME.folded`), drawn as
//! `flame-NAME.svg`, and a differential graph `flame-diff-BASELINE-NAME.svg`
//! of each other node against the baseline: the node's stacks, widths from
//! its own samples, red where it spends a larger share of its time than
//! the baseline and blue where smaller (the baseline's counts are scaled to
//! the node's total, inferno's `normalize`). The same samples, stamped
//! with the log's clock, are also cut by quarter of the heights into
//! `profile-quarters-NAME.md` ([`super::quarter_profile`]).
//!
//! Without `perf`, or when the kernel does not let it record
//! (`kernel.perf_event_paranoid` above 1 for a user other than root), the
//! benchmark says so and carries on; a profile that fails later is
//! reported in the results, not fatal: the timings stand without it.
//!
//! Rust release builds keep no frame pointers, so `perf record -g` stacks
//! of `ibexd` are shallow; build with `-C force-frame-pointers=yes` for
//! whole stacks.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use inferno::collapse::perf::{Folder, Options as FoldOptions};
use inferno::collapse::Collapse;
use inferno::differential::Options as DifferenceOptions;
use inferno::flamegraph::Options as GraphOptions;

use super::quarter_profile::{QuarterBounds, QuarterProfile};
use super::runner::Bench;

/// The profiler's program name, looked up on `PATH`.
pub const PERF_PROGRAM: &str = "perf";
/// The read buffer of the folded stacks and of `perf script`'s output.
const STREAM_BUFFER_BYTES: usize = 256 * 1024;

/// Why a flame graph was not made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FlamegraphError {
    /// `perf` is not installed.
    #[error("perf not found")]
    PerfMissing,
    /// `perf record` does not work here.
    #[error("perf record does not work here (kernel.perf_event_paranoid = {paranoid}; run as root or lower it): {message}")]
    PerfRefused {
        /// The setting, as read from `/proc`.
        paranoid: String,
        /// What `perf record` said.
        message: String,
    },
    /// A profiler command failed.
    #[error("{command}: {message}")]
    Command {
        /// The command.
        command: String,
        /// Its error.
        message: String,
    },
    /// Reading or writing stacks or an SVG failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The node's profiled run failed.
    #[error(transparent)]
    Run(#[from] super::BenchError),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> FlamegraphError + '_ {
    move |source| FlamegraphError::Io { path: path.to_path_buf(), source }
}

/// Whether `perf record` works: records `true` into `scratch`.
pub fn probe_perf(scratch: &Path) -> Result<(), FlamegraphError> {
    let output = Command::new(PERF_PROGRAM)
        .args(["record", "-g", "-o"])
        .arg(scratch)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output();
    let _ = std::fs::remove_file(scratch);
    let output = match output {
        Ok(output) => output,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(FlamegraphError::PerfMissing)
        }
        Err(error) => {
            return Err(FlamegraphError::PerfRefused {
                paranoid: read_paranoid(),
                message: error.to_string(),
            })
        }
    };
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = stderr.lines().find(|line| !line.trim().is_empty()).unwrap_or("failed");
    Err(FlamegraphError::PerfRefused { paranoid: read_paranoid(), message: message.to_owned() })
}

fn read_paranoid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|text| text.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Streams `perf script -i perf_data`'s output (default fields) through
/// `consume`, which writes its result to `output_path` (named in errors).
fn with_perf_script<T>(
    perf_data: &Path,
    output_path: &Path,
    consume: impl FnOnce(BufReader<std::process::ChildStdout>) -> std::io::Result<T>,
) -> Result<T, FlamegraphError> {
    let command = format!("perf script -i {}", perf_data.display());
    let failed = |message: String| FlamegraphError::Command { command: command.clone(), message };
    let mut child = Command::new(PERF_PROGRAM)
        .arg("script")
        .arg("-i")
        .arg(perf_data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| failed(error.to_string()))?;
    let stdout = child.stdout.take().ok_or_else(|| failed("no output".to_owned()))?;
    let consumed = consume(BufReader::with_capacity(STREAM_BUFFER_BYTES, stdout));
    let status = child.wait().map_err(|error| failed(error.to_string()))?;
    let value = consumed.map_err(io_error(output_path))?;
    if !status.success() {
        return Err(failed(status.to_string()));
    }
    Ok(value)
}

/// Folds `perf script -i perf_data`'s output into `folded` (one line per
/// distinct stack: frames joined by `;`, then the sample count).
pub fn fold_perf_data(perf_data: &Path, folded: &Path) -> Result<(), FlamegraphError> {
    let output = File::create(folded).map_err(io_error(folded))?;
    with_perf_script(perf_data, folded, |reader| fold_perf_script(reader, output))
}

/// Writes `profile-quarters` Markdown for `perf_data` to `markdown`: the
/// samples cut by quarter of the heights of the run that `log` records
/// ([`super::quarter_profile`]).
pub fn write_quarter_profile(
    perf_data: &Path,
    log: &Path,
    stop_height: u32,
    node: &str,
    markdown: &Path,
) -> Result<(), FlamegraphError> {
    let log_file = File::open(log).map_err(io_error(log))?;
    let start = super::progress::START_HEIGHT;
    let bounds = QuarterBounds::from_log(BufReader::new(log_file), start, stop_height)
        .map_err(io_error(log))?
        .ok_or_else(|| FlamegraphError::Command {
            command: format!("quarters of {}", log.display()),
            message: format!("the log does not reach height {stop_height}"),
        })?;
    let profile =
        with_perf_script(perf_data, markdown, |reader| QuarterProfile::read(reader, &bounds))?;
    std::fs::write(markdown, profile.markdown(node, &bounds)).map_err(io_error(markdown))
}

/// Folds `perf script` text from `input` into `output`.
pub fn fold_perf_script<R: std::io::BufRead, W: Write>(input: R, output: W) -> std::io::Result<()> {
    let mut options = FoldOptions::default();
    options.nthreads = 1;
    let mut writer = BufWriter::new(output);
    Folder::from(options).collapse(input, &mut writer)?;
    writer.flush()
}

/// Draws `folded` stacks (plain, or the two-count lines of a difference)
/// as an SVG flame graph at `svg`.
pub fn draw(folded: &Path, svg: &Path, title: &str) -> Result<(), FlamegraphError> {
    let mut options = GraphOptions::default();
    options.title = title.to_owned();
    let input = File::open(folded).map_err(io_error(folded))?;
    let output = BufWriter::new(File::create(svg).map_err(io_error(svg))?);
    inferno::flamegraph::from_reader(&mut options, BufReader::new(input), output)
        .map_err(io_error(svg))
}

/// Writes the differential stacks of `after` against `before` (two counts
/// a line, `before` scaled to `after`'s total) to `difference`.
pub fn fold_difference(
    before: &Path,
    after: &Path,
    difference: &Path,
) -> Result<(), FlamegraphError> {
    let options = DifferenceOptions { normalize: true, strip_hex: true };
    let output = BufWriter::new(File::create(difference).map_err(io_error(difference))?);
    inferno::differential::from_files(options, before, after, output).map_err(io_error(difference))
}

/// The profiled run of node `index`: its folded stacks, flame graph and
/// profile by quarter (or the note saying why that one failed).
fn profile_node(
    bench: &Bench<'_>,
    index: usize,
) -> Result<(PathBuf, PathBuf, Result<PathBuf, String>), FlamegraphError> {
    let node = &bench.nodes[index];
    let perf_data = bench.work.join(format!("perf-{}.data", node.name));
    let wrapper: Vec<OsString> = vec![
        PERF_PROGRAM.into(),
        "record".into(),
        "-F".into(),
        bench.arguments.perf_frequency_hertz.to_string().into(),
        format!("--call-graph={}", bench.arguments.perf_call_graph).into(),
        // The log's clock, for the profile by quarter.
        "-k".into(),
        "CLOCK_REALTIME".into(),
        "-o".into(),
        perf_data.clone().into(),
        "--".into(),
    ];
    let log = bench.run_node(index, &format!("{}-perf", node.name), &wrapper)?.log;
    let out = &bench.arguments.out;
    let folded = out.join(format!("flame-{}.folded", node.name));
    fold_perf_data(&perf_data, &folded)?;
    let quarters = out.join(format!("profile-quarters-{}.md", node.name));
    let quarters =
        write_quarter_profile(&perf_data, &log, bench.stop_height, &node.name, &quarters)
            .map(|()| quarters)
            .map_err(|error| format!("flamegraph: {}: profile by quarter: {error}", node.name));
    let _ = std::fs::remove_file(&perf_data);
    let svg = out.join(format!("flame-{}.svg", node.name));
    let title = format!(
        "{} ({}): IBD by --mode {} to height {}",
        node.name,
        node.kind.name(),
        bench.arguments.mode.name(),
        bench.stop_height
    );
    draw(&folded, &svg, &title)?;
    Ok((folded, svg, quarters))
}

/// What `--flamegraph` made, and what it could not.
#[derive(Debug, Default)]
pub struct FlamegraphOutcome {
    /// The SVGs written.
    pub files: Vec<PathBuf>,
    /// Why some (or all) were not, one line each.
    pub notes: Vec<String>,
}

/// Profiles every node and draws the graphs and the differences to the
/// baseline; problems become notes (printed as they happen).
pub fn flame_graphs(bench: &Bench<'_>) -> FlamegraphOutcome {
    let mut outcome = FlamegraphOutcome::default();
    let note = |outcome: &mut FlamegraphOutcome, text: String| {
        eprintln!("{text}");
        outcome.notes.push(text);
    };
    if let Err(error) = probe_perf(&bench.work.join("perf-probe.data")) {
        note(&mut outcome, format!("flamegraph: {error}, skipped"));
        return outcome;
    }
    let mut folded = vec![None; bench.nodes.len()];
    for (index, node) in bench.nodes.iter().enumerate() {
        match profile_node(bench, index) {
            Ok((stacks, svg, quarters)) => {
                folded[index] = Some(stacks);
                outcome.files.push(svg);
                match quarters {
                    Ok(markdown) => outcome.files.push(markdown),
                    Err(text) => note(&mut outcome, text),
                }
            }
            Err(error) => {
                note(&mut outcome, format!("flamegraph: {}: {error}, skipped", node.name))
            }
        }
    }
    let baseline = bench.roles.baseline;
    let Some(before) = folded[baseline].clone() else { return outcome };
    for (index, after) in folded.iter().enumerate() {
        let Some(after) = after.as_ref().filter(|_| index != baseline) else { continue };
        let (base_name, name) = (&bench.nodes[baseline].name, &bench.nodes[index].name);
        let difference = bench.arguments.out.join(format!("flame-diff-{base_name}-{name}.folded"));
        let svg = bench.arguments.out.join(format!("flame-diff-{base_name}-{name}.svg"));
        let title = format!("{name} against {base_name}: red where {name} spends more of its time");
        match fold_difference(&before, after, &difference)
            .and_then(|()| draw(&difference, &svg, &title))
        {
            Ok(()) => outcome.files.push(svg),
            Err(error) => note(&mut outcome, format!("flamegraph: difference {name}: {error}")),
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three samples of `perf script` text, as perf prints them (each
    /// weighs its period, 10,101,010 ns of `cpu-clock` at 99 Hz).
    fn perf_script_sample(hot_function: &str) -> String {
        let mut text = String::new();
        for (time, function) in
            [("1.000", hot_function), ("1.010", hot_function), ("1.020", "idle")]
        {
            text.push_str(&format!(
                "ibexd 1234/1235 [000] {time}: 10101010 cpu-clock:\n\
                 \t    55d0c0a01000 {function}+0x10 (/usr/bin/ibexd)\n\
                 \t    55d0c0a02000 main+0x20 (/usr/bin/ibexd)\n\n"
            ));
        }
        text
    }

    #[test]
    fn folds_draws_and_differences_perf_stacks() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let path = |name: &str| directory.path().join(name);
        let mut folded = Vec::new();
        fold_perf_script(perf_script_sample("connect_block").as_bytes(), &mut folded)
            .expect("folded");
        let text = String::from_utf8(folded.clone()).expect("utf-8");
        assert!(text.contains("ibexd;main;connect_block 20202020\n"), "{text}");
        assert!(text.contains("ibexd;main;idle 10101010\n"), "{text}");
        std::fs::write(path("a.folded"), &folded).expect("write");
        let mut other = Vec::new();
        fold_perf_script(perf_script_sample("verify_script").as_bytes(), &mut other)
            .expect("folded");
        std::fs::write(path("b.folded"), &other).expect("write");
        draw(&path("a.folded"), &path("a.svg"), "a").expect("drawn");
        let svg = std::fs::read_to_string(path("a.svg")).expect("read");
        assert!(svg.contains("<svg") && svg.contains("connect_block"), "{svg}");
        fold_difference(&path("a.folded"), &path("b.folded"), &path("d.folded")).expect("diff");
        let difference = std::fs::read_to_string(path("d.folded")).expect("read");
        assert!(difference.contains("ibexd;main;verify_script 0 20202020"), "{difference}");
        assert!(difference.contains("ibexd;main;connect_block 20202020 0"), "{difference}");
        draw(&path("d.folded"), &path("d.svg"), "b against a").expect("drawn");
        std::fs::write(path("empty.folded"), b"").expect("write");
        assert!(draw(&path("empty.folded"), &path("e.svg"), "none").is_err(), "no samples");
    }
}
