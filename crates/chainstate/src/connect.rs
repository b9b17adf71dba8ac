//! Connecting a block to the UTXO cache (Core's `ConnectBlock` after the
//! header and block checks): BIP30 and the inputs' coins (exist, unspent)
//! here, where the coins are; the rules on the spent coins (`CheckTxInputs`,
//! fee total, BIP68, sigop cost, coinbase amount) are consensus's pure
//! [`BlockConnectCheck`], fed one transaction at a time: every rule but the
//! scripts.
//!
//! The cache is changed in place while the block is checked: spends and
//! new coins go straight in, and the spent coins become the block's undo
//! data. If a rule fails, the partial changes are rolled back with that
//! undo data ([`rollback`]), which leaves the cache logically as it was
//! (flags may differ, values not). This costs nothing for valid blocks,
//! unlike Core's temporary view which every coin passes through twice.
//!
//! Scripts are checked afterwards, on all cores, by the pipeline
//! ([`crate::stages::script_queue`], [`crate::scripts`]), after every other
//! rule of the block, so the coinbase-amount failure is reported before a
//! script failure as in Core with parallel script checks.

use ibex_consensus::{output_amount, BlockConnectCheck, BlockRejection, ConnectRules};
use ibex_primitives::{BlockView, OutPoint, SpentCoin, TransactionView, Txid};

use rayon::prelude::*;

use crate::coins::bip30_reader::Bip30Reader;
use crate::coins::cache::CoinsCache;
use crate::coins::coin::Coin;
use crate::coins::coin_reads::CoinReadCounts;
use crate::disconnect::{restore_spent_coins, spend_outputs_again};
use crate::error::ChainstateError;
use crate::scripts::ScriptThreads;
use crate::undo::{BlockUndo, TransactionUndo};

/// Everything about the block's place in the chain that connecting it needs.
pub struct ConnectContext<'a> {
    /// The consensus rules in force (height, flags, sequence locks).
    pub rules: ConnectRules<'a>,
    /// Whether and when BIP30's lookups run.
    pub bip30: Bip30Check,
    /// Threads the BIP30 lookups are spread over.
    pub threads: &'a ScriptThreads,
}

/// When BIP30 (no output may already be an unspent coin) is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bip30Check {
    /// Not at all: Core skips it here (the two mainnet repeats; the chain
    /// through the BIP34 block below `BIP34_IMPLIES_BIP30_LIMIT`).
    Skip,
    /// Core's way: every output looked up before any transaction is
    /// applied.
    BeforeConnect,
    /// Only once the block has failed another rule of this stage, to
    /// report `bad-txns-BIP30` where Core would (it checks BIP30 first).
    ///
    /// # Why this accepts exactly the blocks Core accepts
    /// For chains where BIP34 binds every block after genesis
    /// ([`ibex_primitives::Params::bip34_from_first_block`]). Core checks
    /// BIP30 there at every height (no `BIP34Hash`), but a block failing
    /// it always fails another rule of `ConnectBlock` too:
    /// 1. No two coinbases are alike: a coinbase at height h >= 1 starts
    ///    with Core's push of h (`OP_1`..`OP_16`, or a length byte 1-5 and
    ///    the minimal number), and no such push is a prefix of another's.
    ///    Genesis's coinbase never enters the UTXO set.
    /// 2. A transaction X with an output already unspent repeats the txid
    ///    of an earlier transaction Y, so (txids being SHA-256d) its
    ///    inputs: X is no coinbase (1.), and Y spent X's inputs.
    /// 3. A spent coin comes back only through another repeat of the
    ///    transaction that made it. Take the first transaction Z of the
    ///    chain and this block to repeat an earlier txid: its inputs were
    ///    spent by its original and nothing earlier made them again, so Z
    ///    misses an input. Z is not in the chain (valid, so it had its
    ///    inputs): it is in this block, at or before X, and the block fails
    ///    `bad-txns-inputs-missingorspent` at Z or earlier.
    ///
    /// So valid blocks skip the lookups (11 % of the CPU of a
    /// scripts-skipped import of the `utxo-heavy` chain), and an invalid one
    /// is looked up after its rollback, on the state before it, which is
    /// what Core looked up.
    OnFailure,
}

