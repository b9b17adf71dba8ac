//! The pass over blocks 1 to `H`, as they come: worker threads take the
//! blocks the engine hands them (a block just accepted, parsed already,
//! or a stored one, read back from its file) in whatever order, each
//! accounting its own and keeping its own aggregate, sums and coins; once
//! every block was handed over, the engine merges their sums and judges.
//! Accounting overlaps the download, so a sync from peers ends about when
//! its last block arrives.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ibex_consensus::swiftsync::supply_limit_through;
use ibex_primitives::hints::{HintsFile, OutpointHasher, AGGREGATE_SALT_BYTES};
use ibex_primitives::{BlockHash, Params};

use super::checkpoint::{hints_digest, PassCheckpoint};
use super::claimed::ClaimedSpentCoins;
use super::full::ChainTimes;
use super::holding::{Holds, RecentRuns};
use super::job::{PassJob, RunBlock};
use super::recent::RecentBlocks;
use super::refusals::{JobsOut, RefusedJob, SpentCoinsRefusal};
use super::refusals::{SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX, SPENT_COINS_REFUSALS_PER_BLOCK_MAX};
use super::sums::PassSums;
use super::worker::{account_blocks, WorkerEnd, WorkerSlot, WorkerTotals};
use super::{SwiftSyncFailure, SwiftSyncMode};
use crate::block_read_ahead::BlockFiles;
use crate::block_source::BlockSource;
use crate::coins::database::staged::{CoinBuckets, STAGING_MARKER};
use crate::coins::database::CoinsDatabase;
use crate::error::ChainstateError;
use crate::index::EntryId;
use crate::prepared::PreparedBlock;

/// Blocks waiting for a worker per worker: the engine waits when they are
/// all taken (a bound on the memory of blocks handed over parsed).
const JOBS_WAITING_PER_WORKER_MAX: usize = 2;

/// What the pass needs, shared by its workers.
pub(crate) struct PassSetup {
    /// Where the blocks are.
    pub(crate) files: BlockFiles,
    /// The hints.
    pub(crate) hints: Arc<HintsFile>,
    /// The database the coins are staged in.
    pub(crate) database: Arc<CoinsDatabase>,
    /// Network parameters.
    pub(crate) params: Params,
    /// Threads accounting blocks.
    pub(crate) worker_count: usize,
    /// Bytes of coins a worker holds before it appends them to the
    /// buckets, and a bucket's size once read back.
    pub(crate) run_bytes_max: usize,
    /// Set when the node shuts down.
    pub(crate) interrupt: Option<Arc<AtomicBool>>,
    /// How blocks are checked.
    pub(crate) mode: SwiftSyncMode,
    /// The terminal chain's median times past (the fully validating mode).
    pub(crate) times: ChainTimes,
    /// The terminal block (named in a checkpoint).
    pub(crate) terminal_hash: BlockHash,
    /// How often the pass keeps a checkpoint while it runs.
    pub(crate) checkpoint_interval: Duration,
}

/// The workers' shared state.
pub(super) struct PassContext {
    pub(super) setup: PassSetup,
    pub(super) hasher: OutpointHasher,
    pub(super) buckets: CoinBuckets,
    /// Set by a worker that failed (the others stop) or when the pass is
    /// dropped.
    pub(super) stop: AtomicBool,
    /// Blocks handed over and not settled, and the coins refused.
    pub(super) jobs_out: JobsOut,
    /// Each worker's sums and coins not appended yet.
    slots: Vec<Mutex<WorkerSlot>>,
    /// Recent blocks' outputs, for the coins requests left out.
    pub(super) recent: RecentBlocks,
}

/// What the pass found, once the proof held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PassTotals {
    /// Coins written.
    pub(crate) coin_count: u64,
    /// Inputs subtracted.
    pub(crate) input_count: u64,
    /// Writing the staged coins as tables, in milliseconds.
    pub(crate) tables_ms: u64,
}

/// How a pass ended without a fault of the machine.
#[derive(Debug)]
pub(crate) enum PassEnd {
    /// The proof held.
    Proven(PassTotals),
    /// It did not, or a block was wrong.
    Failed(SwiftSyncFailure),
    /// The node is shutting down, and the pass kept a checkpoint with this
    /// many blocks accounted (`super::checkpoint`).
    Suspended {
        /// Blocks accounted.
        accounted_count: u32,
    },
}

