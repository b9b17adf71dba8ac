//! Core's block-file record framing: each block is stored as the network magic
//! (4 bytes), its length (`u32` little-endian) and its serialisation.
//!
//! [`Records`] walks a de-obfuscated file image the way Core's
//! `LoadExternalBlockFile` does: it searches for the magic, reads the length,
//! skips implausible lengths and stops at a truncated record. Zero-filled
//! pre-allocated tails and garbage between records are passed over.

/// Bytes before each block: magic and length.
pub const RECORD_HEADER_BYTES: usize = 8;
/// Core's MAX_BLOCK_SERIALIZED_SIZE: the largest length a record may claim.
pub const RECORD_BLOCK_BYTES_MAX: usize = 4_000_000;
/// The smallest plausible block: a header (Core skips shorter records).
pub const RECORD_BLOCK_BYTES_MIN: usize = 80;

/// One block found in a block file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// Offset of the block's first byte in the file (after magic and length),
    /// the position Core's block index stores.
    pub data_offset: u64,
    /// The block's serialisation.
    pub bytes: &'a [u8],
}

/// Appends a framed record for `block` to `out`.
pub fn encode_record(out: &mut Vec<u8>, magic: [u8; 4], block: &[u8]) {
    out.reserve(RECORD_HEADER_BYTES + block.len());
    out.extend_from_slice(&magic);
    // Callers keep blocks far below 4 GiB (RECORD_BLOCK_BYTES_MAX).
    out.extend_from_slice(&(block.len() as u32).to_le_bytes());
    out.extend_from_slice(block);
}

/// Iterator over the records of a de-obfuscated block file image.
#[derive(Debug, Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    position: usize,
    magic: [u8; 4],
}

impl<'a> Records<'a> {
    /// Records in `data` (a whole file, already de-obfuscated) framed with `magic`.
    pub fn new(data: &'a [u8], magic: [u8; 4]) -> Self {
        Records { data, position: 0, magic }
    }

    /// Offset of the next magic at or after `from`.
    fn find_magic(&self, from: usize) -> Option<usize> {
        let rest = self.data.get(from..)?;
        rest.windows(4).position(|window| window == self.magic).map(|found| from + found)
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Record<'a>;

    fn next(&mut self) -> Option<Record<'a>> {
        loop {
            let magic_at = self.find_magic(self.position)?;
            let length_bytes = self.data.get(magic_at + 4..magic_at + RECORD_HEADER_BYTES)?;
            let mut length = [0u8; 4];
            length.copy_from_slice(length_bytes);
            let length = u32::from_le_bytes(length) as usize;
            let data_offset = magic_at + RECORD_HEADER_BYTES;
            if !(RECORD_BLOCK_BYTES_MIN..=RECORD_BLOCK_BYTES_MAX).contains(&length) {
                // Not a plausible block: keep searching after this magic.
                self.position = magic_at + 1;
                continue;
            }
            // A truncated last record ends the file, as in Core.
            let bytes = self.data.get(data_offset..data_offset + length)?;
            self.position = data_offset + length;
            return Some(Record { data_offset: data_offset as u64, bytes });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

    #[test]
    fn finds_records_between_garbage_and_skips_bad_lengths() {
        let first = vec![1u8; 100];
        let second = vec![2u8; 81];
        let mut file = vec![0u8; 5];
        encode_record(&mut file, MAGIC, &first);
        // A magic with an implausible length, then the real second record.
        file.extend_from_slice(&MAGIC);
        file.extend_from_slice(&10u32.to_le_bytes());
        encode_record(&mut file, MAGIC, &second);
        // A truncated third record and a zero tail.
        encode_record(&mut file, MAGIC, &[3u8; 90]);
        file.truncate(file.len() - 1);
        file.extend_from_slice(&[0u8; 0]);
        let records: Vec<_> = Records::new(&file, MAGIC).collect();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0], Record { data_offset: 13, bytes: &first });
        assert_eq!(records[1].bytes, &second[..]);
    }
}
