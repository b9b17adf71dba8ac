//! Lower-case hex encoding and decoding (the display form of scripts, hashes, keys).

use thiserror::Error;

/// A string that is not hex.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum HexError {
    /// Hex strings have an even number of digits.
    #[error("hex string has odd length {length}")]
    OddLength {
        /// Digits in the string.
        length: usize,
    },
    /// A character outside `0-9a-fA-F`.
    #[error("invalid hex character {character:?} at {position}")]
    InvalidCharacter {
        /// Index of the character.
        position: usize,
        /// The character.
        character: char,
    },
    /// A fixed-size value got the wrong number of bytes.
    #[error("expected {expected} bytes, got {actual}")]
    WrongLength {
        /// Bytes wanted.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
}

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends the hex form of `bytes` to `out`.
pub fn encode_to(bytes: &[u8], out: &mut String) {
    out.reserve(bytes.len() * 2);
    for &byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
}

/// The hex form of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::new();
    encode_to(bytes, &mut out);
    out
}

fn digit_value(text: &str, position: usize) -> Result<u8, HexError> {
    let byte = text.as_bytes().get(position).copied().unwrap_or(b'?');
    match byte {
        b'0'..=b'9' => Ok(byte - b'0'),
        b'a'..=b'f' => Ok(byte - b'a' + 10),
        b'A'..=b'F' => Ok(byte - b'A' + 10),
        _ => Err(HexError::InvalidCharacter {
            position,
            // A byte inside a multi-byte character has no character of its own.
            character: text.get(position..).and_then(|rest| rest.chars().next()).unwrap_or('?'),
        }),
    }
}

/// Decodes a hex string.
pub fn decode(text: &str) -> Result<Vec<u8>, HexError> {
    if text.len() % 2 != 0 {
        return Err(HexError::OddLength { length: text.len() });
    }
    (0..text.len() / 2)
        .map(|index| Ok(digit_value(text, 2 * index)? << 4 | digit_value(text, 2 * index + 1)?))
        .collect()
}

/// Decodes a hex string of exactly `N` bytes.
pub fn decode_array<const N: usize>(text: &str) -> Result<[u8; N], HexError> {
    let bytes = decode(text)?;
    let actual = bytes.len();
    bytes.try_into().map_err(|_| HexError::WrongLength { expected: N, actual })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_errors() {
        assert_eq!(encode(&[0x00, 0xab, 0xff]), "00abff");
        assert_eq!(decode("00ABff").unwrap(), vec![0x00, 0xab, 0xff]);
        assert_eq!(decode("abc"), Err(HexError::OddLength { length: 3 }));
        assert!(matches!(decode("zz"), Err(HexError::InvalidCharacter { position: 0, .. })));
        assert!(matches!(decode("é00é"), Err(HexError::InvalidCharacter { position: 0, .. })));
        assert!(matches!(decode("0é0"), Err(HexError::InvalidCharacter { position: 1, .. })));
        assert!(matches!(decode("00é"), Err(HexError::InvalidCharacter { position: 2, .. })));
        assert_eq!(decode_array::<2>("0001"), Ok([0, 1]));
        assert!(decode_array::<3>("0001").is_err());
    }
}
