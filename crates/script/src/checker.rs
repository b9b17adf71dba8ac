//! The interface between the interpreter and the transaction it runs in.
//!
//! The interpreter (`interpreter` module) knows scripts and stacks; a
//! [`SignatureChecker`] knows the spending transaction: it computes sighashes and
//! verifies signatures, lock times and sequences. This mirrors Core's
//! `BaseSignatureChecker`, so each side can be tested alone.

use crate::error::ScriptError;

/// Which rules a script runs under (Core's `SigVersion`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SigVersion {
    /// Legacy scripts and P2SH.
    Base,
    /// Segwit v0 (BIP143 sighash).
    WitnessV0,
    /// Taproot key path (BIP341).
    Taproot,
    /// Taproot script path (BIP342).
    Tapscript,
}

/// Per-input state the taproot sighash and tapscript rules need (Core's
/// `ScriptExecutionData`). `None` means "not initialised".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExecutionData {
    /// BIP342 tapleaf hash of the executing script.
    pub tapleaf_hash: Option<[u8; 32]>,
    /// Opcode position of the last executed OP_CODESEPARATOR (0xffffffff if none).
    pub codeseparator_position: Option<u32>,
    /// Whether an annex is present, and SHA256 of it (with its compact-size prefix).
    pub annex: Option<Option<[u8; 32]>>,
    /// Remaining BIP342 validation weight budget.
    pub validation_weight_left: Option<i64>,
}

/// What the interpreter asks of the transaction it verifies.
pub trait SignatureChecker {
    /// ECDSA check for OP_CHECKSIG and friends in `Base` and `WitnessV0`.
    /// `signature` still carries its trailing sighash type byte; `script_code` is
    /// the script being executed from the last OP_CODESEPARATOR (after
    /// FindAndDelete for `Base`). Returns false on any failure.
    fn check_ecdsa_signature(
        &self,
        signature: &[u8],
        public_key: &[u8],
        script_code: &[u8],
        sig_version: SigVersion,
    ) -> bool;

    /// BIP340 check for `Taproot` and `Tapscript`; `signature` is 64 bytes or 65
    /// with a sighash type. Errors are `SchnorrSigSize`, `SchnorrSigHashtype` or
    /// `SchnorrSig`, as Core's `CheckSchnorrSignature` sets them.
    fn check_schnorr_signature(
        &self,
        signature: &[u8],
        public_key: &[u8],
        sig_version: SigVersion,
        execution: &ExecutionData,
    ) -> Result<(), ScriptError>;

    /// OP_CHECKLOCKTIMEVERIFY's comparison against the transaction (BIP65).
    fn check_lock_time(&self, lock_time: i64) -> bool;

    /// OP_CHECKSEQUENCEVERIFY's comparison against the input (BIP112).
    fn check_sequence(&self, sequence: i64) -> bool;
}

/// A checker that fails every check: for scripts evaluated without a
/// transaction (Core's `BaseSignatureChecker`).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSignatures;

impl SignatureChecker for NoSignatures {
    fn check_ecdsa_signature(&self, _: &[u8], _: &[u8], _: &[u8], _: SigVersion) -> bool {
        false
    }

    fn check_schnorr_signature(
        &self,
        _: &[u8],
        _: &[u8],
        _: SigVersion,
        _: &ExecutionData,
    ) -> Result<(), ScriptError> {
        Err(ScriptError::SchnorrSig)
    }

    fn check_lock_time(&self, _: i64) -> bool {
        false
    }

    fn check_sequence(&self, _: i64) -> bool {
        false
    }
}
