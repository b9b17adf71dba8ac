//! The RPC server's view of the node ([`NodeBackend`]) over the engine's
//! [`ChainReader`]: the tip and block hashes by height from the published
//! snapshots (no engine work), everything else as one question each of the
//! chainstate's read API (`ChainReader::settled`), answered on the engine's
//! thread between blocks against a settled state; block and undo bytes are
//! read here, off that thread. Commands
//! that change the chain or its files (`invalidateblock`,
//! `reconsiderblock`, `pruneblockchain`) go to the engine service's
//! operator channel ([`ChainBackend::attach_engine_control`], see
//! `rpc_control`).
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

use ibex_chainstate::{
    BlockAncestry, ChainReader, EngineCommand, IndexedBlock, PruneMode, PruneRefusal, ReadError,
    ReadView,
};
use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, OutPoint, Params, SpentCoinBuf};
use ibex_rpc::backend::{
    AddNodeCommand, AddedNodeInfo, AssumeUtxoChainstates, BackendError, BannedSubnet, BlockData,
    BlockEntry, BlockchainInfo, ChainTip, ChainTipStatus, ChainstateInfo, CoinsAnswer,
    CoinsCacheSizes, DeploymentInfo, LoadedTxOutSet, NetTotals, NetworkInfo, NodeAddress,
    NodeBackend, PeerReport, PeerSelector, PruneInfo, PruneSettings, StoredBlock, TipRef,
    TxOutSetInfo, UnspentOutput,
};
use ibex_rpc::deployment::{deployment_info, version_bits_deployments, Ancestry};

use ibex_chainstate::MemoryBudget;

use crate::logging::{verification_progress_near_tip, ChainTransactionData, TipHeights};
use crate::memory_budget::memory_budget_for;
use crate::options::defaults::DBCACHE_MEBIBYTES_DEFAULT;
use crate::rpc_network::NetworkRpc;
use crate::txoutset::TxOutSetError;

/// How long an RPC waits for the engine before giving up.
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `gettxoutsetinfo` and `dumptxoutset` wait for the engine to
/// hand out a view of the coins: it copies the cache's unflushed entries
/// (under a second at a large `-dbcache`) at its next pause, which a long
/// flush can put off for minutes; the walk itself runs on the RPC's
/// thread afterwards, without a timeout.
pub const TXOUTSET_QUERY_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How often a wait for a new tip looks at the snapshot.
const TIP_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// The node's [`NodeBackend`]. The RPC server starts before the
/// chainstate opens (clients get -28 while it loads, as from Core), so the
/// engine's reader, the P2P side and the engine service's operator channel
/// are attached as they come up ([`ChainBackend::attach_reader`] and the
/// like); until then their methods answer as Core's do without them.
pub struct ChainBackend {
    reader: OnceLock<ChainReader>,
    params: Params,
    shutdown: Arc<AtomicBool>,
    /// `-prune` (kept until told: [`ChainBackend::with_prune`]).
    prune: PruneMode,
    /// Core's `IsInitialBlockDownload` latch: once false, it stays false.
    initial_download_left: AtomicBool,
    /// `-dbcache`'s split, for `getchainstates`.
    memory: MemoryBudget,
    /// The P2P side, when it runs (unset: Core's -31 for network methods).
    network: OnceLock<NetworkRpc>,
    /// The engine service's operator channel, while the node runs one.
    engine_control: OnceLock<SyncSender<EngineCommand>>,
    /// The chain's data directory (`<datadir>/<chain>`), where relative
    /// `dumptxoutset` paths go; the blocks directory's parent until told
    /// ([`ChainBackend::with_chain_directory`]).
    chain_directory: std::path::PathBuf,
    /// Held while a `loadtxoutset` loads (one at a time).
    snapshot_load: std::sync::Mutex<()>,
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
        let chain_directory =
            blocks_directory.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
        ChainBackend {
            reader: OnceLock::new(),
            params,
            chain_directory,
            shutdown,
            prune: PruneMode::Disabled,
            initial_download_left: AtomicBool::new(false),
            // The default `-dbcache`'s split until told the node's
            // (`with_memory_budget`).
            memory: memory_budget_for(
                DBCACHE_MEBIBYTES_DEFAULT,
                ibex_chainstate::FLUSH_BATCH_BYTES_DEFAULT,
            ),
            network: OnceLock::new(),
            engine_control: OnceLock::new(),
            snapshot_load: std::sync::Mutex::new(()),
        }
    }

    /// The same backend reporting the caches of `memory` (`-dbcache`'s split).
    pub fn with_memory_budget(mut self, memory: MemoryBudget) -> ChainBackend {
        self.memory = memory;
        self
    }

    /// The same backend for a node pruning as `prune` says.
    pub fn with_prune(mut self, prune: PruneMode) -> ChainBackend {
        self.prune = prune;
        self
    }

    /// Relative `dumptxoutset` paths go under `chain_directory`.
    pub fn with_chain_directory(mut self, chain_directory: std::path::PathBuf) -> ChainBackend {
        self.chain_directory = chain_directory;
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

    /// `invalidateblock`, `reconsiderblock`, `pruneblockchain` and the
    /// like go to the engine service through `control` (its
    /// `EngineService::control_sender`) from now on.
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

    /// Settled reads, each waiting at most `timeout`.
    fn view(&self, timeout: Duration) -> Result<ReadView<'_>, BackendError> {
        Ok(self.reader()?.settled(timeout))
    }
}

