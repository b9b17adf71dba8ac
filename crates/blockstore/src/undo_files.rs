//! Undo data in `rev?????.dat` files, Bitcoin Core's layout.
//!
//! Each record is `magic (4) | u32 LE length | payload | checksum (32)` where
//! the payload is a serialised `CBlockUndo` and the checksum is
//! `SHA256d(previous block hash || payload)` (Core's `WriteBlockUndo` hashes
//! `pprev->GetBlockHash()` then the undo data). The whole file is XORed with the
//! blocks directory key at each byte's file offset, like block files. The undo
//! data of a block stored in `blk N` goes into `rev N`, appended in the order
//! blocks are connected; the block index stores the payload's offset.
//!
//! Napkin math: a mainnet block spends ~5,000 coins of ~30 bytes, so its undo
//! record is ~150 KB; at ~1,000 blocks/s of IBD that is ~150 MB/s of appends,
//! within a disk's sequential bandwidth, and one SHA256d over the payload
//! (~0.5 ms at 300 MB/s without SHA-NI) per block.

use crate::error::BlockStoreError;
use crate::files::{undo_file_path, BlockPosition};
use crate::framing::RECORD_HEADER_BYTES;
use crate::obfuscation::Obfuscation;
use crate::reader::{io_error, PositionedFile};
use ibex_primitives::hash::sha256d_parts;
use ibex_primitives::limits::{BLOCK_WEIGHT_MAX, SCRIPT_BYTES_MAX, WITNESS_SCALE_FACTOR};
use ibex_primitives::BlockHash;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Bytes of the checksum after each undo payload.
pub const UNDO_CHECKSUM_BYTES: usize = 32;
/// Bytes a record adds around its payload (Core's `UNDO_DATA_DISK_OVERHEAD`).
pub const UNDO_RECORD_OVERHEAD_BYTES: usize = RECORD_HEADER_BYTES + UNDO_CHECKSUM_BYTES;

/// Bytes of the smallest input: outpoint (36), script length (1), sequence (4).
const INPUT_BYTES_MIN: usize = 36 + 1 + 4;
/// Most inputs a block can have: the weight limit over the weight of the
/// smallest input (41 bytes, all non-witness: 164 weight units).
const BLOCK_INPUTS_MAX: u64 = (BLOCK_WEIGHT_MAX / (INPUT_BYTES_MIN * WITNESS_SCALE_FACTOR)) as u64;
/// Largest spent coin in undo form: height code (5), dummy version (1),
/// amount (10), script length (3) and a script of [`SCRIPT_BYTES_MAX`] bytes
/// (longer scripts are unspendable, never spent).
const UNDO_COIN_BYTES_MAX: u64 = 5 + 1 + 10 + 3 + SCRIPT_BYTES_MAX as u64;
/// Largest undo payload a valid block can produce: every input spends a
/// maximal coin, plus a 3-byte coin count per transaction and a 9-byte
/// transaction count (about 244 MB; real blocks stay under a few MB).
/// Lengths above it are corrupt and refused before anything is allocated.
pub const UNDO_PAYLOAD_BYTES_MAX: u64 = BLOCK_INPUTS_MAX * (UNDO_COIN_BYTES_MAX + 3) + 9;

const _: () = assert!(UNDO_PAYLOAD_BYTES_MAX <= u32::MAX as u64);

/// Files an [`UndoFileWriter`] keeps open at once (blocks are connected in
/// height order, so appends touch one or two files at a time).
const OPEN_FILES_MAX: usize = 4;

/// Core's undo checksum: SHA256d of the previous block's hash (internal byte
/// order) followed by the payload.
pub fn undo_checksum(previous_block_hash: &BlockHash, payload: &[u8]) -> [u8; 32] {
    sha256d_parts(&[previous_block_hash.as_bytes(), payload])
}

