//! The script interpreter (Core's `EvalScript`), one file per opcode family:
//!
//! - [`condition`]: IF/ELSE/ENDIF state.
//! - `control`: flow control, NOPs, OP_CHECKLOCKTIMEVERIFY, OP_CHECKSEQUENCEVERIFY.
//! - `stack_ops`: stack and altstack manipulation.
//! - `arithmetic`: numeric opcodes and OP_EQUAL.
//! - `crypto`: hash opcodes.
//! - `checksig`: OP_CHECKSIG(VERIFY), OP_CHECKSIGADD, OP_CHECKMULTISIG(VERIFY).
//! - [`encoding`]: signature and public key encoding rules.
//!
//! Order of checks per instruction (which error wins matters): truncated push
//! (`BadOpcode`), push over 520 bytes, op count (legacy and v0 only),
//! disabled opcode, OP_CODESEPARATOR under CONST_SCRIPTCODE, then execution
//! (pushes and, in unexecuted branches, only IF..ENDIF, which includes
//! OP_VERIF/OP_VERNOTIF failing), then the 1,000-item stack limit.
//!
//! Napkin math: IBD runs ~2.5 billion script executions of typically 2-10
//! opcodes; ECDSA/Schnorr checks (~30-50 µs each, every one verified: no cache)
//! dominate, while an opcode costs tens of nanoseconds: one pass over the
//! bytes, pushes copied once into the stack's `Vec<u8>`s, results written into
//! the buffers of popped operands where possible so most opcodes do not
//! allocate.

pub mod condition;
pub mod encoding;

mod arithmetic;
mod checksig;
mod control;
mod crypto;
mod stack;
mod stack_ops;

use crate::checker::{ExecutionData, SigVersion, SignatureChecker};
use crate::error::ScriptError;
use crate::flags::VerifyFlags;
use crate::opcodes::*;
use crate::script::{Instructions, MAX_OPS_PER_SCRIPT, MAX_SCRIPT_ELEMENT_SIZE, MAX_STACK_SIZE};
use condition::ConditionStack;
use ibex_primitives::limits::SCRIPT_BYTES_MAX;

/// A script stack: bottom first.
pub type Stack = Vec<Vec<u8>>;

/// The running state of one [`eval_script`] call.
pub(crate) struct Machine<'a, C: SignatureChecker + ?Sized> {
    pub(crate) stack: &'a mut Stack,
    pub(crate) altstack: Stack,
    pub(crate) conditions: ConditionStack,
    pub(crate) script: &'a [u8],
    pub(crate) flags: VerifyFlags,
    pub(crate) sig_version: SigVersion,
    pub(crate) checker: &'a C,
    pub(crate) execution: &'a mut ExecutionData,
    /// MINIMALDATA: minimal pushes and number operands.
    pub(crate) require_minimal: bool,
    /// Start of the script code signed by legacy/v0 checks (after the last
    /// executed OP_CODESEPARATOR; Core's `pbegincodehash`).
    pub(crate) code_start: usize,
    /// Non-push opcodes so far plus multisig key counts (legacy and v0).
    pub(crate) op_count: usize,
}

/// Runs `script` on `stack` (Core's `EvalScript`). `sig_version` must be
/// `Base`, `WitnessV0` or `Tapscript` (a taproot key path has no script and
/// fails here with `UnknownError`). Sets `execution.codeseparator_position`.
pub fn eval_script<C: SignatureChecker + ?Sized>(
    stack: &mut Stack,
    script: &[u8],
    flags: VerifyFlags,
    checker: &C,
    sig_version: SigVersion,
    execution: &mut ExecutionData,
) -> Result<(), ScriptError> {
    let limited = matches!(sig_version, SigVersion::Base | SigVersion::WitnessV0);
    if sig_version == SigVersion::Taproot {
        return Err(ScriptError::UnknownError);
    }
    if limited && script.len() > SCRIPT_BYTES_MAX {
        return Err(ScriptError::ScriptSize);
    }
    execution.codeseparator_position = Some(u32::MAX);
    let mut machine = Machine {
        stack,
        altstack: Vec::new(),
        conditions: ConditionStack::default(),
        script,
        flags,
        sig_version,
        checker,
        execution,
        require_minimal: flags.contains(VerifyFlags::MINIMALDATA),
        code_start: 0,
        op_count: 0,
    };
    machine.run(limited)
}