/// A pass in progress: its workers and which heights were handed over.
pub(crate) struct LivePass {
    context: Arc<PassContext>,
    sender: Option<SyncSender<PassJob>>,
    workers: Vec<JoinHandle<WorkerEnd>>,
    /// The terminal block the heights belong to.
    terminal: EntryId,
    /// Whether the block at height `h` was handed over, at `h - 1`.
    handed: Vec<bool>,
    handed_count: u32,
    /// The fully validating mode's blocks and coins waiting.
    holds: Holds,
    /// Refusals of the coins of the block at a height, by height.
    refusals_by_height: HashMap<u32, u32>,
    /// The aggregate's salt (kept in a checkpoint).
    salt: [u8; AGGREGATE_SALT_BYTES],
    /// The sums of a checkpoint resumed from (its blocks are handed over
    /// already).
    resumed: WorkerTotals,
    /// The blocks that checkpoint had accounted, when the pass resumed.
    resumed_count: Option<u32>,
    /// When the last checkpoint was kept (or the pass started).
    last_checkpoint: Instant,
    /// How often one is kept.
    checkpoint_interval: Duration,
    /// SHA-256 of the hints file, once a checkpoint needs it (mainnet's
    /// ~120 MB take ~0.2 s: once a pass, not once a checkpoint).
    hints_digest: OnceLock<[u8; 32]>,
}

impl std::fmt::Debug for LivePass {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LivePass")
            .field("handed_count", &self.handed_count)
            .finish_non_exhaustive()
    }
}

impl LivePass {
    /// Stages into `setup.database` (marked first) and starts the workers
    /// of a pass to `terminal`; or, from `resume`, goes on with the coins
    /// staged and the sums a checkpoint kept (the caller checked that it
    /// is for the same hints and terminal block).
    pub(crate) fn start(
        setup: PassSetup,
        terminal: EntryId,
        resume: Option<PassCheckpoint>,
    ) -> Result<Result<LivePass, SwiftSyncFailure>, ChainstateError> {
        let terminal_height = setup.hints.terminal_height();
        let mut salt = [0u8; AGGREGATE_SALT_BYTES];
        let mut resumed = WorkerTotals::default();
        let mut handed = vec![false; terminal_height as usize];
        let mut resumed_count = None;
        // The checkpoint's bucket files, cut back to its lengths; a file
        // missing or shorter than recorded (a disk that lost it) makes the
        // attempt start again.
        let reopened = match resume {
            Some(checkpoint) if checkpoint.accounted.len() == handed.len() => {
                match CoinBuckets::reopen(&setup.database, &checkpoint.bucket_lengths) {
                    Ok(buckets) => Some((checkpoint, buckets)),
                    Err(_) => {
                        setup.database.discard_staged()?;
                        None
                    }
                }
            }
            _ => None,
        };
        let buckets = match reopened {
            Some((checkpoint, buckets)) => {
                salt = checkpoint.salt;
                let heights = (1..).zip(&checkpoint.accounted).filter(|(_, accounted)| **accounted);
                let accounted: Vec<u32> = heights.map(|(height, _)| height).collect();
                resumed_count = Some(accounted.len() as u32);
                resumed = WorkerTotals { sums: checkpoint.sums, accounted, cut_short: false };
                handed = checkpoint.accounted;
                buckets
            }
            None => {
                if getrandom::fill(&mut salt).is_err() {
                    return Ok(Err(SwiftSyncFailure::NoRandomness));
                }
                setup.database.begin_staging()?;
                let coin_count = setup.hints.unspent_count();
                CoinBuckets::create(&setup.database, coin_count, setup.run_bytes_max)?
            }
        };
        let hasher = OutpointHasher::new(&salt);
        let worker_count = setup.worker_count.max(1);
        let checkpoint_interval = setup.checkpoint_interval;
        let context = Arc::new(PassContext {
            setup,
            hasher,
            buckets,
            stop: AtomicBool::new(false),
            jobs_out: JobsOut::default(),
            slots: (0..worker_count).map(|_| Mutex::default()).collect(),
            recent: RecentBlocks::default(),
        });
        let (sender, receiver) = sync_channel(worker_count * JOBS_WAITING_PER_WORKER_MAX);
        let receiver = Arc::new(Mutex::new(receiver));
        let mut workers = Vec::with_capacity(worker_count);
        for number in 0..worker_count {
            let (context, receiver) = (context.clone(), receiver.clone());
            let worker = std::thread::Builder::new()
                .name(format!("ibex-swiftsync-{number}"))
                .spawn(move || account_blocks(&context, &context.slots[number], &receiver))
                .map_err(|source| ChainstateError::SwiftSyncThread { worker: number, source })?;
            workers.push(worker);
        }
        Ok(Ok(LivePass {
            context,
            sender: Some(sender),
            workers,
            terminal,
            handed_count: handed.iter().filter(|handed| **handed).count() as u32,
            handed,
            holds: Holds::default(),
            refusals_by_height: HashMap::new(),
            salt,
            resumed,
            resumed_count,
            last_checkpoint: Instant::now(),
            checkpoint_interval,
            hints_digest: OnceLock::new(),
        }))
    }

