//! Opening a chainstate: directories, the obfuscation key, the block index,
//! the coins database, and recovery from an interrupted flush.

use std::sync::Arc;

use super::coins_chain::FlushSchedule;
use super::{ChainObserver, ChainStatistics, Chainstate, ChainstateOptions, CoinsChain, Shared};
use crate::coins::cache::CoinsCache;
use crate::coins::database::{CoinsDatabase, DatabaseOptions};
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
        let database_options = DatabaseOptions::with_memory(&options.memory.coins_database);
        let coins_path = &options.chainstate_directory;
        let database = CoinsDatabase::open(coins_path, &database_options)
            .map_err(opening(DatabaseKind::Coins, coins_path))?;
        let mut cache = CoinsCache::new(Arc::new(database), options.memory.coins_bytes);
        cache.set_table_readers_uncounted_bytes(options.memory.table_readers_uncounted_bytes);
        let scripts = ScriptQueue::new(ScriptThreads::new(options.script_threads)?);
        let shared = Shared {
            options,
            index,
            selection,
            persistence,
            observer,
            statistics: ChainStatistics::default(),
            reads: super::reader::ReadService::new(persistence_files),
            metrics: Arc::default(),
            interrupt: None,
            mock_time_seconds: None,
        };
        let active = CoinsChain {
            chain: ActiveChain::default(),
            connector: Connector::new(cache),
            scripts,
            flush_schedule: FlushSchedule::new(),
        };
        let mut chainstate = Chainstate { shared, active };
        chainstate
            .shared
            .metrics
            .watch_coins_database(chainstate.active.connector.cache().database());
        chainstate.recover()?;
        chainstate.publish(chainstate.active.chain.tip());
        Ok(chainstate)
    }
}

impl Chainstate {
    /// Indexes and connects the genesis block if the index lacks it (Core's
    /// `LoadGenesisBlock`), writing it to a block file.
    pub fn ensure_genesis(&mut self) -> Result<(), ChainstateError> {
        let params = &self.shared.options.params;
        if self.shared.index.get(&params.genesis_hash).is_some() {
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
