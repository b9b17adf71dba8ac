//! The networking facts a [`super::NodeBackend`] hands the server, shaped
//! as Core's `getnetworkinfo`, `getpeerinfo` and `getnettotals` report them
//! (`rpc/net.cpp`).

use ibex_p2p::net::PeerInfo;
use ibex_primitives::Height;

/// The connection manager's part of `getnetworkinfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkConnections {
    /// Our service bits.
    pub local_services: u64,
    /// Whether networking is active (`setnetworkactive`).
    pub network_active: bool,
    /// Inbound connections.
    pub connections_in: usize,
    /// Outbound connections.
    pub connections_out: usize,
}

/// The peer manager's part of `getnetworkinfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerRelay {
    /// Whether we relay transactions (`localrelay`).
    pub local_relay: bool,
    /// Median time offset of outbound peers, seconds.
    pub time_offset_seconds: i64,
}

/// One network's reachability and proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkReachability {
    /// `ipv4`, `ipv6`, `onion`, `i2p` or `cjdns`.
    pub name: String,
    /// Whether it is reachable.
    pub reachable: bool,
    /// The proxy used for it (`host:port`), empty when none.
    pub proxy: String,
    /// Whether the proxy gets random credentials per connection.
    pub proxy_randomize_credentials: bool,
}

/// The mempool's relay fees, when there is a mempool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayFees {
    /// Minimum relay fee, satoshis per 1,000 virtual bytes.
    pub relay_fee_satoshis_per_kvb: i64,
    /// Incremental relay fee, satoshis per 1,000 virtual bytes.
    pub incremental_fee_satoshis_per_kvb: i64,
}

/// An address we advertise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalAddress {
    /// The address.
    pub address: String,
    /// Its port.
    pub port: u16,
    /// Its score.
    pub score: i32,
}

/// What `getnetworkinfo` reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkInfo {
    /// The client version as a number (Core's `CLIENT_VERSION`).
    pub version: u32,
    /// The user agent (`/Ibex:0.1.0/`).
    pub subversion: String,
    /// The P2P protocol version.
    pub protocol_version: u32,
    /// The connection manager's fields (absent without networking).
    pub connections: Option<NetworkConnections>,
    /// The peer manager's fields (absent without networking).
    pub relay: Option<PeerRelay>,
    /// Each network Core lists, in its order.
    pub networks: Vec<NetworkReachability>,
    /// Relay fees (absent without a mempool).
    pub relay_fees: Option<RelayFees>,
    /// Addresses we advertise.
    pub local_addresses: Vec<LocalAddress>,
    /// Warnings for the operator.
    pub warnings: Vec<String>,
}

/// One connected peer, as `getpeerinfo` reports it: Core joins the
/// connection manager's `CNodeStats` with the message handling's
/// `CNodeStateStats`, and so does this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerReport {
    /// The connection as the networking layer records it.
    pub connection: PeerInfo,
    /// What the node's block sync and relay know of the peer.
    pub state: PeerState,
}

/// What the node's block sync and relay know of a peer beyond its
/// connection (Core's `CNodeStateStats`). Heights are `None` where Core
/// writes -1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerState {
    /// Its low-work headers presync height, while one runs
    /// (`presynced_headers`).
    pub presync_height: Option<Height>,
    /// The height of its best known block, when we have indexed it
    /// (`synced_headers`).
    pub best_known_height: Option<Height>,
    /// The height of the last block it has in common with our active
    /// chain, when known (`synced_blocks`).
    pub common_height: Option<Height>,
    /// Heights of the blocks asked of it, in request order (`inflight`).
    pub blocks_in_flight: Vec<Height>,
    /// When it last sent a block new to us, seconds since the epoch (0:
    /// never; `last_block`).
    pub last_block_seconds: i64,
    /// The fee filter it sent, satoshis per 1,000 virtual bytes
    /// (`minfeefilter`).
    pub fee_filter_satoshis_per_kvb: i64,
}

/// `-maxuploadtarget`'s cycle, as `getnettotals` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UploadTarget {
    /// Length of the cycle, seconds.
    pub timeframe_seconds: u64,
    /// Target bytes per cycle (0: no limit).
    pub target_bytes: u64,
    /// Whether the target is reached.
    pub target_reached: bool,
    /// Whether historical blocks are still served.
    pub serve_historical_blocks: bool,
    /// Bytes left in the cycle.
    pub bytes_left_in_cycle: u64,
    /// Seconds left in the cycle.
    pub time_left_in_cycle_seconds: u64,
}

/// Traffic totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetTotals {
    /// Bytes received.
    pub total_bytes_received: u64,
    /// Bytes sent.
    pub total_bytes_sent: u64,
    /// The upload target's state.
    pub upload_target: UploadTarget,
}

/// What `addnode` asks (Core's `command` argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddNodeCommand {
    /// Keep the node connected (`add`).
    Add,
    /// Stop keeping it connected (`remove`); its connection stays open.
    Remove,
    /// Try one connection now (`onetry`).
    OneTry,
}

/// Which peer `disconnectnode` closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerSelector {
    /// The peer whose `addr` (as `getpeerinfo` shows it) is this text.
    Address(String),
    /// The peer with this id.
    Id(i64),
}

/// One connection to an added node (`getaddednodeinfo`'s `addresses`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedNodeConnection {
    /// The peer's `ip:port`.
    pub address: String,
    /// Whether the peer connected to us (`inbound`) or we to it
    /// (`outbound`).
    pub inbound: bool,
}

/// One added node (`-addnode` or `addnode add`), as `getaddednodeinfo`
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedNodeInfo {
    /// The text given to `addnode` or `-addnode`.
    pub added_node: String,
    /// Its connection, when connected.
    pub connection: Option<AddedNodeConnection>,
}

/// An address the address manager knows (`getnodeaddresses`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAddress {
    /// When it was last seen, seconds since the epoch.
    pub time_seconds: i64,
    /// The services it is said to offer.
    pub services: u64,
    /// The address (IP, or the network's own name form).
    pub address: String,
    /// The port.
    pub port: u16,
    /// `ipv4`, `ipv6`, `onion`, `i2p` or `cjdns`.
    pub network: String,
}

/// A manual ban (`listbanned`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BannedSubnet {
    /// The subnet as Core prints it (`1.2.3.4/32`).
    pub subnet: String,
    /// When the ban was made, seconds since the epoch.
    pub created_seconds: i64,
    /// When it ends, seconds since the epoch.
    pub until_seconds: i64,
}

/// Why the network side refused a request: each is one of Core's RPC
/// errors (`rpc/net.cpp`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetworkRequestError {
    /// `addnode add` of a node already added (Core's -23).
    #[error("the node is added already")]
    NodeAlreadyAdded,
    /// `addnode remove` of a node never added (Core's -24).
    #[error("the node was not added")]
    NodeNotAdded,
    /// `disconnectnode` of no connected peer (Core's -29).
    #[error("no such connected peer")]
    NodeNotConnected,
    /// `v2transport` asked for while the node does not speak v2 (-8).
    #[error("v2 transport is off")]
    V2TransportDisabled,
    /// `setban add` of an address banned already (Core's -23).
    #[error("the address is banned already")]
    AlreadyBanned,
    /// `setban remove` of an address not banned by hand (Core's -30).
    #[error("the address is not banned")]
    NotBanned,
    /// A bound of the node's was reached (added nodes, one-try
    /// connections); the text says which.
    #[error("{what}: at most {count_max}")]
    LimitReached {
        /// What is bounded.
        what: &'static str,
        /// The bound.
        count_max: usize,
    },
}
