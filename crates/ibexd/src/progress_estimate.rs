//! How long a sync has left: the work left divided by the recent rate of
//! that same work.
//!
//! Blocks are a poor unit: a mainnet block of 2010 holds a few hundred
//! bytes, one of 2024 about 1.5 MB, so a rate in blocks per second measured
//! early promises an end that keeps receding (as a generic progress bar's
//! time left, counted in blocks, does). The unit here is, in order of
//! preference:
//! - **bytes of block data**, when an import's plan ([`ImportPlan`]: every
//!   block's size, read from the block files' records before any block) covers
//!   the blocks up to the target: the work left is known exactly;
//! - **transactions**, otherwise (a sync from peers, where the blocks ahead
//!   are not yet known): on a network with real chain statistics the count
//!   Core's progress estimate implies (`count / progress - count`), else the
//!   blocks left times the recent transactions per block.
//!
//! The rate is an exponentially weighted average over about
//! [`RATE_SMOOTHING_MS`] (30 s): the sums of the work done and of the time
//! taken, both decayed by `exp(-age / 30 s)`, divided. Unlike an average of
//! per-interval rates it weighs each interval by its duration (irregular
//! redraws do not bias it), and before 30 s have passed it is simply the
//! average since the start instead of leaning on the first sample.
//! Observing costs a few floating-point operations per redraw (at most ten
//! a second), nothing per block.
//!
//! Measured on the bench chain (`-reindex` to height 2,400, quiet machine):
//! within 17 % of the real time left from 10 % of the height on, where the
//! same average over blocks was 51 % short at 10 % (96 % with every script
//! checked); see `docs/benchmarks.md` and `scripts/measure-eta.py`.

use ibex_chainstate::ImportPlan;

/// The time constant of the rates' moving average, in milliseconds.
pub const RATE_SMOOTHING_MS: u64 = 30_000;

/// Two sums decayed together, for a ratio over the recent past.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DecayedRatio {
    numerator: f64,
    denominator: f64,
}

impl DecayedRatio {
    /// Multiplies both sums by `decay` (in 0..=1) and adds one interval's
    /// amounts.
    pub fn add(&mut self, decay: f64, numerator: f64, denominator: f64) {
        self.numerator = self.numerator * decay + numerator;
        self.denominator = self.denominator * decay + denominator;
    }

    /// The ratio of the sums, once the denominator is above zero.
    pub fn ratio(&self) -> Option<f64> {
        (self.denominator > 0.0).then(|| self.numerator / self.denominator)
    }
}

/// A rate of work per second, smoothed over [`RATE_SMOOTHING_MS`], fed the
/// work done so far at (irregular) times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SmoothedRate {
    last: Option<(u64, f64)>,
    work_per_second: DecayedRatio,
}

/// The weight left after `elapsed_ms` (`exp(-elapsed / RATE_SMOOTHING_MS)`).
fn decay_after(elapsed_ms: u64) -> f64 {
    (-(elapsed_ms as f64) / RATE_SMOOTHING_MS as f64).exp()
}

impl SmoothedRate {
    /// Records that `work_done` units were done by `elapsed_ms` (work that
    /// went back, as in a reorganisation, counts as none).
    pub fn observe(&mut self, elapsed_ms: u64, work_done: f64) {
        if let Some((last_ms, last_work)) = self.last {
            if elapsed_ms <= last_ms {
                return;
            }
            let interval_ms = elapsed_ms - last_ms;
            let work = (work_done - last_work).max(0.0);
            self.work_per_second.add(decay_after(interval_ms), work, interval_ms as f64 / 1000.0);
        }
        self.last = Some((elapsed_ms, work_done));
    }

    /// Units per second, once two observations are apart.
    pub fn per_second(&self) -> Option<f64> {
        self.work_per_second.ratio()
    }

    /// Seconds to do `remaining` more units at the current rate.
    pub fn seconds_for(&self, remaining: f64) -> Option<f64> {
        if remaining <= 0.0 {
            return Some(0.0);
        }
        self.per_second().filter(|rate| *rate > 0.0).map(|rate| remaining / rate)
    }
}

/// An import plan as running totals: the bytes of block data up to each
/// height.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedBytes {
    first_height: u32,
    /// `cumulative_bytes[i]`: bytes of the blocks `first_height ..=
    /// first_height + i`.
    cumulative_bytes: Vec<u64>,
}

impl PlannedBytes {
    /// The running totals of `plan`; `None` for an empty plan.
    pub fn from_plan(plan: &ImportPlan) -> Option<PlannedBytes> {
        let mut total = 0u64;
        let cumulative_bytes: Vec<u64> = plan
            .block_bytes
            .iter()
            .map(|&bytes| {
                total += u64::from(bytes);
                total
            })
            .collect();
        (!cumulative_bytes.is_empty())
            .then_some(PlannedBytes { first_height: plan.first_height, cumulative_bytes })
    }

    /// The last height the plan covers.
    pub fn last_height(&self) -> u32 {
        let length = u32::try_from(self.cumulative_bytes.len()).unwrap_or(u32::MAX);
        self.first_height.saturating_add(length - 1)
    }

    /// Bytes of the planned blocks up to and including `height`.
    pub fn bytes_through(&self, height: u32) -> u64 {
        if height < self.first_height {
            return 0;
        }
        let index = (height - self.first_height) as usize;
        let last = self.cumulative_bytes.len() - 1;
        self.cumulative_bytes[index.min(last)]
    }

