//! A sync progress display on standard error: an `indicatif` bar when
//! stderr is a terminal (height of target,
//! blocks/s, transactions/s, cache fill, the time left; in a sync from
//! peers also the best header's height, the peers and the download rate,
//! from [`NetworkGauges`]; once the engine's figures are attached, the
//! bytes of block and undo data on disk and, when blocks were pruned,
//! the prune height), otherwise one plain line at most every
//! `-progressinterval` milliseconds
//! ([`PROGRESS_INTERVAL_MS_DEFAULT`](crate::options::defaults::PROGRESS_INTERVAL_MS_DEFAULT)
//! unless given). The time left comes from [`crate::progress_estimate`]:
//! the work left (bytes of block data in an import, transactions from
//! peers) over its recent rate. The target is the best header's height (or
//! `-stopatheight` if lower); [`Progress::finish`] draws the last tip, so
//! a sync that reached its target ends at exactly 100 %.
//!
//! [`Progress::update`] is called once per connected block (up to ~10,000
//! times a second on early mainnet blocks), so it costs one uncontended
//! lock (the latest tip, kept for [`Progress::finish`]) and one atomic load
//! unless a redraw is due; a redraw (at most every [`BAR_INTERVAL_MS`] for
//! the bar) takes a mutex nobody else holds.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ibex_chainstate::{ChainMetrics, ImportPlan};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::progress_estimate::{format_duration, ChainPosition, Estimate, SyncEstimator};

/// Milliseconds between bar redraws.
pub const BAR_INTERVAL_MS: u64 = 100;

/// Where the display goes.
enum Output {
    Bar(ProgressBar),
    Plain(Mutex<Box<dyn Write + Send>>),
}

/// The chain at a new tip, as the display shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TipProgress {
    /// The tip's height.
    pub height: u32,
    /// Transactions in the chain up to the tip.
    pub chain_transactions: u64,
    /// The engine's best header height.
    pub best_header_height: u32,
    /// Core's verification progress at the tip.
    pub verification_progress: f64,
    /// Bytes the coins cache uses.
    pub cache_bytes: u64,
    /// The coins cache's limit in bytes.
    pub cache_bytes_max: u64,
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

/// What a redraw reads and updates.
#[derive(Debug)]
struct DrawState {
    previous: Option<Sample>,
    estimator: SyncEstimator,
}

/// The display. Share it by reference (`&Progress` is `Sync`).
pub struct Progress {
    output: Output,
    started: Instant,
    interval_ms: u64,
    next_draw_ms: AtomicU64,
    latest: Mutex<Option<TipProgress>>,
    state: Mutex<DrawState>,
    network: Arc<NetworkGauges>,
    /// The background chainstate's height (AssumeUTXO's validation
    /// towards the snapshot's base), while one runs.
    background_height: Mutex<Option<u32>>,
    /// The engine's figures: the block files' bytes and the prune height.
    chain: OnceLock<Arc<ChainMetrics>>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Progress")
            .field("interval_ms", &self.interval_ms)
            .finish_non_exhaustive()
    }
}

