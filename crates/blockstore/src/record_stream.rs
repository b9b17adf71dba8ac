//! Streaming a block file's records with bounded memory.
//!
//! [`RecordStream`] yields the same records as [`Records`](crate::Records)
//! over the whole de-obfuscated file (the magic search, the length bounds,
//! the truncated last record that ends the file), but reads the file through
//! a window of [`READ_WINDOW_BYTES_DEFAULT`] bytes instead of holding all of
//! it: an import then keeps ~8 MiB of file data in memory instead of the
//! 128 MiB of a whole `blk` file.
//!
//! # Napkin math
//! One `read` per window (8 MiB at a few GB/s from the page cache: ~2-4 ms),
//! de-obfuscated in place 64 bits at a time (~0.3 ms), and one copy of each
//! record into its own buffer (~0.3 ms per 1 MB block), against ~200 ms of
//! validation per full block: under 1 % of an import.

use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::BlockStoreError;
use crate::framing::{RECORD_BLOCK_BYTES_MAX, RECORD_BLOCK_BYTES_MIN, RECORD_HEADER_BYTES};
use crate::obfuscation::Obfuscation;

/// File bytes a [`RecordStream`] reads at a time.
pub const READ_WINDOW_BYTES_DEFAULT: usize = 8 << 20;

/// One block read from a file, owning its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedRecord {
    /// Offset of the block's first byte in the file (after magic and length).
    pub data_offset: u64,
    /// The block's serialisation, de-obfuscated.
    pub bytes: Vec<u8>,
}

/// A record whose frame was found but whose block the file ends inside:
/// the last block of a file cut short (a crash during a write, a partial
/// copy). Core's import skips it without a word; the import reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutOffRecord {
    /// Offset of the block's first byte in the file.
    pub data_offset: u64,
    /// The block's length, as its frame claims.
    pub block_bytes: usize,
    /// The block's bytes the file holds.
    pub bytes_present: u64,
}

/// The records of one block file, read a window at a time.
#[derive(Debug)]
pub struct RecordStream<R> {
    source: R,
    path: PathBuf,
    magic: [u8; 4],
    obfuscation: Obfuscation,
    /// File bytes `window_file_offset..window_file_offset + filled`.
    window: Vec<u8>,
    window_file_offset: u64,
    filled: usize,
    /// Where the next magic search starts, as an index into `window`.
    position: usize,
    end_of_file: bool,
    /// The record the file ended inside, once the stream met it.
    cut_off: Option<CutOffRecord>,
}

impl RecordStream<std::fs::File> {
    /// Opens block file `path` for streaming with the default window.
    pub fn open(
        path: &Path,
        magic: [u8; 4],
        obfuscation: Obfuscation,
    ) -> Result<Self, BlockStoreError> {
        let file = std::fs::File::open(path)
            .map_err(|source| BlockStoreError::Io { path: path.to_path_buf(), source })?;
        Ok(RecordStream::new(file, path, magic, obfuscation, READ_WINDOW_BYTES_DEFAULT))
    }
}

impl<R: Read> RecordStream<R> {
    /// Records of `source` (a block file read from its start; `path` names
    /// it in errors) framed with `magic`, read `window_bytes` at a time (the
    /// window grows to hold a whole record when one is larger).
    pub fn new(
        source: R,
        path: &Path,
        magic: [u8; 4],
        obfuscation: Obfuscation,
        window_bytes: usize,
    ) -> Self {
        RecordStream {
            source,
            path: path.to_path_buf(),
            magic,
            obfuscation,
            window: vec![0; window_bytes.max(RECORD_HEADER_BYTES)],
            window_file_offset: 0,
            filled: 0,
            position: 0,
            end_of_file: false,
            cut_off: None,
        }
    }

    /// The next record, `None` at the end of the file (or at a truncated
    /// last record, as in Core).
    pub fn next_record(&mut self) -> Result<Option<OwnedRecord>, BlockStoreError> {
        self.next_record_unless(&AtomicBool::new(false))
    }