/// Reads the undo payload at `position` in `rev{file_number}.dat` and verifies
/// its checksum against `previous_block_hash`. Lengths over
/// [`UNDO_PAYLOAD_BYTES_MAX`] or past the file's end are refused.
pub fn read_undo(
    directory: &Path,
    position: BlockPosition,
    obfuscation: &Obfuscation,
    previous_block_hash: &BlockHash,
) -> Result<Vec<u8>, BlockStoreError> {
    let mut buffer = Vec::new();
    read_undo_into(directory, position, obfuscation, previous_block_hash, &mut buffer)?;
    Ok(buffer)
}

/// [`read_undo`] into a caller's buffer, reusing its allocation; on error the
/// buffer's contents are unspecified.
pub fn read_undo_into(
    directory: &Path,
    position: BlockPosition,
    obfuscation: &Obfuscation,
    previous_block_hash: &BlockHash,
    buffer: &mut Vec<u8>,
) -> Result<(), BlockStoreError> {
    let mut file = PositionedFile::open(undo_file_path(directory, position.file_number))?;
    // Core's ReadBlockUndo does not check the magic; neither do we.
    let (_magic, length_bytes) = file.read_header(position, obfuscation)?;
    let length_bytes = u64::from(length_bytes);
    if length_bytes > UNDO_PAYLOAD_BYTES_MAX {
        return Err(BlockStoreError::RecordLengthOverLimit {
            path: file.path().to_path_buf(),
            data_offset: position.data_offset,
            length_bytes,
            length_bytes_max: UNDO_PAYLOAD_BYTES_MAX,
        });
    }
    let record_bytes = length_bytes + UNDO_CHECKSUM_BYTES as u64;
    file.read_data(position.data_offset, record_bytes, obfuscation, buffer)?;
    let payload_bytes = buffer.len() - UNDO_CHECKSUM_BYTES;
    let (payload, checksum) = buffer.split_at(payload_bytes);
    if undo_checksum(previous_block_hash, payload)[..] != checksum[..] {
        return Err(BlockStoreError::BadUndoChecksum {
            file_number: position.file_number,
            data_offset: position.data_offset,
        });
    }
    buffer.truncate(payload_bytes);
    Ok(())
}

/// One undo record found in a de-obfuscated `rev` file image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoRecord<'a> {
    /// Offset of the payload's first byte (the position Core's block index stores).
    pub data_offset: u64,
    /// The serialised block undo data.
    pub payload: &'a [u8],
    /// The stored checksum (see [`undo_checksum`]).
    pub checksum: &'a [u8; UNDO_CHECKSUM_BYTES],
}

/// Iterator over the records of a de-obfuscated `rev` file image. Undo records
/// are written back to back, so the walk ends at the first bytes that are not
/// a complete record with the magic (Core's zero-filled pre-allocated tail).
#[derive(Debug, Clone)]
pub struct UndoRecords<'a> {
    data: &'a [u8],
    position: usize,
    magic: [u8; 4],
}

impl<'a> UndoRecords<'a> {
    /// Records in `data` (a whole `rev` file, already de-obfuscated) framed with `magic`.
    pub fn new(data: &'a [u8], magic: [u8; 4]) -> Self {
        UndoRecords { data, position: 0, magic }
    }
}

impl<'a> Iterator for UndoRecords<'a> {
    type Item = UndoRecord<'a>;

    fn next(&mut self) -> Option<UndoRecord<'a>> {
        let header =
            self.data.get(self.position..self.position.checked_add(RECORD_HEADER_BYTES)?)?;
        let (magic, length) = header.split_at(4);
        if magic != self.magic {
            return None;
        }
        let length = u32::from_le_bytes(length.try_into().ok()?) as usize;
        let data_offset = self.position + RECORD_HEADER_BYTES;
        let checksum_offset = data_offset.checked_add(length)?;
        let payload = self.data.get(data_offset..checksum_offset)?;
        let end = checksum_offset + UNDO_CHECKSUM_BYTES;
        let checksum = self.data.get(checksum_offset..end)?.try_into().ok()?;
        self.position = end;
        Some(UndoRecord { data_offset: data_offset as u64, payload, checksum })
    }
}

#[derive(Debug)]
struct OpenUndoFile {
    file_number: u32,
    file: File,
    file_bytes: u64,
    unsynced: bool,
}

