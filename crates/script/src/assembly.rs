//! Core's script assembly notation (`ParseScript` in `core_read.cpp`), as
//! its test vectors (`script_tests.json`, `tx_valid.json`) write scripts:
//! whitespace-separated words, each one of
//!
//! - a decimal number in -0xffffffff..=0xffffffff, pushed minimally
//!   (OP_0, OP_1NEGATE, OP_1..OP_16, else a script number push);
//! - `0x` and an even number of hex digits: raw bytes inserted as they are;
//! - `'text'`: the text pushed as data;
//! - an opcode name with or without `OP_`.

use thiserror::Error;

use crate::number::ScriptNum;
use crate::opcodes::{self, Opcode, OP_0, OP_1, OP_1NEGATE};
use crate::script::push_data_into;

/// Why assembly text did not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AssemblyError {
    /// A decimal number outside -0xffffffff..=0xffffffff.
    #[error("decimal number out of range: {word}")]
    NumberOutOfRange {
        /// The word.
        word: String,
    },
    /// A word that is no number, hex, string or opcode.
    #[error("unknown word in script assembly: {word}")]
    UnknownWord {
        /// The word.
        word: String,
    },
}

/// Parses Core's script assembly into script bytes.
pub fn parse_assembly(text: &str) -> Result<Vec<u8>, AssemblyError> {
    let mut script = Vec::new();
    for word in text.split([' ', '\t', '\n']).filter(|word| !word.is_empty()) {
        parse_word(word, &mut script)?;
    }
    Ok(script)
}

fn parse_word(word: &str, script: &mut Vec<u8>) -> Result<(), AssemblyError> {
    let digits = word.strip_prefix('-').unwrap_or(word);
    if !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()) {
        let number: i64 = word
            .parse()
            .ok()
            .filter(|number: &i64| number.unsigned_abs() <= 0xffff_ffff)
            .ok_or_else(|| AssemblyError::NumberOutOfRange { word: word.to_string() })?;
        push_number(number, script);
        return Ok(());
    }
    if let Some(hex) = word.strip_prefix("0x") {
        if let Some(bytes) = decode_hex(hex) {
            script.extend_from_slice(&bytes);
            return Ok(());
        }
    }
    if word.len() >= 2 && word.starts_with('\'') && word.ends_with('\'') {
        push_data_into(&word.as_bytes()[1..word.len() - 1], script);
        return Ok(());
    }
    let opcode: Opcode = opcodes::from_name(word)
        .ok_or_else(|| AssemblyError::UnknownWord { word: word.to_string() })?;
    script.push(opcode);
    Ok(())
}

/// Core's `CScript << int64_t`.
fn push_number(number: i64, script: &mut Vec<u8>) {
    match number {
        0 => script.push(OP_0),
        -1 => script.push(OP_1NEGATE),
        1..=16 => script.push(OP_1 + (number as u8 - 1)),
        _ => push_data_into(&ScriptNum(number).encode(), script),
    }
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.is_empty() || text.len() % 2 != 0 {
        return None;
    }
    text.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let high = (pair[0] as char).to_digit(16)?;
            let low = (pair[1] as char).to_digit(16)?;
            Some((high * 16 + low) as u8)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(
            parse_assembly("0 1 16 -1 17 -2").unwrap(),
            vec![0x00, 0x51, 0x60, 0x4f, 0x01, 0x11, 0x01, 0x82]
        );
        assert_eq!(
            parse_assembly("  DUP\tOP_HASH160 \n 0x14 0xabcd").unwrap(),
            vec![0x76, 0xa9, 0x14, 0xab, 0xcd]
        );
        assert_eq!(parse_assembly("'ab' ''").unwrap(), vec![0x02, b'a', b'b', 0x00]);
        assert_eq!(parse_assembly("4294967295").unwrap(), vec![0x05, 0xff, 0xff, 0xff, 0xff, 0x00]);
        assert!(parse_assembly("4294967296").is_err());
        assert!(parse_assembly("0x").is_err());
        assert!(parse_assembly("0xabc").is_err());
        assert!(parse_assembly("NOT_AN_OPCODE").is_err());
        assert_eq!(parse_assembly("").unwrap(), Vec::<u8>::new());
    }
}
