//! Verifying an input (Core's `VerifyScript`): scriptSig then scriptPubKey on
//! one stack, P2SH (BIP16), segwit v0 P2WPKH/P2WSH (BIP141/143), taproot key
//! and script paths (BIP341/342), CLEANSTACK and the unexpected-witness rule.
//!
//! Napkin math: this runs once per input, ~2.5 billion times over mainnet. A
//! P2PKH or P2WPKH spend allocates its two stack items and, for witness
//! spends, the implied script; everything else borrows the transaction bytes.

use ibex_primitives::hash::sha256;
use ibex_primitives::WitnessView;

use crate::checker::{ExecutionData, SigVersion, SignatureChecker};
use crate::error::ScriptError;
use crate::flags::VerifyFlags;
use crate::interpreter::{eval_script, Stack};
use crate::number::cast_to_bool;
use crate::opcodes::*;
use crate::script::{
    is_pay_to_script_hash, is_push_only, is_single_push_of, witness_program, Instructions,
    WitnessProgram, MAX_SCRIPT_ELEMENT_SIZE, MAX_STACK_SIZE,
};
use crate::sighash::taproot::annex_hash;
use crate::taproot::{
    tapleaf_hash, verify_taproot_commitment, ControlBlock, ANNEX_TAG, TAPROOT_LEAF_TAPSCRIPT,
    VALIDATION_WEIGHT_OFFSET,
};

/// Verifies one input: `witness` is its witness stack, bottom first (empty
/// for none). The spent amount and the rest of the transaction reach the
/// signature checks through `checker`.
pub fn verify_script<C: SignatureChecker + ?Sized>(
    script_sig: &[u8],
    script_pubkey: &[u8],
    witness: &[&[u8]],
    flags: VerifyFlags,
    checker: &C,
) -> Result<(), ScriptError> {
    if flags.contains(VerifyFlags::SIGPUSHONLY) && !is_push_only(script_sig) {
        return Err(ScriptError::SigPushonly);
    }
    let p2sh = flags.contains(VerifyFlags::P2SH) && is_pay_to_script_hash(script_pubkey);
    // Evaluated one after the other on the same stack, never concatenated
    // (CVE-2010-5141).
    let mut stack = Stack::new();
    eval_script(
        &mut stack,
        script_sig,
        flags,
        checker,
        SigVersion::Base,
        &mut ExecutionData::default(),
    )?;
    // Core copies whenever P2SH is on; only a P2SH output ever reads the copy.
    let stack_after_script_sig = if p2sh { Some(stack.clone()) } else { None };
    eval_script(
        &mut stack,
        script_pubkey,
        flags,
        checker,
        SigVersion::Base,
        &mut ExecutionData::default(),
    )?;
    require_true_top(&stack)?;

    let mut had_witness = false;
    if flags.contains(VerifyFlags::WITNESS) {
        if let Some(program) = witness_program(script_pubkey) {
            had_witness = true;
            // Exactly empty: anything else would be malleable.
            if !script_sig.is_empty() {
                return Err(ScriptError::WitnessMalleated);
            }
            verify_witness_program(witness, program, flags, checker, false)?;
            // The real stack is not clean for witness programs; skip CLEANSTACK.
            stack.truncate(1);
        }
    }

    if let Some(restored) = stack_after_script_sig {
        if !is_push_only(script_sig) {
            return Err(ScriptError::SigPushonly);
        }
        stack = restored;
        // Cannot be empty: the P2SH template would have failed on it.
        let redeem_script = stack.pop().ok_or(ScriptError::UnknownError)?;
        eval_script(
            &mut stack,
            &redeem_script,
            flags,
            checker,
            SigVersion::Base,
            &mut ExecutionData::default(),
        )?;
        require_true_top(&stack)?;
        if flags.contains(VerifyFlags::WITNESS) {
            if let Some(program) = witness_program(&redeem_script) {
                had_witness = true;
                // Exactly one push of the redeem script.
                if !is_single_push_of(script_sig, &redeem_script) {
                    return Err(ScriptError::WitnessMalleatedP2sh);
                }
                verify_witness_program(witness, program, flags, checker, true)?;
                stack.truncate(1);
            }
        }
    }

    // After P2SH and witness evaluation, which leave their own stacks. (Core
    // asserts CLEANSTACK implies P2SH and WITNESS; callers must ensure it.)
    if flags.contains(VerifyFlags::CLEANSTACK) && stack.len() != 1 {
        return Err(ScriptError::Cleanstack);
    }
    if flags.contains(VerifyFlags::WITNESS) && !had_witness && !witness.is_empty() {
        return Err(ScriptError::WitnessUnexpected);
    }
    Ok(())
}

