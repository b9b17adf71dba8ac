//! Generated chains held in memory and data directories to import them into.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ibex_blockstore::{Obfuscation, Records};
use ibex_chainstate::{
    import_blocks, txoutset_stats, AcceptOutcome, BlockSource, ChainEvent, Chainstate,
    ChainstateOptions, FlushMode, FlushReason, ImportSource, ImportSummary, PreparedBlock,
};
use ibex_generator::{generate, GeneratorOptions, Manifest, Profile};
use ibex_primitives::txoutset::{TxOutSetHashType, TxOutSetStats};
use ibex_primitives::{BlockBuffers, BlockHash, Params};

/// Seed of every chain here: the clean, invalid and fork chains share their
/// main chain (the generator draws the extra blocks from other streams).
const SEED: u64 = 7;

/// A generated chain held in memory: its `blk` files, `xor.dat` and manifest.
pub struct Generated {
    pub manifest: Manifest,
    pub files: Vec<(String, Vec<u8>)>,
}

impl Generated {
    pub fn new(configure: impl FnOnce(&mut GeneratorOptions)) -> Generated {
        let directory = tempfile::tempdir().unwrap();
        let mut options =
            GeneratorOptions::new(Profile::Tiny, SEED, directory.path().to_path_buf());
        options.threads = Some(2);
        configure(&mut options);
        let manifest = generate(&options).unwrap().manifest;
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(directory.path())
            .unwrap()
            .map(|entry| entry.unwrap())
            .map(|entry| (entry.file_name().to_string_lossy().into_owned(), entry.path()))
            .filter(|(name, _)| name.starts_with("blk") || name == "xor.dat")
            .map(|(name, path)| (name, std::fs::read(path).unwrap()))
            .collect();
        files.sort();
        assert!(files.iter().any(|(name, _)| name == "blk00000.dat"));
        Generated { manifest, files }
    }

    /// Writes the block files and key into `directory`.
    pub fn install(&self, directory: &Path) {
        std::fs::create_dir_all(directory).unwrap();
        for (name, bytes) in &self.files {
            std::fs::write(directory.join(name), bytes).unwrap();
        }
    }

    /// Every block, in file order.
    pub fn blocks(&self) -> Vec<Vec<u8>> {
        let key: [u8; 8] = self.manifest_key();
        let magic = Params::regtest().message_start;
        let mut blocks = Vec::new();
        for (name, bytes) in self.files.iter().filter(|(name, _)| name.starts_with("blk")) {
            let mut data = bytes.clone();
            Obfuscation::new(key).apply(&mut data, 0);
            blocks.extend(Records::new(&data, magic).map(|record| record.bytes.to_vec()));
            assert!(!blocks.is_empty(), "{name} holds no block");
        }
        assert_eq!(blocks.len() as u64, self.manifest.records);
        blocks
    }

    fn manifest_key(&self) -> [u8; 8] {
        let bytes = ibex_primitives::hex::decode(&self.manifest.obfuscation_key).unwrap();
        bytes.try_into().unwrap()
    }

    pub fn tip(&self) -> (String, u32) {
        (self.manifest.tip_hash.clone(), self.manifest.block_count)
    }
}

pub fn clean() -> &'static Generated {
    static CHAIN: OnceLock<Generated> = OnceLock::new();
    CHAIN.get_or_init(|| Generated::new(|_| {}))
}

pub fn with_invalid_blocks() -> &'static Generated {
    static CHAIN: OnceLock<Generated> = OnceLock::new();
    CHAIN.get_or_init(|| Generated::new(|options| options.invalid = true))
}

pub fn with_forks() -> &'static Generated {
    static CHAIN: OnceLock<Generated> = OnceLock::new();
    CHAIN.get_or_init(|| Generated::new(|options| options.forks = true))
}

pub type Events = Arc<Mutex<Vec<ChainEvent>>>;

/// A data directory: `blocks/` and `chainstate/` under a temporary root,
/// with the events of every chainstate opened on it.
pub struct Node {
    root: tempfile::TempDir,
    events: Events,
    pub cache_bytes_max: usize,
    /// Table-reader bytes left outside the cache's share (the engine's
    /// default unless a test changes it).
    pub table_readers_uncounted_bytes: usize,
    /// The chain's parameters (regtest's unless a test changes them).
    pub params: Params,
}

