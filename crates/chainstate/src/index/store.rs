//! The block index on disk: a RocksDB at `blocks/index` (Core keeps a
//! LevelDB there), one record per block plus a few flags.
//!
//! Records: `'b' || hash` -> [`encode_entry`]; `'F' || name` -> one byte,
//! a flag (Core's `WriteFlag`: `prunedblockfiles` once any block file was
//! pruned). (An unfinished reindex is
//! recorded by the node beside the block files, not here: the index is
//! what a reindex deletes.)
//! Writes are synced: the coins database only ever names a tip whose index
//! record, block and undo data are already durable.

use std::path::Path;

use ibex_blockstore::BlockPosition;
use ibex_primitives::encode::Reader;
use ibex_primitives::{BlockHash, ChainWork, Header, HEADER_BYTES};
use rocksdb::{DBCompressionType, Options, WriteBatch, WriteOptions, DB};

use super::{BlockIndex, BlockIndexEntry, BlockStatus, EntryId};
use crate::coins::database::holds_database_files;
use crate::error::ChainstateError;

const ENTRY_PREFIX: u8 = b'b';
const FLAG_PREFIX: u8 = b'F';
/// The flag set once a block file has been pruned (Core's name).
pub const PRUNED_BLOCK_FILES_FLAG: &str = "prunedblockfiles";
/// One memtable of the block index database (~40,000 entries).
const INDEX_MEMTABLE_BYTES: usize = 4 << 20;
/// The block index database's block cache (it is read once, at start).
const INDEX_BLOCK_CACHE_BYTES: usize = 2 << 20;
const RECORD_VERSION: u8 = 1;
/// Largest sequence a record may hold: one per block met leaves it
/// unreachable, and numbering can go on from any stored value without
/// overflowing.
pub const SEQUENCE_STORED_MAX: u64 = 1 << 62;

/// The block index database.
pub struct IndexStore {
    db: DB,
}

impl std::fmt::Debug for IndexStore {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("IndexStore").field("path", &self.db.path()).finish()
    }
}

fn entry_key(hash: &BlockHash) -> [u8; 33] {
    let mut key = [0u8; 33];
    key[0] = ENTRY_PREFIX;
    key[1..].copy_from_slice(hash.as_bytes());
    key
}

fn flag_key(name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + name.len());
    key.push(FLAG_PREFIX);
    key.extend_from_slice(name.as_bytes());
    key
}

fn write_position(out: &mut Vec<u8>, position: Option<BlockPosition>) {
    match position {
        None => out.push(0),
        Some(position) => {
            out.push(1);
            out.extend_from_slice(&position.file_number.to_le_bytes());
            out.extend_from_slice(&position.data_offset.to_le_bytes());
        }
    }
}

fn read_position(reader: &mut Reader<'_>) -> Option<Option<BlockPosition>> {
    match reader.read_u8().ok()? {
        0 => Some(None),
        1 => {
            let file_number = reader.read_u32_le().ok()?;
            let data_offset = reader.read_u64_le().ok()?;
            Some(Some(BlockPosition { file_number, data_offset }))
        }
        _ => None,
    }
}

/// One entry's record (its hash is the key; work and parent are recomputed).
pub fn encode_entry(entry: &BlockIndexEntry) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.push(RECORD_VERSION);
    out.extend_from_slice(&entry.height.to_le_bytes());
    out.extend_from_slice(&entry.status.bits().to_le_bytes());
    out.extend_from_slice(&entry.transaction_count.to_le_bytes());
    out.extend_from_slice(&entry.sequence.to_le_bytes());
    write_position(&mut out, entry.block_position);
    write_position(&mut out, entry.undo_position);
    out.extend_from_slice(&entry.header.encode());
    out
}

/// A decoded record, before it is linked into the tree.
#[derive(Debug, Clone)]
pub struct StoredEntry {
    /// The block's hash (from the key).
    pub hash: BlockHash,
    /// Height.
    pub height: u32,
    /// Status flags.
    pub status: BlockStatus,
    /// Transactions in the block.
    pub transaction_count: u32,
    /// Order its data was met.
    pub sequence: u64,
    /// Block position.
    pub block_position: Option<BlockPosition>,
    /// Undo position.
    pub undo_position: Option<BlockPosition>,
    /// The header.
    pub header: Header,
}

