//! The chain a benchmark replays: the block files of a Core `blocks/`
//! directory, their network, the height runs stop at, and a fingerprint of
//! the files to prove no run wrote to them (see the [module docs](super)).
//!
//! Napkin math for the header scan (only for a chain without
//! `manifest.json` and without `--stop-at-height`): 88 bytes read per block
//! and 64 bytes kept (hash and parent), so mainnet's ~900,000 blocks cost
//! ~80 MB of reads and ~60 MB of memory, a few seconds.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ibex_blockstore::{read_obfuscation_key, Obfuscation, RecordHeaders};
use ibex_primitives::{BlockHash, Network, Params};

use super::{io_error, BenchError};

/// The obfuscation key's file name in a blocks directory.
pub const KEY_FILE_NAME: &str = "xor.dat";
/// `ibex gen`'s manifest in a generated blocks directory.
pub const MANIFEST_FILE_NAME: &str = "manifest.json";
/// The largest manifest read, in bytes (a generated one is a few KiB).
pub const MANIFEST_BYTES_MAX: u64 = 1024 * 1024;
/// Block file numbers have five digits.
pub const BLOCK_FILES_MAX: u32 = 100_000;

/// One chain file's length and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    path: PathBuf,
    length_bytes: u64,
    modified: Option<SystemTime>,
}

/// The chain's files, as found before the first run.
#[derive(Debug, Clone)]
pub struct ChainInput {
    /// The blocks directory.
    pub directory: PathBuf,
    /// `blk00000.dat`, `blk00001.dat`, ... up to the first missing number
    /// (Core ignores files after a gap too).
    pub block_files: Vec<PathBuf>,
    /// `xor.dat`, when the directory has one.
    pub key_file: Option<PathBuf>,
    /// The network the files belong to.
    pub network: Network,
    /// The height of the chain's tip: `manifest.json`'s `block_count`,
    /// else the longest header chain from the network's genesis.
    pub tip_height: u32,
    stamps: Vec<FileStamp>,
}

/// `blk?????.dat` number `number` in `directory`.
fn block_file(directory: &Path, number: u32) -> PathBuf {
    directory.join(format!("blk{number:05}.dat"))
}

fn stamp(path: &Path) -> Result<FileStamp, BenchError> {
    let metadata = std::fs::metadata(path).map_err(io_error(path))?;
    Ok(FileStamp {
        path: path.to_path_buf(),
        length_bytes: metadata.len(),
        modified: metadata.modified().ok(),
    })
}

fn chain_error(directory: &Path, reason: String) -> BenchError {
    BenchError::Chain { directory: directory.to_path_buf(), reason }
}

/// The network whose magic starts the first block file.
fn detect_network(first_file: &Path, obfuscation: &Obfuscation) -> Result<Network, BenchError> {
    let mut magic = [0u8; 4];
    File::open(first_file)
        .and_then(|mut file| file.read_exact(&mut magic))
        .map_err(io_error(first_file))?;
    obfuscation.apply(&mut magic, 0);
    Network::ALL
        .into_iter()
        .find(|network| Params::for_network(*network).message_start == magic)
        .ok_or_else(|| BenchError::Chain {
            directory: first_file.to_path_buf(),
            reason: format!("magic {magic:02x?} is no network's; give --chain"),
        })
}

/// `manifest.json`'s `block_count`, if the directory has a manifest.
fn manifest_tip_height(directory: &Path) -> Result<Option<u32>, BenchError> {
    let path = directory.join(MANIFEST_FILE_NAME);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(&path)(error)),
    };
    let mut text = Vec::new();
    file.take(MANIFEST_BYTES_MAX).read_to_end(&mut text).map_err(io_error(&path))?;
    let manifest: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|error| chain_error(directory, format!("{MANIFEST_FILE_NAME}: {error}")))?;
    let count = manifest["block_count"].as_u64().and_then(|count| u32::try_from(count).ok());
    count
        .map(Some)
        .ok_or_else(|| chain_error(directory, format!("{MANIFEST_FILE_NAME} has no block_count")))
}

/// The height of the longest chain of headers from `genesis` in `parents`
/// (each block's hash to its parent's).
pub fn longest_chain_height(parents: &HashMap<BlockHash, BlockHash>, genesis: BlockHash) -> u32 {
    let mut heights: HashMap<BlockHash, u32> = HashMap::with_capacity(parents.len());
    heights.insert(genesis, 0);
    let mut best = 0;
    let mut path = Vec::new();
    for &start in parents.keys() {
        path.clear();
        let mut cursor = start;
        // Walk back to a block of known height; a block whose ancestry
        // leaves the files (or loops) never reaches genesis and is skipped.
        let base = loop {
            if let Some(&height) = heights.get(&cursor) {
                break Some(height);
            }
            if path.len() > parents.len() {
                break None;
            }
            path.push(cursor);
            match parents.get(&cursor) {
                Some(&parent) => cursor = parent,
                None => break None,
            }
        };
        let Some(base) = base else { continue };
        for (steps, hash) in path.iter().rev().enumerate() {
            let height = base.saturating_add(steps as u32 + 1);
            heights.insert(*hash, height);
            best = best.max(height);
        }
    }
    best
}

