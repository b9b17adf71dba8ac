//! `ibex plot` on small generated logs, run as a process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};

/// A timestamp `seconds` after 2026-11-24T00:00:00Z (under an hour).
fn timestamp(seconds: u32, micros: Option<u32>) -> String {
    let clock = format!("2026-11-24T00:{:02}:{:02}", seconds / 60, seconds % 60);
    match micros {
        Some(micros) => format!("{clock}.{micros:06}Z"),
        None => format!("{clock}Z"),
    }
}

fn tip(time: &str, height: u32) -> String {
    format!(
        "{time} UpdateTip: new best={:064x} height={height} version=0x20000000 log2_work=1.000000 tx={} date='2026-11-22T03:12:14Z' progress=1.000000 cache={:.1}MiB({height}txo)\n",
        height,
        2 * height + 1,
        f64::from(height) / 10.0
    )
}

/// Core's format: a tip every 2 s, a coins flush at height 50.
fn core_log() -> String {
    let mut log = format!("{} Bitcoin Core version v30.0.0 (release build)\n", timestamp(0, None));
    for height in 0..=100 {
        log.push_str(&tip(&timestamp(2 * height, None), height));
        if height == 50 {
            let time = timestamp(2 * height + 1, None);
            writeln!(log, "{time} [bench] FlushStateToDisk: write coins cache to disk (50 coins, 9kB) completed (1.20ms)").unwrap();
        }
    }
    log
}

/// Ibex's format with microseconds: a tip every second, half as long.
fn ibex_log() -> String {
    let mut log = format!("{} Ibex version 0.1.0\n", timestamp(0, Some(0)));
    for height in 0..=100 {
        log.push_str(&tip(&timestamp(height, Some(0)), height));
    }
    writeln!(log, "{} FlushStateToDisk (shutdown): 100 coins written, 0 erased, 1 batches, 0.01 MiB, 101 block index records, 2 ms (validation waited 0 ms)", timestamp(100, Some(250_000))).unwrap();
    log
}

/// Runs `ibex plot` with the font it finds on the system.
fn ibex_plot(arguments: &[&str], directory: &Path) -> Output {
    ibex_plot_with_font(arguments, directory, None)
}

/// Runs `ibex plot` with `IBEX_PLOT_FONT` set to `font`, or unset.
fn ibex_plot_with_font(arguments: &[&str], directory: &Path, font: Option<&Path>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ibex"));
    command.current_dir(directory).arg("plot").args(arguments);
    match font {
        Some(font) => command.env("IBEX_PLOT_FONT", font),
        None => command.env_remove("IBEX_PLOT_FONT"),
    };
    command.output().unwrap()
}

/// A PNG decoded: width, height, and its RGB pixels.
struct Image {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

fn decode_png(path: &Path) -> Image {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(frame.color_type, png::ColorType::Rgb, "{}", path.display());
    assert_eq!(frame.bit_depth, png::BitDepth::Eight);
    pixels.truncate(frame.buffer_size());
    Image { width: frame.width, height: frame.height, rgb: pixels }
}

impl Image {
    /// Pixels in the rectangle that are dark (text and axes are black).
    fn dark_pixels(&self, x: std::ops::Range<u32>, y: std::ops::Range<u32>) -> usize {
        let mut dark = 0;
        for row in y {
            for column in x.clone() {
                let at = ((row * self.width + column) * 3) as usize;
                if self.rgb[at..at + 3].iter().all(|&channel| channel < 100) {
                    dark += 1;
                }
            }
        }
        dark
    }
}

fn expected_csv_line(name: &str, seconds_per_block: u32) -> String {
    let pairs: Vec<String> =
        (0..=100).map(|height| format!("{}:{height}", seconds_per_block * height)).collect();
    format!("{name},{}", pairs.join(","))
}

#[test]
fn plots_two_runs_against_a_baseline() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("core.log"), core_log()).unwrap();
    std::fs::create_dir(directory.path().join("ibex-run")).unwrap();
    std::fs::write(directory.path().join("ibex-run/debug.log"), ibex_log()).unwrap();
    let output = ibex_plot(
        &["core.log", "ibex-run/debug.log", "--baseline", "core", "--out", "charts/ibd"],
        directory.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        stdout.contains("core: height 100 in 0.056 h (200 s), 101 tips, 1 flushes"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ibex-run: height 100 in 0.028 h (100 s), 101 tips, 1 flushes"),
        "{stdout}"
    );
    assert!(stdout.contains("   50 %  height        50"), "{stdout}");
    assert!(stdout.contains("speed-up over core at height 100: 2.000x"), "{stdout}");

    let charts = directory.path().join("charts");
    let csv = std::fs::read_to_string(charts.join("ibd.csv")).unwrap();
    let expected =
        format!("{}\n{}\n", expected_csv_line("core", 2), expected_csv_line("ibex-run", 1));
    assert_eq!(csv, expected);
    for chart in ["ibd-sync-time.svg", "ibd-speedup.svg", "ibd-rates.svg"] {
        let svg = std::fs::read_to_string(charts.join(chart)).unwrap();
        assert!(svg.starts_with("<svg"), "{chart}");
        assert!(svg.contains("ibex-run"), "{chart} has no legend for ibex-run");
    }
    let sync = std::fs::read_to_string(charts.join("ibd-sync-time.svg")).unwrap();
    assert!(sync.contains("core (3.3 min)"), "the legend gives the final time");
    assert!(sync.contains("ibex-run (100.0 s)"), "in units that suit it");
    assert!(sync.contains("elapsed minutes"), "the axis in the longest run's unit");
    if stdout.contains("PNG charts not written") {
        println!("PNG checks skipped: no font on this machine ({stdout}); .ci/run installs fonts-dejavu-core");
        return;
    }
    let sizes = [("sync-time", 1_200, 700), ("speedup", 1_200, 700), ("rates", 1_200, 1_500)];
    for (chart, width, height) in sizes {
        let image = decode_png(&charts.join(format!("ibd-{chart}.png")));
        assert_eq!((image.width, image.height), (width, height), "{chart}");
        // The caption (dark text, centred at the top) was rasterised, and
        // the middle of the chart is mostly white background.
        let caption = image.dark_pixels(width / 2 - 150..width / 2 + 150, 8..45);
        assert!(caption > 200, "{chart}: {caption} dark pixels in the caption");
        let middle = image.dark_pixels(width / 2 - 50..width / 2 + 50, height / 3..height / 3 + 10);
        assert!(middle < 500, "{chart}: {middle} dark pixels in the middle");
    }
    assert!(stdout.contains("charts/ibd-rates.png"), "{stdout}");
}

