//! Data directories for the pipeline tests: blocks written in a chosen
//! order, chainstates opened on them with every script checked on two
//! script threads, and what they report.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ibex_blockstore::{write_obfuscation_key, BlockFileWriter, Obfuscation, BLOCK_FILE_BYTES_MAX};
use ibex_chainstate::{
    import_blocks, txoutset_stats, AcceptOutcome, ChainEvent, Chainstate, ChainstateOptions,
    FlushMode, FlushReason, ImportSource, PreparedBlock,
};
use ibex_primitives::txoutset::{TxOutSetHashType, TxOutSetStats};
use ibex_primitives::{BlockBuffers, BlockHash, Params};

/// A data directory and the events of the chainstates opened on it.
pub struct Node {
    root: tempfile::TempDir,
    events: Arc<Mutex<Vec<ChainEvent>>>,
    /// The periodic flush interval: zero flushes after every block, which
    /// settles each block's scripts before the next one is connected.
    pub flush_interval: Duration,
    /// The chain's parameters (regtest's unless a test changes them).
    pub params: Params,
}

impl Node {
    /// An empty data directory (blocks arrive as a peer would send them).
    pub fn empty() -> Node {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("blocks")).unwrap();
        Node {
            root,
            events: Arc::default(),
            flush_interval: Duration::from_secs(3600),
            params: Params::regtest(),
        }
    }

    /// A data directory whose `blk00000.dat` holds `blocks` in this order,
    /// obfuscated with a key of its own.
    pub fn with_blocks<'a>(blocks: impl IntoIterator<Item = &'a Vec<u8>>) -> Node {
        let node = Node::empty();
        node.write_blocks(blocks);
        node
    }

    /// Writes `blocks` into a fresh `blk00000.dat`.
    pub fn write_blocks<'a>(&self, blocks: impl IntoIterator<Item = &'a Vec<u8>>) {
        let key = Obfuscation::new([0x5a, 0x17, 0x00, 0xc3, 0x81, 0x2e, 0xf0, 0x09]);
        write_obfuscation_key(&self.blocks(), key).unwrap();
        let magic = Params::regtest().message_start;
        let mut writer =
            BlockFileWriter::new(&self.blocks(), magic, key, BLOCK_FILE_BYTES_MAX, 0).unwrap();
        for block in blocks {
            writer.append(block).unwrap();
        }
        writer.sync().unwrap();
    }

    fn blocks(&self) -> PathBuf {
        self.root.path().join("blocks")
    }

    pub fn open(&self) -> Chainstate {
        let options = ChainstateOptions {
            params: self.params.clone(),
            blocks_directory: self.blocks(),
            chainstate_directory: self.root.path().join("chainstate"),
            memory: ibex_chainstate::MemoryBudget::for_coins_bytes(32 << 20, 1 << 20),
            script_threads: 2,
            assume_valid: None,
            periodic_flush_interval: self.flush_interval,
            stop_at_height: None,
            prune: ibex_chainstate::PruneMode::Disabled,
            fast_prune: false,
        };
        let events = self.events.clone();
        let observer = move |event: &ChainEvent| events.lock().unwrap().push(event.clone());
        Chainstate::open(options, Box::new(observer)).unwrap()
    }

    /// `(reason, marked)` of every `BlockInvalid` event for `hash`.
    pub fn invalid_events(&self, hash: &BlockHash) -> Vec<(String, bool)> {
        let events = self.events.lock().unwrap();
        let invalid = events.iter().filter_map(|event| match event {
            ChainEvent::BlockInvalid { hash: invalid, reason, marked, .. } if invalid == hash => {
                Some((reason.clone(), *marked))
            }
            _ => None,
        });
        invalid.collect()
    }

    /// Heights of the `BlockInvalid` events, in order.
    pub fn invalid_heights(&self) -> Vec<u32> {
        let events = self.events.lock().unwrap();
        let heights = events.iter().filter_map(|event| match event {
            ChainEvent::BlockInvalid { height, .. } => Some(*height),
            _ => None,
        });
        heights.collect()
    }

    /// Whether some `TipUpdated` event announced `hash`.
    pub fn announced(&self, hash: &BlockHash) -> bool {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .any(|event| matches!(event, ChainEvent::TipUpdated(update) if update.hash == *hash))
    }
}

/// `-reindex` of the node's own block files.
pub fn import(chainstate: &mut Chainstate) {
    let shutdown = AtomicBool::new(false);
    import_blocks(chainstate, &ImportSource::OwnBlockFiles, &shutdown).unwrap();
}

/// Accepts `bytes` as a block from a peer.
pub fn accept(chainstate: &mut Chainstate, bytes: &[u8]) -> AcceptOutcome {
    let mut buffers = BlockBuffers::default();
    let block =
        PreparedBlock::prepare(bytes.to_vec(), None, chainstate.params(), &mut buffers).unwrap();
    chainstate.accept_block(block).unwrap()
}

/// Accepts `bytes` as a new block from a peer and connects what it makes
/// best, as a P2P node does.
pub fn offer(chainstate: &mut Chainstate, bytes: &[u8]) {
    match accept(chainstate, bytes) {
        AcceptOutcome::Accepted(_) => chainstate.advance_best_chain().unwrap(),
        other => panic!("offered block not accepted: {other:?}"),
    }
}

/// Flushes (keeping the cache) and hashes the coins database.
pub fn utxo_stats(chainstate: &mut Chainstate) -> TxOutSetStats {
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins).unwrap();
    txoutset_stats(chainstate.cache().database(), TxOutSetHashType::HashSerialized3).unwrap()
}

/// The tip and UTXO statistics of `blocks` imported alone.
pub fn import_alone(blocks: &[Vec<u8>]) -> ((BlockHash, u32), TxOutSetStats) {
    let node = Node::with_blocks(blocks);
    let mut chainstate = node.open();
    import(&mut chainstate);
    assert!(node.invalid_heights().is_empty());
    (chainstate.tip().unwrap(), utxo_stats(&mut chainstate))
}
