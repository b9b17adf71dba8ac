//! The block headers of a block file, read without reading the blocks: the
//! headers-first pass of an import indexes every header before any block is
//! read, so `-assumevalid` knows the best header chain from the start.
//!
//! [`RecordHeaders`] reads each record's 8-byte frame (magic, length) and
//! the block's 80-byte header with one positional read, then jumps over the
//! rest of the block. It accepts a record exactly as [`Records`] and
//! [`RecordStream`] do: the network magic, a length within
//! [`RECORD_BLOCK_BYTES_MIN`]`..=`[`RECORD_BLOCK_BYTES_MAX`], and the whole
//! block inside the file (a truncated last record is not a block).
//!
//! # Where it differs: it stops at the first gap
//! [`Records`] searches for the magic byte by byte, so it passes over
//! garbage and implausible lengths between records; [`RecordHeaders`] stops
//! at the first offset that does not hold a record. It yields exactly the
//! records [`Records`] yields up to the first one that does not start where
//! the previous one ended (the first at offset 0). Searching would mean
//! reading every byte of the file, the cost this pass exists to avoid (88
//! bytes read per ~1 MB block instead of 128 MiB per file). Core's own
//! files hold their records back to back from offset 0 and end in a
//! zero-filled pre-allocated tail, which is where the walk stops. A block
//! after a gap (only in a damaged or hand-made file) is still imported by
//! the record walk that reads the blocks; only its header is indexed when
//! its block arrives rather than ahead of it.
//!
//! [`Records`]: crate::Records
//! [`RecordStream`]: crate::RecordStream

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use ibex_primitives::{Header, HEADER_BYTES};

use crate::error::BlockStoreError;
use crate::framing::{RECORD_BLOCK_BYTES_MAX, RECORD_BLOCK_BYTES_MIN, RECORD_HEADER_BYTES};
use crate::obfuscation::Obfuscation;
use crate::reader::io_error;

/// Bytes read per record: the frame and the block header.
const FRAME_AND_HEADER_BYTES: usize = RECORD_HEADER_BYTES + HEADER_BYTES;

// A plausible record always holds a whole header.
const _: () = assert!(RECORD_BLOCK_BYTES_MIN >= HEADER_BYTES);

/// One record's block header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    /// Offset of the block's first byte in the file (after magic and
    /// length), as in [`crate::Record::data_offset`].
    pub data_offset: u64,
    /// The block's length in bytes, as its record claims.
    pub block_bytes: usize,
    /// The block's header (its first 80 bytes).
    pub header: Header,
}

/// The headers of a block file's records, read with positional reads from
/// its start until the first gap (see the module docs).
#[derive(Debug)]
pub struct RecordHeaders {
    file: File,
    path: PathBuf,
    file_bytes: u64,
    magic: [u8; 4],
    obfuscation: Obfuscation,
    /// Offset of the next record's magic; `None` once the walk has ended.
    next_offset: Option<u64>,
}

impl RecordHeaders {
    /// Opens block file `path` (records framed with `magic`, obfuscated
    /// with `obfuscation`: [`Obfuscation::default`] for none).
    pub fn open(
        path: &Path,
        magic: [u8; 4],
        obfuscation: Obfuscation,
    ) -> Result<Self, BlockStoreError> {
        let file = File::open(path).map_err(|source| io_error(path, source))?;
        let file_bytes = file.metadata().map_err(|source| io_error(path, source))?.len();
        Ok(RecordHeaders {
            file,
            path: path.to_path_buf(),
            file_bytes,
            magic,
            obfuscation,
            next_offset: Some(0),
        })
    }

    /// The record at `offset`, `None` when there is none (a gap, a
    /// truncated record or the end of the file).
    fn read_at(&self, offset: u64) -> Result<Option<RecordHeader>, BlockStoreError> {
        let data_offset = offset + RECORD_HEADER_BYTES as u64;
        if offset + FRAME_AND_HEADER_BYTES as u64 > self.file_bytes {
            return Ok(None);
        }
        let mut frame = [0u8; FRAME_AND_HEADER_BYTES];
        self.file
            .read_exact_at(&mut frame, offset)
            .map_err(|source| io_error(&self.path, source))?;
        self.obfuscation.apply(&mut frame, offset);
        let (magic, rest) = frame.split_at(4);
        let (length, header) = rest.split_at(4);
        let mut length_bytes = [0u8; 4];
        length_bytes.copy_from_slice(length);
        let block_bytes = u32::from_le_bytes(length_bytes) as usize;
        let plausible = (RECORD_BLOCK_BYTES_MIN..=RECORD_BLOCK_BYTES_MAX).contains(&block_bytes);
        if magic != self.magic || !plausible {
            return Ok(None);
        }
        if data_offset + block_bytes as u64 > self.file_bytes {
            return Ok(None);
        }
        let mut header_bytes = [0u8; HEADER_BYTES];
        header_bytes.copy_from_slice(header);
        Ok(Some(RecordHeader { data_offset, block_bytes, header: Header::decode(&header_bytes) }))
    }
}

impl Iterator for RecordHeaders {
    type Item = Result<RecordHeader, BlockStoreError>;