/// Decodes a record; `None` when it is corrupt (a sequence above
/// [`SEQUENCE_STORED_MAX`] included).
pub fn decode_entry(hash: BlockHash, bytes: &[u8]) -> Option<StoredEntry> {
    let mut reader = Reader::new(bytes);
    if reader.read_u8().ok()? != RECORD_VERSION {
        return None;
    }
    let height = reader.read_u32_le().ok()?;
    let status = BlockStatus::from_bits(reader.read_u32_le().ok()?);
    let transaction_count = reader.read_u32_le().ok()?;
    let sequence = reader.read_u64_le().ok().filter(|sequence| *sequence <= SEQUENCE_STORED_MAX)?;
    let block_position = read_position(&mut reader)?;
    let undo_position = read_position(&mut reader)?;
    let header = Header::decode(reader.take_array::<HEADER_BYTES>().ok()?);
    reader.finish().ok()?;
    Some(StoredEntry {
        hash,
        height,
        status,
        transaction_count,
        sequence,
        block_position,
        undo_position,
        header,
    })
}

impl IndexStore {
    /// Opens the index database at `path`, or creates it where there is
    /// none (`holds_database_files`).
    pub fn open(path: &Path) -> Result<IndexStore, ChainstateError> {
        let mut options = Self::options();
        options.create_if_missing(!holds_database_files(path));
        let db = DB::open(&options, path)?;
        Ok(IndexStore { db })
    }

    /// Opens the index database at `path` in RocksDB's read-only mode: no
    /// byte of the directory changes (its log is replayed into memory, not
    /// flushed into a table), and writes fail. For tools reading a stopped
    /// node's index (`ibex txoutsetinfo`).
    pub fn open_read_only(path: &Path) -> Result<IndexStore, ChainstateError> {
        // RocksDB makes the directory of any database it opens.
        if !path.is_dir() {
            return Err(ChainstateError::NoDatabase { path: path.to_path_buf() });
        }
        let db = DB::open_for_read_only(&Self::options(), path, false)?;
        Ok(IndexStore { db })
    }

    fn options() -> Options {
        let mut options = Options::default();
        options.set_compression_type(DBCompressionType::None);
        // Small and written in small batches: bound RocksDB's memory well
        // below its defaults (64 MiB memtables, 32 MiB block cache).
        options.set_write_buffer_size(INDEX_MEMTABLE_BYTES);
        options.set_max_write_buffer_number(2);
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&rocksdb::Cache::new_lru_cache(INDEX_BLOCK_CACHE_BYTES));
        options.set_block_based_table_factory(&table);
        options
    }

    /// Writes the index's changed entries, synced. Returns how many.
    pub fn write_dirty(&self, index: &mut BlockIndex) -> Result<usize, ChainstateError> {
        let dirty = index.take_dirty();
        if dirty.is_empty() {
            return Ok(0);
        }
        let mut batch = WriteBatch::default();
        for &id in &dirty {
            let entry = index.entry(id);
            batch.put(entry_key(&entry.hash), encode_entry(entry));
        }
        let mut options = WriteOptions::default();
        options.set_sync(true);
        self.db.write_opt(batch, &options)?;
        Ok(dirty.len())
    }

    /// Writes the flag `name` (synced).
    pub fn write_flag(&self, name: &str, value: bool) -> Result<(), ChainstateError> {
        let mut options = WriteOptions::default();
        options.set_sync(true);
        self.db.put_opt(flag_key(name), [u8::from(value)], &options)?;
        Ok(())
    }

    /// The flag `name`: false when never written; a record that is not one
    /// byte of 0 or 1 is corrupt.
    pub fn read_flag(&self, name: &str) -> Result<bool, ChainstateError> {
        match self.db.get(flag_key(name))? {
            None => Ok(false),
            Some(value) => match value.as_slice() {
                [0] => Ok(false),
                [1] => Ok(true),
                _ => Err(ChainstateError::CorruptRecord {
                    record: crate::error::BLOCK_INDEX_FLAG_RECORD,
                    length_bytes: value.len(),
                }),
            },
        }
    }

    /// Reads every record and builds the tree ([`build_index`]).
    pub fn load(&self) -> Result<BlockIndex, ChainstateError> {
        let mut stored = Vec::new();
        for item in self.db.prefix_iterator([ENTRY_PREFIX]) {
            let (key, value) = item?;
            if key.first() != Some(&ENTRY_PREFIX) {
                break;
            }
            stored.push(decode_record(&key, &value)?);
        }
        build_index(stored)
    }
}

/// Decodes one record of the database from its key (`'b' || hash`) and value.
pub fn decode_record(key: &[u8], value: &[u8]) -> Result<StoredEntry, ChainstateError> {
    let hash_bytes: [u8; 32] = key
        .strip_prefix(&[ENTRY_PREFIX])
        .and_then(|hash| hash.try_into().ok())
        .ok_or(ChainstateError::CorruptRecord {
            record: crate::error::BLOCK_INDEX_KEY_RECORD,
            length_bytes: key.len(),
        })?;
    let hash = BlockHash(hash_bytes);
    let entry = decode_entry(hash, value).ok_or(ChainstateError::CorruptIndexEntry { hash })?;
    // Core's `LoadBlockIndexGuts` keys each entry by the hash of the header
    // it read, so a damaged header can never pass for the block it was
    // stored under; checking that the header hashes to its key does the same
    // (one double SHA-256 of 80 bytes a block, ~0.5 s for 900k blocks).
    if entry.header.block_hash() != hash {
        return Err(ChainstateError::IndexHeaderMismatch { hash });
    }
    Ok(entry)
}

