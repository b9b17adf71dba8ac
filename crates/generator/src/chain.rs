//! The chain being generated: its tip, times and wallet, and the making of
//! one valid block (plan, sign in parallel, coinbase, proof of work).
//!
//! Napkin math for the bench profile: a 3.9 MWU block is ~1.4 MB with ~7,000
//! inputs and ~7,700 signatures. With libsecp256k1's own signing (~25 µs)
//! that is ~190 ms of one core, ~7.5 MB/s; with the seeded nonce pool
//! ([`crate::nonce_pool`], ~3 µs) signing drops to ~25 ms and the rest
//! (sighash and txid hashing, ~4 SHA-256 passes over every byte; planning;
//! allocation; encoding; writing) sets the pace at ~45 MB per CPU-second.
//! Signing and txids run on all cores; the signed transactions then move
//! into the block without a copy.

use ibex_consensus::median_time_past;
use ibex_consensus::subsidy::block_subsidy;
use ibex_primitives::{Amount, Block, BlockHash, Height, OutPoint, Transaction, Txid, Wtxid};
use rayon::prelude::*;

use crate::block_budget::{block_weight_budget, BLOCK_SIGOPS_BUDGET, PLAN_FAILURES_MAX};
use crate::block_builder::{
    assemble_block, build_coinbase, witness_root, BlockPlace, CoinbaseSpec, REGTEST_BITS,
};
use crate::coin::Coin;
use crate::error::GeneratorError;
use crate::locks::LockContext;
use crate::planner::{PlannedOutput, PlannedTransaction, Planner, TrafficMix};
use crate::random::DeterministicRng;
use crate::regtest::Regtest;
use crate::script_kind::ScriptKind;
use crate::signer::Signer;
use crate::utxo_heavy::{self, HeavyBlock};
use crate::wallet::Wallet;

/// A block spends at most 1/this of the spendable coins.
const SPENDABLE_SHARE_DIVISOR: usize = 4;
/// The wallet wants one spendable coin per this much block weight (a full
/// block spends ~1 coin per 500 WU; keeping 5x that lets coins age).
const WEIGHT_PER_WANTED_COIN: usize = 100;

/// The chain so far and the wallet that owns its coins.
#[derive(Debug, Clone)]
pub struct ChainState {
    /// Height of the tip.
    pub height: u32,
    /// Hash of the tip.
    pub tip_hash: BlockHash,
    /// nTime of every block, by height.
    pub times: Vec<u32>,
    /// Median time past of every block, by height.
    pub median_time_past: Vec<i64>,
    /// Coins the chain created and has not spent.
    pub wallet: Wallet,
    /// The shape of everything to come.
    pub rng: DeterministicRng,
}

impl ChainState {
    /// A chain holding only `params`' genesis block (whose coinbase can never
    /// be spent, so the wallet starts empty), whose wallet keeps coins as
    /// `mix` needs (by age for the `utxo-heavy` profile).
    pub fn from_genesis(params: &Regtest, rng: DeterministicRng, mix: &TrafficMix) -> ChainState {
        let time = params.genesis.header.time;
        let wallet = match &mix.utxo_heavy {
            Some(heavy) => Wallet::with_ages(heavy.spend_ages.clone()),
            None => Wallet::new(),
        };
        ChainState {
            height: 0,
            tip_hash: params.genesis_hash,
            times: vec![time],
            median_time_past: vec![i64::from(time)],
            wallet,
            rng,
        }
    }

    /// Median time past of the tip.
    pub fn tip_median_time_past(&self) -> i64 {
        self.median_time_past.last().copied().unwrap_or(0)
    }

    /// A plausible nTime for the next block: ten minutes on average, now and
    /// then a little earlier than its parent, always above median time past.
    pub fn next_time(&mut self) -> u32 {
        let previous = i64::from(self.times.last().copied().unwrap_or(0));
        let step = if self.rng.chance_per_mille(60) {
            -(self.rng.below(300) as i64)
        } else {
            self.rng.between(1, 1_199) as i64
        };
        (previous + step).max(self.tip_median_time_past() + 1) as u32
    }

    /// Records a new tip.
    pub fn push_tip(&mut self, hash: BlockHash, time: u32) {
        self.height += 1;
        self.tip_hash = hash;
        self.times.push(time);
        self.median_time_past.push(median_time_past(&self.times));
    }
}

