//! Bitcoin's integer encodings: little-endian integers, compact size (the wire's
//! length prefix) and Bitcoin Core's VARINT (used in its undo and coins formats).
//!
//! [`Reader`] is the one cursor every decoder in this crate walks untrusted bytes
//! with: each read checks the remaining length first and returns a typed
//! [`DecodeError`] carrying the offset, so no input can index out of bounds.

use crate::error::{DecodeError, Field};

/// Core's MAX_SIZE: the largest compact size accepted when a length or count is read.
pub const COMPACT_SIZE_MAX: u64 = 0x0200_0000;

/// A bounds-checked cursor over a byte slice. Every slice it returns borrows the
/// input (zero copy).
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    #[inline]
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, position: 0 }
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.position
    }

    /// Bytes not yet consumed.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    /// The whole input.
    #[inline]
    pub fn input(&self) -> &'a [u8] {
        self.bytes
    }

    /// Fails with [`DecodeError::TrailingBytes`] unless every byte was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(DecodeError::TrailingBytes { offset: self.position, count }),
        }
    }

    #[cold]
    fn truncated(&self, needed: usize) -> DecodeError {
        DecodeError::Truncated { offset: self.position, needed, remaining: self.remaining() }
    }

    /// The next `count` bytes.
    #[inline]
    pub fn take(&mut self, count: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.position.checked_add(count).ok_or_else(|| self.truncated(count))?;
        match self.bytes.get(self.position..end) {
            Some(slice) => {
                self.position = end;
                Ok(slice)
            }
            None => Err(self.truncated(count)),
        }
    }

    /// The next `N` bytes as an array reference.
    #[inline]
    pub fn take_array<const N: usize>(&mut self) -> Result<&'a [u8; N], DecodeError> {
        let slice = self.take(N)?;
        slice.try_into().map_err(|_| self.truncated(N))
    }

    /// One byte.
    #[inline]
    pub fn read_u8(&mut self) -> Result<u8, DecodeError> {
        match self.bytes.get(self.position) {
            Some(&byte) => {
                self.position += 1;
                Ok(byte)
            }
            None => Err(self.truncated(1)),
        }
    }

    /// A little-endian `u16`.
    #[inline]
    pub fn read_u16_le(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(*self.take_array::<2>()?))
    }

    /// A little-endian `u32`.
    #[inline]
    pub fn read_u32_le(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(*self.take_array::<4>()?))
    }

    /// A little-endian `i32`.
    #[inline]
    pub fn read_i32_le(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_le_bytes(*self.take_array::<4>()?))
    }

    /// A little-endian `u64`.
    #[inline]
    pub fn read_u64_le(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(*self.take_array::<8>()?))
    }

    /// A little-endian `i64`.
    #[inline]
    pub fn read_i64_le(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(*self.take_array::<8>()?))
    }

    /// A compact size, canonical and at most [`COMPACT_SIZE_MAX`], as Core's
    /// `ReadCompactSize(range_check = true)` requires.
    #[inline]
    pub fn read_compact_size(&mut self) -> Result<u64, DecodeError> {
        let offset = self.position;
        let first = self.read_u8()?;
        let value = match first {
            0..=0xfc => return Ok(u64::from(first)),
            0xfd => {
                let value = u64::from(self.read_u16_le()?);
                if value < 0xfd {
                    return Err(DecodeError::NonCanonicalCompactSize { offset, value });
                }
                value
            }
            0xfe => {
                let value = u64::from(self.read_u32_le()?);
                if value < 0x1_0000 {
                    return Err(DecodeError::NonCanonicalCompactSize { offset, value });
                }
                value
            }
            0xff => {
                let value = self.read_u64_le()?;
                if value < 0x1_0000_0000 {
                    return Err(DecodeError::NonCanonicalCompactSize { offset, value });
                }
                value
            }
        };
        if value > COMPACT_SIZE_MAX {
            return Err(DecodeError::CompactSizeTooLarge { offset, value });
        }
        Ok(value)
    }

    /// A count of items each at least `item_bytes_min` long; fails early when the
    /// remaining input cannot hold that many, so callers may reserve `count` slots.
    #[inline]
    pub fn read_count(&mut self, what: Field, item_bytes_min: u64) -> Result<usize, DecodeError> {
        let offset = self.position;
        let count = self.read_compact_size()?;
        let minimum_bytes = count.saturating_mul(item_bytes_min);
        if minimum_bytes > self.remaining() as u64 {
            return Err(DecodeError::CountTooLarge {
                what,
                offset,
                count,
                minimum_bytes,
                remaining: self.remaining(),
            });
        }
        // `count <= remaining <= usize::MAX` when item_bytes_min >= 1.
        usize::try_from(count)
            .map_err(|_| DecodeError::CompactSizeTooLarge { offset, value: count })
    }

    /// A compact-size length followed by that many bytes (a script or witness item).
    #[inline]
    pub fn read_var_bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let length = self.read_count(Field::Bytes, 1)?;
        self.take(length)
    }

    /// Bitcoin Core's VARINT: big-endian base-128 where each continuation adds one,
    /// so every value has exactly one encoding.
    pub fn read_varint(&mut self) -> Result<u64, DecodeError> {
        let offset = self.position;
        let mut value: u64 = 0;
        loop {
            let byte = self.read_u8()?;
            if value > (u64::MAX >> 7) {
                return Err(DecodeError::VarIntOverflow { offset });
            }
            value = (value << 7) | u64::from(byte & 0x7f);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
            value = value.checked_add(1).ok_or(DecodeError::VarIntOverflow { offset })?;
        }
    }
}