    /// The blocks the checkpoint it resumed from had accounted (`None`:
    /// it started afresh).
    pub(crate) fn resumed_count(&self) -> Option<u32> {
        self.resumed_count
    }

    /// Whether the block at height `h` was handed over, at `h - 1` (when
    /// it starts: the blocks a checkpoint it resumed from had accounted).
    pub(crate) fn handed(&self) -> &[bool] {
        &self.handed
    }

    /// The terminal block its heights belong to.
    pub(crate) fn terminal(&self) -> EntryId {
        self.terminal
    }

    /// Whether the block at `height` is still to be handed over.
    pub(crate) fn wants(&self, height: u32) -> bool {
        height.checked_sub(1).and_then(|at| self.handed.get(at as usize)) == Some(&false)
    }

    /// Hands `block` (parsed already when `parsed` is given) to the
    /// workers; waits while they are all busy. Nothing when it is not
    /// wanted or a worker stopped the pass.
    /// In the fully validating mode a block waits for its coins
    /// ([`LivePass::hand_coins`]) and for the blocks below it
    /// (`recent_runs`, [`LivePass::release_stored`]).
    pub(crate) fn hand(
        &mut self,
        block: RunBlock,
        parsed: Option<PreparedBlock>,
        recent_runs: RecentRuns<'_>,
    ) {
        if !self.wants(block.height) || self.stopped() {
            return;
        }
        let job = match self.context.setup.mode {
            SwiftSyncMode::AssumeValid => {
                Some(PassJob { block, parsed, spent: None, recent: Vec::new() })
            }
            SwiftSyncMode::FullyValidating => self.holds.block(block, parsed, recent_runs),
        };
        if let Some(job) = job {
            self.send(job);
        }
    }

    /// Coins claimed for the inputs of block `hash` at `height`, sent by
    /// `source`: handed over with the block once it came too (and the
    /// blocks below it, `recent_runs`). Whether they were taken (not when
    /// the block was accounted already, or the pass is in the assumevalid
    /// mode).
    pub(crate) fn hand_coins(
        &mut self,
        (height, hash): (u32, BlockHash),
        coins: ClaimedSpentCoins,
        source: BlockSource,
        recent_runs: RecentRuns<'_>,
    ) -> bool {
        if self.context.setup.mode != SwiftSyncMode::FullyValidating || !self.wants(height) {
            return false;
        }
        if let Some(job) = self.holds.coins((height, hash), coins, source, recent_runs) {
            self.send(job);
        }
        true
    }

    /// Hands over the blocks that waited with their coins for the blocks
    /// below them, those all stored now.
    pub(crate) fn release_stored(&mut self, recent_runs: RecentRuns<'_>) {
        for job in self.holds.release(recent_runs) {
            self.send(job);
        }
    }

    fn send(&mut self, job: PassJob) {
        let block = job.block;
        let Some(sender) = &self.sender else { return };
        // A blocking send: it waits while every worker is busy and fails
        // once all of them have returned (a failure or the shutdown stops
        // each after its current block, which drops the receiver).
        self.context.jobs_out.handed();
        if sender.send(job).is_err() {
            self.context.jobs_out.settled();
            return;
        }
        self.handed[block.height as usize - 1] = true;
        self.handed_count += 1;
    }

