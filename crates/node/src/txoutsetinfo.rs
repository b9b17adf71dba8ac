//! `ibex txoutsetinfo -datadir=DIR [-regtest|-chain=NAME] [-hash_type=...]`:
//! Core's `gettxoutsetinfo` on a stopped node's chainstate, computed the
//! way Core computes it (see `ibex_chainstate::txoutset`). The RPC will
//! call [`txoutset_info`] too.
//!
//! The subcommand takes the node's directory locks for its run (see
//! [`crate::directory_lock`]): while `ibexd` (or Core's `bitcoind`) runs on
//! the data directory it refuses, naming the directory, rather than read
//! databases that are being written or wiped; and no node starts while it
//! reads. [`txoutset_info`] itself takes no lock: the node's RPC holds them.

use std::path::{Path, PathBuf};

use ibex_chainstate::engine::open::INDEX_DIRECTORY;
use ibex_chainstate::index::store::IndexStore;
use ibex_chainstate::{txoutset_stats, ChainstateError, CoinsDatabase, DatabaseOptions};
use ibex_primitives::txoutset::{TxOutSetHashType, TxOutSetStats};
use ibex_primitives::{Amount, BlockHash};

use crate::config::{parse_options, ConfigError, NodeOptions};
use crate::directory_lock::{lock_existing_node_directories, DirectoryLock, DirectoryLockError};

/// Why `txoutsetinfo` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TxOutSetInfoError {
    /// The options are wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `-hash_type` names no known hash.
    #[error("'{name}' is not a valid hash_type")]
    UnknownHashType {
        /// What was given.
        name: String,
    },
    /// The chainstate could not be read.
    #[error(transparent)]
    Chainstate(#[from] ChainstateError),
    /// A node (Ibex, or Core) holds the data directory's lock.
    #[error(
        "cannot obtain a lock on directory {}: a node is probably running on it \
         (txoutsetinfo reads a stopped node's databases: stop the node first)",
        .directory.display()
    )]
    NodeRunning {
        /// The locked directory.
        directory: PathBuf,
    },
    /// The data directory could not be locked for another reason.
    #[error(transparent)]
    DirectoryLock(#[from] DirectoryLockError),
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
}

/// Core's `hash_type` names.
pub fn parse_hash_type(name: &str) -> Result<TxOutSetHashType, TxOutSetInfoError> {
    match name {
        "hash_serialized_3" => Ok(TxOutSetHashType::HashSerialized3),
        "muhash" => Ok(TxOutSetHashType::MuHash),
        "none" => Ok(TxOutSetHashType::None),
        _ => Err(TxOutSetInfoError::UnknownHashType { name: name.to_owned() }),
    }
}

/// Runs the subcommand on `arguments` (after `txoutsetinfo`); the JSON text.
pub fn run(arguments: &[String]) -> Result<String, TxOutSetInfoError> {
    let mut hash_type = TxOutSetHashType::HashSerialized3;
    let mut node_arguments = Vec::new();
    for argument in arguments {
        let trimmed = argument.trim_start_matches('-');
        match trimmed.strip_prefix("hash_type=") {
            Some(name) if argument.starts_with('-') => hash_type = parse_hash_type(name)?,
            _ => node_arguments.push(argument.clone()),
        }
    }
    let options = parse_options(&node_arguments)?;
    let _directory_locks = lock_for_reading(&options)?;
    let value = txoutset_info(
        &options.chain_directory.join("chainstate"),
        &options.blocks_directory,
        hash_type,
    )?;
    Ok(value.to_json())
}

/// Takes the node's directory locks for this run; a running node is
/// [`TxOutSetInfoError::NodeRunning`].
fn lock_for_reading(options: &NodeOptions) -> Result<Vec<DirectoryLock>, TxOutSetInfoError> {
    lock_existing_node_directories(options).map_err(|error| match error {
        DirectoryLockError::HeldElsewhere { directory } => {
            TxOutSetInfoError::NodeRunning { directory }
        }
        other => TxOutSetInfoError::DirectoryLock(other),
    })
}

/// Core's `gettxoutsetinfo` answer, as `bitcoin-cli` prints it (fields
/// in Core's order, amounts with eight decimals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxOutSetInfo {
    /// Height of the best block.
    pub height: u32,
    /// The best block.
    pub best_block: BlockHash,
    /// The statistics.
    pub stats: TxOutSetStats,
    /// Approximate size of the coins database.
    pub disk_size_bytes: u64,
}

impl TxOutSetInfo {
    /// The JSON text, two-space indented like `bitcoin-cli`.
    pub fn to_json(&self) -> String {
        let mut fields = vec![
            format!("\"height\": {}", self.height),
            format!("\"bestblock\": \"{}\"", self.best_block.to_hex()),
            format!("\"txouts\": {}", self.stats.txouts),
            format!("\"bogosize\": {}", self.stats.bogosize),
        ];
        let hash = self.stats.hash.map(|hash| hash.to_hex());
        match (self.stats.hash_type, hash) {
            (TxOutSetHashType::HashSerialized3, Some(hash)) => {
                fields.push(format!("\"hash_serialized_3\": \"{hash}\""))
            }
            (TxOutSetHashType::MuHash, Some(hash)) => {
                fields.push(format!("\"muhash\": \"{hash}\""))
            }
            _ => {}
        }
        let total = self
            .stats
            .total_amount
            .and_then(|satoshis| Amount::from_sat(satoshis).ok())
            .map_or_else(|| "null".to_owned(), Amount::to_btc_string);
        fields.push(format!("\"total_amount\": {total}"));
        fields.push(format!("\"transactions\": {}", self.stats.transactions));
        fields.push(format!("\"disk_size\": {}", self.disk_size_bytes));
        format!("{{\n  {}\n}}", fields.join(",\n  "))
    }
}

/// Core's `gettxoutsetinfo` for the chainstate at `chainstate_directory`.
pub fn txoutset_info(
    chainstate_directory: &Path,
    blocks_directory: &Path,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetInfo, TxOutSetInfoError> {
    if !chainstate_directory.exists() {
        return Err(TxOutSetInfoError::NoChainstate { path: chainstate_directory.to_path_buf() });
    }
    let options = DatabaseOptions { create_if_missing: false, ..DatabaseOptions::default() };
    let database = CoinsDatabase::open(chainstate_directory, &options)?;
    if database.head_blocks()?.is_some() {
        return Err(TxOutSetInfoError::InterruptedFlush);
    }
    let best_block = database.best_block()?.unwrap_or(BlockHash::ZERO);
    let index = IndexStore::open(&blocks_directory.join(INDEX_DIRECTORY))?.load()?;
    let height = match index.get(&best_block) {
        Some(id) => index.entry(id).height,
        None if best_block == BlockHash::ZERO => 0,
        None => return Err(TxOutSetInfoError::UnknownBestBlock { hash: best_block }),
    };
    let stats = txoutset_stats(&database, hash_type)?;
    let disk_size_bytes = database.estimated_size_bytes()?;
    Ok(TxOutSetInfo { height, best_block, stats, disk_size_bytes })
}
