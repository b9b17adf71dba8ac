//! A sync progress display on standard error: an `indicatif` bar when
//! stderr is a terminal (height of target, blocks/s, transactions/s, cache
//! fill, ETA), otherwise one plain line at most every
//! [`PLAIN_INTERVAL_MS_DEFAULT`] milliseconds.
//!
//! [`Progress::update`] is called once per connected block (up to ~10,000
//! times a second on early mainnet blocks), so it costs two relaxed atomic
//! stores and one atomic load unless a redraw is due; a redraw (at most
//! every [`BAR_INTERVAL_MS`] for the bar) takes a mutex nobody else holds.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Milliseconds between plain-text lines when stderr is not a terminal.
pub const PLAIN_INTERVAL_MS_DEFAULT: u64 = 10_000;
/// Milliseconds between bar redraws.
pub const BAR_INTERVAL_MS: u64 = 100;

/// Where the display goes.
enum Output {
    Bar(ProgressBar),
    Plain(Mutex<Box<dyn Write + Send>>),
}

/// The figures at one moment, for rates.
#[derive(Debug, Clone, Copy)]
struct Sample {
    elapsed_ms: u64,
    height: u32,
    chain_transactions: u64,
}

/// The display. Share it by reference (`&Progress` is `Sync`).
pub struct Progress {
    output: Output,
    target_height: Option<u32>,
    started: Instant,
    interval_ms: u64,
    next_draw_ms: AtomicU64,
    previous: Mutex<Option<Sample>>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Progress")
            .field("target_height", &self.target_height)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// A bar if stderr is a terminal, plain lines otherwise.
    pub fn new(target_height: Option<u32>) -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::bar(target_height)
        } else {
            Progress::plain(target_height, PLAIN_INTERVAL_MS_DEFAULT, Box::new(std::io::stderr()))
        }
    }

    fn bar(target_height: Option<u32>) -> Progress {
        let bar = ProgressBar::with_draw_target(
            target_height.map(u64::from),
            ProgressDrawTarget::stderr(),
        );
        let template = match target_height {
            Some(_) => "{elapsed_precise} [{bar:30}] {pos}/{len} {msg} ETA {eta}",
            None => "{elapsed_precise} {spinner} height {pos} {msg}",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress::with_output(Output::Bar(bar), target_height, BAR_INTERVAL_MS)
    }

    /// Plain lines to `writer` at most every `interval_ms`.
    pub fn plain(
        target_height: Option<u32>,
        interval_ms: u64,
        writer: Box<dyn Write + Send>,
    ) -> Progress {
        Progress::with_output(Output::Plain(Mutex::new(writer)), target_height, interval_ms)
    }

    fn with_output(output: Output, target_height: Option<u32>, interval_ms: u64) -> Progress {
        Progress {
            output,
            target_height,
            started: Instant::now(),
            interval_ms,
            next_draw_ms: AtomicU64::new(0),
            previous: Mutex::new(None),
        }
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Records the chain's new state; redraws if the interval has passed.
    pub fn update(
        &self,
        height: u32,
        chain_transactions: u64,
        cache_bytes: u64,
        cache_bytes_max: u64,
    ) {
        let elapsed_ms = self.elapsed_ms();
        let next = self.next_draw_ms.load(Ordering::Relaxed);
        if elapsed_ms < next {
            return;
        }
        // One caller wins the redraw; the others go back to work.
        let claimed = self.next_draw_ms.compare_exchange(
            next,
            elapsed_ms.saturating_add(self.interval_ms),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        if claimed.is_err() {
            return;
        }
        let sample = Sample { elapsed_ms, height, chain_transactions };
        let message = self.message(sample, cache_bytes, cache_bytes_max);
        match &self.output {
            Output::Bar(bar) => {
                bar.set_position(u64::from(height));
                bar.set_message(message);
            }
            Output::Plain(writer) => {
                let mut writer = writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                let _ = writeln!(writer, "{}", self.plain_line(height, &message));
            }
        }
    }

    /// The rates since the previous redraw and the cache fill.
    fn message(&self, sample: Sample, cache_bytes: u64, cache_bytes_max: u64) -> String {
        let mut previous = self.previous.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (blocks_per_second, transactions_per_second) = match *previous {
            Some(before) if sample.elapsed_ms > before.elapsed_ms => {
                let seconds = (sample.elapsed_ms - before.elapsed_ms) as f64 / 1000.0;
                let blocks = f64::from(sample.height.saturating_sub(before.height));
                let transactions =
                    sample.chain_transactions.saturating_sub(before.chain_transactions) as f64;
                (blocks / seconds, transactions / seconds)
            }
            _ => (0.0, 0.0),
        };
        *previous = Some(sample);
        let cache_percent = if cache_bytes_max == 0 {
            0.0
        } else {
            cache_bytes as f64 * 100.0 / cache_bytes_max as f64
        };
        format!(
            "{blocks_per_second:.0} blk/s {transactions_per_second:.0} tx/s cache {:.1}MiB ({cache_percent:.0}%)",
            cache_bytes as f64 / 1_048_576.0
        )
    }

    fn plain_line(&self, height: u32, message: &str) -> String {
        match self.target_height {
            Some(target) if target > 0 => {
                let percent = f64::from(height) * 100.0 / f64::from(target);
                format!("progress: height {height}/{target} ({percent:.2}%) {message}")
            }
            _ => format!("progress: height {height} {message}"),
        }
    }

    /// Ends the display (the bar stays on screen with its last figures).
    pub fn finish(&self) {
        match &self.output {
            Output::Bar(bar) => bar.finish(),
            Output::Plain(writer) => {
                let mut writer = writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                let seconds = Duration::from_millis(self.elapsed_ms()).as_secs_f64();
                let _ = writeln!(writer, "progress: done in {seconds:.1} s");
                let _ = writer.flush();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn plain_lines_are_rate_limited() {
        let output = Shared::default();
        let progress = Progress::plain(Some(200), 60_000, Box::new(output.clone()));
        progress.update(50, 100, 1_048_576, 4_194_304);
        for height in 51..1000 {
            progress.update(height, 200, 0, 4_194_304);
        }
        progress.finish();
        let text = output.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0], "progress: height 50/200 (25.00%) 0 blk/s 0 tx/s cache 1.0MiB (25%)");
        assert!(lines[1].starts_with("progress: done in "));
    }

    #[test]
    fn rates_between_redraws() {
        let output = Shared::default();
        let progress = Progress::plain(None, 0, Box::new(output.clone()));
        let first = Sample { elapsed_ms: 1_000, height: 10, chain_transactions: 100 };
        let second = Sample { elapsed_ms: 3_000, height: 30, chain_transactions: 1_100 };
        progress.message(first, 0, 0);
        let message = progress.message(second, 512 * 1024, 1_048_576);
        assert_eq!(message, "10 blk/s 500 tx/s cache 0.5MiB (50%)");
        std::thread::sleep(Duration::from_millis(2));
        progress.update(7, 8, 0, 0);
        assert!(output.text().starts_with("progress: height 7 "), "{}", output.text());
    }

    #[test]
    fn bar_follows_the_height() {
        let progress = Progress::bar(Some(10));
        progress.update(5, 5, 10, 20);
        let Output::Bar(bar) = &progress.output else { panic!("not a bar") };
        assert_eq!(bar.position(), 5);
        assert_eq!(bar.length(), Some(10));
        assert!(bar.message().ends_with("cache 0.0MiB (50%)"), "{}", bar.message());
        // Within the redraw interval the bar keeps its figures.
        progress.update(6, 6, 10, 20);
        assert_eq!(bar.position(), 5);
        progress.finish();
        assert!(bar.is_finished());
    }
}
