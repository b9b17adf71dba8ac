//! Core's `ScriptToAsmStr` (`core_write.cpp`): a script as words separated
//! by single spaces.
//!
//! - A push of at most 4 bytes is its script number in decimal (`0` for
//!   OP_0 and for an empty push, `-1` for `0x81`; the non-minimal `0x80`
//!   reads as `0`).
//! - A longer push is its hex; in a scriptSig (`attempt_sighash_decode`)
//!   that is not unspendable, a push that passes Core's strict signature
//!   encoding check (BIP66 DER plus a defined hash type) loses its last byte
//!   and gains `[ALL]`, `[NONE|ANYONECANPAY]`, ...
//! - Other opcodes by `GetOpName`: `OP_DUP`, but `-1` for OP_1NEGATE, `1`..
//!   `16` for OP_1..OP_16, `OP_UNKNOWN` for unnamed bytes (0xbb..=0xfe).
//! - A truncated push ends the text with `[error]`.
//!
//! Witness items are not scripts: Core prints them as plain hex.

use ibex_primitives::limits::SCRIPT_BYTES_MAX;
use ibex_script::interpreter::encoding::is_valid_signature_encoding;
use ibex_script::number::ScriptNum;
use ibex_script::opcodes::{self, Opcode, OP_1NEGATE, OP_PUSHDATA4, OP_RETURN};
use ibex_script::script::Instructions;

use crate::hex::write_hex;
use crate::number::write_i64;

/// Appends the assembly of `script` (without quotes).
pub(crate) fn write_script_asm(out: &mut Vec<u8>, script: &[u8], attempt_sighash_decode: bool) {
    // Core's `CScript::IsUnspendable`: OP_RETURN data is never decoded as a
    // signature.
    let unspendable = script.first() == Some(&OP_RETURN) || script.len() > SCRIPT_BYTES_MAX;
    let decode_signatures = attempt_sighash_decode && !unspendable;
    for (index, instruction) in Instructions::new(script).enumerate() {
        if index != 0 {
            out.push(b' ');
        }
        let Ok(instruction) = instruction else {
            out.extend_from_slice(b"[error]");
            return;
        };
        if instruction.opcode > OP_PUSHDATA4 {
            write_opcode_name(out, instruction.opcode);
        } else if instruction.data.len() <= 4 {
            write_i64(out, script_number(instruction.data));
        } else if decode_signatures {
            write_push_with_sighash(out, instruction.data);
        } else {
            write_hex(out, instruction.data);
        }
    }
}

/// `CScriptNum(bytes, false).getint()` for a push of at most 4 bytes (the
/// caller checked the length, so decoding cannot fail).
fn script_number(bytes: &[u8]) -> i64 {
    ScriptNum::decode(bytes, false, 4).map_or(0, |number| i64::from(number.clamped_i32()))
}

/// Core's `mapSigHashTypes`.
fn sighash_name(hash_type: u8) -> Option<&'static [u8]> {
    Some(match hash_type {
        0x01 => b"ALL",
        0x81 => b"ALL|ANYONECANPAY",
        0x02 => b"NONE",
        0x82 => b"NONE|ANYONECANPAY",
        0x03 => b"SINGLE",
        0x83 => b"SINGLE|ANYONECANPAY",
        _ => return None,
    })
}

/// A push in a scriptSig: `CheckSignatureEncoding(vch, SCRIPT_VERIFY_STRICTENC)`
/// is the DER check and a defined hash type, which is exactly the set
/// `mapSigHashTypes` names.
fn write_push_with_sighash(out: &mut Vec<u8>, data: &[u8]) {
    if let Some((&hash_type, signature)) = data.split_last() {
        if let Some(name) = sighash_name(hash_type).filter(|_| is_valid_signature_encoding(data)) {
            write_hex(out, signature);
            out.push(b'[');
            out.extend_from_slice(name);
            out.push(b']');
            return;
        }
    }
    write_hex(out, data);
}

/// Every opcode's name without `OP_`, indexed by the opcode byte (empty for
/// unnamed bytes), built at compile time from the script crate's table so
/// a name costs one load instead of a search.
const NAMES_WITHOUT_PREFIX: [&str; 256] = {
    let mut table = [""; 256];
    let mut index = 0;
    while index < opcodes::NAMED.len() {
        let (name, opcode) = opcodes::NAMED[index];
        table[opcode as usize] = name;
        index += 1;
    }
    table
};

