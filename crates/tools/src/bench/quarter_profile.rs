//! `--flamegraph`'s profile by quarter of the heights: where each node's
//! CPU time goes in each quarter of the chain, by thread and by function
//! (the sampled function itself, not its callers), as
//! `profile-quarters-NAME.md`.
//!
//! # Why
//! A whole-run flame graph shows where the time goes on average; the
//! question for a node that must scale is what grows as the UTXO set
//! grows. Cut by quarter, the `utxo-heavy` import at `-dbcache=100` showed
//! it at once: RocksDB's compaction threads took 2.6 CPU seconds of the
//! first quarter and 16.0 of the third, while every other thread grew by
//! at most a factor of two.
//!
//! # How
//! `perf record` stamps samples with the wall clock (`-k CLOCK_REALTIME`),
//! the same clock as the node's log lines, so each sample falls in the
//! quarter whose `UpdateTip` times enclose it: from the first block
//! connected to the end of the first quarter, and so on (the quarters of
//! [`super::quarters`]). A sample weighs its period (CPU nanoseconds of
//! `cpu-clock`), and is named by the first frame under its header line in
//! `perf script`'s output. Thread names lose a trailing `-N` (the
//! `ibex-script-0` and `ibex-script-1` pool counts as one).

use std::collections::HashMap;
use std::io::BufRead;

use super::quarters::{quarter_end_heights, QUARTER_COUNT};
use crate::plot::parse::{parse_line, read_bounded_line, LineEvent};

/// Threads listed for each quarter, at most.
pub const THREADS_LISTED_MAX: usize = 10;
/// Functions listed for each quarter, at most.
pub const FUNCTIONS_LISTED_MAX: usize = 25;
/// Nanoseconds in one second.
const NANOS_PER_SECOND: f64 = 1e9;
/// Microseconds in one second.
const MICROS_PER_SECOND: f64 = 1e6;

/// When each quarter begins and ends, in microseconds since the Unix
/// epoch: `bounds[k]..bounds[k + 1]` is quarter `k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuarterBounds {
    /// The first block connected, then each quarter's last height reached.
    pub bounds_micros: [i64; QUARTER_COUNT + 1],
}

impl QuarterBounds {
    /// From a node's log: the first `UpdateTip` above `start_height`, then
    /// the first reaching each quarter's last height of
    /// `start_height..=stop_height`. `None` when the log does not reach the
    /// stop height.
    pub fn from_log<R: BufRead>(
        mut log: R,
        start_height: u32,
        stop_height: u32,
    ) -> std::io::Result<Option<QuarterBounds>> {
        let ends = quarter_end_heights(start_height, stop_height);
        let mut bounds: [Option<i64>; QUARTER_COUNT + 1] = [None; QUARTER_COUNT + 1];
        let mut line = Vec::with_capacity(1024);
        while read_bounded_line(&mut log, &mut line)?.is_some() {
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\n', '\r']);
            let Some((micros, LineEvent::Tip(tip))) = parse_line(text) else { continue };
            if tip.height > start_height && bounds[0].is_none() {
                bounds[0] = Some(micros);
            }
            for (index, &end) in ends.iter().enumerate() {
                if tip.height >= end && bounds[index + 1].is_none() {
                    bounds[index + 1] = Some(micros);
                }
            }
        }
        let mut bounds_micros = [0i64; QUARTER_COUNT + 1];
        for (slot, found) in bounds_micros.iter_mut().zip(bounds) {
            let Some(micros) = found else { return Ok(None) };
            *slot = micros;
        }
        Ok(Some(QuarterBounds { bounds_micros }))
    }

    /// The quarter a moment falls in, if any.
    fn quarter_of(&self, micros: i64) -> Option<usize> {
        (0..QUARTER_COUNT).find(|&index| {
            self.bounds_micros[index] <= micros && micros < self.bounds_micros[index + 1]
        })
    }

    /// The wall time of quarter `index`, in seconds.
    pub fn wall_seconds(&self, index: usize) -> f64 {
        (self.bounds_micros[index + 1] - self.bounds_micros[index]) as f64 / MICROS_PER_SECOND
    }
}

/// CPU time by quarter, in nanoseconds: by thread, and by thread and
/// function.
#[derive(Debug, Default, Clone)]
pub struct QuarterProfile {
    /// Per quarter: thread -> nanoseconds.
    pub threads: [HashMap<String, u64>; QUARTER_COUNT],
    /// Per quarter: (thread, function) -> nanoseconds.
    pub functions: [HashMap<(String, String), u64>; QUARTER_COUNT],
    /// Samples outside every quarter (start-up, shutdown).
    pub outside_nanos: u64,
    /// Header lines that could not be read as a sample.
    pub unreadable_line_count: u64,
}

