//! Core's `gettxoutsetinfo` over a node's coins, computed the way Core
//! computes it (see `ibex_chainstate::txoutset`).
//!
//! One implementation serves the `gettxoutsetinfo` RPC and the
//! `ibex txoutsetinfo` tool: both walk the coins with
//! `ibex_chainstate::txoutset` (the RPC over the running node's database and
//! cache merged, at its settled tip, through the read API's
//! `ReadView::txoutset`, on the engine's thread; the tool over a stopped
//! node's database alone, [`txoutset_info`], read-only) and both answer an
//! [`ibex_rpc::backend::TxOutSetInfo`]. [`txoutset_info`] takes no lock: the
//! tool takes the node's directory locks around it
//! ([`crate::directory_lock`]).

use std::path::{Path, PathBuf};

use ibex_chainstate::index_store::IndexStore;
use ibex_chainstate::INDEX_DIRECTORY;
use ibex_chainstate::{
    txoutset_stats, ChainstateError, CoinsDatabase, DatabaseKind, DatabaseOptions,
};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::BlockHash;
pub use ibex_rpc::backend::TxOutSetInfo;

/// Why the UTXO set's figures could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TxOutSetError {
    /// The chainstate could not be read.
    #[error(transparent)]
    Chainstate(ChainstateError),
    /// A database is corrupt: which one, why, and the `ibexd` option that
    /// rebuilds it (as `ibexd` words it).
    #[error("{source}\nPlease restart ibexd with {} to recover.", .database.rebuild_option())]
    DatabaseUnusable {
        /// The database.
        database: DatabaseKind,
        /// What was found.
        source: ChainstateError,
    },
    /// There is no chainstate yet.
    #[error("no chainstate at {path}: run ibexd first")]
    NoChainstate {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A flush was interrupted: ibexd must run once to replay it.
    #[error("the chainstate has an interrupted flush: start ibexd once to repair it")]
    InterruptedFlush,
    /// The best block is not in the block index.
    #[error("best block {hash} is not in the block index")]
    UnknownBestBlock {
        /// The block.
        hash: BlockHash,
    },
    /// The chain has no tip yet.
    #[error("the chain has no tip yet")]
    NoTip,
}

impl From<ChainstateError> for TxOutSetError {
    fn from(source: ChainstateError) -> Self {
        match source.database_to_rebuild() {
            Some(database) => TxOutSetError::DatabaseUnusable { database, source },
            None => TxOutSetError::Chainstate(source),
        }
    }
}

/// Core's `gettxoutsetinfo` for the chainstate at `chainstate_directory`.
pub fn txoutset_info(
    chainstate_directory: &Path,
    blocks_directory: &Path,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetInfo, TxOutSetError> {
    if !chainstate_directory.exists() {
        return Err(TxOutSetError::NoChainstate { path: chainstate_directory.to_path_buf() });
    }
    // Read-only, both databases: a tool that reads changes no byte of them,
    // whether it succeeds or fails.
    let options =
        DatabaseOptions { create_if_missing: false, read_only: true, ..DatabaseOptions::default() };
    let database = CoinsDatabase::open(chainstate_directory, &options)?;
    if database.head_blocks()?.is_some() {
        return Err(TxOutSetError::InterruptedFlush);
    }
    let best_block = database.best_block()?.unwrap_or(BlockHash::ZERO);
    let index = IndexStore::open_read_only(&blocks_directory.join(INDEX_DIRECTORY))?.load()?;
    let height = match index.get(&best_block) {
        Some(id) => index.entry(id).height,
        None if best_block == BlockHash::ZERO => 0,
        None => return Err(TxOutSetError::UnknownBestBlock { hash: best_block }),
    };
    let stats = txoutset_stats(&database, hash_type)?;
    let disk_size_bytes = database.estimated_size_bytes()?;
    Ok(TxOutSetInfo { height, best_block, stats, disk_size_bytes })
}
