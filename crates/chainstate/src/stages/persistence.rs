//! Persistence, the stage that owns what is on disk beside the coins: the
//! block files (`blk?????.dat`), the undo files (`rev?????.dat`), their
//! obfuscation key and the block index database (`blocks/index`). Every
//! chainstate shares them; each keeps its own coins flush schedule
//! (`engine::coins_chain::FlushSchedule`).
//!
//! It touches no coins and decides nothing: the engine tells it to append a
//! block, write a block's undo data once its scripts passed, read a block or
//! undo record back, make files and index durable before a coins flush
//! (Core's order, see [`crate::engine::flush`]), and prune file pairs
//! (`crate::engine::prune`). It keeps what each file pair holds
//! ([`BlockFileTable`]) for pruning and the disk figures.

use std::path::{Path, PathBuf};

use ibex_blockstore::framing::RECORD_HEADER_BYTES;
use ibex_blockstore::undo_files::UNDO_RECORD_OVERHEAD_BYTES;
use ibex_blockstore::{
    block_file_path, last_block_file_number, read_block, read_obfuscation_key, read_undo,
    remove_file_pair, undo_file_path, write_obfuscation_key, BlockFileWriter, BlockPosition,
    BlockStoreError, Obfuscation, UndoFileWriter, BLOCK_FILE_BYTES_MAX,
};
use ibex_primitives::{BlockBuffers, BlockHash};

use super::block_files::{
    BlockFileTable, BLOCK_FILE_CHUNK_BYTES, FAST_PRUNE_CHUNK_BYTES, FAST_PRUNE_FILE_BYTES_MAX,
    UNDO_FILE_CHUNK_BYTES,
};
use crate::index::store::PRUNED_BLOCK_FILES_FLAG;
use crate::index::{BlockStatus, EntryId};

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
    /// What each file pair holds.
    files: BlockFileTable,
    /// Block files grow by this much at a time (Core's chunk).
    block_chunk_bytes: u64,
    /// One more chunk of a block or undo file was used since pruning was
    /// last looked at (Core's `m_check_for_pruning`).
    prune_check_due: bool,
    /// Whether a block file was ever pruned (the index's
    /// `prunedblockfiles` flag, Core's `m_have_pruned`).
    have_pruned: bool,
}

