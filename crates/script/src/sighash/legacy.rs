//! The original signature hash (Core's `SignatureHash` for `SigVersion::Base`).
//!
//! Each signature hashes a modified copy of the whole transaction: the signed
//! input carries the script code (OP_CODESEPARATORs removed), the others an
//! empty script; NONE drops the outputs, SINGLE keeps those up to the input's
//! index (earlier ones blanked), ANYONECANPAY keeps only the signed input.
//!
//! Napkin math: the preimage is the transaction's size, so a transaction of
//! `n` inputs signed with ALL hashes `n` times its own size: quadratic. A 1,000
//! input transaction (~150 kB) hashes ~150 MB, ~90 ms at 1.7 GB/s; this is
//! why BIP143 exists. Nothing is buffered: the preimage streams into SHA-256.
//!
//! Core's quirks kept here: SIGHASH_SINGLE with no output at the input's index
//! signs the constant [`SIGHASH_ONE`]; the hash type is serialised as a
//! four-byte signed integer; the script code is cut at the first undecodable
//! opcode (see [`write_script_code`]).

use ibex_primitives::TransactionView;
use sha2::{Digest, Sha256};

use super::{
    sha256_of_hash, HashSink, BASE_TYPE_MASK, SIGHASH_ANYONECANPAY, SIGHASH_NONE, SIGHASH_ONE,
    SIGHASH_SINGLE,
};

const OP_PUSHDATA1: u8 = 0x4c;
const OP_PUSHDATA2: u8 = 0x4d;
const OP_PUSHDATA4: u8 = 0x4e;
const OP_CODESEPARATOR: u8 = 0xab;

/// The legacy signature hash of input `input_index` with `script_code` (already
/// through FindAndDelete, which the interpreter does) and `hash_type` (the
/// signature's last byte, or any 32-bit value in Core's test vectors).
pub fn legacy_sighash(
    transaction: &TransactionView<'_>,
    input_index: usize,
    script_code: &[u8],
    hash_type: i32,
) -> [u8; 32] {
    if input_index >= transaction.inputs().len() {
        // Core asserts nowadays; older versions returned ONE, which is kept as
        // the answer for a caller error that must not panic.
        return SIGHASH_ONE;
    }
    if hash_type & BASE_TYPE_MASK == i32::from(SIGHASH_SINGLE)
        && input_index >= transaction.outputs().len()
    {
        // The SIGHASH_SINGLE bug: no output to sign, so the "hash" is 1.
        return SIGHASH_ONE;
    }
    let mut hasher = Sha256::new();
    write_legacy_preimage(&mut hasher, transaction, input_index, script_code, hash_type);
    sha256_of_hash(&hasher.finalize().into())
}

/// Writes the legacy preimage (Core's `CTransactionSignatureSerializer` followed
/// by the hash type). The caller has checked `input_index` and the SINGLE case.
pub fn write_legacy_preimage(
    sink: &mut impl HashSink,
    transaction: &TransactionView<'_>,
    input_index: usize,
    script_code: &[u8],
    hash_type: i32,
) {
    let anyone_can_pay = hash_type & i32::from(SIGHASH_ANYONECANPAY) != 0;
    let base_type = hash_type & BASE_TYPE_MASK;
    let single = base_type == i32::from(SIGHASH_SINGLE);
    let none = base_type == i32::from(SIGHASH_NONE);
    let inputs = transaction.inputs();
    let outputs = transaction.outputs();

    sink.write(&transaction.version().to_le_bytes());
    if anyone_can_pay {
        sink.write_compact_size(1);
    } else {
        sink.write_compact_size(inputs.len() as u64);
    }
    for (index, input) in inputs.iter().enumerate() {
        let signed = index == input_index;
        if anyone_can_pay && !signed {
            continue;
        }
        sink.write(input.previous_output_bytes());
        if signed {
            write_script_code(sink, script_code);
        } else {
            sink.write_compact_size(0);
        }
        let sequence = if !signed && (single || none) { 0 } else { input.sequence };
        sink.write(&sequence.to_le_bytes());
    }

    if none {
        sink.write_compact_size(0);
    } else if single {
        // Outputs before the signed index become Core's null CTxOut: value -1
        // and an empty script.
        sink.write_compact_size(input_index as u64 + 1);
        for (index, output) in outputs.iter().enumerate().take(input_index + 1) {
            if index == input_index {
                sink.write(&output.value.to_le_bytes());
                sink.write_var_bytes(output.script_pubkey);
            } else {
                sink.write(&(-1i64).to_le_bytes());
                sink.write_compact_size(0);
            }
        }
    } else {
        sink.write_compact_size(outputs.len() as u64);
        sink.write(transaction.outputs_bytes());
    }
    sink.write(&transaction.lock_time().to_le_bytes());
    sink.write(&hash_type.to_le_bytes());
}

