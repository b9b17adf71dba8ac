//! The pass over the stored blocks 1 to `H`: workers take blocks in file
//! order (sequential reads), each accounting its own and keeping its own
//! aggregate, sums and coin run; the engine merges them and judges.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ibex_blockstore::BlockPosition;
use ibex_consensus::check_block_on_network;
use ibex_consensus::swiftsync::{account_block, supply_limit_through, BlockToAccount};
use ibex_primitives::hints::{HintsFile, OutpointAggregate, OutpointHasher, AGGREGATE_SALT_BYTES};
use ibex_primitives::params::is_bip30_repeat;
use ibex_primitives::{Amount, BlockBuffers, BlockHash, Params, Txid};

use super::SwiftSyncFailure;
use crate::block_read_ahead::{read_one, BlockFiles, BlockToRead};
use crate::coins::coin::Coin;
use crate::coins::database::staged::{CoinBuckets, CoinRun};
use crate::coins::database::CoinsDatabase;
use crate::error::ChainstateError;
use crate::index::EntryId;

/// A stored block of the pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunBlock {
    /// Its index entry.
    pub(crate) id: EntryId,
    /// Its height.
    pub(crate) height: u32,
    /// Its hash.
    pub(crate) hash: BlockHash,
    /// Where it is stored.
    pub(crate) position: BlockPosition,
}

/// What the pass needs.
pub(crate) struct PassInputs<'a> {
    /// Where the blocks are.
    pub(crate) files: &'a BlockFiles,
    /// Blocks 1 to `H`, any order (the pass sorts them by position).
    pub(crate) blocks: Vec<RunBlock>,
    /// The hints.
    pub(crate) hints: &'a HintsFile,
    /// The database the coins are staged in.
    pub(crate) database: &'a CoinsDatabase,
    /// Network parameters.
    pub(crate) params: &'a Params,
    /// Threads accounting blocks (the calling thread is one of them).
    pub(crate) worker_count: usize,
    /// Bytes of coins a worker holds before it appends them to the
    /// buckets, and a bucket's size once read back.
    pub(crate) run_bytes_max: usize,
    /// Set when the node shuts down.
    pub(crate) interrupt: Option<&'a AtomicBool>,
}

/// What the pass found, once the proof held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PassTotals {
    /// Coins written.
    pub(crate) coin_count: u64,
    /// Inputs subtracted.
    pub(crate) input_count: u64,
}

/// How a pass ended without a fault of the machine.
#[derive(Debug)]
pub(crate) enum PassEnd {
    /// The proof held.
    Proven(PassTotals),
    /// It did not, or a block was wrong.
    Failed(SwiftSyncFailure),
    /// The node is shutting down.
    Interrupted,
}

/// One worker's sums.
#[derive(Debug, Default)]
struct WorkerTotals {
    aggregate: OutpointAggregate,
    /// Unspent plus burnt value, in satoshis.
    kept_value: u128,
    coin_count: u64,
    input_count: u64,
    /// Coinbase transaction ids BIP30 asks to be unique.
    coinbases: Vec<Txid>,
}

/// Runs the pass (module docs). I/O faults are errors; everything a block
/// or the hints may get wrong is a [`PassEnd::Failed`].
pub(crate) fn run_pass(mut inputs: PassInputs<'_>) -> Result<PassEnd, ChainstateError> {
    let mut salt = [0u8; AGGREGATE_SALT_BYTES];
    if getrandom::fill(&mut salt).is_err() {
        return Ok(PassEnd::Failed(SwiftSyncFailure::NoRandomness));
    }
    let hasher = OutpointHasher::new(&salt);
    inputs
        .blocks
        .sort_unstable_by_key(|block| (block.position.file_number, block.position.data_offset));
    let buckets =
        CoinBuckets::create(inputs.database, inputs.hints.unspent_count(), inputs.run_bytes_max)?;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let inputs = &inputs;
    let buckets_ref = &buckets;
    let results: Vec<Result<Result<WorkerTotals, PassEnd>, ChainstateError>> =
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..inputs.worker_count.max(1))
                .map(|_| scope.spawn(|| account_blocks(inputs, buckets_ref, &hasher, &next, &stop)))
                .collect();
            let mut results = vec![account_blocks(inputs, buckets_ref, &hasher, &next, &stop)];
            for helper in helpers {
                // A panicking worker is a bug; re-raise it here.
                results
                    .push(helper.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
            }
            results
        });
    let mut total = WorkerTotals::default();
    let mut ended = None;
    for result in results {
        match result? {
            Ok(worker) => {
                total.aggregate.merge(&worker.aggregate);
                total.kept_value = total.kept_value.saturating_add(worker.kept_value);
                total.coin_count += worker.coin_count;
                total.input_count += worker.input_count;
                total.coinbases.extend(worker.coinbases);
            }
            // A failure outranks an interruption it caused.
            Err(end) => {
                if !matches!(ended, Some(PassEnd::Failed(_))) {
                    ended = Some(end);
                }
            }
        }
    }
    if let Some(end) = ended {
        return Ok(end);
    }
    let end = judge(total, inputs.hints.terminal_height(), inputs.params);
    if let PassEnd::Proven(totals) = &end {
        let written = buckets.write_into(inputs.database, inputs.worker_count)?;
        // Every coin accounted is in a bucket: a broken invariant here is
        // a bug of the staging, never a chain to accept.
        assert_eq!(written, totals.coin_count, "staged coins lost between buckets and tables");
    }
    Ok(end)
}