    /// The next record's header; the walk ends after the first gap or error.
    fn next(&mut self) -> Option<Self::Item> {
        let offset = self.next_offset.take()?;
        let record = match self.read_at(offset) {
            Ok(record) => record?,
            Err(error) => return Some(Err(error)),
        };
        // Each step moves at least 88 bytes on, so the walk ends.
        self.next_offset = Some(record.data_offset + record.block_bytes as u64);
        Some(Ok(record))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::{encode_record, Records};
    use proptest::prelude::*;
    use std::io::Write;

    const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
    const KEY: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

    /// A block of `length` bytes (at least a header) whose header's
    /// version and nonce are `tag`, so each record's header is its own.
    fn block(tag: u8, length: usize) -> Vec<u8> {
        let mut bytes = vec![tag; length.max(HEADER_BYTES)];
        bytes[..4].copy_from_slice(&u32::from(tag).to_le_bytes());
        bytes
    }

    /// The headers `RecordHeaders` reads from `image` written to a file
    /// obfuscated with `key`.
    fn walked(image: &[u8], key: [u8; 8]) -> Vec<RecordHeader> {
        let obfuscation = Obfuscation::new(key);
        let mut obfuscated = image.to_vec();
        obfuscation.apply(&mut obfuscated, 0);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(&obfuscated).unwrap();
        RecordHeaders::open(file.path(), MAGIC, obfuscation)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    /// What `Records` finds in `image`, up to the first record that does
    /// not start where the previous one ended: the records `RecordHeaders`
    /// must find.
    fn back_to_back_records(image: &[u8]) -> Vec<RecordHeader> {
        let mut expected = Vec::new();
        let mut next_offset = 0u64;
        for record in Records::new(image, MAGIC) {
            if record.data_offset != next_offset + RECORD_HEADER_BYTES as u64 {
                break;
            }
            let mut header = [0u8; HEADER_BYTES];
            header.copy_from_slice(&record.bytes[..HEADER_BYTES]);
            expected.push(RecordHeader {
                data_offset: record.data_offset,
                block_bytes: record.bytes.len(),
                header: Header::decode(&header),
            });
            next_offset = record.data_offset + record.bytes.len() as u64;
        }
        expected
    }

    #[test]
    fn back_to_back_records_then_a_zero_tail_are_all_found() {
        let mut image = Vec::new();
        for (tag, length) in [(1, 80), (2, 300), (3, 81)] {
            encode_record(&mut image, MAGIC, &block(tag, length));
        }
        image.extend_from_slice(&[0u8; 4096]);
        let found = walked(&image, KEY);
        assert_eq!(found.len(), 3);
        assert_eq!(found, back_to_back_records(&image));
        assert_eq!(found.len(), Records::new(&image, MAGIC).count(), "every record Records finds");
        assert_eq!(found[1].data_offset, 8 + 80 + 8);
        assert_eq!(found[1].header.version, 2);
        assert_eq!(found[2].block_bytes, 81);
    }

    #[test]
    fn stops_at_an_implausible_length_where_records_searches_on() {
        let mut image = Vec::new();
        encode_record(&mut image, MAGIC, &block(1, 100));
        // A magic claiming 10 bytes, then a real record: Records finds it
        // by searching, the header walk stops at the gap.
        image.extend_from_slice(&MAGIC);
        image.extend_from_slice(&10u32.to_le_bytes());
        encode_record(&mut image, MAGIC, &block(2, 90));
        let found = walked(&image, KEY);
        assert_eq!(found, back_to_back_records(&image));
        assert_eq!(found.len(), 1);
        assert_eq!(Records::new(&image, MAGIC).count(), 2);
        // Over the limit stops it too.
        let mut image = Vec::new();
        encode_record(&mut image, MAGIC, &block(1, 100));
        image.extend_from_slice(&MAGIC);
        image.extend_from_slice(&(RECORD_BLOCK_BYTES_MAX as u32 + 1).to_le_bytes());
        image.extend_from_slice(&block(2, 200));
        assert_eq!(walked(&image, KEY).len(), 1);
    }

    #[test]
    fn a_truncated_last_record_is_not_a_block() {
        let mut image = Vec::new();
        encode_record(&mut image, MAGIC, &block(1, 100));
        encode_record(&mut image, MAGIC, &block(2, 200));
        image.truncate(image.len() - 1);
        let found = walked(&image, KEY);
        assert_eq!(found, back_to_back_records(&image));
        assert_eq!(found.len(), 1);
        assert!(walked(&[], KEY).is_empty());
        assert!(walked(&image[..50], KEY).is_empty());
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("blk00009.dat");
        let error = RecordHeaders::open(&path, MAGIC, Obfuscation::default()).unwrap_err();
        assert!(error.to_string().contains("blk00009.dat"), "{error}");
    }

    /// A file image of records back to back, some broken in one of the
    /// ways a gap can look, and a tail.
    fn build_image(parts: &[(u8, usize)], tail: (u8, usize)) -> Vec<u8> {
        let mut image = Vec::new();
        for &(kind, size) in parts {
            match kind % 5 {
                0 | 1 => encode_record(&mut image, MAGIC, &block(kind, 80 + size)),
                2 => {
                    image.extend_from_slice(&MAGIC);
                    image.extend_from_slice(&(size as u32 % 80).to_le_bytes());
                }
                3 => image.extend(std::iter::repeat_n(kind, 1 + size % 13)),
                _ => image.extend_from_slice(&MAGIC[..1 + size % 3]),
            }
        }
        match tail.0 % 3 {
            0 => image.extend(std::iter::repeat_n(0u8, tail.1)),
            1 => image.truncate(image.len().saturating_sub(tail.1 % 40)),
            _ => {}
        }
        image
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn finds_the_records_records_finds_until_the_first_gap(
            parts in proptest::collection::vec((any::<u8>(), 0usize..300), 0..16),
            tail in (any::<u8>(), 0usize..200),
            key in any::<[u8; 8]>(),
        ) {
            let image = build_image(&parts, tail);
            prop_assert_eq!(walked(&image, key), back_to_back_records(&image));
        }
    }
}
