//! The networking layer: the sans-IO [`Transport`](crate::Transport) and
//! messages driven over real TCP connections on tokio, as Bitcoin Core's
//! `CConnman` (net.cpp) and the connection parts of its `PeerManager`
//! (net_processing.cpp) do.
//!
//! | module | job | Core |
//! |---|---|---|
//! | [`manager`] | [`start`]: the listener, one task per `-connect` address (connect, run, retry with backoff; v2 first, one v1 retry), automatic connections, inbound admission | `ThreadOpenConnections`, `AcceptConnection`, `DisconnectNodes` |
//! | [`discovery`] | without `-connect`: the outbound slots filled from the address manager, DNS seeds, `-seednode`, fixed seeds | `ThreadOpenConnections`, `ThreadDNSAddressSeed` |
//! | `address_relay` | one connection's `addr`/`addrv2`/`getaddr` exchange with the address manager ([`crate::addrman`]) | `ProcessMessage` (`addr`, `getaddr`), `ProcessAddrs` |
//! | [`connection_type`] | [`ConnectionType`]: inbound, manual, full-relay, block-relay-only, feeler, addr-fetch | `ConnectionType` |
//! | `peer` | one task per connection: socket, transport, send queue, event delivery | `SocketHandlerConnected`, `ProcessMessages` |
//! | `protocol` | the handshake, pings, timeouts, without I/O | `ProcessMessage` (`version` ... `pong`), `MaybeSendPing`, `InactivityCheck` |
//! | [`handle`] | [`NetworkHandle`]: send, disconnect, ban, peer info, totals | `PushMessage`, `DisconnectNode`, `BanMan`, `GetNodeStats` |
//! | [`manual`] | manual connections opened while running: kept until removed, or tried once | `AddNode`, `RemoveAddedNode`, `OpenNetworkConnection` |
//! | [`event`] | [`NetworkEvent`]s through one bounded queue ([`NetworkEvents`]) | the log lines of the above |
//! | [`reason`] | [`DisconnectReason`] (Core's words), [`BanReason`] | |
//! | [`config`] | [`NetworkConfig`] with Core's defaults | `-connect`, `-bind`, `-peertimeout`, `-maxsendbuffer`, ... |
//! | [`eviction`] | which inbound peer makes room when the slots are full | `AttemptToEvictConnection`, `SelectNodeToEvict` |
//! | [`whitelist`], [`permissions`] | `-whitelist` and the [`PeerPermissions`] it grants by address and direction | `NetWhitelistPermissions`, `NetPermissionFlags` |
//! | [`bans`], [`address`], [`stats`], [`error`] | manual bans and discouragements with expiry, address classes, `getpeerinfo` fields, [`NetworkError`] | `BanMan`, `CNetAddr`, `CNodeStats` |
//!
//! What a connection sends on its own, as Core: `version` (protocol
//! 70016, our services, relay off since Ibex relays no transactions, a
//! random nonce), `wtxidrelay`, `sendaddrv2` and `verack` after the peer's
//! `version`, `pong` for `ping`, and a `ping` every 2 minutes (no
//! `sendcmpct`: Ibex builds no compact blocks). Everything else the node sends; everything
//! else received goes to the node.
//!
//! # Napkin math
//!
//! Tasks: one listener, one per `-connect` address (it runs its
//! connection), one per inbound connection: with Core's 125 connections,
//! about 126 tasks of a few kilobytes of state each, on a multi-threaded
//! runtime.
//!
//! Bytes held per connection, at most:
//!
//! | where | bytes | bound |
//! |---|---|---|
//! | read buffer | 65,536 | [`peer::READ_CHUNK_BYTES`] |
//! | transport, message in progress | 4,000,033 | the 4 MB payload limit (grows 256 KiB ahead of the bytes received) |
//! | messages waiting for the node | 5,000,000 | `receive_queue_bytes_max` (Core's `-maxreceivebuffer`) |
//! | one message waiting for that room | 4,000,024 | one at a time; reading stops meanwhile |
//! | send queue and encoded bytes | 1,000,000 + one message (4,000,024) + 65,536, in a buffer at most twice its unsent bytes | `send_queue_bytes_max` (Core's `-maxsendbuffer`), [`peer::WRITE_BATCH_BYTES`] |
//!
//! So about 18 MB for a peer at every bound at once, 2.3 GB for 125 such
//! peers (Core's own bounds give the same order); an idle peer costs the
//! 64 KiB read buffer, a 256 KiB output buffer at most, and a few hundred
//! bytes. The event queue holds at most `event_queue_events_max` events
//! and, per peer, its receive bound in bytes and 256 events.
//!
//! Time, for a 4 MB `block` over loopback: the sender encodes the whole
//! frame before its first byte leaves (v1: a copy and the double SHA-256
//! checksum, 2.3 ms at SHA-NI's 0.57 ns/byte; v2: a copy and the
//! encryption, 2.8 ms), the kernel moves it (about 1 GB/s through the
//! loopback device on this VM, in 64 KiB segments the reader takes one by
//! one), and the receiver checks it after its last byte (v1: the
//! checksum again; v2: the decryption), so the floor is about 2 x 2.5 ms
//! plus the transfer. Measured by `tests/net_loopback.rs` (`--nocapture`,
//! `--test-threads=1`, ci profile, a 2-core Xeon VM at low load) for a
//! 3.9 MB block, from `send` to the node holding the event: 8-11 ms in v1
//! and in v2. Instrumented, one v1 run split as 4.4 ms encoding, 1.2 ms
//! writing into the socket, receiving until 9 ms (63 reads), the checksum
//! to 11.3 ms: twice the 5 ms floor. The excess is in the transport,
//! which hashes or deciphers a message whole, after its last byte arrives
//! (hashing v1's checksum as the bytes come would overlap it with the
//! transfer), and in the VM's slower hashing under load, not in this
//! layer's loop. At 1 Gbit/s (125 MB/s) from one peer, that is 7-9 % of a core per
//! side.

pub mod address;
pub mod bans;
pub mod config;
pub mod connection_type;
pub mod discovery;
pub mod error;
pub mod event;
pub mod eviction;
pub mod handle;
pub mod manager;
pub mod manual;
pub mod peer;
pub mod permissions;
pub mod reason;
pub mod stats;
pub mod whitelist;

mod address_relay;
mod protocol;
mod queue;
mod registry;
pub(crate) mod shared;

pub use bans::BanEntry;
pub use config::{AddressSettings, LogSink, NetworkConfig};
pub use connection_type::ConnectionType;
pub use discovery::{DiscoveryConfig, DiscoveryTiming};
pub use error::NetworkError;
pub use event::{NetworkEvent, NetworkEvents};
pub use eviction::EvictionGrouping;
pub use handle::NetworkHandle;
pub use manager::start;
pub use manual::{ManualConnection, ONE_TRY_CONNECTIONS_MAX};
pub use permissions::PeerPermissions;
pub use reason::{BanReason, DisconnectReason};
pub use stats::{NetTotals, PeerInfo, PeerVersion};