/// Where the opcode at `position` ends, following Core's `GetScriptOp`: `Ok`
/// with the end and the opcode, or `Err` with how far Core's cursor got before
/// the push was found truncated.
fn next_opcode(script: &[u8], position: usize) -> Result<(usize, u8), usize> {
    let Some(&opcode) = script.get(position) else {
        return Err(position);
    };
    let after_opcode = position + 1;
    if opcode > OP_PUSHDATA4 {
        return Ok((after_opcode, opcode));
    }
    let (length_bytes, data_length) = match opcode {
        OP_PUSHDATA1 => (1, script.get(after_opcode).map(|&byte| byte as usize)),
        OP_PUSHDATA2 => (
            2,
            script
                .get(after_opcode..after_opcode + 2)
                .map(|bytes| u16::from_le_bytes([bytes[0], bytes[1]]) as usize),
        ),
        OP_PUSHDATA4 => (
            4,
            script
                .get(after_opcode..after_opcode + 4)
                .map(|bytes| u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize),
        ),
        direct => (0, Some(direct as usize)),
    };
    // A missing length field leaves Core's cursor just past the opcode.
    let data_length = data_length.ok_or(after_opcode)?;
    let data_start = after_opcode + length_bytes;
    let remaining = script.len() - data_start;
    if remaining < data_length {
        return Err(data_start);
    }
    Ok((data_start + data_length, opcode))
}

/// Writes the script code as Core's `SerializeScriptCode` does: the length
/// counts the bytes minus the OP_CODESEPARATORs found while decoding, and the
/// bytes are the segments between them. Core's decoding stops at a truncated
/// push; the bytes then written end where its cursor stopped, so the written
/// length can differ from the declared one. Hashes must match, so does this.
pub fn write_script_code(sink: &mut impl HashSink, script_code: &[u8]) {
    let mut separators = 0u64;
    let mut position = 0;
    let stop = loop {
        match next_opcode(script_code, position) {
            Ok((end, opcode)) => {
                separators += u64::from(opcode == OP_CODESEPARATOR);
                position = end;
            }
            Err(stop) => break stop,
        }
    };
    sink.write_compact_size(script_code.len() as u64 - separators);
    if separators == 0 {
        sink.write(script_code.get(..stop).unwrap_or_default());
        return;
    }
    let mut segment_start = 0;
    let mut position = 0;
    while let Ok((end, opcode)) = next_opcode(script_code, position) {
        if opcode == OP_CODESEPARATOR {
            sink.write(script_code.get(segment_start..end - 1).unwrap_or_default());
            segment_start = end;
        }
        position = end;
    }
    if segment_start != script_code.len() {
        sink.write(script_code.get(segment_start..stop).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script_code_bytes(script: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        write_script_code(&mut out, script);
        out
    }

    #[test]
    fn script_code_without_separators_is_copied() {
        assert_eq!(script_code_bytes(&[0x76, 0xa9]), vec![2, 0x76, 0xa9]);
        assert_eq!(script_code_bytes(&[]), vec![0]);
    }

    #[test]
    fn separators_are_removed() {
        // OP_1 OP_CODESEPARATOR OP_2 OP_CODESEPARATOR
        assert_eq!(script_code_bytes(&[0x51, 0xab, 0x52, 0xab]), vec![2, 0x51, 0x52]);
        // A 0xab inside a push is data, not a separator.
        assert_eq!(script_code_bytes(&[0x01, 0xab, 0xab]), vec![2, 0x01, 0xab]);
    }

    #[test]
    fn truncated_push_cuts_the_written_bytes() {
        // OP_CODESEPARATOR, then PUSHDATA1 of 5 with one byte: Core declares 3
        // bytes and writes the two up to its cursor (opcode and length byte).
        assert_eq!(script_code_bytes(&[0xab, 0x4c, 0x05, 0x01]), vec![3, 0x4c, 0x05]);
        // Without a separator the whole script is written (cursor at the end is
        // not reached, but Core writes itBegin..it, which is the cut too).
        assert_eq!(script_code_bytes(&[0x4c, 0x05, 0x01]), vec![3, 0x4c, 0x05]);
        // PUSHDATA2 missing its length bytes: cursor right after the opcode.
        assert_eq!(script_code_bytes(&[0x51, 0x4d, 0x01]), vec![3, 0x51, 0x4d]);
    }
}
