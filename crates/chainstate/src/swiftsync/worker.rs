//! A pass worker: takes the blocks the engine hands over, in whatever
//! order, checks and accounts each into its own sums and coins
//! ([`WorkerSlot`]), and appends the coins to the buckets once they fill
//! its share of `-dbcache`.

use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex, PoisonError};

use ibex_consensus::check_block_on_network;
use ibex_consensus::swiftsync::{account_block, BlockToAccount};
use ibex_primitives::params::is_bip30_repeat;
use ibex_primitives::{Amount, BlockBuffers, BlockHash, BlockView, Params, SpentCoinBuf, Txid};

use super::claimed::{complete_claimed, ClaimedSpentCoins};
use super::full::account_with_coins;
use super::job::{PassJob, RunBlock};
use super::recent::RecentBlock;
use super::refusals::RefusedJob;
use super::run::{PassContext, PassEnd};
use super::sums::PassSums;
use super::{SwiftSyncFailure, SwiftSyncMode};
use crate::block_read_ahead::{read_one, BlockToRead};
use crate::coins::coin::Coin;
use crate::coins::database::staged::CoinRun;
use crate::error::ChainstateError;

/// One worker's sums and the heights they cover.
#[derive(Debug, Default, Clone)]
pub(super) struct WorkerTotals {
    pub(super) sums: PassSums,
    /// Heights of the blocks accounted.
    pub(super) accounted: Vec<u32>,
    /// The worker stopped with blocks still queued (the shutdown, or
    /// another worker's failure).
    pub(super) cut_short: bool,
}

impl WorkerTotals {
    /// Adds `other`'s sums and heights.
    pub(super) fn merge(&mut self, other: WorkerTotals) {
        self.sums.merge(other.sums);
        self.accounted.extend(other.accounted);
        self.cut_short |= other.cut_short;
    }
}

pub(super) type WorkerEnd = Result<Result<WorkerTotals, PassEnd>, ChainstateError>;

/// What a worker holds between blocks: its sums and the coins it has not
/// appended to the buckets yet. Behind a lock the worker takes for each
/// block and the engine only while every worker is idle (a checkpoint,
/// once the blocks handed over are settled), so it is never contended.
#[derive(Debug, Default)]
pub(super) struct WorkerSlot {
    pub(super) totals: WorkerTotals,
    pub(super) run: CoinRun,
}

/// One worker: jobs until the engine closes the channel or the pass stops.
pub(super) fn account_blocks(
    context: &PassContext,
    slot: &Mutex<WorkerSlot>,
    receiver: &Mutex<Receiver<PassJob>>,
) -> WorkerEnd {
    let mut buffers = BlockBuffers::default();
    let mut indices = Vec::new();
    let interrupted =
        || context.setup.interrupt.as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed));
    loop {
        if context.stop.load(Ordering::Relaxed) || interrupted() {
            context.stop.store(true, Ordering::Relaxed);
            slot.lock().unwrap_or_else(PoisonError::into_inner).totals.cut_short = true;
            break;
        }
        let job = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = job else { break };
        let (block, source) = (job.block, job.spent.as_ref().map(|(_, source)| *source));
        let mut held = slot.lock().unwrap_or_else(PoisonError::into_inner);
        let WorkerSlot { totals, run } = &mut *held;
        let step = account_one(context, job, &mut totals.sums, run, &mut buffers, &mut indices);
        let step = match (step, source) {
            // The block's sums are in.
            (Ok(Ok(())), _) => {
                totals.accounted.push(block.height);
                Ok(Ok(()))
            }
            // Coins the block's checks refuse: the peer's fault, and the
            // block waits for another's (`super::refusals`).
            (Ok(Err(failure)), Some(source)) if failure.blames_spent_coins() => {
                context.jobs_out.refuse(RefusedJob { block, source, failure });
                Ok(Ok(()))
            }
            (step, _) => step,
        };
        if !matches!(step, Ok(Ok(()))) {
            context.stop.store(true, Ordering::Relaxed);
        }
        context.jobs_out.settled();
        match step {
            Ok(Ok(())) => {}
            Ok(Err(failure)) => {
                context.stop.store(true, Ordering::Relaxed);
                return Ok(Err(PassEnd::Failed(failure)));
            }
            Err(error) => {
                context.stop.store(true, Ordering::Relaxed);
                return Err(error);
            }
        }
        if run.bytes() >= context.setup.run_bytes_max {
            context.buckets.append(run)?;
        }
    }
    let mut held = slot.lock().unwrap_or_else(PoisonError::into_inner);
    context.buckets.append(&mut held.run)?;
    Ok(Ok(std::mem::take(&mut held.totals)))
}