/// A block made by the generator, with what the manifest counts.
#[derive(Debug, Clone)]
pub struct BuiltBlock {
    /// The block.
    pub block: Block,
    /// Its serialisation.
    pub bytes: Vec<u8>,
    /// The non-coinbase transactions' plans (spent coins, output kinds); their
    /// transactions have moved into `block`.
    pub planned: Vec<PlannedTransaction>,
    /// The coinbase payout's kind.
    pub coinbase_kind: ScriptKind,
    /// Its height.
    pub height: u32,
}

impl BuiltBlock {
    /// The block's height.
    pub fn height(&self) -> u32 {
        self.height
    }
}

/// Everything that stays fixed while blocks are made.
#[derive(Debug, Clone, Copy)]
pub struct BlockMaker<'a> {
    /// Regtest's facts.
    pub params: &'a Regtest,
    /// Signing keys and context.
    pub signer: Signer<'a>,
    /// The profile's traffic.
    pub mix: &'a TrafficMix,
    /// Weight to fill blocks toward.
    pub target_weight: usize,
}

/// Signed transactions with their ids.
pub struct SignedTransactions {
    /// txid per transaction.
    pub txids: Vec<Txid>,
    /// wtxid per transaction.
    pub wtxids: Vec<Wtxid>,
}

impl BlockMaker<'_> {
    /// Plans the transactions of the block at `state.height + 1`, filling
    /// toward the target weight within the sigops limit (the `utxo-heavy`
    /// profile's way when its mix says so, see [`crate::utxo_heavy`]).
    pub fn plan_block(&self, state: &mut ChainState) -> Vec<PlannedTransaction> {
        let height = state.height + 1;
        state.wallet.release_matured(height);
        let weight_budget = block_weight_budget(self.target_weight);
        let locks = LockContext {
            height,
            previous_median_time_past: state.tip_median_time_past(),
            median_time_past_by_height: &state.median_time_past,
        };
        if let Some(heavy) = &self.mix.utxo_heavy {
            let block = HeavyBlock { mix: self.mix, heavy, keys: self.signer.keys, locks };
            return utxo_heavy::plan_block(
                &block,
                weight_budget,
                &mut state.wallet,
                &mut state.rng,
            );
        }
        let planner = Planner {
            mix: self.mix,
            key_count: self.signer.keys.len() as u32,
            locks,
            coins_wanted: weight_budget / WEIGHT_PER_WANTED_COIN,
        };
        let (mut weight, mut sigops, mut failures) = (0usize, 0u64, 0u32);
        // Spend at most a share of the coins per block, so coins age and the
        // set grows as on the main chain.
        let inputs_budget = (state.wallet.spendable_count() / SPENDABLE_SHARE_DIVISOR).max(1);
        let mut inputs = 0usize;
        let mut planned = Vec::new();
        while failures < PLAN_FAILURES_MAX && inputs < inputs_budget {
            let Some(transaction) =
                planner.plan(&mut state.rng, &mut state.wallet, self.signer.keys)
            else {
                failures += 1;
                continue;
            };
            if weight + transaction.weight_estimate > weight_budget
                || sigops + transaction.sigop_cost > BLOCK_SIGOPS_BUDGET
            {
                state.wallet.put_back(transaction.spent);
                failures += 1;
                continue;
            }
            weight += transaction.weight_estimate;
            sigops += transaction.sigop_cost;
            inputs += transaction.spent.len();
            failures = 0;
            planned.push(transaction);
        }
        planned
    }

    /// Signs every planned transaction, in parallel, and computes their ids;
    /// the result is in block order whatever the threads did.
    pub fn sign_all(
        &self,
        planned: &mut [PlannedTransaction],
        height: u32,
    ) -> Result<SignedTransactions, GeneratorError> {
        let ids: Vec<(Txid, Wtxid)> = planned
            .par_iter_mut()
            .map(|plan| {
                self.signer
                    .sign(&mut plan.transaction, &plan.spent, None)
                    .map_err(|_| GeneratorError::Signing { height, input: 0 })?;
                Ok((plan.transaction.txid(), plan.transaction.wtxid()))
            })
            .collect::<Result<_, GeneratorError>>()?;
        let (txids, wtxids) = ids.into_iter().unzip();
        Ok(SignedTransactions { txids, wtxids })
    }

    /// The coinbase payout for the block at `height`: bare public keys early
    /// on, as in 2009, then the common kinds.
    pub fn coinbase_payout(&self, state: &mut ChainState, height: u32) -> (ScriptKind, u32) {
        let kind = if height < 200 && state.rng.chance_per_mille(700) {
            ScriptKind::P2pk
        } else {
            [ScriptKind::P2pkh, ScriptKind::P2wpkh, ScriptKind::P2trKeyPath][state.rng.index(3)]
        };
        (kind, state.rng.below(self.signer.keys.len() as u64) as u32)
    }

    /// Makes the next valid block on `state` and applies it (tip, wallet).
    pub fn next_block(&self, state: &mut ChainState) -> Result<BuiltBlock, GeneratorError> {
        let height = state.height + 1;
        let mut planned = self.plan_block(state);
        let signed = self.sign_all(&mut planned, height)?;
        let value = coinbase_value(self.params, height, planned.iter().map(|plan| plan.fee))?;
        let (coinbase_kind, coinbase_key) = self.coinbase_payout(state, height);
        let has_witness = planned.iter().any(|plan| plan.transaction.has_witness());
        let mut extra = [0u8; 8];
        state.rng.fill(&mut extra);
        let coinbase = build_coinbase(&CoinbaseSpec {
            height,
            extra: extra.to_vec(),
            script_pubkey: self.signer.keys.script_pubkey(coinbase_kind, coinbase_key).to_vec(),
            value,
            witness_root: has_witness.then(|| witness_root(&signed.wtxids)),
        });
        let time = state.next_time();
        let place =
            BlockPlace { previous_block_hash: state.tip_hash, height, time, bits: REGTEST_BITS };
        // The signed transactions move into the block (no copy of ~1.5 MB).
        let transactions =
            planned.iter_mut().map(|plan| std::mem::take(&mut plan.transaction)).collect();
        let block = self.finish(place, coinbase, transactions, &signed.txids)?;
        apply_to_wallet(
            &mut state.wallet,
            &block,
            &planned,
            &signed.txids,
            (coinbase_kind, coinbase_key),
            height,
        )?;
        state.push_tip(block.header.block_hash(), time);
        let bytes = block.encode();
        Ok(BuiltBlock { block, bytes, planned, coinbase_kind, height })
    }

    /// Puts the coinbase in front of the signed `transactions` (whose ids
    /// are `txids`) and assembles.
    pub fn finish(
        &self,
        place: BlockPlace,
        coinbase: Transaction,
        transactions: Vec<Transaction>,
        txids: &[Txid],
    ) -> Result<Block, GeneratorError> {
        let mut all_txids = Vec::with_capacity(txids.len() + 1);
        all_txids.push(coinbase.txid());
        all_txids.extend_from_slice(txids);
        let mut all_transactions = Vec::with_capacity(transactions.len() + 1);
        all_transactions.push(coinbase);
        all_transactions.extend(transactions);
        assemble_block(place, all_transactions, &all_txids)
    }
}

