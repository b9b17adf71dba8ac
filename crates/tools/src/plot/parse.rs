//! Parsing `debug.log` lines (Bitcoin Core's and Ibex's) into one run's
//! series of tips and flushes.
//!
//! Napkin math: a mainnet IBD log holds about 900,000 `UpdateTip` lines of
//! ~250 bytes (~225 MB) plus other lines, up to several GB with debug
//! categories on. The file is streamed through a 64 KiB buffer, one line at a
//! time, each line capped at [`LINE_BYTES_MAX`]; only the tips are kept, 32
//! bytes each, so ~30 MB for mainnet. Reading is bound by the disk or by
//! UTF-8 checking, a few hundred MB/s.

use std::io::{self, BufRead};

/// The longest line kept; longer lines are skipped (an `UpdateTip` line is
/// about 250 bytes, with warnings under 1 KiB).
pub const LINE_BYTES_MAX: usize = 64 * 1024;

const MICROS_PER_SECOND: i64 = 1_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

/// The fields of an `UpdateTip: new best=...` line this tool uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TipLine {
    /// `height=`.
    pub height: u32,
    /// `tx=`: transactions in the chain up to this block.
    pub transaction_count: u64,
    /// `cache=XMiB(...)`: the UTXO cache's size in MiB.
    pub cache_mebibytes: f64,
    /// `cache=...(Ntxo)`: coins in the UTXO cache.
    pub cache_coin_count: u64,
}

/// What one log line says, as far as plotting cares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineEvent {
    /// A new tip (`UpdateTip`).
    Tip(TipLine),
    /// The chainstate was flushed: Ibex's `FlushStateToDisk (reason): ...`
    /// or Core's `FlushStateToDisk: write coins cache to disk (...) completed`.
    Flush,
    /// `Shutdown: done`: the end of one run of the node.
    ShutdownDone,
    /// Any other line.
    Other,
}

