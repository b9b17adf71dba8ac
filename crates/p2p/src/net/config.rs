//! [`NetworkConfig`]: what the networking layer is told at start, with
//! Core's defaults, and the limits each value must keep.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::addrman::{AddressBook, NetworkSet};
use crate::framing::{FRAME_HEADER_BYTES, MAGIC_BYTES, MESSAGE_PAYLOAD_BYTES_MAX};
use crate::messages::feature::{FeatureMessage, FEATURE_NEGOTIATION_VERSION};
use crate::messages::version::{UserAgent, PROTOCOL_VERSION};
use crate::net::discovery::DiscoveryConfig;
use crate::net::error::NetworkError;
use crate::net::eviction::EvictionGrouping;
use crate::services::ServiceFlags;

/// Core's `-peertimeout` default (`DEFAULT_PEER_CONNECT_TIMEOUT`): a new
/// connection must have sent and received, and finished the handshake,
/// within this.
pub const PEER_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// Core's `TIMEOUT_INTERVAL`: nothing sent, nothing received, or a ping not
/// answered for this long disconnects.
pub const INACTIVITY_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// Core's `PING_INTERVAL`: a ping is sent this long after the last one.
pub const PING_INTERVAL: Duration = Duration::from_secs(2 * 60);
/// Core's `DEFAULT_CONNECT_TIMEOUT` (5,000 ms) for an outbound TCP connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(5000);
/// Core's `-maxsendbuffer` default (`DEFAULT_MAXSENDBUFFER`, 1,000 kB):
/// past it, a peer's messages are not read until its send queue drains.
pub const SEND_QUEUE_BYTES_DEFAULT: usize = 1_000 * 1000;
/// Core's `-maxreceivebuffer` default (`DEFAULT_MAXRECEIVEBUFFER`, 5,000 kB):
/// the most of a peer's messages waiting for the node.
pub const RECEIVE_QUEUE_BYTES_DEFAULT: usize = 5_000 * 1000;
/// Core's `-maxconnections` default (`DEFAULT_MAX_PEER_CONNECTIONS`) less its
/// 8 full-relay, 2 block-relay-only and 1 feeler outbound slots: 114 inbound.
pub const INBOUND_CONNECTIONS_DEFAULT: usize = 125 - 8 - 2 - 1;
/// Core's ban time for `setban` without a time, and how long a
/// misbehaving inbound peer's address is refused here
/// (`DEFAULT_MISBEHAVING_BANTIME`, 24 hours).
pub const BAN_DURATION_DEFAULT: Duration = Duration::from_secs(24 * 60 * 60);
/// Core's `-connect` loop waits 500 ms after its first round, then up to
/// 5 s between attempts at an address (`ThreadOpenConnections`).
pub const RECONNECT_DELAY_MIN: Duration = Duration::from_millis(500);
/// See [`RECONNECT_DELAY_MIN`].
pub const RECONNECT_DELAY_MAX: Duration = Duration::from_secs(5);
/// The user agent Ibex sends (BIP14).
pub const USER_AGENT: &str = concat!("/Ibex:", env!("CARGO_PKG_VERSION"), "/");

/// The most inbound connections a configuration may allow. Each costs a
/// task and at most about 18 MB of buffers at every bound at once (see the
/// module docs), 64 KiB when idle; Core's own ceiling is its file
/// descriptor limit, of the same order.
pub const INBOUND_CONNECTIONS_MAX: usize = 4096;
/// The most `-connect` addresses (one task each).
pub const OUTBOUND_ADDRESSES_MAX: usize = 256;
/// The most events waiting for the node, whatever their size; their bytes
/// are bounded per peer by `receive_queue_bytes_max`.
pub const EVENT_QUEUE_EVENTS_MAX: usize = 1 << 16;
/// The most a peer's send queue may be set to hold (Core takes any
/// `-maxsendbuffer`; this keeps one peer's queue under 256 MB).
pub const SEND_QUEUE_BYTES_LIMIT: usize = 256 << 20;
/// The most a peer's receive queue may be set to hold.
pub const RECEIVE_QUEUE_BYTES_LIMIT: usize = 256 << 20;
/// The most events one peer holds in the event queue: each counts at least
/// `receive_queue_bytes_max / 256` against its peer's share, so a peer
/// flooding small messages takes 256 places, not the whole queue.
pub const RECEIVE_QUEUE_EVENTS_PER_PEER_MAX: usize = 256;
/// The least a receive queue may hold: one largest message and its header,
/// or a full block could never be delivered.
pub const RECEIVE_QUEUE_BYTES_MIN: usize = MESSAGE_PAYLOAD_BYTES_MAX + FRAME_HEADER_BYTES;

