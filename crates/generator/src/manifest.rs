//! `manifest.json`: what was generated, for tests and benchmarks to check
//! against. Deterministic: no paths, no clock readings.

use serde::Serialize;

use std::collections::BTreeMap;

use crate::options::RecordedOptions;
use crate::statistics::{ChainStatistics, NamedCounts, ShapeCounts};

/// Version of the generator, recorded so a chain can be regenerated.
pub const GENERATOR_VERSION: &str = env!("CARGO_PKG_VERSION");

/// An invalid block written after the valid chain.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct InvalidBlockRecord {
    /// The class's name.
    pub class: String,
    /// The reject reason Core gives.
    pub reject_reason: String,
    /// What was broken.
    pub description: String,
    /// Its height (it builds on the valid tip).
    pub height: u32,
    /// Its hash.
    pub hash: String,
}

/// A block of a competing branch.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ForkBlockRecord {
    /// `reorged` (was the tip for a while) or `stale` (never the tip).
    pub branch: String,
    /// Its height.
    pub height: u32,
    /// Its hash.
    pub hash: String,
}

/// The manifest.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Manifest {
    /// The generator's version.
    pub generator_version: String,
    /// Always `regtest`.
    pub network: String,
    /// The seed.
    pub seed: u64,
    /// The options that shaped the chain.
    pub options: RecordedOptions,
    /// Genesis hash.
    pub genesis_hash: String,
    /// Height of the best valid chain's tip (Core's `getblockcount`).
    pub block_count: u32,
    /// Hash of that tip (Core's `getbestblockhash` after `-reindex`).
    pub tip_hash: String,
    /// Transactions in the best chain (genesis excluded).
    pub transactions: u64,
    /// Inputs by the script type they spend.
    pub inputs_by_script_type: NamedCounts,
    /// Outputs by script type.
    pub outputs_by_script_type: NamedCounts,
    /// Serialised bytes of the best chain's blocks (genesis excluded).
    pub total_bytes: u64,
    /// Weight of those blocks.
    pub total_weight: u64,
    /// Bytes of all `blk` files (framing, genesis, forks and invalid blocks included).
    pub file_bytes: u64,
    /// Number of `blk` files.
    pub block_files: u32,
    /// Records in the `blk` files.
    pub records: u64,
    /// Unspent outputs at the tip (Core's `gettxoutsetinfo` `txouts`).
    pub utxo_count: u64,
    /// Transactions with a non-zero nLockTime.
    pub lock_time_transactions: u64,
    /// Inputs under a BIP68 relative lock.
    pub relative_lock_inputs: u64,
    /// Spent coins by age in blocks (`00001-00001` = spent in the next block).
    pub spend_age_blocks: NamedCounts,
    /// Spent coins by age in five ranges: `00000-00001` (the same or the
    /// next block), `00002-00010`, `00011-00100`, `00101-01000`, `01001+`.
    pub spend_age_histogram: NamedCounts,
    /// Transactions, inputs, outputs and spend ages per shape (payment,
    /// batch payout, consolidation); coinbases not included.
    pub shapes: BTreeMap<String, ShapeCounts>,
    /// `xor.dat` as hex.
    pub obfuscation_key: String,
    /// Invalid blocks, in file order.
    pub invalid_blocks: Vec<InvalidBlockRecord>,
    /// Fork blocks, in file order.
    pub fork_blocks: Vec<ForkBlockRecord>,
}

impl Manifest {
    /// Fills the counts from `statistics`.
    pub fn set_statistics(&mut self, statistics: &ChainStatistics) {
        self.transactions = statistics.transactions;
        self.inputs_by_script_type = statistics.inputs_named();
        self.outputs_by_script_type = statistics.outputs_named();
        self.total_bytes = statistics.block_bytes;
        self.total_weight = statistics.block_weight;
        self.lock_time_transactions = statistics.lock_time_transactions;
        self.relative_lock_inputs = statistics.relative_lock_inputs;
        self.spend_age_blocks = statistics.spend_ages_named();
        self.spend_age_histogram = statistics.spend_age_ranges.named();
        self.shapes = statistics.shapes_named();
    }
}
