//! The RPC server's view of the running P2P side ([`NetworkRpc`]): Core's
//! network methods (`rpc/net.cpp`) answered from the networking layer's
//! handle (connections, traffic, bans, manual connections), the sync
//! loop's [`PeerSyncBoard`] (what it knows of each peer), the added nodes
//! and the address manager. [`crate::rpc_backend::ChainBackend`] hands its
//! network methods here when the node runs its P2P side, and answers
//! Core's -31 ("P2P disabled") otherwise.
//!
//! | module | methods |
//! |---|---|
//! | this one | `getnetworkinfo`, `getconnectioncount`, `getnettotals` |
//! | [`peers`] | `getpeerinfo` |
//! | [`control`] | `addnode`, `disconnectnode`, `getaddednodeinfo`, `getnodeaddresses`, `setban`, `listbanned`, `clearbanned` |
//!
//! # Napkin math
//! Every method copies the handle's peer list (one lock, ~300 bytes a
//! peer, 125 peers: ~40 KB) or the board (one lock); `getpeerinfo` adds one
//! engine query that maps each peer's best known block to heights (an
//! index lookup and, for a peer on a fork, one step down per block of the
//! fork). No method waits for a peer.

pub mod control;
pub mod peers;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ibex_chainstate::ChainReader;
use ibex_p2p::addrman::{AddressBook, AddressNetwork, NetworkSet};
use ibex_p2p::net::NetworkHandle;
use ibex_rpc::backend::{
    NetTotals, NetworkConnections, NetworkInfo, NetworkReachability, PeerRelay, UploadTarget,
};

use crate::p2p_node::added_nodes::AddedNodes;
use crate::p2p_node::peer_sync_board::PeerSyncBoard;
use crate::p2p_node::P2pNode;

/// Core's `TimeOffsets::MIN_SIZE`: fewer outbound offsets than this give a
/// median of 0.
const TIME_OFFSET_SAMPLES_MIN: usize = 5;
/// Core's `-maxuploadtarget` cycle (`getnettotals`' `timeframe`), seconds.
const UPLOAD_TARGET_TIMEFRAME_SECONDS: u64 = 24 * 60 * 60;

/// The running P2P side's parts the RPC reads and drives.
#[derive(Debug, Clone)]
pub struct NetworkRpc {
    /// The networking layer.
    pub(crate) handle: NetworkHandle,
    /// What the sync loop knows of each peer.
    pub(crate) board: Arc<PeerSyncBoard>,
    /// The added nodes (`-addnode`, `addnode add`).
    pub(crate) added: Arc<AddedNodes>,
    /// The address manager.
    pub(crate) book: Arc<AddressBook>,
    /// The engine, for the heights of peers' best blocks.
    pub(crate) reader: ChainReader,
    /// The chain's default P2P port.
    pub(crate) default_port: u16,
    /// The networks Ibex connects over (`-onlynet`, IPv4 and IPv6 only).
    pub(crate) dialed_networks: NetworkSet,
}

/// The client version as Core numbers its own (`CLIENT_VERSION`: major x
/// 10,000 + minor x 100 + patch).
pub fn client_version() -> u32 {
    let part = |text: &str| text.parse::<u32>().unwrap_or(0);
    part(env!("CARGO_PKG_VERSION_MAJOR")) * 10_000
        + part(env!("CARGO_PKG_VERSION_MINOR")) * 100
        + part(env!("CARGO_PKG_VERSION_PATCH"))
}

/// Seconds since the Unix epoch at `time` (0 before it).
pub(crate) fn epoch_seconds(time: SystemTime) -> i64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    i64::try_from(since.as_secs()).unwrap_or(i64::MAX)
}

/// The median of `offsets` as Core's `TimeOffsets::Median` takes it (0
/// with fewer than five; the upper middle of an even count).
pub(crate) fn median_offset_seconds(mut offsets: Vec<i64>) -> i64 {
    if offsets.len() < TIME_OFFSET_SAMPLES_MIN {
        return 0;
    }
    offsets.sort_unstable();
    offsets[offsets.len() / 2]
}

