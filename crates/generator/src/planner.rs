//! Plans unsigned transactions from the wallet's coins: payments, batch
//! payouts, consolidations, OP_RETURN outputs and lock times, shaped like the
//! main chain's traffic.
//!
//! Planning is sequential (it draws from the one seeded generator and moves
//! coins); it costs a few µs per transaction, against ~30 µs per signature,
//! so it stays well under a tenth of the run time.

use ibex_primitives::{Amount, OutPoint, Transaction, TxInput, TxOutput};

use crate::coin::Coin;
use crate::locks::{choose_lock_policy, LockContext, LockPolicy};
use crate::random::DeterministicRng;
use crate::script_kind::{op_return_script, ScriptKind, SCRIPT_KIND_COUNT};
use crate::utxo_heavy_mix::UtxoHeavyMix;
use crate::wallet::Wallet;

/// Smallest output the generator creates, in satoshis (about the dust limit).
/// Output values are planned as plain satoshis, the wire format's `i64`: the
/// planner splits values it took from its own coins.
pub const OUTPUT_VALUE_MIN_SATOSHIS: i64 = 1_000;
/// Weight of an input with an empty scriptSig and no witness.
const UNSIGNED_INPUT_WEIGHT: usize = 41 * 4;
/// Outputs get at least this many times the minimum on average.
const OUTPUT_SHARE_MIN_FACTOR: i64 = 20;
/// Coins under this value that fail to pay for a transaction are left as dust.
const DUST_VALUE: Amount = Amount::from_sat_u32(20_000);
/// Serialised size of an output paying to at most a 34-byte script, plus slack.
pub const OUTPUT_WEIGHT_ESTIMATE: usize = (8 + 1 + 34) * 4;

/// What an output of a planned transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannedOutput {
    /// A coin of `kind` to key `key_index`, which the wallet will own.
    Spendable {
        /// Its script type.
        kind: ScriptKind,
        /// Key pool index.
        key_index: u32,
    },
    /// An OP_RETURN data carrier (never a coin).
    OpReturn,
}

/// An unsigned transaction with what signing and the wallet need.
#[derive(Debug, Clone)]
pub struct PlannedTransaction {
    /// What kind of traffic it is.
    pub shape: Shape,
    /// The transaction, scriptSigs and witnesses still empty.
    pub transaction: Transaction,
    /// The coin each input spends.
    pub spent: Vec<Coin>,
    /// What each output is.
    pub outputs: Vec<PlannedOutput>,
    /// Inputs minus outputs.
    pub fee: Amount,
    /// Upper bound of the signed transaction's weight.
    pub weight_estimate: usize,
    /// BIP141 signature operations cost.
    pub sigop_cost: u64,
}

/// The transaction shapes the main chain is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One to three inputs, a payment and change.
    Payment,
    /// An exchange's batch payout: few inputs, hundreds of outputs.
    BatchPayout,
    /// A wallet sweeping hundreds of small coins into one or two.
    Consolidation,
}

impl Shape {
    /// Every shape, in manifest order.
    pub const ALL: [Shape; 3] = [Shape::Payment, Shape::BatchPayout, Shape::Consolidation];

    /// The manifest's name for the shape.
    pub const fn name(self) -> &'static str {
        match self {
            Shape::Payment => "payment",
            Shape::BatchPayout => "batch_payout",
            Shape::Consolidation => "consolidation",
        }
    }

    /// Position in [`Shape::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }
}

/// How a profile mixes shapes and kinds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TrafficMix {
    /// Relative weights of payment, batch payout and consolidation.
    pub shape_weights: [u64; 3],
    /// Relative weights of output script kinds, by [`ScriptKind::index`].
    pub kind_weights: [u64; SCRIPT_KIND_COUNT],
    /// Outputs of a batch payout: lowest and highest.
    pub batch_outputs: (u64, u64),
    /// Inputs of a consolidation: lowest and highest.
    pub consolidation_inputs: (u64, u64),
    /// Share of payments carrying an OP_RETURN output, per mille.
    pub op_return_per_mille: u64,
    /// Fee rates in satoshis per virtual byte: lowest and highest.
    pub fee_rate_satoshis_per_vbyte: (u64, u64),
    /// The `utxo-heavy` profile's own block shape (see [`crate::utxo_heavy`]);
    /// the other profiles plan with the weights above alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utxo_heavy: Option<UtxoHeavyMix>,
}

impl TrafficMix {
    /// The main chain's mix around 2023-2024: segwit v0 dominant, a fifth
    /// legacy, a growing taproot share; no bare multisig (its weight, last,
    /// is zero, so a seed draws the same chain as a mix without the kind).
    pub fn mainnet_like() -> TrafficMix {
        TrafficMix {
            shape_weights: [1_000, 30, 3],
            kind_weights: [10, 190, 40, 80, 420, 60, 170, 30, 0],
            batch_outputs: (50, 400),
            consolidation_inputs: (100, 400),
            op_return_per_mille: 60,
            fee_rate_satoshis_per_vbyte: (1, 12),
            utxo_heavy: None,
        }
    }
}

