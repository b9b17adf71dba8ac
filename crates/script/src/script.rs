//! Reading scripts: the instruction iterator (Core's `GetScriptOp`), push-only
//! and template detection (P2SH, witness programs), push encoding and Core's
//! `FindAndDelete`.
//!
//! Every reader borrows the script bytes; pushes are returned as sub-slices,
//! so walking a script allocates nothing.

use crate::opcodes::*;

// The script size limit (Core's `MAX_SCRIPT_SIZE`) is
// `ibex_primitives::limits::SCRIPT_BYTES_MAX`, shared with the UTXO set's
// unspendability rule.
/// Largest stack element (bytes).
pub const MAX_SCRIPT_ELEMENT_SIZE: usize = 520;
/// Most non-push opcodes in a legacy or segwit v0 script.
pub const MAX_OPS_PER_SCRIPT: usize = 201;
/// Most items on the stack and altstack together.
pub const MAX_STACK_SIZE: usize = 1_000;
/// Most public keys in one OP_CHECKMULTISIG.
pub const MAX_PUBKEYS_PER_MULTISIG: usize = 20;

/// One decoded instruction: an opcode and, for pushes, the pushed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instruction<'a> {
    /// The opcode byte.
    pub opcode: Opcode,
    /// The pushed bytes for OP_0..=OP_PUSHDATA4, empty otherwise.
    pub data: &'a [u8],
}

/// A truncated push: the script ends inside a push's length or data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncatedPush;

/// Walks a script instruction by instruction, tracking the byte position.
#[derive(Debug, Clone)]
pub struct Instructions<'a> {
    script: &'a [u8],
    position: usize,
}

impl<'a> Instructions<'a> {
    /// Starts at the first byte of `script`.
    #[inline]
    pub fn new(script: &'a [u8]) -> Self {
        Instructions { script, position: 0 }
    }

    /// Byte offset of the next instruction (Core's `pc`).
    #[inline]
    pub fn position(&self) -> usize {
        self.position
    }

    /// Whether every byte was consumed.
    #[inline]
    pub fn is_finished(&self) -> bool {
        self.position >= self.script.len()
    }

    /// Reads `count` bytes, advancing past them, or fails with the position
    /// left at the end of the script (as Core's iterator is left mid-push).
    #[inline]
    fn take(&mut self, count: usize) -> Result<&'a [u8], TruncatedPush> {
        let rest = self.script.get(self.position..).unwrap_or_default();
        match rest.get(..count) {
            Some(bytes) => {
                self.position += count;
                Ok(bytes)
            }
            None => Err(TruncatedPush),
        }
    }

    #[inline]
    fn read_push_length(&mut self, opcode: Opcode) -> Result<usize, TruncatedPush> {
        Ok(match opcode {
            OP_PUSHDATA1 => usize::from(self.take(1)?[0]),
            OP_PUSHDATA2 => {
                let bytes = self.take(2)?;
                usize::from(u16::from_le_bytes([bytes[0], bytes[1]]))
            }
            OP_PUSHDATA4 => {
                let bytes = self.take(4)?;
                u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize
            }
            direct => usize::from(direct),
        })
    }
}

impl<'a> Iterator for Instructions<'a> {
    type Item = Result<Instruction<'a>, TruncatedPush>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let opcode = *self.script.get(self.position)?;
        self.position += 1;
        if opcode > OP_PUSHDATA4 {
            return Some(Ok(Instruction { opcode, data: &[] }));
        }
        let result = self
            .read_push_length(opcode)
            .and_then(|length| self.take(length))
            .map(|data| Instruction { opcode, data });
        if result.is_err() {
            // Core leaves its iterator inside the broken push; every caller stops
            // at the error, so ending the walk here is equivalent.
            self.position = self.script.len();
        }
        Some(result)
    }
}

/// Whether `script` holds only pushes (Core's `IsPushOnly`: OP_0..=OP_16,
/// which includes OP_RESERVED) and no truncated push.
pub fn is_push_only(script: &[u8]) -> bool {
    Instructions::new(script).all(|instruction| match instruction {
        Ok(instruction) => instruction.opcode <= OP_16,
        Err(TruncatedPush) => false,
    })
}

/// Whether `script` is the P2SH template `OP_HASH160 <20 bytes> OP_EQUAL`.
#[inline]
pub fn is_pay_to_script_hash(script: &[u8]) -> bool {
    script.len() == 23 && script[0] == OP_HASH160 && script[1] == 0x14 && script[22] == OP_EQUAL
}