/// Takes a lock even if a panic poisoned it: the display's figures stay
/// usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Progress {
    /// A bar if stderr is a terminal, plain lines every `plain_interval_ms`
    /// otherwise.
    pub fn new(estimator: SyncEstimator, plain_interval_ms: u64) -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::bar(estimator)
        } else {
            Progress::plain(estimator, plain_interval_ms, Box::new(std::io::stderr()))
        }
    }

    /// A bar on stderr.
    pub fn bar(estimator: SyncEstimator) -> Progress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let template = "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}";
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress::with_output(Output::Bar(bar), estimator, BAR_INTERVAL_MS)
    }

    /// Plain lines to `writer` at most every `interval_ms`.
    pub fn plain(
        estimator: SyncEstimator,
        interval_ms: u64,
        writer: Box<dyn Write + Send>,
    ) -> Progress {
        Progress::with_output(Output::Plain(Mutex::new(writer)), estimator, interval_ms)
    }

    fn with_output(output: Output, estimator: SyncEstimator, interval_ms: u64) -> Progress {
        Progress {
            output,
            started: Instant::now(),
            interval_ms,
            next_draw_ms: AtomicU64::new(0),
            latest: Mutex::new(None),
            state: Mutex::new(DrawState { previous: None, estimator }),
            network: Arc::default(),
            background_height: Mutex::new(None),
            chain: OnceLock::new(),
        }
    }

    /// Reads the block files' bytes and the prune height from `metrics`
    /// at each redraw from now on (the first call counts).
    pub fn attach_chain_metrics(&self, metrics: Arc<ChainMetrics>) {
        let _ = self.chain.set(metrics);
    }

    /// The gauges the P2P side writes to.
    pub fn network_gauges(&self) -> Arc<NetworkGauges> {
        self.network.clone()
    }

    /// The background chainstate reached `height` (`None`: none runs any
    /// more); the next redraw shows it beside the active chain's.
    pub fn set_background_height(&self, height: Option<u32>) {
        *lock(&self.background_height) = height;
    }

    /// An import is about to connect `plan`'s blocks: the time left is
    /// counted in their bytes.
    pub fn set_import_plan(&self, plan: &ImportPlan) {
        lock(&self.state).estimator.set_plan(plan);
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Records the chain's new tip; redraws if the interval has passed.
    pub fn update(&self, tip: TipProgress) {
        *lock(&self.latest) = Some(tip);
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
        if claimed.is_ok() {
            self.draw(tip, elapsed_ms);
        }
    }

    /// Draws `tip` with the rates since the previous redraw and the time
    /// left.
    fn draw(&self, tip: TipProgress, elapsed_ms: u64) {
        let network = self.network.read();
        let bytes_received = network.map_or(0, |(_, _, bytes)| bytes);
        let sample = Sample {
            elapsed_ms,
            height: tip.height,
            chain_transactions: tip.chain_transactions,
            bytes_received,
        };
        let header_height = network.map_or(0, |(height, _, _)| height);
        let position = ChainPosition {
            elapsed_ms,
            height: tip.height,
            chain_transactions: tip.chain_transactions,
            best_header_height: tip.best_header_height.max(header_height),
            verification_progress: tip.verification_progress,
        };
        let (message, estimate) = {
            let mut state = lock(&self.state);
            let estimate = state.estimator.observe(position);
            let message = message(&mut state.previous, sample, &tip, network);
            (message, estimate)
        };
        let background = match *lock(&self.background_height) {
            Some(height) => format!(" background validation {height}"),
            None => String::new(),
        };
        let disk = self.chain.get().map_or_else(String::new, |chain| {
            let reading = chain.read();
            disk_text(reading.block_files_bytes, reading.prune_height)
        });
        let message = format!("{message}{disk}{background} ETA {}", eta_text(&estimate));
        match &self.output {
            Output::Bar(bar) => {
                bar.set_length(u64::from(estimate.target_height));
                bar.set_position(u64::from(tip.height));
                bar.set_message(message);
            }
            Output::Plain(writer) => {
                let line = plain_line(tip.height, estimate.target_height, &message);
                let _ = writeln!(lock(writer), "{line}");
            }
        }
    }

    /// Ends the display: draws the latest tip (so the last line or the bar
    /// shows where the sync ended, 100 % if it reached its target), then
    /// the time taken.
    pub fn finish(&self) {
        let latest = *lock(&self.latest);
        if let Some(tip) = latest {
            self.draw(tip, self.elapsed_ms());
        }
        match &self.output {
            Output::Bar(bar) => bar.finish(),
            Output::Plain(writer) => {
                let mut writer = lock(writer);
                let seconds = Duration::from_millis(self.elapsed_ms()).as_secs_f64();
                let _ = writeln!(writer, "progress: done in {seconds:.1} s");
                let _ = writer.flush();
            }
        }
    }
}

/// The time left as shown: `-` until a rate is known.
fn eta_text(estimate: &Estimate) -> String {
    estimate.remaining_seconds.map_or_else(|| "-".to_owned(), format_duration)
}

