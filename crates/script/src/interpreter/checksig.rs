//! Signature opcodes: OP_CHECKSIG(VERIFY), OP_CHECKSIGADD (BIP342) and
//! OP_CHECKMULTISIG(VERIFY), with Core's FindAndDelete of signatures from the
//! legacy script code, NULLDUMMY and NULLFAIL, and the BIP342 validation
//! weight budget.

use std::borrow::Cow;

use super::encoding::{check_public_key_encoding, check_signature_encoding};
use super::stack::{drop_top, peek, pop, push_bool, require};
use super::Machine;
use crate::checker::{ExecutionData, SigVersion, SignatureChecker};
use crate::error::ScriptError;
use crate::flags::VerifyFlags;
use crate::number::{ScriptNum, DEFAULT_MAX_NUMBER_BYTES};
use crate::script::{find_and_delete, push_data, MAX_OPS_PER_SCRIPT, MAX_PUBKEYS_PER_MULTISIG};

/// BIP342: each executed signature check with a non-empty signature costs 50
/// units of the budget (witness size + 50).
pub const VALIDATION_WEIGHT_PER_SIGOP_PASSED: i64 = 50;

impl<C: SignatureChecker + ?Sized> Machine<'_, C> {
    /// OP_CHECKSIG / OP_CHECKSIGVERIFY: (sig pubkey -- bool).
    pub(super) fn op_checksig(&mut self, verify: bool) -> Result<(), ScriptError> {
        require(self.stack, 2)?;
        let script_code = self.script.get(self.code_start..).unwrap_or_default();
        let success = check_signature(
            peek(self.stack, 2)?,
            peek(self.stack, 1)?,
            script_code,
            self.flags,
            self.sig_version,
            self.checker,
            self.execution,
        )?;
        drop_top(self.stack, 1)?;
        let buffer = pop(self.stack)?;
        push_bool(self.stack, buffer, success);
        if verify {
            if !success {
                return Err(ScriptError::CheckSigVerify);
            }
            pop(self.stack)?;
        }
        Ok(())
    }

    /// OP_CHECKSIGADD (tapscript only): (sig n pubkey -- n + success).
    pub(super) fn op_checksigadd(&mut self) -> Result<(), ScriptError> {
        if matches!(self.sig_version, SigVersion::Base | SigVersion::WitnessV0) {
            return Err(ScriptError::BadOpcode);
        }
        require(self.stack, 3)?;
        let number = ScriptNum::decode(
            peek(self.stack, 2)?,
            self.require_minimal,
            DEFAULT_MAX_NUMBER_BYTES,
        )?
        .0;
        let script_code = self.script.get(self.code_start..).unwrap_or_default();
        let success = check_signature(
            peek(self.stack, 3)?,
            peek(self.stack, 1)?,
            script_code,
            self.flags,
            self.sig_version,
            self.checker,
            self.execution,
        )?;
        drop_top(self.stack, 2)?;
        let mut buffer = pop(self.stack)?;
        buffer.clear();
        ScriptNum(number + i64::from(success)).encode_into(&mut buffer);
        self.stack.push(buffer);
        Ok(())
    }

    /// OP_CHECKMULTISIG / OP_CHECKMULTISIGVERIFY:
    /// (dummy sig1..sigm m key1..keyn n -- bool), keys tried in order, each
    /// signature matched against the remaining keys.
    pub(super) fn op_checkmultisig(&mut self, verify: bool) -> Result<(), ScriptError> {
        if self.sig_version == SigVersion::Tapscript {
            return Err(ScriptError::TapscriptCheckmultisig);
        }
        // Depths from the top, as in Core: 1 is the key count.
        require(self.stack, 1)?;
        let key_count = self.count_at(1)?;
        if !(0..=MAX_PUBKEYS_PER_MULTISIG as i32).contains(&key_count) {
            return Err(ScriptError::PubkeyCount);
        }
        let mut keys_left = key_count as usize;
        self.op_count += keys_left;
        if self.op_count > MAX_OPS_PER_SCRIPT {
            return Err(ScriptError::OpCount);
        }
        let mut key_depth = 2;
        let signature_count_depth = key_depth + keys_left;
        require(self.stack, signature_count_depth)?;
        let signature_count = self.count_at(signature_count_depth)?;
        if signature_count < 0 || signature_count as usize > keys_left {
            return Err(ScriptError::SigCount);
        }
        let mut signatures_left = signature_count as usize;
        let mut signature_depth = signature_count_depth + 1;
        // Every argument but the dummy, whose presence Core checks here too.
        let argument_count = signature_count_depth + signatures_left;
        require(self.stack, argument_count + 1)?;

        let script_code = self.multisig_script_code(signature_depth, signatures_left)?;
        let mut success = true;
        while success && signatures_left > 0 {
            let signature = peek(self.stack, signature_depth)?;
            let public_key = peek(self.stack, key_depth)?;
            // The order of encoding checks makes which key and signature are
            // examined observable under STRICTENC (Core's script tests).
            check_signature_encoding(signature, self.flags)?;
            check_public_key_encoding(public_key, self.flags, self.sig_version)?;
            if self.checker.check_ecdsa_signature(
                signature,
                public_key,
                &script_code,
                self.sig_version,
            ) {
                signature_depth += 1;
                signatures_left -= 1;
            }
            key_depth += 1;
            keys_left -= 1;
            // More signatures left than keys: the check has failed.
            if signatures_left > keys_left {
                success = false;
            }
        }
        self.pop_multisig_arguments(argument_count, key_count as usize, success)?;
        self.pop_dummy()?;
        push_bool(self.stack, Vec::new(), success);
        if verify {
            if !success {
                return Err(ScriptError::CheckMultisigVerify);
            }
            pop(self.stack)?;
        }
        Ok(())
    }

    /// A key or signature count operand, clamped to `i32` like Core's `getint`.
    fn count_at(&self, depth: usize) -> Result<i32, ScriptError> {
        let bytes = peek(self.stack, depth)?;
        Ok(ScriptNum::decode(bytes, self.require_minimal, DEFAULT_MAX_NUMBER_BYTES)?.clamped_i32())
    }

    /// The script code from the last OP_CODESEPARATOR with, for legacy
    /// scripts, every signature FindAndDelete'd.
    fn multisig_script_code(
        &self,
        first_signature_depth: usize,
        signature_count: usize,
    ) -> Result<Cow<'_, [u8]>, ScriptError> {
        let mut script_code = Cow::Borrowed(self.script.get(self.code_start..).unwrap_or_default());
        if self.sig_version != SigVersion::Base {
            return Ok(script_code);
        }
        for offset in 0..signature_count {
            let signature = peek(self.stack, first_signature_depth + offset)?;
            let (deleted, found) = find_and_delete(&script_code, &push_data(signature));
            if found > 0 && self.flags.contains(VerifyFlags::CONST_SCRIPTCODE) {
                return Err(ScriptError::SigFindanddelete);
            }
            if let Some(deleted) = deleted {
                script_code = Cow::Owned(deleted);
            }
        }
        Ok(script_code)
    }

    /// Pops the counts, keys and signatures. On failure under NULLFAIL every
    /// signature (the items below the keys and two counts) must be empty.
    fn pop_multisig_arguments(
        &mut self,
        argument_count: usize,
        key_count: usize,
        success: bool,
    ) -> Result<(), ScriptError> {
        let nullfail = !success && self.flags.contains(VerifyFlags::NULLFAIL);
        // Items above the signatures: key count, keys, signature count.
        let non_signatures = key_count + 2;
        for popped in 0..argument_count {
            let item = pop(self.stack)?;
            if nullfail && popped >= non_signatures && !item.is_empty() {
                return Err(ScriptError::SigNullfail);
            }
        }
        Ok(())
    }

    /// The extra item CHECKMULTISIG consumes (an off-by-one in the original
    /// client); BIP147 NULLDUMMY requires it empty.
    fn pop_dummy(&mut self) -> Result<(), ScriptError> {
        let dummy = pop(self.stack)?;
        if self.flags.contains(VerifyFlags::NULLDUMMY) && !dummy.is_empty() {
            return Err(ScriptError::SigNulldummy);
        }
        Ok(())
    }
}

