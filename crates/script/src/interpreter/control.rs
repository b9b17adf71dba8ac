//! Flow control: OP_IF/OP_NOTIF/OP_ELSE/OP_ENDIF, OP_VERIFY, upgradable NOPs,
//! and the lock time opcodes (BIP65, BIP112).

use super::stack::{peek, pop, require};
use super::Machine;
use crate::checker::{SigVersion, SignatureChecker};
use crate::error::ScriptError;
use crate::flags::VerifyFlags;
use crate::number::{cast_to_bool, ScriptNum, LOCK_TIME_MAX_NUMBER_BYTES};
use ibex_primitives::lock_time::SEQUENCE_LOCKTIME_DISABLE_FLAG;

impl<C: SignatureChecker + ?Sized> Machine<'_, C> {
    /// OP_NOP1, OP_NOP4..OP_NOP10.
    pub(super) fn upgradable_nop(&mut self) -> Result<(), ScriptError> {
        if self.flags.contains(VerifyFlags::DISCOURAGE_UPGRADABLE_NOPS) {
            return Err(ScriptError::DiscourageUpgradableNops);
        }
        Ok(())
    }

    /// OP_IF / OP_NOTIF. In an unexecuted branch only the nesting is tracked.
    pub(super) fn op_if(&mut self, negate: bool, executing: bool) -> Result<(), ScriptError> {
        let mut taken = false;
        if executing {
            let condition = self.stack.last().ok_or(ScriptError::UnbalancedConditional)?;
            self.check_minimal_if(condition)?;
            taken = cast_to_bool(condition) != negate;
            pop(self.stack)?;
        }
        self.conditions.push(taken);
        Ok(())
    }

    /// BIP342 makes minimal IF arguments (empty or exactly `[1]`) consensus in
    /// tapscript; in segwit v0 it is the MINIMALIF policy.
    fn check_minimal_if(&self, condition: &[u8]) -> Result<(), ScriptError> {
        let minimal = matches!(condition, [] | [1]);
        match self.sig_version {
            SigVersion::Tapscript if !minimal => Err(ScriptError::TapscriptMinimalif),
            SigVersion::WitnessV0 if !minimal && self.flags.contains(VerifyFlags::MINIMALIF) => {
                Err(ScriptError::Minimalif)
            }
            _ => Ok(()),
        }
    }

    /// OP_ELSE.
    pub(super) fn op_else(&mut self) -> Result<(), ScriptError> {
        if !self.conditions.toggle_top() {
            return Err(ScriptError::UnbalancedConditional);
        }
        Ok(())
    }

    /// OP_ENDIF.
    pub(super) fn op_endif(&mut self) -> Result<(), ScriptError> {
        if !self.conditions.pop() {
            return Err(ScriptError::UnbalancedConditional);
        }
        Ok(())
    }

    /// OP_VERIFY: pops a true top item, fails on a false one (leaving it).
    pub(super) fn op_verify(&mut self) -> Result<(), ScriptError> {
        if !cast_to_bool(peek(self.stack, 1)?) {
            return Err(ScriptError::Verify);
        }
        pop(self.stack).map(drop)
    }

    /// OP_CHECKLOCKTIMEVERIFY (BIP65): a NOP without the flag; the operand (up
    /// to 5 bytes, not popped) must be non-negative and satisfied by the
    /// transaction.
    pub(super) fn check_lock_time_verify(&mut self) -> Result<(), ScriptError> {
        if !self.flags.contains(VerifyFlags::CHECKLOCKTIMEVERIFY) {
            return Ok(());
        }
        let lock_time = self.lock_time_operand()?;
        if !self.checker.check_lock_time(lock_time) {
            return Err(ScriptError::UnsatisfiedLocktime);
        }
        Ok(())
    }

    /// OP_CHECKSEQUENCEVERIFY (BIP112): like OP_CHECKLOCKTIMEVERIFY against
    /// the input's sequence; a NOP when the operand's disable bit is set.
    pub(super) fn check_sequence_verify(&mut self) -> Result<(), ScriptError> {
        if !self.flags.contains(VerifyFlags::CHECKSEQUENCEVERIFY) {
            return Ok(());
        }
        let sequence = self.lock_time_operand()?;
        if sequence & i64::from(SEQUENCE_LOCKTIME_DISABLE_FLAG) != 0 {
            return Ok(());
        }
        if !self.checker.check_sequence(sequence) {
            return Err(ScriptError::UnsatisfiedLocktime);
        }
        Ok(())
    }

    /// The top item as a non-negative number of up to 5 bytes.
    fn lock_time_operand(&self) -> Result<i64, ScriptError> {
        require(self.stack, 1)?;
        let operand = peek(self.stack, 1)?;
        let value = ScriptNum::decode(operand, self.require_minimal, LOCK_TIME_MAX_NUMBER_BYTES)?.0;
        if value < 0 {
            return Err(ScriptError::NegativeLocktime);
        }
        Ok(value)
    }
}