    /// [`Self::next_record`], but `None` as soon as `stop` is set, checked
    /// before every read of the file: a search for the magic through a
    /// source with no record in it (`/dev/zero`, `/dev/urandom`, gigabytes
    /// of zeros) stops within one window's read of a shutdown request, as
    /// Core's `LoadExternalBlockFile` checks its interrupt in its loop. The
    /// caller tells a stop from the end of the file by `stop`.
    pub fn next_record_unless(
        &mut self,
        stop: &AtomicBool,
    ) -> Result<Option<OwnedRecord>, BlockStoreError> {
        loop {
            let Some(magic_at) = self.find_magic(stop)? else { return Ok(None) };
            if !self.ensure_available(magic_at, RECORD_HEADER_BYTES, stop)? {
                return Ok(None);
            }
            // `find_magic` may have moved the window: find the magic again.
            let magic_at = self.position;
            let mut length = [0u8; 4];
            length.copy_from_slice(&self.window[magic_at + 4..magic_at + RECORD_HEADER_BYTES]);
            let length = u32::from_le_bytes(length) as usize;
            if !(RECORD_BLOCK_BYTES_MIN..=RECORD_BLOCK_BYTES_MAX).contains(&length) {
                // Not a plausible block: keep searching after this magic.
                self.position = magic_at + 1;
                continue;
            }
            if !self.ensure_available(magic_at, RECORD_HEADER_BYTES + length, stop)? {
                if !stop.load(Ordering::Relaxed) {
                    let present = self.filled - self.position - RECORD_HEADER_BYTES;
                    self.cut_off = Some(CutOffRecord {
                        data_offset: self.window_file_offset
                            + (self.position + RECORD_HEADER_BYTES) as u64,
                        block_bytes: length,
                        bytes_present: present as u64,
                    });
                }
                return Ok(None);
            }
            let start = self.position + RECORD_HEADER_BYTES;
            let record = OwnedRecord {
                data_offset: self.window_file_offset + start as u64,
                bytes: self.window[start..start + length].to_vec(),
            };
            self.position = start + length;
            return Ok(Some(record));
        }
    }

    /// The record the file ended inside (a plausible frame whose block is
    /// cut off), once the stream has ended there.
    pub fn cut_off_record(&self) -> Option<CutOffRecord> {
        self.cut_off
    }

    /// Moves `position` to the next magic (reading on as needed) and
    /// returns its index in the window; `None` when the file has no more.
    fn find_magic(&mut self, stop: &AtomicBool) -> Result<Option<usize>, BlockStoreError> {
        loop {
            let searched = &self.window[self.position..self.filled];
            if let Some(found) = searched.windows(4).position(|window| window == self.magic) {
                self.position += found;
                return Ok(Some(self.position));
            }
            if self.end_of_file {
                return Ok(None);
            }
            // Keep the last three bytes: they may start a magic.
            self.position = self.filled.saturating_sub(3).max(self.position);
            self.compact_and_fill(0, stop)?;
        }
    }

    /// Makes `bytes` bytes from `start` (= `position`) available in the
    /// window; false when the file ends (or `stop` is set) first.
    fn ensure_available(
        &mut self,
        start: usize,
        bytes: usize,
        stop: &AtomicBool,
    ) -> Result<bool, BlockStoreError> {
        debug_assert_eq!(start, self.position);
        if self.filled - start >= bytes {
            return Ok(true);
        }
        self.compact_and_fill(bytes, stop)?;
        Ok(self.filled - self.position >= bytes)
    }

    /// Drops the window's bytes before `position`, grows the window to at
    /// least `bytes_needed`, and reads until it is full or the file ends.
    /// A set `stop` ends the file here: what was read stays readable, and
    /// nothing more is read.
    fn compact_and_fill(
        &mut self,
        bytes_needed: usize,
        stop: &AtomicBool,
    ) -> Result<(), BlockStoreError> {
        self.window.copy_within(self.position..self.filled, 0);
        self.window_file_offset += self.position as u64;
        self.filled -= self.position;
        self.position = 0;
        if self.window.len() < bytes_needed {
            self.window.resize(bytes_needed, 0);
        }
        let first_new = self.filled;
        while self.filled < self.window.len() && !self.end_of_file {
            if stop.load(Ordering::Relaxed) {
                self.end_of_file = true;
                break;
            }
            match self.source.read(&mut self.window[self.filled..]) {
                Ok(0) => self.end_of_file = true,
                Ok(count) => self.filled += count,
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(source) => return Err(BlockStoreError::Io { path: self.path.clone(), source }),
            }
        }
        let new_bytes_offset = self.window_file_offset + first_new as u64;
        self.obfuscation.apply(&mut self.window[first_new..self.filled], new_bytes_offset);
        Ok(())
    }
}

impl<R: Read> Iterator for RecordStream<R> {
    type Item = Result<OwnedRecord, BlockStoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::{encode_record, Records};
    use proptest::prelude::*;