/// What the coinbase of the block at `height` may pay: the subsidy plus
/// `fees`, each addition within the money range.
pub fn coinbase_value(
    params: &Regtest,
    height: u32,
    fees: impl IntoIterator<Item = Amount>,
) -> Result<Amount, GeneratorError> {
    let subsidy = block_subsidy(Height::new(height), params.subsidy_halving_interval);
    Amount::checked_sum(std::iter::once(subsidy).chain(fees))
        .ok_or(GeneratorError::AmountOutOfRange { height })
}

/// Adds the coins `block` created to the wallet (its spends were taken when planned).
fn apply_to_wallet(
    wallet: &mut Wallet,
    block: &Block,
    planned: &[PlannedTransaction],
    txids: &[Txid],
    coinbase_payout: (ScriptKind, u32),
    height: u32,
) -> Result<(), GeneratorError> {
    let amount = |satoshis: i64| {
        Amount::from_sat(satoshis).map_err(|_| GeneratorError::AmountOutOfRange { height })
    };
    if let Some(coinbase) = block.transactions.first() {
        let value = coinbase.outputs.first().map_or(0, |output| output.value);
        wallet.add(Coin {
            outpoint: OutPoint { txid: coinbase.txid(), vout: 0 },
            value: amount(value)?,
            kind: coinbase_payout.0,
            key_index: coinbase_payout.1,
            height,
            is_coinbase: true,
        });
    }
    let transactions = block.transactions.iter().skip(1);
    for ((plan, transaction), txid) in planned.iter().zip(transactions).zip(txids) {
        for (vout, (output, planned_output)) in
            transaction.outputs.iter().zip(&plan.outputs).enumerate()
        {
            if let PlannedOutput::Spendable { kind, key_index } = *planned_output {
                wallet.add(Coin {
                    outpoint: OutPoint { txid: *txid, vout: vout as u32 },
                    value: amount(output.value)?,
                    kind,
                    key_index,
                    height,
                    is_coinbase: false,
                });
            }
        }
    }
    Ok(())
}
