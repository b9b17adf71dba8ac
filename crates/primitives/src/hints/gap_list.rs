//! One block's record in btcd's coding (hints file version `0x01`, btcd
//! pull request 2478, the only hints format shipped with a committed
//! file): a compact size byte length, then that many bytes of compact
//! sizes: the first index, then each next index minus the previous one
//! minus one (so a run of consecutive indices is a run of zero bytes).
//!
//! The length prefix lets a reader skip a record without decoding it.
//! btcd accepts non-canonical compact sizes inside a record; a hints file
//! comes from strangers and every record has exactly one encoding here,
//! so they are refused, as is a value crossing the record's end.

use super::error::HintsError;
use super::HINTS_BLOCK_INDICES_MAX;
use crate::encode::{compact_size_len, write_compact_size, Reader};

/// Bytes of a record's payload at most: each index in at most five bytes.
const RECORD_PAYLOAD_BYTES_MAX: u64 = HINTS_BLOCK_INDICES_MAX as u64 * 5;

/// Appends `indices` (strictly increasing) as one record.
///
/// # Panics
/// If `indices` is not strictly increasing or too large (a broken
/// invariant of the writer's callers).
pub(crate) fn encode_block(indices: &[u32], out: &mut Vec<u8>) {
    assert!(indices.windows(2).all(|pair| pair[0] < pair[1]), "hint indices must increase");
    assert!(indices.last().is_none_or(|&last| last < HINTS_BLOCK_INDICES_MAX));
    write_compact_size(out, payload_len(indices) as u64);
    for (position, &index) in indices.iter().enumerate() {
        write_compact_size(out, u64::from(gap(indices, position, index)));
    }
}

/// Bytes [`encode_block`] writes for a record with these indices.
pub(crate) fn encoded_len(indices: &[u32]) -> usize {
    let payload = payload_len(indices);
    compact_size_len(payload as u64) + payload
}

fn payload_len(indices: &[u32]) -> usize {
    indices
        .iter()
        .enumerate()
        .map(|(position, &index)| compact_size_len(u64::from(gap(indices, position, index))))
        .sum()
}

/// What the record holds for the index at `position`.
fn gap(indices: &[u32], position: usize, index: u32) -> u32 {
    match position.checked_sub(1) {
        None => index,
        Some(before) => index - indices[before] - 1,
    }
}

/// Reads one record at the reader's position into `indices` (cleared
/// first).
pub(crate) fn decode_block(
    reader: &mut Reader<'_>,
    height: u32,
    indices: &mut Vec<u32>,
) -> Result<(), HintsError> {
    indices.clear();
    let offset = reader.position();
    let payload_bytes =
        reader.read_compact_size().map_err(|source| HintsError::at(height, source))?;
    if payload_bytes > RECORD_PAYLOAD_BYTES_MAX {
        return Err(HintsError::BlockIndicesOutOfRange {
            height,
            offset,
            count: payload_bytes,
            largest: 0,
        });
    }
    // The values are read in place; one that ends past the payload is
    // refused (it would have taken the next record's bytes).
    let payload_end = reader.position() + payload_bytes as usize;
    let mut next_allowed = 0u64;
    while reader.position() < payload_end {
        let gap = reader.read_compact_size().map_err(|source| HintsError::at(height, source))?;
        if reader.position() > payload_end {
            return Err(HintsError::MalformedRecord { height, offset });
        }
        let index = next_allowed + gap;
        if index >= u64::from(HINTS_BLOCK_INDICES_MAX) {
            return Err(HintsError::BlockIndicesOutOfRange {
                height,
                offset,
                count: indices.len() as u64 + 1,
                largest: index,
            });
        }
        indices.push(index as u32);
        next_allowed = index + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hex::decode as decode_hex;

    fn encoded(indices: &[u32]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_block(indices, &mut out);
        assert_eq!(out.len(), encoded_len(indices));
        out
    }

    fn decoded(bytes: &[u8]) -> Result<Vec<u32>, HintsError> {
        let mut reader = Reader::new(bytes);
        let mut indices = Vec::new();
        decode_block(&mut reader, 3, &mut indices)?;
        reader.finish().map_err(|source| HintsError::at(3, source))?;
        Ok(indices)
    }

    #[test]
    fn btcd_examples_encode_and_decode() {
        // The records btcd's parser tests list (pull request 2478).
        let cases: [(&str, Vec<u32>); 5] = [
            ("00", vec![]),
            ("0400000000", vec![0, 1, 2, 3]),
            ("0a0d020202020202020202", (0..10).map(|step| 13 + 3 * step).collect()),
            ("03fd2c01", vec![300]),
            ("0405fdee01", vec![5, 500]),
        ];
        for (hex, indices) in cases {
            let bytes = decode_hex(hex).unwrap();
            assert_eq!(encoded(&indices), bytes, "{hex}");
            assert_eq!(decoded(&bytes).unwrap(), indices, "{hex}");
        }
    }

    #[test]
    fn refuses_non_canonical_values_and_values_crossing_the_end() {
        // 5 as `fd 05 00`.
        assert!(matches!(
            decoded(&decode_hex("03fd0500").unwrap()),
            Err(HintsError::Decode {
                source: crate::error::DecodeError::NonCanonicalCompactSize { offset: 1, .. },
                ..
            })
        ));
        // A three-byte value in a two-byte payload.
        assert!(matches!(
            decoded(&decode_hex("02fd2c01").unwrap()),
            Err(HintsError::MalformedRecord { offset: 0, .. })
        ));
        // A payload longer than the file.
        assert!(matches!(decoded(&decode_hex("0300").unwrap()), Err(HintsError::Decode { .. })));
        // An index beyond any block.
        assert!(matches!(
            decoded(&decode_hex("05feffffffff").unwrap()),
            Err(HintsError::Decode { .. } | HintsError::BlockIndicesOutOfRange { .. })
        ));
        // A payload length beyond any block, refused before it is read.
        assert!(matches!(
            decoded(&decode_hex("fe00000001").unwrap()),
            Err(HintsError::BlockIndicesOutOfRange { .. })
        ));
    }
}