const _: () = assert!(RECEIVE_QUEUE_BYTES_MIN <= RECEIVE_QUEUE_BYTES_DEFAULT);
const _: () = assert!(RECEIVE_QUEUE_BYTES_DEFAULT <= RECEIVE_QUEUE_BYTES_LIMIT);
const _: () = assert!(SEND_QUEUE_BYTES_DEFAULT <= SEND_QUEUE_BYTES_LIMIT);
const _: () = assert!(INBOUND_CONNECTIONS_DEFAULT <= INBOUND_CONNECTIONS_MAX);
// The semaphore counting a receive queue's bytes takes at most u32 permits
// at once, and the whole queue must fit in its permit count.
const _: () = assert!(RECEIVE_QUEUE_BYTES_LIMIT <= u32::MAX as usize);

/// How the networking layer runs: the network, whom to connect to, whether
/// to listen, what to announce, and every limit and timeout.
#[derive(Debug, Clone)]
pub struct NetworkConfig {
    /// The network's magic (`Params::message_start`).
    pub magic: [u8; MAGIC_BYTES],
    /// Outbound connections kept open (Core's `-connect`: manual
    /// connections, retried while the node runs).
    pub connect: Vec<SocketAddr>,
    /// Where to accept inbound connections (Core's `-bind`/`-port` with
    /// `-listen`); `None` for no listener.
    pub listen: Option<SocketAddr>,
    /// The most inbound connections at once; more are refused.
    pub inbound_connections_max: usize,
    /// Speak BIP324 (Core's `-v2transport`, on by default since Core 27):
    /// outbound connections try v2 first, inbound ones detect v1 or v2, and
    /// `NODE_P2P_V2` is announced.
    pub v2_transport: bool,
    /// Services announced in `version`; `NODE_P2P_V2` is added when
    /// `v2_transport` is on. Core's unpruned default: `NODE_NETWORK |
    /// NODE_WITNESS | NODE_NETWORK_LIMITED`.
    pub services: ServiceFlags,
    /// Services an outbound peer must offer, else it is dropped. Core checks
    /// only its automatic outbound connections (`ExpectServicesFromConn`);
    /// `-connect` peers are manual, so the default is none.
    pub outbound_services_required: ServiceFlags,
    /// The user agent sent in `version`.
    pub user_agent: UserAgent,
    /// The height announced in `version` until the node sets another
    /// ([`crate::net::NetworkHandle::set_best_height`]).
    pub start_height: i32,
    /// Core's `-peertimeout`: see [`PEER_CONNECT_TIMEOUT`].
    pub peer_connect_timeout: Duration,
    /// See [`INACTIVITY_TIMEOUT`].
    pub inactivity_timeout: Duration,
    /// See [`PING_INTERVAL`].
    pub ping_interval: Duration,
    /// See [`CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// The first wait before reconnecting to a `connect` address; doubles
    /// after each failed attempt up to `reconnect_delay_max`.
    pub reconnect_delay_min: Duration,
    /// See `reconnect_delay_min`.
    pub reconnect_delay_max: Duration,
    /// Core's `-maxsendbuffer`: see [`SEND_QUEUE_BYTES_DEFAULT`].
    pub send_queue_bytes_max: usize,
    /// Core's `-maxreceivebuffer`: see [`RECEIVE_QUEUE_BYTES_DEFAULT`].
    pub receive_queue_bytes_max: usize,
    /// The most events waiting for the node ([`crate::net::NetworkEvents`]).
    pub event_queue_events_max: usize,
    /// How long an inbound peer that misbehaved is refused (Core
    /// discourages its address).
    pub discourage_duration: Duration,
    /// How inbound connections are grouped for eviction (Core's groups;
    /// tests may split loopback addresses).
    pub eviction_grouping: EvictionGrouping,
    /// Loopback addresses other than `127.0.0.1` are discouraged for
    /// misbehaving as routable ones would be (regtest's
    /// `-test=discourageloopback`; Core spares every local address).
    pub loopback_discouraged: bool,
    /// `-whitelist`: the permissions connections get by address and
    /// direction.
    pub whitelist: crate::net::whitelist::Whitelist,
    /// The address manager: learned from `addr`/`addrv2`, answering
    /// `getaddr`, and (with discovery) filling the outbound slots. `None`:
    /// address messages go to the node like any other.
    pub addresses: Option<AddressSettings>,
    /// Where the layer's own lines go (discovery's, Core's `dnsseed` and
    /// `opencon` threads').
    pub log: LogSink,
    /// BIP 434 `feature` messages sent to peers that announce version
    /// 70017 or more (BIP 455's `blockspentcoinsv1` when we serve spent
    /// coins). With any, we announce 70017 ourselves; with none, Core's
    /// 70016, and nothing differs from Core.
    pub features: Vec<FeatureMessage>,
    /// We read peers' BIP 434 features (a fully validating SwiftSync
    /// looks for peers serving spent coins): announce 70017 even with no
    /// feature of our own, as peers send theirs only to such nodes.
    pub reads_features: bool,
}

