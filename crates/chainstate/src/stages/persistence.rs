//! Persistence, the stage that owns what is on disk beside the coins: the
//! block files (`blk?????.dat`), the undo files (`rev?????.dat`), their
//! obfuscation key and the block index database (`blocks/index`). Every
//! chainstate shares them; each keeps its own coins flush schedule
//! (`engine::coins_chain::FlushSchedule`).
//!
//! It touches no coins and decides nothing: the engine tells it to append a
//! block, write a block's undo data once its scripts passed, read a block or
//! undo record back, and make files and index durable before a coins flush
//! (Core's order, see [`crate::engine::flush`]).

use std::path::{Path, PathBuf};

use ibex_blockstore::{
    block_file_path, read_block, read_obfuscation_key, read_undo, write_obfuscation_key,
    BlockFileWriter, BlockPosition, Obfuscation, UndoFileWriter, BLOCK_FILE_BYTES_MAX,
};
use ibex_primitives::{BlockBuffers, BlockHash};

use crate::block_read_ahead::BlockFiles;
use crate::error::{ChainstateError, DatabaseKind};
use crate::index::store::IndexStore;
use crate::index::{BlockIndex, BlockIndexEntry};
use crate::prepared::PreparedBlock;
use crate::undo::BlockUndo;

/// The block index directory inside the blocks directory (as Core's).
pub const INDEX_DIRECTORY: &str = "index";

/// Block files, undo files and the block index database.
pub(crate) struct Persistence {
    blocks_directory: PathBuf,
    magic: [u8; 4],
    obfuscation: Obfuscation,
    store: IndexStore,
    block_writer: BlockFileWriter,
    undo_writer: UndoFileWriter,
    /// Reused for every block's serialised undo data.
    undo_buffer: Vec<u8>,
}

impl Persistence {
    /// Opens the blocks directory (creating it and its obfuscation key when
    /// new) and loads the block index.
    pub(crate) fn open(
        blocks_directory: &Path,
        magic: [u8; 4],
    ) -> Result<(Persistence, BlockIndex), ChainstateError> {
        create_directory(blocks_directory)?;
        let obfuscation = obfuscation_for(blocks_directory)?;
        let index_path = blocks_directory.join(INDEX_DIRECTORY);
        let store = IndexStore::open(&index_path)
            .map_err(opening(DatabaseKind::BlockIndex, &index_path))?;
        let index = store.load().map_err(opening(DatabaseKind::BlockIndex, &index_path))?;
        let block_writer = BlockFileWriter::new(
            blocks_directory,
            magic,
            obfuscation,
            BLOCK_FILE_BYTES_MAX,
            last_block_file(blocks_directory),
        )?;
        let undo_writer = UndoFileWriter::new(blocks_directory, magic, obfuscation);
        let persistence = Persistence {
            blocks_directory: blocks_directory.to_path_buf(),
            magic,
            obfuscation,
            store,
            block_writer,
            undo_writer,
            undo_buffer: Vec::new(),
        };
        Ok((persistence, index))
    }

    /// The blocks directory.
    pub(crate) fn blocks_directory(&self) -> &Path {
        &self.blocks_directory
    }

    /// The blocks directory's obfuscation key.
    pub(crate) fn obfuscation(&self) -> &Obfuscation {
        &self.obfuscation
    }

    /// What a reading thread needs to read blocks on its own.
    pub(crate) fn block_files(&self) -> BlockFiles {
        BlockFiles {
            directory: self.blocks_directory.clone(),
            magic: self.magic,
            obfuscation: self.obfuscation,
        }
    }

    /// Appends a block to the block files.
    pub(crate) fn append_block(&mut self, bytes: &[u8]) -> Result<BlockPosition, ChainstateError> {
        Ok(self.block_writer.append(bytes)?)
    }

    /// Writes `undo` for the block `entry` to the undo file beside its block
    /// file and returns where.
    pub(crate) fn append_undo(
        &mut self,
        entry: &BlockIndexEntry,
        undo: &BlockUndo,
    ) -> Result<BlockPosition, ChainstateError> {
        let hash = entry.hash;
        let file_number =
            entry.block_position.ok_or(ChainstateError::MissingBlockData { hash })?.file_number;
        self.undo_buffer.clear();
        undo.encode_into(&mut self.undo_buffer);
        let previous = &entry.header.previous_block_hash;
        Ok(self.undo_writer.append(file_number, previous, &self.undo_buffer)?)
    }