/// One sample's header line: thread, time (microseconds since the epoch)
/// and period (nanoseconds). `perf script` prints `COMM PID/TID [CPU]
/// SECONDS.MICROS: PERIOD EVENT:`; the name may hold spaces.
fn parse_header(line: &str) -> Option<(String, i64, u64)> {
    let tokens: Vec<&str> = line.split_whitespace().collect();
    let time_index = tokens.iter().position(|token| {
        token
            .strip_suffix(':')
            .is_some_and(|number| number.contains('.') && seconds(number).is_some())
    })?;
    let micros = seconds(tokens[time_index].strip_suffix(':')?)?;
    let period: u64 = tokens.get(time_index + 1)?.parse().ok()?;
    // The name ends before the `PID/TID` token (and the `[CPU]` one).
    let name_end = tokens[..time_index].iter().position(|token| {
        token
            .split('/')
            .all(|part| !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit()))
    })?;
    let thread = tokens[..name_end].join(" ");
    Some((thread_family(&thread).to_owned(), micros, period))
}

/// `SECONDS.FRACTION` as microseconds.
fn seconds(text: &str) -> Option<i64> {
    let (whole, fraction) = text.split_once('.')?;
    let whole: i64 = whole.parse().ok()?;
    let digits: String = fraction.chars().chain(std::iter::repeat('0')).take(6).collect();
    let fraction: i64 = digits.parse().ok()?;
    whole.checked_mul(1_000_000)?.checked_add(fraction)
}

/// A thread name without a trailing `-N` (a pool's member number).
fn thread_family(name: &str) -> &str {
    match name.rsplit_once('-') {
        Some((family, number))
            if !family.is_empty()
                && !number.is_empty()
                && number.bytes().all(|b| b.is_ascii_digit()) =>
        {
            family
        }
        _ => name,
    }
}

/// The function of a frame line (`\tADDRESS FUNCTION+0xOFFSET (OBJECT)`),
/// without its offset.
fn frame_function(line: &str) -> Option<String> {
    let rest = line.trim_start();
    let (_, rest) = rest.split_once(char::is_whitespace)?;
    let function = match rest.rfind(" (") {
        Some(end) => &rest[..end],
        None => rest,
    };
    let function = match function.rfind("+0x") {
        Some(offset) => &function[..offset],
        None => function,
    };
    let function = function.trim();
    (!function.is_empty()).then(|| function.to_owned())
}

impl QuarterProfile {
    /// Reads `perf script` output (default fields, with or without call
    /// chains) and adds each sample to its quarter. Lines are read at most
    /// [`crate::plot::parse::LINE_BYTES_MAX`] bytes long; a header cut there or not a sample
    /// is counted in [`QuarterProfile::unreadable_line_count`].
    pub fn read<R: BufRead>(
        mut input: R,
        bounds: &QuarterBounds,
    ) -> std::io::Result<QuarterProfile> {
        let mut profile = QuarterProfile::default();
        // A header waits for its first frame line, which names the sample.
        let mut pending: Option<(String, i64, u64)> = None;
        let mut bytes = Vec::with_capacity(1024);
        while let Some(truncated) = read_bounded_line(&mut input, &mut bytes)? {
            let line = String::from_utf8_lossy(&bytes);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.starts_with(char::is_whitespace) && !line.trim().is_empty() {
                // A frame: the first one under a header names its sample;
                // the rest of a call chain is not counted.
                if let Some(header) = pending.take() {
                    profile.add(bounds, header, frame_function(line));
                }
                continue;
            }
            if let Some(header) = pending.take() {
                profile.add(bounds, header, None);
            }
            if line.trim().is_empty() {
                continue;
            }
            match parse_header(line).filter(|_| !truncated) {
                Some(header) => pending = Some(header),
                None => profile.unreadable_line_count += 1,
            }
        }
        if let Some(header) = pending {
            profile.add(bounds, header, None);
        }
        Ok(profile)
    }

    /// Adds one sample (`None`: no frame named it).
    fn add(
        &mut self,
        bounds: &QuarterBounds,
        (thread, micros, period): (String, i64, u64),
        function: Option<String>,
    ) {
        let function = function.unwrap_or_else(|| "[unknown]".to_owned());
        let Some(quarter) = bounds.quarter_of(micros) else {
            self.outside_nanos += period;
            return;
        };
        *self.threads[quarter].entry(thread.clone()).or_default() += period;
        *self.functions[quarter].entry((thread, function)).or_default() += period;
    }

    /// CPU nanoseconds of quarter `index`.
    pub fn total_nanos(&self, index: usize) -> u64 {
        self.threads[index].values().sum()
    }

