//! One block's record in BIP 456's coding (hints file version `0x00`):
//! the sorted indices of its unspent outputs as an Elias-Fano sequence.
//!
//! A record is `N` (compact size, the count), then when `N > 0`: `M`
//! (compact size, the largest index), the `N` low parts of `l` bits each
//! and the `N` high parts in unary, where `l = floor(log2((M + 1) / N))`
//! (integer division, as the draft's reference code computes it). Both
//! bit streams are packed most significant bit first into bytes, a low
//! part's bits are appended least significant first, and each stream is
//! padded with zeros to a whole byte. A high part is written as the gap
//! from the previous element's high part in zeros, then a one.
//!
//! The draft's decoder accepts records no encoder makes (indices out of
//! order or repeated inside one high bucket, `M` not the last index, bits
//! set in the padding, fewer or more ones than `N`). A hints file comes
//! from strangers, so every one of these is an error here: a record
//! decodes only if it is the one [`encode_block`] writes for its indices.

use super::error::HintsError;
use super::HINTS_BLOCK_INDICES_MAX;
use crate::encode::{compact_size_len, write_compact_size, Reader};

/// Appends `indices` (strictly increasing, each below
/// [`HINTS_BLOCK_INDICES_MAX`]) as one record.
///
/// # Panics
/// If `indices` is not strictly increasing or too large: the writer's
/// callers build them from a block's outputs, so that is a broken
/// invariant.
pub(crate) fn encode_block(indices: &[u32], out: &mut Vec<u8>) {
    assert!(indices.windows(2).all(|pair| pair[0] < pair[1]), "hint indices must increase");
    let count = indices.len();
    write_compact_size(out, count as u64);
    let Some(&largest) = indices.last() else { return };
    assert!(largest < HINTS_BLOCK_INDICES_MAX, "hint index {largest} beyond any block");
    write_compact_size(out, u64::from(largest));
    let low_bits = low_bit_count(count, largest);
    let mut low = BitWriter::with_capacity((count * low_bits as usize).div_ceil(8));
    for &index in indices {
        for bit in 0..low_bits {
            low.push((index >> bit) & 1 == 1);
        }
    }
    out.extend_from_slice(&low.finish());
    let high_bits = count + (largest >> low_bits) as usize;
    let mut high = BitWriter::with_capacity(high_bits.div_ceil(8));
    let mut previous_high = 0;
    for &index in indices {
        let high_part = index >> low_bits;
        for _ in previous_high..high_part {
            high.push(false);
        }
        high.push(true);
        previous_high = high_part;
    }
    out.extend_from_slice(&high.finish());
}

/// Bytes [`encode_block`] writes for a record with these indices.
pub(crate) fn encoded_len(indices: &[u32]) -> usize {
    let count = indices.len();
    let Some(&largest) = indices.last() else { return 1 };
    let low_bits = low_bit_count(count, largest) as usize;
    compact_size_len(count as u64)
        + compact_size_len(u64::from(largest))
        + (count * low_bits).div_ceil(8)
        + (count + (largest >> low_bits) as usize).div_ceil(8)
}

/// Reads one record at the reader's position into `indices` (cleared
/// first), checking everything the module docs list.
pub(crate) fn decode_block(
    reader: &mut Reader<'_>,
    height: u32,
    indices: &mut Vec<u32>,
) -> Result<(), HintsError> {
    indices.clear();
    let offset = reader.position();
    let count = reader.read_compact_size().map_err(|source| HintsError::at(height, source))?;
    if count == 0 {
        return Ok(());
    }
    let largest = reader.read_compact_size().map_err(|source| HintsError::at(height, source))?;
    if largest >= u64::from(HINTS_BLOCK_INDICES_MAX) || count > largest + 1 {
        return Err(HintsError::BlockIndicesOutOfRange { height, offset, count, largest });
    }
    // Both fit in u32 now: `count <= largest + 1 <= HINTS_BLOCK_INDICES_MAX`.
    let (count, largest) = (count as usize, largest as u32);
    let low_bits = low_bit_count(count, largest);
    let low_bytes = reader
        .take((count * low_bits as usize).div_ceil(8))
        .map_err(|source| HintsError::at(height, source))?;
    let high_bytes = reader
        .take((count + (largest >> low_bits) as usize).div_ceil(8))
        .map_err(|source| HintsError::at(height, source))?;
    let malformed = || HintsError::MalformedRecord { height, offset };
    let mut low = BitReader::new(low_bytes);
    let mut high = BitReader::new(high_bytes);
    indices.reserve(count);
    let mut high_part = 0u32;
    for _ in 0..count {
        let mut low_part = 0u32;
        for bit in 0..low_bits {
            low_part |= u32::from(low.next().ok_or_else(malformed)?) << bit;
        }
        loop {
            match high.next().ok_or_else(malformed)? {
                true => break,
                false => high_part += 1,
            }
        }
        let index = (high_part << low_bits) | low_part;
        if indices.last().is_some_and(|&previous| previous >= index) {
            return Err(malformed());
        }
        indices.push(index);
    }
    // Canonical form: the last index is `M`, and every bit left in
    // either stream is padding, hence zero.
    if indices.last() != Some(&largest) || !low.rest_is_zero() || !high.rest_is_zero() {
        return Err(malformed());
    }
    Ok(())
}