/// Whether `script` is a P2WSH output (`OP_0 <32 bytes>`).
#[inline]
pub fn is_pay_to_witness_script_hash(script: &[u8]) -> bool {
    script.len() == 34 && script[0] == OP_0 && script[1] == 0x20
}

/// A witness program: version 0..=16 and the 2..=40 program bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WitnessProgram<'a> {
    /// The witness version.
    pub version: u8,
    /// The program.
    pub program: &'a [u8],
}

/// The witness program of `script` if it is one (Core's `IsWitnessProgram`):
/// 4..=42 bytes, a version opcode OP_0 or OP_1..=OP_16, then one direct push
/// covering the rest.
#[inline]
pub fn witness_program(script: &[u8]) -> Option<WitnessProgram<'_>> {
    if !(4..=42).contains(&script.len()) {
        return None;
    }
    let version = match script[0] {
        OP_0 => 0,
        opcode @ OP_1..=OP_16 => opcode - (OP_1 - 1),
        _ => return None,
    };
    if usize::from(script[1]) + 2 != script.len() {
        return None;
    }
    Some(WitnessProgram { version, program: &script[2..] })
}

/// The length prefix Core's `CScript << std::vector` writes before `length`
/// bytes: the shortest of direct, PUSHDATA1/2/4, never the OP_n forms (so an
/// empty push is 0x00). Returns the prefix buffer and how many bytes it uses.
#[inline]
fn push_prefix(length: usize) -> ([u8; 5], usize) {
    let mut prefix = [0u8; 5];
    if length < usize::from(OP_PUSHDATA1) {
        prefix[0] = length as u8;
        (prefix, 1)
    } else if let Ok(short) = u8::try_from(length) {
        prefix[0] = OP_PUSHDATA1;
        prefix[1] = short;
        (prefix, 2)
    } else if let Ok(medium) = u16::try_from(length) {
        prefix[0] = OP_PUSHDATA2;
        prefix[1..3].copy_from_slice(&medium.to_le_bytes());
        (prefix, 3)
    } else {
        prefix[0] = OP_PUSHDATA4;
        prefix[1..5].copy_from_slice(&(length as u32).to_le_bytes());
        (prefix, 5)
    }
}

/// Appends the push of `data` as Core's `CScript << std::vector` writes it.
pub fn push_data_into(data: &[u8], out: &mut Vec<u8>) {
    let (prefix, used) = push_prefix(data.len());
    out.extend_from_slice(&prefix[..used]);
    out.extend_from_slice(data);
}

/// The push of `data` as a new script.
pub fn push_data(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 5);
    push_data_into(data, &mut out);
    out
}

/// Whether `script` is exactly one push of `data` in Core's `<<` encoding
/// (the P2SH-witness scriptSig rule), without building it.
pub fn is_single_push_of(script: &[u8], data: &[u8]) -> bool {
    let (prefix, used) = push_prefix(data.len());
    script.len() == used + data.len()
        && script.starts_with(&prefix[..used])
        && script.ends_with(data)
}

