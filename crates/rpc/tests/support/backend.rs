//! An in-memory `NodeBackend` over the shared regtest chain Core made
//! (`../shared/chains/core-wallet-mix`): index entries, stored blocks,
//! undo data and coins computed from the block file as `chain.rs` does.
//! Knobs for the server tests: the visible tip can be lowered and raised
//! (for the `waitfor*` methods), a gate can hold every call that reads the
//! tip (for the work queue), and networking can be off.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, UNIX_EPOCH};

use ibex_p2p::messages::address::ServiceAddress;
use ibex_p2p::messages::version::UserAgent;
use ibex_p2p::net::{ConnectionType, PeerInfo as NetPeerInfo, PeerPermissions, PeerVersion};
use ibex_p2p::sync::PeerId;
use ibex_p2p::transport::TransportKind;
use ibex_p2p::ServiceFlags;

use ibex_primitives::txoutset::{Coin as SetCoin, TxOutSetHashType, TxOutSetHasher};
use ibex_primitives::{Amount, BlockHash, ChainWork, Height, OutPoint, Params};
use ibex_rpc::backend::{
    AddNodeCommand, AddedNodeConnection, AddedNodeInfo, BannedSubnet, BlockData, BlockEntry,
    BlockchainInfo, ChainTip, ChainTipStatus, CoinsAnswer, CoinsCacheSizes, DeploymentInfo,
    LocalAddress, NetTotals, NetworkConnections, NetworkInfo, NetworkReachability,
    NetworkRequestError, NodeAddress, PeerRelay, PeerReport, PeerSelector, PeerState, StoredBlock,
    TipRef, TxOutSetInfo, UnspentOutput, UploadTarget,
};
use ibex_rpc::deployment::{deployment_info, Ancestry};
use ibex_rpc::{BackendError, NodeBackend};

use super::chain::{block_file_image, Chain};

/// The de-obfuscated block file, read once per test binary.
pub fn shared_image() -> &'static [u8] {
    static IMAGE: OnceLock<Vec<u8>> = OnceLock::new();
    IMAGE.get_or_init(block_file_image)
}

/// The chain, loaded once per test binary.
pub fn shared_chain() -> &'static Chain<'static> {
    static CHAIN: OnceLock<Chain<'static>> = OnceLock::new();
    CHAIN.get_or_init(|| Chain::load(shared_image()))
}

/// Chain work and median time past of every block of the file, computed
/// once in height order (a parent before its children).
fn block_metrics() -> &'static HashMap<BlockHash, (ChainWork, i64)> {
    static METRICS: OnceLock<HashMap<BlockHash, (ChainWork, i64)>> = OnceLock::new();
    METRICS.get_or_init(|| {
        let chain = shared_chain();
        let mut hashes: Vec<&BlockHash> = chain.hashes().collect();
        hashes.sort_by_key(|hash| chain.height(hash));
        let mut metrics: HashMap<BlockHash, (ChainWork, i64)> = HashMap::new();
        for hash in hashes {
            let proof = ChainWork::from_bits(chain.block(hash).header().bits.into());
            let parent_work =
                chain.parent(hash).map_or(ChainWork::ZERO, |parent| metrics[&parent].0);
            metrics.insert(*hash, (parent_work.wrapping_add(proof), chain.median_time_past(hash)));
        }
        metrics
    })
}

/// The coins database size the backend reports.
pub const TEST_COINS_DISK_BYTES: u64 = 123_456;
/// The cache sizes the backend reports.
pub const TEST_CACHE_SIZES: CoinsCacheSizes =
    CoinsCacheSizes { coins_database_bytes: 8 << 20, coins_tip_bytes: 440 << 20 };

/// A block's ancestors in the file, by height.
struct FileAncestry {
    chain: &'static super::chain::Chain<'static>,
    by_height: Vec<BlockHash>,
}

impl Ancestry for FileAncestry {
    fn version(&self, height: u32) -> i32 {
        self.chain.block(&self.by_height[height as usize]).header().version
    }

    fn median_time_past(&self, height: u32) -> i64 {
        self.chain.median_time_past(&self.by_height[height as usize])
    }
}

#[derive(Default)]
struct Gate {
    closed: bool,
    entered: usize,
}