    /// The profile as Markdown: per quarter, its wall and CPU time, the
    /// threads and the functions that took the most.
    pub fn markdown(&self, node: &str, bounds: &QuarterBounds) -> String {
        let mut text = format!("# {node}: CPU time by quarter of the heights\n\n");
        text.push_str("Sampled by `perf record`; a function is where a sample landed (callers not counted).\n");
        for index in 0..QUARTER_COUNT {
            let total = self.total_nanos(index);
            let wall = bounds.wall_seconds(index);
            let cpu = total as f64 / NANOS_PER_SECOND;
            let cores = if wall > 0.0 { cpu / wall } else { 0.0 };
            text.push_str(&format!(
                "\n## Quarter {}: {wall:.1} s wall, {cpu:.1} s CPU ({cores:.2} cores)\n\n",
                index + 1
            ));
            let threads = largest(&self.threads[index], THREADS_LISTED_MAX);
            let listed: Vec<String> = threads
                .iter()
                .map(|(thread, nanos)| {
                    format!("{thread} {:.1} s", *nanos as f64 / NANOS_PER_SECOND)
                })
                .collect();
            text.push_str(&format!("Threads: {}\n\n", listed.join(", ")));
            text.push_str("| CPU s | share | thread | function |\n|---:|---:|---|---|\n");
            for ((thread, function), nanos) in largest(&self.functions[index], FUNCTIONS_LISTED_MAX)
            {
                let share = if total > 0 { 100.0 * nanos as f64 / total as f64 } else { 0.0 };
                let function = function.replace('|', "\\|");
                text.push_str(&format!(
                    "| {:.2} | {share:.1} % | {thread} | `{function}` |\n",
                    nanos as f64 / NANOS_PER_SECOND
                ));
            }
        }
        text
    }
}