    const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];

    /// A reader that returns at most `chunk` bytes per call.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
            let count = self.chunk.min(buffer.len()).min(self.data.len());
            buffer[..count].copy_from_slice(&self.data[..count]);
            self.data = &self.data[count..];
            Ok(count)
        }
    }

    fn streamed(file: &[u8], key: Obfuscation, window: usize, chunk: usize) -> Vec<OwnedRecord> {
        let mut obfuscated = file.to_vec();
        key.apply(&mut obfuscated, 0);
        let source = Trickle { data: &obfuscated, chunk };
        RecordStream::new(source, Path::new("test"), MAGIC, key, window)
            .collect::<Result<Vec<_>, _>>()
            .unwrap()
    }

    fn whole(file: &[u8]) -> Vec<OwnedRecord> {
        Records::new(file, MAGIC)
            .map(|record| OwnedRecord {
                data_offset: record.data_offset,
                bytes: record.bytes.to_vec(),
            })
            .collect()
    }

    /// A file of records, garbage, bad lengths, stray magics and a possibly
    /// truncated end, built from `parts`.
    fn build_file(parts: &[(u8, usize)], truncate: usize) -> Vec<u8> {
        let mut file = Vec::new();
        for &(kind, size) in parts {
            match kind % 4 {
                0 => encode_record(&mut file, MAGIC, &vec![kind; 80 + size]),
                1 => file.extend(std::iter::repeat_n(kind, size % 13)),
                2 => {
                    file.extend_from_slice(&MAGIC);
                    file.extend_from_slice(&(size as u32 % 80).to_le_bytes());
                }
                _ => file.extend_from_slice(&MAGIC[..1 + size % 3]),
            }
        }
        file.truncate(file.len().saturating_sub(truncate));
        file
    }

    #[test]
    fn matches_whole_file_walk_with_garbage_and_truncation() {
        let file = build_file(&[(0, 20), (1, 5), (2, 9), (4, 300), (3, 1), (8, 0), (0, 7)], 3);
        let expected = whole(&file);
        assert_eq!(expected.len(), 3);
        for window in [8, 9, 64, 100, 4096] {
            for chunk in [1, 7, 4096] {
                let key = Obfuscation::new([1, 2, 3, 4, 5, 6, 7, 8]);
                assert_eq!(streamed(&file, key, window, chunk), expected, "{window} {chunk}");
            }
        }
    }

    #[test]
    fn a_record_larger_than_the_window_is_read_whole() {
        let mut file = Vec::new();
        encode_record(&mut file, MAGIC, &[9u8; 5000]);
        encode_record(&mut file, MAGIC, &[8u8; 100]);
        let records = streamed(&file, Obfuscation::default(), 16, 1000);
        assert_eq!(records, whole(&file));
        assert_eq!(records[0].bytes.len(), 5000);
    }

    #[test]
    fn a_cut_off_last_record_is_reported_and_a_stop_ends_an_endless_source() {
        let mut file = Vec::new();
        encode_record(&mut file, MAGIC, &[7u8; 100]);
        encode_record(&mut file, MAGIC, &[6u8; 300]);
        file.truncate(file.len() - 120);
        let mut stream =
            RecordStream::new(&file[..], Path::new("cut"), MAGIC, Obfuscation::default(), 64);
        assert_eq!(stream.next_record().unwrap().unwrap().bytes, vec![7u8; 100]);
        assert_eq!(stream.cut_off_record(), None);
        assert_eq!(stream.next_record().unwrap(), None);
        let cut = CutOffRecord { data_offset: 116, block_bytes: 300, bytes_present: 180 };
        assert_eq!(stream.cut_off_record(), Some(cut));
        // An endless source of zeros: the stream ends once `stop` is set.
        let stop = AtomicBool::new(true);
        let mut zeros = RecordStream::new(
            std::io::repeat(0),
            Path::new("zero"),
            MAGIC,
            Obfuscation::default(),
            64,
        );
        assert_eq!(zeros.next_record_unless(&stop).unwrap(), None);
        assert_eq!(zeros.cut_off_record(), None);
    }

    #[test]
    fn read_errors_are_reported_with_the_path() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("disk on fire"))
            }
        }
        let mut stream = RecordStream::new(
            Failing,
            Path::new("blk00007.dat"),
            MAGIC,
            Obfuscation::default(),
            64,
        );
        let error = stream.next_record().unwrap_err();
        assert!(error.to_string().contains("blk00007.dat"), "{error}");
    }

    proptest! {
        #[test]
        fn streaming_equals_whole_file_walk(
            parts in proptest::collection::vec((any::<u8>(), 0usize..400), 0..24),
            truncate in 0usize..10,
            window in 8usize..600,
            chunk in 1usize..700,
            key in any::<[u8; 8]>(),
        ) {
            let file = build_file(&parts, truncate);
            prop_assert_eq!(streamed(&file, Obfuscation::new(key), window, chunk), whole(&file));
        }
    }
}