/// The backend.
pub struct ChainBackend {
    chain: &'static Chain<'static>,
    visible_height: Mutex<u32>,
    tip_changed: Condvar,
    gate: Mutex<Gate>,
    gate_changed: Condvar,
    shutdown_requested: AtomicBool,
    networking: bool,
}

impl ChainBackend {
    /// The whole chain visible, networking on.
    pub fn new() -> ChainBackend {
        let chain = shared_chain();
        ChainBackend {
            chain,
            visible_height: Mutex::new(chain.active().len() as u32 - 1),
            tip_changed: Condvar::new(),
            gate: Mutex::new(Gate::default()),
            gate_changed: Condvar::new(),
            shutdown_requested: AtomicBool::new(false),
            networking: true,
        }
    }

    /// As [`ChainBackend::new`], networking off.
    pub fn without_networking() -> ChainBackend {
        ChainBackend { networking: false, ..ChainBackend::new() }
    }

    /// The chain underneath.
    pub fn chain(&self) -> &'static Chain<'static> {
        self.chain
    }

    /// Moves the tip to `height` of the active chain and wakes waiters.
    pub fn set_tip_height(&self, height: u32) {
        *self.visible_height.lock().unwrap() = height;
        self.tip_changed.notify_all();
    }

    /// Holds every call that reads the tip until [`ChainBackend::open_gate`].
    pub fn close_gate(&self) {
        self.gate.lock().unwrap().closed = true;
    }

    /// Lets held calls go.
    pub fn open_gate(&self) {
        self.gate.lock().unwrap().closed = false;
        self.gate_changed.notify_all();
    }

    /// Waits until `count` calls have reached the gate.
    pub fn wait_entered(&self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut gate = self.gate.lock().unwrap();
        while gate.entered < count {
            assert!(Instant::now() < deadline, "calls did not reach the gate");
            gate = self.gate_changed.wait_timeout(gate, Duration::from_millis(50)).unwrap().0;
        }
    }

    /// Whether `stop` asked for a shutdown.
    pub fn shutdown_requested(&self) -> bool {
        self.shutdown_requested.load(Ordering::SeqCst)
    }

    fn pass_gate(&self) {
        let mut gate = self.gate.lock().unwrap();
        gate.entered += 1;
        self.gate_changed.notify_all();
        while gate.closed {
            gate = self.gate_changed.wait(gate).unwrap();
        }
    }

    fn visible(&self) -> u32 {
        *self.visible_height.lock().unwrap()
    }

    fn tip_at(&self, height: u32) -> TipRef {
        TipRef { hash: self.chain.active()[height as usize], height }
    }

    fn entry(&self, hash: &BlockHash) -> Option<BlockEntry> {
        let chain = self.chain;
        let height = chain.height(hash)?;
        let tip_height = self.visible();
        let in_active_chain = chain.is_active(hash) && height <= tip_height;
        let next_block_hash = if in_active_chain && height < tip_height {
            chain.active().get(height as usize + 1).copied()
        } else {
            None
        };
        let block = chain.block(hash);
        Some(BlockEntry {
            hash: *hash,
            header: *block.header(),
            height,
            chain_work: block_metrics()[hash].0,
            median_time_past: block_metrics()[hash].1,
            transaction_count: block.transaction_count() as u64,
            data: BlockData::Stored { have_undo: chain.is_active(hash) && height > 0 },
            in_active_chain,
            next_block_hash,
            tip_height,
        })
    }

    fn require_networking(&self) -> Result<(), BackendError> {
        if self.networking {
            Ok(())
        } else {
            Err(BackendError::P2pDisabled)
        }
    }
}

impl NodeBackend for ChainBackend {
    fn tip(&self) -> Result<TipRef, BackendError> {
        self.pass_gate();
        Ok(self.tip_at(self.visible()))
    }

    fn block_hash_at(&self, height: u32) -> Result<Option<BlockHash>, BackendError> {
        Ok((height <= self.visible()).then(|| self.chain.active()[height as usize]))
    }

    fn block_entry(&self, hash: &BlockHash) -> Result<Option<BlockEntry>, BackendError> {
        Ok(self.entry(hash))
    }