/// Builds the tree from the decoded records (one per hash, in any order):
/// parents first (by height), work and chain transaction counts recomputed.
pub fn build_index(mut stored: Vec<StoredEntry>) -> Result<BlockIndex, ChainstateError> {
    stored.sort_by_key(|entry| (entry.height, entry.sequence));
    let mut index = BlockIndex::new();
    let mut sequence_max = 0;
    for record in stored {
        sequence_max = sequence_max.max(record.sequence);
        link(&mut index, record)?;
    }
    // Below u64::MAX by far: `decode_entry` bounds every stored sequence.
    index.set_next_sequence(sequence_max + 1);
    index.take_dirty();
    Ok(index)
}

/// Links one stored record under its parent.
fn link(index: &mut BlockIndex, record: StoredEntry) -> Result<EntryId, ChainstateError> {
    let proof =
        ibex_primitives::pow::block_proof(ibex_primitives::CompactTarget(record.header.bits));
    let (parent, chain_work, parent_chain_transactions) = if record.height == 0 {
        (None, proof, Some(0))
    } else {
        let parent = index.get(&record.header.previous_block_hash).ok_or(
            ChainstateError::UnknownParent {
                hash: record.hash,
                parent: record.header.previous_block_hash,
            },
        )?;
        let parent_entry = index.entry(parent);
        if parent_entry.height + 1 != record.height {
            return Err(ChainstateError::CorruptIndexEntry { hash: record.hash });
        }
        let chain_transactions =
            parent_entry.has_chain_data().then_some(parent_entry.chain_transaction_count);
        (Some(parent), parent_entry.chain_work.wrapping_add(proof), chain_transactions)
    };
    // Core's `LoadBlockIndex` counts a block's chain transactions from its
    // own count (`nTx`) alone: a pruned block keeps its count, and its
    // descendants their chain data, after its bytes are gone.
    let counted = record.transaction_count > 0;
    let chain_transaction_count = match parent_chain_transactions {
        Some(below) if counted => below + u64::from(record.transaction_count),
        _ => 0,
    };
    Ok(index.push(BlockIndexEntry {
        hash: record.hash,
        header: record.header,
        height: record.height,
        chain_work: ChainWork::from_u256(chain_work.to_u256()),
        parent,
        status: record.status,
        transaction_count: record.transaction_count,
        chain_transaction_count,
        block_position: record.block_position,
        undo_position: record.undo_position,
        sequence: record.sequence,
    }))
}

#[cfg(test)]
mod tests {
    use ibex_primitives::Params;

    use super::*;
    use crate::error::DatabaseKind;

    fn genesis_record() -> (Vec<u8>, Vec<u8>) {
        let params = Params::regtest();
        let entry = BlockIndexEntry {
            hash: params.genesis_hash,
            header: params.genesis.header,
            height: 0,
            chain_work: ChainWork::ZERO,
            parent: None,
            status: BlockStatus::new_header(None),
            transaction_count: 1,
            chain_transaction_count: 1,
            block_position: None,
            undo_position: None,
            sequence: 0,
        };
        ([&[ENTRY_PREFIX][..], &params.genesis_hash.0].concat(), encode_entry(&entry))
    }

    #[test]
    fn a_record_whose_header_is_not_its_key_s_block_is_refused_for_a_reindex() {
        let (key, value) = genesis_record();
        assert!(decode_record(&key, &value).is_ok(), "the genesis record reads");

        // A flipped bit in the stored header's nonce (its last 4 bytes).
        let mut damaged = value.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 0x01;
        let error = decode_record(&key, &damaged).err();
        assert!(
            matches!(error, Some(ChainstateError::IndexHeaderMismatch { hash }) if hash == Params::regtest().genesis_hash),
            "a damaged header is refused: {error:?}"
        );
        assert_eq!(
            error.and_then(|error| error.database_to_rebuild()),
            Some(DatabaseKind::BlockIndex)
        );

        // The right header under another block's key.
        let mut other_key = key.clone();
        other_key[1] ^= 0x80;
        assert!(matches!(
            decode_record(&other_key, &value),
            Err(ChainstateError::IndexHeaderMismatch { .. })
        ));
    }
}