/// `l`: the low bits of each element (the draft's `((M + 1) / N).ilog2()`).
fn low_bit_count(count: usize, largest: u32) -> u32 {
    debug_assert!(count >= 1 && count <= largest as usize + 1);
    ((largest as usize + 1) / count).ilog2()
}

/// Bits appended most significant first into bytes.
struct BitWriter {
    bytes: Vec<u8>,
    bit_count: usize,
}

impl BitWriter {
    fn with_capacity(bytes: usize) -> Self {
        BitWriter { bytes: Vec::with_capacity(bytes), bit_count: 0 }
    }

    fn push(&mut self, bit: bool) {
        if self.bit_count % 8 == 0 {
            self.bytes.push(0);
        }
        if bit {
            if let Some(last) = self.bytes.last_mut() {
                *last |= 0x80 >> (self.bit_count % 8);
            }
        }
        self.bit_count += 1;
    }

    fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Bits read most significant first from bytes.
struct BitReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> BitReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        BitReader { bytes, position: 0 }
    }

    fn next(&mut self) -> Option<bool> {
        let byte = *self.bytes.get(self.position / 8)?;
        let bit = byte & (0x80 >> (self.position % 8)) != 0;
        self.position += 1;
        Some(bit)
    }

    /// Whether every bit not read yet is zero.
    fn rest_is_zero(&mut self) -> bool {
        while let Some(bit) = self.next() {
            if bit {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(indices: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_block(indices, &mut out);
        assert_eq!(out.len(), encoded_len(indices));
        out
    }

    fn decoded(bytes: &[u8]) -> Result<Vec<u32>, HintsError> {
        let mut reader = Reader::new(bytes);
        let mut indices = Vec::new();
        decode_block(&mut reader, 7, &mut indices)?;
        reader.finish().map_err(|source| HintsError::at(7, source))?;
        Ok(indices)
    }

    #[test]
    fn the_drafts_vector_encodes_and_decodes() {
        // BIP 456's example: ten indices 13, 16, ..., 40 (n = 10, m = 40, l = 2).
        let indices: Vec<u32> = (0..10).map(|step| 13 + 3 * step).collect();
        let bytes = encoded(&indices);
        assert_eq!(bytes, [0x0a, 0x28, 0x8d, 0x8d, 0x80, 0x16, 0xad, 0x50]);
        assert_eq!(decoded(&bytes).unwrap(), indices);
    }

    #[test]
    fn round_trips_edges() {
        let cases: Vec<Vec<u32>> = vec![
            vec![],
            vec![0],
            vec![5],
            vec![0, 1, 2, 3],
            (0..1000).collect(),
            vec![1, 1000, 100_000],
            vec![HINTS_BLOCK_INDICES_MAX - 1],
            (0..300).map(|i| i * 7 + 3).collect(),
        ];
        for indices in cases {
            assert_eq!(decoded(&encoded(&indices)).unwrap(), indices, "{indices:?}");
        }
        assert_eq!(encoded(&[]), [0]);
    }

    #[test]
    fn refuses_what_no_encoder_writes() {
        let good = encoded(&[13, 16, 19, 22, 25, 28, 31, 34, 37, 40]);
        // Every single bit flipped in the two bit streams: a flip either
        // changes the indices (then the re-encoding differs) or is refused.
        for byte in 2..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[byte] ^= 1 << bit;
                if let Ok(indices) = decoded(&bad) {
                    assert_eq!(encoded(&indices), bad, "byte {byte} bit {bit}");
                }
            }
        }
        // M not the last index.
        let mut wrong_largest = encoded(&[3, 9]);
        wrong_largest[1] = 10;
        assert!(decoded(&wrong_largest).is_err());
        // More elements than M + 1 allows.
        assert!(matches!(
            decoded(&[3, 1, 0]),
            Err(HintsError::BlockIndicesOutOfRange { count: 3, largest: 1, .. })
        ));
        // Beyond any block, refused before any allocation.
        assert!(matches!(
            decoded(&[1, 0xfe, 0xff, 0xff, 0xff, 0x00]),
            Err(HintsError::BlockIndicesOutOfRange { .. })
        ));
        // Truncated streams.
        assert!(matches!(decoded(&good[..good.len() - 1]), Err(HintsError::Decode { .. })));
    }

    #[test]
    fn repeated_indices_in_one_bucket_are_refused() {
        // n = 2, m = 3: l = 1. Low parts 1, 1 and high parts 1, 1 decode
        // to 3, 3 under the draft's reader.
        let bytes = [0x02, 0x03, 0b1100_0000, 0b0110_0000];
        assert!(matches!(decoded(&bytes), Err(HintsError::MalformedRecord { .. })));
    }
}
