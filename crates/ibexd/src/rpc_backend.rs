//! The RPC server's view of the node ([`NodeBackend`]) over the engine's
//! [`ChainReader`]: the tip and block hashes by height from the published
//! snapshots (no engine work), everything else as one query each, run on
//! the engine's thread between blocks against a settled state. Commands
//! that change the chain (`invalidateblock`, `reconsiderblock`) go to the
//! engine service's operator channel ([`ChainBackend::attach_engine_control`],
//! see `rpc_control`).
//!
//! # Napkin math
//! A snapshot read is a lock and a clone (~100 ns): `getblockcount` and
//! `getblockhash` never wait for validation. A query waits for the engine
//! to finish the block it is connecting (a few ms with scripts skipped, up
//! to ~100 ms for a full block with every script) and for the pending
//! verdicts to settle; its own work is an index lookup (~100 ns) or a block
//! read (~0.3 ms for 1.4 MB from the page cache).

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::sync::mpsc::SyncSender;

use ibex_chainstate::{ChainReader, Chainstate, EngineCommand, EntryId, ReadError};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, OutPoint, Params, SpentCoinBuf};
use ibex_rpc::backend::{
    AddNodeCommand, AddedNodeInfo, BackendError, BannedSubnet, BlockData, BlockEntry,
    BlockchainInfo, ChainTip, ChainTipStatus, CoinsAnswer, CoinsCacheSizes, DeploymentInfo,
    NetTotals, NetworkInfo, NodeAddress, NodeBackend, PeerReport, PeerSelector, StoredBlock,
    TipRef, TxOutSetInfo, UnspentOutput,
};
use ibex_rpc::deployment::{deployment_info, version_bits_deployments, Ancestry};

use ibex_chainstate::MemoryBudget;

use crate::logging::{verification_progress_near_tip, ChainTransactionData, TipHeights};
use crate::memory_budget::memory_budget_for;
use crate::options::defaults::DBCACHE_MEBIBYTES_DEFAULT;
use crate::rpc_network::NetworkRpc;
use crate::txoutset::{txoutset_info_at_tip, TxOutSetError};

/// How long an RPC waits for the engine before giving up.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `gettxoutsetinfo` waits for the engine: it walks every coin on
/// the engine's thread (~20-35 s for mainnet's ~180 M coins with
/// `hash_serialized_3`, ~6 minutes with `muhash`: see
/// `ibex_primitives::txoutset`), far longer than other queries.
pub const TXOUTSET_QUERY_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How often a wait for a new tip looks at the snapshot.
const TIP_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// Core's `DEFAULT_MAX_TIP_AGE`: a tip older than this means initial block
/// download.
const MAX_TIP_AGE_SECONDS: i64 = 24 * 60 * 60;

/// The node's [`NodeBackend`]. The RPC server starts before the
/// chainstate opens (clients get -28 while it loads, as from Core), so the
/// engine's reader, the P2P side and the engine service's operator channel
/// are attached as they come up ([`ChainBackend::attach_reader`] and the
/// like); until then their methods answer as Core's do without them.
pub struct ChainBackend {
    reader: OnceLock<ChainReader>,
    params: Params,
    blocks_directory: std::path::PathBuf,
    shutdown: Arc<AtomicBool>,
    /// Core's `IsInitialBlockDownload` latch: once false, it stays false.
    initial_download_left: AtomicBool,
    /// `-dbcache`'s split, for `getchainstates`.
    memory: MemoryBudget,
    /// The P2P side, when it runs (unset: Core's -31 for network methods).
    network: OnceLock<NetworkRpc>,
    /// The engine service's operator channel, while the node runs one.
    engine_control: OnceLock<SyncSender<EngineCommand>>,
}

impl ChainBackend {
    /// A backend reading through `reader`; `stop` raises `shutdown`.
    pub fn new(
        reader: ChainReader,
        params: Params,
        blocks_directory: std::path::PathBuf,
        shutdown: Arc<AtomicBool>,
    ) -> ChainBackend {
        let backend = ChainBackend::unattached(params, blocks_directory, shutdown);
        backend.attach_reader(reader);
        backend
    }

