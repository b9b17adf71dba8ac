//! A sync progress display on standard error: an `indicatif` bar when
//! stderr is a terminal (height of target, blocks/s, transactions/s, cache
//! fill, ETA; in a sync from peers also the best header's height, the
//! peers and the download rate, from [`NetworkGauges`]), otherwise one
//! plain line at most every [`PLAIN_INTERVAL_MS_DEFAULT`] milliseconds.
//!
//! [`Progress::update`] is called once per connected block (up to ~10,000
//! times a second on early mainnet blocks), so it costs two relaxed atomic
//! stores and one atomic load unless a redraw is due; a redraw (at most
//! every [`BAR_INTERVAL_MS`] for the bar) takes a mutex nobody else holds.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    bytes_received: u64,
}

/// What the P2P side shows on the display: written by the sync loop (a
/// few relaxed stores a tick), read at each redraw.
#[derive(Debug, Default)]
pub struct NetworkGauges {
    attached: AtomicBool,
    header_height: AtomicU32,
    peers: AtomicU32,
    bytes_received: AtomicU64,
}

impl NetworkGauges {
    /// The P2P side's figures now: the best header's height, connected
    /// peers and bytes received since the start.
    pub fn set(&self, header_height: u32, peers: usize, bytes_received: u64) {
        self.header_height.store(header_height, Ordering::Relaxed);
        self.peers.store(u32::try_from(peers).unwrap_or(u32::MAX), Ordering::Relaxed);
        self.bytes_received.store(bytes_received, Ordering::Relaxed);
        self.attached.store(true, Ordering::Relaxed);
    }

    /// The figures, once the P2P side has set them.
    fn read(&self) -> Option<(u32, u32, u64)> {
        if !self.attached.load(Ordering::Relaxed) {
            return None;
        }
        Some((
            self.header_height.load(Ordering::Relaxed),
            self.peers.load(Ordering::Relaxed),
            self.bytes_received.load(Ordering::Relaxed),
        ))
    }
}

/// The display. Share it by reference (`&Progress` is `Sync`).
pub struct Progress {
    output: Output,
    target_height: Option<u32>,
    started: Instant,
    interval_ms: u64,
    next_draw_ms: AtomicU64,
    previous: Mutex<Option<Sample>>,
    network: Arc<NetworkGauges>,
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
            network: Arc::default(),
        }
    }

    /// The gauges the P2P side writes to.
    pub fn network_gauges(&self) -> Arc<NetworkGauges> {
        self.network.clone()
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
        let network = self.network.read();
        let bytes_received = network.map_or(0, |(_, _, bytes)| bytes);
        let sample = Sample { elapsed_ms, height, chain_transactions, bytes_received };
        let message = self.message(sample, cache_bytes, cache_bytes_max);
        match &self.output {
            Output::Bar(bar) => {
                if let Some((header_height, _, _)) =
                    network.filter(|_| self.target_height.is_none())
                {
                    bar.set_length(u64::from(header_height.max(height)));
                }
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
        let (blocks_per_second, transactions_per_second, bytes_per_second) = match *previous {
            Some(before) if sample.elapsed_ms > before.elapsed_ms => {
                let seconds = (sample.elapsed_ms - before.elapsed_ms) as f64 / 1000.0;
                let blocks = f64::from(sample.height.saturating_sub(before.height));
                let transactions =
                    sample.chain_transactions.saturating_sub(before.chain_transactions) as f64;
                let bytes = sample.bytes_received.saturating_sub(before.bytes_received) as f64;
                (blocks / seconds, transactions / seconds, bytes / seconds)
            }
            _ => (0.0, 0.0, 0.0),
        };
        *previous = Some(sample);
        let cache_percent = if cache_bytes_max == 0 {
            0.0
        } else {
            cache_bytes as f64 * 100.0 / cache_bytes_max as f64
        };
        let mut message = format!(
            "{blocks_per_second:.0} blk/s {transactions_per_second:.0} tx/s cache {:.1}MiB ({cache_percent:.0}%)",
            cache_bytes as f64 / 1_048_576.0
        );
        if let Some((header_height, peers, _)) = self.network.read() {
            message.push_str(&format!(
                " headers {header_height} peers {peers} down {:.1}MiB/s",
                bytes_per_second / 1_048_576.0
            ));
        }
        message
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
        let first =
            Sample { elapsed_ms: 1_000, height: 10, chain_transactions: 100, bytes_received: 0 };
        let second =
            Sample { elapsed_ms: 3_000, height: 30, chain_transactions: 1_100, bytes_received: 0 };
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

    #[test]
    fn a_sync_from_peers_shows_headers_peers_and_download_rate() {
        let progress = Progress::plain(None, 0, Box::new(Shared::default()));
        let gauges = progress.network_gauges();
        let first =
            Sample { elapsed_ms: 1_000, height: 10, chain_transactions: 100, bytes_received: 0 };
        // Before the P2P side reports, nothing network is shown.
        assert!(!progress.message(first, 0, 0).contains("headers"));
        gauges.set(4_420, 3, 6 << 20);
        let second = Sample {
            elapsed_ms: 3_000,
            height: 30,
            chain_transactions: 1_100,
            bytes_received: 6 << 20,
        };
        let message = progress.message(second, 0, 0);
        assert!(message.ends_with(" headers 4420 peers 3 down 3.0MiB/s"), "{message}");
    }

    #[test]
    fn the_bar_reaches_to_the_best_header_in_a_sync_from_peers() {
        let progress = Progress::bar(None);
        progress.network_gauges().set(900, 1, 0);
        progress.update(100, 100, 0, 0);
        let Output::Bar(bar) = &progress.output else { panic!("not a bar") };
        assert_eq!(bar.length(), Some(900));
        assert_eq!(bar.position(), 100);
    }
}