/// Appends undo records to `rev?????.dat` files, continuing after whatever each
/// file already holds. Keeps at most a few files open; a file closed to make
/// room is synced first, so [`UndoFileWriter::sync`] covers every write.
#[derive(Debug)]
pub struct UndoFileWriter {
    directory: PathBuf,
    magic: [u8; 4],
    obfuscation: Obfuscation,
    open_files: Vec<OpenUndoFile>,
    scratch: Vec<u8>,
}

impl UndoFileWriter {
    /// A writer for the `rev` files of `directory`, framing with `magic` and
    /// obfuscating with the blocks directory's key.
    pub fn new(directory: &Path, magic: [u8; 4], obfuscation: Obfuscation) -> Self {
        UndoFileWriter {
            directory: directory.to_path_buf(),
            magic,
            obfuscation,
            open_files: Vec::with_capacity(OPEN_FILES_MAX),
            scratch: Vec::new(),
        }
    }

    /// Appends `payload` (a serialised block undo) with its checksum at the end
    /// of `rev{file_number}.dat`; returns the payload's position.
    pub fn append(
        &mut self,
        file_number: u32,
        previous_block_hash: &BlockHash,
        payload: &[u8],
    ) -> Result<BlockPosition, BlockStoreError> {
        let index = self.open(file_number)?;
        let open = &mut self.open_files[index];
        let path = undo_file_path(&self.directory, file_number);
        let data_offset = open.file_bytes + RECORD_HEADER_BYTES as u64;
        let length_bytes = payload.len() as u64;
        if length_bytes > UNDO_PAYLOAD_BYTES_MAX {
            return Err(BlockStoreError::RecordLengthOverLimit {
                path,
                data_offset,
                length_bytes,
                length_bytes_max: UNDO_PAYLOAD_BYTES_MAX,
            });
        }
        self.scratch.clear();
        self.scratch.reserve(payload.len() + UNDO_RECORD_OVERHEAD_BYTES);
        self.scratch.extend_from_slice(&self.magic);
        // At most UNDO_PAYLOAD_BYTES_MAX, which fits in 32 bits (asserted above).
        self.scratch.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        self.scratch.extend_from_slice(payload);
        self.scratch.extend_from_slice(&undo_checksum(previous_block_hash, payload));
        self.obfuscation.apply(&mut self.scratch, open.file_bytes);
        if let Err(source) = open.file.write_all(&self.scratch) {
            // A partial write leaves the length unknown: reopen to learn it.
            self.close(index)?;
            return Err(io_error(&path, source));
        }
        open.file_bytes += self.scratch.len() as u64;
        open.unsynced = true;
        Ok(BlockPosition { file_number, data_offset })
    }

    /// Makes every record appended and every truncation since the last sync durable.
    pub fn sync(&mut self) -> Result<(), BlockStoreError> {
        for open in &mut self.open_files {
            sync_file(&self.directory, open)?;
        }
        Ok(())
    }

    /// Cuts `rev{file_number}.dat` down to `length_bytes` so later appends
    /// overwrite what followed (a reindex rewrites undo data from the start).
    /// A missing file counts as empty; lengthening a file is refused.
    pub fn truncate(&mut self, file_number: u32, length_bytes: u64) -> Result<(), BlockStoreError> {
        let path = undo_file_path(&self.directory, file_number);
        let is_open = self.open_files.iter().any(|open| open.file_number == file_number);
        if !is_open && !path.exists() {
            return match length_bytes {
                0 => Ok(()),
                _ => Err(BlockStoreError::TruncateBeyondEnd { path, length_bytes, file_bytes: 0 }),
            };
        }
        let index = self.open(file_number)?;
        let open = &mut self.open_files[index];
        if length_bytes > open.file_bytes {
            return Err(BlockStoreError::TruncateBeyondEnd {
                path,
                length_bytes,
                file_bytes: open.file_bytes,
            });
        }
        open.file.set_len(length_bytes).map_err(|source| io_error(&path, source))?;
        open.file_bytes = length_bytes;
        open.unsynced = true;
        Ok(())
    }

