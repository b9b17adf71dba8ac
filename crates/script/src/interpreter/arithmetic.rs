//! Numeric opcodes on 4-byte operands, OP_WITHIN, and byte-wise OP_EQUAL.
//! Results are written into a popped operand's buffer, so none allocates
//! once the operand had capacity.

use super::stack::{peek, pop, push_bool, require};
use super::Machine;
use crate::checker::SignatureChecker;
use crate::error::ScriptError;
use crate::number::{cast_to_bool, ScriptNum, DEFAULT_MAX_NUMBER_BYTES};
use crate::opcodes::*;

impl<C: SignatureChecker + ?Sized> Machine<'_, C> {
    fn number_at(&self, depth: usize) -> Result<i64, ScriptError> {
        let bytes = peek(self.stack, depth)?;
        Ok(ScriptNum::decode(bytes, self.require_minimal, DEFAULT_MAX_NUMBER_BYTES)?.0)
    }

    /// Replaces the top `consumed` items with the number `value`.
    fn replace_with_number(&mut self, consumed: usize, value: i64) -> Result<(), ScriptError> {
        let mut buffer = pop(self.stack)?;
        for _ in 1..consumed {
            pop(self.stack)?;
        }
        buffer.clear();
        ScriptNum(value).encode_into(&mut buffer);
        self.stack.push(buffer);
        Ok(())
    }

    /// OP_1ADD, OP_1SUB, OP_NEGATE, OP_ABS, OP_NOT, OP_0NOTEQUAL.
    pub(super) fn unary_arithmetic(&mut self, opcode: Opcode) -> Result<(), ScriptError> {
        require(self.stack, 1)?;
        let value = self.number_at(1)?;
        let result = match opcode {
            OP_1ADD => value + 1,
            OP_1SUB => value - 1,
            OP_NEGATE => -value,
            OP_ABS => value.abs(),
            OP_NOT => i64::from(value == 0),
            OP_0NOTEQUAL => i64::from(value != 0),
            _ => return Err(ScriptError::BadOpcode),
        };
        self.replace_with_number(1, result)
    }

    /// OP_ADD .. OP_MAX: (a b -- result); OP_NUMEQUALVERIFY then verifies.
    pub(super) fn binary_arithmetic(&mut self, opcode: Opcode) -> Result<(), ScriptError> {
        require(self.stack, 2)?;
        let a = self.number_at(2)?;
        let b = self.number_at(1)?;
        let result = match opcode {
            OP_ADD => a + b,
            OP_SUB => a - b,
            OP_BOOLAND => i64::from(a != 0 && b != 0),
            OP_BOOLOR => i64::from(a != 0 || b != 0),
            OP_NUMEQUAL | OP_NUMEQUALVERIFY => i64::from(a == b),
            OP_NUMNOTEQUAL => i64::from(a != b),
            OP_LESSTHAN => i64::from(a < b),
            OP_GREATERTHAN => i64::from(a > b),
            OP_LESSTHANOREQUAL => i64::from(a <= b),
            OP_GREATERTHANOREQUAL => i64::from(a >= b),
            OP_MIN => a.min(b),
            OP_MAX => a.max(b),
            _ => return Err(ScriptError::BadOpcode),
        };
        self.replace_with_number(2, result)?;
        if opcode == OP_NUMEQUALVERIFY {
            if !cast_to_bool(peek(self.stack, 1)?) {
                return Err(ScriptError::NumEqualVerify);
            }
            pop(self.stack)?;
        }
        Ok(())
    }

    /// OP_WITHIN: (x min max -- min <= x < max).
    pub(super) fn op_within(&mut self) -> Result<(), ScriptError> {
        require(self.stack, 3)?;
        let value = self.number_at(3)?;
        let minimum = self.number_at(2)?;
        let maximum = self.number_at(1)?;
        let buffer = pop(self.stack)?;
        pop(self.stack)?;
        pop(self.stack)?;
        push_bool(self.stack, buffer, minimum <= value && value < maximum);
        Ok(())
    }

    /// OP_EQUAL / OP_EQUALVERIFY: byte-wise comparison.
    pub(super) fn op_equal(&mut self, verify: bool) -> Result<(), ScriptError> {
        require(self.stack, 2)?;
        let second = pop(self.stack)?;
        let first = pop(self.stack)?;
        let equal = first == second;
        if verify {
            if !equal {
                // Core leaves `false` on the stack; the script fails either way.
                push_bool(self.stack, first, false);
                return Err(ScriptError::EqualVerify);
            }
            return Ok(());
        }
        push_bool(self.stack, first, equal);
        Ok(())
    }
}
