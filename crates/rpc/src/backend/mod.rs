//! What the server asks of the node: the [`NodeBackend`] trait.
//!
//! This crate does not depend on the chainstate (RocksDB); the node crate
//! implements [`NodeBackend`] over the chainstate's `ChainReader` and its
//! networking handle. The server calls it from its own worker threads
//! (`-rpcthreads`), never from the thread that drives HTTP, so a method may
//! block: waiting for the engine thread, reading a block file, waiting for
//! a new tip.
//!
//! Each method says which side of `ChainReader` should answer it:
//! - **snapshot** (`ChainReader::snapshot`, `block_hash_at`): published by
//!   the engine after each settled block, read under a lock held for well
//!   under a microsecond. `getblockcount`, `getbestblockhash` and
//!   `getblockhash` use only these, so dashboards polling them never wait for
//!   the engine, even during a flush.
//! - **query** (`ChainReader::query`): a closure run on the engine's thread
//!   between blocks (index entries, stored blocks and undo data, coins, chain
//!   tips). One method is one query: [`NodeBackend::block`] gives the index
//!   entry, the bytes and the undo data together, so `getblock` at verbosity
//!   3 costs the engine one pause, not three.
//! - **network**: the P2P side's counters; [`BackendError::P2pDisabled`] when
//!   the node runs without networking.
//! - **engine command**: a change of the chain or its files an operator
//!   asks for (`invalidateblock`, `reconsiderblock`, `pruneblockchain`), sent to the engine's thread,
//!   which carries it out between blocks and answers when the best chain
//!   is active again; [`BackendError::ChainControlUnavailable`] from a node
//!   that takes no such command.

mod chain;
mod network;
mod state;

pub use chain::{
    BlockData, BlockEntry, BlockchainInfo, ChainTip, ChainTipStatus, CoinsAnswer, PruneInfo,
    PruneSettings, StoredBlock, TipRef, UnspentOutput,
};
pub use state::{
    AssumeUtxoChainstates, ChainstateInfo, CoinsCacheSizes, DumpedHints, DumpedTxOutSet,
    LoadedTxOutSet, TotalAmountOverflow, TxOutSetInfo,
};

pub use crate::deployment::DeploymentInfo;
pub use network::{
    AddNodeCommand, AddedNodeConnection, AddedNodeInfo, BannedSubnet, LocalAddress, NetTotals,
    NetworkConnections, NetworkInfo, NetworkReachability, NetworkRequestError, NodeAddress,
    PeerRelay, PeerReport, PeerSelector, PeerState, RelayFees, UploadTarget,
};

use std::time::Duration;

use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, OutPoint};