/// A connected block's results.
#[derive(Debug)]
pub struct ConnectedBlock {
    /// The coins it spent, for its undo file record.
    pub undo: BlockUndo,
    /// Inputs (excluding the coinbase's).
    pub input_count: u64,
    /// Where its spent coins were found, by age, and its BIP30 lookups
    /// ([`crate::coins::coin_reads`]).
    pub coin_reads: CoinReadCounts,
}

/// Why a block could not be connected.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The block breaks a rule; the cache is as before.
    #[error("invalid block: {0}")]
    Invalid(BlockRejection),
    /// Storage failed; the cache may be inconsistent and must not be flushed.
    #[error(transparent)]
    Chainstate(#[from] ChainstateError),
}

impl From<BlockRejection> for ConnectError {
    fn from(rejection: BlockRejection) -> Self {
        ConnectError::Invalid(rejection)
    }
}

/// Connects `block` (whose transaction ids are `txids`) to `cache`.
pub fn connect_block(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    context: &ConnectContext<'_>,
) -> Result<ConnectedBlock, ConnectError> {
    // The caller's invariant (the txids come from the same parse); every
    // loop below pairs transactions with txids and must not stop short.
    assert_eq!(txids.len(), block.transaction_count(), "one txid per transaction");
    let mut coin_reads = CoinReadCounts::default();
    // Core checks BIP30 for every transaction before applying any.
    if context.bip30 == Bip30Check::BeforeConnect {
        check_bip30(cache, block, txids, context.threads, &mut coin_reads)?;
    }
    let mut undo = BlockUndo { transactions: Vec::with_capacity(block.transaction_count()) };
    let mut progress = ApplyProgress { outputs_added: 0, coin_reads: &mut coin_reads };
    let mut check = BlockConnectCheck::new(&context.rules);
    let height = context.rules.height.to_u32();
    let applied =
        apply_transactions(cache, block, txids, height, &mut check, &mut undo, &mut progress);
    let outputs_added = progress.outputs_added;
    let result = applied.and_then(|input_count| Ok((check.finish(block)?, input_count)));
    match result {
        // Scripts are checked by the pipeline once the block is connected
        // (`stages::script_queue`), never here.
        // The totals' fees are checked against the coinbase by `finish`.
        Ok((_totals, input_count)) => Ok(ConnectedBlock { undo, input_count, coin_reads }),
        Err(error) => {
            let error = rollback_after(cache, block, txids, height, &undo, outputs_added, error);
            if context.bip30 == Bip30Check::OnFailure && matches!(error, ConnectError::Invalid(_)) {
                // Rolled back: the cache is what Core's BIP30 lookups saw.
                check_bip30(cache, block, txids, context.threads, &mut coin_reads)?;
            }
            Err(error)
        }
    }
}

/// How far [`apply_transactions`] got, and what it counted.
struct ApplyProgress<'a> {
    /// Transactions whose outputs are in the cache.
    outputs_added: usize,
    /// Where the spent coins were found.
    coin_reads: &'a mut CoinReadCounts,
}

/// Spends and adds every transaction's coins, checking the rules on the
/// spent coins as it goes; the number of inputs after the coinbase.
fn apply_transactions(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    height: u32,
    check: &mut BlockConnectCheck<'_>,
    undo: &mut BlockUndo,
    progress: &mut ApplyProgress<'_>,
) -> Result<u64, ConnectError> {
    let mut input_count = 0u64;
    for (index, (transaction, txid)) in block.transactions().zip(txids).enumerate() {
        if index == 0 {
            check.coinbase(&transaction)?;
        } else {
            undo.transactions
                .push(TransactionUndo { spent: Vec::with_capacity(transaction.inputs().len()) });
            let spent = spend_inputs(cache, &transaction, txid, height, undo, progress.coin_reads)?;
            let coins: Vec<SpentCoin<'_>> = spent.iter().map(Coin::as_spent_coin).collect();
            check.transaction(&transaction, txid, &coins)?;
            input_count += transaction.inputs().len() as u64;
        }
        add_outputs(cache, &transaction, txid, height, index == 0, Overwrite::CoinbaseOnly)?;
        progress.outputs_added = index + 1;
    }
    Ok(input_count)
}

