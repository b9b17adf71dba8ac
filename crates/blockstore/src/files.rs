//! Reading and appending `blk?????.dat` files with obfuscation.

use crate::error::BlockStoreError;
use crate::framing::{encode_record, RECORD_BLOCK_BYTES_MAX, RECORD_HEADER_BYTES};
use crate::obfuscation::{Obfuscation, KEY_BYTES};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Core's MAX_BLOCKFILE_SIZE: a block file never grows past 128 MiB.
pub const BLOCK_FILE_BYTES_MAX: u64 = 0x800_0000;
/// The obfuscation key's file name in a blocks directory.
pub const OBFUSCATION_KEY_FILE: &str = "xor.dat";

const _: () =
    assert!(RECORD_BLOCK_BYTES_MAX as u64 + RECORD_HEADER_BYTES as u64 <= BLOCK_FILE_BYTES_MAX);

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> BlockStoreError + '_ {
    move |source| BlockStoreError::Io { path: path.to_path_buf(), source }
}

/// Path of block file `number` (`blk00042.dat`) in `directory`.
pub fn block_file_path(directory: &Path, number: u32) -> PathBuf {
    directory.join(format!("blk{number:05}.dat"))
}

/// Path of undo file `number` (`rev00042.dat`) in `directory`.
pub fn undo_file_path(directory: &Path, number: u32) -> PathBuf {
    directory.join(format!("rev{number:05}.dat"))
}

/// Removes `blk{number}.dat` and `rev{number}.dat` from `directory` (Core's
/// `UnlinkPrunedFiles`); a file already gone is not an error (a prune that
/// stopped half way is finished by the next start).
pub fn remove_file_pair(directory: &Path, number: u32) -> Result<(), BlockStoreError> {
    for path in [block_file_path(directory, number), undo_file_path(directory, number)] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(&path)(error)),
        }
    }
    Ok(())
}

/// The highest `blk?????.dat` number in `directory` (by its listing: after
/// pruning the numbers have gaps), or `None` when it holds none.
pub fn last_block_file_number(directory: &Path) -> Result<Option<u32>, BlockStoreError> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(directory)(error)),
    };
    let mut last = None;
    for entry in entries {
        let entry = entry.map_err(io_error(directory))?;
        let name = entry.file_name();
        let number = name
            .to_str()
            .and_then(|name| name.strip_prefix("blk"))
            .and_then(|rest| rest.strip_suffix(".dat"))
            .filter(|digits| digits.len() == 5 && digits.bytes().all(|byte| byte.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u32>().ok());
        if let Some(number) = number {
            last = last.max(Some(number));
        }
    }
    Ok(last)
}

/// Reads `xor.dat` from a blocks directory; a missing file means no obfuscation
/// (blocks directories written before Core v28).
pub fn read_obfuscation_key(directory: &Path) -> Result<Obfuscation, BlockStoreError> {
    let path = directory.join(OBFUSCATION_KEY_FILE);
    let mut file = match File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Obfuscation::default())
        }
        Err(error) => return Err(io_error(&path)(error)),
    };
    let length = file.metadata().map_err(io_error(&path))?.len();
    if length != KEY_BYTES as u64 {
        return Err(BlockStoreError::BadObfuscationKey { path, length });
    }
    let mut key = [0u8; KEY_BYTES];
    file.read_exact(&mut key).map_err(io_error(&path))?;
    Ok(Obfuscation::new(key))
}

/// Writes `xor.dat` into a blocks directory.
pub fn write_obfuscation_key(directory: &Path, key: Obfuscation) -> Result<(), BlockStoreError> {
    let path = directory.join(OBFUSCATION_KEY_FILE);
    std::fs::write(&path, key.key()).map_err(io_error(&path))
}

/// Reads a whole block file and removes its obfuscation. Files over
/// [`BLOCK_FILE_BYTES_MAX`] are refused rather than read into memory.
pub fn read_block_file(path: &Path, obfuscation: &Obfuscation) -> Result<Vec<u8>, BlockStoreError> {
    let mut file = File::open(path).map_err(io_error(path))?;
    let length = file.metadata().map_err(io_error(path))?.len();
    if length > BLOCK_FILE_BYTES_MAX {
        return Err(BlockStoreError::FileTooLarge {
            path: path.to_path_buf(),
            length,
            file_bytes_max: BLOCK_FILE_BYTES_MAX,
        });
    }
    let mut data = Vec::with_capacity(length as usize);
    file.read_to_end(&mut data).map_err(io_error(path))?;
    obfuscation.apply(&mut data, 0);
    Ok(data)
}