/// [`verify_script`] with the witness as the transaction stores it.
pub fn verify_input<C: SignatureChecker + ?Sized>(
    script_sig: &[u8],
    script_pubkey: &[u8],
    witness: WitnessView<'_>,
    flags: VerifyFlags,
    checker: &C,
) -> Result<(), ScriptError> {
    if witness.is_empty() {
        return verify_script(script_sig, script_pubkey, &[], flags, checker);
    }
    let items = witness.to_vec();
    verify_script(script_sig, script_pubkey, &items, flags, checker)
}

fn require_true_top(stack: &Stack) -> Result<(), ScriptError> {
    match stack.last() {
        Some(top) if cast_to_bool(top) => Ok(()),
        _ => Err(ScriptError::EvalFalse),
    }
}

/// Core's `VerifyWitnessProgram`.
fn verify_witness_program<C: SignatureChecker + ?Sized>(
    witness: &[&[u8]],
    program: WitnessProgram<'_>,
    flags: VerifyFlags,
    checker: &C,
    is_p2sh: bool,
) -> Result<(), ScriptError> {
    let mut execution = ExecutionData::default();
    match (program.version, program.program.len()) {
        (0, 32) => {
            // P2WSH: the last item is the script, committed to by SHA256.
            let (witness_script, arguments) =
                witness.split_last().ok_or(ScriptError::WitnessProgramWitnessEmpty)?;
            if sha256(witness_script)[..] != *program.program {
                return Err(ScriptError::WitnessProgramMismatch);
            }
            let witness_script: &[u8] = witness_script;
            execute_witness_script(
                arguments,
                witness_script,
                flags,
                SigVersion::WitnessV0,
                checker,
                &mut execution,
            )
        }
        (0, 20) => {
            // P2WPKH: exactly a signature and a key, run through the implied
            // DUP HASH160 <program> EQUALVERIFY CHECKSIG.
            if witness.len() != 2 {
                return Err(ScriptError::WitnessProgramMismatch);
            }
            let mut script = Vec::with_capacity(25);
            script.extend_from_slice(&[OP_DUP, OP_HASH160, 0x14]);
            script.extend_from_slice(program.program);
            script.extend_from_slice(&[OP_EQUALVERIFY, OP_CHECKSIG]);
            execute_witness_script(
                witness,
                &script,
                flags,
                SigVersion::WitnessV0,
                checker,
                &mut execution,
            )
        }
        (0, _) => Err(ScriptError::WitnessProgramWrongLength),
        (1, 32) if !is_p2sh => {
            verify_taproot(witness, program.program, flags, checker, &mut execution)
        }
        _ => {
            if flags.contains(VerifyFlags::DISCOURAGE_UPGRADABLE_WITNESS_PROGRAM) {
                return Err(ScriptError::DiscourageUpgradableWitnessProgram);
            }
            // Unknown versions and sizes succeed for future soft forks.
            Ok(())
        }
    }
}

