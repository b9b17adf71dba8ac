//! Profiles and options.

use std::path::PathBuf;

use serde::Serialize;

use crate::planner::TrafficMix;
use crate::siblings::{SiblingTail, SiblingTailRecord};
use crate::utxo_heavy_mix::UtxoHeavyMix;

/// A preset size and shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// A few hundred small blocks in seconds, for unit tests.
    Tiny,
    /// About 2,000 blocks and 50 MB, for integration tests in CI.
    Small,
    /// Several GB and millions of coins, full blocks, for benchmarks.
    Bench,
    /// Full blocks of batch payouts: a UTXO set of more than 25 M coins,
    /// spent with the main chain's ages (see [`crate::utxo_heavy`]).
    UtxoHeavy,
}

impl Profile {
    /// Parses a profile name.
    pub fn from_name(name: &str) -> Option<Profile> {
        match name {
            "tiny" => Some(Profile::Tiny),
            "small" => Some(Profile::Small),
            "bench" => Some(Profile::Bench),
            "utxo-heavy" => Some(Profile::UtxoHeavy),
            _ => None,
        }
    }

    /// Blocks after genesis.
    pub const fn default_blocks(self) -> u32 {
        match self {
            Profile::Tiny => 260,
            Profile::Small => 2_000,
            Profile::Bench => 2_400,
            Profile::UtxoHeavy => 2_000,
        }
    }

    /// Weight blocks fill toward.
    pub const fn default_target_weight(self) -> usize {
        match self {
            Profile::Tiny => 40_000,
            Profile::Small => 80_000,
            Profile::Bench => 3_990_000,
            Profile::UtxoHeavy => 3_990_000,
        }
    }

    /// Keys in the pool.
    pub const fn key_count(self) -> usize {
        match self {
            Profile::Tiny => 64,
            Profile::Small => 512,
            Profile::Bench | Profile::UtxoHeavy => 4_096,
        }
    }

    /// The traffic mix: smaller batches and consolidations on tiny blocks,
    /// more batch payouts on bench blocks.
    pub fn traffic_mix(self) -> TrafficMix {
        let mut mix = TrafficMix::mainnet_like();
        match self {
            Profile::Tiny => {
                mix.batch_outputs = (20, 120);
                mix.consolidation_inputs = (20, 100);
                mix.shape_weights = [1_000, 40, 20];
            }
            // More batch payouts: the UTXO set grows by ~1,000 coins a block
            // more, to a few million by the tip, as an IBD benchmark needs.
            Profile::Bench => mix.shape_weights = [1_000, 55, 3],
            Profile::Small => {}
            // Every kind; bare multisig and P2PK rare (each output of
            // either costs sigops). Bare multisig's 105-byte script is kept
            // whole in the coins database (Core compresses only P2PKH, P2SH
            // and P2PK), and neither it nor P2PK's 67 bytes fit the
            // cache's 34-byte inline scripts.
            Profile::UtxoHeavy => {
                mix.kind_weights = [5, 180, 40, 80, 420, 60, 170, 30, 5];
                mix.fee_rate_satoshis_per_vbyte = (1, 8);
                mix.utxo_heavy = Some(UtxoHeavyMix::mainnet_like());
            }
        }
        mix
    }
}

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratorOptions {
    /// The preset.
    pub profile: Profile,
    /// Seed of every random choice.
    pub seed: u64,
    /// Output directory (created; must not already hold block files).
    pub out: PathBuf,
    /// Blocks after genesis (the profile's default when `None`).
    pub blocks: Option<u32>,
    /// Weight to fill blocks toward (the profile's default when `None`).
    pub target_weight: Option<usize>,
    /// Write an all-zero `xor.dat` (no obfuscation).
    pub xor_zero: bool,
    /// Append invalid blocks after the valid chain.
    pub invalid: bool,
    /// Also write a reorged branch and a stale block.
    pub forks: bool,
    /// End the chain with invalid siblings of its last valid block.
    pub siblings: Option<SiblingTail>,
    /// Signing threads (all cores when `None`).
    pub threads: Option<usize>,
}

impl GeneratorOptions {
    /// Options for `profile` with `seed`, writing to `out`, nothing else set.
    pub fn new(profile: Profile, seed: u64, out: PathBuf) -> GeneratorOptions {
        GeneratorOptions {
            profile,
            seed,
            out,
            blocks: None,
            target_weight: None,
            xor_zero: false,
            invalid: false,
            forks: false,
            siblings: None,
            threads: None,
        }
    }

    /// Blocks to generate after genesis.
    pub fn block_count(&self) -> u32 {
        self.blocks.unwrap_or(self.profile.default_blocks())
    }

    /// The weight target, capped at the consensus limit.
    pub fn weight_target(&self) -> usize {
        self.target_weight
            .unwrap_or(self.profile.default_target_weight())
            .min(crate::block_budget::BLOCK_WEIGHT_MAX)
    }
}

/// The options as the manifest records them (without the output path, so
/// two runs into different directories have identical manifests).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RecordedOptions {
    /// The preset.
    pub profile: Profile,
    /// Blocks after genesis.
    pub blocks: u32,
    /// Weight target.
    pub target_weight: usize,
    /// All-zero obfuscation key.
    pub xor_zero: bool,
    /// Invalid blocks appended.
    pub invalid: bool,
    /// Fork branches written.
    pub forks: bool,
    /// Invalid siblings at the end of the chain (absent when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub siblings: Option<SiblingTailRecord>,
    /// Keys in the pool.
    pub key_count: usize,
    /// The traffic mix.
    pub traffic: TrafficMix,
}

impl From<&GeneratorOptions> for RecordedOptions {
    fn from(options: &GeneratorOptions) -> RecordedOptions {
        RecordedOptions {
            profile: options.profile,
            blocks: options.block_count(),
            target_weight: options.weight_target(),
            xor_zero: options.xor_zero,
            invalid: options.invalid,
            forks: options.forks,
            siblings: options.siblings.as_ref().map(SiblingTail::record),
            key_count: options.profile.key_count(),
            traffic: options.profile.traffic_mix(),
        }
    }
}