/// Core's `EvalChecksig`: whether the signature verified; an error fails the
/// script.
fn check_signature<C: SignatureChecker + ?Sized>(
    signature: &[u8],
    public_key: &[u8],
    script_code: &[u8],
    flags: VerifyFlags,
    sig_version: SigVersion,
    checker: &C,
    execution: &mut ExecutionData,
) -> Result<bool, ScriptError> {
    match sig_version {
        SigVersion::Base | SigVersion::WitnessV0 => {
            check_ecdsa(signature, public_key, script_code, flags, sig_version, checker)
        }
        SigVersion::Tapscript => check_tapscript(signature, public_key, flags, checker, execution),
        // A key path spend has no script to run.
        SigVersion::Taproot => Err(ScriptError::UnknownError),
    }
}

/// Core's `EvalChecksigPreTapscript`.
fn check_ecdsa<C: SignatureChecker + ?Sized>(
    signature: &[u8],
    public_key: &[u8],
    script_code: &[u8],
    flags: VerifyFlags,
    sig_version: SigVersion,
    checker: &C,
) -> Result<bool, ScriptError> {
    let mut deleted = None;
    if sig_version == SigVersion::Base {
        // The signature cannot sign itself: drop its push from the legacy
        // script code (an empty signature's push is OP_0).
        let (new_code, found) = find_and_delete(script_code, &push_data(signature));
        if found > 0 && flags.contains(VerifyFlags::CONST_SCRIPTCODE) {
            return Err(ScriptError::SigFindanddelete);
        }
        deleted = new_code;
    }
    check_signature_encoding(signature, flags)?;
    check_public_key_encoding(public_key, flags, sig_version)?;
    let script_code = deleted.as_deref().unwrap_or(script_code);
    let success = checker.check_ecdsa_signature(signature, public_key, script_code, sig_version);
    if !success && flags.contains(VerifyFlags::NULLFAIL) && !signature.is_empty() {
        return Err(ScriptError::SigNullfail);
    }
    Ok(success)
}

