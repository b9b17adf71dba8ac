//! The reject reason of a block whose input script fails: Core v30's
//! `block-script-verify-flag-failed (<ScriptErrorString>)` (Core 30 split the
//! older `mandatory-script-verify-flag-failed` into block and mempool texts).
//!
//! [`ScriptError`]'s own messages are lower-case (the project's error style),
//! while Core's `ScriptErrorString` capitalises most of them and spells some
//! differently ("Schnorr", "Taproot", and a lower-case "unknown error"), so
//! the table below gives Core's text for each error.

use ibex_script::ScriptError;

/// Core's `ScriptErrorString` for `error`, character for character.
pub fn script_error_text(error: ScriptError) -> &'static str {
    use ScriptError::*;
    match error {
        EvalFalse => {
            "Script evaluated without error but finished with a false/empty top stack element"
        }
        Verify => "Script failed an OP_VERIFY operation",
        EqualVerify => "Script failed an OP_EQUALVERIFY operation",
        CheckMultisigVerify => "Script failed an OP_CHECKMULTISIGVERIFY operation",
        CheckSigVerify => "Script failed an OP_CHECKSIGVERIFY operation",
        NumEqualVerify => "Script failed an OP_NUMEQUALVERIFY operation",
        ScriptSize => "Script is too big",
        PushSize => "Push value size limit exceeded",
        OpCount => "Operation limit exceeded",
        StackSize => "Stack size limit exceeded",
        SigCount => "Signature count negative or greater than pubkey count",
        PubkeyCount => "Pubkey count negative or limit exceeded",
        BadOpcode => "Opcode missing or not understood",
        DisabledOpcode => "Attempted to use a disabled opcode",
        InvalidStackOperation => "Operation not valid with the current stack size",
        InvalidAltstackOperation => "Operation not valid with the current altstack size",
        OpReturn => "OP_RETURN was encountered",
        UnbalancedConditional => "Invalid OP_IF construction",
        NegativeLocktime => "Negative locktime",
        UnsatisfiedLocktime => "Locktime requirement not satisfied",
        SigHashtype => "Signature hash type missing or not understood",
        SigDer => "Non-canonical DER signature",
        Minimaldata => "Data push larger than necessary",
        SigPushonly => "Only push operators allowed in signatures",
        SigHighS => "Non-canonical signature: S value is unnecessarily high",
        SigNulldummy => "Dummy CHECKMULTISIG argument must be zero",
        Minimalif => "OP_IF/NOTIF argument must be minimal",
        SigNullfail => "Signature must be zero for failed CHECK(MULTI)SIG operation",
        DiscourageUpgradableNops => "NOPx reserved for soft-fork upgrades",
        DiscourageUpgradableWitnessProgram => "Witness version reserved for soft-fork upgrades",
        DiscourageUpgradableTaprootVersion => "Taproot version reserved for soft-fork upgrades",
        DiscourageOpSuccess => "OP_SUCCESSx reserved for soft-fork upgrades",
        DiscourageUpgradablePubkeytype => "Public key version reserved for soft-fork upgrades",
        Pubkeytype => "Public key is neither compressed or uncompressed",
        Cleanstack => "Stack size must be exactly one after execution",
        WitnessProgramWrongLength => "Witness program has incorrect length",
        WitnessProgramWitnessEmpty => "Witness program was passed an empty witness",
        WitnessProgramMismatch => "Witness program hash mismatch",
        WitnessMalleated => "Witness requires empty scriptSig",
        WitnessMalleatedP2sh => "Witness requires only-redeemscript scriptSig",
        WitnessUnexpected => "Witness provided for non-witness script",
        WitnessPubkeytype => "Using non-compressed keys in segwit",
        SchnorrSigSize => "Invalid Schnorr signature size",
        SchnorrSigHashtype => "Invalid Schnorr signature hash type",
        SchnorrSig => "Invalid Schnorr signature",
        TaprootWrongControlSize => "Invalid Taproot control block size",
        TapscriptValidationWeight => "Too much signature validation relative to witness weight",
        TapscriptCheckmultisig => "OP_CHECKMULTISIG(VERIFY) is not available in tapscript",
        TapscriptMinimalif => "OP_IF/NOTIF argument must be minimal in tapscript",
        TapscriptEmptyPubkey => "Empty public key in tapscript",
        OpCodeseparator => "Using OP_CODESEPARATOR in non-witness script",
        SigFindanddelete => "Signature is found in scriptCode",
        // Core's fallback, lower case as Core writes it (UNKNOWN_ERROR and any
        // code it has no text for).
        _ => "unknown error",
    }
}

/// The reject reason Core gives a block with an input whose script fails
/// with `error` (ConnectBlock's `block-script-verify-flag-failed (%s)`).
pub fn script_failure_reason(error: ScriptError) -> String {
    format!("block-script-verify-flag-failed ({})", script_error_text(error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_cores() {
        assert_eq!(
            script_failure_reason(ScriptError::EvalFalse),
            "block-script-verify-flag-failed (Script evaluated without error but finished \
             with a false/empty top stack element)"
        );
        assert_eq!(script_error_text(ScriptError::SchnorrSig), "Invalid Schnorr signature");
        assert_eq!(
            script_error_text(ScriptError::TaprootWrongControlSize),
            "Invalid Taproot control block size"
        );
        assert_eq!(script_error_text(ScriptError::UnknownError), "unknown error");
        assert_eq!(script_error_text(ScriptError::OpReturn), "OP_RETURN was encountered");
    }

    /// Apart from the spellings listed, Core's text is our message with its
    /// first letter capitalised: a check that the table has no typo.
    #[test]
    fn table_agrees_with_messages() {
        let all = [
            ScriptError::EvalFalse,
            ScriptError::Verify,
            ScriptError::ScriptSize,
            ScriptError::SigDer,
            ScriptError::SigNullfail,
            ScriptError::WitnessPubkeytype,
            ScriptError::TapscriptEmptyPubkey,
            ScriptError::OpCodeseparator,
            ScriptError::SigFindanddelete,
            ScriptError::Minimalif,
            ScriptError::DiscourageOpSuccess,
        ];
        for error in all {
            let message = error.to_string();
            let mut characters = message.chars();
            let capitalised: String = characters
                .next()
                .map(|first| first.to_uppercase().chain(characters).collect())
                .unwrap_or_default();
            assert_eq!(script_error_text(error), capitalised, "{error:?}");
        }
    }
}