/// The rates since `previous` (which becomes `sample`) and the cache fill,
/// plus the P2P figures once the network side reports.
fn message(
    previous: &mut Option<Sample>,
    sample: Sample,
    tip: &TipProgress,
    network: Option<(u32, u32, u64)>,
) -> String {
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
    let cache_percent = if tip.cache_bytes_max == 0 {
        0.0
    } else {
        tip.cache_bytes as f64 * 100.0 / tip.cache_bytes_max as f64
    };
    let mut message = format!(
        "{blocks_per_second:.0} blk/s {transactions_per_second:.0} tx/s cache {:.1}MiB ({cache_percent:.0}%)",
        tip.cache_bytes as f64 / 1_048_576.0
    );
    if let Some((header_height, peers, _)) = network {
        message.push_str(&format!(
            " headers {header_height} peers {peers} down {:.1}MiB/s",
            bytes_per_second / 1_048_576.0
        ));
    }
    message
}

/// The block and undo data on disk, and the prune height when blocks were
/// pruned, shown as `getblockchaininfo`'s `pruneheight` (the lowest
/// height whose block is kept: `prune_height`, Core's `GetPruneHeight`,
/// plus one).
fn disk_text(block_files_bytes: u64, prune_height: Option<u32>) -> String {
    let mut text = format!(" blocks {:.1}MiB", block_files_bytes as f64 / 1_048_576.0);
    if let Some(height) = prune_height {
        text.push_str(&format!(" pruneheight {}", u64::from(height) + 1));
    }
    text
}