/// Core's `EvalChecksigTapscript` (BIP342): an empty signature is a failed
/// check, not an error; a non-empty one spends budget first, even for an
/// unknown key type; 32-byte keys are BIP340, other non-empty keys succeed
/// unless discouraged.
fn check_tapscript<C: SignatureChecker + ?Sized>(
    signature: &[u8],
    public_key: &[u8],
    flags: VerifyFlags,
    checker: &C,
    execution: &mut ExecutionData,
) -> Result<bool, ScriptError> {
    let success = !signature.is_empty();
    if success {
        let left = execution.validation_weight_left.ok_or(ScriptError::UnknownError)?
            - VALIDATION_WEIGHT_PER_SIGOP_PASSED;
        execution.validation_weight_left = Some(left);
        if left < 0 {
            return Err(ScriptError::TapscriptValidationWeight);
        }
    }
    match public_key.len() {
        0 => Err(ScriptError::TapscriptEmptyPubkey),
        32 => {
            if success {
                checker.check_schnorr_signature(
                    signature,
                    public_key,
                    SigVersion::Tapscript,
                    execution,
                )?;
            }
            Ok(success)
        }
        _ if flags.contains(VerifyFlags::DISCOURAGE_UPGRADABLE_PUBKEYTYPE) => {
            Err(ScriptError::DiscourageUpgradablePubkeytype)
        }
        _ => Ok(success),
    }
}
