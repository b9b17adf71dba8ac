//! Signet (BIP325; Core's `SigNetParams`): the global default signet, or
//! one with its own challenge (`-signetchallenge`).

use super::assumeutxo;
use super::literal::{hash_literal, u256_literal};
use super::{
    GenesisSpecification, Network, Params, POW_TARGET_SPACING_SECONDS, POW_TARGET_TIMESPAN_SECONDS,
};
use crate::encode::write_compact_size;
use crate::hash::sha256d;
use crate::pow::{ChainWork, Target, U256};

/// The global default signet's challenge: a 1-of-2 bare multisig.
pub const DEFAULT_SIGNET_CHALLENGE: &str = "512103ad5e0edad18cb1f0fc0d28a3d4f1f3e445640337489abb10404f2d1e086be430210359ef5021964fe22d6f8e05b2463c9540ce96883fe3b278760f048f5189f2e6c452ae";

/// Every signet's pow limit.
const SIGNET_POW_LIMIT: U256 =
    u256_literal!("00000377ae000000000000000000000000000000000000000000000000000000");

impl Params {
    /// The global default signet.
    pub fn signet() -> Params {
        // The constant is valid hex (the genesis and magic tests check it).
        let challenge = crate::hex::decode(DEFAULT_SIGNET_CHALLENGE).unwrap_or_default();
        let mut params = Params::custom_signet(challenge);
        params.minimum_chain_work = ChainWork::from_u256(u256_literal!(
            "0000000000000000000000000000000000000000000000000000067d328e681a"
        ));
        // Block 267,665.
        params.assumeutxo = assumeutxo::SIGNET.to_vec();
        params.default_assume_valid =
            Some(hash_literal!("000000128586e26813922680309f04e1de713c7542fee86ed908f56368aefe2e"));
        params
    }

    /// Whether this is a signet with a challenge of its own
    /// (`-signetchallenge`), not the global default signet.
    pub fn is_custom_signet(&self) -> bool {
        let default = crate::hex::decode(DEFAULT_SIGNET_CHALLENGE).unwrap_or_default();
        self.network == Network::Signet && self.signet_challenge.as_deref() != Some(&default[..])
    }

    /// The parameters this chain has before any option changes them (the
    /// default minimum chain work Core warns against lowering): the
    /// network's, or a custom signet's own.
    pub fn chain_defaults(&self) -> Params {
        match &self.signet_challenge {
            Some(challenge) if self.is_custom_signet() => Params::custom_signet(challenge.clone()),
            _ => Params::for_network(self.network),
        }
    }

    /// A signet whose blocks must satisfy `challenge`: no minimum chain work
    /// and no assumed-valid block, magic bytes derived from the challenge.
    pub fn custom_signet(challenge: Vec<u8>) -> Params {
        let genesis = GenesisSpecification::satoshi(1_598_918_400, 52_613_770, 0x1e03_77ae).build();
        Params {
            network: Network::Signet,
            message_start: signet_message_start(&challenge),
            default_port: 38333,
            genesis_hash: genesis.block_hash(),
            genesis,
            subsidy_halving_interval: 210_000,
            prune_after_height: 1_000,
            script_flag_exceptions: Vec::new(),
            bip34_height: 1,
            bip34_hash: None,
            bip65_height: 1,
            bip66_height: 1,
            csv_height: 1,
            segwit_height: 1,
            pow_limit: Target::from_pow_limit(SIGNET_POW_LIMIT),
            pow_target_spacing_seconds: POW_TARGET_SPACING_SECONDS,
            pow_target_timespan_seconds: POW_TARGET_TIMESPAN_SECONDS,
            allow_min_difficulty_blocks: false,
            enforce_bip94: false,
            no_retargeting: false,
            minimum_chain_work: ChainWork::ZERO,
            default_assume_valid: None,
            signet_challenge: Some(challenge),
            assumeutxo: Vec::new(),
            swiftsync_hints: None,
        }
    }
}

/// The first four bytes of the double SHA-256 of the challenge serialised
/// with its compact-size length.
fn signet_message_start(challenge: &[u8]) -> [u8; 4] {
    let mut serialised = Vec::with_capacity(challenge.len() + 9);
    write_compact_size(&mut serialised, challenge.len() as u64);
    serialised.extend_from_slice(challenge);
    let hash = sha256d(&serialised);
    [hash[0], hash[1], hash[2], hash[3]]
}
