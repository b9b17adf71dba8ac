//! Script errors, one to one with Bitcoin Core's `ScriptError_t`.

use thiserror::Error;

/// Why a script failed. [`ScriptError::core_name`] gives the name Core's
/// `script_tests.json` uses (`SCRIPT_ERR_` prefix removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// An error with no more specific code.
    #[error("unknown error")]
    UnknownError,
    /// The script finished with a false or empty top stack element.
    #[error("script evaluated without error but finished with a false/empty top stack element")]
    EvalFalse,
    /// OP_RETURN was executed.
    #[error("OP_RETURN was encountered")]
    OpReturn,
    /// Script larger than 10,000 bytes.
    #[error("script is too big")]
    ScriptSize,
    /// Push larger than 520 bytes.
    #[error("push value size limit exceeded")]
    PushSize,
    /// More than 201 non-push operations.
    #[error("operation limit exceeded")]
    OpCount,
    /// Stack plus altstack above 1,000 items.
    #[error("stack size limit exceeded")]
    StackSize,
    /// Signature count out of range in CHECKMULTISIG.
    #[error("signature count negative or greater than pubkey count")]
    SigCount,
    /// Public key count out of range in CHECKMULTISIG.
    #[error("pubkey count negative or limit exceeded")]
    PubkeyCount,
    /// OP_VERIFY failed.
    #[error("script failed an OP_VERIFY operation")]
    Verify,
    /// OP_EQUALVERIFY failed.
    #[error("script failed an OP_EQUALVERIFY operation")]
    EqualVerify,
    /// OP_CHECKMULTISIGVERIFY failed.
    #[error("script failed an OP_CHECKMULTISIGVERIFY operation")]
    CheckMultisigVerify,
    /// OP_CHECKSIGVERIFY failed.
    #[error("script failed an OP_CHECKSIGVERIFY operation")]
    CheckSigVerify,
    /// OP_NUMEQUALVERIFY failed.
    #[error("script failed an OP_NUMEQUALVERIFY operation")]
    NumEqualVerify,
    /// An opcode that does not exist, or a truncated push.
    #[error("opcode missing or not understood")]
    BadOpcode,
    /// A disabled opcode (OP_CAT, OP_MUL, ...).
    #[error("attempted to use a disabled opcode")]
    DisabledOpcode,
    /// Too few stack items for an operation.
    #[error("operation not valid with the current stack size")]
    InvalidStackOperation,
    /// Too few altstack items for an operation.
    #[error("operation not valid with the current altstack size")]
    InvalidAltstackOperation,
    /// IF/ELSE/ENDIF do not match.
    #[error("invalid OP_IF construction")]
    UnbalancedConditional,
    /// CHECKLOCKTIMEVERIFY or CHECKSEQUENCEVERIFY with a negative argument.
    #[error("negative locktime")]
    NegativeLocktime,
    /// The lock time or sequence requirement is not met.
    #[error("locktime requirement not satisfied")]
    UnsatisfiedLocktime,
    /// Unknown or invalid sighash type.
    #[error("signature hash type missing or not understood")]
    SigHashtype,
    /// Signature not strictly DER.
    #[error("non-canonical DER signature")]
    SigDer,
    /// A push not in its minimal form.
    #[error("data push larger than necessary")]
    Minimaldata,
    /// scriptSig with non-push operations.
    #[error("only push operators allowed in signatures")]
    SigPushonly,
    /// Signature S value above half the curve order.
    #[error("non-canonical signature: S value is unnecessarily high")]
    SigHighS,
    /// CHECKMULTISIG dummy not empty.
    #[error("dummy CHECKMULTISIG argument must be zero")]
    SigNulldummy,
    /// Public key in an unknown encoding.
    #[error("public key is neither compressed or uncompressed")]
    Pubkeytype,
    /// Stack not exactly one item after execution.
    #[error("stack size must be exactly one after execution")]
    Cleanstack,
    /// OP_IF argument not minimal.
    #[error("OP_IF/NOTIF argument must be minimal")]
    Minimalif,
    /// A failed signature check with a non-empty signature.
    #[error("signature must be zero for failed CHECK(MULTI)SIG operation")]
    SigNullfail,
    /// An upgradable NOP was executed.
    #[error("NOPx reserved for soft-fork upgrades")]
    DiscourageUpgradableNops,
    /// A witness program of an unknown version.
    #[error("witness version reserved for soft-fork upgrades")]
    DiscourageUpgradableWitnessProgram,
    /// A taproot leaf of an unknown version.
    #[error("taproot version reserved for soft-fork upgrades")]
    DiscourageUpgradableTaprootVersion,
    /// An OP_SUCCESSx opcode.
    #[error("OP_SUCCESSx reserved for soft-fork upgrades")]
    DiscourageOpSuccess,
    /// A tapscript public key of an unknown type.
    #[error("public key version reserved for soft-fork upgrades")]
    DiscourageUpgradablePubkeytype,
    /// A v0 witness program of the wrong length.
    #[error("witness program has incorrect length")]
    WitnessProgramWrongLength,
    /// A witness program with an empty witness.
    #[error("witness program was passed an empty witness")]
    WitnessProgramWitnessEmpty,
    /// The witness does not match the program.
    #[error("witness program hash mismatch")]
    WitnessProgramMismatch,
    /// A native witness spend with a non-empty scriptSig.
    #[error("witness requires empty scriptSig")]
    WitnessMalleated,
    /// A P2SH witness spend whose scriptSig is not just the redeem script push.
    #[error("witness requires only-redeemscript scriptSig")]
    WitnessMalleatedP2sh,
    /// Witness data on an input that does not use it.
    #[error("witness provided for non-witness script")]
    WitnessUnexpected,
    /// An uncompressed public key in segwit v0.
    #[error("using non-compressed keys in segwit")]
    WitnessPubkeytype,
    /// Schnorr signature of the wrong size.
    #[error("invalid schnorr signature size")]
    SchnorrSigSize,
    /// Schnorr signature with an invalid hash type.
    #[error("invalid schnorr signature hash type")]
    SchnorrSigHashtype,
    /// Schnorr signature that does not verify.
    #[error("invalid schnorr signature")]
    SchnorrSig,
    /// Taproot control block of the wrong size.
    #[error("invalid taproot control block size")]
    TaprootWrongControlSize,
    /// Tapscript signature operations above the validation weight budget.
    #[error("too much signature validation relative to witness weight")]
    TapscriptValidationWeight,
    /// CHECKMULTISIG(VERIFY) in tapscript.
    #[error("OP_CHECKMULTISIG(VERIFY) is not available in tapscript")]
    TapscriptCheckmultisig,
    /// OP_IF argument not exactly empty or 0x01 in tapscript.
    #[error("OP_IF/NOTIF argument must be minimal in tapscript")]
    TapscriptMinimalif,
    /// Empty public key in tapscript.
    #[error("empty public key in tapscript")]
    TapscriptEmptyPubkey,
    /// OP_CODESEPARATOR in a non-segwit script under CONST_SCRIPTCODE.
    #[error("using OP_CODESEPARATOR in non-witness script")]
    OpCodeseparator,
    /// FindAndDelete removed a signature under CONST_SCRIPTCODE.
    #[error("signature is found in scriptCode")]
    SigFindanddelete,
}