/// The address manager and what the layer does with it.
#[derive(Debug, Clone)]
pub struct AddressSettings {
    /// The shared address manager.
    pub book: Arc<AddressBook>,
    /// Networks whose addresses are kept: `-onlynet`'s, or all.
    pub stored_networks: NetworkSet,
    /// Automatic outbound connections, DNS seeds, `-seednode`; `None` with
    /// `-connect` (Core then uses the address manager for nothing but
    /// learning).
    pub discovery: Option<DiscoveryConfig>,
}

/// Writes one log line.
type LogWriter = dyn Fn(&str) + Send + Sync;

/// A destination for log lines (the node's `debug.log`); cheap to clone.
#[derive(Clone, Default)]
pub struct LogSink(Option<Arc<LogWriter>>);

impl LogSink {
    /// Lines go to `write`.
    pub fn new(write: impl Fn(&str) + Send + Sync + 'static) -> LogSink {
        LogSink(Some(Arc::new(write)))
    }

    /// Writes one line.
    pub fn log(&self, line: &str) {
        if let Some(write) = &self.0 {
            write(line);
        }
    }
}

impl fmt::Debug for LogSink {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(if self.0.is_some() { "LogSink(on)" } else { "LogSink(off)" })
    }
}

impl NetworkConfig {
    /// Core's defaults for the network with `magic`: no connections, no
    /// listener, v2 on.
    pub fn new(magic: [u8; MAGIC_BYTES]) -> NetworkConfig {
        NetworkConfig {
            magic,
            connect: Vec::new(),
            listen: None,
            inbound_connections_max: INBOUND_CONNECTIONS_DEFAULT,
            v2_transport: true,
            services: ServiceFlags::NETWORK | ServiceFlags::WITNESS | ServiceFlags::NETWORK_LIMITED,
            outbound_services_required: ServiceFlags::NONE,
            user_agent: UserAgent::new(USER_AGENT.as_bytes()).unwrap_or_default(),
            start_height: 0,
            peer_connect_timeout: PEER_CONNECT_TIMEOUT,
            inactivity_timeout: INACTIVITY_TIMEOUT,
            ping_interval: PING_INTERVAL,
            connect_timeout: CONNECT_TIMEOUT,
            reconnect_delay_min: RECONNECT_DELAY_MIN,
            reconnect_delay_max: RECONNECT_DELAY_MAX,
            send_queue_bytes_max: SEND_QUEUE_BYTES_DEFAULT,
            receive_queue_bytes_max: RECEIVE_QUEUE_BYTES_DEFAULT,
            event_queue_events_max: 4096,
            discourage_duration: BAN_DURATION_DEFAULT,
            eviction_grouping: EvictionGrouping::Core,
            loopback_discouraged: false,
            whitelist: crate::net::whitelist::Whitelist::default(),
            addresses: None,
            log: LogSink::default(),
            features: Vec::new(),
            reads_features: false,
        }
    }

    /// The protocol version our `version` announces: BIP 434's 70017 when
    /// we send or read `feature` messages, else Core's.
    pub fn protocol_version(&self) -> i32 {
        if self.features.is_empty() && !self.reads_features {
            PROTOCOL_VERSION
        } else {
            FEATURE_NEGOTIATION_VERSION
        }
    }

    /// The services announced: `services`, with `NODE_P2P_V2` when v2 is on.
    pub fn announced_services(&self) -> ServiceFlags {
        if self.v2_transport {
            self.services | ServiceFlags::P2P_V2
        } else {
            self.services
        }
    }