/// Parses the timestamp at the start of a line, `2026-11-24T14:46:47Z` or
/// with microseconds (`-logtimemicros`) `2026-11-24T14:46:47.123456Z`, into
/// microseconds since the Unix epoch.
pub fn parse_timestamp_micros(line: &str) -> Option<i64> {
    let bytes = line.as_bytes();
    let number = |start: usize, length: usize| -> Option<i64> {
        let digits = bytes.get(start..start + length)?;
        digits.iter().try_fold(0i64, |value, digit| {
            digit.is_ascii_digit().then(|| value * 10 + i64::from(digit - b'0'))
        })
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if separators.iter().any(|&(index, expected)| bytes.get(index) != Some(&expected)) {
        return None;
    }
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let fraction_micros = match bytes.get(19) {
        Some(b'Z') => 0,
        Some(b'.') => {
            let length = bytes[20..].iter().take_while(|byte| byte.is_ascii_digit()).count();
            if length == 0 || length > 9 || bytes.get(20 + length) != Some(&b'Z') {
                return None;
            }
            // Scale any number of fraction digits to microseconds.
            let value = number(20, length)?;
            let scale = 10i64.pow(length.abs_diff(6) as u32);
            if length >= 6 {
                value / scale
            } else {
                value * scale
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * SECONDS_PER_DAY + hour * 3_600 + minute * 60 + second;
    Some(seconds * MICROS_PER_SECOND + fraction_micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The value of `key` (which ends in `=`) in a line of space-separated
/// `key=value` fields.
fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let start = text.match_indices(key).find_map(|(index, _)| {
        let at_word_start = index == 0 || text.as_bytes().get(index - 1) == Some(&b' ');
        at_word_start.then_some(index + key.len())
    })?;
    let rest = &text[start..];
    Some(rest.split(' ').next().unwrap_or(rest))
}

/// Parses the fields after `UpdateTip: `.
fn parse_tip(text: &str) -> Option<TipLine> {
    let height = field(text, "height=")?.parse().ok()?;
    let transaction_count = field(text, "tx=")?.parse().ok()?;
    // `cache=12.3MiB(4567txo)`: older or odd lines without it still count.
    let (cache_mebibytes, cache_coin_count) = field(text, "cache=")
        .and_then(|cache| {
            let (size, coins) = cache.split_once("MiB(")?;
            Some((size.parse().ok()?, coins.strip_suffix("txo)")?.parse().ok()?))
        })
        .unwrap_or((0.0, 0));
    Some(TipLine { height, transaction_count, cache_mebibytes, cache_coin_count })
}

/// Whether a line reports a chainstate flush: Ibex's `FlushStateToDisk
/// (reason): ...` (not its `FlushStateToDisk start (reason)` line), Core's `-debug=bench` timer line `FlushStateToDisk: write
/// coins cache to disk (N coins, XkB) completed (Yms)` (not its `started`
/// line), or Core's `-debug=coindb` line `Committed N changed transaction
/// outputs (out of M) to coin database...`.
fn is_flush_line(line: &str) -> bool {
    line.contains("FlushStateToDisk (")
        || (line.contains("FlushStateToDisk: write coins cache to disk")
            && line.contains(" completed"))
        || (line.contains("Committed ") && line.contains(" to coin database"))
}

/// Parses one line: its timestamp and what it says. `None` for a line
/// without a timestamp (a continuation or a torn line).
pub fn parse_line(line: &str) -> Option<(i64, LineEvent)> {
    let time_micros = parse_timestamp_micros(line)?;
    let event = if let Some(index) = line.find("UpdateTip: new best=") {
        match parse_tip(&line[index..]) {
            Some(tip) => LineEvent::Tip(tip),
            None => LineEvent::Other,
        }
    } else if is_flush_line(line) {
        LineEvent::Flush
    } else if line.contains("Shutdown: done") {
        LineEvent::ShutdownDone
    } else {
        LineEvent::Other
    };
    Some((time_micros, event))
}

/// Which lines of a log make up the run to plot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Start after the first `Shutdown: done` (the log holds an earlier run,
    /// e.g. the one that downloaded the blocks before a `-reindex-chainstate`).
    pub after_shutdown: bool,
    /// Keep only tips from this height on, and measure time from the moment
    /// the run first reached it.
    pub from_height: u32,
}

/// A tip the run reached, timed from the run's start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TipPoint {
    /// Microseconds since the run's start.
    pub elapsed_micros: i64,
    /// The tip's height.
    pub height: u32,
    /// Transactions in the chain up to the tip.
    pub transaction_count: u64,
    /// The UTXO cache's size in MiB.
    pub cache_mebibytes: f64,
    /// Coins in the UTXO cache.
    pub cache_coin_count: u64,
}

/// A chainstate flush, timed from the run's start, at the height of the tip
/// logged before it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlushPoint {
    /// Microseconds since the run's start.
    pub elapsed_micros: i64,
    /// The height of the tip then.
    pub height: u32,
}

/// One run's series: tips in strictly increasing height, and flushes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunSeries {
    /// The run's name (from the file name or `NAME=PATH`).
    pub name: String,
    /// Each height reached, at the time it was first reached.
    pub points: Vec<TipPoint>,
    /// The flushes, in log order; flush lines with no tip between them
    /// count once (Core reports one flush under both `-debug=bench` and
    /// `-debug=coindb`).
    pub flushes: Vec<FlushPoint>,
    /// Lines skipped as not UTF-8 or longer than [`LINE_BYTES_MAX`].
    pub skipped_line_count: u64,
    /// Tips at or below the highest height already reached (blocks
    /// disconnected or reconnected in reorganisations), not plotted.
    pub repeated_tip_count: u64,
}

impl RunSeries {
    /// The last (highest) tip, if any.
    pub fn final_point(&self) -> Option<&TipPoint> {
        self.points.last()
    }

    /// When the run first reached `height` or above, in microseconds.
    pub fn elapsed_micros_at(&self, height: u32) -> Option<i64> {
        let index = self.points.partition_point(|point| point.height < height);
        self.points.get(index).map(|point| point.elapsed_micros)
    }
}

/// Builds a [`RunSeries`] from lines fed one at a time.
///
/// Reorganisations: Core and Ibex log `UpdateTip` on every disconnect and
/// connect, so the height goes down and up again. Each height keeps the time
/// it was *first* reached: the curve then measures progress of the sync
/// (the reorganisation's cost shows as a flat stretch before new heights),
/// stays monotonic, and matches how Core's IBD benchmarks read the time to a
/// height. Keeping the last time instead would move a height's time later
/// than its successors' until those were reconnected too.
#[derive(Debug, Default)]
pub struct SeriesBuilder {
    options: ParseOptions,
    series: RunSeries,
    waiting_for_shutdown: bool,
    start_micros: Option<i64>,
    last_height: Option<u32>,
    flushed_since_tip: bool,
}

impl SeriesBuilder {
    /// A builder for the run named `name`.
    pub fn new(name: &str, options: ParseOptions) -> Self {
        Self {
            options,
            series: RunSeries { name: name.to_owned(), ..RunSeries::default() },
            waiting_for_shutdown: options.after_shutdown,
            start_micros: None,
            last_height: None,
            flushed_since_tip: false,
        }
    }

    /// Feeds one line's bytes (without or with its line ending).
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        match std::str::from_utf8(bytes) {
            Ok(line) => self.push_line(line),
            Err(_) => self.series.skipped_line_count += 1,
        }
    }

    /// Feeds one line.
    pub fn push_line(&mut self, line: &str) {
        let Some((time_micros, event)) = parse_line(line.trim_end()) else {
            return;
        };
        if self.waiting_for_shutdown {
            self.waiting_for_shutdown = event != LineEvent::ShutdownDone;
            return;
        }
        if self.start_micros.is_none() && self.options.from_height == 0 {
            self.start_micros = Some(time_micros);
        }
        match event {
            LineEvent::Tip(tip) => self.push_tip(time_micros, tip),
            LineEvent::Flush => {
                let (Some(start), Some(height)) = (self.start_micros, self.last_height) else {
                    return;
                };
                if !self.flushed_since_tip {
                    let elapsed_micros = time_micros.saturating_sub(start).max(0);
                    self.series.flushes.push(FlushPoint { elapsed_micros, height });
                    self.flushed_since_tip = true;
                }
            }
            LineEvent::ShutdownDone | LineEvent::Other => {}
        }
    }

    fn push_tip(&mut self, time_micros: i64, tip: TipLine) {
        if tip.height < self.options.from_height {
            return;
        }
        self.last_height = Some(tip.height);
        self.flushed_since_tip = false;
        let start = *self.start_micros.get_or_insert(time_micros);
        if self.series.final_point().is_some_and(|last| tip.height <= last.height) {
            self.series.repeated_tip_count += 1;
            return;
        }
        self.series.points.push(TipPoint {
            elapsed_micros: time_micros.saturating_sub(start).max(0),
            height: tip.height,
            transaction_count: tip.transaction_count,
            cache_mebibytes: tip.cache_mebibytes,
            cache_coin_count: tip.cache_coin_count,
        });
    }

    /// The series built so far.
    pub fn finish(self) -> RunSeries {
        self.series
    }
}