/// Core's `FindAndDelete`: removes every occurrence of `pattern` that starts
/// at an instruction boundary (occurrences directly following each other are
/// all removed), leaving bytes after a truncated push untouched. Returns the
/// new script, or `None` when nothing matched (the script is unchanged), and
/// the number of removals.
pub fn find_and_delete(script: &[u8], pattern: &[u8]) -> (Option<Vec<u8>>, usize) {
    if pattern.is_empty() {
        return (None, 0);
    }
    let mut found = 0usize;
    let mut result: Vec<u8> = Vec::new();
    // `kept_from` is where the bytes not yet copied start (Core's pc2).
    let mut kept_from = 0usize;
    let mut instructions = Instructions::new(script);
    loop {
        let mut cursor = instructions.position();
        if cursor > kept_from {
            result.extend_from_slice(&script[kept_from..cursor]);
        }
        while script.get(cursor..).is_some_and(|rest| rest.starts_with(pattern)) {
            cursor += pattern.len();
            found += 1;
        }
        kept_from = cursor;
        instructions = Instructions { script, position: cursor };
        match instructions.next() {
            Some(Ok(_)) => {}
            Some(Err(TruncatedPush)) | None => break,
        }
    }
    if found == 0 {
        return (None, 0);
    }
    result.extend_from_slice(script.get(kept_from..).unwrap_or_default());
    (Some(result), found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(script: &[u8]) -> Vec<Result<(u8, Vec<u8>), TruncatedPush>> {
        Instructions::new(script)
            .map(|instruction| instruction.map(|i| (i.opcode, i.data.to_vec())))
            .collect()
    }

    #[test]
    fn iterates_pushes_and_opcodes() {
        assert_eq!(
            ops(&[0x00, 0x02, 0xaa, 0xbb, 0x4c, 0x01, 0xcc, 0x76]),
            vec![
                Ok((0, vec![])),
                Ok((2, vec![0xaa, 0xbb])),
                Ok((0x4c, vec![0xcc])),
                Ok((0x76, vec![]))
            ]
        );
        assert_eq!(ops(&[0x4d, 0x01, 0x00, 0x07]), vec![Ok((0x4d, vec![7]))]);
        assert_eq!(ops(&[0x4e, 0x01, 0x00, 0x00, 0x00, 0x07]), vec![Ok((0x4e, vec![7]))]);
    }

    #[test]
    fn truncated_pushes_are_errors() {
        for script in [
            &[0x01][..],
            &[0x02, 0x00],
            &[0x4c],
            &[0x4c, 0x02, 0x00],
            &[0x4d, 0x01],
            &[0x4e, 0xff, 0xff, 0xff, 0xff, 0x00],
        ] {
            let walked = ops(script);
            assert_eq!(walked.last(), Some(&Err(TruncatedPush)), "{script:?}");
            assert!(!is_push_only(script));
        }
    }

    #[test]
    fn templates() {
        let mut p2sh = vec![OP_HASH160, 0x14];
        p2sh.extend([0u8; 20]);
        p2sh.push(OP_EQUAL);
        assert!(is_pay_to_script_hash(&p2sh));
        let mut p2tr = vec![OP_1, 0x20];
        p2tr.extend([7u8; 32]);
        assert_eq!(
            witness_program(&p2tr),
            Some(WitnessProgram { version: 1, program: &[7u8; 32] })
        );
        assert_eq!(witness_program(&[OP_0, 0x01, 0x00]), None);
        assert_eq!(witness_program(&[OP_16, 0x02, 0x00, 0x00]).map(|w| w.version), Some(16));
        assert_eq!(witness_program(&[OP_1NEGATE, 0x02, 0x00, 0x00]), None);
        assert!(is_push_only(&[OP_RESERVED, OP_16, 0x01, 0x00]));
        assert!(!is_push_only(&[OP_NOP]));
    }

    #[test]
    fn push_encoding() {
        assert_eq!(push_data(&[]), vec![0x00]);
        assert_eq!(push_data(&[5]), vec![0x01, 5]);
        assert_eq!(push_data(&[0; 75])[0], 75);
        assert_eq!(push_data(&[0; 76])[..2], [OP_PUSHDATA1, 76]);
        assert_eq!(push_data(&[0; 256])[..3], [OP_PUSHDATA2, 0, 1]);
        assert!(is_single_push_of(&push_data(&[1, 2, 3]), &[1, 2, 3]));
        assert!(!is_single_push_of(&[0x4c, 0x03, 1, 2, 3], &[1, 2, 3]));
    }

    #[test]
    fn find_and_delete_matches_core() {
        // Examples from Core's script_FindAndDelete unit test.
        let check = |script: &[u8], pattern: &[u8], expected: &[u8], count: usize| {
            let (new, found) = find_and_delete(script, pattern);
            assert_eq!(found, count, "{script:?}");
            assert_eq!(new.as_deref().unwrap_or(script), expected, "{script:?}");
        };
        check(&[0x51, 0x52], &[0x52], &[0x51], 1);
        check(&[0x52, 0x52], &[0x52], &[], 2);
        check(&[0x52, 0x51, 0x52], &[0x52], &[0x51], 2);
        check(&[0x02, 0x03, 0x02, 0x52], &[0x02, 0x03, 0x02], &[0x52], 1);
        check(
            &[0x03, 0x02, 0x03, 0x02, 0x52],
            &[0x02, 0x03, 0x02],
            &[0x03, 0x02, 0x03, 0x02, 0x52],
            0,
        );
        check(&[0x00, 0x01, 0x00, 0x00], &[0x00], &[0x01, 0x00], 2);
        check(&[0x00, 0x01, 0x00, 0x00, 0x01], &[0x00, 0x01], &[0x00], 2);
        // Bytes after a truncated push are kept.
        check(&[0x51, 0x02, 0x51], &[0x51], &[0x02, 0x51], 1);
        check(&[0x01, 0x53, 0x02, 0x53], &[0x53], &[0x01, 0x53, 0x02, 0x53], 0);
        check(&[0x52], &[], &[0x52], 0);
    }
}