    /// A backend with no chainstate yet (it is still loading): reads
    /// answer Core's -28 "Loading block index…" until
    /// [`Self::attach_reader`].
    pub fn unattached(
        params: Params,
        blocks_directory: std::path::PathBuf,
        shutdown: Arc<AtomicBool>,
    ) -> ChainBackend {
        ChainBackend {
            reader: OnceLock::new(),
            params,
            blocks_directory,
            shutdown,
            initial_download_left: AtomicBool::new(false),
            // The default `-dbcache`'s split until told the node's
            // (`with_memory_budget`).
            memory: memory_budget_for(
                DBCACHE_MEBIBYTES_DEFAULT,
                ibex_chainstate::FLUSH_BATCH_BYTES_DEFAULT,
            ),
            network: OnceLock::new(),
            engine_control: OnceLock::new(),
        }
    }

    /// The same backend reporting the caches of `memory` (`-dbcache`'s split).
    pub fn with_memory_budget(mut self, memory: MemoryBudget) -> ChainBackend {
        self.memory = memory;
        self
    }

    /// Reads go through `reader` from now on (the first reader attached
    /// stays: a chainstate is opened once a run).
    pub fn attach_reader(&self, reader: ChainReader) {
        let _ = self.reader.set(reader);
    }

    /// Network methods answer from the running P2P side from now on.
    pub fn attach_network(&self, network: NetworkRpc) {
        let _ = self.network.set(network);
    }

    /// `invalidateblock` and `reconsiderblock` go to the engine service
    /// through `control` (its `EngineService::control_sender`) from now on.
    pub fn attach_engine_control(&self, control: SyncSender<EngineCommand>) {
        let _ = self.engine_control.set(control);
    }

    /// The engine's reader, or Core's -28 while the chainstate loads.
    fn reader(&self) -> Result<&ChainReader, BackendError> {
        self.reader.get().ok_or(BackendError::NoTip)
    }

    /// The P2P side, or Core's "P2P disabled".
    fn network(&self) -> Result<&NetworkRpc, BackendError> {
        self.network.get().ok_or(BackendError::P2pDisabled)
    }

    fn query<R: Send + 'static>(
        &self,
        read: impl FnOnce(&Chainstate) -> R + Send + 'static,
    ) -> Result<R, BackendError> {
        self.query_within(read, QUERY_TIMEOUT)
    }

    fn query_within<R: Send + 'static>(
        &self,
        read: impl FnOnce(&Chainstate) -> R + Send + 'static,
        timeout: Duration,
    ) -> Result<R, BackendError> {
        self.reader()?.query(read, timeout).map_err(|error| match error {
            ReadError::Busy => BackendError::Busy,
            ReadError::TimedOut { timeout_ms } => BackendError::TimedOut { timeout_ms },
            _ => BackendError::Stopped,
        })
    }
}

/// The RPC's description of block `id`, read on the engine's thread.
fn entry_of(chainstate: &Chainstate, id: EntryId) -> BlockEntry {
    let index = chainstate.index();
    let chain = chainstate.chain();
    let entry = index.entry(id);
    let in_active_chain = chain.contains(id, entry.height);
    let data = match (entry.block_position, entry.undo_position) {
        (Some(_), undo) => BlockData::Stored { have_undo: undo.is_some() },
        (None, _) => BlockData::NotDownloaded,
    };
    BlockEntry {
        hash: entry.hash,
        header: entry.header,
        height: entry.height,
        chain_work: entry.chain_work,
        median_time_past: index.median_time_past(id),
        transaction_count: u64::from(entry.transaction_count),
        data,
        in_active_chain,
        next_block_hash: chain.at(entry.height + 1).map(|next| index.entry(next).hash),
        tip_height: chain.height().unwrap_or(0),
    }
}