impl Node {
    pub fn new() -> Node {
        let root = tempfile::tempdir().unwrap();
        Node {
            root,
            events: Events::default(),
            cache_bytes_max: 32 << 20,
            table_readers_uncounted_bytes: ibex_chainstate::TABLE_READERS_UNCOUNTED_BYTES_MAX,
            params: Params::regtest(),
        }
    }

    pub fn with_chain(chain: &Generated) -> Node {
        let node = Node::new();
        chain.install(&node.blocks());
        node
    }

    pub fn blocks(&self) -> PathBuf {
        self.root.path().join("blocks")
    }

    pub fn open(&self) -> Chainstate {
        self.open_watching(|_| {})
    }

    /// Opens the chainstate with `watch` called on every event (on the
    /// connecting thread) after it is recorded.
    pub fn open_watching(&self, mut watch: impl FnMut(&ChainEvent) + Send + 'static) -> Chainstate {
        let options = ChainstateOptions {
            params: self.params.clone(),
            blocks_directory: self.blocks(),
            chainstate_directory: self.root.path().join("chainstate"),
            memory: ibex_chainstate::MemoryBudget {
                table_readers_uncounted_bytes: self.table_readers_uncounted_bytes,
                ..ibex_chainstate::MemoryBudget::for_coins_bytes(self.cache_bytes_max, 1 << 16)
            },
            script_threads: 2,
            assume_valid: None,
            periodic_flush_interval: Duration::from_secs(3600),
            stop_at_height: None,
            prune: ibex_chainstate::PruneMode::Disabled,
            fast_prune: false,
        };
        let events = self.events.clone();
        let observer = move |event: &ChainEvent| {
            events.lock().unwrap().push(event.clone());
            watch(event);
        };
        Chainstate::open(options, Box::new(observer)).unwrap()
    }

    pub fn events(&self) -> Vec<ChainEvent> {
        self.events.lock().unwrap().clone()
    }

    /// Hashes of every block that was the tip at some point.
    pub fn tips_seen(&self) -> HashSet<BlockHash> {
        let events = self.events();
        let updates = events.iter().filter_map(|event| match event {
            ChainEvent::TipUpdated(update) => Some(update.hash),
            _ => None,
        });
        updates.collect()
    }
}

pub fn import(chainstate: &mut Chainstate) -> ImportSummary {
    import_blocks(chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false)).unwrap()
}

/// Flushes (keeping the cache) and hashes the coins database.
pub fn utxo_stats(chainstate: &mut Chainstate) -> TxOutSetStats {
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    txoutset_stats(chainstate.cache().database(), TxOutSetHashType::HashSerialized3).unwrap()
}

pub fn tip_hex(chainstate: &Chainstate) -> (String, u32) {
    let (hash, height) = chainstate.tip().unwrap();
    (hash.to_hex(), height)
}

/// Imports `chain` into a fresh directory; the tip and its UTXO statistics.
pub fn import_alone(chain: &Generated) -> ((String, u32), TxOutSetStats) {
    let node = Node::with_chain(chain);
    let mut chainstate = node.open();
    import(&mut chainstate);
    (tip_hex(&chainstate), utxo_stats(&mut chainstate))
}

pub struct InvalidEvent {
    pub hash: BlockHash,
    pub height: u32,
    pub reason: String,
    pub marked: bool,
}

pub fn invalid_events(events: &[ChainEvent]) -> Vec<InvalidEvent> {
    let invalid = events.iter().filter_map(|event| match event {
        ChainEvent::BlockInvalid { hash, height, reason, marked } => Some(InvalidEvent {
            hash: *hash,
            height: *height,
            reason: reason.clone(),
            marked: *marked,
        }),
        _ => None,
    });
    invalid.collect()
}

/// Offers `bytes` as a peer would hand it over, connecting what it makes best.
pub fn offer(chainstate: &mut Chainstate, bytes: &[u8]) {
    let mut buffers = BlockBuffers::default();
    let block =
        PreparedBlock::prepare(bytes.to_vec(), None, chainstate.params(), &mut buffers).unwrap();
    match chainstate.offer_block(block, BlockSource::Peer(1)).unwrap() {
        AcceptOutcome::Accepted(_) | AcceptOutcome::AlreadyKnown(_) => {}
        other => panic!("offered block not accepted: {other:?}"),
    }
}
