//! Reading one record at a known position, the way Core's `ReadRawBlock` and
//! `ReadBlockUndo` do: the block index stores the offset of the record's data,
//! just after its magic and length, so the header sits in the 8 bytes before it.
//!
//! Every length read from disk is untrusted: it is checked against the record
//! kind's limit and against the file's real length before anything is
//! allocated, so a corrupt length costs an error, not memory.

use crate::error::BlockStoreError;
use crate::files::{block_file_path, BlockPosition};
use crate::framing::{RECORD_BLOCK_BYTES_MAX, RECORD_HEADER_BYTES};
use crate::obfuscation::Obfuscation;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// An open file with its length, for bounded reads at known offsets.
pub(crate) struct PositionedFile {
    path: PathBuf,
    file: File,
    file_bytes: u64,
}

impl PositionedFile {
    /// Opens `path` for reading.
    pub(crate) fn open(path: PathBuf) -> Result<Self, BlockStoreError> {
        let file = File::open(&path).map_err(|source| io_error(&path, source))?;
        let file_bytes = file.metadata().map_err(|source| io_error(&path, source))?.len();
        Ok(PositionedFile { path, file, file_bytes })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the record header before `position.data_offset`: magic and length.
    pub(crate) fn read_header(
        &mut self,
        position: BlockPosition,
        obfuscation: &Obfuscation,
    ) -> Result<([u8; 4], u32), BlockStoreError> {
        let header_offset = header_offset(position)?;
        let mut header = [0u8; RECORD_HEADER_BYTES];
        self.read_exact_at(header_offset, position.data_offset, &mut header)?;
        obfuscation.apply(&mut header, header_offset);
        let [m0, m1, m2, m3, l0, l1, l2, l3] = header;
        Ok(([m0, m1, m2, m3], u32::from_le_bytes([l0, l1, l2, l3])))
    }

    /// Replaces `buffer` with the `length_bytes` bytes at `data_offset`, de-obfuscated.
    /// Fails with [`BlockStoreError::Truncated`] before allocating when the file is too short.
    pub(crate) fn read_data(
        &mut self,
        data_offset: u64,
        length_bytes: u64,
        obfuscation: &Obfuscation,
        buffer: &mut Vec<u8>,
    ) -> Result<(), BlockStoreError> {
        let end_offset = data_offset.saturating_add(length_bytes);
        self.check_end(data_offset, end_offset)?;
        // Bounded by the file's length (checked above) and the caller's limit.
        let length =
            usize::try_from(length_bytes).map_err(|_| self.truncated(data_offset, end_offset))?;
        buffer.clear();
        buffer.resize(length, 0);
        self.read_exact_at(data_offset, data_offset, buffer)?;
        obfuscation.apply(buffer, data_offset);
        Ok(())
    }

    /// Lets the kernel drop its cached pages of `length_bytes` from
    /// `offset` ([`crate::page_cache`]).
    pub(crate) fn forget(&self, offset: u64, length_bytes: u64) {
        crate::page_cache::forget_pages(&self.file, offset, length_bytes);
    }

    fn read_exact_at(
        &mut self,
        offset: u64,
        data_offset: u64,
        into: &mut [u8],
    ) -> Result<(), BlockStoreError> {
        let end_offset = offset.saturating_add(into.len() as u64);
        self.check_end(data_offset, end_offset)?;
        self.file.seek(SeekFrom::Start(offset)).map_err(|source| io_error(&self.path, source))?;
        self.file.read_exact(into).map_err(|source| io_error(&self.path, source))
    }

    fn check_end(&self, data_offset: u64, end_offset: u64) -> Result<(), BlockStoreError> {
        if end_offset > self.file_bytes {
            return Err(self.truncated(data_offset, end_offset));
        }
        Ok(())
    }

    fn truncated(&self, data_offset: u64, end_offset: u64) -> BlockStoreError {
        BlockStoreError::Truncated {
            path: self.path.clone(),
            data_offset,
            end_offset,
            file_bytes: self.file_bytes,
        }
    }
}

pub(crate) fn io_error(path: &Path, source: std::io::Error) -> BlockStoreError {
    BlockStoreError::Io { path: path.to_path_buf(), source }
}

/// Offset of the header before `position`'s data (Core refuses positions
/// below the header size in `ReadRawBlock` for the same reason).
fn header_offset(position: BlockPosition) -> Result<u64, BlockStoreError> {
    position.data_offset.checked_sub(RECORD_HEADER_BYTES as u64).ok_or(
        BlockStoreError::PositionBeforeHeader {
            file_number: position.file_number,
            data_offset: position.data_offset,
        },
    )
}

/// Reads the block stored at `position` in `blk{file_number}.dat`: checks the
/// magic before it, refuses lengths over Core's 4,000,000-byte
/// `MAX_BLOCK_SERIALIZED_SIZE`, and removes the obfuscation.
pub fn read_block(
    directory: &Path,
    position: BlockPosition,
    magic: [u8; 4],
    obfuscation: &Obfuscation,
) -> Result<Vec<u8>, BlockStoreError> {
    let mut buffer = Vec::new();
    read_block_into(directory, position, magic, obfuscation, &mut buffer)?;
    Ok(buffer)
}

/// [`read_block`] for a caller that reads the block for the last time (an
/// import's read-ahead): its record's pages are then dropped from the page
/// cache (`page_cache`).
pub fn read_block_once(
    directory: &Path,
    position: BlockPosition,
    magic: [u8; 4],
    obfuscation: &Obfuscation,
) -> Result<Vec<u8>, BlockStoreError> {
    let mut buffer = Vec::new();
    let file = read_into(directory, position, magic, obfuscation, &mut buffer)?;
    let header_offset = position.data_offset.saturating_sub(RECORD_HEADER_BYTES as u64);
    file.forget(header_offset, (RECORD_HEADER_BYTES + buffer.len()) as u64);
    Ok(buffer)
}

/// [`read_block`] into a caller's buffer, reusing its allocation; on error the
/// buffer's contents are unspecified.
pub fn read_block_into(
    directory: &Path,
    position: BlockPosition,
    magic: [u8; 4],
    obfuscation: &Obfuscation,
    buffer: &mut Vec<u8>,
) -> Result<(), BlockStoreError> {
    read_into(directory, position, magic, obfuscation, buffer).map(drop)
}

/// [`read_block_into`], returning the file it read.
fn read_into(
    directory: &Path,
    position: BlockPosition,
    magic: [u8; 4],
    obfuscation: &Obfuscation,
    buffer: &mut Vec<u8>,
) -> Result<PositionedFile, BlockStoreError> {
    let mut file = PositionedFile::open(block_file_path(directory, position.file_number))?;
    let (found, length_bytes) = file.read_header(position, obfuscation)?;
    if found != magic {
        return Err(BlockStoreError::BadMagic {
            file_number: position.file_number,
            data_offset: position.data_offset,
            found,
            expected: magic,
        });
    }
    let length_bytes = u64::from(length_bytes);
    if length_bytes > RECORD_BLOCK_BYTES_MAX as u64 {
        return Err(BlockStoreError::RecordLengthOverLimit {
            path: file.path().to_path_buf(),
            data_offset: position.data_offset,
            length_bytes,
            length_bytes_max: RECORD_BLOCK_BYTES_MAX as u64,
        });
    }
    file.read_data(position.data_offset, length_bytes, obfuscation, buffer)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::{BlockFileWriter, BLOCK_FILE_BYTES_MAX};
    use crate::framing::encode_record;

    const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
    const KEY: Obfuscation = Obfuscation::new([0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);

    fn write_file(directory: &Path, plain: &[u8]) {
        let mut bytes = plain.to_vec();
        KEY.apply(&mut bytes, 0);
        std::fs::write(block_file_path(directory, 0), bytes).unwrap();
    }

    /// Blocks `index` repeated `first + index * step` times, for `index` in
    /// `0..count`, appended to a new block file in `directory`; with their
    /// positions.
    fn appended_blocks(
        directory: &Path,
        count: u8,
        first: usize,
        step: usize,
    ) -> (Vec<Vec<u8>>, Vec<BlockPosition>) {
        let mut writer =
            BlockFileWriter::new(directory, MAGIC, KEY, BLOCK_FILE_BYTES_MAX, 0).unwrap();
        let blocks: Vec<Vec<u8>> =
            (0..count).map(|index| vec![index; first + usize::from(index) * step]).collect();
        let positions = blocks.iter().map(|block| writer.append(block).unwrap()).collect();
        writer.sync().unwrap();
        (blocks, positions)
    }

    #[test]
    fn reads_back_what_the_writer_appended_reusing_the_buffer() {
        let directory = tempfile::tempdir().unwrap();
        let (blocks, positions) = appended_blocks(directory.path(), 4, 80, 13);
        let mut buffer = Vec::new();
        for (block, position) in blocks.iter().zip(&positions).rev() {
            read_block_into(directory.path(), *position, MAGIC, &KEY, &mut buffer).unwrap();
            assert_eq!(&buffer, block);
            assert_eq!(&read_block(directory.path(), *position, MAGIC, &KEY).unwrap(), block);
        }
    }

    #[test]
    fn a_block_read_once_is_the_block_and_can_still_be_read_again() {
        let directory = tempfile::tempdir().unwrap();
        // Blocks across page boundaries, so the pages forgotten hold parts
        // of their neighbours.
        let (blocks, positions) = appended_blocks(directory.path(), 6, 3000, 1500);
        for _ in 0..2 {
            for (block, position) in blocks.iter().zip(&positions) {
                assert_eq!(
                    &read_block_once(directory.path(), *position, MAGIC, &KEY).unwrap(),
                    block
                );
                assert_eq!(&read_block(directory.path(), *position, MAGIC, &KEY).unwrap(), block);
            }
        }
        let wrong_magic = read_block_once(directory.path(), positions[1], [0; 4], &KEY);
        assert!(matches!(wrong_magic, Err(BlockStoreError::BadMagic { .. })));
    }

    #[test]
    fn malformed_records_give_typed_errors() {
        let directory = tempfile::tempdir().unwrap();
        let mut plain = Vec::new();
        encode_record(&mut plain, MAGIC, &[7u8; 100]);
        write_file(directory.path(), &plain);
        let at = |data_offset| BlockPosition { file_number: 0, data_offset };
        let read = |position| read_block(directory.path(), position, MAGIC, &KEY);
        assert!(matches!(read(at(8)), Ok(block) if block == [7u8; 100]));
        assert!(matches!(read(at(7)), Err(BlockStoreError::PositionBeforeHeader { .. })));
        assert!(
            matches!(read(at(9)), Err(BlockStoreError::BadMagic { found, .. }) if found != MAGIC)
        );
        assert!(matches!(read(at(200)), Err(BlockStoreError::Truncated { end_offset: 200, .. })));
        let missing = BlockPosition { file_number: 1, data_offset: 8 };
        assert!(matches!(read(missing), Err(BlockStoreError::Io { .. })));

        // A length one byte past the file's end, and one over the block limit.
        write_file(directory.path(), &plain[..plain.len() - 1]);
        assert!(matches!(
            read(at(8)),
            Err(BlockStoreError::Truncated { end_offset: 108, file_bytes: 107, .. })
        ));
        let mut oversized = MAGIC.to_vec();
        oversized.extend_from_slice(&(RECORD_BLOCK_BYTES_MAX as u32 + 1).to_le_bytes());
        oversized.extend_from_slice(&[0u8; 100]);
        write_file(directory.path(), &oversized);
        assert!(matches!(
            read(at(8)),
            Err(BlockStoreError::RecordLengthOverLimit { length_bytes: 4_000_001, .. })
        ));
    }
}
