//! Regtest (Core's `CRegTestParams`) and the options Core reads for it:
//! `-testactivationheight=NAME@HEIGHT` and `-test=bip94`.

use std::collections::BTreeMap;

use super::assumeutxo;
use super::literal::u256_literal;
use super::{BuriedDeployment, GenesisSpecification, Network, Params, POW_TARGET_SPACING_SECONDS};
use crate::pow::{ChainWork, Target, U256};

/// Regtest's pow limit: just under 2^255, so about every other hash is a block.
const REGTEST_POW_LIMIT: U256 =
    u256_literal!("7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
/// Regtest retargets (were it to) over one day.
const REGTEST_POW_TARGET_TIMESPAN_SECONDS: i64 = 24 * 60 * 60;

/// A `-testactivationheight` value Core refuses (its `ReadRegTestArgs`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TestActivationHeightError {
    /// No `@` between name and height.
    #[error("-testactivationheight={argument}: expected name@height")]
    MissingSeparator {
        /// The whole option value.
        argument: String,
    },
    /// The height is not a decimal integer from 0 to 2,147,483,646.
    #[error("-testactivationheight={argument}: height must be an integer from 0 to 2147483646")]
    InvalidHeight {
        /// The whole option value.
        argument: String,
    },
    /// The name is not segwit, bip34, dersig, cltv or csv.
    #[error("-testactivationheight={argument}: name must be segwit, bip34, dersig, cltv or csv")]
    UnknownDeployment {
        /// The whole option value.
        argument: String,
    },
}

/// Options for a regtest chain (Core's `RegTestOptions`, the parts that
/// change consensus).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegtestOptions {
    activation_heights: BTreeMap<BuriedDeployment, u32>,
    enforce_bip94: bool,
}

impl RegtestOptions {
    /// Core's defaults: every buried deployment active from height 1
    /// (segwit from 0), no BIP94.
    pub fn new() -> RegtestOptions {
        RegtestOptions::default()
    }

    /// Activates `deployment` at `height` instead; a later call for the same
    /// deployment wins, as a later `-testactivationheight` does in Core.
    pub fn activation_height(
        mut self,
        deployment: BuriedDeployment,
        height: u32,
    ) -> RegtestOptions {
        self.activation_heights.insert(deployment, height);
        self
    }

    /// Applies one `-testactivationheight` value, `NAME@HEIGHT`, checked as
    /// Core checks it: split at the first `@`; the height a whole decimal
    /// `int32` (an optional `-`, no `+`, no spaces) from 0 to 2^31 - 2; the
    /// name one of segwit, bip34, dersig, cltv, csv.
    pub fn test_activation_height(
        self,
        argument: &str,
    ) -> Result<RegtestOptions, TestActivationHeightError> {
        let owned = || argument.to_owned();
        let (name, value) = argument
            .split_once('@')
            .ok_or_else(|| TestActivationHeightError::MissingSeparator { argument: owned() })?;
        let height = parse_activation_height(value)
            .ok_or_else(|| TestActivationHeightError::InvalidHeight { argument: owned() })?;
        let deployment = BuriedDeployment::from_test_activation_name(name)
            .ok_or_else(|| TestActivationHeightError::UnknownDeployment { argument: owned() })?;
        Ok(self.activation_height(deployment, height))
    }

    /// Enforces BIP94 (Core's `-test=bip94`).
    pub fn enforce_bip94(mut self, enforce: bool) -> RegtestOptions {
        self.enforce_bip94 = enforce;
        self
    }

    /// The regtest parameters with these options.
    pub fn build(&self) -> Params {
        let mut params = Params::regtest();
        params.enforce_bip94 = self.enforce_bip94;
        for (&deployment, &height) in &self.activation_heights {
            let field = match deployment {
                BuriedDeployment::HeightInCoinbase => &mut params.bip34_height,
                BuriedDeployment::CheckLockTimeVerify => &mut params.bip65_height,
                BuriedDeployment::StrictDerSignatures => &mut params.bip66_height,
                BuriedDeployment::CheckSequenceVerify => &mut params.csv_height,
                BuriedDeployment::Segwit => &mut params.segwit_height,
            };
            *field = height;
        }
        params
    }
}

/// Core's `ToIntegral<int32_t>` (all of the text, an optional minus sign and
/// digits) then its range check, `0 <= height < INT_MAX`.
fn parse_activation_height(text: &str) -> Option<u32> {
    // Rust's integer parser also takes a leading `+`; `std::from_chars` does not.
    if text.starts_with('+') {
        return None;
    }
    let height = text.parse::<i32>().ok()?;
    if height == i32::MAX {
        return None;
    }
    u32::try_from(height).ok()
}

impl Params {
    /// Regtest with Core's default options.
    pub fn regtest() -> Params {
        let genesis = GenesisSpecification::satoshi(1_296_688_602, 2, 0x207f_ffff).build();
        Params {
            network: Network::Regtest,
            message_start: [0xfa, 0xbf, 0xb5, 0xda],
            default_port: 18444,
            genesis_hash: genesis.block_hash(),
            genesis,
            subsidy_halving_interval: 150,
            prune_after_height: 1_000,
            script_flag_exceptions: Vec::new(),
            bip34_height: 1,
            bip34_hash: None,
            bip65_height: 1,
            bip66_height: 1,
            csv_height: 1,
            segwit_height: 0,
            pow_limit: Target::from_pow_limit(REGTEST_POW_LIMIT),
            pow_target_spacing_seconds: POW_TARGET_SPACING_SECONDS,
            pow_target_timespan_seconds: REGTEST_POW_TARGET_TIMESPAN_SECONDS,
            allow_min_difficulty_blocks: true,
            enforce_bip94: false,
            no_retargeting: true,
            minimum_chain_work: ChainWork::ZERO,
            default_assume_valid: None,
            signet_challenge: None,
            assumeutxo: assumeutxo::REGTEST.to_vec(),
            swiftsync_hints: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heights_parse_like_from_chars() {
        assert_eq!(parse_activation_height("0"), Some(0));
        assert_eq!(parse_activation_height("-0"), Some(0));
        assert_eq!(parse_activation_height("007"), Some(7));
        assert_eq!(parse_activation_height("2147483646"), Some(2_147_483_646));
        for rejected in ["", "-", "+1", " 1", "1 ", "-1", "2147483647", "2147483648", "1e3", "0x10"]
        {
            assert_eq!(parse_activation_height(rejected), None, "{rejected:?}");
        }
    }
}