/// Core's error for a read the engine did not answer.
pub(crate) fn unanswered(error: ReadError) -> BackendError {
    match error {
        ReadError::Busy => BackendError::Busy,
        ReadError::TimedOut { timeout_ms } => BackendError::TimedOut { timeout_ms },
        _ => BackendError::Stopped,
    }
}

/// The RPC's description of `block`.
fn entry_of(block: &IndexedBlock) -> BlockEntry {
    let data = match (block.position, block.undo_position) {
        (Some(_), undo) => BlockData::Stored { have_undo: undo.is_some() },
        (None, _) if block.pruned => BlockData::Pruned,
        (None, _) => BlockData::NotDownloaded,
    };
    BlockEntry {
        hash: block.hash,
        header: block.header,
        height: block.height,
        chain_work: block.chain_work,
        median_time_past: block.median_time_past,
        transaction_count: u64::from(block.transaction_count),
        data,
        in_active_chain: block.in_active_chain,
        next_block_hash: block.next_in_active_chain,
        tip_height: block.active_tip_height.unwrap_or(0),
    }
}

/// Version bits read from a block's chain, for `getdeploymentinfo`.
struct ChainAncestry<'a>(&'a BlockAncestry);

impl Ancestry for ChainAncestry<'_> {
    fn version(&self, height: u32) -> i32 {
        self.0.version(height)
    }

    fn median_time_past(&self, height: u32) -> i64 {
        self.0.median_time_past(height)
    }
}

/// Nothing above the block: a network without version-bits deployments
/// reads no ancestor.
struct NoAncestry;

impl Ancestry for NoAncestry {
    fn version(&self, _height: u32) -> i32 {
        0
    }