    /// The lowest height not handed over yet.
    pub(crate) fn first_wanted(&self) -> Option<u32> {
        self.handed.iter().position(|handed| !handed).map(|at| at as u32 + 1)
    }

    /// Whether every block was handed over or waits for its coins here
    /// (nothing stored is left to read back).
    pub(crate) fn all_handed_or_held(&self) -> bool {
        self.handed_count as usize + self.holds.block_count() == self.handed.len()
    }

    /// Whether every block was handed over.
    pub(crate) fn all_handed(&self) -> bool {
        self.handed_count as usize == self.handed.len()
    }

    /// Whether a worker stopped the pass (a failure, or the shutdown).
    pub(crate) fn stopped(&self) -> bool {
        self.context.stop.load(Ordering::Relaxed)
    }

    /// Waits until every block handed over was accounted or refused (or
    /// the pass stopped).
    pub(crate) fn settle(&self) {
        self.context.jobs_out.settle(&self.context.stop);
    }

    /// The coins the workers refused since the last call
    /// (`super::refusals`): each block waits for coins again, its height
    /// wanted. A block refused too often, or more refusals than the
    /// attempt allows counting the `refused_before` of its earlier passes,
    /// end the pass with the last failure.
    pub(crate) fn reopen_refused(
        &mut self,
        refused_before: usize,
    ) -> Result<Vec<SpentCoinsRefusal>, SwiftSyncFailure> {
        let mut reopened = Vec::new();
        for RefusedJob { block, source, failure } in self.context.jobs_out.take_refused() {
            let count = self.refusals_by_height.entry(block.height).or_insert(0);
            *count += 1;
            if *count >= SPENT_COINS_REFUSALS_PER_BLOCK_MAX
                || refused_before + reopened.len() >= SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX
            {
                return Err(failure);
            }
            if let Some(handed) = self.handed.get_mut(block.height as usize - 1) {
                if std::mem::replace(handed, false) {
                    self.handed_count -= 1;
                }
            }
            self.holds.reopen(block);
            reopened.push(SpentCoinsRefusal {
                height: block.height,
                hash: block.hash,
                source,
                failure,
            });
        }
        Ok(reopened)
    }

    /// Waits for the workers, merges their sums, judges them at `H`, and
    /// writes the staged coins into the database when the proof holds.
    pub(crate) fn finish(mut self) -> Result<PassEnd, ChainstateError> {
        self.sender = None;
        let mut total = std::mem::take(&mut self.resumed);
        let mut ended = None;
        let mut fault = None;
        for worker in std::mem::take(&mut self.workers) {
            // A panicking worker is a bug; re-raise it here.
            let end = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match end {
                Ok(Ok(worker)) => total.merge(worker),
                // A failure outranks an interruption it caused.
                Ok(Err(end)) => {
                    if !matches!(ended, Some(PassEnd::Failed(_))) {
                        ended = Some(end);
                    }
                }
                Err(error) => fault = Some(error),
            }
        }
        if let Some(error) = fault {
            return Err(error);
        }
        if let Some(end) = ended {
            return Ok(end);
        }
        if total.cut_short || !self.all_handed() {
            return self.suspend(total);
        }
        let setup = &self.context.setup;
        let mut end = judge(total.sums, setup.hints.terminal_height(), &setup.params);
        if let PassEnd::Proven(totals) = &mut end {
            // The bucket files go as they are read: a checkpoint would
            // name files that are gone, so the plain marker replaces it.
            setup.database.write_staging_record(&STAGING_MARKER)?;
            let started = std::time::Instant::now();
            let written = self.context.buckets.write_into(&setup.database, setup.worker_count)?;
            totals.tables_ms = started.elapsed().as_millis() as u64;
            // Every coin accounted is in a bucket: a broken invariant here
            // is a bug of the staging, never a chain to accept.
            assert_eq!(written, totals.coin_count, "staged coins lost between buckets and tables");
        }
        Ok(end)
    }
}

