//! Soft forks whose activation heights are hard-coded (BIP90), and the
//! historical blocks that break a script rule and are let through.

/// A buried deployment: a soft fork active from a fixed height (Core's
/// `Consensus::BuriedDeployment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BuriedDeployment {
    /// BIP34: the coinbase starts with the block height.
    HeightInCoinbase,
    /// BIP65: `OP_CHECKLOCKTIMEVERIFY`.
    CheckLockTimeVerify,
    /// BIP66: strict DER signatures.
    StrictDerSignatures,
    /// BIP68, BIP112, BIP113: relative lock times and `OP_CHECKSEQUENCEVERIFY`.
    CheckSequenceVerify,
    /// BIP141, BIP143, BIP147: segregated witness.
    Segwit,
}

impl BuriedDeployment {
    /// Every buried deployment.
    pub const ALL: [BuriedDeployment; 5] = [
        BuriedDeployment::HeightInCoinbase,
        BuriedDeployment::CheckLockTimeVerify,
        BuriedDeployment::StrictDerSignatures,
        BuriedDeployment::CheckSequenceVerify,
        BuriedDeployment::Segwit,
    ];

    /// The name Core's `getdeploymentinfo` reports (`DeploymentName`).
    pub const fn name(self) -> &'static str {
        match self {
            BuriedDeployment::HeightInCoinbase => "bip34",
            BuriedDeployment::CheckLockTimeVerify => "bip65",
            BuriedDeployment::StrictDerSignatures => "bip66",
            BuriedDeployment::CheckSequenceVerify => "csv",
            BuriedDeployment::Segwit => "segwit",
        }
    }

    /// The name `-testactivationheight=NAME@HEIGHT` takes (Core's
    /// `GetBuriedDeployment`, which differs from [`name`](Self::name) for
    /// BIP65 and BIP66).
    pub const fn test_activation_name(self) -> &'static str {
        match self {
            BuriedDeployment::HeightInCoinbase => "bip34",
            BuriedDeployment::CheckLockTimeVerify => "cltv",
            BuriedDeployment::StrictDerSignatures => "dersig",
            BuriedDeployment::CheckSequenceVerify => "csv",
            BuriedDeployment::Segwit => "segwit",
        }
    }

    /// The deployment `-testactivationheight` calls `name` (case sensitive).
    pub fn from_test_activation_name(name: &str) -> Option<BuriedDeployment> {
        BuriedDeployment::ALL
            .into_iter()
            .find(|deployment| deployment.test_activation_name() == name)
    }
}

/// The script verification flags a historical rule-breaking block is checked
/// with instead of the usual P2SH, witness and taproot (Core's
/// `script_flag_exceptions`; the flags of soft forks active at its height
/// are still added).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScriptFlagException {
    /// No base flags (Core's `SCRIPT_VERIFY_NONE`): the block that broke
    /// BIP16 (P2SH) on mainnet and on testnet3.
    NoBaseFlags,
    /// P2SH and witness, but not taproot: the mainnet block that broke the
    /// taproot rules.
    P2shAndWitnessOnly,
}

impl ScriptFlagException {
    /// Whether P2SH (BIP16) scripts are checked.
    pub const fn verify_p2sh(self) -> bool {
        matches!(self, ScriptFlagException::P2shAndWitnessOnly)
    }

    /// Whether witness programs (BIP141) are checked.
    pub const fn verify_witness(self) -> bool {
        matches!(self, ScriptFlagException::P2shAndWitnessOnly)
    }

    /// Whether taproot (BIP341/342) is checked.
    pub const fn verify_taproot(self) -> bool {
        false
    }
}