/// BIP30: no output of any transaction may already be an unspent coin.
/// The first offender in block order is reported, whatever the threads'
/// timing. The lookups, and those the database answered, are added to
/// `coin_reads` (each thread sums its share; every transaction is looked
/// at, so an invalid block costs its whole scan, as a valid one does).
///
/// # Napkin math
/// One in-memory lookup per output (~2.5 per transaction on the bench
/// chain, ~11 on `utxo-heavy`), nearly all for outpoints that do not
/// exist: a miss in the in-memory map (a cache miss, ~100-200 ns), then one
/// RocksDB prefix seek per transaction answered by its prefix bloom
/// filters. A point read per output instead costs a bloom probe per
/// memtable and table each: 7.6 s of a 37 s import of `utxo-heavy` to
/// height 1,200. On regtest, where BIP30 applies at every height, `perf`
/// put `contains_key` and RocksDB's point reads on the connecting thread at
/// about a quarter of the samples of a scripts-skipped
/// `-reindex-chainstate` on the bench chain; read-only lookups (without a
/// second map probe or a coin decode) spread over the script threads, idle
/// then, took 18.4 s of CPU against 19.2 s, wall time within that VM's
/// noise (16-24 s either way, five alternating runs each). Mainnet skips
/// BIP30 from BIP34's activation; where BIP34 binds from block 1 only
/// failing blocks are looked up ([`Bip30Check::OnFailure`]): a scripts-skipped
/// `-reindex-chainstate` of the `utxo-heavy` chain to height 2,000 at
/// `-dbcache=100` took 56.9 s instead of 68.2 s (CPU 106 s instead of
/// 124 s; one run each).
fn check_bip30(
    cache: &CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    threads: &ScriptThreads,
    coin_reads: &mut CoinReadCounts,
) -> Result<(), ConnectError> {
    let transactions: Vec<TransactionView<'_>> = block.transactions().collect();
    let scan = threads.install(|| {
        transactions
            .par_iter()
            .zip(txids)
            .enumerate()
            .map_init(
                || Bip30Reader::new(cache),
                |reader, (index, (transaction, &txid))| {
                    scan_outputs(reader, transaction, txid, index)
                },
            )
            .reduce(Bip30Scan::default, Bip30Scan::merge)
    });
    coin_reads.bip30_lookups += scan.lookups;
    coin_reads.bip30_database_lookups += scan.database_lookups;
    match scan.first_offender {
        Some((_, error)) => Err(error),
        None => Ok(()),
    }
}

/// BIP30's lookups over some transactions: how many, how many the
/// database answered, and the first offender (by transaction index).
#[derive(Default)]
struct Bip30Scan {
    lookups: u64,
    database_lookups: u64,
    first_offender: Option<(usize, ConnectError)>,
}

impl Bip30Scan {
    /// Both scans' counts, and the offender that comes first in the block.
    fn merge(mut self, other: Bip30Scan) -> Bip30Scan {
        self.lookups += other.lookups;
        self.database_lookups += other.database_lookups;
        self.first_offender = match (self.first_offender, other.first_offender) {
            (Some(mine), Some(theirs)) => Some(if mine.0 <= theirs.0 { mine } else { theirs }),
            (mine, theirs) => mine.or(theirs),
        };
        self
    }
}

/// Looks up the outputs of the transaction at `index` (one question for
/// all of them: [`Bip30Reader::has_unspent_output_of`]).
fn scan_outputs(
    reader: &mut Bip30Reader<'_>,
    transaction: &TransactionView<'_>,
    txid: Txid,
    index: usize,
) -> Bip30Scan {
    let output_count = transaction.outputs().len() as u32;
    let mut scan = Bip30Scan { lookups: u64::from(output_count), ..Bip30Scan::default() };
    match reader.has_unspent_output_of(&txid, output_count) {
        Ok(lookup) => {
            scan.database_lookups = u64::from(lookup.answered_by_database);
            if lookup.unspent {
                let error = ConnectError::Invalid(BlockRejection::Bip30 { txid });
                scan.first_offender = Some((index, error));
            }
        }
        Err(error) => scan.first_offender = Some((index, ConnectError::Chainstate(error))),
    }
    scan
}