/// The `count` largest entries of `map`, largest first (ties by key).
fn largest<K: Ord + Clone>(map: &HashMap<K, u64>, count: usize) -> Vec<(K, u64)> {
    let mut entries: Vec<(K, u64)> = map.iter().map(|(key, value)| (key.clone(), *value)).collect();
    entries.sort_by(|left, right| right.1.cmp(&left.1).then_with(|| left.0.cmp(&right.0)));
    entries.truncate(count);
    entries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::parse::{parse_timestamp_micros, LINE_BYTES_MAX};

    /// A log reaching heights 1..=8 at seconds 10, 11, ... 17 after
    /// 2026-11-28T00:00:00Z, with other lines between.
    fn log_to_height(last_height: u32) -> String {
        let mut log = String::from("2026-11-28T00:00:01.000000Z Ibex starting\n");
        for height in 1..=last_height {
            let second = 9 + height;
            log.push_str(&format!(
                "2026-11-28T00:00:{second:02}.500000Z UpdateTip: new best=00ab height={height} version=0x20000000 tx=5\n\
                 2026-11-28T00:00:{second:02}.600000Z FlushStateToDisk: nothing at height={height}\n"
            ));
        }
        log
    }

    fn epoch_micros(second: i64, micros: i64) -> i64 {
        let midnight = parse_timestamp_micros("2026-11-28T00:00:00.000000Z").expect("timestamp");
        midnight + second * 1_000_000 + micros
    }

    #[test]
    fn quarters_run_from_the_first_block_to_each_quarter_end() {
        let bounds = QuarterBounds::from_log(log_to_height(8).as_bytes(), 0, 8).unwrap().unwrap();
        // Quarter ends 2, 4, 6, 8; the first block (height 1) at 10.5 s.
        let expected = [(10, 500_000), (11, 500_000), (13, 500_000), (15, 500_000), (17, 500_000)];
        let expected = expected.map(|(second, micros)| epoch_micros(second, micros));
        assert_eq!(bounds.bounds_micros, expected);
        assert!((bounds.wall_seconds(0) - 1.0).abs() < 1e-9);
        assert!((bounds.wall_seconds(3) - 2.0).abs() < 1e-9);
        let mut with_garbage = b"\xff\xfe not text\n".to_vec();
        with_garbage.extend_from_slice(log_to_height(8).as_bytes());
        let read = QuarterBounds::from_log(&with_garbage[..], 0, 8).unwrap();
        assert_eq!(read, Some(bounds), "a line that is not UTF-8 is skipped");
        let short = QuarterBounds::from_log(log_to_height(7).as_bytes(), 0, 8).unwrap();
        assert_eq!(short, None, "the stop height was not reached");
    }

    /// `perf script` text: one sample a line pair (header, leaf frame),
    /// some with a call chain under the leaf, one with no frame at all.
    fn perf_text(samples: &[(&str, i64, u64, Option<&str>)]) -> String {
        let mut text = String::new();
        for &(thread, time_micros, period, function) in samples {
            let seconds = time_micros / 1_000_000;
            let fraction = time_micros % 1_000_000;
            text.push_str(&format!(
                "{thread} 1234/1240 [001] {seconds}.{fraction:06}: {period} cpu-clock:\n"
            ));
            if let Some(function) = function {
                text.push_str(&format!("\t    55d0c0a01000 {function}+0x10 (/usr/bin/ibexd)\n"));
                text.push_str("\t    55d0c0a02000 main+0x20 (/usr/bin/ibexd)\n");
            }
            text.push('\n');
        }
        text
    }

    #[test]
    fn samples_fall_in_their_quarter_by_thread_and_function() {
        let bounds = QuarterBounds::from_log(log_to_height(8).as_bytes(), 0, 8).unwrap().unwrap();
        let at = |second, micros| epoch_micros(second, micros);
        let text = perf_text(&[
            ("ibexd", at(10, 700_000), 2_000_000, Some("connect_block")),
            ("ibex-script-0", at(10, 800_000), 1_000_000, Some("rocksdb::Seek")),
            ("ibex-script-1", at(11, 100_000), 1_000_000, Some("rocksdb::Seek")),
            ("rocksdb:low", at(16, 0), 5_000_000, Some("rocksdb::CompactionIterator::Next")),
            ("rocksdb:low", at(16, 10_000), 5_000_000, None),
            ("Core thread", at(14, 0), 3_000_000, Some("operator()")),
            ("ibexd", at(5, 0), 7_000_000, Some("startup")),
            ("ibexd", at(18, 0), 9_000_000, Some("shutdown")),
        ]);
        let profile = QuarterProfile::read(text.as_bytes(), &bounds).unwrap();
        assert_eq!(profile.unreadable_line_count, 0);
        assert_eq!(profile.outside_nanos, 16_000_000, "start-up and shutdown are in no quarter");
        assert_eq!(profile.total_nanos(0), 4_000_000);
        assert_eq!(profile.threads[0].get("ibex-script"), Some(&2_000_000), "one pool");
        let seek = ("ibex-script".to_owned(), "rocksdb::Seek".to_owned());
        assert_eq!(profile.functions[0].get(&seek), Some(&2_000_000));
        assert_eq!(profile.total_nanos(1), 0);
        assert_eq!(profile.threads[2].get("Core thread"), Some(&3_000_000), "names with spaces");
        assert_eq!(profile.total_nanos(3), 10_000_000);
        let unknown = ("rocksdb:low".to_owned(), "[unknown]".to_owned());
        assert_eq!(profile.functions[3].get(&unknown), Some(&5_000_000), "a sample without frames");
        let markdown = profile.markdown("ibexd", &bounds);
        assert!(markdown.contains("## Quarter 1: 1.0 s wall, 0.0 s CPU"), "{markdown}");
        assert!(
            markdown.contains("| 0.00 | 50.0 % | ibex-script | `rocksdb::Seek` |"),
            "{markdown}"
        );
        assert!(markdown.contains("## Quarter 4: 2.0 s wall"), "{markdown}");
        assert!(markdown.contains("`rocksdb::CompactionIterator::Next`"), "{markdown}");
    }

    #[test]
    fn unreadable_headers_are_counted_not_fatal() {
        let bounds = QuarterBounds { bounds_micros: [0, 10, 20, 30, 40] };
        let text = "not a sample header\n\tdeadbeef orphan_frame (/x)\n\nibexd 1/2 [000] 0.000015: 7 cpu-clock:\n\tabc f (/x)\n";
        let profile = QuarterProfile::read(text.as_bytes(), &bounds).unwrap();
        assert_eq!(profile.unreadable_line_count, 1);
        assert_eq!(profile.threads[1].get("ibexd"), Some(&7));
        // A header longer than a line may be is cut, counted and skipped;
        // bytes that are not UTF-8 do not stop the reading.
        let long_name = "x".repeat(LINE_BYTES_MAX);
        let mut bytes =
            format!("{long_name} 1/2 [000] 0.000015: 9 cpu-clock:\n\tabc f (/x)\n\n").into_bytes();
        bytes.extend_from_slice(b"ibexd\xff 1/2 [000] 0.000025: 5 cpu-clock:\n\tabc g (/x)\n");
        let profile = QuarterProfile::read(&bytes[..], &bounds).unwrap();
        assert_eq!(profile.unreadable_line_count, 1);
        assert_eq!(profile.total_nanos(2), 5, "only the readable sample");
        assert_eq!(thread_family("ibex-script-12"), "ibex-script");
        assert_eq!(thread_family("rocksdb:low"), "rocksdb:low");
        assert_eq!(thread_family("b-"), "b-");
        assert_eq!(seconds("1795839415.09"), Some(1_795_839_415_090_000));
        assert_eq!(
            frame_function("\t  55d0 std::vec::Vec<T>::push+0x1f (/bin/x)"),
            Some("std::vec::Vec<T>::push".to_owned())
        );
    }
}