    /// Reads back and parses the stored block `entry`; the file must hold
    /// the block the index names there.
    pub(crate) fn read_block(
        &self,
        entry: &BlockIndexEntry,
    ) -> Result<PreparedBlock, ChainstateError> {
        let hash = entry.hash;
        let position = entry.block_position.ok_or(ChainstateError::MissingBlockData { hash })?;
        self.read_block_at(position, hash)
    }

    /// Reads back and parses the block `hash` stored at `position`.
    pub(crate) fn read_block_at(
        &self,
        position: BlockPosition,
        hash: BlockHash,
    ) -> Result<PreparedBlock, ChainstateError> {
        let bytes = read_block(&self.blocks_directory, position, self.magic, &self.obfuscation)?;
        let mut buffers = BlockBuffers::default();
        let block = PreparedBlock::accepted(bytes, position, &mut buffers)
            .map_err(|error| ChainstateError::CorruptBlock { hash, reason: error.reason })?;
        if block.hash() != hash {
            return Err(ChainstateError::WrongBlockInFile { expected: hash, found: block.hash() });
        }
        Ok(block)
    }

    /// Reads back and decodes the undo data of the block `entry`.
    pub(crate) fn read_undo(&self, entry: &BlockIndexEntry) -> Result<BlockUndo, ChainstateError> {
        let hash = entry.hash;
        let position = entry.undo_position.ok_or(ChainstateError::MissingBlockData { hash })?;
        let payload = read_undo(
            &self.blocks_directory,
            position,
            &self.obfuscation,
            &entry.header.previous_block_hash,
        )?;
        BlockUndo::decode(&payload).map_err(|reason| ChainstateError::CorruptUndo { hash, reason })
    }

    /// Syncs the block and undo files and writes the changed index
    /// records: everything a coins flush may refer to. Returns how many
    /// records were written.
    pub(crate) fn write_index(&mut self, index: &mut BlockIndex) -> Result<usize, ChainstateError> {
        self.block_writer.sync()?;
        self.undo_writer.sync()?;
        self.store.write_dirty(index)
    }
}

/// The obfuscation key of `directory`: `xor.dat` if present; none for a
/// directory that already has block files without it (Core before v28);
/// else a new random key, written to `xor.dat` (Core's default since v28).
fn obfuscation_for(directory: &Path) -> Result<Obfuscation, ChainstateError> {
    if directory.join("xor.dat").exists() || block_file_path(directory, 0).exists() {
        return Ok(read_obfuscation_key(directory)?);
    }
    let mut key = [0u8; 8];
    // A zero key only weakens obfuscation (which is against antivirus
    // false positives, not attackers), so a failing RNG is not fatal.
    if getrandom::fill(&mut key).is_err() {
        key = [0; 8];
    }
    let obfuscation = Obfuscation::new(key);
    write_obfuscation_key(directory, obfuscation)?;
    Ok(obfuscation)
}

/// The highest `blk` file number present (0 if none).
fn last_block_file(directory: &Path) -> u32 {
    let mut number = 0;
    while block_file_path(directory, number + 1).exists() {
        number += 1;
    }
    number
}

/// Names the database and its directory in a RocksDB failure met while
/// opening it, so that the node can say which one to rebuild.
pub(crate) fn opening(
    database: DatabaseKind,
    path: &Path,
) -> impl Fn(ChainstateError) -> ChainstateError + '_ {
    move |error| match error {
        ChainstateError::Database { source } => {
            ChainstateError::DatabaseOpen { database, path: path.to_path_buf(), source }
        }
        other => other,
    }
}

/// Creates `path` and its parents.
pub(crate) fn create_directory(path: &Path) -> Result<(), ChainstateError> {
    std::fs::create_dir_all(path).map_err(|source| ChainstateError::BlockStore {
        source: ibex_blockstore::BlockStoreError::Io { path: path.to_path_buf(), source },
    })
}
