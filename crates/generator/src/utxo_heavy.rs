//! The `utxo-heavy` profile's blocks: a UTXO set that grows to tens of
//! millions of coins, spent with the main chain's shape of ages.
//!
//! Each block gives fixed shares of its weight to three kinds of traffic,
//! planned in this order:
//! - consolidations (8 %): a wallet sweeping 50-500 small coins at least
//!   101 blocks old into one (or two), at 1-3 sat/vB;
//! - batch payouts (52 %): an exchange paying 100-2,000 outputs
//!   (log-uniform: most batches are small, a few are huge) of 2,000-150,000
//!   satoshis (log-uniform) from one to three treasury coins, change back
//!   to the treasury;
//! - payments (the rest): one to three coins of ages drawn from
//!   [`SpendAgeModel`](crate::spend_age::SpendAgeModel) (more while they
//!   are worth under 20,000 satoshis, at most eight), a payment and change.
//!
//! Napkin math (4 MWU blocks): an output is ~35 bytes (141 WU) at this mix
//! of kinds, so batch payouts add ~14,700 coins a block; payments (~1,000
//! WU each: ~1.9 inputs, as small coins pull in more, and two outputs)
//! make ~1,500 transactions, ~2,900 spends and ~3,100 coins; consolidations
//! remove ~800 coins. Net ~+13,800 coins a block for ~3,700 spends (~4,100
//! signatures, a few ms with pooled nonces): the blocks are dominated by
//! outputs, and an import by writing coins and reading the spent ones back,
//! not by signatures. Measured on the 2,000-block profile (seed 1): 26.2 M
//! coins, 2.34 GB, 19 s to make (`docs/utxo-heavy.md`).

use ibex_primitives::Amount;

use crate::aged_coins::{AgedCoins, SweepRequest};
use crate::block_budget::{BLOCK_SIGOPS_BUDGET, PLAN_FAILURES_MAX};
use crate::coin::Coin;
use crate::keys::KeyPool;
use crate::locks::{choose_lock_policy, LockContext};
use crate::planner::{
    assemble, draw_output, estimate_weight, PlannedOutput, PlannedTransaction, Shape, TrafficMix,
    TransactionDraft, OUTPUT_VALUE_MIN_SATOSHIS, OUTPUT_WEIGHT_ESTIMATE,
};
use crate::random::DeterministicRng;
use crate::script_kind::INPUT_WEIGHT_MAX;
use crate::spend_age::log_uniform;
use crate::utxo_heavy_mix::UtxoHeavyMix;
use crate::wallet::Wallet;

/// A batch payout cut down by the room left makes at least this many payouts.
const BATCH_PAYOUT_OUTPUTS_FLOOR: u64 = 10;
/// A consolidation cut down by the room left sweeps at least this many coins.
const CONSOLIDATION_INPUTS_FLOOR: usize = 10;
/// Treasury coins one batch payout may spend.
const BATCH_PAYOUT_INPUTS_MAX: usize = 3;
/// Weight kept for a transaction's version, counts, lock time, one change
/// output and slack.
const TRANSACTION_FIXED_WEIGHT: usize = 4 * (4 + 3 + 3 + 4) + OUTPUT_WEIGHT_ESTIMATE + 4 * 80;
/// Coins under this value that cannot pay for a payment are left as dust.
const DUST_VALUE: Amount = Amount::from_sat_u32(5_000);
/// Chance, per mille, that a consolidation also pays a second output.
const CONSOLIDATION_SECOND_OUTPUT_PER_MILLE: u64 = 100;

/// The fee for `weight` at `rate` satoshis per virtual byte.
fn fee_for(weight: usize, rate: u64) -> i64 {
    (weight as i64 + 3) / 4 * rate as i64
}

/// Sum of the coins' values (a few hundred coins of at most MAX_MONEY: no
/// overflow).
fn total_value(coins: &[Coin]) -> i64 {
    coins.iter().map(|coin| coin.value.to_sat()).sum()
}

/// What a `utxo-heavy` block is planned from.
pub struct HeavyBlock<'a> {
    /// The profile's traffic (output kinds).
    pub mix: &'a TrafficMix,
    /// Its `utxo-heavy` shares and sizes.
    pub heavy: &'a UtxoHeavyMix,
    /// The keys outputs pay to.
    pub keys: &'a KeyPool,
    /// The block's place, for lock times.
    pub locks: LockContext<'a>,
}

