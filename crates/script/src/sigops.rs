//! Signature operation counting for the block sigop limit (Core's
//! `GetSigOpCount`, `GetP2SHSigOpCount` part, `CountWitnessSigOps`).
//!
//! These walk scripts without executing them; a truncated push ends the count.

use crate::flags::VerifyFlags;
use crate::opcodes::*;
use crate::script::{
    is_pay_to_script_hash, is_push_only, witness_program, Instructions, WitnessProgram,
    MAX_PUBKEYS_PER_MULTISIG,
};

/// Core's `CScript::GetSigOpCount(fAccurate)`: 1 per OP_CHECKSIG(VERIFY), and
/// per OP_CHECKMULTISIG(VERIFY) either 20 or, when `accurate` and the
/// previous opcode is OP_1..=OP_16, its value.
pub fn legacy_sigop_count(script: &[u8], accurate: bool) -> usize {
    let mut count = 0usize;
    let mut last_opcode = OP_INVALIDOPCODE;
    for instruction in Instructions::new(script) {
        let Ok(instruction) = instruction else { break };
        match instruction.opcode {
            OP_CHECKSIG | OP_CHECKSIGVERIFY => count += 1,
            OP_CHECKMULTISIG | OP_CHECKMULTISIGVERIFY => {
                count += match last_opcode {
                    OP_1..=OP_16 if accurate => usize::from(last_opcode - (OP_1 - 1)),
                    _ => MAX_PUBKEYS_PER_MULTISIG,
                };
            }
            _ => {}
        }
        last_opcode = instruction.opcode;
    }
    count
}

/// Core's `CScript::GetSigOpCount(scriptSig)` for a P2SH `script_pubkey`: the
/// accurate count of the redeem script (the scriptSig's last push). Zero if
/// the scriptSig is not push-only; the plain accurate count of
/// `script_pubkey` if it is not P2SH.
pub fn p2sh_sigop_count(script_pubkey: &[u8], script_sig: &[u8]) -> usize {
    if !is_pay_to_script_hash(script_pubkey) {
        return legacy_sigop_count(script_pubkey, true);
    }
    let mut redeem_script: &[u8] = &[];
    for instruction in Instructions::new(script_sig) {
        match instruction {
            Ok(instruction) if instruction.opcode <= OP_16 => redeem_script = instruction.data,
            _ => return 0,
        }
    }
    legacy_sigop_count(redeem_script, true)
}

/// Core's `CountWitnessSigOps` for one input: 1 for P2WPKH, the accurate count
/// of the witness script for P2WSH (native or nested in P2SH), 0 otherwise or
/// without the WITNESS flag. `witness_last_item` is the witness stack's top
/// item, `None` for an empty witness.
pub fn witness_sigop_count(
    script_sig: &[u8],
    script_pubkey: &[u8],
    witness_last_item: Option<&[u8]>,
    flags: VerifyFlags,
) -> usize {
    if !flags.contains(VerifyFlags::WITNESS) {
        return 0;
    }
    if let Some(program) = witness_program(script_pubkey) {
        return program_sigop_count(program, witness_last_item);
    }
    if is_pay_to_script_hash(script_pubkey) && is_push_only(script_sig) {
        // The last push of a push-only scriptSig (empty if there is none).
        let redeem_script = Instructions::new(script_sig)
            .filter_map(Result::ok)
            .last()
            .map_or(&[][..], |instruction| instruction.data);
        if let Some(program) = witness_program(redeem_script) {
            return program_sigop_count(program, witness_last_item);
        }
    }
    0
}

/// Core's `WitnessSigOps`.
fn program_sigop_count(program: WitnessProgram<'_>, witness_last_item: Option<&[u8]>) -> usize {
    match (program.version, program.program.len(), witness_last_item) {
        (0, 20, _) => 1,
        (0, 32, Some(witness_script)) => legacy_sigop_count(witness_script, true),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::push_data;

    #[test]
    fn legacy_counts() {
        let multisig = [OP_2, 0x01, 0x02, OP_3, OP_CHECKMULTISIG];
        assert_eq!(legacy_sigop_count(&multisig, true), 3);
        assert_eq!(legacy_sigop_count(&multisig, false), 20);
        assert_eq!(
            legacy_sigop_count(&[OP_CHECKSIG, OP_CHECKSIGVERIFY, OP_CHECKMULTISIG], true),
            22
        );
        // Counting stops at a truncated push.
        assert_eq!(legacy_sigop_count(&[OP_CHECKSIG, 0x05, OP_CHECKSIG], true), 1);
    }

    #[test]
    fn p2sh_counts() {
        let redeem = [OP_1, 0x01, 0x02, OP_2, OP_CHECKMULTISIG, OP_CHECKSIG];
        let mut script_sig = vec![OP_0];
        script_sig.extend(push_data(&redeem));
        let mut p2sh = vec![OP_HASH160, 0x14];
        p2sh.extend([0u8; 20]);
        p2sh.push(OP_EQUAL);
        assert_eq!(p2sh_sigop_count(&p2sh, &script_sig), 3);
        assert_eq!(p2sh_sigop_count(&p2sh, &[OP_NOP]), 0);
        assert_eq!(p2sh_sigop_count(&[OP_CHECKSIG], &script_sig), 1);
    }

    #[test]
    fn witness_counts() {
        let flags = VerifyFlags::P2SH | VerifyFlags::WITNESS;
        let mut p2wpkh = vec![OP_0, 0x14];
        p2wpkh.extend([0u8; 20]);
        assert_eq!(witness_sigop_count(&[], &p2wpkh, None, flags), 1);
        assert_eq!(witness_sigop_count(&[], &p2wpkh, None, VerifyFlags::P2SH), 0);
        let mut p2wsh = vec![OP_0, 0x20];
        p2wsh.extend([0u8; 32]);
        let witness_script = [OP_CHECKSIG, OP_CHECKSIG];
        assert_eq!(witness_sigop_count(&[], &p2wsh, Some(&witness_script), flags), 2);
        assert_eq!(witness_sigop_count(&[], &p2wsh, None, flags), 0);
        let mut p2sh = vec![OP_HASH160, 0x14];
        p2sh.extend([0u8; 20]);
        p2sh.push(OP_EQUAL);
        assert_eq!(witness_sigop_count(&push_data(&p2wpkh), &p2sh, None, flags), 1);
    }
}