impl LivePass {
    /// Keeps a checkpoint of a pass the shutdown cut short, from `total`
    /// (every worker's sums, its blocks' coins in the bucket files;
    /// `super::checkpoint`).
    fn suspend(&self, total: WorkerTotals) -> Result<PassEnd, ChainstateError> {
        let accounted_count = self.write_checkpoint(total)?;
        Ok(PassEnd::Suspended { accounted_count })
    }

    /// Sets how often it keeps a checkpoint (tests).
    #[cfg(test)]
    pub(crate) fn set_checkpoint_interval(&mut self, interval: Duration) {
        self.checkpoint_interval = interval;
    }

    /// Whether the pass is due a checkpoint.
    pub(crate) fn checkpoint_due(&self) -> bool {
        self.last_checkpoint.elapsed() >= self.checkpoint_interval && !self.stopped()
    }

    /// Keeps a checkpoint while the pass runs (a crash then costs the
    /// blocks accounted since, not the pass): waits for the blocks handed
    /// over to settle (every worker idle), appends each worker's coins to
    /// the buckets and writes the sums of all. The blocks accounted;
    /// `None` when the pass stopped meanwhile.
    pub(crate) fn checkpoint(&mut self) -> Result<Option<u32>, ChainstateError> {
        self.settle();
        if self.stopped() {
            return Ok(None);
        }
        let mut total = self.resumed.clone();
        for slot in &self.context.slots {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            self.context.buckets.append(&mut slot.run)?;
            total.merge(slot.totals.clone());
        }
        self.last_checkpoint = Instant::now();
        self.write_checkpoint(total).map(Some)
    }

    /// Syncs the bucket files and writes `total` (with the heights it
    /// names accounted) as the checkpoint; the blocks accounted.
    fn write_checkpoint(&self, total: WorkerTotals) -> Result<u32, ChainstateError> {
        let setup = &self.context.setup;
        // Every worker's heights and those of a checkpoint resumed from.
        let mut accounted = vec![false; self.handed.len()];
        for height in total.accounted {
            if let Some(slot) = height.checked_sub(1).and_then(|at| accounted.get_mut(at as usize))
            {
                *slot = true;
            }
        }
        let bucket_lengths = self.context.buckets.sync_lengths()?;
        let accounted_count = accounted.iter().filter(|accounted| **accounted).count() as u32;
        let checkpoint = PassCheckpoint {
            mode: setup.mode,
            terminal: setup.terminal_hash,
            hints_digest: *self.hints_digest.get_or_init(|| hints_digest(&setup.hints)),
            salt: self.salt,
            sums: total.sums,
            accounted,
            bucket_lengths,
        };
        setup.database.write_staging_record(&checkpoint.encode())?;
        Ok(accounted_count)
    }
}

impl Drop for LivePass {
    fn drop(&mut self) {
        // Stop the workers (the shutdown, or a pass given up) and wait for
        // them, so no thread writes into the staging after its owner left.
        self.context.stop.store(true, Ordering::Relaxed);
        self.sender = None;
        for worker in std::mem::take(&mut self.workers) {
            let _ = worker.join();
        }
    }
}

/// The checks at `H` over the merged sums: the aggregate first, as wrong
/// hints unbalance it and may break the others too (an output spent
/// marked unspent counts its value twice).
fn judge(mut total: PassSums, terminal_height: u32, params: &Params) -> PassEnd {
    if !total.aggregate.is_zero() {
        return PassEnd::Failed(SwiftSyncFailure::AggregateNotZero { terminal_height });
    }
    total.coinbases.sort_unstable();
    if let Some(pair) = total.coinbases.windows(2).find(|pair| pair[0] == pair[1]) {
        return PassEnd::Failed(SwiftSyncFailure::RepeatedCoinbase { txid: pair[0] });
    }
    let limit = supply_limit_through(terminal_height, params.subsidy_halving_interval);
    if total.kept_value > u128::from(limit) {
        return PassEnd::Failed(SwiftSyncFailure::SupplyExceeded {
            found: total.kept_value,
            limit,
            terminal_height,
        });
    }
    PassEnd::Proven(PassTotals {
        coin_count: total.coin_count,
        input_count: total.input_count,
        tables_ms: 0,
    })
}