/// The three kinds of traffic of one block.
impl HeavyBlock<'_> {
    fn output(&self, rng: &mut DeterministicRng) -> PlannedOutput {
        draw_output(rng, self.mix, self.keys.len() as u32)
    }

    /// Signs nothing yet: builds the transaction with an exact weight bound.
    fn finish(&self, rng: &mut DeterministicRng, draft: TransactionDraft) -> PlannedTransaction {
        assemble(rng, self.keys, TransactionDraft { weight_estimate: usize::MAX, ..draft })
    }

    /// A batch payout fitting in `room` weight units, or `None`.
    fn batch_payout(
        &self,
        rng: &mut DeterministicRng,
        coins: &mut AgedCoins,
        room: usize,
    ) -> Option<PlannedTransaction> {
        let (low, high) = self.heavy.batch_payout_outputs;
        let wanted = log_uniform(rng, low, high);
        let mut spent = vec![coins.take_treasury()?];
        let input_weight_max = BATCH_PAYOUT_INPUTS_MAX * INPUT_WEIGHT_MAX;
        let fitting = room.saturating_sub(TRANSACTION_FIXED_WEIGHT + input_weight_max)
            / OUTPUT_WEIGHT_ESTIMATE;
        let count = wanted.min(fitting as u64);
        if count < BATCH_PAYOUT_OUTPUTS_FLOOR {
            coins.put_back(spent);
            return None;
        }
        let (value_low, value_high) = self.heavy.payout_value_satoshis;
        let mut payouts: Vec<i64> =
            (0..count).map(|_| log_uniform(rng, value_low, value_high) as i64).collect();
        let (rate_low, rate_high) = self.mix.fee_rate_satoshis_per_vbyte;
        let rate = rng.between(rate_low, rate_high);
        let needed = |spent: &[Coin], payouts: &[i64]| {
            let weight = estimate_weight(spent, payouts.len() + 1);
            payouts.iter().sum::<i64>() + fee_for(weight, rate) + OUTPUT_VALUE_MIN_SATOSHIS
        };
        while total_value(&spent) < needed(&spent, &payouts)
            && spent.len() < BATCH_PAYOUT_INPUTS_MAX
        {
            let Some(coin) = coins.take_treasury() else { break };
            spent.push(coin);
        }
        while total_value(&spent) < needed(&spent, &payouts) && payouts.pop().is_some() {}
        if (payouts.len() as u64) < BATCH_PAYOUT_OUTPUTS_FLOOR {
            coins.put_back(spent);
            return None;
        }
        let weight = estimate_weight(&spent, payouts.len() + 1);
        let fee_satoshis = fee_for(weight, rate);
        let change = total_value(&spent) - payouts.iter().sum::<i64>() - fee_satoshis;
        let outputs: Vec<PlannedOutput> = (0..=payouts.len()).map(|_| self.output(rng)).collect();
        payouts.push(change);
        let lock = choose_lock_policy(rng, &self.locks, &spent);
        let Ok(fee) = Amount::from_sat(fee_satoshis) else {
            coins.put_back(spent);
            return None;
        };
        let shape = Shape::BatchPayout;
        let values = payouts;
        let draft =
            TransactionDraft { shape, spent, outputs, values, lock, fee, weight_estimate: weight };
        Some(self.finish(rng, draft))
    }

    /// A consolidation of old small coins fitting in `room`, or `None`.
    fn consolidation(
        &self,
        rng: &mut DeterministicRng,
        coins: &mut AgedCoins,
        room: usize,
    ) -> Option<PlannedTransaction> {
        let age_min = self.heavy.spend_ages.consolidation_age_min_blocks;
        let age_max = coins.oldest_age().filter(|&age| age >= age_min)?;
        let (low, high) = self.heavy.consolidation_inputs;
        let request = SweepRequest {
            start_age_blocks: log_uniform(rng, u64::from(age_min), u64::from(age_max)) as u32,
            age_min_blocks: age_min,
            count: rng.between(low, high) as usize,
            value_max: Amount::from_sat(self.heavy.consolidation_coin_value_max_satoshis as i64)
                .ok()?,
            weight_max: room.saturating_sub(TRANSACTION_FIXED_WEIGHT + OUTPUT_WEIGHT_ESTIMATE),
        };
        let spent = coins.sweep(&request);
        let output_count =
            1 + usize::from(rng.chance_per_mille(CONSOLIDATION_SECOND_OUTPUT_PER_MILLE));
        let (rate_low, rate_high) = self.heavy.consolidation_fee_rate_satoshis_per_vbyte;
        let weight = estimate_weight(&spent, output_count);
        let fee_satoshis = fee_for(weight, rng.between(rate_low, rate_high));
        let available = total_value(&spent) - fee_satoshis;
        let affordable = available >= OUTPUT_VALUE_MIN_SATOSHIS * output_count as i64;
        if spent.len() < CONSOLIDATION_INPUTS_FLOOR || !affordable {
            coins.put_back(spent);
            return None;
        }
        let outputs: Vec<PlannedOutput> = (0..output_count).map(|_| self.output(rng)).collect();
        let first = if output_count == 1 { available } else { available / 2 };
        let mut values = vec![first];
        if output_count == 2 {
            values.push(available - first);
        }
        let lock = choose_lock_policy(rng, &self.locks, &spent);
        let Ok(fee) = Amount::from_sat(fee_satoshis) else {
            coins.put_back(spent);
            return None;
        };
        let shape = Shape::Consolidation;
        let draft =
            TransactionDraft { shape, spent, outputs, values, lock, fee, weight_estimate: weight };
        Some(self.finish(rng, draft))
    }

    /// A payment: coins of drawn ages, a payment and change.
    fn payment(
        &self,
        rng: &mut DeterministicRng,
        coins: &mut AgedCoins,
    ) -> Option<PlannedTransaction> {
        let first_inputs = rng.weighted(&[0, 700, 220, 80]);
        let mut spent: Vec<Coin> = (0..first_inputs).map_while(|_| coins.take(rng)).collect();
        while total_value(&spent) < self.heavy.payment_value_min_satoshis as i64
            && (spent.len() as u64) < self.heavy.payment_inputs_max
        {
            let Some(coin) = coins.take(rng) else { break };
            spent.push(coin);
        }
        if spent.is_empty() {
            return None;
        }
        let mut outputs = vec![self.output(rng), self.output(rng)];
        if rng.chance_per_mille(self.mix.op_return_per_mille) {
            outputs.push(PlannedOutput::OpReturn);
        }
        let (rate_low, rate_high) = self.mix.fee_rate_satoshis_per_vbyte;
        let weight = estimate_weight(&spent, outputs.len());
        let fee_satoshis = fee_for(weight, rng.between(rate_low, rate_high));
        let available = total_value(&spent) - fee_satoshis;
        if available < 2 * OUTPUT_VALUE_MIN_SATOSHIS {
            // Coins too small to pay for their own spending stay unspent.
            let (dust, usable): (Vec<Coin>, Vec<Coin>) =
                spent.into_iter().partition(|coin| coin.value < DUST_VALUE);
            coins.retire_dust(dust.len());
            coins.put_back(usable);
            return None;
        }
        let share_per_mille = rng.between(100, 900) as i64;
        let paid = (available * share_per_mille / 1_000)
            .clamp(OUTPUT_VALUE_MIN_SATOSHIS, available - OUTPUT_VALUE_MIN_SATOSHIS);
        let values = vec![paid, available - paid];
        let lock = choose_lock_policy(rng, &self.locks, &spent);
        let Ok(fee) = Amount::from_sat(fee_satoshis) else {
            coins.put_back(spent);
            return None;
        };
        let shape = Shape::Payment;
        let draft =
            TransactionDraft { shape, spent, outputs, values, lock, fee, weight_estimate: weight };
        Some(self.finish(rng, draft))
    }
}