    fn block(
        &self,
        hash: &BlockHash,
        include_spent_coins: bool,
    ) -> Result<Option<StoredBlock>, BackendError> {
        let Some(entry) = self.entry(hash) else { return Ok(None) };
        let has_undo = matches!(entry.data, BlockData::Stored { have_undo: true });
        let spent_coins = (include_spent_coins && has_undo)
            .then(|| self.chain.spent_coins(hash).iter().map(|coin| coin.to_buf()).collect());
        let bytes = self.chain.block(hash).bytes().to_vec();
        Ok(Some(StoredBlock { entry, bytes, spent_coins }))
    }

    fn blockchain_info(&self) -> Result<BlockchainInfo, BackendError> {
        let tip = self.tip_at(self.visible());
        Ok(BlockchainInfo {
            tip: self.entry(&tip.hash).ok_or(BackendError::NoTip)?,
            best_header_height: Some(self.chain.active().len() as u32 - 1),
            verification_progress: 1.0,
            initial_block_download: false,
            size_on_disk_bytes: shared_image().len() as u64,
            prune: None,
            signet_challenge: None,
            warnings: Vec::new(),
        })
    }

    fn chain_tips(&self) -> Result<Vec<ChainTip>, BackendError> {
        let chain = self.chain;
        let parents: std::collections::HashSet<BlockHash> =
            chain.hashes().filter_map(|hash| chain.parent(hash)).collect();
        let tip = self.tip_at(self.visible());
        let mut tips: Vec<ChainTip> = chain
            .hashes()
            .filter(|hash| !parents.contains(*hash) || **hash == tip.hash)
            .map(|hash| {
                let height = chain.height(hash).unwrap();
                let fork_height = chain
                    .ancestry(hash)
                    .iter()
                    .find(|ancestor| chain.is_active(ancestor))
                    .and_then(|fork| chain.height(fork))
                    .unwrap_or(0);
                let status = if *hash == tip.hash {
                    ChainTipStatus::Active
                } else {
                    ChainTipStatus::ValidFork
                };
                ChainTip { height, hash: *hash, branch_length: height - fork_height, status }
            })
            .collect();
        tips.sort_by(|a, b| b.height.cmp(&a.height).then(a.hash.cmp(&b.hash)));
        Ok(tips)
    }

    fn coins(
        &self,
        outpoints: &[OutPoint],
        _include_mempool: bool,
    ) -> Result<CoinsAnswer, BackendError> {
        let coins = outpoints
            .iter()
            .map(|outpoint| {
                self.chain.unspent(outpoint).map(|coin| UnspentOutput {
                    value: Amount::from_sat(coin.value_satoshis).unwrap(),
                    script_pubkey: coin.script_pubkey,
                    height: Some(Height::new(coin.height)),
                    is_coinbase: coin.is_coinbase,
                })
            })
            .collect();
        Ok(CoinsAnswer { tip: self.tip_at(self.visible()), coins })
    }

    fn wait_for_tip_change(
        &self,
        known_tip: &BlockHash,
        timeout: Duration,
    ) -> Result<TipRef, BackendError> {
        let deadline = Instant::now() + timeout;
        let mut height = self.visible_height.lock().unwrap();
        loop {
            let tip = self.tip_at(*height);
            let left = deadline.saturating_duration_since(Instant::now());
            if tip.hash != *known_tip || left.is_zero() {
                return Ok(tip);
            }
            height = self.tip_changed.wait_timeout(height, left).unwrap().0;
        }
    }

    fn txoutset_info(&self, hash_type: TxOutSetHashType) -> Result<TxOutSetInfo, BackendError> {
        let mut hasher = TxOutSetHasher::new(hash_type);
        for (outpoint, coin) in self.chain.unspent_coins() {
            let set_coin = SetCoin {
                outpoint,
                height: coin.height.into(),
                is_coinbase: coin.is_coinbase,
                value: Amount::from_sat(coin.value_satoshis).unwrap(),
                script_pubkey: &coin.script_pubkey,
            };
            hasher.add_coin(&set_coin).unwrap();
        }
        let tip = self.tip_at(self.chain.active().len() as u32 - 1);
        Ok(TxOutSetInfo {
            height: tip.height,
            best_block: tip.hash,
            stats: hasher.finish(),
            disk_size_bytes: TEST_COINS_DISK_BYTES,
        })
    }