/// Reads every record's header and returns the longest chain's height.
fn scan_tip_height(input: &ChainInput, obfuscation: &Obfuscation) -> Result<u32, BenchError> {
    let params = Params::for_network(input.network);
    let mut parents = HashMap::new();
    for path in &input.block_files {
        for record in RecordHeaders::open(path, params.message_start, *obfuscation)? {
            let header = record?.header;
            parents.insert(header.block_hash(), header.previous_block_hash);
        }
    }
    Ok(longest_chain_height(&parents, params.genesis_hash))
}

impl ChainInput {
    /// Finds the chain's files, its network (`chain_name`, else from the
    /// first file's magic) and its tip height.
    pub fn open(directory: &Path, chain_name: Option<&str>) -> Result<ChainInput, BenchError> {
        let block_files: Vec<PathBuf> = (0..BLOCK_FILES_MAX)
            .map(|number| block_file(directory, number))
            .take_while(|path| path.is_file())
            .collect();
        let Some(first_file) = block_files.first() else {
            let reason = "no blk00000.dat: give a blocks/ directory (ibex gen --out)".to_owned();
            return Err(chain_error(directory, reason));
        };
        let key_path = directory.join(KEY_FILE_NAME);
        let key_file = key_path.is_file().then_some(key_path);
        let obfuscation = read_obfuscation_key(directory)?;
        let network = match chain_name {
            Some(name) => name
                .parse()
                .map_err(|error| BenchError::Arguments { message: format!("--chain: {error}") })?,
            None => detect_network(first_file, &obfuscation)?,
        };
        let mut input = ChainInput {
            directory: directory.to_path_buf(),
            block_files,
            key_file,
            network,
            tip_height: 0,
            stamps: Vec::new(),
        };
        input.tip_height = match manifest_tip_height(directory)? {
            Some(height) => height,
            None => scan_tip_height(&input, &obfuscation)?,
        };
        let files = input.key_file.iter().chain(&input.block_files);
        input.stamps = files.map(|path| stamp(path)).collect::<Result<_, _>>()?;
        Ok(input)
    }

    /// Fails if a chain file's length or modification time changed since
    /// [`ChainInput::open`]; `run` names the run just finished.
    pub fn check_unchanged(&self, run: &str) -> Result<(), BenchError> {
        for before in &self.stamps {
            if stamp(&before.path)? != *before {
                let path = before.path.clone();
                return Err(BenchError::ChainFilesChanged { path, run: run.to_owned() });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(byte: u8) -> BlockHash {
        BlockHash([byte; 32])
    }

    #[test]
    fn finds_the_longest_chain_from_genesis() {
        // 0 <- 1 <- 2 <- 3, and a fork 1 <- 4; 9 <- 8 never reaches genesis.
        let parents: HashMap<BlockHash, BlockHash> = [
            (hash(3), hash(2)),
            (hash(1), hash(0)),
            (hash(4), hash(1)),
            (hash(2), hash(1)),
            (hash(8), hash(9)),
        ]
        .into_iter()
        .collect();
        assert_eq!(longest_chain_height(&parents, hash(0)), 3);
        assert_eq!(longest_chain_height(&HashMap::new(), hash(0)), 0);
        let looping: HashMap<BlockHash, BlockHash> =
            [(hash(5), hash(6)), (hash(6), hash(5))].into_iter().collect();
        assert_eq!(longest_chain_height(&looping, hash(0)), 0, "a loop is no chain");
    }

    #[test]
    fn refuses_a_directory_without_block_files() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let error = ChainInput::open(directory.path(), None).expect_err("no block files");
        assert!(error.to_string().contains("no blk00000.dat"), "{error}");
    }

    #[test]
    fn detects_the_network_and_notices_a_changed_file() {
        let directory = tempfile::tempdir().expect("temporary directory");
        let regtest = Params::for_network(Network::Regtest);
        let mut file = regtest.message_start.to_vec();
        file.extend_from_slice(&[0; 4]);
        std::fs::write(directory.path().join("blk00000.dat"), &file).expect("write");
        let input = ChainInput::open(directory.path(), None).expect("opened");
        assert_eq!((input.network, input.tip_height), (Network::Regtest, 0));
        assert_eq!(input.block_files.len(), 1);
        input.check_unchanged("a-1").expect("unchanged");
        file.push(0);
        std::fs::write(directory.path().join("blk00000.dat"), &file).expect("write");
        let error = input.check_unchanged("a-1").expect_err("changed");
        assert!(error.to_string().contains("during run a-1"), "{error}");
        std::fs::write(directory.path().join("blk00000.dat"), [1, 2, 3, 4]).expect("write");
        let error = ChainInput::open(directory.path(), None).expect_err("unknown magic");
        assert!(error.to_string().contains("give --chain"), "{error}");
    }
}
