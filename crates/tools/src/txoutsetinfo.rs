//! `ibex txoutsetinfo -datadir=DIR [-regtest|-chain=NAME] [-hash_type=...]`:
//! Core's `gettxoutsetinfo` on a stopped node's chainstate, computed by the
//! daemon's own implementation ([`ibex_daemon::txoutset`]) and printed with
//! `ibex_rpc::write_txoutset_info_json`, indented as `bitcoin-cli` prints
//! it.
//!
//! The subcommand takes the node's directory locks for its run (see
//! [`ibex_daemon::directory_lock`]): while `ibexd` (or Core's `bitcoind`)
//! runs on the data directory it refuses, naming the directory, rather than
//! read databases that are being written or wiped; and no node starts
//! while it reads.

use std::path::PathBuf;

use ibex_daemon::directory_lock::{
    lock_existing_node_directories, DirectoryLock, DirectoryLockError,
};
use ibex_daemon::options::{parse_options, ConfigError, NodeOptions};
use ibex_daemon::txoutset::{txoutset_info, TxOutSetError, TxOutSetInfo};
use ibex_primitives::txoutset::TxOutSetHashType;

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
    Read(#[from] TxOutSetError),
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
    /// The total amount overflowed (Core treats it as a bug).
    #[error(transparent)]
    TotalAmountOverflow(#[from] ibex_rpc::backend::TotalAmountOverflow),
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
    // With an AssumeUTXO snapshot loaded, the node's active coins are the
    // snapshot chainstate's, as `gettxoutsetinfo` reports them.
    let coins_directory =
        ibex_chainstate::active_coins_directory(&options.chain_directory.join("chainstate"));
    let info = txoutset_info(&coins_directory, &options.blocks_directory, hash_type)?;
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
