//! The node's P2P side: the networking layer on a small tokio runtime, and one
//! sync thread ([`sync_loop`]) that downloads headers and blocks from peers
//! into the engine and serves our chain to them. The engine itself runs its
//! service on the caller's thread (`Chainstate::run_service`); this side holds
//! the service's command and notice ends and a [`ChainReader`].
//!
//! | module | job |
//! |---|---|
//! | [`config`] | the networking layer's configuration from `-connect`, `-listen`, `-bind`, `-port`, `-v2transport`, `-maxconnections`, and the discovery's from `-dnsseed`, `-fixedseeds`, `-seednode`, `-onlynet` |
//! | [`address_store`] | the address manager's file (`ibex_peers.dat`): loaded at start, written every 15 minutes and at shutdown |
//! | [`sync_loop`] | events in, state machines driven, actions carried out |
//! | [`engine_link`] | commands to the engine through an outbox, notices back |
//! | [`engine_view`] | the engine's index and chains as the state machines read them |
//! | [`serve`] | answering `getheaders` and `getdata` |
//! | [`whitelist`] | `-whitelist`: Core's permission flags by address (see `ibex_p2p::net::permissions`) |
//! | [`invalid_blocks`] | blocks the engine marked invalid, from its observer to the sync loop (to punish their senders) |
//! | [`added_nodes`] | the added nodes (`-addnode`, `addnode add`), each kept connected until removed |
//! | [`peer_sync_board`] | what the sync loop knows of each peer, published for `getpeerinfo` |
//!
//! # Napkin math
//! Threads: 2 tokio workers (sockets, transports) and the sync thread,
//! beside the engine's thread and its script threads. The sync thread's
//! work per block is a parse (~1 ms for a full block) and a few channel
//! operations; reads of the engine (one query per `headers` message,
//! `getheaders`, block served for `getdata`, and tip change) each wait at most one idle poll
//! of the engine (20 ms) or one block's connect.

pub mod added_nodes;
pub mod address_store;
pub mod config;
pub mod engine_link;
pub mod engine_view;
pub mod invalid_blocks;
pub mod peer_sync_board;
pub mod serve;
pub mod spent_coins;
pub mod sync_loop;
/// `-whitelist`, parsed and matched by the networking layer, which acts on
/// most of its permissions itself.
pub use ibex_p2p::net::whitelist;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use ibex_chainstate::{ChainReader, EngineCommand, EngineNotice};
use ibex_p2p::addrman::AddressBook;
use ibex_p2p::net::LogSink;
use ibex_p2p::sync::block_download::download_bytes_for_share;
use ibex_p2p::sync::HeadersSyncParams;
use ibex_p2p::sync::{BlockDownload, DownloadConfig, HeadersSync};
use ibex_primitives::Params;

use crate::logging::Logger;
use crate::options::network::NetworkOptions;
use crate::progress::NetworkGauges;

use added_nodes::AddedNodes;
use address_store::{spawn_periodic_writes, write_addresses, LoadedAddresses};
use engine_link::EngineLink;
use engine_view::{genesis_header, ReaderIndex};
use invalid_blocks::InvalidBlockReceiver;
use peer_sync_board::PeerSyncBoard;
use sync_loop::SyncLoop;