impl NetworkRpc {
    /// The RPC server's view of `node`, reading heights through `reader`.
    pub fn new(node: &P2pNode, reader: ChainReader) -> NetworkRpc {
        let parts = node.rpc_parts();
        NetworkRpc {
            handle: parts.handle.clone(),
            board: Arc::clone(&parts.board),
            added: Arc::clone(&parts.added),
            book: Arc::clone(&parts.book),
            reader,
            default_port: node.params().default_port,
            dialed_networks: parts.dialed_networks,
        }
    }

    /// `getnetworkinfo`: the version, our services, connections by
    /// direction, which networks are reachable. Ibex relays no
    /// transactions (`localrelay` false, no relay fees: no mempool) and
    /// advertises no local address.
    pub fn network_info(&self) -> NetworkInfo {
        let peers = self.handle.peers();
        let connections_in = peers.iter().filter(|peer| peer.inbound).count();
        let outbound_offsets = peers
            .iter()
            .filter(|peer| !peer.inbound)
            .filter_map(|peer| peer.version.as_ref().map(|version| version.time_offset_seconds))
            .collect();
        let networks = [
            AddressNetwork::Ipv4,
            AddressNetwork::Ipv6,
            AddressNetwork::Onion,
            AddressNetwork::I2p,
            AddressNetwork::Cjdns,
        ];
        NetworkInfo {
            version: client_version(),
            subversion: self.handle.user_agent(),
            protocol_version: self.handle.protocol_version().unsigned_abs(),
            connections: Some(NetworkConnections {
                local_services: self.handle.local_services().bits(),
                network_active: !self.handle.is_shut_down(),
                connections_in,
                connections_out: peers.len() - connections_in,
            }),
            relay: Some(PeerRelay {
                local_relay: false,
                time_offset_seconds: median_offset_seconds(outbound_offsets),
            }),
            networks: networks
                .into_iter()
                .map(|network| NetworkReachability {
                    name: network.name().to_owned(),
                    reachable: self.dialed_networks.contains(network),
                    proxy: String::new(),
                    proxy_randomize_credentials: false,
                })
                .collect(),
            relay_fees: None,
            local_addresses: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// `getconnectioncount`: every open connection, handshake done or not
    /// (Core's `GetNodeCount(Both)`).
    pub fn connection_count(&self) -> usize {
        self.handle.peer_count()
    }

    /// `getnettotals`: bytes through every socket since the start; no
    /// upload target (Core's without `-maxuploadtarget`).
    pub fn net_totals(&self) -> NetTotals {
        let totals = self.handle.totals();
        NetTotals {
            total_bytes_received: totals.bytes_received,
            total_bytes_sent: totals.bytes_sent,
            upload_target: UploadTarget {
                timeframe_seconds: UPLOAD_TARGET_TIMEFRAME_SECONDS,
                target_bytes: 0,
                target_reached: false,
                serve_historical_blocks: true,
                bytes_left_in_cycle: 0,
                time_left_in_cycle_seconds: 0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_versions_as_core_counts_them() {
        assert_eq!(median_offset_seconds(vec![5, 6, 7, 8]), 0, "fewer than five");
        assert_eq!(median_offset_seconds(vec![9, -3, 1, 4, 100]), 4);
        assert_eq!(median_offset_seconds(vec![1, 2, 3, 4, 5, 6]), 4);
        assert_eq!(client_version(), {
            let version = env!("CARGO_PKG_VERSION");
            let parts: Vec<u32> =
                version.split('.').map(|part| part.parse().unwrap_or(0)).collect();
            parts[0] * 10_000 + parts[1] * 100 + parts[2]
        });
        assert_eq!(epoch_seconds(UNIX_EPOCH + Duration::from_secs(7)), 7);
    }
}