    /// Checks every value against its limit.
    pub fn validate(&self) -> Result<(), NetworkError> {
        check_range(
            "inbound_connections_max",
            self.inbound_connections_max,
            0,
            INBOUND_CONNECTIONS_MAX,
        )?;
        check_range("connect", self.connect.len(), 0, OUTBOUND_ADDRESSES_MAX)?;
        if let Some(discovery) =
            self.addresses.as_ref().and_then(|addresses| addresses.discovery.as_ref())
        {
            let slots_max = crate::net::discovery::AUTOMATIC_SLOTS_MAX;
            check_range("full_relay_slots", discovery.full_relay_slots, 0, slots_max)?;
            check_range("block_relay_slots", discovery.block_relay_slots, 0, slots_max)?;
        }
        check_range("send_queue_bytes_max", self.send_queue_bytes_max, 1, SEND_QUEUE_BYTES_LIMIT)?;
        check_range(
            "receive_queue_bytes_max",
            self.receive_queue_bytes_max,
            RECEIVE_QUEUE_BYTES_MIN,
            RECEIVE_QUEUE_BYTES_LIMIT,
        )?;
        check_range(
            "event_queue_events_max",
            self.event_queue_events_max,
            1,
            EVENT_QUEUE_EVENTS_MAX,
        )?;
        let durations = [
            ("peer_connect_timeout", self.peer_connect_timeout),
            ("inactivity_timeout", self.inactivity_timeout),
            ("ping_interval", self.ping_interval),
            ("connect_timeout", self.connect_timeout),
            ("reconnect_delay_min", self.reconnect_delay_min),
        ];
        for (name, duration) in durations {
            if duration.is_zero() {
                return Err(NetworkError::InvalidConfig { name, value: 0, min: 1, max: u64::MAX });
            }
        }
        if self.reconnect_delay_max < self.reconnect_delay_min {
            return Err(NetworkError::InvalidConfig {
                name: "reconnect_delay_max",
                value: millis(self.reconnect_delay_max),
                min: millis(self.reconnect_delay_min),
                max: u64::MAX,
            });
        }
        Ok(())
    }
}

fn check_range(
    name: &'static str,
    value: usize,
    min: usize,
    max: usize,
) -> Result<(), NetworkError> {
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(NetworkError::InvalidConfig { name, value: value as u64, min: min as u64, max: max as u64 })
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_core_defaults_and_valid() {
        let config = NetworkConfig::new([0xfa, 0xbf, 0xb5, 0xda]);
        assert!(config.validate().is_ok());
        assert_eq!(config.inbound_connections_max, 114);
        assert_eq!(config.send_queue_bytes_max, 1_000_000);
        assert_eq!(config.receive_queue_bytes_max, 5_000_000);
        assert_eq!(config.announced_services().bits(), 1 | 8 | 1024 | 2048);
        assert_eq!(config.user_agent.as_bytes(), USER_AGENT.as_bytes());
    }

    #[test]
    fn bip434_features_raise_the_protocol_version_only_when_used() {
        let mut config = NetworkConfig::new([0; 4]);
        assert_eq!(config.protocol_version(), 70_016, "Core's, without features");
        config.reads_features = true;
        assert_eq!(config.protocol_version(), 70_017);
        config.reads_features = false;
        config.features.push(FeatureMessage::new(b"blockspentcoinsv1", &[0]));
        assert_eq!(config.protocol_version(), 70_017);
    }

    #[test]
    fn out_of_range_values_are_refused() {
        let mut config = NetworkConfig::new([0; 4]);
        config.receive_queue_bytes_max = MESSAGE_PAYLOAD_BYTES_MAX;
        let error = config.validate().unwrap_err();
        assert!(matches!(
            error,
            NetworkError::InvalidConfig { name: "receive_queue_bytes_max", .. }
        ));
        let mut config = NetworkConfig::new([0; 4]);
        config.peer_connect_timeout = Duration::ZERO;
        assert!(config.validate().is_err());
        let mut config = NetworkConfig::new([0; 4]);
        config.reconnect_delay_max = Duration::from_millis(1);
        assert!(config.validate().is_err());
        let mut discovery = DiscoveryConfig::new(ibex_primitives::params::Network::Regtest, 1);
        discovery.full_relay_slots = crate::net::discovery::AUTOMATIC_SLOTS_MAX + 1;
        let manager = crate::addrman::AddressManager::new(Default::default(), &[0; 32]);
        let mut config = NetworkConfig::new([0; 4]);
        config.addresses = Some(AddressSettings {
            book: Arc::new(AddressBook::new(manager)),
            stored_networks: NetworkSet::ALL,
            discovery: Some(discovery),
        });
        let error = config.validate().unwrap_err();
        assert!(matches!(error, NetworkError::InvalidConfig { name: "full_relay_slots", .. }));
    }
}