fn compact_size_length(value: usize) -> usize {
    match value {
        0..=0xfc => 1,
        0xfd..=0xffff => 3,
        _ => 5,
    }
}

/// Weight of everything but the inputs and outputs.
fn overhead_weight(inputs: usize, outputs: usize) -> usize {
    (8 + compact_size_length(inputs) + compact_size_length(outputs)) * 4 + 2
}

/// Takes up to `count` coins from the wallet.
fn take_coins(wallet: &mut Wallet, rng: &mut DeterministicRng, count: u64) -> Vec<Coin> {
    (0..count).map_while(|_| wallet.take(rng)).collect()
}

/// Splits `total` into `count` values of at least the minimum, by random shares.
fn split_value(rng: &mut DeterministicRng, total: i64, count: usize) -> Vec<i64> {
    let spare = total - OUTPUT_VALUE_MIN_SATOSHIS * count as i64;
    let shares: Vec<u64> = (0..count).map(|_| rng.between(1, 1_000)).collect();
    let share_sum: u64 = shares.iter().sum::<u64>().max(1);
    let mut values: Vec<i64> = shares
        .iter()
        .map(|&share| {
            OUTPUT_VALUE_MIN_SATOSHIS
                + (i128::from(spare) * i128::from(share) / i128::from(share_sum)) as i64
        })
        .collect();
    let assigned: i64 = values.iter().sum();
    if let Some(last) = values.last_mut() {
        *last += total - assigned;
    }
    values
}

/// The planner's per-block inputs.
pub struct Planner<'a> {
    /// The profile's traffic.
    pub mix: &'a TrafficMix,
    /// Keys in the pool (outputs pay to random ones).
    pub key_count: u32,
    /// Lock-time context of the block being built.
    pub locks: LockContext<'a>,
    /// Below this many spendable coins, half the transactions fan out.
    pub coins_wanted: usize,
}

impl Planner<'_> {
    /// Picks a shape; a wallet short of coins fans out more to grow its set.
    fn choose_shape(&self, rng: &mut DeterministicRng, wallet: &Wallet) -> Shape {
        let mut weights = self.mix.shape_weights;
        if wallet.spendable_count() < self.coins_wanted {
            weights = [weights[0], weights[0].max(1), 0];
        }
        match rng.weighted(&weights) {
            1 => Shape::BatchPayout,
            2 => Shape::Consolidation,
            _ => Shape::Payment,
        }
    }

    fn output_kind(&self, rng: &mut DeterministicRng) -> PlannedOutput {
        draw_output(rng, self.mix, self.key_count)
    }

    /// Plans one transaction, or `None` when the wallet has too little to spend.
    pub fn plan(
        &self,
        rng: &mut DeterministicRng,
        wallet: &mut Wallet,
        keys: &crate::keys::KeyPool,
    ) -> Option<PlannedTransaction> {
        let shape = self.choose_shape(rng, wallet);
        let (input_count, output_count) = match shape {
            Shape::Payment => (rng.weighted(&[0, 700, 220, 80]) as u64, 2),
            Shape::BatchPayout => {
                (rng.between(1, 3), rng.between(self.mix.batch_outputs.0, self.mix.batch_outputs.1))
            }
            Shape::Consolidation => {
                let (low, high) = self.mix.consolidation_inputs;
                (rng.between(low, high), rng.between(1, 2))
            }
        };
        let spent = take_coins(wallet, rng, input_count.max(1));
        if spent.is_empty() {
            return None;
        }
        // At most a few hundred coins of at most MAX_MONEY: no i64 overflow.
        let total_in: i64 = spent.iter().map(|coin| coin.value.to_sat()).sum();
        // Each output gets on average at least OUTPUT_SHARE_MIN_FACTOR times
        // the minimum, so splitting never grinds coins down to dust.
        let affordable = (total_in / (OUTPUT_VALUE_MIN_SATOSHIS * OUTPUT_SHARE_MIN_FACTOR)).max(1);
        let output_count = output_count.min(affordable as u64);
        let mut outputs: Vec<PlannedOutput> =
            (0..output_count).map(|_| self.output_kind(rng)).collect();
        if shape == Shape::Payment && rng.chance_per_mille(self.mix.op_return_per_mille) {
            outputs.push(PlannedOutput::OpReturn);
        }
        let lock = choose_lock_policy(rng, &self.locks, &spent);
        let (low, high) = self.mix.fee_rate_satoshis_per_vbyte;
        let fee_rate = rng.between(low, high) as i64;
        let weight = estimate_weight(&spent, outputs.len());
        let fee_satoshis = (weight as i64 + 3) / 4 * fee_rate;
        let spendable_outputs =
            outputs.iter().filter(|output| **output != PlannedOutput::OpReturn).count();
        let available = total_in - fee_satoshis;
        let outputs_affordable = available >= OUTPUT_VALUE_MIN_SATOSHIS * spendable_outputs as i64;
        let Some(fee) = Amount::from_sat(fee_satoshis).ok().filter(|_| outputs_affordable) else {
            // Coins too small to pay for their own spending stay unspent for
            // good, like the main chain's dust.
            let (dust, usable): (Vec<Coin>, Vec<Coin>) =
                spent.into_iter().partition(|coin| coin.value < DUST_VALUE);
            wallet.retire_dust(dust.len());
            wallet.put_back(usable);
            return None;
        };
        let values = split_value(rng, available, spendable_outputs);
        let draft =
            TransactionDraft { shape, spent, outputs, values, lock, fee, weight_estimate: weight };
        Some(assemble(rng, keys, draft))
    }
}

