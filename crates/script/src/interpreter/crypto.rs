//! Hash opcodes: OP_RIPEMD160, OP_SHA1, OP_SHA256, OP_HASH160 (RIPEMD-160 of
//! SHA-256), OP_HASH256 (double SHA-256). The digest replaces the operand in
//! its own buffer.

use super::stack::peek;
use super::Machine;
use crate::checker::SignatureChecker;
use crate::error::ScriptError;
use crate::opcodes::*;
use ibex_primitives::hash::{sha256, sha256d};
use ripemd::Ripemd160;
use sha1::{Digest, Sha1};

impl<C: SignatureChecker + ?Sized> Machine<'_, C> {
    /// (in -- hash).
    pub(super) fn hash_operation(&mut self, opcode: Opcode) -> Result<(), ScriptError> {
        peek(self.stack, 1)?;
        let Some(top) = self.stack.last_mut() else {
            return Err(ScriptError::InvalidStackOperation);
        };
        match opcode {
            OP_RIPEMD160 => {
                let digest: [u8; 20] = Ripemd160::digest(&top[..]).into();
                replace(top, &digest);
            }
            OP_SHA1 => {
                let digest: [u8; 20] = Sha1::digest(&top[..]).into();
                replace(top, &digest);
            }
            OP_SHA256 => {
                let digest = sha256(top);
                replace(top, &digest);
            }
            OP_HASH160 => {
                let digest = hash160(top);
                replace(top, &digest);
            }
            OP_HASH256 => {
                let digest = sha256d(top);
                replace(top, &digest);
            }
            _ => return Err(ScriptError::BadOpcode),
        }
        Ok(())
    }
}

/// RIPEMD-160 of SHA-256 (Core's `Hash160`).
pub fn hash160(data: &[u8]) -> [u8; 20] {
    Ripemd160::digest(sha256(data)).into()
}

fn replace(buffer: &mut Vec<u8>, digest: &[u8]) {
    buffer.clear();
    buffer.extend_from_slice(digest);
}