/// Tokio worker threads for the networking layer.
const NETWORK_WORKER_THREADS: usize = 2;
/// How long the runtime's tasks get to end at shutdown.
const RUNTIME_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the P2P side could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum P2pError {
    /// An address option is unusable.
    #[error(transparent)]
    Address(#[from] config::AddressError),
    /// The tokio runtime or the sync thread could not be created.
    #[error("cannot start the network threads: {0}")]
    Threads(std::io::Error),
    /// The networking layer refused to start (a port in use, ...).
    #[error(transparent)]
    Network(#[from] ibex_p2p::net::NetworkError),
    /// An `-addnode` address could not be kept connected.
    #[error("-addnode: {0}")]
    AddedNode(ibex_rpc::BackendError),
}

/// The P2P side's parts the RPC server uses.
#[derive(Debug)]
pub(crate) struct RpcParts {
    /// The networking layer.
    pub(crate) handle: ibex_p2p::net::NetworkHandle,
    /// What the sync loop knows of each peer.
    pub(crate) board: Arc<PeerSyncBoard>,
    /// The added nodes (`-addnode`, `addnode add`).
    pub(crate) added: Arc<AddedNodes>,
    /// The address manager.
    pub(crate) book: Arc<AddressBook>,
    /// The networks Ibex connects over (`-onlynet`).
    pub(crate) dialed_networks: ibex_p2p::addrman::NetworkSet,
}

/// What the P2P side is started with.
#[derive(Debug)]
pub struct P2pStart<'a> {
    /// The P2P options.
    pub options: &'a NetworkOptions,
    /// The chain's parameters.
    pub params: &'a Params,
    /// Serialised bytes of blocks ahead of validation, from `-dbcache`'s
    /// split (the download's byte bound derives from it).
    pub incoming_blocks_serialised_bytes: u64,
    /// The engine's reader.
    pub reader: ChainReader,
    /// The engine service's command sender.
    pub commands: SyncSender<EngineCommand>,
    /// The engine service's notice receiver.
    pub notices: Receiver<EngineNotice>,
    /// Blocks the engine's observer saw marked invalid.
    pub invalid_blocks: InvalidBlockReceiver,
    /// The node's log.
    pub logger: Logger,
    /// Where the progress display reads the sync's figures.
    pub gauges: Arc<NetworkGauges>,
    /// The address manager, loaded from its file.
    pub addresses: LoadedAddresses,
    /// Whether block files are pruned (`-prune`): `NODE_NETWORK` is never
    /// offered.
    pub pruning: bool,
    /// Whether the start offered `NODE_NETWORK`
    /// ([`sync_loop::start_services`]): the first connections are offered
    /// what it said, and the sync loop follows the AssumeUTXO state from
    /// its first pass.
    pub node_network_at_start: bool,
    /// A fully validating SwiftSync plan's terminal height: the spent
    /// coins of its blocks are fetched from serving peers.
    pub spent_coins_terminal_height: Option<u32>,
}

/// The running P2P side; [`P2pNode::stop`] ends it.
#[derive(Debug)]
pub struct P2pNode {
    runtime: tokio::runtime::Runtime,
    /// What the RPC server reads and drives ([`P2pNode::rpc_network`]).
    rpc: RpcParts,
    stop: Arc<AtomicBool>,
    sync_thread: Option<JoinHandle<()>>,
    /// The address manager and its file, written once more at the end.
    addresses: (Arc<AddressBook>, std::path::PathBuf),
    params: Params,
    logger: Logger,
}

impl P2pNode {
    /// Starts the networking layer and the sync thread.
    pub fn start(start: P2pStart<'_>) -> Result<P2pNode, P2pError> {
        let P2pStart {
            options,
            params,
            incoming_blocks_serialised_bytes,
            reader,
            commands,
            notices,
            logger,
            gauges,
            addresses,
            invalid_blocks,
            pruning,
            node_network_at_start,
            spent_coins_terminal_height,
        } = start;
        let tip_height = reader.snapshot().tip.as_ref().map_or(0, |tip| tip.height);
        let start_height = i32::try_from(tip_height).unwrap_or(i32::MAX);
        let mut network_config = config::network_config(options, params, start_height)?;
        network_config.reads_features = spent_coins_terminal_height.is_some();
        for line in addresses.lines.iter().chain(&config::only_network_warnings(options)) {
            logger.log(line);
        }
        let added_addresses = config::added_node_addresses(options, params)?;
        let mut manual = network_config.connect.clone();
        manual.extend(added_addresses.iter().map(|(_, address)| *address));
        network_config.addresses =
            Some(config::address_settings(options, params, Arc::clone(&addresses.book), manual));
        let configured_services =
            sync_loop::apply_start_services(&mut network_config, pruning, node_network_at_start);
        let sink = logger.clone();
        network_config.log = LogSink::new(move |line| sink.log(line));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(NETWORK_WORKER_THREADS)
            .thread_name("ibex-net")
            .enable_all()
            .build()
            .map_err(P2pError::Threads)?;
        let listen = network_config.listen;
        let (network, events) = runtime.block_on(ibex_p2p::net::start(network_config))?;
        if let Some(address) = network.listen_address().or(listen) {
            logger.log(&format!("Bound to {address}"));
        }
        let added = Arc::new(AddedNodes::new(params.default_port));
        for (text, address) in &added_addresses {
            added.add(&network, text, Some(*address)).map_err(P2pError::AddedNode)?;
        }
        let rpc = RpcParts {
            handle: network.clone(),
            board: Arc::new(PeerSyncBoard::new()),
            added,
            book: Arc::clone(&addresses.book),
            dialed_networks: config::only_networks(options).1,
        };
        spawn_periodic_writes(
            runtime.handle(),
            Arc::clone(&addresses.book),
            addresses.path.clone(),
            params.clone(),
            logger.clone(),
        );
        let download_config =
            DownloadConfig::new(params, download_bytes_for_share(incoming_blocks_serialised_bytes));
        let mut sync = SyncLoop::new(
            network,
            events,
            runtime.handle().clone(),
            reader.clone(),
            ReaderIndex::new(reader, genesis_header(params), params),
            EngineLink::new(commands, notices),
            HeadersSync::new(params, HeadersSyncParams::for_network(params.network), seed()),
            BlockDownload::new(download_config, tip_height),
            params.clone(),
            logger.clone(),
            Arc::new(AtomicBool::new(false)),
        );
        sync.gauges = Some(gauges);
        sync.whitelist = options.whitelist.clone();
        sync.loopback_discouraged = options.loopback_discouraged;
        sync.configured_services = configured_services;
        sync.peer_board = Some(Arc::clone(&rpc.board));
        sync.block_sources.attach_feed(invalid_blocks);
        if let Some(terminal_height) = spent_coins_terminal_height {
            sync.fetch_spent_coins_to(terminal_height);
        }
        let stop = sync.stop.clone();
        let sync_thread = std::thread::Builder::new()
            .name("ibex-p2p-sync".to_owned())
            .spawn(move || sync.run())
            .map_err(P2pError::Threads)?;
        Ok(P2pNode {
            runtime,
            rpc,
            stop,
            sync_thread: Some(sync_thread),
            addresses: (addresses.book, addresses.path),
            params: params.clone(),
            logger,
        })
    }

    /// The parts of this P2P side the RPC server reads and drives
    /// ([`crate::rpc_network::NetworkRpc`]).
    pub(crate) fn rpc_parts(&self) -> &RpcParts {
        &self.rpc
    }

    /// The chain's parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Asks the sync thread to stop; it ends after its current step (whose
    /// reads of the engine the caller should keep answering meanwhile).
    pub fn request_stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Whether the sync thread has ended.
    pub fn sync_finished(&self) -> bool {
        self.sync_thread.as_ref().is_none_or(|thread| thread.is_finished())
    }

    /// Stops the sync thread, closes every connection, ends the runtime
    /// and writes the address manager's file.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.sync_thread.take() {
            // A sync thread that panicked has nothing left to stop.
            let _ = thread.join();
        }
        self.runtime.shutdown_timeout(RUNTIME_SHUTDOWN_TIMEOUT);
        let (book, path) = &self.addresses;
        write_addresses(book, path, &self.params, &self.logger);
    }
}

/// 32 random bytes for the address manager's key: the operating
/// system's, or (if that fails) `seed`'s.
pub fn random_seed() -> [u8; 32] {
    ibex_p2p::addrman::random::os_random_bytes().unwrap_or_else(|_| seed())
}

/// 32 bytes to salt the headers presync's commitments: the process's
/// random hasher keys (std seeds them from the operating system), the
/// time and the process id, through SHA-256.
fn seed() -> [u8; 32] {
    use std::hash::{BuildHasher, Hasher};
    let mut input = Vec::with_capacity(40);
    for round in 0..2u64 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(round);
        input.extend_from_slice(&hasher.finish().to_le_bytes());
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    input.extend_from_slice(&nanos.to_le_bytes());
    input.extend_from_slice(&std::process::id().to_le_bytes());
    ibex_primitives::hash::sha256(&input)
}