    fn deployment_info(
        &self,
        hash: Option<&BlockHash>,
    ) -> Result<Option<DeploymentInfo>, BackendError> {
        let hash = match hash {
            Some(hash) => *hash,
            None => self.tip_at(self.visible()).hash,
        };
        let Some(height) = self.chain.height(&hash) else { return Ok(None) };
        let mut ancestry = self.chain.ancestry(&hash);
        ancestry.reverse();
        let ancestors = FileAncestry { chain: self.chain, by_height: ancestry };
        Ok(Some(deployment_info(&Params::regtest(), hash, height, &ancestors)))
    }

    fn coins_cache_sizes(&self) -> CoinsCacheSizes {
        TEST_CACHE_SIZES
    }

    fn network_info(&self) -> Result<NetworkInfo, BackendError> {
        self.require_networking()?;
        let network = |name: &str, reachable| NetworkReachability {
            name: name.to_owned(),
            reachable,
            proxy: String::new(),
            proxy_randomize_credentials: false,
        };
        Ok(NetworkInfo {
            version: 100,
            subversion: "/Ibex:0.1.0/".to_owned(),
            protocol_version: 70016,
            connections: Some(NetworkConnections {
                local_services: (1 << 0) | (1 << 3) | (1 << 10) | (1 << 11),
                network_active: true,
                connections_in: 0,
                connections_out: 1,
            }),
            relay: Some(PeerRelay { local_relay: false, time_offset_seconds: 0 }),
            networks: ["ipv4", "ipv6", "onion", "i2p", "cjdns"]
                .iter()
                .enumerate()
                .map(|(index, name)| network(name, index < 2))
                .collect(),
            relay_fees: None,
            local_addresses: vec![LocalAddress {
                address: "10.0.0.1".to_owned(),
                port: 18444,
                score: 1,
            }],
            warnings: Vec::new(),
        })
    }

    fn peers(&self) -> Result<Vec<PeerReport>, BackendError> {
        self.require_networking()?;
        let mut address_local = [0u8; 16];
        address_local[10..12].copy_from_slice(&[0xff, 0xff]);
        let version = PeerVersion {
            protocol_version: 70016,
            services: ServiceFlags::from_bits((1 << 0) | (1 << 3)),
            user_agent: UserAgent::new(b"/Satoshi:30.0.0/".to_vec()).unwrap(),
            start_height: 1190,
            relay: true,
            timestamp_seconds: 1_795_321_000,
            time_offset_seconds: 0,
            address_local: ServiceAddress {
                services: ServiceFlags::NONE,
                ip_bytes: address_local,
                port: 0,
            },
            wtxid_relay: true,
            wants_address_v2: true,
            serves_spent_coins: false,
        };
        let at = |seconds: u64| UNIX_EPOCH + Duration::from_secs(seconds);
        let connection = NetPeerInfo {
            id: PeerId(0),
            address: SocketAddr::from(([127, 0, 0, 1], 18444)),
            local_address: Some(SocketAddr::from(([127, 0, 0, 1], 50000))),
            inbound: false,
            connection: ConnectionType::OutboundFullRelay,
            transport: TransportKind::V2,
            session_id: Some([0xab; 32]),
            version: Some(version),
            handshake_complete: true,
            connected_at: at(1_795_321_000),
            last_send: Some(at(1_795_321_300)),
            last_receive: Some(at(1_795_321_301)),
            bytes_sent: 1_000,
            bytes_received: 9_000_000,
            last_ping: Some(Duration::from_micros(250)),
            min_ping: Some(Duration::from_micros(125)),
            ping_wait: None,
            send_queue_bytes: 0,
            permissions: PeerPermissions::NONE,
        };
        let state = PeerState {
            presync_height: None,
            best_known_height: Some(Height::new(1190)),
            common_height: Some(Height::new(1190)),
            blocks_in_flight: Vec::new(),
            last_block_seconds: 1_795_321_236,
            fee_filter_satoshis_per_kvb: 1_000,
        };
        Ok(vec![PeerReport { connection, state }])
    }

