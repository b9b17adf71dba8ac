//! The networking facts a [`super::NodeBackend`] hands the server, shaped
//! as Core's `getnetworkinfo`, `getpeerinfo` and `getnettotals` report them
//! (`rpc/net.cpp`).

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

/// One connected peer, as `getpeerinfo` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerInfo {
    /// Peer index.
    pub id: i64,
    /// `host:port`.
    pub address: String,
    /// Our side's `ip:port`, when known.
    pub address_bind: Option<String>,
    /// Our address as the peer reported it, when it did.
    pub address_local: Option<String>,
    /// `ipv4`, `ipv6`, `onion`, `i2p`, `cjdns`, `not_publicly_routable`.
    pub network: String,
    /// The AS of the peer's route, when `-asmap` is set.
    pub mapped_as: Option<u32>,
    /// The peer's service bits.
    pub services: u64,
    /// Whether we relay transactions to it.
    pub relay_transactions: bool,
    /// Last send, seconds since the epoch.
    pub last_send_seconds: i64,
    /// Last receive, seconds since the epoch.
    pub last_receive_seconds: i64,
    /// Last valid transaction from it, seconds since the epoch.
    pub last_transaction_seconds: i64,
    /// Last block from it, seconds since the epoch.
    pub last_block_seconds: i64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_received: u64,
    /// Connection time, seconds since the epoch.
    pub connected_seconds: i64,
    /// Its clock's offset from ours, seconds.
    pub time_offset_seconds: i64,
    /// Last ping round trip, seconds.
    pub ping_seconds: Option<f64>,
    /// Smallest ping round trip, seconds.
    pub min_ping_seconds: Option<f64>,
    /// An outstanding ping's age, seconds.
    pub ping_wait_seconds: Option<f64>,
    /// Its protocol version.
    pub version: i32,
    /// Its user agent, sanitised.
    pub subversion: String,
    /// Whether it connected to us.
    pub inbound: bool,
    /// Whether we chose it as a high-bandwidth compact block peer.
    pub bip152_high_bandwidth_to: bool,
    /// Whether it chose us as one.
    pub bip152_high_bandwidth_from: bool,
    /// Its height when it connected.
    pub starting_height: i32,
    /// Header presync height with it, -1 when none runs.
    pub presynced_headers: i32,
    /// Last header we have in common.
    pub synced_headers: i32,
    /// Last block we have in common.
    pub synced_blocks: i32,
    /// Heights of blocks asked from it.
    pub blocks_in_flight: Vec<i32>,
    /// Whether we relay addresses with it.
    pub address_relay_enabled: bool,
    /// Addresses processed.
    pub addresses_processed: u64,
    /// Addresses dropped by rate limiting.
    pub addresses_rate_limited: u64,
    /// Permission names granted to it.
    pub permissions: Vec<String>,
    /// Its fee filter, satoshis per 1,000 virtual bytes.
    pub min_fee_filter_satoshis_per_kvb: i64,
    /// Bytes sent by message type (types with zero bytes left out).
    pub bytes_sent_per_message: Vec<(String, u64)>,
    /// Bytes received by message type.
    pub bytes_received_per_message: Vec<(String, u64)>,
    /// Core's connection type word (`outbound-full-relay`, `inbound`...).
    pub connection_type: String,
    /// `detecting`, `v1` or `v2`.
    pub transport_protocol_type: String,
    /// The BIP324 session id in hex, empty for v1.
    pub session_id: String,
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