    /// Whether the plan says how much is left from `height` to `target`.
    pub fn covers(&self, height: u32, target: u32) -> bool {
        height.saturating_add(1) >= self.first_height && target <= self.last_height()
    }
}

/// Where the chain is at a redraw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainPosition {
    /// Milliseconds since the display started.
    pub elapsed_ms: u64,
    /// The tip's height.
    pub height: u32,
    /// Transactions in the chain up to the tip.
    pub chain_transactions: u64,
    /// The best header's height (the engine's or the peers', whichever is
    /// higher).
    pub best_header_height: u32,
    /// Core's verification progress at the tip (`GuessVerificationProgress`).
    pub verification_progress: f64,
}

/// What the display shows of the work left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The height the sync is going to: the best header, or `-stopatheight`
    /// if lower.
    pub target_height: u32,
    /// Seconds left at the recent rate; `None` until a rate is known.
    pub remaining_seconds: Option<f64>,
}

/// The remaining-time estimator of a sync or import (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct SyncEstimator {
    stop_height: Option<u32>,
    transaction_forecast: bool,
    plan: Option<PlannedBytes>,
    bytes_rate: SmoothedRate,
    transactions_rate: SmoothedRate,
    transactions_per_block: DecayedRatio,
    last: Option<ChainPosition>,
}

impl SyncEstimator {
    /// An estimator for a node stopping at `stop_height` (if any);
    /// `transaction_forecast` when the network's chain statistics are real
    /// (not regtest's placeholder), so Core's progress implies the
    /// transactions left.
    pub fn new(stop_height: Option<u32>, transaction_forecast: bool) -> SyncEstimator {
        SyncEstimator { stop_height, transaction_forecast, ..SyncEstimator::default() }
    }

    /// An import is about to connect `plan`'s blocks.
    pub fn set_plan(&mut self, plan: &ImportPlan) {
        self.plan = PlannedBytes::from_plan(plan);
        self.bytes_rate = SmoothedRate::default();
    }

    /// The height the sync goes to from `position`.
    pub fn target_height(&self, position: &ChainPosition) -> u32 {
        let target = match self.stop_height {
            Some(stop) => position.best_header_height.min(stop),
            None => position.best_header_height,
        };
        target.max(position.height)
    }

    /// Takes in `position` and estimates what is left from it.
    pub fn observe(&mut self, position: ChainPosition) -> Estimate {
        let target_height = self.target_height(&position);
        self.transactions_rate.observe(position.elapsed_ms, position.chain_transactions as f64);
        if let Some(previous) = self.last.filter(|last| position.elapsed_ms > last.elapsed_ms) {
            let blocks = f64::from(position.height.saturating_sub(previous.height));
            let transactions =
                position.chain_transactions.saturating_sub(previous.chain_transactions) as f64;
            let decay = decay_after(position.elapsed_ms - previous.elapsed_ms);
            self.transactions_per_block.add(decay, transactions, blocks);
        }
        self.last = Some(position);
        if position.height >= target_height {
            return Estimate { target_height, remaining_seconds: Some(0.0) };
        }
        let remaining_seconds = match &self.plan {
            Some(plan) if plan.covers(position.height, target_height) => {
                let done = plan.bytes_through(position.height);
                self.bytes_rate.observe(position.elapsed_ms, done as f64);
                let remaining = plan.bytes_through(target_height).saturating_sub(done);
                self.bytes_rate.seconds_for(remaining as f64)
            }
            _ => self
                .transactions_left(&position, target_height)
                .and_then(|remaining| self.transactions_rate.seconds_for(remaining)),
        };
        Estimate { target_height, remaining_seconds }
    }

    /// Transactions between the tip and `target_height`: from Core's
    /// progress estimate when the network's statistics are real and the
    /// target is the best header, else the blocks left times the recent
    /// transactions per block.
    fn transactions_left(&self, position: &ChainPosition, target_height: u32) -> Option<f64> {
        let progress = position.verification_progress;
        if self.transaction_forecast
            && target_height == position.best_header_height
            && progress > 0.0
            && progress <= 1.0
        {
            let count = position.chain_transactions as f64;
            return Some(count / progress - count);
        }
        let per_block = self.transactions_per_block.ratio()?;
        Some(f64::from(target_height - position.height) * per_block)
    }
}

/// A duration for the display: `4.3s` (tenths below ten seconds, where a
/// whole second is a large share), `42s`, `3m05s`, `2h03m`; `0s` for none.
pub fn format_duration(seconds: f64) -> String {
    if !seconds.is_finite() {
        return "?".to_owned();
    }
    let seconds = seconds.max(0.0);
    if seconds == 0.0 {
        return "0s".to_owned();
    }
    if seconds < 9.95 {
        return format!("{seconds:.1}s");
    }
    let whole = seconds.round() as u64;
    match whole {
        0..=59 => format!("{whole}s"),
        60..=3_599 => format!("{}m{:02}s", whole / 60, whole % 60),
        _ => format!("{}h{:02}m", whole / 3_600, whole / 60 % 60),
    }
}

#[cfg(test)]
#[path = "progress_estimate_tests.rs"]
mod tests;