/// A plain line: height of target with the share done, then `message`.
fn plain_line(height: u32, target_height: u32, message: &str) -> String {
    if target_height == 0 {
        return format!("progress: height {height} {message}");
    }
    let percent = f64::from(height) * 100.0 / f64::from(target_height);
    format!("progress: height {height}/{target_height} ({percent:.2}%) {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn tip(height: u32, chain_transactions: u64, cache_bytes: u64) -> TipProgress {
        TipProgress {
            height,
            chain_transactions,
            best_header_height: 200,
            verification_progress: 0.5,
            cache_bytes,
            cache_bytes_max: 4_194_304,
        }
    }

    #[test]
    fn plain_lines_are_rate_limited_and_the_last_tip_ends_at_100_percent() {
        let output = Shared::default();
        let estimator = SyncEstimator::new(None, false);
        let progress = Progress::plain(estimator, 60_000, Box::new(output.clone()));
        progress.update(tip(50, 100, 1_048_576));
        for height in 51..=200 {
            progress.update(tip(height, 200, 0));
        }
        progress.finish();
        let text = output.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[0],
            "progress: height 50/200 (25.00%) 0 blk/s 0 tx/s cache 1.0MiB (25%) ETA -"
        );
        assert!(lines[1].starts_with("progress: height 200/200 (100.00%) "), "{text}");
        assert!(lines[1].ends_with(" ETA 0s"), "{text}");
        assert!(lines[2].starts_with("progress: done in "));
    }

    #[test]
    fn rates_between_redraws() {
        let mut previous = None;
        let first =
            Sample { elapsed_ms: 1_000, height: 10, chain_transactions: 100, bytes_received: 0 };
        let second =
            Sample { elapsed_ms: 3_000, height: 30, chain_transactions: 1_100, bytes_received: 0 };
        let half_full =
            TipProgress { cache_bytes: 512 * 1024, cache_bytes_max: 1_048_576, ..tip(0, 0, 0) };
        message(&mut previous, first, &half_full, None);
        let text = message(&mut previous, second, &half_full, None);
        assert_eq!(text, "10 blk/s 500 tx/s cache 0.5MiB (50%)");
        let output = Shared::default();
        let progress = Progress::plain(SyncEstimator::default(), 0, Box::new(output.clone()));
        progress.update(TipProgress { best_header_height: 0, ..tip(0, 8, 0) });
        assert!(output.text().starts_with("progress: height 0 "), "{}", output.text());
    }

    /// The import plan makes the time left count bytes: the second redraw
    /// has a rate, and the target is the stop height.
    #[test]
    fn an_import_plan_gives_the_time_left() {
        let output = Shared::default();
        let progress =
            Progress::plain(SyncEstimator::new(Some(100), false), 0, Box::new(output.clone()));
        let plan =
            ImportPlan { best_header_height: 200, first_height: 0, block_bytes: vec![1_000; 201] };
        progress.set_import_plan(&plan);
        progress.update(tip(0, 1, 0));
        std::thread::sleep(Duration::from_millis(20));
        progress.update(tip(50, 100, 0));
        let text = output.text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("progress: height 0/100 (0.00%) "), "{text}");
        assert!(lines[0].ends_with(" ETA -"), "{text}");
        // Half done in the time since the first line: as long again, a
        // time in seconds rather than `-`.
        assert!(lines[1].starts_with("progress: height 50/100 (50.00%) "), "{text}");
        let eta = lines[1].rsplit_once(" ETA ").unwrap().1;
        assert!(eta.ends_with('s') && eta != "0s", "{text}");
    }

    #[test]
    fn bar_follows_the_height_and_finishes_at_the_last_tip() {
        let progress = Progress::bar(SyncEstimator::default());
        progress.update(TipProgress { best_header_height: 10, ..tip(5, 5, 10) });
        let Output::Bar(bar) = &progress.output else { panic!("not a bar") };
        assert_eq!(bar.position(), 5);
        assert_eq!(bar.length(), Some(10));
        assert!(bar.message().contains("cache 0.0MiB (0%) ETA"), "{}", bar.message());
        // Within the redraw interval the bar keeps its figures...
        progress.update(TipProgress { best_header_height: 10, ..tip(10, 6, 10) });
        assert_eq!(bar.position(), 5);
        // ...and the end draws the last tip.
        progress.finish();
        assert!(bar.is_finished());
        assert_eq!(bar.position(), 10);
        assert!(bar.message().ends_with(" ETA 0s"), "{}", bar.message());
    }

    #[test]
    fn a_sync_from_peers_shows_headers_peers_and_download_rate() {
        let network = Some((4_420, 3, 6 << 20));
        let mut previous = None;
        let first =
            Sample { elapsed_ms: 1_000, height: 10, chain_transactions: 100, bytes_received: 0 };
        let at_ten = tip(10, 100, 0);
        // Before the P2P side reports, nothing network is shown.
        assert!(!message(&mut previous, first, &at_ten, None).contains("headers"));
        let second = Sample {
            elapsed_ms: 3_000,
            height: 30,
            chain_transactions: 1_100,
            bytes_received: 6 << 20,
        };
        let text = message(&mut previous, second, &at_ten, network);
        assert!(text.ends_with(" headers 4420 peers 3 down 3.0MiB/s"), "{text}");
    }

    #[test]
    fn the_disk_shows_block_files_and_the_prune_height() {
        assert_eq!(disk_text(3 << 19, None), " blocks 1.5MiB");
        assert_eq!(disk_text(550 << 20, Some(1_233)), " blocks 550.0MiB pruneheight 1234");
        let output = Shared::default();
        let progress = Progress::plain(SyncEstimator::default(), 0, Box::new(output.clone()));
        progress.attach_chain_metrics(Arc::new(ChainMetrics::default()));
        progress.update(tip(50, 100, 0));
        let text = output.text();
        assert!(text.contains("cache 0.0MiB (0%) blocks 0.0MiB ETA"), "{text}");
    }

    #[test]
    fn the_bar_reaches_to_the_best_header_in_a_sync_from_peers() {
        let progress = Progress::bar(SyncEstimator::default());
        progress.network_gauges().set(900, 1, 0);
        progress.update(TipProgress { best_header_height: 100, ..tip(100, 100, 0) });
        let Output::Bar(bar) = &progress.output else { panic!("not a bar") };
        assert_eq!(bar.length(), Some(900));
        assert_eq!(bar.position(), 100);
    }
}
