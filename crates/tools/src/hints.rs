//! `ibex hints -datadir=DIR [-regtest|-chain=NAME] -out=FILE [-height=H]
//! [-format=bip456|btcd]`: the SwiftSync hints file of a stopped node's
//! active chain at a height (the tip by default; gzip-compressed when
//! `FILE` ends in `.gz`), the same file `dumphints` writes on a running
//! node
//! ([`ibex_chainstate::hints_writer`]), with the same answer printed.
//!
//! Like `txoutsetinfo`, it takes the node's directory locks for its run:
//! it refuses while a node runs on the directory, and no node starts while
//! it reads. It opens the node's chainstate as the node would (a restart
//! after a crash replays what it must).

use std::path::PathBuf;

use ibex_chainstate::hints_writer::{build_hints, write_hints_file};
use ibex_chainstate::snapshot::roll_back_to_target;
use ibex_chainstate::{Chainstate, ChainstateError, CoinSetTargetError};
use ibex_daemon::directory_lock::{lock_existing_node_directories, DirectoryLockError};
use ibex_daemon::options::{parse_options, ConfigError};
use ibex_primitives::hints::HintsVersion;
use sha2::{Digest, Sha256};

/// Why `hints` failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HintsToolError {
    /// The options are wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// No `-out=FILE`.
    #[error("-out=FILE is required: where to write the hints file")]
    NoOutput,
    /// The output file exists already.
    #[error("{} already exists. If you are sure this is what you want, move it out of the way first", .path.display())]
    OutputExists {
        /// The file.
        path: PathBuf,
    },
    /// `-height` is not a height from 1.
    #[error("invalid -height '{text}': hints cover blocks from height 1")]
    BadHeight {
        /// What was given.
        text: String,
    },
    /// `-format` names no coding.
    #[error("invalid -format '{text}': use bip456 or btcd")]
    BadFormat {
        /// What was given.
        text: String,
    },
    /// The height is not in the node's active chain.
    #[error(transparent)]
    Target(#[from] CoinSetTargetError),
    /// The chainstate could not be opened or read.
    #[error(transparent)]
    Chainstate(#[from] ChainstateError),
    /// The data directory could not be locked (a node runs on it).
    #[error(transparent)]
    DirectoryLock(#[from] DirectoryLockError),
    /// The file could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// What the command line asked for, apart from the node's options.
struct HintsRequest {
    out: PathBuf,
    height: Option<u32>,
    version: HintsVersion,
}

/// Runs the subcommand on `arguments` (after `hints`); the answer as JSON.
pub fn run(arguments: &[String]) -> Result<String, HintsToolError> {
    let (request, node_arguments) = split_arguments(arguments)?;
    if request.out.exists() {
        return Err(HintsToolError::OutputExists { path: request.out });
    }
    let options = parse_options(&node_arguments)?;
    let _directory_locks = lock_existing_node_directories(&options)?;
    let chainstate =
        Chainstate::open(ibex_daemon::engine::chainstate_options(&options), Box::new(|_: &_| {}))?;
    let mut source = chainstate.chain_to_height(request.height)?;
    let reader = chainstate.reader();
    roll_back_to_target(&reader, &mut source.at)?;
    let mut written = build_hints(&reader, &source.at.view, &source.blocks, request.version)?;
    let write_error = |source| HintsToolError::Write { path: request.out.clone(), source };
    let shipped = ibex_daemon::engine::swiftsync_file::shipped_hints_bytes(
        &request.out,
        std::mem::take(&mut written.bytes),
    )
    .map_err(write_error)?;
    write_hints_file(&request.out, &shipped).map_err(write_error)?;
    let digest: [u8; 32] = Sha256::digest(&shipped).into();
    let answer = serde_json::json!({
        "path": request.out.display().to_string(),
        "height": source.at.target.height,
        "hash": source.at.target.hash.to_string(),
        "version": request.version.byte(),
        "outputs": written.outputs_numbered,
        "unspent": written.unspent_count,
        "bytes": shipped.len(),
        "sha256": ibex_primitives::hex::encode(&digest),
    });
    Ok(serde_json::to_string_pretty(&answer).unwrap_or_default())
}

/// `-out`, `-height` and `-format` apart from the node's options.
fn split_arguments(arguments: &[String]) -> Result<(HintsRequest, Vec<String>), HintsToolError> {
    let mut out = None;
    let mut height = None;
    let mut version = HintsVersion::EliasFano;
    let mut node_arguments = Vec::new();
    for argument in arguments {
        let trimmed = argument.trim_start_matches('-');
        if let Some(path) = trimmed.strip_prefix("out=") {
            out = Some(PathBuf::from(path));
        } else if let Some(text) = trimmed.strip_prefix("height=") {
            let bad = || HintsToolError::BadHeight { text: text.to_owned() };
            height = Some(text.parse::<u32>().ok().filter(|&value| value >= 1).ok_or_else(bad)?);
        } else if let Some(text) = trimmed.strip_prefix("format=") {
            version = match text {
                "bip456" => HintsVersion::EliasFano,
                "btcd" => HintsVersion::GapList,
                _ => return Err(HintsToolError::BadFormat { text: text.to_owned() }),
            };
        } else {
            node_arguments.push(argument.clone());
        }
    }
    let out = out.ok_or(HintsToolError::NoOutput)?;
    Ok((HintsRequest { out, height, version }, node_arguments))
}
