//! What the manifest counts: transactions, inputs and outputs by script type
//! and by shape, bytes and weight, and the ages of spent coins.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::chain::BuiltBlock;
use crate::named_counts::NamedCounts;
use crate::planner::{PlannedOutput, Shape};
use crate::script_kind::{ScriptKind, SCRIPT_KIND_COUNT};
use crate::spend_age::SpendAgeHistogram;

/// Counts over the blocks of the best chain (genesis excluded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainStatistics {
    /// Blocks counted.
    pub blocks: u64,
    /// Transactions, coinbases included.
    pub transactions: u64,
    /// Spent inputs per script type, by [`ScriptKind::index`].
    pub inputs_by_kind: [u64; SCRIPT_KIND_COUNT],
    /// Coinbase inputs.
    pub coinbase_inputs: u64,
    /// Created outputs per script type, by [`ScriptKind::index`].
    pub outputs_by_kind: [u64; SCRIPT_KIND_COUNT],
    /// OP_RETURN data outputs (witness commitments not included).
    pub op_return_outputs: u64,
    /// Witness commitment outputs.
    pub witness_commitment_outputs: u64,
    /// Serialised block bytes.
    pub block_bytes: u64,
    /// Block weight.
    pub block_weight: u64,
    /// Transactions with a non-zero nLockTime.
    pub lock_time_transactions: u64,
    /// Inputs with a BIP68 relative lock.
    pub relative_lock_inputs: u64,
    /// Spends by the age of the coin in blocks: bucket `b` counts ages in
    /// `2^b..2^(b+1)` (the last bucket everything older).
    pub spend_age_buckets: [u64; SPEND_AGE_BUCKETS],
    /// Oldest coin spent, in blocks.
    pub spend_age_max_blocks: u64,
    /// Spends by age in the manifest's five ranges.
    pub spend_age_ranges: SpendAgeHistogram,
    /// The same per transaction shape, by [`Shape::index`].
    pub spend_age_ranges_by_shape: [SpendAgeHistogram; 3],
    /// Non-coinbase transactions per shape.
    pub transactions_by_shape: [u64; 3],
    /// Their inputs per shape.
    pub inputs_by_shape: [u64; 3],
    /// Their outputs per shape (OP_RETURN outputs included).
    pub outputs_by_shape: [u64; 3],
}

/// Buckets of the spend-age histogram (the last holds 2^15 blocks and older).
pub const SPEND_AGE_BUCKETS: usize = 16;

impl ChainStatistics {
    /// Adds one block.
    pub fn add(&mut self, built: &BuiltBlock) {
        self.blocks += 1;
        self.transactions += built.block.transactions.len() as u64;
        self.block_bytes += built.bytes.len() as u64;
        self.block_weight += built.block.weight() as u64;
        self.coinbase_inputs += 1;
        self.outputs_by_kind[built.coinbase_kind.index()] += 1;
        if let Some(coinbase) = built.block.transactions.first() {
            self.witness_commitment_outputs += coinbase.outputs.len().saturating_sub(1) as u64;
        }
        let transactions = built.block.transactions.iter().skip(1);
        for (plan, transaction) in built.planned.iter().zip(transactions) {
            let shape = plan.shape.index();
            self.transactions_by_shape[shape] += 1;
            self.inputs_by_shape[shape] += plan.spent.len() as u64;
            self.outputs_by_shape[shape] += plan.outputs.len() as u64;
            for coin in &plan.spent {
                self.inputs_by_kind[coin.kind.index()] += 1;
                let exact_age = u64::from(built.height.saturating_sub(coin.height));
                self.spend_age_ranges.add(exact_age);
                self.spend_age_ranges_by_shape[shape].add(exact_age);
                let age = exact_age.max(1);
                let bucket = (63 - age.leading_zeros() as usize).min(SPEND_AGE_BUCKETS - 1);
                self.spend_age_buckets[bucket] += 1;
                self.spend_age_max_blocks = self.spend_age_max_blocks.max(age);
            }
            for output in &plan.outputs {
                match output {
                    PlannedOutput::Spendable { kind, .. } => {
                        self.outputs_by_kind[kind.index()] += 1
                    }
                    PlannedOutput::OpReturn => self.op_return_outputs += 1,
                }
            }
            if transaction.lock_time != 0 {
                self.lock_time_transactions += 1;
            }
            let relative = transaction.version >= 2;
            self.relative_lock_inputs += transaction
                .inputs
                .iter()
                .filter(|input| relative && input.sequence & (1 << 31) == 0)
                .count() as u64;
        }
    }

    /// Inputs by script type name, with `coinbase` and `total`.
    pub fn inputs_named(&self) -> NamedCounts {
        let mut counts = by_kind(&self.inputs_by_kind);
        counts.insert("coinbase".to_owned(), self.coinbase_inputs);
        let total = counts.values().sum();
        counts.insert("total".to_owned(), total);
        NamedCounts(counts)
    }

    /// Outputs by script type name, with `op_return`, `witness_commitment` and `total`.
    pub fn outputs_named(&self) -> NamedCounts {
        let mut counts = by_kind(&self.outputs_by_kind);
        counts.insert("op_return".to_owned(), self.op_return_outputs);
        counts.insert("witness_commitment".to_owned(), self.witness_commitment_outputs);
        let total = counts.values().sum();
        counts.insert("total".to_owned(), total);
        NamedCounts(counts)
    }
}

impl ChainStatistics {
    /// The spend-age histogram keyed by age range in blocks, with `max`.
    pub fn spend_ages_named(&self) -> NamedCounts {
        let mut counts = BTreeMap::new();
        for (bucket, &count) in self.spend_age_buckets.iter().enumerate() {
            let low = 1u64 << bucket;
            let name = if bucket + 1 == SPEND_AGE_BUCKETS {
                format!("{low:05}+")
            } else {
                format!("{low:05}-{:05}", (low << 1) - 1)
            };
            counts.insert(name, count);
        }
        counts.insert("max".to_owned(), self.spend_age_max_blocks);
        NamedCounts(counts)
    }
}

impl ChainStatistics {
    /// Transactions, inputs and outputs per shape, keyed by shape name.
    pub fn shapes_named(&self) -> BTreeMap<String, ShapeCounts> {
        Shape::ALL
            .iter()
            .map(|shape| {
                let index = shape.index();
                let counts = ShapeCounts {
                    transactions: self.transactions_by_shape[index],
                    inputs: self.inputs_by_shape[index],
                    outputs: self.outputs_by_shape[index],
                    spend_age_blocks: self.spend_age_ranges_by_shape[index].named(),
                };
                (shape.name().to_owned(), counts)
            })
            .collect()
    }
}

/// What one shape of transaction adds up to.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ShapeCounts {
    /// Transactions.
    pub transactions: u64,
    /// Their inputs.
    pub inputs: u64,
    /// Their outputs (OP_RETURN outputs included).
    pub outputs: u64,
    /// Their spends by the age of the coin, in the manifest's five ranges.
    pub spend_age_blocks: NamedCounts,
}

fn by_kind(counts: &[u64; SCRIPT_KIND_COUNT]) -> BTreeMap<String, u64> {
    ScriptKind::ALL.iter().map(|kind| (kind.name().to_owned(), counts[kind.index()])).collect()
}