/// Core's `GetOpName` for an opcode above OP_PUSHDATA4.
fn write_opcode_name(out: &mut Vec<u8>, opcode: Opcode) {
    if opcode == OP_1NEGATE {
        out.extend_from_slice(b"-1");
    } else if let Some(value) = opcodes::small_integer_value(opcode) {
        write_i64(out, i64::from(value));
    } else {
        match NAMES_WITHOUT_PREFIX[usize::from(opcode)] {
            "" => out.extend_from_slice(b"OP_UNKNOWN"),
            name => {
                out.extend_from_slice(b"OP_");
                out.extend_from_slice(name.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hex::decode;

    fn asm(script_hex: &str, attempt_sighash_decode: bool) -> String {
        let mut out = Vec::new();
        write_script_asm(&mut out, &decode(script_hex).unwrap(), attempt_sighash_decode);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn standard_scripts() {
        assert_eq!(
            asm("76a914c331d92760f0f8826edeea5402aba05eb879de8c88ac", false),
            "OP_DUP OP_HASH160 c331d92760f0f8826edeea5402aba05eb879de8c OP_EQUALVERIFY OP_CHECKSIG"
        );
        assert_eq!(asm("0014625b670c29f523399142f84a756a9c188b8a2f4d", false).len(), 42);
        assert_eq!(asm("51024e73", false), "1 29518");
        assert_eq!(asm("", false), "");
    }

    #[test]
    fn small_pushes_are_numbers() {
        assert_eq!(asm("00", false), "0");
        assert_eq!(asm("4f", false), "-1");
        assert_eq!(asm("60", false), "16");
        assert_eq!(asm("0181", false), "-1");
        assert_eq!(asm("0180", false), "0");
        assert_eq!(asm("04ffffff7f", false), "2147483647");
        assert_eq!(asm("04ffffffff", false), "-2147483647");
        assert_eq!(asm("03016500", false), "25857");
        assert_eq!(asm("4c00", false), "0");
        assert_eq!(asm("4c0101", false), "1");
    }

    #[test]
    fn opcode_names() {
        assert_eq!(
            asm("b0b1b2b9ba", false),
            "OP_NOP1 OP_CHECKLOCKTIMEVERIFY OP_CHECKSEQUENCEVERIFY OP_NOP10 OP_CHECKSIGADD"
        );
        assert_eq!(asm("bbfeff50", false), "OP_UNKNOWN OP_UNKNOWN OP_INVALIDOPCODE OP_RESERVED");
        assert_eq!(asm("6a04deadbeef", false), "OP_RETURN -1874767326");
    }

    #[test]
    fn truncated_push_ends_with_error() {
        assert_eq!(asm("0201", false), "[error]");
        assert_eq!(asm("51 4c".replace(' ', "").as_str(), false), "1 [error]");
        assert_eq!(asm("76054142", false), "OP_DUP [error]");
    }

    #[test]
    fn signatures_in_script_sigs_show_their_hash_type() {
        // A DER signature with hash type ALL, then a compressed public key.
        let signature = "3044022048d3ae53a2c0c6e2e6b7ed0aa81c55ff6bd64e6ea5e1e4b5a8ab3aec6e8bbfb1\
                         02205d6e1da0bbcad8d1e7b2c1a9e1cf4ce8c1d2e5f0b5c8fa5e7f4b2b1e4a3c9d8e01";
        let public_key = "02".to_string() + &"11".repeat(32);
        let script = format!("47{signature}21{public_key}");
        let body = &signature[..signature.len() - 2];
        assert_eq!(asm(&script, true), format!("{body}[ALL] {public_key}"));
        assert_eq!(asm(&script, false), format!("{signature} {public_key}"));
        for (byte, name) in
            [("81", "ALL|ANYONECANPAY"), ("02", "NONE"), ("83", "SINGLE|ANYONECANPAY")]
        {
            let with_type = format!("{body}{byte}");
            assert_eq!(asm(&format!("47{with_type}"), true), format!("{body}[{name}]"));
        }
        // An undefined hash type is left as it is.
        assert_eq!(asm(&format!("47{body}04"), true), format!("{body}04"));
        // OP_RETURN scripts are never decoded.
        assert_eq!(asm(&format!("6a47{signature}"), true), format!("OP_RETURN {signature}"));
    }
}