impl Persistence {
    /// Opens the blocks directory (creating it and its obfuscation key when
    /// new) and loads the block index.
    pub(crate) fn open(
        blocks_directory: &Path,
        magic: [u8; 4],
        fast_prune: bool,
    ) -> Result<(Persistence, BlockIndex), ChainstateError> {
        create_directory(blocks_directory)?;
        let obfuscation = obfuscation_for(blocks_directory)?;
        let index_path = blocks_directory.join(INDEX_DIRECTORY);
        let store = IndexStore::open(&index_path)
            .map_err(opening(DatabaseKind::BlockIndex, &index_path))?;
        let index = store.load().map_err(opening(DatabaseKind::BlockIndex, &index_path))?;
        let have_pruned = store
            .read_flag(PRUNED_BLOCK_FILES_FLAG)
            .map_err(opening(DatabaseKind::BlockIndex, &index_path))?;
        let last_file = last_block_file_number(blocks_directory)?.unwrap_or(0);
        let files = file_table(blocks_directory, &index, last_file)?;
        let (file_bytes_max, block_chunk_bytes) = match fast_prune {
            true => (FAST_PRUNE_FILE_BYTES_MAX, FAST_PRUNE_CHUNK_BYTES),
            false => (BLOCK_FILE_BYTES_MAX, BLOCK_FILE_CHUNK_BYTES),
        };
        let block_writer =
            BlockFileWriter::new(blocks_directory, magic, obfuscation, file_bytes_max, last_file)?;
        let undo_writer = UndoFileWriter::new(blocks_directory, magic, obfuscation);
        let persistence = Persistence {
            blocks_directory: blocks_directory.to_path_buf(),
            magic,
            obfuscation,
            store,
            block_writer,
            undo_writer,
            undo_buffer: Vec::new(),
            files,
            block_chunk_bytes,
            prune_check_due: false,
            have_pruned,
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

    /// Appends the block at `height` to the block files.
    pub(crate) fn append_block(
        &mut self,
        bytes: &[u8],
        height: u32,
    ) -> Result<BlockPosition, ChainstateError> {
        let position = self.block_writer.append(bytes)?;
        let file_number = position.file_number;
        let used_before = self.files.file(file_number).block_bytes;
        let record_bytes = (RECORD_HEADER_BYTES + bytes.len()) as u64;
        self.files.add_block(file_number, height, record_bytes);
        self.note_chunk(used_before, record_bytes, self.block_chunk_bytes);
        Ok(position)
    }

    /// Counts a block at `height` found already stored at `position` (an
    /// import from the block files).
    pub(crate) fn count_stored_block(&mut self, position: BlockPosition, height: u32) {
        self.files.count_block(position.file_number, height);
    }

    /// Core allocates files a chunk at a time and looks at pruning after
    /// each allocation: the same moments here, when an append crosses into
    /// a new chunk of `chunk_bytes`.
    fn note_chunk(&mut self, used_before: u64, appended_bytes: u64, chunk_bytes: u64) {
        let used_after = used_before + appended_bytes;
        if used_after.div_ceil(chunk_bytes) > used_before.div_ceil(chunk_bytes) {
            self.prune_check_due = true;
        }
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
        let position = self.undo_writer.append(file_number, previous, &self.undo_buffer)?;
        let used_before = self.files.file(file_number).undo_bytes;
        let record_bytes = (UNDO_RECORD_OVERHEAD_BYTES + self.undo_buffer.len()) as u64;
        self.files.add_undo(file_number, record_bytes);
        self.note_chunk(used_before, record_bytes, UNDO_FILE_CHUNK_BYTES);
        Ok(position)
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

impl Persistence {
    /// What each file pair holds.
    pub(crate) fn files(&self) -> &BlockFileTable {
        &self.files
    }

    /// The block file being appended to (never pruned).
    pub(crate) fn current_file(&self) -> u32 {
        self.block_writer.file_number()
    }

    /// Whether a chunk was used since the last look at pruning; clears it.
    pub(crate) fn take_prune_check(&mut self) -> bool {
        std::mem::take(&mut self.prune_check_due)
    }

    /// Asks for a look at pruning at the next chance (Core's
    /// `PruneAndFlush` at startup).
    pub(crate) fn request_prune_check(&mut self) {
        self.prune_check_due = true;
    }

    /// Whether a block file was ever pruned.
    pub(crate) fn have_pruned(&self) -> bool {
        self.have_pruned
    }

    /// Core's `PruneOneBlockFile` for each of `files`: every block stored
    /// there loses its data and undo marks and positions (its header, count
    /// and validity stay), and the files are forgotten. Then the index is
    /// written (synced) with the `prunedblockfiles` flag, so that from now
    /// on the index never names the files: only then may they be removed
    /// ([`Self::remove_files`]). Returns the blocks whose data went.
    pub(crate) fn prune_files(
        &mut self,
        index: &mut BlockIndex,
        files: &[u32],
    ) -> Result<Vec<EntryId>, ChainstateError> {
        let mut pruned = Vec::new();
        for id in index.ids().collect::<Vec<_>>() {
            let entry = index.entry(id);
            let stored_in = |position: Option<BlockPosition>| {
                position.is_some_and(|position| files.contains(&position.file_number))
            };
            if !stored_in(entry.block_position) && !stored_in(entry.undo_position) {
                continue;
            }
            let entry = index.entry_mut(id);
            entry.status.clear_stored_data();
            entry.block_position = None;
            entry.undo_position = None;
            index.mark_dirty(id);
            pruned.push(id);
        }
        for &file in files {
            self.files.clear(file);
        }
        if !self.have_pruned {
            self.store.write_flag(PRUNED_BLOCK_FILES_FLAG, true)?;
            self.have_pruned = true;
        }
        self.write_index(index)?;
        Ok(pruned)
    }

    /// Removes the `blk`/`rev` pairs `files` (Core's `UnlinkPrunedFiles`),
    /// which the index must no longer name; returns those that were there.
    pub(crate) fn remove_files(&mut self, files: &[u32]) -> Result<Vec<u32>, ChainstateError> {
        let mut removed = Vec::new();
        for &file in files {
            debug_assert!(file != self.current_file(), "the file being appended to is kept");
            self.undo_writer.close_file(file)?;
            let existed = block_file_path(&self.blocks_directory, file).exists()
                || undo_file_path(&self.blocks_directory, file).exists();
            remove_file_pair(&self.blocks_directory, file)?;
            if existed {
                removed.push(file);
            }
        }
        Ok(removed)
    }

    /// Files below the current one that hold no block the index knows:
    /// left by a prune that recorded them pruned and stopped before
    /// removing them (Core's `ScanAndUnlinkAlreadyPrunedFiles`, run only
    /// once something was pruned).
    pub(crate) fn leftover_pruned_files(&self) -> Vec<u32> {
        if !self.have_pruned {
            return Vec::new();
        }
        let current = self.current_file();
        self.files
            .empty_files_before(current)
            .into_iter()
            .filter(|&file| {
                block_file_path(&self.blocks_directory, file).exists()
                    || undo_file_path(&self.blocks_directory, file).exists()
            })
            .collect()
    }
}

/// What each file pair of `directory` holds: lengths from the disk, the
/// blocks from `index` (the entries with data and a position).
fn file_table(
    directory: &Path,
    index: &BlockIndex,
    last_file: u32,
) -> Result<BlockFileTable, ChainstateError> {
    let mut table = BlockFileTable::with_files(last_file as usize + 1);
    for number in 0..=last_file {
        let block_bytes = file_length(&block_file_path(directory, number))?;
        let undo_bytes = file_length(&undo_file_path(directory, number))?;
        table.set_lengths(number, block_bytes, undo_bytes);
    }
    for id in index.ids() {
        let entry = index.entry(id);
        let stored = entry.block_position.filter(|_| entry.status.has(BlockStatus::HAVE_DATA));
        let Some(position) = stored else { continue };
        // A damaged record naming a file past the directory's last must
        // not size the table (an allocation per file number).
        if position.file_number > last_file {
            return Err(ChainstateError::CorruptIndexEntry { hash: entry.hash });
        }
        table.count_block(position.file_number, entry.height);
    }
    Ok(table)
}

/// The length of the file at `path`; 0 when there is none.
fn file_length(path: &Path) -> Result<u64, ChainstateError> {
    match std::fs::metadata(path) {
        Ok(metadata) => Ok(metadata.len()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(ChainstateError::BlockStore {
            source: BlockStoreError::Io { path: path.to_path_buf(), source },
        }),
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
