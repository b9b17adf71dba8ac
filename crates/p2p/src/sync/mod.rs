//! Initial block download from peers, as pure state machines: events in
//! (a peer connected or left, a message from a peer, time passed, the
//! engine's tip moved), [`Action`]s out (send this message to that peer,
//! disconnect or punish it, offer these headers or this block to the
//! engine). No sockets, no threads, no clock and no randomness of their own:
//! time comes in as [`std::time::Instant`] (and Unix seconds where Core
//! compares with block times), secrets as [`SyncSecret`]s, so every
//! behaviour is tested in memory with simulated peers, and a tokio layer
//! drives them in the node.
//!
//! | module | job | Core |
//! |---|---|---|
//! | [`locator`] | block locators, the fork point of a received locator, the headers a `getheaders` gets | `LocatorEntries`, `FindForkInGlobalIndex`, the `GETHEADERS` handler |
//! | [`headers_presync`] | a low-work header chain downloaded twice, stored only once it has the work | `HeadersSyncState` (headerssync.cpp) |
//! | [`headers`] | headers sync per peer: who to ask, `headers` messages checked and routed to presync or the engine, timeouts | `ProcessHeadersMessage`, `MaybeSendGetHeaders`, the headers parts of `SendMessages` |
//! | [`block_download`] | which block from which peer: window, in-flight and byte bounds, stalling, timeouts; AssumeUTXO's background chainstate's window below the snapshot's base | `FindNextBlocksToDownload`, `TryDownloadingHistoricalBlocks`, the block parts of `SendMessages` |
//! | [`action`] | [`Action`], [`PeerId`], [`DisconnectReason`] | `fDisconnect`, `Misbehaving` |
//! | [`misbehavior`] | [`Misbehavior`] with Core's words | `Misbehaving` messages |
//!
//! The engine's side: [`Action::OfferHeaders`] goes to
//! `Chainstate::offer_headers`, [`Action::OfferBlock`] to
//! `Chainstate::offer_block` (with `BlockSource::Peer`); the node reads the
//! engine's index through [`headers::HeaderIndex`] and the best header chain
//! through [`block_download::HeaderChain`], and tells the scheduler when the
//! tip moves (`TipUpdated` events).
//!
//! # Napkin math
//! - Headers: mainnet's 900,000 headers are 450 `getheaders` round trips
//!   (162 KB each): 73 MB, a few seconds on a LAN, ~1 minute over a
//!   10 Mbit/s link. A fresh node's chain starts below the minimum chain
//!   work, so it downloads them twice (presync, then redownload): 146 MB.
//! - Blocks in flight: 16 per peer, 128 with 8 peers, bounded in bytes by
//!   `download_bytes_max` at 4 MB per block in flight (28 blocks at the
//!   default `-dbcache`).
//! - Throughput: the window (1,024 blocks) and 16 per peer never bind at
//!   loopback latency (~50 us): one peer can deliver thousands of blocks a
//!   second, validation takes 100-1,000; over the internet bandwidth binds
//!   long before either limit (8 full blocks/s at 100 Mbit/s).
//! - Memory per peer: headers sync ~100 bytes, presync (only while a
//!   low-work chain is checked) at most ~1.4 MB on mainnet (650 KB of
//!   commitment bits worst case, 720 KB of redownload buffer), block
//!   download ~600 bytes plus ~80 bytes per block in flight.

pub mod action;
pub mod block_download;
pub mod headers;
pub mod headers_presync;
pub mod locator;
pub mod misbehavior;

pub use action::{Action, DisconnectReason, PeerId};
pub use block_download::{BlockDownload, DownloadConfig, HeaderChain};
pub use headers::{HeaderIndex, HeadersSync, IndexedHeader};
pub use headers_presync::{HeadersSyncParams, HeadersSyncState, SyncSecret};
pub use locator::{find_fork, headers_to_serve, locator_entries, ChainView, HashChain};
pub use misbehavior::Misbehavior;