/// The transactions of a block being filled, against its weight and
/// sigops budgets.
struct BlockFill {
    planned: Vec<PlannedTransaction>,
    weight: usize,
    sigops: u64,
    sigops_max: u64,
}

impl BlockFill {
    /// Plans transactions with `plan` (given the room left) until the block's
    /// weight reaches `limit` or planning fails [`PLAN_FAILURES_MAX`] times
    /// in a row.
    fn fill_to(
        &mut self,
        limit: usize,
        rng: &mut DeterministicRng,
        coins: &mut AgedCoins,
        mut plan: impl FnMut(&mut DeterministicRng, &mut AgedCoins, usize) -> Option<PlannedTransaction>,
    ) {
        let mut failures = 0;
        while failures < PLAN_FAILURES_MAX {
            let room = limit.saturating_sub(self.weight);
            let Some(transaction) = plan(rng, coins, room) else {
                failures += 1;
                continue;
            };
            if transaction.weight_estimate > room
                || self.sigops + transaction.sigop_cost > self.sigops_max
            {
                coins.put_back(transaction.spent);
                failures += 1;
                continue;
            }
            self.weight += transaction.weight_estimate;
            self.sigops += transaction.sigop_cost;
            failures = 0;
            self.planned.push(transaction);
        }
    }
}

/// Plans the next block of a `utxo-heavy` chain within `weight_budget`: its
/// consolidations, batch payouts and payments, in that order. Empty when
/// the wallet does not keep its coins by age.
pub fn plan_block(
    block: &HeavyBlock<'_>,
    weight_budget: usize,
    wallet: &mut Wallet,
    rng: &mut DeterministicRng,
) -> Vec<PlannedTransaction> {
    let Some(coins) = wallet.aged_mut() else { return Vec::new() };
    let mut fill =
        BlockFill { planned: Vec::new(), weight: 0, sigops: 0, sigops_max: BLOCK_SIGOPS_BUDGET };
    let heavy = block.heavy;
    let share = |per_mille: u64| (weight_budget as u128 * u128::from(per_mille) / 1_000) as usize;
    let consolidation_limit = share(heavy.consolidation_weight_per_mille);
    let batch_limit = consolidation_limit + share(heavy.batch_payout_weight_per_mille);
    fill.fill_to(consolidation_limit, rng, coins, |rng, coins, room| {
        block.consolidation(rng, coins, room)
    });
    fill.fill_to(batch_limit, rng, coins, |rng, coins, room| block.batch_payout(rng, coins, room));
    fill.fill_to(weight_budget, rng, coins, |rng, coins, _| block.payment(rng, coins));
    fill.planned
}