    fn median_time_past(&self, _height: u32) -> i64 {
        0
    }
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
        let block = self.view(QUERY_TIMEOUT)?.block(hash).map_err(unanswered)?;
        Ok(block.as_ref().map(entry_of))
    }

    fn block(
        &self,
        hash: &BlockHash,
        include_spent_coins: bool,
    ) -> Result<Option<StoredBlock>, BackendError> {
        let Some(block) = self.view(QUERY_TIMEOUT)?.block(hash).map_err(unanswered)? else {
            return Ok(None);
        };
        // Core's `CheckBlockDataAvailability`.
        let Some(position) = block.position else {
            return Err(BackendError::BlockDataUnavailable {
                block_hash: *hash,
                pruned: block.pruned,
            });
        };
        // Both read here, off the engine's thread, each checked to be this
        // block's.
        let reader = self.reader()?;
        let bytes = reader.read_stored_block(position, hash).map_err(storage)?;
        let spent_coins = match block.undo_position {
            Some(_) if include_spent_coins => {
                let undo = reader.read_stored_undo(&block).map_err(storage)?;
                let coins = undo.transactions.iter().flat_map(|record| record.spent.iter());
                Some(coins.map(|coin| coin.as_spent_coin().to_buf()).collect::<Vec<SpentCoinBuf>>())
            }
            _ => None,
        };
        Ok(Some(StoredBlock { entry: entry_of(&block), bytes, spent_coins }))
    }

    fn active_chain_entries(
        &self,
        start: &BlockHash,
        count_max: usize,
    ) -> Result<Vec<BlockEntry>, BackendError> {
        let blocks =
            self.view(QUERY_TIMEOUT)?.active_blocks(start, count_max).map_err(unanswered)?;
        Ok(blocks.iter().map(entry_of).collect())
    }

    fn blockchain_info(&self) -> Result<BlockchainInfo, BackendError> {
        let params = self.params.clone();
        let now = now_seconds();
        let view = self.view(QUERY_TIMEOUT)?;
        let state = view.tip_state(now).map_err(unanswered)?.ok_or(BackendError::NoTip)?;
        let storage = view.block_storage(self.prune.is_enabled()).map_err(unanswered)?;
        // Core: the last pruned block's height plus one, 0 when none is.
        let prune = self.prune.is_enabled().then(|| PruneInfo {
            prune_height: storage.prune_height.map_or(0, |height| height.saturating_add(1)),
            automatic_target_bytes: self.prune.target_bytes(),
        });
        let (tip, best_header_height) = (entry_of(&state.tip), state.best_header_height);
        let chain_transaction_count = state.tip.chain_transaction_count;
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
        let initial_block_download =
            !self.initial_download_left.load(Ordering::Relaxed) && state.initial_block_download;
        if !initial_block_download {
            self.initial_download_left.store(true, Ordering::Relaxed);
        }
        Ok(BlockchainInfo {
            tip,
            best_header_height,
            verification_progress,
            initial_block_download,
            size_on_disk_bytes: storage.files_bytes,
            prune,
            signet_challenge: params.signet_challenge.clone(),
            warnings: Vec::new(),
        })
    }

    fn chain_tips(&self) -> Result<Vec<ChainTip>, BackendError> {
        let tips = self.view(QUERY_TIMEOUT)?.chain_tips().map_err(unanswered)?;
        let tips = tips.into_iter().map(|tip| ChainTip {
            height: tip.height,
            hash: tip.hash,
            branch_length: tip.branch_length,
            status: tip_status(tip.status),
        });
        Ok(tips.collect())
    }

    fn coins(
        &self,
        outpoints: &[OutPoint],
        _include_mempool: bool,
    ) -> Result<CoinsAnswer, BackendError> {
        let answer = self.view(QUERY_TIMEOUT)?.coins(outpoints).map_err(unanswered)?;
        let answer = answer.map_err(storage)?.ok_or(BackendError::NoTip)?;
        let (hash, height) = answer.tip;
        let coins = answer.coins.into_iter().map(|coin| {
            coin.map(|coin| UnspentOutput {
                value: coin.amount(),
                script_pubkey: coin.script_pubkey().to_vec(),
                height: Some(coin.height().into()),
                is_coinbase: coin.is_coinbase(),
            })
        });
        Ok(CoinsAnswer { tip: TipRef { hash, height }, coins: coins.collect() })
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
        let answer = self.view(TXOUTSET_QUERY_TIMEOUT)?.txoutset(hash_type).map_err(unanswered)?;
        let answer = answer.map_err(TxOutSetError::from).map_err(txoutset_error)?;
        let answer = answer.ok_or(BackendError::NoTip)?;
        let (best_block, height) = answer.tip;
        Ok(TxOutSetInfo {
            height,
            best_block,
            stats: answer.stats,
            disk_size_bytes: answer.disk_size_bytes,
        })
    }

    fn assumeutxo_heights(&self) -> Vec<u32> {
        self.params.assumeutxo.iter().map(|entry| entry.height).collect()
    }

    fn dump_hints(
        &self,
        path: &str,
        height: Option<u32>,
        version: ibex_primitives::hints::HintsVersion,
    ) -> Result<ibex_rpc::backend::DumpedHints, BackendError> {
        let path = self.chain_directory.join(path);
        let view = self.view(TXOUTSET_QUERY_TIMEOUT)?;
        let pruning = self.prune.is_enabled();
        crate::rpc_hints::dump_hints(self.reader()?, view, &path, height, version, pruning)
    }

    fn dump_txoutset(
        &self,
        path: &str,
        target: Option<BlockHash>,
    ) -> Result<ibex_rpc::backend::DumpedTxOutSet, BackendError> {
        let path = self.chain_directory.join(path);
        let view = self.view(TXOUTSET_QUERY_TIMEOUT)?;
        let dump = crate::rpc_snapshot::SnapshotDump {
            params: &self.params,
            pruning: self.prune.is_enabled(),
        };
        crate::rpc_snapshot::dump_txoutset(self.reader()?, view, &dump, &path, target)
    }

    fn load_txoutset(&self, path: &str) -> Result<LoadedTxOutSet, BackendError> {
        let control = self.engine_control.get().ok_or(BackendError::ChainControlUnavailable)?;
        let _loading = match self.snapshot_load.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err(BackendError::SnapshotLoadRunning)
            }
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        };
        let chainstate_directory = self.chain_directory.join("chainstate");
        let database_options =
            ibex_chainstate::DatabaseOptions::with_memory(&self.memory.coins_database);
        let load = crate::rpc_snapshot::SnapshotLoad {
            params: &self.params,
            chainstate_directory: &chainstate_directory,
            database_options: &database_options,
            control,
            shutdown: &self.shutdown,
        };
        let view = self.view(QUERY_TIMEOUT)?;
        crate::rpc_snapshot::load_txoutset(view, &load, &self.chain_directory.join(path))
    }

    fn assumeutxo_chainstates(&self) -> Result<Option<AssumeUtxoChainstates>, BackendError> {
        let answer = self.view(QUERY_TIMEOUT)?.chainstates().map_err(unanswered)?;
        let Some((base, validated)) = answer.snapshot_base else { return Ok(None) };
        let Some(active_tip) = answer.active_tip else { return Ok(None) };
        let now = now_seconds();
        let best_header_height = answer.best_header_height.unwrap_or(active_tip.height);
        let progress = |tip: &IndexedBlock| {
            verification_progress_near_tip(
                tip.chain_transaction_count,
                tip.header.time,
                TipHeights { height: tip.height, best_header_height },
                self.params.pow_target_spacing_seconds,
                now,
                &ChainTransactionData::for_network(self.params.network),
            )
        };
        let caches = self.coins_cache_sizes();
        let share = |bytes: usize| CoinsCacheSizes { coins_tip_bytes: bytes as u64, ..caches };
        let active = ChainstateInfo {
            tip: entry_of(&active_tip),
            verification_progress: progress(&active_tip),
            cache: share(answer.active_cache_bytes_max),
        };
        let background_cache = share(answer.background_cache_bytes_max.unwrap_or(0));
        // Core's `GetBackgroundVerificationProgress`: the share of the
        // base's chain transactions connected.
        let background = answer.background_tip.map(|tip| {
            let base_transactions = base.chain_transaction_count.max(1) as f64;
            ChainstateInfo {
                verification_progress: (tip.chain_transaction_count as f64 / base_transactions)
                    .min(1.0),
                tip: entry_of(&tip),
                cache: background_cache,
            }
        });
        Ok(Some(AssumeUtxoChainstates {
            snapshot_base: base.hash,
            snapshot_height: base.height,
            validated,
            active,
            background,
        }))
    }

    fn deployment_info(
        &self,
        hash: Option<&BlockHash>,
    ) -> Result<Option<DeploymentInfo>, BackendError> {
        let view = self.view(QUERY_TIMEOUT)?;
        let params = &self.params;
        if version_bits_deployments(params.network).is_empty() {
            let block = match hash {
                Some(hash) => view.block(hash),
                None => view.tip(),
            };
            let block = block.map_err(unanswered)?;
            return Ok(
                block.map(|block| deployment_info(params, block.hash, block.height, &NoAncestry))
            );
        }
        let ancestry = view.ancestry(hash).map_err(unanswered)?;
        Ok(ancestry.map(|ancestry| {
            let block = &ancestry.block;
            deployment_info(params, block.hash, block.height, &ChainAncestry(&ancestry))
        }))
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

    fn pruning(&self) -> Option<PruneSettings> {
        self.prune.is_enabled().then(|| PruneSettings {
            automatic_target_bytes: self.prune.target_bytes(),
            prune_after_height: self.params.prune_after_height,
        })
    }

    fn earliest_block_at_least(&self, time_seconds: i64) -> Result<Option<u32>, BackendError> {
        self.view(QUERY_TIMEOUT)?.earliest_at_least(time_seconds).map_err(unanswered)
    }

    fn prune_block_files(&self, height: u32) -> Result<Option<u32>, BackendError> {
        let control = self.engine_control.get().ok_or(BackendError::ChainControlUnavailable)?;
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let command = EngineCommand::PruneBlockFiles { height, reply };
        match crate::rpc_control::send_and_wait(control, command, &answer, &self.shutdown)? {
            Ok(prune_height) => Ok(prune_height),
            Err(PruneRefusal::NotPruning) => Err(BackendError::NotPruning),
            Err(PruneRefusal::EngineStopped) => Err(BackendError::Stopped),
            Err(other) => Err(BackendError::ChainChangeFailed { source: Box::new(other) }),
        }
    }

    fn submit_header(&self, header: &ibex_primitives::Header) -> Result<(), BackendError> {
        let control = self.engine_control.get().ok_or(BackendError::ChainControlUnavailable)?;
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let command = EngineCommand::SubmitHeader { header: *header, reply };
        match crate::rpc_control::send_and_wait(control, command, &answer, &self.shutdown)? {
            Ok(()) => Ok(()),
            Err(ibex_chainstate::HeaderRefusal::EngineStopped) => Err(BackendError::Stopped),
            Err(refusal) => Err(BackendError::HeaderRefused { source: Box::new(refusal) }),
        }
    }

    fn reconsider_block(&self, hash: &BlockHash) -> Result<(), BackendError> {
        let control = self.engine_control.get().ok_or(BackendError::ChainControlUnavailable)?;
        let command = |hash, reply| EngineCommand::ReconsiderBlock { hash, reply };
        crate::rpc_control::send_control(control, command, *hash, &self.shutdown)
    }
}
