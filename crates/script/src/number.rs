//! Script numbers (Core's `CScriptNum`): little-endian sign-magnitude byte
//! strings, at most 4 bytes as operands (5 for OP_CHECKLOCKTIMEVERIFY and
//! OP_CHECKSEQUENCEVERIFY), while results may grow beyond that range.
//!
//! Operands fit in 40 bits, so every sum, difference or negation fits an
//! `i64` without overflow; results are stored as their minimal encoding.

use crate::error::ScriptError;

/// The default operand size limit in bytes.
pub const DEFAULT_MAX_NUMBER_BYTES: usize = 4;
/// The operand size limit of OP_CHECKLOCKTIMEVERIFY and OP_CHECKSEQUENCEVERIFY.
pub const LOCK_TIME_MAX_NUMBER_BYTES: usize = 5;

/// The longest encoding of an `i64` (8 magnitude bytes and a sign byte).
pub const MAX_ENCODED_BYTES: usize = 9;

/// A script number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ScriptNum(pub i64);

impl ScriptNum {
    /// Decodes an operand. Core throws `scriptnum_error` for an over-long or
    /// (under `require_minimal`) non-minimal encoding; the interpreter reports
    /// that as `UnknownError`, so does this.
    #[inline]
    pub fn decode(
        bytes: &[u8],
        require_minimal: bool,
        max_bytes: usize,
    ) -> Result<ScriptNum, ScriptError> {
        if bytes.len() > max_bytes {
            return Err(ScriptError::UnknownError);
        }
        if require_minimal && !is_minimally_encoded(bytes) {
            return Err(ScriptError::UnknownError);
        }
        Ok(ScriptNum(decode_unchecked(bytes)))
    }

    /// The value clamped to `i32` (Core's `getint`).
    #[inline]
    pub fn clamped_i32(self) -> i32 {
        self.0.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    }

    /// Appends the minimal encoding to `out` (Core's `serialize`); 0 is empty.
    #[inline]
    pub fn encode_into(self, out: &mut Vec<u8>) {
        if self.0 == 0 {
            return;
        }
        let negative = self.0 < 0;
        let mut magnitude = self.0.unsigned_abs();
        while magnitude > 0 {
            out.push((magnitude & 0xff) as u8);
            magnitude >>= 8;
        }
        // The sign lives in the top bit of the last byte; add a byte if the
        // magnitude already uses that bit.
        if let Some(last) = out.last_mut() {
            if *last & 0x80 != 0 {
                out.push(if negative { 0x80 } else { 0x00 });
            } else if negative {
                *last |= 0x80;
            }
        }
    }

    /// The minimal encoding as a new vector.
    #[inline]
    pub fn encode(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_ENCODED_BYTES);
        self.encode_into(&mut out);
        out
    }
}

/// Whether `bytes` is the minimal encoding of its value: no trailing zero byte
/// unless it carries the sign for a magnitude whose top bit is set.
#[inline]
pub fn is_minimally_encoded(bytes: &[u8]) -> bool {
    match bytes {
        [] => true,
        [.., last] if last & 0x7f != 0 => true,
        [_] => false,
        [.., before_last, _] => before_last & 0x80 != 0,
    }
}

/// Decodes any length up to 8 bytes without range checks (longer input is
/// truncated to its first 8 bytes; callers check the length first).
#[inline]
fn decode_unchecked(bytes: &[u8]) -> i64 {
    let Some((&last, _)) = bytes.split_last() else {
        return 0;
    };
    let mut magnitude: u64 = 0;
    for (index, byte) in bytes.iter().take(8).enumerate() {
        magnitude |= u64::from(*byte) << (8 * index);
    }
    if last & 0x80 != 0 {
        // Clear the sign bit and negate.
        let sign_bit = 0x80u64 << (8 * (bytes.len().min(8) - 1));
        -((magnitude & !sign_bit) as i64)
    } else {
        magnitude as i64
    }
}

/// Core's `CastToBool`: false for any encoding of zero, including negative
/// zero (`0x80` as the last byte with all other bytes zero).
#[inline]
pub fn cast_to_bool(bytes: &[u8]) -> bool {
    match bytes.split_last() {
        None => false,
        Some((&last, rest)) => rest.iter().any(|byte| *byte != 0) || (last != 0 && last != 0x80),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(value: i64) {
        let bytes = ScriptNum(value).encode();
        assert!(is_minimally_encoded(&bytes), "{value}: {bytes:?}");
        assert_eq!(ScriptNum::decode(&bytes, true, 9).unwrap().0, value);
    }

    #[test]
    fn encodings() {
        assert_eq!(ScriptNum(0).encode(), Vec::<u8>::new());
        assert_eq!(ScriptNum(1).encode(), vec![1]);
        assert_eq!(ScriptNum(-1).encode(), vec![0x81]);
        assert_eq!(ScriptNum(127).encode(), vec![0x7f]);
        assert_eq!(ScriptNum(128).encode(), vec![0x80, 0x00]);
        assert_eq!(ScriptNum(-128).encode(), vec![0x80, 0x80]);
        assert_eq!(ScriptNum(255).encode(), vec![0xff, 0x00]);
        assert_eq!(ScriptNum(256).encode(), vec![0x00, 0x01]);
        assert_eq!(ScriptNum(-2147483647).encode(), vec![0xff, 0xff, 0xff, 0xff]);
        assert_eq!(ScriptNum(2147483648).encode(), vec![0, 0, 0, 0x80, 0]);
        for value in [0, 1, -1, 127, -127, 128, -128, 32767, -32768, 1 << 31, -(1 << 39), i64::MAX]
        {
            round_trip(value);
        }
        round_trip(i64::MIN + 1);
    }

    #[test]
    fn decoding_limits() {
        assert_eq!(ScriptNum::decode(&[1, 2, 3, 4, 5], false, 4), Err(ScriptError::UnknownError));
        assert_eq!(ScriptNum::decode(&[1, 2, 3, 4, 5], false, 5).unwrap().0, 0x05_0403_0201);
        assert_eq!(ScriptNum::decode(&[0x00], true, 4), Err(ScriptError::UnknownError));
        assert_eq!(ScriptNum::decode(&[0x80], true, 4), Err(ScriptError::UnknownError));
        assert_eq!(ScriptNum::decode(&[0x01, 0x00], true, 4), Err(ScriptError::UnknownError));
        assert_eq!(ScriptNum::decode(&[0x80, 0x00], true, 4).unwrap().0, 128);
        assert_eq!(ScriptNum::decode(&[0x00], false, 4).unwrap().0, 0);
        assert_eq!(ScriptNum::decode(&[0x80], false, 4).unwrap().0, 0);
        assert_eq!(ScriptNum::decode(&[0x01, 0x80], false, 4).unwrap().0, -1);
        assert_eq!(ScriptNum::decode(&[0xff, 0xff, 0xff, 0xff], false, 4).unwrap().0, -2147483647);
    }

    #[test]
    fn clamping_and_truth() {
        assert_eq!(ScriptNum(1 << 40).clamped_i32(), i32::MAX);
        assert_eq!(ScriptNum(-(1 << 40)).clamped_i32(), i32::MIN);
        assert!(!cast_to_bool(&[]));
        assert!(!cast_to_bool(&[0, 0, 0x80]));
        assert!(cast_to_bool(&[0, 0x80, 0]));
        assert!(cast_to_bool(&[0x80, 0x00]));
        assert!(cast_to_bool(&[1]));
    }
}
