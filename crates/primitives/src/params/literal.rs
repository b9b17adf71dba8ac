//! 256-bit constants written as Core writes them (64 hex digits, most
//! significant first), checked when the crate compiles.

/// The value of one hex digit; the caller has checked it is one.
const fn digit_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        b'A'..=b'F' => digit - b'A' + 10,
        _ => 0,
    }
}

/// The 32 bytes, least significant first (a hash's internal order), of a
/// 64-digit display-order hex string. Use only through [`hash_literal!`] and
/// [`u256_literal!`], which evaluate it at compile time, where a malformed
/// literal stops the build.
pub(crate) const fn display_hex_to_le_bytes(text: &str) -> [u8; 32] {
    let digits = text.as_bytes();
    assert!(digits.len() == 64, "a 256-bit literal has 64 hex digits");
    let mut bytes = [0u8; 32];
    let mut index = 0;
    while index < 32 {
        let high = digits[2 * index];
        let low = digits[2 * index + 1];
        assert!(high.is_ascii_hexdigit() && low.is_ascii_hexdigit(), "not a hex digit");
        bytes[31 - index] = digit_value(high) << 4 | digit_value(low);
        index += 1;
    }
    bytes
}

/// A [`BlockHash`](crate::BlockHash) from its display hex, at compile time.
macro_rules! hash_literal {
    ($text:literal) => {
        const { $crate::hash::BlockHash($crate::params::literal::display_hex_to_le_bytes($text)) }
    };
}

/// A [`U256`](crate::pow::U256) from 64 hex digits, at compile time.
macro_rules! u256_literal {
    ($text:literal) => {
        const {
            $crate::pow::U256::from_le_bytes($crate::params::literal::display_hex_to_le_bytes(
                $text,
            ))
        }
    };
}

pub(crate) use hash_literal;
pub(crate) use u256_literal;