impl<C: SignatureChecker + ?Sized> Machine<'_, C> {
    fn run(&mut self, limited: bool) -> Result<(), ScriptError> {
        let mut instructions = Instructions::new(self.script);
        let mut opcode_position: u32 = 0;
        while let Some(instruction) = instructions.next() {
            let instruction = instruction.map_err(|_| ScriptError::BadOpcode)?;
            let opcode = instruction.opcode;
            let executing = self.conditions.all_true();
            if instruction.data.len() > MAX_SCRIPT_ELEMENT_SIZE {
                return Err(ScriptError::PushSize);
            }
            // OP_RESERVED (0x50) and the small integers do not count.
            if limited && opcode > OP_16 {
                self.op_count += 1;
                if self.op_count > MAX_OPS_PER_SCRIPT {
                    return Err(ScriptError::OpCount);
                }
            }
            if is_disabled(opcode) {
                return Err(ScriptError::DisabledOpcode);
            }
            // Rejected even in an unexecuted branch.
            if opcode == OP_CODESEPARATOR
                && self.sig_version == SigVersion::Base
                && self.flags.contains(VerifyFlags::CONST_SCRIPTCODE)
            {
                return Err(ScriptError::OpCodeseparator);
            }
            if executing && opcode <= OP_PUSHDATA4 {
                if self.require_minimal && !is_minimal_push(instruction.data, opcode) {
                    return Err(ScriptError::Minimaldata);
                }
                self.stack.push(instruction.data.to_vec());
            } else if executing || (OP_IF..=OP_ENDIF).contains(&opcode) {
                self.execute(opcode, executing, instructions.position(), opcode_position)?;
            }
            if self.stack.len() + self.altstack.len() > MAX_STACK_SIZE {
                return Err(ScriptError::StackSize);
            }
            opcode_position = opcode_position.wrapping_add(1);
        }
        if !self.conditions.is_empty() {
            return Err(ScriptError::UnbalancedConditional);
        }
        Ok(())
    }

    /// Runs one non-push opcode. `next_position` is the byte offset after it
    /// (for OP_CODESEPARATOR); `opcode_position` its index (for BIP342).
    fn execute(
        &mut self,
        opcode: Opcode,
        executing: bool,
        next_position: usize,
        opcode_position: u32,
    ) -> Result<(), ScriptError> {
        match opcode {
            OP_1NEGATE | OP_1..=OP_16 => {
                let value = i64::from(opcode) - i64::from(OP_1 - 1);
                self.stack.push(crate::number::ScriptNum(value).encode());
                Ok(())
            }
            OP_NOP => Ok(()),
            OP_CHECKLOCKTIMEVERIFY => self.check_lock_time_verify(),
            OP_CHECKSEQUENCEVERIFY => self.check_sequence_verify(),
            OP_NOP1 | OP_NOP4..=OP_NOP10 => self.upgradable_nop(),
            OP_IF | OP_NOTIF => self.op_if(opcode == OP_NOTIF, executing),
            OP_ELSE => self.op_else(),
            OP_ENDIF => self.op_endif(),
            OP_VERIFY => self.op_verify(),
            OP_RETURN => Err(ScriptError::OpReturn),
            OP_TOALTSTACK..=OP_TUCK | OP_SIZE => self.stack_operation(opcode),
            OP_EQUAL | OP_EQUALVERIFY => self.op_equal(opcode == OP_EQUALVERIFY),
            OP_1ADD..=OP_0NOTEQUAL => self.unary_arithmetic(opcode),
            OP_ADD..=OP_MAX => self.binary_arithmetic(opcode),
            OP_WITHIN => self.op_within(),
            OP_RIPEMD160..=OP_HASH256 => self.hash_operation(opcode),
            OP_CODESEPARATOR => {
                self.code_start = next_position;
                self.execution.codeseparator_position = Some(opcode_position);
                Ok(())
            }
            OP_CHECKSIG | OP_CHECKSIGVERIFY => self.op_checksig(opcode == OP_CHECKSIGVERIFY),
            OP_CHECKSIGADD => self.op_checksigadd(),
            OP_CHECKMULTISIG | OP_CHECKMULTISIGVERIFY => {
                self.op_checkmultisig(opcode == OP_CHECKMULTISIGVERIFY)
            }
            // OP_RESERVED, OP_VER, OP_VERIF, OP_VERNOTIF, OP_RESERVED1/2, 0xbb..
            // (the disabled opcodes failed before execution).
            _ => Err(ScriptError::BadOpcode),
        }
    }
}

/// Core's `CheckMinimalPush`: the push uses the shortest form for its data
/// (OP_0, OP_1..OP_16, OP_1NEGATE, direct, PUSHDATA1, PUSHDATA2).
pub fn is_minimal_push(data: &[u8], opcode: Opcode) -> bool {
    match data {
        [] => opcode == OP_0,
        [value @ 1..=16] => opcode == OP_1 + (value - 1),
        [0x81] => opcode == OP_1NEGATE,
        _ if data.len() <= 75 => usize::from(opcode) == data.len(),
        _ if data.len() <= 255 => opcode == OP_PUSHDATA1,
        _ if data.len() <= 65_535 => opcode == OP_PUSHDATA2,
        _ => true,
    }
}

#[cfg(test)]
mod tests;
