//! Checked access to the stack: every read of an item below the top goes
//! through these, so a short stack is an `InvalidStackOperation`, never a
//! panic.

use super::Stack;
use crate::error::ScriptError;

/// Fails unless the stack holds at least `count` items.
#[inline]
pub(crate) fn require(stack: &Stack, count: usize) -> Result<(), ScriptError> {
    if stack.len() < count {
        return Err(ScriptError::InvalidStackOperation);
    }
    Ok(())
}

/// Index of the item `depth` from the top (1 is the top item).
#[inline]
pub(crate) fn index_from_top(stack: &Stack, depth: usize) -> Result<usize, ScriptError> {
    stack.len().checked_sub(depth).ok_or(ScriptError::InvalidStackOperation)
}

/// The item `depth` from the top (1 is the top item).
#[inline]
pub(crate) fn peek(stack: &Stack, depth: usize) -> Result<&Vec<u8>, ScriptError> {
    let index = index_from_top(stack, depth)?;
    stack.get(index).ok_or(ScriptError::InvalidStackOperation)
}

/// Removes and returns the top item.
#[inline]
pub(crate) fn pop(stack: &mut Stack) -> Result<Vec<u8>, ScriptError> {
    stack.pop().ok_or(ScriptError::InvalidStackOperation)
}

/// Removes the top `count` items.
#[inline]
pub(crate) fn drop_top(stack: &mut Stack, count: usize) -> Result<(), ScriptError> {
    let keep = stack.len().checked_sub(count).ok_or(ScriptError::InvalidStackOperation)?;
    stack.truncate(keep);
    Ok(())
}

/// Pushes a boolean (`[1]` or empty), reusing `buffer`'s allocation.
#[inline]
pub(crate) fn push_bool(stack: &mut Stack, mut buffer: Vec<u8>, value: bool) {
    buffer.clear();
    if value {
        buffer.push(1);
    }
    stack.push(buffer);
}
