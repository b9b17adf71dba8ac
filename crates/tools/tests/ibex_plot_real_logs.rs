//! `ibex plot` on Core's own log from `../shared` and on a synthetic gigabyte
//! log: exact CSV values, and a peak RSS that shows the log is streamed, not
//! loaded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ibex_tools::bench::measure::run_measured;

/// Peak RSS allowed for plotting the gigabyte log: far below its size.
const GIGABYTE_LOG_RSS_KIBIBYTES_MAX: u64 = 256 * 1024;
/// Tips in the gigabyte log, a quarter of a second apart.
const BIG_LOG_TIPS: u32 = 100_000;
/// Other log lines after each tip, to make the file a gigabyte.
const FILLER_LINES_PER_TIP: usize = 100;

fn shared_sample_log() -> PathBuf {
    let manifest =
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    PathBuf::from(manifest).join("../../../shared/chains/core-wallet-mix/debug-sample.log")
}

/// Seconds since midnight of a `YYYY-MM-DDTHH:MM:SS[.ffffff]Z` stamp,
/// in microseconds (the sample's lines are all of one day).
fn micros_of_day(stamp: &str) -> i64 {
    let clock = &stamp[11..stamp.len() - 1];
    let (whole, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    let mut parts = whole.split(':').map(|part| part.parse::<i64>().unwrap());
    let seconds = parts.next().unwrap() * 3600 + parts.next().unwrap() * 60 + parts.next().unwrap();
    let fraction: i64 = format!("{fraction:0<6}")[..6].parse().unwrap();
    seconds * 1_000_000 + fraction
}

/// Microseconds as the CSV writes them: seconds, shortest exact decimal.
fn seconds_text(micros: i64) -> String {
    let text = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn plot(arguments: &[&str], directory: &Path) -> std::process::Output {
    let output = Command::new(env!("CARGO_BIN_EXE_ibex"))
        .current_dir(directory)
        .arg("plot")
        .args(arguments)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    output
}

#[test]
fn cores_own_debug_log_gives_its_tips_exactly() {
    let log = std::fs::read_to_string(shared_sample_log()).unwrap();
    // The first timestamped line (Core starts a log with blank lines).
    let stamped =
        |line: &&str| line.len() > 20 && line.as_bytes()[..4].iter().all(u8::is_ascii_digit);
    let first_stamp = log.lines().find(stamped).unwrap().split(' ').next().unwrap();
    let start = micros_of_day(first_stamp);
    let mut expected = String::from("core");
    let mut highest: Option<u32> = None;
    // Lines quoted with a `[*] ` prefix are not log lines: their timestamp
    // is not at the start, so they are skipped as Core's visualizer skips
    // them.
    for line in log.lines().filter(stamped).filter(|line| line.contains(" UpdateTip: ")) {
        let stamp = line.split(' ').next().unwrap();
        let height: u32 =
            line.split(" height=").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        if highest.is_some_and(|highest| height <= highest) {
            continue;
        }
        highest = Some(height);
        expected.push_str(&format!(",{}:{height}", seconds_text(micros_of_day(stamp) - start)));
    }
    let highest = highest.expect("the sample has tips");
    let directory = tempfile::tempdir().unwrap();
    let sample = shared_sample_log();
    let argument = format!("core={}", sample.display());
    let output = plot(&[&argument, "--out", "charts"], directory.path());
    let csv = std::fs::read_to_string(directory.path().join("charts.csv")).unwrap();
    assert_eq!(csv, format!("{expected}\n"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("core: height {highest} in")), "{stdout}");
}

/// Writes a log of [`BIG_LOG_TIPS`] Ibex tips a quarter second apart, each
/// followed by [`FILLER_LINES_PER_TIP`] other lines, and returns its size.
fn write_big_log(path: &Path) -> u64 {
    let mut writer = BufWriter::with_capacity(1 << 20, std::fs::File::create(path).unwrap());
    for height in 0..BIG_LOG_TIPS {
        let micros = i64::from(height) * 250_000;
        let (seconds, fraction) = (micros / 1_000_000, micros % 1_000_000);
        let stamp = format!(
            "2026-11-24T{:02}:{:02}:{:02}.{fraction:06}Z",
            seconds / 3600,
            seconds / 60 % 60,
            seconds % 60
        );
        writeln!(writer, "{stamp} UpdateTip: new best={height:064x} height={height} version=0x20000000 log2_work=1.000000 tx={} date='2026-11-22T03:12:14Z' progress=1.000000 cache=1.0MiB(1txo)", height + 1).unwrap();
        for line in 0..FILLER_LINES_PER_TIP {
            writeln!(writer, "{stamp} [net] received: inv (37 bytes) peer={line} and some more words to fill a realistic line").unwrap();
        }
    }
    writer.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn a_gigabyte_log_is_streamed_and_every_tip_kept() {
    let directory = tempfile::tempdir().unwrap();
    let log = directory.path().join("big.log");
    let bytes = write_big_log(&log);
    assert!(bytes >= 1 << 30, "the log is {bytes} bytes");
    let mut command = Command::new(env!("CARGO_BIN_EXE_ibex"));
    command
        .current_dir(directory.path())
        .args(["plot", "big.log", "--out", "charts"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let measured = run_measured(&mut command, Duration::from_secs(600)).unwrap();
    assert!(measured.end.is_success(), "{}", measured.end.describe());
    println!(
        "ibex plot of a {} MiB log: {:.1} s, peak RSS {} MiB",
        bytes >> 20,
        measured.wall.as_secs_f64(),
        measured.peak_rss_kibibytes >> 10
    );
    assert!(
        measured.peak_rss_kibibytes < GIGABYTE_LOG_RSS_KIBIBYTES_MAX,
        "peak RSS {} KiB for a {bytes}-byte log",
        measured.peak_rss_kibibytes
    );
    let csv = std::fs::read_to_string(directory.path().join("charts.csv")).unwrap();
    let expected: Vec<String> = (0..BIG_LOG_TIPS)
        .map(|height| format!("{}:{height}", seconds_text(i64::from(height) * 250_000)))
        .collect();
    assert_eq!(csv, format!("big,{}\n", expected.join(",")));
}