/// Reads one line into `line` (cleared first), keeping at most
/// [`LINE_BYTES_MAX`] bytes of it. Returns `None` at the end of input, else
/// whether the line was cut.
pub fn read_bounded_line<R: BufRead>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> io::Result<Option<bool>> {
    line.clear();
    let mut read_any = false;
    let mut truncated = false;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(read_any.then_some(truncated));
        }
        read_any = true;
        let newline = buffer.iter().position(|&byte| byte == b'\n');
        let taken = newline.map_or(buffer.len(), |index| index + 1);
        let room = LINE_BYTES_MAX.saturating_sub(line.len());
        truncated |= taken > room;
        line.extend_from_slice(&buffer[..taken.min(room)]);
        reader.consume(taken);
        if newline.is_some() {
            return Ok(Some(truncated));
        }
    }
}

/// Reads a whole log, line by line, into the series of the run named `name`.
pub fn read_series<R: BufRead>(
    name: &str,
    mut reader: R,
    options: ParseOptions,
) -> io::Result<RunSeries> {
    let mut builder = SeriesBuilder::new(name, options);
    let mut line = Vec::with_capacity(1024);
    while let Some(truncated) = read_bounded_line(&mut reader, &mut line)? {
        if truncated {
            builder.series.skipped_line_count += 1;
        } else {
            builder.push_bytes(&line);
        }
    }
    Ok(builder.finish())
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
