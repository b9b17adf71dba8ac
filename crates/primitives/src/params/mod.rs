//! Network parameters: everything that differs between main, testnet3,
//! testnet4, signet and regtest, with the values of Bitcoin Core v30's
//! `kernel/chainparams.cpp` (and its BIP30 special cases from
//! `validation.cpp`).
//!
//! [`Params`] plays the part of Core's `CChainParams` and
//! `Consensus::Params` together. Build one with [`Params::for_network`],
//! a network's own constructor, [`Params::custom_signet`] or, for regtest
//! with `-testactivationheight` overrides, [`RegtestOptions`].

pub mod assumeutxo;
mod bip30;
mod deployment;
mod genesis;
pub(crate) mod literal;
mod main;
mod network;
mod regtest;
mod signet;
pub mod swiftsync;
mod testnet;

pub use assumeutxo::AssumeUtxoEntry;
pub use bip30::{
    is_bip30_repeat, is_bip30_unspendable, BlockAtHeight, BIP30_REPEAT_BLOCKS,
    BIP30_UNSPENDABLE_BLOCKS, BIP34_IMPLIES_BIP30_LIMIT,
};
pub use deployment::{BuriedDeployment, ScriptFlagException};
pub use genesis::{GenesisSpecification, SATOSHI_GENESIS_MESSAGE, SATOSHI_GENESIS_PUBLIC_KEY};
pub use network::{Network, UnknownNetwork};
pub use regtest::{RegtestOptions, TestActivationHeightError};
pub use signet::DEFAULT_SIGNET_CHALLENGE;
pub use swiftsync::{HintsCommitmentMismatch, SwiftSyncHintsEntry};

use crate::hash::BlockHash;
use crate::height::Height;
use crate::owned::Block;
use crate::pow::{ChainWork, Target};

/// Seconds between blocks the difficulty aims at, on every network.
pub const POW_TARGET_SPACING_SECONDS: i64 = 10 * 60;
/// Seconds a retarget period should take: two weeks (regtest: one day).
pub const POW_TARGET_TIMESPAN_SECONDS: i64 = 14 * 24 * 60 * 60;

/// One network's parameters (Core's `CChainParams` with its
/// `Consensus::Params`). Fields are public to read and, in tests, to change.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Params {
    /// Which chain.
    pub network: Network,
    /// The four bytes every P2P message starts with (`pchMessageStart`).
    pub message_start: [u8; 4],
    /// Default P2P port.
    pub default_port: u16,
    /// The genesis block.
    pub genesis: Block,
    /// Its hash.
    pub genesis_hash: BlockHash,
    /// Blocks between subsidy halvings.
    pub subsidy_halving_interval: u32,
    /// Pruning never starts below this height (Core's `nPruneAfterHeight`).
    pub prune_after_height: u32,
    /// Historical blocks checked with other script flags (Core's
    /// `script_flag_exceptions`).
    pub script_flag_exceptions: Vec<(BlockHash, ScriptFlagException)>,
    /// First height where BIP34 (height in coinbase) is enforced.
    pub bip34_height: u32,
    /// The block at `bip34_height` on this chain, where there is one known
    /// (Core's `BIP34Hash`; zero there means none). Only this chain's blocks
    /// above it may skip BIP30 checks.
    pub bip34_hash: Option<BlockHash>,
    /// First height where BIP65 (`OP_CHECKLOCKTIMEVERIFY`) is enforced.
    pub bip65_height: u32,
    /// First height where BIP66 (strict DER) is enforced.
    pub bip66_height: u32,
    /// First height where CSV (BIP68, BIP112, BIP113) is enforced.
    pub csv_height: u32,
    /// First height where segwit (BIP141, BIP143, BIP147) is enforced.
    pub segwit_height: u32,
    /// The easiest target a block may have.
    pub pow_limit: Target,
    /// Seconds between blocks the difficulty aims at.
    pub pow_target_spacing_seconds: i64,
    /// Seconds a retarget period should take.
    pub pow_target_timespan_seconds: i64,
    /// Testnet rule: a block more than 20 minutes after its parent may have
    /// the minimum difficulty.
    pub allow_min_difficulty_blocks: bool,
    /// BIP94 (testnet4): retarget from the period's first block's bits, and
    /// the timewarp rule.
    pub enforce_bip94: bool,
    /// Never retarget (regtest).
    pub no_retargeting: bool,
    /// Headers sync ignores chains with less work (`nMinimumChainWork`).
    pub minimum_chain_work: ChainWork,
    /// Scripts in this block's ancestors are assumed valid by default
    /// (`defaultAssumeValid`).
    pub default_assume_valid: Option<BlockHash>,
    /// The script a signet block's solution must satisfy (BIP325); `None`
    /// off signet.
    pub signet_challenge: Option<Vec<u8>>,
    /// Blocks a UTXO snapshot may be based on (Core's
    /// `m_assumeutxo_data`; [`assumeutxo`]).
    pub assumeutxo: Vec<AssumeUtxoEntry>,
    /// The SwiftSync hints file the network trusts, if any ([`swiftsync`]).
    pub swiftsync_hints: Option<SwiftSyncHintsEntry>,
}

impl Params {
    /// The parameters Core uses for `network` by default (signet: the
    /// global default signet; regtest: no `-testactivationheight`).
    pub fn for_network(network: Network) -> Params {
        match network {
            Network::Main => Params::main(),
            Network::Testnet3 => Params::testnet3(),
            Network::Testnet4 => Params::testnet4(),
            Network::Signet => Params::signet(),
            Network::Regtest => Params::regtest(),
        }
    }

    /// Blocks in a retarget period: target timespan over target spacing
    /// (2,016; regtest 144). At least 1 whatever the fields hold.
    pub fn difficulty_adjustment_interval(&self) -> u32 {
        let interval = self
            .pow_target_timespan_seconds
            .checked_div(self.pow_target_spacing_seconds)
            .unwrap_or(1);
        u32::try_from(interval.max(1)).unwrap_or(u32::MAX)
    }

    /// The first height where `deployment` is enforced.
    pub fn deployment_height(&self, deployment: BuriedDeployment) -> u32 {
        match deployment {
            BuriedDeployment::HeightInCoinbase => self.bip34_height,
            BuriedDeployment::CheckLockTimeVerify => self.bip65_height,
            BuriedDeployment::StrictDerSignatures => self.bip66_height,
            BuriedDeployment::CheckSequenceVerify => self.csv_height,
            BuriedDeployment::Segwit => self.segwit_height,
        }
    }

    /// Whether `deployment` is enforced in the block at `height` (Core's
    /// `DeploymentActiveAt` for buried deployments).
    pub fn deployment_active_at(&self, deployment: BuriedDeployment, height: Height) -> bool {
        height.to_u32() >= self.deployment_height(deployment)
    }

    /// The script flag exception for the block `hash`, if it is one.
    pub fn script_flag_exception(&self, hash: &BlockHash) -> Option<ScriptFlagException> {
        self.script_flag_exceptions
            .iter()
            .find(|(exception_hash, _)| exception_hash == hash)
            .map(|(_, exception)| *exception)
    }
}