/// Without a usable font, `ibex plot` writes the SVG charts, says why
/// there is no PNG, and succeeds.
#[test]
fn without_a_font_only_svg_is_written_and_the_summary_says_why() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("core.log"), core_log()).unwrap();
    let not_a_font = directory.path().join("not-a-font.ttf");
    std::fs::write(&not_a_font, "plain text").unwrap();
    let output =
        ibex_plot_with_font(&["core.log", "--out", "p"], directory.path(), Some(&not_a_font));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("PNG charts not written"), "{stdout}");
    assert!(stdout.contains("not-a-font.ttf: not a TrueType or OpenType font"), "{stdout}");
    for chart in ["p-sync-time", "p-rates"] {
        let svg = std::fs::read_to_string(directory.path().join(format!("{chart}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("\ncore ("), "{chart} has its legend");
        assert!(!directory.path().join(format!("{chart}.png")).exists(), "{chart}.png");
    }
}

#[test]
fn takes_the_second_run_from_a_height_with_names() {
    let directory = tempfile::tempdir().unwrap();
    let mut log = core_log();
    writeln!(log, "{} Shutdown: done", timestamp(300, None)).unwrap();
    log.push_str("2026-11-24T00:10:00Z \u{ff} a line of bytes that are not UTF-8 follows\n");
    let mut bytes = log.into_bytes();
    bytes.extend_from_slice(b"2026-11-24T00:10:00Z bad \xff\xfe bytes\n");
    for height in 0..=20 {
        bytes.extend_from_slice(tip(&timestamp(600 + 3 * height, None), height).as_bytes());
    }
    std::fs::write(directory.path().join("two-runs.log"), bytes).unwrap();
    let output = ibex_plot(
        &["restart=two-runs.log", "--after-shutdown", "--from-height", "10", "--out", "p"],
        directory.path(),
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("restart: height 20 in 0.008 h (30 s), 11 tips, 0 flushes, 0 repeated tips (reorgs), 1 lines skipped"), "{stdout}");
    let csv = std::fs::read_to_string(directory.path().join("p.csv")).unwrap();
    let pairs: Vec<String> =
        (10..=20).map(|height| format!("{}:{height}", 3 * (height - 10))).collect();
    assert_eq!(csv, format!("restart,{}\n", pairs.join(",")));
    assert!(directory.path().join("p-sync-time.svg").exists());
    assert!(directory.path().join("p-rates.svg").exists());
    assert!(!directory.path().join("p-speedup.svg").exists(), "no baseline, no speed-up chart");
}

#[test]
fn refuses_an_unknown_baseline_and_a_log_without_tips() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("core.log"), core_log()).unwrap();
    std::fs::write(directory.path().join("empty.log"), "2026-11-24T00:00:00Z nothing\n").unwrap();
    let output = ibex_plot(&["core.log", "--baseline", "bitcoind"], directory.path());
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("baseline bitcoind is not one of the runs"), "{stderr}");
    let output = ibex_plot(&["core.log", "empty.log"], directory.path());
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("empty.log: no UpdateTip lines"));
    let output = ibex_plot(&["missing.log"], directory.path());
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing.log: cannot read"));
    assert!(!directory.path().join("ibex-plot.csv").exists(), "nothing written on errors");
}