impl ScriptError {
    /// Core's name for the error as used in `script_tests.json`.
    pub fn core_name(self) -> &'static str {
        use ScriptError::*;
        match self {
            UnknownError => "UNKNOWN_ERROR",
            EvalFalse => "EVAL_FALSE",
            OpReturn => "OP_RETURN",
            ScriptSize => "SCRIPT_SIZE",
            PushSize => "PUSH_SIZE",
            OpCount => "OP_COUNT",
            StackSize => "STACK_SIZE",
            SigCount => "SIG_COUNT",
            PubkeyCount => "PUBKEY_COUNT",
            Verify => "VERIFY",
            EqualVerify => "EQUALVERIFY",
            CheckMultisigVerify => "CHECKMULTISIGVERIFY",
            CheckSigVerify => "CHECKSIGVERIFY",
            NumEqualVerify => "NUMEQUALVERIFY",
            BadOpcode => "BAD_OPCODE",
            DisabledOpcode => "DISABLED_OPCODE",
            InvalidStackOperation => "INVALID_STACK_OPERATION",
            InvalidAltstackOperation => "INVALID_ALTSTACK_OPERATION",
            UnbalancedConditional => "UNBALANCED_CONDITIONAL",
            NegativeLocktime => "NEGATIVE_LOCKTIME",
            UnsatisfiedLocktime => "UNSATISFIED_LOCKTIME",
            SigHashtype => "SIG_HASHTYPE",
            SigDer => "SIG_DER",
            Minimaldata => "MINIMALDATA",
            SigPushonly => "SIG_PUSHONLY",
            SigHighS => "SIG_HIGH_S",
            SigNulldummy => "SIG_NULLDUMMY",
            Pubkeytype => "PUBKEYTYPE",
            Cleanstack => "CLEANSTACK",
            Minimalif => "MINIMALIF",
            SigNullfail => "NULLFAIL",
            DiscourageUpgradableNops => "DISCOURAGE_UPGRADABLE_NOPS",
            DiscourageUpgradableWitnessProgram => "DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM",
            DiscourageUpgradableTaprootVersion => "DISCOURAGE_UPGRADABLE_TAPROOT_VERSION",
            DiscourageOpSuccess => "DISCOURAGE_OP_SUCCESS",
            DiscourageUpgradablePubkeytype => "DISCOURAGE_UPGRADABLE_PUBKEYTYPE",
            WitnessProgramWrongLength => "WITNESS_PROGRAM_WRONG_LENGTH",
            WitnessProgramWitnessEmpty => "WITNESS_PROGRAM_WITNESS_EMPTY",
            WitnessProgramMismatch => "WITNESS_PROGRAM_MISMATCH",
            WitnessMalleated => "WITNESS_MALLEATED",
            WitnessMalleatedP2sh => "WITNESS_MALLEATED_P2SH",
            WitnessUnexpected => "WITNESS_UNEXPECTED",
            WitnessPubkeytype => "WITNESS_PUBKEYTYPE",
            SchnorrSigSize => "SCHNORR_SIG_SIZE",
            SchnorrSigHashtype => "SCHNORR_SIG_HASHTYPE",
            SchnorrSig => "SCHNORR_SIG",
            TaprootWrongControlSize => "TAPROOT_WRONG_CONTROL_SIZE",
            TapscriptValidationWeight => "TAPSCRIPT_VALIDATION_WEIGHT",
            TapscriptCheckmultisig => "TAPSCRIPT_CHECKMULTISIG",
            TapscriptMinimalif => "TAPSCRIPT_MINIMALIF",
            TapscriptEmptyPubkey => "TAPSCRIPT_EMPTY_PUBKEY",
            OpCodeseparator => "OP_CODESEPARATOR",
            SigFindanddelete => "SIG_FINDANDDELETE",
        }
    }
}
