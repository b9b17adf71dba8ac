//! Opening a chainstate: directories, the obfuscation key, the block index,
//! the coins database, and recovery from an interrupted flush.

use std::sync::Arc;

use super::{ChainObserver, ChainStatistics, Chainstate, ChainstateOptions};
use crate::cache::CoinsCache;
use crate::database::{CoinsDatabase, DatabaseOptions};
use crate::error::{ChainstateError, DatabaseKind};
use crate::index::ActiveChain;
use crate::scripts::ScriptThreads;
use crate::stages::connector::Connector;
use crate::stages::persistence::{create_directory, opening, Persistence};
use crate::stages::script_queue::ScriptQueue;
use crate::stages::selection::ChainSelection;

pub use crate::stages::persistence::INDEX_DIRECTORY;

impl Chainstate {
    /// Opens the chainstate described by `options`, replaying an interrupted
    /// flush if there was one. Events go to `observer`.
    pub fn open(
        options: ChainstateOptions,
        observer: Box<dyn ChainObserver>,
    ) -> Result<Chainstate, ChainstateError> {
        create_directory(&options.chainstate_directory)?;
        let magic = options.params.message_start;
        let (persistence, index) = Persistence::open(&options.blocks_directory, magic)?;
        let selection = ChainSelection::from_index(&index);
        let persistence_files = persistence.block_files();
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
        let scripts = ScriptQueue::new(ScriptThreads::new(options.script_threads)?);
        let mut chainstate = Chainstate {
            options,
            index,
            chain: ActiveChain::default(),
            selection,
            connector: Connector::new(cache),
            scripts,
            persistence,
            observer,
            statistics: ChainStatistics::default(),
            reads: super::reader::ReadService::new(persistence_files),
            metrics: Arc::default(),
        };
        chainstate.metrics.watch_coins_database(chainstate.connector.cache().database());
        chainstate.recover()?;
        chainstate.publish(chainstate.chain.tip());
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

/// RocksDB memtable size for a coins cache of `cache_bytes_max`: an
/// eighth of it, 4-64 MiB (two of them exist at once), so a small
/// `-dbcache` keeps RocksDB small too, as Core sizes LevelDB's write buffer
/// from its share of `-dbcache`.
///
/// Not smaller at large caches: a flush of a 440 MiB cache writes ~210 MB,
/// and 16 MiB memtables made 13 level-0 files of it per flush, each one a
/// bloom probe for every later point read and more compaction work.
fn memtable_bytes_for(cache_bytes_max: usize) -> usize {
    (cache_bytes_max / 8).clamp(4 << 20, crate::database::MEMTABLE_BYTES_MAX)
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
        assert_eq!(memtable_bytes_for(160 << 20), 20 << 20);
        assert_eq!(memtable_bytes_for(440 << 20), 55 << 20);
        assert_eq!(memtable_bytes_for(4000 << 20), 64 << 20);
    }
}