    fn net_totals(&self) -> Result<NetTotals, BackendError> {
        self.require_networking()?;
        Ok(NetTotals {
            total_bytes_received: 9_000_000,
            total_bytes_sent: 1_000,
            upload_target: UploadTarget {
                timeframe_seconds: 86_400,
                target_bytes: 0,
                target_reached: false,
                serve_historical_blocks: true,
                bytes_left_in_cycle: 0,
                time_left_in_cycle_seconds: 0,
            },
        })
    }

    fn connection_count(&self) -> Result<usize, BackendError> {
        self.require_networking()?;
        Ok(1)
    }

    // The network-control methods answer as a node connected to
    // 127.0.0.1:18444 (peer 0, added with `addnode`) with 10.0.0.1 banned
    // by hand; they change nothing.

    fn add_node(
        &self,
        node: &str,
        command: AddNodeCommand,
        v2_transport: Option<bool>,
    ) -> Result<(), BackendError> {
        self.require_networking()?;
        let added = node == MOCK_PEER;
        match command {
            _ if v2_transport == Some(false) && node == "v2only" => {
                Err(NetworkRequestError::V2TransportDisabled.into())
            }
            AddNodeCommand::Add if added => Err(NetworkRequestError::NodeAlreadyAdded.into()),
            AddNodeCommand::Remove if !added => Err(NetworkRequestError::NodeNotAdded.into()),
            _ => Ok(()),
        }
    }

    fn disconnect_peer(&self, peer: &PeerSelector) -> Result<(), BackendError> {
        self.require_networking()?;
        match peer {
            PeerSelector::Address(address) if address == MOCK_PEER => Ok(()),
            PeerSelector::Id(0) => Ok(()),
            _ => Err(NetworkRequestError::NodeNotConnected.into()),
        }
    }

    fn added_nodes(&self) -> Result<Vec<AddedNodeInfo>, BackendError> {
        self.require_networking()?;
        let connection = AddedNodeConnection { address: MOCK_PEER.to_owned(), inbound: false };
        Ok(vec![
            AddedNodeInfo { added_node: MOCK_PEER.to_owned(), connection: Some(connection) },
            AddedNodeInfo { added_node: "example.invalid".to_owned(), connection: None },
        ])
    }

    fn node_addresses(
        &self,
        count_max: usize,
        network: Option<&str>,
    ) -> Result<Vec<NodeAddress>, BackendError> {
        self.require_networking()?;
        let known =
            [("1.2.3.4", "ipv4"), ("2a01::1", "ipv6")].map(|(address, network)| NodeAddress {
                time_seconds: 1_700_000_000,
                services: 1033,
                address: address.to_owned(),
                port: 8333,
                network: network.to_owned(),
            });
        let wanted = if count_max == 0 { usize::MAX } else { count_max };
        Ok(known
            .into_iter()
            .filter(|address| network.is_none_or(|name| address.network == name))
            .take(wanted)
            .collect())
    }

    fn ban(&self, address: IpAddr, _until_seconds: i64) -> Result<(), BackendError> {
        self.require_networking()?;
        if address == MOCK_BANNED {
            return Err(NetworkRequestError::AlreadyBanned.into());
        }
        Ok(())
    }

    fn unban(&self, address: IpAddr) -> Result<(), BackendError> {
        self.require_networking()?;
        if address != MOCK_BANNED {
            return Err(NetworkRequestError::NotBanned.into());
        }
        Ok(())
    }

    fn banned(&self) -> Result<Vec<BannedSubnet>, BackendError> {
        self.require_networking()?;
        Ok(vec![BannedSubnet {
            subnet: format!("{MOCK_BANNED}/32"),
            created_seconds: 1_700_000_000,
            until_seconds: 1_700_086_400,
        }])
    }

    fn clear_bans(&self) -> Result<(), BackendError> {
        self.require_networking()
    }

    fn request_shutdown(&self) {
        self.shutdown_requested.store(true, Ordering::SeqCst);
    }
}

/// The peer the mock is connected to (id 0, an added node).
pub const MOCK_PEER: &str = "127.0.0.1:18444";
/// The address the mock has banned.
pub const MOCK_BANNED: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