/// Bytes a compact size encoding of `value` takes.
#[inline]
pub const fn compact_size_len(value: u64) -> usize {
    match value {
        0..=0xfc => 1,
        0xfd..=0xffff => 3,
        0x1_0000..=0xffff_ffff => 5,
        _ => 9,
    }
}

/// Appends the compact size encoding of `value`.
#[inline]
pub fn write_compact_size(out: &mut Vec<u8>, value: u64) {
    match value {
        0..=0xfc => out.push(value as u8),
        0xfd..=0xffff => {
            out.push(0xfd);
            out.extend_from_slice(&(value as u16).to_le_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xfe);
            out.extend_from_slice(&(value as u32).to_le_bytes());
        }
        _ => {
            out.push(0xff);
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
}

/// Appends a compact-size length and the bytes.
#[inline]
pub fn write_var_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    write_compact_size(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Bytes Core's VARINT encoding of `value` takes.
pub const fn varint_len(mut value: u64) -> usize {
    let mut length = 1;
    while value > 0x7f {
        value = (value >> 7) - 1;
        length += 1;
    }
    length
}

/// Appends Core's VARINT encoding of `value`.
pub fn write_varint(out: &mut Vec<u8>, mut value: u64) {
    // At most 10 base-128 digits for 64 bits.
    let mut digits = [0u8; 10];
    let mut length = 0;
    loop {
        let continuation = if length == 0 { 0 } else { 0x80 };
        digits[length] = (value & 0x7f) as u8 | continuation;
        length += 1;
        if value <= 0x7f {
            break;
        }
        value = (value >> 7) - 1;
    }
    out.extend(digits[..length].iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compact(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_compact_size(&mut out, value);
        out
    }

    #[test]
    fn compact_size_boundaries_round_trip() {
        for value in [0, 1, 0xfc, 0xfd, 0xffff, 0x1_0000, 0x0200_0000] {
            let bytes = compact(value);
            assert_eq!(bytes.len(), compact_size_len(value));
            let mut reader = Reader::new(&bytes);
            assert_eq!(reader.read_compact_size(), Ok(value));
            assert_eq!(reader.finish(), Ok(()));
        }
    }

    #[test]
    fn compact_size_rejects_non_canonical_and_too_large() {
        let cases: [(&[u8], bool); 4] = [
            (&[0xfd, 0xfc, 0x00], true),
            (&[0xfe, 0xff, 0xff, 0x00, 0x00], true),
            (&[0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0], true),
            (&[0xfe, 0x01, 0x00, 0x00, 0x02], false),
        ];
        for (bytes, non_canonical) in cases {
            let error = Reader::new(bytes).read_compact_size().unwrap_err();
            if non_canonical {
                assert!(matches!(error, DecodeError::NonCanonicalCompactSize { .. }), "{error}");
            } else {
                assert!(matches!(error, DecodeError::CompactSizeTooLarge { .. }), "{error}");
            }
        }
    }

    #[test]
    fn varint_matches_core_examples() {
        // Examples from Core's serialize.h comment on VARINT.
        let cases: [(u64, &[u8]); 8] = [
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x00]),
            (255, &[0x80, 0x7f]),
            (256, &[0x81, 0x00]),
            (16383, &[0xfe, 0x7f]),
            (16384, &[0xff, 0x00]),
        ];
        for (value, encoding) in cases {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            assert_eq!(out, encoding, "{value}");
            assert_eq!(varint_len(value), encoding.len());
            assert_eq!(Reader::new(encoding).read_varint(), Ok(value));
        }
        let mut out = Vec::new();
        write_varint(&mut out, u64::MAX);
        assert_eq!(Reader::new(&out).read_varint(), Ok(u64::MAX));
        assert!(Reader::new(&[0xff; 11]).read_varint().is_err());
    }

    #[test]
    fn count_larger_than_input_is_rejected_before_allocation() {
        let mut reader = Reader::new(&[0xfe, 0x00, 0x00, 0x00, 0x01]);
        let error = reader.read_count(Field::Inputs, 41).unwrap_err();
        assert!(matches!(error, DecodeError::CountTooLarge { count: 0x0100_0000, .. }));
    }
}
