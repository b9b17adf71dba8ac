//! The blocks directory: `blk?????.dat` through the block store's writer
//! (regtest magic, Core framing, 128 MiB files, XOR obfuscation), `xor.dat`
//! and `manifest.json`.

use std::path::{Path, PathBuf};

use ibex_blockstore::files::{block_file_path, write_obfuscation_key, BLOCK_FILE_BYTES_MAX};
use ibex_blockstore::framing::RECORD_HEADER_BYTES;
use ibex_blockstore::{BlockFileWriter, Obfuscation};

use crate::error::GeneratorError;

/// Name of the manifest file.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Writes blocks in order, counting bytes.
#[derive(Debug)]
pub struct ChainWriter {
    writer: BlockFileWriter,
    /// Bytes written to block files, framing included.
    pub file_bytes: u64,
    /// Records written.
    pub records: u64,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> GeneratorError + '_ {
    move |source| GeneratorError::Io { path: path.to_path_buf(), source }
}

impl ChainWriter {
    /// Creates `directory` (refusing one that already holds block files), and
    /// writes `xor.dat` with `key`.
    pub fn create(
        directory: &Path,
        magic: [u8; 4],
        key: [u8; 8],
    ) -> Result<ChainWriter, GeneratorError> {
        std::fs::create_dir_all(directory).map_err(io_error(directory))?;
        let first = block_file_path(directory, 0);
        if first.exists() {
            return Err(GeneratorError::InvalidOption(
                "output directory already holds blk00000.dat",
            ));
        }
        let obfuscation = Obfuscation::new(key);
        write_obfuscation_key(directory, obfuscation)?;
        let writer = BlockFileWriter::new(directory, magic, obfuscation, BLOCK_FILE_BYTES_MAX, 0)?;
        Ok(ChainWriter { writer, file_bytes: 0, records: 0 })
    }

    /// Appends one block.
    pub fn append(&mut self, block: &[u8]) -> Result<(), GeneratorError> {
        self.writer.append(block)?;
        self.file_bytes += (RECORD_HEADER_BYTES + block.len()) as u64;
        self.records += 1;
        Ok(())
    }

    /// Flushes to disk; returns the number of block files.
    pub fn finish(mut self) -> Result<u32, GeneratorError> {
        self.writer.sync()?;
        Ok(self.writer.file_number() + 1)
    }
}

/// Writes `manifest.json` in `directory`.
pub fn write_manifest(directory: &Path, text: &str) -> Result<PathBuf, GeneratorError> {
    let path = directory.join(MANIFEST_FILE);
    std::fs::write(&path, text).map_err(io_error(&path))?;
    Ok(path)
}