/// Ibex's format with microseconds, each block slower than the last: the
/// tip reaches height `h` at `h` s + 5 ms x h², so a window of blocks
/// `(a, b]` costs 1,000 + 5 x (a + b) ms a block: 1,000 ms + 10 ms per
/// height of its middle.
fn growing_log() -> String {
    let mut log = format!("{} Ibex version 0.1.0\n", timestamp(0, Some(0)));
    for height in 0..=100u32 {
        let micros = u64::from(height) * 1_000_000 + 5_000 * u64::from(height * height);
        let time = timestamp((micros / 1_000_000) as u32, Some((micros % 1_000_000) as u32));
        log.push_str(&tip(&time, height));
    }
    log
}

/// A manifest as `ibex gen` writes it: 10,000 coins a block, recorded
/// every 10 heights (with other fields around).
fn manifest_with_counts() -> String {
    let entries: Vec<String> =
        (0..=10u64).map(|step| format!("    [{}, {}]", step * 10, step * 100_000)).collect();
    format!(
        "{{\n  \"block_count\": 100,\n  \"utxo_count\": 1000000,\n  \"utxo_count_by_height\": [\n{}\n  ],\n  \"fork_blocks\": []\n}}",
        entries.join(",\n")
    )
}

#[test]
fn charts_the_cost_of_a_block_against_the_utxo_set() {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("growing.log"), growing_log()).unwrap();
    std::fs::write(directory.path().join("core.log"), core_log()).unwrap();
    std::fs::write(directory.path().join("manifest.json"), manifest_with_counts()).unwrap();
    let arguments = [
        "growing.log",
        "core.log",
        "--utxo-counts",
        "manifest.json",
        "--cost-window-blocks",
        "20",
        "--out",
        "p",
    ];
    let output = ibex_plot(&arguments, directory.path());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Block 1 is left out (Core indexes its files before it); the windows'
    // counts are the manifest's at their middle heights (11, 31, 51, 71,
    // 90.5), their costs 1,000 ms + 10 ms per height of the middle, or
    // Core's 2 s a block.
    let mut expected = String::from(
        "run,first_height,last_height,utxo_count,milliseconds_per_block,transactions_per_block\n",
    );
    let windows = [(2, 21, 110_000), (22, 41, 310_000), (42, 61, 510_000), (62, 81, 710_000)];
    let windows = windows.into_iter().chain([(82, 100, 905_000)]);
    for (first, last, coins) in windows.clone() {
        let cost = 1_000.0 + f64::from(first + last - 1) * 5.0;
        expected.push_str(&format!("growing,{first},{last},{coins},{cost:.3},2.0\n"));
    }
    for (first, last, coins) in windows {
        expected.push_str(&format!("core,{first},{last},{coins},2000.000,2.0\n"));
    }
    let csv = std::fs::read_to_string(directory.path().join("p-cost-growth.csv")).unwrap();
    assert_eq!(csv, expected);
    assert!(stdout.contains("cost growth: ms per block over 20-block windows"), "{stdout}");
    assert!(
        stdout.contains("growing (0.11-0.91 M coins): 1000.000 ms/block + 1000.000 ms per million coins (least squares over 5 windows of typical blocks, r² 1.000; at 180 M coins the line gives 181000.0 ms/block)"),
        "{stdout}"
    );
    assert!(stdout.contains("core (0.11-0.91 M coins): 2000.000 ms/block + 0.000 ms per million coins (least squares over 5 windows of typical blocks, r² -;"), "{stdout}");
    assert!(stdout.contains("p-cost-growth.csv"), "{stdout}");
    let svg = std::fs::read_to_string(directory.path().join("p-cost-growth.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(
        svg.contains("growing: 1000.0 ms + 1000.00 ms per M coins"),
        "the legend gives the line"
    );
    assert!(svg.contains("UTXO set size (millions of coins)"));
    assert!(svg.contains("milliseconds per block"));
    if !stdout.contains("PNG charts not written") {
        let image = decode_png(&directory.path().join("p-cost-growth.png"));
        assert_eq!((image.width, image.height), (1_200, 700));
        assert!(image.dark_pixels(450..750, 8..45) > 200, "the caption was drawn");
    }

    // Without --utxo-counts: no cost growth. A manifest without the counts
    // is refused before anything is written.
    let output = ibex_plot(&["growing.log", "--out", "q"], directory.path());
    assert!(output.status.success());
    assert!(!String::from_utf8_lossy(&output.stdout).contains("cost growth"));
    assert!(!directory.path().join("q-cost-growth.svg").exists());
    std::fs::write(directory.path().join("old.json"), "{\"block_count\": 100}").unwrap();
    let output =
        ibex_plot(&["growing.log", "--utxo-counts", "old.json", "--out", "r"], directory.path());
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("old.json: no utxo_count_by_height"), "{stderr}");
    assert!(!directory.path().join("r.csv").exists(), "nothing written on errors");
}