/// Where an appended block (or undo record) went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockPosition {
    /// The `blk` file number.
    pub file_number: u32,
    /// Offset of the block's first byte (after magic and length).
    pub data_offset: u64,
}

/// Appends framed, obfuscated blocks to numbered block files, starting a new file
/// before one would pass `file_bytes_max`.
#[derive(Debug)]
pub struct BlockFileWriter {
    directory: PathBuf,
    magic: [u8; 4],
    obfuscation: Obfuscation,
    file_bytes_max: u64,
    file_number: u32,
    file_bytes: u64,
    file: Option<File>,
    scratch: Vec<u8>,
}

impl BlockFileWriter {
    /// A writer that appends to `blk{first_file:05}.dat` in `directory`, continuing
    /// after whatever that file already holds.
    pub fn new(
        directory: &Path,
        magic: [u8; 4],
        obfuscation: Obfuscation,
        file_bytes_max: u64,
        first_file: u32,
    ) -> Result<Self, BlockStoreError> {
        let path = block_file_path(directory, first_file);
        let file_bytes = match std::fs::metadata(&path) {
            Ok(metadata) => metadata.len(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => 0,
            Err(error) => return Err(io_error(&path)(error)),
        };
        Ok(BlockFileWriter {
            directory: directory.to_path_buf(),
            magic,
            obfuscation,
            file_bytes_max: file_bytes_max.min(BLOCK_FILE_BYTES_MAX),
            file_number: first_file,
            file_bytes,
            file: None,
            scratch: Vec::new(),
        })
    }

    /// Appends one block and returns where it was written. A block larger
    /// than a file's limit (only possible with a limit below
    /// [`BLOCK_FILE_BYTES_MAX`], Core's `-fastprune`) gets an empty file of
    /// its own, as Core raises the limit for it.
    pub fn append(&mut self, block: &[u8]) -> Result<BlockPosition, BlockStoreError> {
        let record_bytes = (RECORD_HEADER_BYTES + block.len()) as u64;
        if record_bytes > BLOCK_FILE_BYTES_MAX {
            return Err(BlockStoreError::RecordTooLarge {
                length: block.len(),
                file_bytes_max: BLOCK_FILE_BYTES_MAX,
            });
        }
        // Move on while the current file cannot take the record; a later file
        // may already hold blocks (an importer appending to a used directory).
        loop {
            if self.file.is_none() {
                self.open_current()?;
            }
            let fits = self.file_bytes + record_bytes <= self.file_bytes_max;
            if fits || self.file_bytes == 0 {
                break;
            }
            self.sync()?;
            self.file = None;
            self.file_number =
                self.file_number.checked_add(1).ok_or(BlockStoreError::FileNumbersExhausted)?;
        }
        let path = block_file_path(&self.directory, self.file_number);
        self.scratch.clear();
        encode_record(&mut self.scratch, self.magic, block);
        self.obfuscation.apply(&mut self.scratch, self.file_bytes);
        if let Some(file) = self.file.as_mut() {
            file.write_all(&self.scratch).map_err(io_error(&path))?;
        }
        let position = BlockPosition {
            file_number: self.file_number,
            data_offset: self.file_bytes + RECORD_HEADER_BYTES as u64,
        };
        self.file_bytes += record_bytes;
        Ok(position)
    }

    /// Opens the current file for appending and learns its length.
    fn open_current(&mut self) -> Result<(), BlockStoreError> {
        let path = block_file_path(&self.directory, self.file_number);
        let file =
            OpenOptions::new().create(true).append(true).open(&path).map_err(io_error(&path))?;
        self.file_bytes = file.metadata().map_err(io_error(&path))?.len();
        self.file = Some(file);
        Ok(())
    }

    /// Makes everything appended so far durable.
    pub fn sync(&mut self) -> Result<(), BlockStoreError> {
        if let Some(file) = self.file.as_mut() {
            let path = block_file_path(&self.directory, self.file_number);
            file.sync_data().map_err(io_error(&path))?;
        }
        Ok(())
    }

    /// The file currently appended to.
    pub fn file_number(&self) -> u32 {
        self.file_number
    }

    /// Bytes the current file holds, including what this writer appended.
    pub fn file_bytes(&self) -> u64 {
        self.file_bytes
    }
}
