//! Opening a chainstate: directories, the obfuscation key, the block index,
//! the coins database, and recovery from an interrupted flush.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ibex_blockstore::{
    block_file_path, read_obfuscation_key, write_obfuscation_key, BlockFileWriter, Obfuscation,
    UndoFileWriter, BLOCK_FILE_BYTES_MAX,
};

use super::{ChainObserver, ChainStatistics, Chainstate, ChainstateOptions};
use crate::cache::CoinsCache;
use crate::database::{CoinsDatabase, DatabaseOptions};
use crate::error::{ChainstateError, DatabaseKind};
use crate::index::store::IndexStore;
use crate::index::ActiveChain;
use crate::scripts::ScriptThreads;
use crate::selection::ChainSelection;

/// The block index directory inside the blocks directory (as Core's).
pub const INDEX_DIRECTORY: &str = "index";

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
fn opening(
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

fn create_directory(path: &Path) -> Result<(), ChainstateError> {
    std::fs::create_dir_all(path).map_err(|source| ChainstateError::BlockStore {
        source: ibex_blockstore::BlockStoreError::Io { path: path.to_path_buf(), source },
    })
}

impl Chainstate {
    /// Opens the chainstate described by `options`, replaying an interrupted
    /// flush if there was one. Events go to `observer`.
    pub fn open(
        options: ChainstateOptions,
        observer: Box<dyn ChainObserver>,
    ) -> Result<Chainstate, ChainstateError> {
        let blocks = options.blocks_directory.clone();
        create_directory(&blocks)?;
        create_directory(&options.chainstate_directory)?;
        let obfuscation = obfuscation_for(&blocks)?;
        let index_path = blocks.join(INDEX_DIRECTORY);
        let store = IndexStore::open(&index_path)
            .map_err(opening(DatabaseKind::BlockIndex, &index_path))?;
        let index = store.load().map_err(opening(DatabaseKind::BlockIndex, &index_path))?;
        let selection = ChainSelection::from_index(&index);
        let database_options = DatabaseOptions {
            flush_batch_bytes_max: flush_batch_bytes_for(
                options.flush_batch_bytes_max,
                options.cache_bytes_max,
            ),
            memtable_bytes: memtable_bytes_for(options.cache_bytes_max),
            ..DatabaseOptions::default()
        };
        let coins_path = &options.chainstate_directory;
        let database = CoinsDatabase::open(coins_path, &database_options)
            .map_err(opening(DatabaseKind::Coins, coins_path))?;
        let cache = CoinsCache::new(Arc::new(database), options.cache_bytes_max);
        let magic = options.params.message_start;
        let block_writer = BlockFileWriter::new(
            &blocks,
            magic,
            obfuscation,
            BLOCK_FILE_BYTES_MAX,
            last_block_file(&blocks),
        )?;
        let undo_writer = UndoFileWriter::new(&blocks, magic, obfuscation);
        let scripts = ScriptThreads::new(options.script_threads)?;
        let mut chainstate = Chainstate {
            options,
            index,
            store,
            chain: ActiveChain::default(),
            cache,
            obfuscation,
            block_writer,
            undo_writer,
            selection,
            scripts,
            observer,
            recent: None,
            last_flush: Instant::now(),
            statistics: ChainStatistics::default(),
            undo_buffer: Vec::new(),
            pending: std::collections::VecDeque::new(),
            background_flush: None,
            read_ahead: None,
        };
        chainstate.recover()?;
        Ok(chainstate)
    }
}

impl Chainstate {
    /// Indexes and connects the genesis block if the index lacks it (Core's
    /// `LoadGenesisBlock`), writing it to a block file.
    pub fn ensure_genesis(&mut self) -> Result<(), ChainstateError> {
        let params = &self.options.params;
        if self.index.get(&params.genesis_hash).is_some() {
            return Ok(());
        }
        let bytes = params.genesis.encode();
        let mut buffers = ibex_primitives::BlockBuffers::default();
        let block = crate::prepared::PreparedBlock::prepare(bytes, None, params, &mut buffers)
            .map_err(|error| ChainstateError::CorruptBlock {
                hash: params.genesis_hash,
                reason: error.reason,
            })?;
        self.accept_block(block)?;
        self.activate_best_chain()
    }
}

/// RocksDB memtable size for a coins cache of `cache_bytes_max`: a
/// sixteenth of it, 4-16 MiB (two of them exist at once), so a small
/// `-dbcache` keeps RocksDB small too, as Core sizes LevelDB's write buffer
/// from its share of `-dbcache`.
fn memtable_bytes_for(cache_bytes_max: usize) -> usize {
    (cache_bytes_max / 16).clamp(4 << 20, crate::database::MEMTABLE_BYTES_DEFAULT)
}

/// Largest flush batch for `-dbbatchsize` and a coins cache of
/// `cache_bytes_max`: the batch, or an eighth of the cache if that is less
/// (at least 1 MiB).
///
/// A batch lands whole in one RocksDB memtable, whatever the memtable's
/// size: measured with heaptrack at `-dbcache=100`, 16 MiB batches grew the
/// two memtables to 75 MiB together, more than the flush's other buffers.
/// Scaled down, a small cache keeps RocksDB small too; from
/// `-dbcache=256` up the batch is `-dbbatchsize` unchanged, as in Core.
fn flush_batch_bytes_for(batch_bytes_max: usize, cache_bytes_max: usize) -> usize {
    batch_bytes_max.min((cache_bytes_max / 8).max(1 << 20))
}

#[cfg(test)]
mod tests {
    use super::{flush_batch_bytes_for, memtable_bytes_for};

    #[test]
    fn flush_batches_shrink_only_for_small_caches() {
        assert_eq!(flush_batch_bytes_for(32 << 20, 450 << 20), 32 << 20);
        assert_eq!(flush_batch_bytes_for(32 << 20, 100 << 20), 100 << 17);
        assert_eq!(flush_batch_bytes_for(32 << 20, 1 << 20), 1 << 20);
        assert_eq!(flush_batch_bytes_for(1000, 450 << 20), 1000);
    }

    #[test]
    fn memtables_follow_the_cache_within_bounds() {
        assert_eq!(memtable_bytes_for(1 << 20), 4 << 20);
        assert_eq!(memtable_bytes_for(160 << 20), 10 << 20);
        assert_eq!(memtable_bytes_for(440 << 20), 16 << 20);
    }
}