/// A spendable output of a kind drawn from `mix`'s weights, to one of
/// `key_count` keys.
pub fn draw_output(rng: &mut DeterministicRng, mix: &TrafficMix, key_count: u32) -> PlannedOutput {
    let kind = ScriptKind::ALL[rng.weighted(&mix.kind_weights)];
    PlannedOutput::Spendable { kind, key_index: rng.below(u64::from(key_count)) as u32 }
}

/// A transaction decided but not yet built: its coins, outputs, values,
/// locks and fee.
#[derive(Debug, Clone)]
pub struct TransactionDraft {
    /// What kind of traffic it is.
    pub shape: Shape,
    /// The coins it spends, one per input.
    pub spent: Vec<Coin>,
    /// What each output is.
    pub outputs: Vec<PlannedOutput>,
    /// The value of each spendable output, in order (OP_RETURN outputs
    /// carry nothing).
    pub values: Vec<i64>,
    /// Version, lock time and sequences.
    pub lock: LockPolicy,
    /// Inputs minus outputs.
    pub fee: Amount,
    /// Upper bound of the signed weight (tightened here to the exact
    /// unsigned weight plus each input's largest unlocking data).
    pub weight_estimate: usize,
}

/// Builds the unsigned transaction of `draft` (OP_RETURN data drawn from
/// `rng`) with its weight bound and sigops cost.
pub fn assemble(
    rng: &mut DeterministicRng,
    keys: &crate::keys::KeyPool,
    draft: TransactionDraft,
) -> PlannedTransaction {
    let TransactionDraft { shape, spent, outputs, values, lock, fee, weight_estimate } = draft;
    let inputs = spent
        .iter()
        .enumerate()
        .map(|(index, coin)| TxInput {
            previous_output: coin.outpoint,
            script_sig: Vec::new(),
            sequence: lock.sequence(index),
            witness: Vec::new(),
        })
        .collect();
    let mut values = values.into_iter();
    let mut sigop_cost: u64 = spent.iter().map(|coin| coin.kind.spend_sigop_cost()).sum();
    let tx_outputs = outputs
        .iter()
        .map(|output| match *output {
            PlannedOutput::Spendable { kind, key_index } => {
                sigop_cost += kind.output_sigop_cost();
                TxOutput {
                    value: values.next().unwrap_or(OUTPUT_VALUE_MIN_SATOSHIS),
                    script_pubkey: keys.script_pubkey(kind, key_index).to_vec(),
                }
            }
            PlannedOutput::OpReturn => {
                let mut data = vec![0u8; rng.between(8, 75) as usize];
                rng.fill(&mut data);
                TxOutput { value: 0, script_pubkey: op_return_script(&data) }
            }
        })
        .collect();
    let transaction = Transaction {
        version: lock.version,
        inputs,
        outputs: tx_outputs,
        lock_time: lock.lock_time,
    };
    // Exact unsigned weight plus each input's unlocking data at most.
    let unlocking: usize =
        spent.iter().map(|coin| coin.kind.input_weight_max() - UNSIGNED_INPUT_WEIGHT).sum();
    let weight_estimate = weight_estimate.min(transaction.weight() + unlocking + 2);
    PlannedTransaction { shape, transaction, spent, outputs, fee, weight_estimate, sigop_cost }
}

/// Upper bound of the signed weight of a transaction spending `spent` into
/// `output_count` outputs.
pub fn estimate_weight(spent: &[Coin], output_count: usize) -> usize {
    let inputs: usize = spent.iter().map(|coin| coin.kind.input_weight_max()).sum();
    overhead_weight(spent.len(), output_count)
        + inputs
        + output_count * OUTPUT_WEIGHT_ESTIMATE
        + 4 * 80
}

/// An outpoint no block created, for invalid blocks.
pub fn missing_outpoint(rng: &mut DeterministicRng) -> OutPoint {
    OutPoint { txid: ibex_primitives::Txid(rng.bytes_32()), vout: 0 }
}
