//! Stack manipulation: altstack moves, drops, duplications, rotations,
//! OP_PICK/OP_ROLL, OP_DEPTH, OP_SIZE.

use super::stack::{drop_top, index_from_top, peek, pop, require};
use super::Machine;
use crate::checker::SignatureChecker;
use crate::error::ScriptError;
use crate::number::{cast_to_bool, ScriptNum, DEFAULT_MAX_NUMBER_BYTES};
use crate::opcodes::*;

impl<C: SignatureChecker + ?Sized> Machine<'_, C> {
    /// Every stack opcode from OP_TOALTSTACK to OP_TUCK, and OP_SIZE.
    pub(super) fn stack_operation(&mut self, opcode: Opcode) -> Result<(), ScriptError> {
        let stack = &mut *self.stack;
        match opcode {
            OP_TOALTSTACK => {
                let item = pop(stack)?;
                self.altstack.push(item);
            }
            OP_FROMALTSTACK => {
                let item = self.altstack.pop().ok_or(ScriptError::InvalidAltstackOperation)?;
                stack.push(item);
            }
            OP_2DROP => drop_top(stack, 2)?,
            OP_2DUP => duplicate(stack, 2, 2)?,
            OP_3DUP => duplicate(stack, 3, 3)?,
            OP_2OVER => duplicate(stack, 4, 2)?,
            OP_2ROT => {
                // (x1 x2 x3 x4 x5 x6 -- x3 x4 x5 x6 x1 x2)
                let start = index_from_top(stack, 6)?;
                stack[start..].rotate_left(2);
            }
            OP_2SWAP => {
                // (x1 x2 x3 x4 -- x3 x4 x1 x2)
                let start = index_from_top(stack, 4)?;
                stack[start..].rotate_left(2);
            }
            OP_IFDUP => {
                let top = peek(stack, 1)?;
                if cast_to_bool(top) {
                    let copy = top.clone();
                    stack.push(copy);
                }
            }
            OP_DEPTH => {
                let depth = ScriptNum(stack.len() as i64).encode();
                stack.push(depth);
            }
            OP_DROP => drop_top(stack, 1)?,
            OP_DUP => duplicate(stack, 1, 1)?,
            OP_NIP => {
                let index = index_from_top(stack, 2)?;
                stack.remove(index);
            }
            OP_OVER => duplicate(stack, 2, 1)?,
            OP_PICK | OP_ROLL => pick_or_roll(stack, opcode == OP_ROLL, self.require_minimal)?,
            OP_ROT => {
                // (x1 x2 x3 -- x2 x3 x1)
                let start = index_from_top(stack, 3)?;
                stack[start..].rotate_left(1);
            }
            OP_SWAP => {
                let start = index_from_top(stack, 2)?;
                stack.swap(start, start + 1);
            }
            OP_TUCK => {
                // (x1 x2 -- x2 x1 x2)
                let index = index_from_top(stack, 2)?;
                let copy = peek(stack, 1)?.clone();
                stack.insert(index, copy);
            }
            OP_SIZE => {
                let size = ScriptNum(peek(stack, 1)?.len() as i64).encode();
                stack.push(size);
            }
            _ => return Err(ScriptError::BadOpcode),
        }
        Ok(())
    }
}

/// Copies `count` items starting `depth` from the top onto the top
/// (OP_DUP is (1, 1), OP_2DUP (2, 2), OP_3DUP (3, 3), OP_OVER (2, 1),
/// OP_2OVER (4, 2)).
fn duplicate(stack: &mut super::Stack, depth: usize, count: usize) -> Result<(), ScriptError> {
    require(stack, depth)?;
    let start = index_from_top(stack, depth)?;
    for offset in 0..count {
        let copy = stack.get(start + offset).ok_or(ScriptError::InvalidStackOperation)?.clone();
        stack.push(copy);
    }
    Ok(())
}

/// OP_PICK / OP_ROLL: (xn ... x0 n -- xn ... x0 xn), ROLL removing xn. The
/// operand is popped before its range is checked (Core's order).
fn pick_or_roll(
    stack: &mut super::Stack,
    roll: bool,
    require_minimal: bool,
) -> Result<(), ScriptError> {
    require(stack, 2)?;
    let depth = ScriptNum::decode(peek(stack, 1)?, require_minimal, DEFAULT_MAX_NUMBER_BYTES)?
        .clamped_i32();
    pop(stack)?;
    let depth = usize::try_from(depth).map_err(|_| ScriptError::InvalidStackOperation)?;
    if depth >= stack.len() {
        return Err(ScriptError::InvalidStackOperation);
    }
    let index = index_from_top(stack, depth + 1)?;
    let item = if roll {
        stack.remove(index)
    } else {
        stack.get(index).ok_or(ScriptError::InvalidStackOperation)?.clone()
    };
    stack.push(item);
    Ok(())
}