/// Checks and accounts `job`'s block into `sums` and `run`.
fn account_one(
    context: &PassContext,
    job: PassJob,
    sums: &mut PassSums,
    run: &mut CoinRun,
    buffers: &mut BlockBuffers,
    indices: &mut Vec<u32>,
) -> Result<Result<(), SwiftSyncFailure>, ChainstateError> {
    let setup = &context.setup;
    let (height, hash) = (job.block.height, job.block.hash);
    let prepared = match job.parsed {
        Some(parsed) => parsed,
        None => {
            let to_read = BlockToRead { id: job.block.id, hash, position: job.block.position };
            let prepared = read_one(&setup.files, to_read, buffers).0?;
            // Core's `ConnectBlock` runs `CheckBlock` again on a block read
            // back (a block just accepted was checked on its way in).
            let check =
                check_block_on_network(prepared.view(), prepared.txids(), &hash, &setup.params);
            if let Err(reason) = check {
                return Ok(Err(SwiftSyncFailure::CheckBlock { height, hash, reason }));
            }
            prepared
        }
    };
    let view = prepared.view();
    let txids = prepared.txids();
    if let Err(failure) = setup.hints.unspent_indices(height, indices) {
        return Ok(Err(failure.into()));
    }
    let to_account = BlockToAccount { block: view, txids, height, hash, unspent_indices: indices };
    let account = match job.spent {
        Some((claimed, _)) => {
            let recent = (job.recent.as_slice(), &mut *buffers);
            let spent =
                match completed_coins(context, recent, view, txids, (height, hash), claimed)? {
                    Ok(spent) => spent,
                    Err(failure) => return Ok(Err(failure)),
                };
            match account_with_coins(
                &to_account,
                &spent,
                &setup.params,
                &setup.times,
                &context.hasher,
            )? {
                Ok(account) => account,
                Err(failure) => return Ok(Err(failure)),
            }
        }
        None if setup.mode == SwiftSyncMode::FullyValidating => {
            // `LivePass::hand` holds back a block without its coins in this
            // mode; one that got through anyway fails the attempt (never an
            // accounting without the coins' checks).
            return Ok(Err(SwiftSyncFailure::SpentCoinsMissing { height, hash }));
        }
        None => match account_block(&to_account, &context.hasher) {
            Ok(account) => account,
            Err(source) => return Ok(Err(SwiftSyncFailure::Block { hash, source })),
        },
    };
    sums.aggregate.merge(&account.aggregate);
    let kept = u128::from(account.unspent_value) + u128::from(account.unspendable_value);
    sums.kept_value = sums.kept_value.saturating_add(kept);
    sums.input_count += view.input_count().saturating_sub(1) as u64;
    for output in &account.unspent {
        let out_of_range = || SwiftSyncFailure::ValueOutOfRange { height, hash };
        let Ok(amount) = Amount::from_sat(output.value) else { return Ok(Err(out_of_range())) };
        let Ok(coin) = Coin::new(amount, output.script_pubkey, height, output.is_coinbase) else {
            return Ok(Err(out_of_range()));
        };
        run.push(&output.outpoint, &coin);
    }
    sums.coin_count += account.unspent.len() as u64;
    if bip30_needs_unique_coinbase(&setup.params, height, &hash) {
        if let Some(txid) = txids.first() {
            sums.coinbases.push(*txid);
        }
    }
    Ok(Ok(()))
}

/// Whether BIP30 could bite a coinbase of block `height`: where BIP34
/// does not bind every block, coinbases below the BIP34 height may repeat
/// (the two repeats Core knows are let through, as `ConnectBlock` does).
/// Non-coinbase transactions cannot repeat without spending an output
/// twice, which the aggregate shows.
fn bip30_needs_unique_coinbase(params: &Params, height: u32, hash: &BlockHash) -> bool {
    !params.bip34_from_first_block()
        && height < params.bip34_height
        && !is_bip30_repeat(height, hash)
}

/// The coins `claimed` for block `hash` at `height`, completed with those
/// its request left out (`super::recent`): from the block itself and the
/// blocks `recent_runs` names, kept by the workers or read back (with the
/// worker's `buffers`). The block's own outputs are kept for the blocks
/// after it.
fn completed_coins(
    context: &PassContext,
    (recent_runs, buffers): (&[RunBlock], &mut BlockBuffers),
    view: &BlockView<'_>,
    txids: &[Txid],
    (height, hash): (u32, BlockHash),
    claimed: ClaimedSpentCoins,
) -> Result<Result<Vec<SpentCoinBuf>, SwiftSyncFailure>, ChainstateError> {
    let this_block = Arc::new(RecentBlock::of(view, txids, hash, height));
    context.recent.insert(this_block.clone());
    let mut recent = Vec::with_capacity(recent_runs.len());
    for run in recent_runs {
        let block = match context.recent.get(run.height, &run.hash) {
            Some(block) => block,
            None => {
                let to_read = BlockToRead { id: run.id, hash: run.hash, position: run.position };
                let prepared = read_one(&context.setup.files, to_read, buffers).0?;
                let block =
                    RecentBlock::of(prepared.view(), prepared.txids(), run.hash, run.height);
                let block = Arc::new(block);
                context.recent.insert(block.clone());
                block
            }
        };
        recent.push(block);
    }
    Ok(complete_claimed(view, (height, hash), claimed, (&this_block, &recent)))
}