/// Spends the transaction's inputs into its undo record (the last one
/// pushed); a missing coin stops with the record holding those spent so far.
fn spend_inputs<'u>(
    cache: &mut CoinsCache,
    transaction: &TransactionView<'_>,
    txid: &Txid,
    height: u32,
    undo: &'u mut BlockUndo,
    coin_reads: &mut CoinReadCounts,
) -> Result<&'u [Coin], ConnectError> {
    let Some(record) = undo.transactions.last_mut() else {
        return Ok(&[]);
    };
    for (input_index, input) in transaction.inputs().iter().enumerate() {
        match cache.spend_found(&input.previous_output()) {
            Ok((coin, source)) => {
                coin_reads.count_spend(height, coin.height(), source);
                record.spent.push(coin);
            }
            Err(ChainstateError::MissingCoin { .. }) => {
                return Err(BlockRejection::MissingInput { txid: *txid, input: input_index }.into())
            }
            Err(error) => return Err(error.into()),
        }
    }
    Ok(&record.spent)
}

/// Whether new coins may replace coins already in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overwrite {
    /// Only a coinbase's (Core's `AddCoins`: BIP30's two historical
    /// duplicates).
    CoinbaseOnly,
    /// Every output (replay after a crash writes final values).
    Always,
}

/// Adds the transaction's spendable outputs: the one way this crate
/// applies a transaction's outputs (connecting, replay after a crash).
fn add_outputs(
    cache: &mut CoinsCache,
    transaction: &TransactionView<'_>,
    txid: &Txid,
    height: u32,
    is_coinbase: bool,
    overwrite: Overwrite,
) -> Result<(), ConnectError> {
    let may_overwrite = is_coinbase || overwrite == Overwrite::Always;
    for (vout, output) in transaction.outputs().iter().enumerate() {
        // CheckTransaction bounded every output value already; a block
        // that skipped it fails with its reason.
        let amount = output_amount(output.value, vout)
            .map_err(|source| BlockRejection::Transaction { txid: *txid, source })?;
        let coin = Coin::new(amount, output.script_pubkey, height, is_coinbase)?;
        cache.add(&OutPoint { txid: *txid, vout: vout as u32 }, coin, may_overwrite)?;
    }
    Ok(())
}

/// Rolls back a partly or fully applied block and returns `error`.
fn rollback_after(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    height: u32,
    undo: &BlockUndo,
    outputs_added: usize,
    error: ConnectError,
) -> ConnectError {
    if let ConnectError::Chainstate(_) = error {
        return error;
    }
    match rollback(cache, block, txids, height, undo, outputs_added) {
        Ok(()) => error,
        Err(storage) => ConnectError::Chainstate(storage),
    }
}

/// Undoes the effects of the first transactions of `block` (at `height`):
/// the outputs of the first `outputs_added` are spent again and the coins
/// in `undo` (one record per non-coinbase transaction reached, the last
/// maybe partial) are put back, with [`crate::disconnect`]'s undo steps.
pub fn rollback(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    height: u32,
    undo: &BlockUndo,
    outputs_added: usize,
) -> Result<(), ChainstateError> {
    assert_eq!(txids.len(), block.transaction_count(), "one txid per transaction");
    let touched = outputs_added.max(undo.transactions.len() + 1).min(block.transaction_count());
    for index in (0..touched).rev() {
        let Some(transaction) = block.transaction(index) else { continue };
        if index < outputs_added {
            spend_outputs_again(cache, &transaction, &txids[index], height, index == 0)?;
        }
        let Some(record) = index.checked_sub(1).and_then(|slot| undo.transactions.get(slot)) else {
            continue;
        };
        restore_spent_coins(cache, &transaction, &record.spent)?;
    }
    Ok(())
}

/// Applies `block`'s coin changes at `height` without any check (Core's
/// `RollforwardBlock`, replaying a flush a crash interrupted): inputs spent
/// if present, outputs written over whatever is there.
pub fn roll_forward(
    cache: &mut CoinsCache,
    block: &BlockView<'_>,
    txids: &[Txid],
    height: u32,
) -> Result<(), ConnectError> {
    assert_eq!(txids.len(), block.transaction_count(), "one txid per transaction");
    for (index, (transaction, txid)) in block.transactions().zip(txids).enumerate() {
        if index > 0 {
            for input in transaction.inputs() {
                match cache.spend(&input.previous_output()) {
                    Ok(_) | Err(ChainstateError::MissingCoin { .. }) => {}
                    Err(error) => return Err(error.into()),
                }
            }
        }
        add_outputs(cache, &transaction, txid, height, index == 0, Overwrite::Always)?;
    }
    Ok(())
}