/// BIP341 key path and script path spending of output key `output_key`.
fn verify_taproot<C: SignatureChecker + ?Sized>(
    witness: &[&[u8]],
    output_key: &[u8],
    flags: VerifyFlags,
    checker: &C,
    execution: &mut ExecutionData,
) -> Result<(), ScriptError> {
    if !flags.contains(VerifyFlags::TAPROOT) {
        return Ok(());
    }
    if witness.is_empty() {
        return Err(ScriptError::WitnessProgramWitnessEmpty);
    }
    let mut stack = witness;
    match stack.split_last() {
        Some((last, rest)) if !rest.is_empty() && last.first() == Some(&ANNEX_TAG) => {
            execution.annex = Some(Some(annex_hash(last)));
            stack = rest;
        }
        _ => execution.annex = Some(None),
    }
    let (control, script, arguments) = match stack {
        [signature] => {
            return checker.check_schnorr_signature(
                signature,
                output_key,
                SigVersion::Taproot,
                execution,
            );
        }
        [arguments @ .., script, control] => (*control, *script, arguments),
        [] => return Err(ScriptError::WitnessProgramWitnessEmpty),
    };
    let control = ControlBlock::parse(control).ok_or(ScriptError::TaprootWrongControlSize)?;
    let leaf_hash = tapleaf_hash(control.leaf_version(), script);
    if !verify_taproot_commitment(&control, output_key, &leaf_hash) {
        return Err(ScriptError::WitnessProgramMismatch);
    }
    execution.tapleaf_hash = Some(leaf_hash);
    if control.leaf_version() == TAPROOT_LEAF_TAPSCRIPT {
        let budget = witness_serialized_size(witness) as i64 + VALIDATION_WEIGHT_OFFSET;
        execution.validation_weight_left = Some(budget);
        return execute_witness_script(
            arguments,
            script,
            flags,
            SigVersion::Tapscript,
            checker,
            execution,
        );
    }
    if flags.contains(VerifyFlags::DISCOURAGE_UPGRADABLE_TAPROOT_VERSION) {
        return Err(ScriptError::DiscourageUpgradableTaprootVersion);
    }
    // Unknown leaf versions succeed for future soft forks.
    Ok(())
}

/// The witness stack's serialized size: item count and each item with its
/// length prefix (Core's `GetSerializeSize(witness.stack)`).
fn witness_serialized_size(witness: &[&[u8]]) -> usize {
    let prefix = |length: usize| match length {
        0..=0xfc => 1,
        0xfd..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    };
    prefix(witness.len())
        + witness.iter().map(|item| prefix(item.len()) + item.len()).sum::<usize>()
}

/// Core's `ExecuteWitnessScript`: OP_SUCCESSx scan and initial stack limit
/// for tapscript, the 520-byte item limit, execution, then exactly one true
/// item left.
fn execute_witness_script<C: SignatureChecker + ?Sized>(
    arguments: &[&[u8]],
    script: &[u8],
    flags: VerifyFlags,
    sig_version: SigVersion,
    checker: &C,
    execution: &mut ExecutionData,
) -> Result<(), ScriptError> {
    if sig_version == SigVersion::Tapscript {
        // OP_SUCCESSx overrides everything, even later truncated pushes and
        // oversized stack items.
        for instruction in Instructions::new(script) {
            let instruction = instruction.map_err(|_| ScriptError::BadOpcode)?;
            if is_op_success(instruction.opcode) {
                if flags.contains(VerifyFlags::DISCOURAGE_OP_SUCCESS) {
                    return Err(ScriptError::DiscourageOpSuccess);
                }
                return Ok(());
            }
        }
        if arguments.len() > MAX_STACK_SIZE {
            return Err(ScriptError::StackSize);
        }
    }
    if arguments.iter().any(|item| item.len() > MAX_SCRIPT_ELEMENT_SIZE) {
        return Err(ScriptError::PushSize);
    }
    let mut stack: Stack = arguments.iter().map(|item| item.to_vec()).collect();
    eval_script(&mut stack, script, flags, checker, sig_version, execution)?;
    // Witness scripts must leave exactly one item.
    match stack.as_slice() {
        [top] if cast_to_bool(top) => Ok(()),
        [_] => Err(ScriptError::EvalFalse),
        _ => Err(ScriptError::Cleanstack),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn witness_sizes() {
        assert_eq!(witness_serialized_size(&[]), 1);
        assert_eq!(witness_serialized_size(&[&[1, 2, 3]]), 5);
        let big = vec![0u8; 300];
        assert_eq!(witness_serialized_size(&[&big, &[]]), 1 + 3 + 300 + 1);
    }

    #[test]
    fn annex_hash_includes_length() {
        assert_eq!(annex_hash(&[0x50]), sha256(&[0x01, 0x50]));
    }
}