    /// Syncs and closes `rev{file_number}.dat` if it is open (before the
    /// file is removed: an open descriptor would keep its space in use).
    pub fn close_file(&mut self, file_number: u32) -> Result<(), BlockStoreError> {
        match self.open_files.iter().position(|open| open.file_number == file_number) {
            Some(index) => self.close(index),
            None => Ok(()),
        }
    }

    /// Index of `file_number` in the open files, opening it (and closing the
    /// least recently opened file when full) if needed.
    fn open(&mut self, file_number: u32) -> Result<usize, BlockStoreError> {
        if let Some(index) = self.open_files.iter().position(|open| open.file_number == file_number)
        {
            return Ok(index);
        }
        if self.open_files.len() >= OPEN_FILES_MAX {
            self.close(0)?;
        }
        let path = undo_file_path(&self.directory, file_number);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| io_error(&path, source))?;
        let file_bytes = file.metadata().map_err(|source| io_error(&path, source))?.len();
        self.open_files.push(OpenUndoFile { file_number, file, file_bytes, unsynced: false });
        Ok(self.open_files.len() - 1)
    }

    /// Syncs and closes the open file at `index`.
    fn close(&mut self, index: usize) -> Result<(), BlockStoreError> {
        let mut open = self.open_files.remove(index);
        sync_file(&self.directory, &mut open)
    }
}