/// Why the node could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The chain has no tip yet (before the genesis block is connected).
    #[error("the chain has no tip yet")]
    NoTip,
    /// The engine refused the query: too many wait already.
    #[error("the chain engine is busy: too many queries wait")]
    Busy,
    /// The engine gave no answer in time (a long flush).
    #[error("no answer from the chain engine within {timeout_ms} ms")]
    TimedOut {
        /// How long the server waited.
        timeout_ms: u64,
    },
    /// The node is shutting down.
    #[error("the node is shutting down")]
    Stopped,
    /// The block is in the index but its data is not stored.
    #[error("block {block_hash} is not available (pruned: {pruned})")]
    BlockDataUnavailable {
        /// The block.
        block_hash: BlockHash,
        /// Whether it was pruned (else it was never downloaded).
        pruned: bool,
    },
    /// The node runs without networking (Core's `connman` is absent).
    #[error("peer-to-peer functionality missing or disabled")]
    P2pDisabled,
    /// The network side refused a request (`addnode`, `setban`, ...).
    #[error(transparent)]
    Network(#[from] NetworkRequestError),
    /// Reading the node's storage failed.
    #[error("reading the node's storage failed")]
    Storage {
        /// What failed underneath.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The block is not in the node's block index (Core's "Block not
    /// found").
    #[error("block {block_hash} is not known")]
    BlockNotFound {
        /// The block asked for.
        block_hash: BlockHash,
    },
    /// `dumptxoutset`'s file exists already (Core refuses to overwrite).
    #[error("{path} already exists. If you are sure this is what you want, move it out of the way first")]
    SnapshotPathExists {
        /// The absolute path.
        path: String,
    },
    /// `dumptxoutset`'s temporary file cannot be created.
    #[error("Couldn't open file {path} for writing.")]
    SnapshotPathUnwritable {
        /// The temporary file's path.
        path: String,
    },
    /// `loadtxoutset`'s file cannot be opened.
    #[error("Couldn't open file {path} for reading.")]
    SnapshotUnreadable {
        /// The absolute path.
        path: String,
    },
    /// `loadtxoutset`'s file does not start with a snapshot's metadata.
    #[error("Unable to parse metadata: {source}")]
    SnapshotMetadataUnparsable {
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `loadtxoutset` refused or failed: Core's words, then the path.
    #[error("Unable to load UTXO snapshot: {source}. ({path})")]
    SnapshotNotLoaded {
        /// The absolute path.
        path: String,
        /// Why (Core's reasons: "Population failed: ...", the base block
        /// checks, the content hash).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// `submitheader`'s header was refused: Core's reason.
    #[error("{source}")]
    HeaderRefused {
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Another `loadtxoutset` is loading a snapshot now.
    #[error("a snapshot is being loaded already")]
    SnapshotLoadRunning,
    /// A height above the active chain's tip.
    #[error("Target block height {height} after current tip {tip_height}")]
    HeightAboveTip {
        /// The height asked for.
        height: u32,
        /// The tip's height.
        tip_height: u32,
    },
    /// `dumptxoutset`'s rollback target is not in the active chain.
    #[error("block {block_hash} is not in the active chain: no rollback reaches it")]
    NotInActiveChain {
        /// The block asked for.
        block_hash: BlockHash,
    },
    /// The node takes no command that changes the chain.
    #[error("this node takes no command that changes the chain")]
    ChainControlUnavailable,
    /// `pruneblockchain` on a node that keeps every block (Core's words).
    #[error("Cannot prune blocks because node is not in prune mode.")]
    NotPruning,
    /// `dumptxoutset`'s rollback needs the undo data of blocks a pruning
    /// node removed (Core's words).
    #[error(
        "Could not roll back to requested height since necessary block data is already pruned."
    )]
    RollbackDataPruned,
    /// The engine failed while changing the chain (Core's
    /// `RPC_DATABASE_ERROR` with the validation state).
    #[error("changing the chain failed")]
    ChainChangeFailed {
        /// What failed underneath.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The node as the RPC and REST server sees it. Implemented by the node
/// crate over `ChainReader` and its networking handle; the server calls it
/// from worker threads, and the **Snapshot** methods also from its HTTP
/// threads: those must answer at once, without blocking.
pub trait NodeBackend: Send + Sync + 'static {
    /// The active tip's hash and height. **Snapshot.**
    fn tip(&self) -> Result<TipRef, BackendError>;

    /// The active chain's block at `height`, `None` above the tip.
    /// **Snapshot.**
    fn block_hash_at(&self, height: u32) -> Result<Option<BlockHash>, BackendError>;

    /// The index entry of any known block (active or not), with its place
    /// relative to the active tip read at the same instant. **Query.**
    fn block_entry(&self, hash: &BlockHash) -> Result<Option<BlockEntry>, BackendError>;

    /// A stored block: its index entry, its bytes and, when
    /// `include_spent_coins` and the node has its undo data, the coins its
    /// inputs spent. `Ok(None)` for a hash the index does not know;
    /// [`BackendError::BlockDataUnavailable`] for a known block without data.
    /// **Query** plus a block (and undo) file read.
    fn block(
        &self,
        hash: &BlockHash,
        include_spent_coins: bool,
    ) -> Result<Option<StoredBlock>, BackendError>;

    /// Up to `count_max` index entries of the active chain, starting at
    /// `start` and going up; empty when `start` is unknown or not in the
    /// active chain (REST `headers`). The default asks entry by entry; a
    /// node should answer it in one query.
    fn active_chain_entries(
        &self,
        start: &BlockHash,
        count_max: usize,
    ) -> Result<Vec<BlockEntry>, BackendError> {
        let mut entries = Vec::new();
        let mut next = Some(*start);
        while let Some(hash) = next {
            if entries.len() >= count_max {
                break;
            }
            let Some(entry) = self.block_entry(&hash)? else { break };
            if !entry.in_active_chain {
                break;
            }
            next = entry.next_block_hash;
            entries.push(entry);
        }
        Ok(entries)
    }

    /// What `getblockchaininfo` reports beyond the tip's entry. **Query.**
    fn blockchain_info(&self) -> Result<BlockchainInfo, BackendError>;

    /// Every chain tip, as Core's `getchaintips` lists them. **Query.**
    fn chain_tips(&self) -> Result<Vec<ChainTip>, BackendError>;

    /// The unspent outputs at `outpoints`, all read at one tip (the tip is
    /// returned with them). With `include_mempool`, outputs the mempool
    /// spends are missing and the mempool's own outputs are found; a node
    /// without a mempool answers as Core does with an empty one. **Query.**
    fn coins(
        &self,
        outpoints: &[OutPoint],
        include_mempool: bool,
    ) -> Result<CoinsAnswer, BackendError>;

    /// Waits until the active tip is no longer `known_tip`, at most
    /// `timeout`, and returns the tip then (unchanged on timeout). The
    /// server calls it in slices of at most a quarter second, so it also
    /// notices its own shutdown. **Snapshot** plus a wait on the engine's
    /// tip notification.
    fn wait_for_tip_change(
        &self,
        known_tip: &BlockHash,
        timeout: Duration,
    ) -> Result<TipRef, BackendError>;

    /// `gettxoutsetinfo` at the active tip: every coin, the cache's
    /// included, hashed as `hash_type` says. **Query** for a view of the
    /// coins, then a walk of the whole coin set on the caller's thread
    /// (Core's `ComputeUTXOStats`, seconds on mainnet) while the engine
    /// goes on.
    fn txoutset_info(&self, hash_type: TxOutSetHashType) -> Result<TxOutSetInfo, BackendError>;

    /// Heights of the blocks a UTXO snapshot may be based on (the
    /// network's AssumeUTXO table), for `dumptxoutset "rollback"`.
    /// **Snapshot.**
    fn assumeutxo_heights(&self) -> Vec<u32> {
        Vec::new()
    }

    /// `dumptxoutset`: writes the UTXO set at `target` (the tip when
    /// `None`, else a block of the active chain, reached by rolling the
    /// coins back without touching the chain) to `path` (relative to the
    /// data directory), through a temporary file renamed at the end.
    /// **Query** for a view of the coins, then a walk on the caller's
    /// thread: the engine goes on meanwhile.
    fn dump_txoutset(
        &self,
        _path: &str,
        _target: Option<BlockHash>,
    ) -> Result<DumpedTxOutSet, BackendError> {
        Err(BackendError::ChainControlUnavailable)
    }

    /// `dumphints`: writes the SwiftSync hints file of the active chain
    /// at `height` (the tip when `None`) to `path` (relative to the data
    /// directory), coded as `version`, through a temporary file renamed at
    /// the end. **Query** for a view of the coins and the chain, then the
    /// walk on the caller's thread.
    fn dump_hints(
        &self,
        _path: &str,
        _height: Option<u32>,
        _version: ibex_primitives::hints::HintsVersion,
    ) -> Result<DumpedHints, BackendError> {
        Err(BackendError::ChainControlUnavailable)
    }

    /// `loadtxoutset`: loads the snapshot at `path` (relative to the data
    /// directory) into a second chainstate and activates it; the node
    /// follows the tip from its base while a background chainstate
    /// validates up to it. Loading runs on the caller's thread.
    fn load_txoutset(&self, _path: &str) -> Result<LoadedTxOutSet, BackendError> {
        Err(BackendError::ChainControlUnavailable)
    }

    /// AssumeUTXO's chainstates, when the active one was loaded from a
    /// snapshot (`getchainstates`, `getblockchaininfo`'s
    /// `backgroundvalidation`); `None` for a node validated from genesis.
    /// **Query.**
    fn assumeutxo_chainstates(&self) -> Result<Option<AssumeUtxoChainstates>, BackendError> {
        Ok(None)
    }

    /// `getdeploymentinfo` at the block `hash` (the active tip when
    /// `None`); `Ok(None)` for a hash the index does not know. **Query.**
    fn deployment_info(
        &self,
        hash: Option<&BlockHash>,
    ) -> Result<Option<DeploymentInfo>, BackendError>;

    /// The coins caches' sizes (`getchainstates`), fixed at start.
    fn coins_cache_sizes(&self) -> CoinsCacheSizes;

    /// What `getnetworkinfo` reports. **Network.**
    fn network_info(&self) -> Result<NetworkInfo, BackendError>;

    /// Connected peers, for `getpeerinfo`. **Network.**
    fn peers(&self) -> Result<Vec<PeerReport>, BackendError>;

    /// Traffic totals, for `getnettotals`. **Network.**
    fn net_totals(&self) -> Result<NetTotals, BackendError>;

    /// Inbound and outbound connections, for `getconnectioncount`.
    /// **Network.**
    fn connection_count(&self) -> Result<usize, BackendError>;

    /// Adds, removes or tries once a manual connection (`addnode`);
    /// `v2_transport` is the caller's wish, `None` for the node's default.
    /// **Network.**
    fn add_node(
        &self,
        _node: &str,
        _command: AddNodeCommand,
        _v2_transport: Option<bool>,
    ) -> Result<(), BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// Closes a peer's connection (`disconnectnode`). **Network.**
    fn disconnect_peer(&self, _peer: &PeerSelector) -> Result<(), BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// The added nodes, in the order added (`getaddednodeinfo`).
    /// **Network.**
    fn added_nodes(&self) -> Result<Vec<AddedNodeInfo>, BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// Up to `count_max` known addresses (all when 0) on `network` (all
    /// when `None`), in random order, none terrible (`getnodeaddresses`).
    /// **Network.**
    fn node_addresses(
        &self,
        _count_max: usize,
        _network: Option<&str>,
    ) -> Result<Vec<NodeAddress>, BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// Bans `address` until `until_seconds` (since the epoch) and closes
    /// its connections (`setban add`). **Network.**
    fn ban(&self, _address: std::net::IpAddr, _until_seconds: i64) -> Result<(), BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// Lifts a manual ban (`setban remove`). **Network.**
    fn unban(&self, _address: std::net::IpAddr) -> Result<(), BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// The manual bans in force (`listbanned`). **Network.**
    fn banned(&self) -> Result<Vec<BannedSubnet>, BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// Lifts every manual ban (`clearbanned`). **Network.**
    fn clear_bans(&self) -> Result<(), BackendError> {
        Err(BackendError::P2pDisabled)
    }

    /// Asks the node to shut down (`stop`). Returns at once; the node later
    /// stops the server itself.
    fn request_shutdown(&self);

    /// Pruning as the node runs it (`-prune`), `None` when it keeps every
    /// block. Fixed at start: answers at once.
    fn pruning(&self) -> Option<PruneSettings> {
        None
    }

    /// The height of the active chain's first block whose time, or one
    /// of its ancestors', is at least `time_seconds` (Core's
    /// `CChain::FindEarliestAtLeast(time, 0)`, `pruneblockchain` given a
    /// timestamp); `None` when there is none. **Query.**
    fn earliest_block_at_least(&self, time_seconds: i64) -> Result<Option<u32>, BackendError> {
        let _ = time_seconds;
        Ok(None)
    }

    /// Removes the block and undo files whose blocks all lie at or below
    /// `height` (`pruneblockchain`, Core's `PruneBlockFilesManual`; the
    /// caller keeps `height` at least 288 below the tip), the coins
    /// flushed first. Returns Core's `GetPruneHeight` afterwards: the
    /// highest block below the stored run that ends at the tip (`None`:
    /// nothing pruned). [`BackendError::NotPruning`] from a node that keeps
    /// every block. **Engine command.**
    fn prune_block_files(&self, height: u32) -> Result<Option<u32>, BackendError> {
        let _ = height;
        Err(BackendError::NotPruning)
    }

    /// Indexes one header (`submitheader`): its parent must be indexed
    /// and it must pass the header checks, else
    /// [`BackendError::HeaderRefused`] with Core's reason. **Engine
    /// command.**
    fn submit_header(&self, header: &ibex_primitives::Header) -> Result<(), BackendError> {
        let _ = header;
        Err(BackendError::ChainControlUnavailable)
    }

    /// Marks block `hash` invalid with its descendants and activates the
    /// best valid chain left (`invalidateblock`); returns once it is
    /// active. [`BackendError::BlockNotFound`] for a block the index does
    /// not know; the genesis block is left alone without an error, as
    /// Core does. **Engine command.** The default: a node that takes none.
    fn invalidate_block(&self, hash: &BlockHash) -> Result<(), BackendError> {
        let _ = hash;
        Err(BackendError::ChainControlUnavailable)
    }

    /// Clears the failure marks of block `hash`, its descendants and its
    /// ancestors and activates the best valid chain (`reconsiderblock`);
    /// returns once it is active. [`BackendError::BlockNotFound`] for a
    /// block the index does not know. **Engine command.** The default: a
    /// node that takes none.
    fn reconsider_block(&self, hash: &BlockHash) -> Result<(), BackendError> {
        let _ = hash;
        Err(BackendError::ChainControlUnavailable)
    }
}