/// The block `hash`'s entry, where it is stored and, when asked and
/// stored, the coins it spent in input order (read on the engine's thread;
/// the block's bytes are read by the caller, off that thread).
fn located_block(
    chainstate: &Chainstate,
    hash: &BlockHash,
    include_spent_coins: bool,
) -> Result<Option<LocatedBlock>, BackendError> {
    let Some(id) = chainstate.index().get(hash) else { return Ok(None) };
    let entry = entry_of(chainstate, id);
    let position = match (entry.data, chainstate.index().entry(id).block_position) {
        (BlockData::Stored { .. }, Some(position)) => position,
        _ => return Err(BackendError::BlockDataUnavailable { block_hash: *hash, pruned: false }),
    };
    let spent_coins = match entry.data {
        BlockData::Stored { have_undo: true } if include_spent_coins => {
            let undo = chainstate.read_undo(id).map_err(storage)?;
            let coins = undo.transactions.iter().flat_map(|record| record.spent.iter());
            Some(coins.map(|coin| coin.as_spent_coin().to_buf()).collect())
        }
        _ => None,
    };
    Ok(Some(LocatedBlock { entry, position, spent_coins }))
}

/// A block's description and where its bytes are.
struct LocatedBlock {
    entry: BlockEntry,
    position: ibex_blockstore::BlockPosition,
    spent_coins: Option<Vec<SpentCoinBuf>>,
}

/// A block's ancestors read from the index, by height (collected only when
/// the network has version-bits deployments to compute).
struct IndexAncestry<'a> {
    chainstate: &'a Chainstate,
    by_height: Vec<EntryId>,
}

impl IndexAncestry<'_> {
    fn entry(&self, height: u32) -> Option<EntryId> {
        self.by_height.get(usize::try_from(height).ok()?).copied()
    }
}

impl Ancestry for IndexAncestry<'_> {
    fn version(&self, height: u32) -> i32 {
        self.entry(height).map_or(0, |id| self.chainstate.index().entry(id).header.version)
    }

    fn median_time_past(&self, height: u32) -> i64 {
        self.entry(height).map_or(0, |id| self.chainstate.index().median_time_past(id))
    }
}

/// `getdeploymentinfo` for block `hash` (the tip when `None`), read on the
/// engine's thread.
fn deployment_info_at(
    chainstate: &Chainstate,
    params: &Params,
    hash: Option<BlockHash>,
) -> Option<DeploymentInfo> {
    let index = chainstate.index();
    let id = match hash {
        Some(hash) => index.get(&hash)?,
        None => chainstate.chain().tip()?,
    };
    let entry = index.entry(id);
    let mut by_height = Vec::new();
    if !version_bits_deployments(params.network).is_empty() {
        let mut walk = Some(id);
        while let Some(ancestor) = walk {
            by_height.push(ancestor);
            walk = index.entry(ancestor).parent;
        }
        by_height.reverse();
    }
    let ancestry = IndexAncestry { chainstate, by_height };
    Some(deployment_info(params, entry.hash, entry.height, &ancestry))
}

fn txoutset_error(error: TxOutSetError) -> BackendError {
    match error {
        TxOutSetError::NoTip => BackendError::NoTip,
        other => BackendError::Storage { source: Box::new(other) },
    }
}

fn storage(error: ibex_chainstate::ChainstateError) -> BackendError {
    BackendError::Storage { source: Box::new(error) }
}

fn tip_status(status: &str) -> ChainTipStatus {
    match status {
        "active" => ChainTipStatus::Active,
        "valid-fork" => ChainTipStatus::ValidFork,
        "valid-headers" => ChainTipStatus::ValidHeaders,
        "headers-only" => ChainTipStatus::HeadersOnly,
        "invalid" => ChainTipStatus::Invalid,
        _ => ChainTipStatus::Unknown,
    }
}

fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
}

/// Bytes of the block and undo files (Core's `size_on_disk`).
fn size_on_disk_bytes(blocks_directory: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(blocks_directory) else { return 0 };
    entries
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            (name.starts_with("blk") || name.starts_with("rev")) && name.ends_with(".dat")
        })
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .sum()
}

impl NodeBackend for ChainBackend {
    fn tip(&self) -> Result<TipRef, BackendError> {
        let snapshot = self.reader()?.snapshot();
        let tip = snapshot.tip.as_ref().ok_or(BackendError::NoTip)?;
        Ok(TipRef { hash: tip.hash, height: tip.height })
    }

    fn block_hash_at(&self, height: u32) -> Result<Option<BlockHash>, BackendError> {
        Ok(self.reader()?.block_hash_at(height))
    }

