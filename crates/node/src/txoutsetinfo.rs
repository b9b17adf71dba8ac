//! `ibex txoutsetinfo -datadir=DIR [-regtest|-chain=NAME] [-hash_type=...]`:
//! Core's `gettxoutsetinfo` on a stopped node's chainstate, computed the
//! way Core computes it (see `ibex_chainstate::txoutset`).
//!
//! One implementation serves the tool and the `gettxoutsetinfo` RPC: both
//! walk the coins with `ibex_chainstate::txoutset` (the tool over the
//! database alone, [`txoutset_info`]; the RPC over the running node's
//! database and cache merged, at its settled tip, [`txoutset_info_at_tip`],
//! on the engine's thread), both answer an [`ibex_rpc::backend::TxOutSetInfo`]
//! and both print it with `ibex_rpc::write_txoutset_info_json` (the tool
//! indents it as `bitcoin-cli` does).
//!
//! The subcommand takes the node's directory locks for its run (see
//! [`crate::directory_lock`]): while `ibexd` (or Core's `bitcoind`) runs on
//! the data directory it refuses, naming the directory, rather than read
//! databases that are being written or wiped; and no node starts while it
//! reads. [`txoutset_info`] itself takes no lock: the node's RPC holds them.

use std::path::{Path, PathBuf};

use ibex_chainstate::engine::open::INDEX_DIRECTORY;
use ibex_chainstate::index::store::IndexStore;
use ibex_chainstate::{
    txoutset_stats, Chainstate, ChainstateError, CoinsDatabase, DatabaseKind, DatabaseOptions,
};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::BlockHash;
pub use ibex_rpc::backend::TxOutSetInfo;

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
    /// The total amount overflowed (Core treats it as a bug).
    #[error(transparent)]
    TotalAmountOverflow(#[from] ibex_rpc::backend::TotalAmountOverflow),
    /// The chain has no tip yet.
    #[error("the chain has no tip yet")]
    NoTip,
}

impl From<ChainstateError> for TxOutSetInfoError {
    fn from(source: ChainstateError) -> Self {
        match source.database_to_rebuild() {
            Some(database) => TxOutSetInfoError::DatabaseUnusable { database, source },
            None => TxOutSetInfoError::Chainstate(source),
        }
    }
}

/// Core's `hash_type` names (the RPC's reading of them).
pub fn parse_hash_type(name: &str) -> Result<TxOutSetHashType, TxOutSetInfoError> {
    ibex_rpc::txoutset_hash_type(name)
        .ok_or_else(|| TxOutSetInfoError::UnknownHashType { name: name.to_owned() })
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
    let info = txoutset_info(
        &options.chain_directory.join("chainstate"),
        &options.blocks_directory,
        hash_type,
    )?;
    txoutset_info_json(&info)
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

/// `gettxoutsetinfo`'s JSON (the RPC's writer), two-space indented as
/// `bitcoin-cli` prints it.
pub fn txoutset_info_json(info: &TxOutSetInfo) -> Result<String, TxOutSetInfoError> {
    let mut compact = Vec::new();
    ibex_rpc::write_txoutset_info_json(&mut compact, info)?;
    Ok(indent_json(&String::from_utf8_lossy(&compact)))
}

/// Indents compact JSON two spaces a level, `"key": value` (numbers and
/// strings copied as written).
fn indent_json(compact: &str) -> String {
    let mut text = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let newline = |text: &mut String, depth: usize| {
        text.push('\n');
        text.push_str(&"  ".repeat(depth));
    };
    let mut characters = compact.chars().peekable();
    while let Some(character) = characters.next() {
        if in_string {
            text.push(character);
            match character {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match character {
            '"' => {
                in_string = true;
                text.push(character);
            }
            '{' | '[' => {
                text.push(character);
                // Empty: `{}` and `[]` on one line, as `bitcoin-cli`.
                if let Some(close) = characters.next_if(|next| matches!(next, '}' | ']')) {
                    text.push(close);
                    continue;
                }
                depth += 1;
                newline(&mut text, depth);
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut text, depth);
                text.push(character);
            }
            ',' => {
                text.push(character);
                newline(&mut text, depth);
            }
            ':' => text.push_str(": "),
            _ => text.push(character),
        }
    }
    text
}

/// `gettxoutsetinfo` at a running node's settled tip: the coins database
/// and the cache merged (no flush). Call it on the engine's thread (a
/// `ChainReader::query`).
pub fn txoutset_info_at_tip(
    chainstate: &Chainstate,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetInfo, TxOutSetInfoError> {
    let (best_block, height) = chainstate.tip().ok_or(TxOutSetInfoError::NoTip)?;
    let stats = chainstate.txoutset_stats(hash_type)?;
    let disk_size_bytes = chainstate.cache().database().estimated_size_bytes()?;
    Ok(TxOutSetInfo { height, best_block, stats, disk_size_bytes })
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
    // Read-only, both databases: a tool that reads changes no byte of them,
    // whether it succeeds or fails.
    let options =
        DatabaseOptions { create_if_missing: false, read_only: true, ..DatabaseOptions::default() };
    let database = CoinsDatabase::open(chainstate_directory, &options)?;
    if database.head_blocks()?.is_some() {
        return Err(TxOutSetInfoError::InterruptedFlush);
    }
    let best_block = database.best_block()?.unwrap_or(BlockHash::ZERO);
    let index = IndexStore::open_read_only(&blocks_directory.join(INDEX_DIRECTORY))?.load()?;
    let height = match index.get(&best_block) {
        Some(id) => index.entry(id).height,
        None if best_block == BlockHash::ZERO => 0,
        None => return Err(TxOutSetInfoError::UnknownBestBlock { hash: best_block }),
    };
    let stats = txoutset_stats(&database, hash_type)?;
    let disk_size_bytes = database.estimated_size_bytes()?;
    Ok(TxOutSetInfo { height, best_block, stats, disk_size_bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_indented_as_bitcoin_cli_prints_it() {
        let compact = r#"{"a":1,"b":"x,{\"y\":[]}","c":[1,{"d":null}],"e":{}}"#;
        let expected = "{\n  \"a\": 1,\n  \"b\": \"x,{\\\"y\\\":[]}\",\n  \"c\": [\n    1,\n    {\n      \"d\": null\n    }\n  ],\n  \"e\": {}\n}";
        assert_eq!(indent_json(compact), expected);
        assert!(matches!(parse_hash_type("muhash"), Ok(TxOutSetHashType::MuHash)));
        assert!(matches!(
            parse_hash_type("sha1"),
            Err(TxOutSetInfoError::UnknownHashType { name }) if name == "sha1"
        ));
    }
}
