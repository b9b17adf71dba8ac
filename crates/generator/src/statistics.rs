//! What the manifest counts: transactions, inputs and outputs by script type,
//! bytes and weight.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::chain::BuiltBlock;
use crate::planner::PlannedOutput;
use crate::script_kind::ScriptKind;

/// Counts over the blocks of the best chain (genesis excluded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainStatistics {
    /// Blocks counted.
    pub blocks: u64,
    /// Transactions, coinbases included.
    pub transactions: u64,
    /// Spent inputs per script type, by [`ScriptKind::index`].
    pub inputs_by_kind: [u64; 8],
    /// Coinbase inputs.
    pub coinbase_inputs: u64,
    /// Created outputs per script type, by [`ScriptKind::index`].
    pub outputs_by_kind: [u64; 8],
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
}

/// Buckets of the spend-age histogram (the last holds 2^15 blocks and older).
pub const SPEND_AGE_BUCKETS: usize = 16;

/// Counts keyed by name, for the manifest.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NamedCounts(pub BTreeMap<String, u64>);

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
            for coin in &plan.spent {
                self.inputs_by_kind[coin.kind.index()] += 1;
                let age = u64::from(built.height.saturating_sub(coin.height)).max(1);
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

fn by_kind(counts: &[u64; 8]) -> BTreeMap<String, u64> {
    ScriptKind::ALL.iter().map(|kind| (kind.name().to_owned(), counts[kind.index()])).collect()
}