    fn block_entry(&self, hash: &BlockHash) -> Result<Option<BlockEntry>, BackendError> {
        let hash = *hash;
        self.query(move |chainstate| {
            chainstate.index().get(&hash).map(|id| entry_of(chainstate, id))
        })
    }

    fn block(
        &self,
        hash: &BlockHash,
        include_spent_coins: bool,
    ) -> Result<Option<StoredBlock>, BackendError> {
        let hash = *hash;
        let located =
            self.query(move |chainstate| located_block(chainstate, &hash, include_spent_coins))??;
        let Some(LocatedBlock { entry, position, spent_coins }) = located else { return Ok(None) };
        let bytes = self.reader()?.read_stored_block(position, &hash).map_err(storage)?;
        Ok(Some(StoredBlock { entry, bytes, spent_coins }))
    }

    fn active_chain_entries(
        &self,
        start: &BlockHash,
        count_max: usize,
    ) -> Result<Vec<BlockEntry>, BackendError> {
        let start = *start;
        self.query(move |chainstate| {
            let Some(id) = chainstate.index().get(&start) else { return Vec::new() };
            let height = chainstate.index().entry(id).height;
            if !chainstate.chain().contains(id, height) {
                return Vec::new();
            }
            (height..)
                .map_while(|at| chainstate.chain().at(at))
                .take(count_max)
                .map(|at| entry_of(chainstate, at))
                .collect()
        })
    }

    fn blockchain_info(&self) -> Result<BlockchainInfo, BackendError> {
        let params = self.params.clone();
        let (tip, best_header_height, chain_transaction_count) = self
            .query(|chainstate| {
                let tip = chainstate.chain().tip().map(|id| {
                    (entry_of(chainstate, id), chainstate.index().entry(id).chain_transaction_count)
                });
                let best = chainstate
                    .best_header()
                    .and_then(|hash| chainstate.index().get(&hash))
                    .map(|id| chainstate.index().entry(id).height);
                tip.map(|(entry, transactions)| (entry, best, transactions))
            })?
            .ok_or(BackendError::NoTip)?;
        let now = now_seconds();
        let heights = TipHeights {
            height: tip.height,
            best_header_height: best_header_height.unwrap_or(tip.height),
        };
        let verification_progress = verification_progress_near_tip(
            chain_transaction_count,
            tip.header.time,
            heights,
            params.pow_target_spacing_seconds,
            now,
            &ChainTransactionData::for_network(params.network),
        );
        // Core's IsInitialBlockDownload: once it has been false, it stays.
        let initial_block_download = !self.initial_download_left.load(Ordering::Relaxed)
            && (tip.chain_work < params.minimum_chain_work
                || i64::from(tip.header.time) < now - MAX_TIP_AGE_SECONDS);
        if !initial_block_download {
            self.initial_download_left.store(true, Ordering::Relaxed);
        }
        Ok(BlockchainInfo {
            tip,
            best_header_height,
            verification_progress,
            initial_block_download,
            size_on_disk_bytes: size_on_disk_bytes(&self.blocks_directory),
            prune: None,
            signet_challenge: params.signet_challenge.clone(),
            warnings: Vec::new(),
        })
    }

    fn chain_tips(&self) -> Result<Vec<ChainTip>, BackendError> {
        self.query(|chainstate| {
            chainstate
                .chain_tips()
                .into_iter()
                .map(|tip| ChainTip {
                    height: tip.height,
                    hash: tip.hash,
                    branch_length: tip.branch_length,
                    status: tip_status(tip.status),
                })
                .collect()
        })
    }

    fn coins(
        &self,
        outpoints: &[OutPoint],
        _include_mempool: bool,
    ) -> Result<CoinsAnswer, BackendError> {
        let outpoints = outpoints.to_vec();
        self.query(move |chainstate| {
            let (hash, height) = chainstate.tip().ok_or(BackendError::NoTip)?;
            let mut coins = Vec::with_capacity(outpoints.len());
            for outpoint in &outpoints {
                let coin = chainstate.coin(outpoint).map_err(storage)?;
                coins.push(coin.map(|coin| UnspentOutput {
                    value: coin.amount(),
                    script_pubkey: coin.script_pubkey().to_vec(),
                    height: Some(coin.height().into()),
                    is_coinbase: coin.is_coinbase(),
                }));
            }
            Ok(CoinsAnswer { tip: TipRef { hash, height }, coins })
        })?
    }