fn sync_file(directory: &Path, open: &mut OpenUndoFile) -> Result<(), BlockStoreError> {
    if open.unsynced {
        let path = undo_file_path(directory, open.file_number);
        open.file.sync_data().map_err(|source| io_error(&path, source))?;
        open.unsynced = false;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::read_block_file;

    const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
    const KEY: Obfuscation = Obfuscation::new([0xf4, 0x99, 0x48, 0xe6, 0x5a, 0xd8, 0xcc, 0x73]);

    fn hash(byte: u8) -> BlockHash {
        BlockHash([byte; 32])
    }

    fn payload(index: u8) -> Vec<u8> {
        (0..u32::from(index) * 7 + 1).map(|byte| byte as u8 ^ index).collect()
    }

    #[test]
    fn appended_records_read_back_and_walk_in_order() {
        let directory = tempfile::tempdir().unwrap();
        let mut writer = UndoFileWriter::new(directory.path(), MAGIC, KEY);
        let positions: Vec<_> = (0..6u8)
            .map(|index| writer.append(0, &hash(index), &payload(index)).unwrap())
            .collect();
        writer.sync().unwrap();
        assert_eq!(positions[0], BlockPosition { file_number: 0, data_offset: 8 });
        for (index, position) in (0..6u8).zip(&positions) {
            let read = read_undo(directory.path(), *position, &KEY, &hash(index)).unwrap();
            assert_eq!(read, payload(index));
        }
        let image = read_block_file(&undo_file_path(directory.path(), 0), &KEY).unwrap();
        let records: Vec<_> = UndoRecords::new(&image, MAGIC).collect();
        assert_eq!(records.len(), 6);
        for (index, record) in (0..6u8).zip(&records) {
            assert_eq!(record.data_offset, positions[usize::from(index)].data_offset);
            assert_eq!(record.payload, &payload(index)[..]);
            assert_eq!(record.checksum, &undo_checksum(&hash(index), record.payload));
        }
        let last = records[5];
        let end = last.data_offset as usize + last.payload.len() + UNDO_CHECKSUM_BYTES;
        assert_eq!(end, image.len());
    }

    #[test]
    fn checksum_covers_previous_hash_and_every_payload_byte() {
        let directory = tempfile::tempdir().unwrap();
        let mut writer = UndoFileWriter::new(directory.path(), MAGIC, KEY);
        let position = writer.append(3, &hash(1), &payload(9)).unwrap();
        writer.sync().unwrap();
        let bad_checksum = |result| {
            matches!(
                result,
                Err(BlockStoreError::BadUndoChecksum { file_number: 3, data_offset: 8 })
            )
        };
        assert!(bad_checksum(read_undo(directory.path(), position, &KEY, &hash(2))));
        let path = undo_file_path(directory.path(), 3);
        let original = std::fs::read(&path).unwrap();
        for flipped_at in [8, 30, original.len() - 1] {
            let mut corrupt = original.clone();
            corrupt[flipped_at] ^= 0x01;
            std::fs::write(&path, &corrupt).unwrap();
            assert!(bad_checksum(read_undo(directory.path(), position, &KEY, &hash(1))));
        }
        // A wrong key garbles the length: refused as truncated or over the limit.
        std::fs::write(&path, &original).unwrap();
        let other_key = Obfuscation::new([1; 8]);
        assert!(read_undo(directory.path(), position, &other_key, &hash(1)).is_err());
    }

    #[test]
    fn bad_lengths_and_positions_are_typed_errors() {
        let directory = tempfile::tempdir().unwrap();
        let path = undo_file_path(directory.path(), 0);
        let at = |data_offset| BlockPosition { file_number: 0, data_offset };
        let mut record = MAGIC.to_vec();
        record.extend_from_slice(&(UNDO_PAYLOAD_BYTES_MAX as u32 + 1).to_le_bytes());
        record.extend_from_slice(&[0u8; 40]);
        KEY.apply(&mut record, 0);
        std::fs::write(&path, &record).unwrap();
        let read = |position| read_undo(directory.path(), position, &KEY, &hash(0));
        assert!(matches!(read(at(8)), Err(BlockStoreError::RecordLengthOverLimit { .. })));
        assert!(matches!(read(at(4)), Err(BlockStoreError::PositionBeforeHeader { .. })));

        let mut writer = UndoFileWriter::new(directory.path(), MAGIC, KEY);
        writer.truncate(0, 0).unwrap();
        writer.append(0, &hash(0), &payload(4)).unwrap();
        writer.sync().unwrap();
        let full = std::fs::metadata(&path).unwrap().len();
        writer.truncate(0, full - 1).unwrap();
        assert!(matches!(
            read(at(8)),
            Err(BlockStoreError::Truncated { end_offset, file_bytes, .. })
                if end_offset == full && file_bytes == full - 1
        ));
        assert!(matches!(writer.truncate(0, full), Err(BlockStoreError::TruncateBeyondEnd { .. })));
        assert!(matches!(writer.truncate(7, 1), Err(BlockStoreError::TruncateBeyondEnd { .. })));
        writer.truncate(7, 0).unwrap();
        assert!(!undo_file_path(directory.path(), 7).exists());
    }

    #[test]
    fn truncation_and_reopening_continue_at_the_right_offset() {
        let directory = tempfile::tempdir().unwrap();
        let mut writer = UndoFileWriter::new(directory.path(), MAGIC, KEY);
        // More files than stay open: each is closed (and synced) in turn.
        for file_number in 0..(OPEN_FILES_MAX as u32 + 2) {
            writer.append(file_number, &hash(0), &payload(1)).unwrap();
        }
        let second = writer.append(0, &hash(2), &payload(2)).unwrap();
        assert_eq!(second.data_offset, (8 + payload(1).len() + UNDO_RECORD_OVERHEAD_BYTES) as u64);
        writer.truncate(0, 0).unwrap();
        let rewritten = writer.append(0, &hash(3), &payload(3)).unwrap();
        writer.sync().unwrap();
        assert_eq!(rewritten.data_offset, 8);
        assert_eq!(read_undo(directory.path(), rewritten, &KEY, &hash(3)).unwrap(), payload(3));

        // A new writer continues after the existing records.
        let mut reopened = UndoFileWriter::new(directory.path(), MAGIC, KEY);
        let next = reopened.append(0, &hash(4), &payload(4)).unwrap();
        reopened.sync().unwrap();
        assert_eq!(next.data_offset, (payload(3).len() + UNDO_RECORD_OVERHEAD_BYTES + 8) as u64);
        assert_eq!(read_undo(directory.path(), next, &KEY, &hash(4)).unwrap(), payload(4));
        assert_eq!(read_undo(directory.path(), rewritten, &KEY, &hash(3)).unwrap(), payload(3));
    }
}