/// The checks at `H` over the merged sums: the aggregate first, as wrong
/// hints unbalance it and may break the others too (an output spent
/// marked unspent counts its value twice).
fn judge(mut total: WorkerTotals, terminal_height: u32, params: &Params) -> PassEnd {
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
    PassEnd::Proven(PassTotals { coin_count: total.coin_count, input_count: total.input_count })
}

/// One worker: blocks until none is left or another worker stopped.
fn account_blocks(
    inputs: &PassInputs<'_>,
    buckets: &CoinBuckets,
    hasher: &OutpointHasher,
    next: &AtomicUsize,
    stop: &AtomicBool,
) -> Result<Result<WorkerTotals, PassEnd>, ChainstateError> {
    let mut totals = WorkerTotals::default();
    let mut run = CoinRun::default();
    let mut buffers = BlockBuffers::default();
    let mut indices = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(Err(PassEnd::Interrupted));
        }
        if inputs.interrupt.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
            stop.store(true, Ordering::Relaxed);
            return Ok(Err(PassEnd::Interrupted));
        }
        let Some(block) = inputs.blocks.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
        let step =
            account_one(inputs, hasher, *block, &mut totals, &mut run, &mut buffers, &mut indices);
        match step {
            Ok(Ok(())) => {}
            Ok(Err(failure)) => {
                stop.store(true, Ordering::Relaxed);
                return Ok(Err(PassEnd::Failed(failure)));
            }
            Err(error) => {
                stop.store(true, Ordering::Relaxed);
                return Err(error);
            }
        }
        if run.bytes() >= inputs.run_bytes_max {
            buckets.append(&mut run)?;
        }
    }
    buckets.append(&mut run)?;
    Ok(Ok(totals))
}

/// Reads, checks and accounts `block` into `totals` and `run`.
fn account_one(
    inputs: &PassInputs<'_>,
    hasher: &OutpointHasher,
    block: RunBlock,
    totals: &mut WorkerTotals,
    run: &mut CoinRun,
    buffers: &mut BlockBuffers,
    indices: &mut Vec<u32>,
) -> Result<Result<(), SwiftSyncFailure>, ChainstateError> {
    let (height, hash) = (block.height, block.hash);
    let to_read = BlockToRead { id: block.id, hash, position: block.position };
    let prepared = read_one(inputs.files, to_read, buffers).0?;
    let view = prepared.view();
    let txids = prepared.txids();
    // Core's `ConnectBlock` runs `CheckBlock` again on a block read back.
    if let Err(reason) = check_block_on_network(view, txids, &hash, inputs.params) {
        return Ok(Err(SwiftSyncFailure::CheckBlock { height, hash, reason }));
    }
    if let Err(failure) = inputs.hints.unspent_indices(height, indices) {
        return Ok(Err(failure.into()));
    }
    let to_account = BlockToAccount { block: view, txids, height, hash, unspent_indices: indices };
    let account = match account_block(&to_account, hasher) {
        Ok(account) => account,
        Err(source) => return Ok(Err(SwiftSyncFailure::Block { hash, source })),
    };
    totals.aggregate.merge(&account.aggregate);
    let kept = u128::from(account.unspent_value) + u128::from(account.unspendable_value);
    totals.kept_value = totals.kept_value.saturating_add(kept);
    totals.input_count += view.input_count().saturating_sub(1) as u64;
    for output in &account.unspent {
        let out_of_range = || SwiftSyncFailure::ValueOutOfRange { height, hash };
        let Ok(amount) = Amount::from_sat(output.value) else { return Ok(Err(out_of_range())) };
        let Ok(coin) = Coin::new(amount, output.script_pubkey, height, output.is_coinbase) else {
            return Ok(Err(out_of_range()));
        };
        run.push(&output.outpoint, &coin);
    }
    totals.coin_count += account.unspent.len() as u64;
    if bip30_needs_unique_coinbase(inputs.params, height, &hash) {
        if let Some(txid) = txids.first() {
            totals.coinbases.push(*txid);
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