    fn wait_for_tip_change(
        &self,
        known_tip: &BlockHash,
        timeout: Duration,
    ) -> Result<TipRef, BackendError> {
        let deadline = Instant::now() + timeout;
        loop {
            let tip = self.tip()?;
            if tip.hash != *known_tip || Instant::now() >= deadline {
                return Ok(tip);
            }
            if self.shutdown.load(Ordering::Relaxed) {
                return Err(BackendError::Stopped);
            }
            std::thread::sleep(
                TIP_POLL_INTERVAL.min(deadline.saturating_duration_since(Instant::now())),
            );
        }
    }

    fn txoutset_info(&self, hash_type: TxOutSetHashType) -> Result<TxOutSetInfo, BackendError> {
        let answer = self.query_within(
            move |chainstate| txoutset_info_at_tip(chainstate, hash_type),
            TXOUTSET_QUERY_TIMEOUT,
        )?;
        answer.map_err(txoutset_error)
    }

    fn deployment_info(
        &self,
        hash: Option<&BlockHash>,
    ) -> Result<Option<DeploymentInfo>, BackendError> {
        let hash = hash.copied();
        let params = self.params.clone();
        self.query(move |chainstate| deployment_info_at(chainstate, &params, hash))
    }

    fn coins_cache_sizes(&self) -> CoinsCacheSizes {
        CoinsCacheSizes {
            coins_database_bytes: self.memory.coins_database.total_bytes() as u64,
            coins_tip_bytes: self.memory.coins_bytes as u64,
        }
    }

    fn network_info(&self) -> Result<NetworkInfo, BackendError> {
        Ok(self.network()?.network_info())
    }

    fn peers(&self) -> Result<Vec<PeerReport>, BackendError> {
        self.network()?.peers()
    }

    fn net_totals(&self) -> Result<NetTotals, BackendError> {
        Ok(self.network()?.net_totals())
    }

    fn connection_count(&self) -> Result<usize, BackendError> {
        Ok(self.network()?.connection_count())
    }

    fn add_node(
        &self,
        node: &str,
        command: AddNodeCommand,
        v2_transport: Option<bool>,
    ) -> Result<(), BackendError> {
        self.network()?.add_node(node, command, v2_transport)
    }

    fn disconnect_peer(&self, peer: &PeerSelector) -> Result<(), BackendError> {
        self.network()?.disconnect_peer(peer)
    }

    fn added_nodes(&self) -> Result<Vec<AddedNodeInfo>, BackendError> {
        Ok(self.network()?.added_nodes())
    }

    fn node_addresses(
        &self,
        count_max: usize,
        network: Option<&str>,
    ) -> Result<Vec<NodeAddress>, BackendError> {
        self.network()?.node_addresses(count_max, network)
    }

    fn ban(&self, address: IpAddr, until_seconds: i64) -> Result<(), BackendError> {
        self.network()?.ban(address, until_seconds)
    }

    fn unban(&self, address: IpAddr) -> Result<(), BackendError> {
        self.network()?.unban(address)
    }

    fn banned(&self) -> Result<Vec<BannedSubnet>, BackendError> {
        Ok(self.network()?.banned())
    }

    fn clear_bans(&self) -> Result<(), BackendError> {
        self.network()?.clear_bans();
        Ok(())
    }

    fn request_shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
    }

    fn invalidate_block(&self, hash: &BlockHash) -> Result<(), BackendError> {
        let control = self.engine_control.get().ok_or(BackendError::ChainControlUnavailable)?;
        let command = |hash, reply| EngineCommand::InvalidateBlock { hash, reply };
        crate::rpc_control::send_control(control, command, *hash, &self.shutdown)
    }

    fn reconsider_block(&self, hash: &BlockHash) -> Result<(), BackendError> {
        let control = self.engine_control.get().ok_or(BackendError::ChainControlUnavailable)?;
        let command = |hash, reply| EngineCommand::ReconsiderBlock { hash, reply };
        crate::rpc_control::send_control(control, command, *hash, &self.shutdown)
    }
}
