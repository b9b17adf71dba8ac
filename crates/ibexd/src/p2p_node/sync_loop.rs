//! The sync loop: one thread between the networking layer and the engine.
//! It takes network events, feeds the headers sync and block download
//! state machines, carries out their actions (messages to peers, offers
//! to the engine through [`EngineLink`]), answers peers' requests from our
//! chain, and handles the engine's notices.
//!
//! It runs on its own thread, not on the tokio runtime: reads of the
//! engine (the read API, [`ibex_chainstate::ReadView`]) wait for the engine's
//! thread, and blocks are parsed here, so the reactor never blocks.
//!
//! Beside it: `block_sources` (who sent each block, to punish the sender
//! of an invalid one), `header_offers` (the same for headers),
//! `unrequested` (`block` messages, and Core's rules for blocks nobody
//! asked for), `serving` (answering peers: `getdata` through each peer's
//! queue of block requests, one block per peer per pass while its send
//! queue has room, as Core's `ProcessGetData`), `services` (no
//! `NODE_NETWORK` when pruning or while an AssumeUTXO snapshot is not
//! validated) and `peer_log` (Core's lines about peers). During initial
//! block download no block is asked of a limited peer (`tip`).

mod block_sources;
mod header_offers;
mod mutation;
mod peer_board;
mod peer_log;
mod services;
mod serving;
mod spent_coins_fetch;
mod tip;
mod unrequested;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ibex_chainstate::{
    AcceptOutcome, BlockSource, ChainReader, EngineCommand, EngineNotice, PreparedBlock,
};
use ibex_p2p::messages::headers::LOCATOR_VERSION;
use ibex_p2p::messages::spent_coins::BLOCK_SPENT_COINS_FEATURE_ID;
use ibex_p2p::net::address::spared_as_local;
use ibex_p2p::net::{
    ConnectionType, DisconnectReason as NetReason, NetworkEvent, NetworkEvents, NetworkHandle,
    PeerPermissions,
};
use ibex_p2p::sync::block_download::BLOCK_DOWNLOAD_WINDOW_BLOCKS;
use ibex_p2p::sync::HeaderIndex;
use ibex_p2p::sync::{Action, BlockDownload, HeadersSync, Misbehavior, PeerId};
use ibex_p2p::{Inventory, LocatorRequest, NetworkMessage, ServiceFlags};
use ibex_primitives::{BlockBuffers, BlockHash, Params};

use super::engine_link::EngineLink;
use super::engine_view::{headers_progress_line, unix_seconds, BestChainWindow, ReaderIndex};
use super::serve::GetDataQueue;
use crate::logging::Logger;
use crate::progress::NetworkGauges;
pub use block_sources::BlockSources;
pub use header_offers::HeaderOffers;
pub use services::{
    apply_start_services, configured_services, services_for_snapshot, start_services, StartServices,
};

/// How often time passes for the state machines and the tip is read.
const TICK: Duration = Duration::from_millis(100);
/// The longest wait for a network event before the loop looks at the
/// engine again.
const EVENT_WAIT: Duration = Duration::from_millis(10);
/// How long headers offered to the engine may take to be indexed before
/// the next `headers` message is processed anyway.
const HEADERS_OFFER_WAIT: Duration = Duration::from_secs(60);
/// Blocks kept while their parent is not indexed yet (out of order
/// arrivals): the download window.
const PARKED_BLOCKS_MAX: usize = 1024;

/// Headers a new tip is announced with at most; more are announced with
/// an `inv` of the tip (Core's `MAX_BLOCKS_TO_ANNOUNCE`).
const ANNOUNCED_HEADERS_MAX: usize = 8;
/// The window is read again once the tip moved this far past where it
/// was read (a quarter window): requests never wait for the next tick.
const WINDOW_REREAD_BLOCKS: u32 = BLOCK_DOWNLOAD_WINDOW_BLOCKS / 4;
/// The least time between two `getheaders` a peer's `inv`s prompt.
const INV_GETHEADERS_INTERVAL: Duration = Duration::from_secs(1);

/// What the loop keeps per connected peer.
#[derive(Debug, Default)]
struct PeerState {
    /// Its block requests not served yet (Core's `m_getdata_requests`).
    getdata: GetDataQueue,
    /// Its latest `getheaders` that came while its send queue was full,
    /// answered once it has room.
    getheaders_waiting: Option<LocatorRequest>,
    /// It holds Core's `download` permission (`-whitelist`).
    download_permitted: bool,
    /// It holds Core's `noban` permission (`-whitelist`): never punished.
    no_ban: bool,
    /// The services our `version` announced to it (Core's
    /// `m_our_services`): without `NODE_NETWORK` it may not ask for old
    /// blocks.
    our_services: ServiceFlags,
    /// It sent `sendheaders` (BIP130): new tips go to it as `headers`.
    wants_headers: bool,
    /// When an `inv` from it last made us send `getheaders`.
    inv_getheaders_at: Option<Instant>,
    /// A `-connect`/`-addnode` connection: never punished (Core).
    manual: bool,
    /// It announced BIP 455's `feature blockspentcoinsv1`: it answers
    /// `getbspent`.
    serves_spent_coins: bool,
    /// It serves only the last 288 blocks (Core's `IsLimitedPeer`): asked
    /// for no block during initial block download.
    limited: bool,
    /// Its address is local (Core disconnects it for misbehaving but
    /// discourages nobody by that address).
    local: bool,
}

/// The loop's state (see the module docs).
pub struct SyncLoop {
    pub(super) network: NetworkHandle,
    pub(super) events: NetworkEvents,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) reader: ChainReader,
    pub(super) index: ReaderIndex,
    pub(super) engine: EngineLink,
    pub(super) headers_sync: HeadersSync,
    pub(super) download: BlockDownload,
    pub(super) params: Params,
    pub(super) logger: Logger,
    pub(super) stop: Arc<AtomicBool>,
    /// Who sent the blocks offered, and the blocks the engine marks invalid.
    pub(super) block_sources: BlockSources,
    /// Header offers waiting for the engine, to punish refused headers.
    header_offers: HeaderOffers,
    window: BestChainWindow,
    /// The tip height and best header the window was read at.
    window_tip: u32,
    window_best: Option<(BlockHash, u32)>,
    /// The tip moved since the window was read.
    window_stale: bool,
    /// Something changed that may let the scheduler request blocks.
    download_due: bool,
    /// The settled tip last seen.
    tip: Option<(BlockHash, u32)>,
    /// The height up to which new tips were announced.
    announced_height: u32,
    peers: BTreeMap<PeerId, PeerState>,
    parked: HashMap<BlockHash, Vec<(PeerId, Box<PreparedBlock>)>>,
    parked_count: usize,
    /// The last header of each offer not answered yet, in order.
    header_offers_pending: VecDeque<BlockHash>,
    seen_sequence: u64,
    peer_heights_stale: bool,
    /// Where the progress display reads the sync's figures.
    pub(super) gauges: Option<Arc<NetworkGauges>>,
    /// Where `getpeerinfo` reads what the loop knows of each peer.
    pub(super) peer_board: Option<Arc<super::peer_sync_board::PeerSyncBoard>>,
    /// A peer's queued block request may be served now: the loop does not
    /// wait for events (Core's `fMoreWork`).
    serving_due: bool,
    /// `-whitelist`: who holds the `download` and `noban` permissions.
    pub(super) whitelist: super::whitelist::Whitelist,
    /// `-test=discourageloopback`: which peers count as local when they
    /// misbehave (see `ibex_p2p::net::address::spared_as_local`).
    pub(super) loopback_discouraged: bool,
    /// The services announced when no AssumeUTXO snapshot waits for
    /// validation (see `services`).
    pub(super) configured_services: ServiceFlags,
    /// Core's `IsInitialBlockDownload`, latched: once out of it, the node
    /// stays out (see `tip`).
    initial_download: bool,
    /// `-peerblockspentcoins`: `getbspent` is answered (else ignored: the
    /// peer was not told we serve it).
    serves_spent_coins: bool,
    /// A fully validating SwiftSync plan's coins being fetched.
    spent_coins_fetch: Option<spent_coins_fetch::SpentCoinsFetch>,
}

impl SyncLoop {
    /// A loop over these parts; nothing runs until [`SyncLoop::run`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        network: NetworkHandle,
        events: NetworkEvents,
        runtime: tokio::runtime::Handle,
        reader: ChainReader,
        index: ReaderIndex,
        engine: EngineLink,
        headers_sync: HeadersSync,
        download: BlockDownload,
        params: Params,
        logger: Logger,
        stop: Arc<AtomicBool>,
    ) -> SyncLoop {
        let tip_height = download.tip_height();
        let configured_services = network.local_services();
        let serves_spent_coins = network.announces_feature(BLOCK_SPENT_COINS_FEATURE_ID);
        SyncLoop {
            network,
            events,
            runtime,
            reader,
            index,
            engine,
            headers_sync,
            download,
            params,
            logger,
            stop,
            block_sources: BlockSources::default(),
            header_offers: HeaderOffers::default(),
            window_tip: tip_height,
            announced_height: tip_height,
            window: BestChainWindow::default(),
            window_best: None,
            window_stale: true,
            download_due: false,
            tip: None,
            peers: BTreeMap::new(),
            parked: HashMap::new(),
            parked_count: 0,
            header_offers_pending: VecDeque::new(),
            seen_sequence: 0,
            peer_heights_stale: false,
            gauges: None,
            peer_board: None,
            serving_due: false,
            whitelist: Default::default(),
            loopback_discouraged: false,
            configured_services,
            initial_download: true,
            serves_spent_coins,
            spent_coins_fetch: None,
        }
    }

    /// Fetches the spent coins of blocks 1 to `terminal_height` from
    /// serving peers for a fully validating SwiftSync plan (BIP 455).
    pub fn fetch_spent_coins_to(&mut self, terminal_height: u32) {
        self.spent_coins_fetch = Some(spent_coins_fetch::SpentCoinsFetch::new(terminal_height));
    }

    /// Runs until `stop` is raised, the engine stops or the network does.
    pub fn run(mut self) {
        let started = Instant::now();
        let mut last_tick = Instant::now();
        while !self.stop.load(Ordering::Relaxed) && !self.engine.engine_gone() {
            self.engine.flush();
            while let Some(notice) = self.engine.next_notice(Duration::ZERO) {
                self.on_notice(notice);
            }
            if self.engine.has_room() {
                let wait = if self.serving_due { Duration::ZERO } else { EVENT_WAIT };
                match self.next_event(wait) {
                    Ok(Some(event)) => self.on_event(event),
                    Ok(None) => {}
                    Err(NetworkClosed) => break,
                }
            } else {
                // Back-pressure: peers wait while the engine catches up.
                if let Some(notice) = self.engine.next_notice(EVENT_WAIT) {
                    self.on_notice(notice);
                }
            }
            self.serving_due = self.serve_getdata_queues();
            self.follow_tip();
            self.poll_download_if_due();
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.tick();
            }
        }
        self.logger.log(&traffic_line(&self.network.totals(), started.elapsed()));
        self.network.shutdown();
    }

    fn next_event(&mut self, wait: Duration) -> Result<Option<NetworkEvent>, NetworkClosed> {
        let events = &mut self.events;
        let network = &self.network;
        // A peer whose send queue drained ends the wait too: its next
        // queued block is served at once (Core's message handler does not
        // sleep while a getdata waits).
        let received = self.runtime.block_on(async {
            tokio::select! {
                received = tokio::time::timeout(wait, events.recv()) => Some(received),
                () = network.send_ready() => None,
            }
        });
        match received {
            Some(Ok(Some(event))) => Ok(Some(event)),
            Some(Ok(None)) => Err(NetworkClosed),
            Some(Err(_)) | None => Ok(None),
        }
    }

    fn on_event(&mut self, event: NetworkEvent) {
        match event {
            NetworkEvent::PeerConnected {
                id,
                connection,
                address,
                inbound,
                ref version,
                our_services,
                ..
            } => {
                self.logger.log(&event.to_string());
                let local = spared_as_local(address.ip(), self.loopback_discouraged);
                self.peer_connected(id, connection, local);
                let limited = is_limited_peer(version.services);
                self.download.set_peer_limited(id, limited);
                let permissions = self.whitelist.permissions(address.ip(), inbound);
                if let Some(state) = self.peers.get_mut(&id) {
                    state.limited = limited;
                    state.download_permitted = permissions.contains(PeerPermissions::DOWNLOAD);
                    state.no_ban = permissions.contains(PeerPermissions::NO_BAN);
                    state.our_services = our_services;
                    state.serves_spent_coins = version.serves_spent_coins;
                }
                if permissions.contains(PeerPermissions::NO_BAN) {
                    self.headers_sync.mark_no_ban(id);
                }
            }
            NetworkEvent::Message { id, message, .. } => self.on_message(id, message),
            NetworkEvent::PeerDisconnected { id, ref reason } => {
                // A sync rule's or a misbehaviour's disconnect was logged
                // when it was decided, in Core's words.
                if !matches!(reason, NetReason::Sync(_) | NetReason::Misbehaving(_)) {
                    self.logger.log(&event.to_string());
                }
                self.headers_sync.peer_disconnected(id);
                self.download.remove_peer(id);
                self.peers.remove(&id);
                self.spent_coins_peer_gone(id);
            }
            NetworkEvent::ConnectionClosed { .. } | NetworkEvent::MessageDropped { .. } => {
                self.logger.log(&event.to_string())
            }
            _ => {}
        }
    }

    fn peer_connected(&mut self, peer: PeerId, connection: ConnectionType, local: bool) {
        let manual = connection == ConnectionType::Manual;
        if !connection.syncs_chain() {
            // Core syncs neither headers nor blocks from addr-fetch peers.
            self.peers.insert(peer, PeerState { manual, local, ..PeerState::default() });
            return;
        }
        let tracked =
            self.headers_sync.peer_connected(peer).is_ok() && self.download.add_peer(peer).is_ok();
        if !tracked {
            self.headers_sync.peer_disconnected(peer);
            self.download.remove_peer(peer);
            let _ = self.network.disconnect(peer, NetReason::Manual);
            return;
        }
        if matches!(connection, ConnectionType::OutboundFullRelay | ConnectionType::BlockRelay) {
            // Core drops these (not inbound or manual ones) when their
            // chain ends below the minimum chain work.
            self.headers_sync.mark_automatic_outbound(peer);
        }
        self.peers.insert(peer, PeerState { manual, local, ..PeerState::default() });
        let _ = self.network.send(peer, NetworkMessage::SendHeaders);
        let actions = self.headers_sync.poll(Instant::now(), unix_seconds(), &self.index);
        self.carry_out(actions);
    }

    fn on_message(&mut self, peer: PeerId, message: NetworkMessage) {
        match message {
            NetworkMessage::Headers(headers) => {
                // The previous offers must be indexed before these are
                // checked against the index.
                self.settle_header_offers();
                let actions = self.headers_sync.on_headers(
                    peer,
                    headers,
                    Instant::now(),
                    unix_seconds(),
                    &self.index,
                );
                self.carry_out(actions);
                for note in self.headers_sync.take_notes() {
                    self.logger.log(&note.to_string());
                }
                self.peer_heights_stale = true;
            }
            NetworkMessage::Block(bytes) => self.on_block_message(peer, bytes),
            NetworkMessage::GetHeaders(request) => self.on_get_headers(peer, request),
            NetworkMessage::GetData(inventory) => self.queue_serving(peer, inventory),
            NetworkMessage::GetSpentCoins(request) => self.queue_spent_coins(peer, request),
            NetworkMessage::SpentCoins(answer) => self.on_spent_coins(peer, answer),
            NetworkMessage::SendHeaders => {
                if let Some(state) = self.peers.get_mut(&peer) {
                    state.wants_headers = true;
                }
            }
            NetworkMessage::Inventory(inventory) => self.on_inventory(peer, &inventory),
            _ => {}
        }
    }

    /// A block announced by `inv` that we do not know: ask for the headers
    /// up to it (Core's `INV` handler), at most once a second per peer.
    fn on_inventory(&mut self, peer: PeerId, inventory: &[Inventory]) {
        let Some(last_block) =
            inventory.iter().rev().find(|entry| entry.inventory_type.is_block_request())
        else {
            return;
        };
        let now = Instant::now();
        let Some(state) = self.peers.get_mut(&peer) else { return };
        let recent = state
            .inv_getheaders_at
            .is_some_and(|at| now.saturating_duration_since(at) < INV_GETHEADERS_INTERVAL);
        if recent || self.index.lookup(&BlockHash(last_block.hash.0)).is_some() {
            return;
        }
        state.inv_getheaders_at = Some(now);
        let best = self.index.best_header();
        let request = LocatorRequest {
            locator_version: LOCATOR_VERSION,
            locator_hashes: self.index.locator(&best.hash),
            stop_hash: BlockHash::ZERO,
        };
        let _ = self.network.send(peer, NetworkMessage::GetHeaders(request));
    }

    /// Carries out the state machines' actions, in order.
    fn carry_out(&mut self, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Send { peer, message } => {
                    // A peer that left or cannot take more is dropped by
                    // the networking layer; the state machines time out.
                    let _ = self.network.send(peer, message);
                }
                Action::Disconnect { peer, reason } => {
                    self.logger
                        .log(&format!("{}, disconnecting {peer}", reason.core_log_message()));
                    self.log_stalling_timeout_increase(&reason);
                    let _ = self.network.disconnect(peer, NetReason::Sync(reason));
                }
                Action::Misbehaving { peer, reason } => self.misbehaving(peer, reason),
                Action::OfferHeaders { peer, headers } => {
                    if let Some(last) = headers.last() {
                        self.header_offers_pending.push_back(last.block_hash());
                    }
                    self.header_offers.record(peer, &headers);
                    let source = BlockSource::Peer(peer.0);
                    self.engine.push(EngineCommand::OfferHeaders { headers, source });
                }
                Action::OfferBlock { peer, hash, height, bytes } => {
                    self.offer_block(peer, hash, height, bytes)
                }
            }
        }
    }

    /// Core's `Misbehaving` and `MaybeDiscourageAndDisconnect`, with their
    /// log lines: a `noban` peer (`-whitelist`) and a manual connection
    /// (-connect, -addnode) are spared, a local address disconnected
    /// without being discouraged, any other disconnected and discouraged.
    fn misbehaving(&mut self, peer: PeerId, reason: Misbehavior) {
        let Some(state) = self.peers.get(&peer) else { return };
        self.logger.log(&reason.core_log_line(peer));
        let id = peer.0;
        if state.no_ban {
            self.logger.log(&format!("Warning: not punishing noban peer {id}!"));
            return;
        }
        if state.manual {
            self.logger.log(&format!("[warning] Not punishing manually connected peer {id}!"));
            return;
        }
        self.logger.log(&if state.local {
            format!("Warning: disconnecting but not discouraging local peer {id}!")
        } else {
            format!("Disconnecting and discouraging peer {id}!")
        });
        let _ = self.network.disconnect(peer, NetReason::Misbehaving(reason));
    }

    /// Parses a block the scheduler handed over once (here, off the
    /// reactor), checks it is not a mutated copy, and offers it.
    fn offer_block(&mut self, peer: PeerId, hash: BlockHash, height: u32, bytes: Vec<u8>) {
        let mut buffers = BlockBuffers::default();
        match PreparedBlock::prepare(bytes, None, &self.params, &mut buffers) {
            Ok(block) => self.offer_prepared(peer, hash, height, block),
            Err(undecodable) => self.log_undecodable(peer, hash, &undecodable.reason),
        }
    }

    /// Offers a parsed block that `peer` sent us, unless it is a mutated
    /// copy.
    fn offer_prepared(
        &mut self,
        peer: PeerId,
        hash: BlockHash,
        height: u32,
        mut block: PreparedBlock,
    ) {
        if let Some(mutation) = self.mutation(&mut block, height) {
            self.on_mutated_block(peer, hash, mutation);
            return;
        }
        self.block_sources.record(hash, peer);
        let source = BlockSource::Peer(peer.0);
        self.engine.push(EngineCommand::OfferBlock { block: Box::new(block), source });
    }

    /// Core's `ProcessMessages` catches a block that fails to deserialise,
    /// logs it and drops the message without punishing the peer.
    fn log_undecodable(&self, peer: PeerId, hash: BlockHash, reason: &dyn std::fmt::Display) {
        self.logger.log(&format!(
            "ProcessMessages(block, peer={}): undecodable block {hash}: {reason}",
            peer.0
        ));
    }

    /// Waits until every headers offer sent is indexed (their notices).
    fn settle_header_offers(&mut self) {
        let deadline = Instant::now() + HEADERS_OFFER_WAIT;
        while !self.header_offers_pending.is_empty()
            && !self.engine.engine_gone()
            && !self.stop.load(Ordering::Relaxed)
            && Instant::now() < deadline
        {
            self.engine.flush();
            if let Some(notice) = self.engine.next_notice(EVENT_WAIT) {
                self.on_notice(notice);
            }
        }
    }

    fn on_notice(&mut self, notice: EngineNotice) {
        match notice {
            EngineNotice::HeadersOffered { added, .. } => {
                let last = self.header_offers_pending.pop_front();
                if let Some(last) = last {
                    self.check_header_offer(last);
                }
                if let Some(last) = last.filter(|_| added > 0) {
                    let spacing_seconds = self.params.pow_target_spacing_seconds;
                    if let Some(line) = headers_progress_line(&self.reader, last, spacing_seconds) {
                        self.logger.log(&line);
                    }
                }
            }
            EngineNotice::BlockOffered { source, hash, outcome } => {
                self.on_block_outcome(source, hash, outcome)
            }
            EngineNotice::SpentCoinsOffered { hash, taken, .. } => {
                self.on_spent_coins_offered(hash, taken)
            }
            EngineNotice::SwiftSyncWaitEnded => {}
        }
    }

    fn on_block_outcome(&mut self, source: BlockSource, hash: BlockHash, outcome: AcceptOutcome) {
        let peer = match source {
            BlockSource::Peer(id) => Some(PeerId(id)),
            _ => None,
        };
        match outcome {
            AcceptOutcome::Accepted(_) => {
                self.record_new_block(peer);
                self.reoffer_children(hash)
            }
            AcceptOutcome::AlreadyKnown(_) => {
                self.block_sources.take(&hash);
                self.reoffer_children(hash)
            }
            AcceptOutcome::UnknownParent(block) => {
                let Some(peer) = peer else { return };
                if self.parked_count < PARKED_BLOCKS_MAX {
                    let parent = block.header().previous_block_hash;
                    self.parked.entry(parent).or_default().push((peer, block));
                    self.parked_count += 1;
                }
            }
            AcceptOutcome::Invalid(rejection) => self.on_block_rejected(hash, &rejection),
        }
    }

    fn reoffer_children(&mut self, parent: BlockHash) {
        let Some(children) = self.parked.remove(&parent) else { return };
        self.parked_count = self.parked_count.saturating_sub(children.len());
        for (peer, block) in children {
            let source = BlockSource::Peer(peer.0);
            self.engine.push(EngineCommand::OfferBlock { block, source });
        }
    }
}

/// The networking layer shut down.
struct NetworkClosed;

/// Core's `IsLimitedPeer`: the peer serves only the last 288 blocks
/// (`NODE_NETWORK_LIMITED` without `NODE_NETWORK`), so it is never asked
/// for the background chainstate's blocks.
fn is_limited_peer(services: ServiceFlags) -> bool {
    !services.contains(ServiceFlags::NETWORK) && services.contains(ServiceFlags::NETWORK_LIMITED)
}

/// What the node received and sent over its run, and the average rates:
/// an IBD's download rate at a glance.
fn traffic_line(totals: &ibex_p2p::net::NetTotals, elapsed: Duration) -> String {
    const MEBIBYTE: f64 = 1_048_576.0;
    let seconds = elapsed.as_secs_f64().max(1e-3);
    let received = totals.bytes_received as f64 / MEBIBYTE;
    let sent = totals.bytes_sent as f64 / MEBIBYTE;
    format!(
        "Network traffic: received {received:.1} MiB ({:.1} MiB/s), sent {sent:.1} MiB ({:.1} MiB/s) in {seconds:.1} s",
        received / seconds,
        sent / seconds,
    )
}

impl std::fmt::Debug for SyncLoop {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("SyncLoop").field("peers", &self.peers.len()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_peer_serving_recent_blocks_alone_is_limited() {
        let limited = ServiceFlags::NETWORK_LIMITED;
        assert!(is_limited_peer(limited | ServiceFlags::WITNESS));
        assert!(!is_limited_peer(limited | ServiceFlags::NETWORK));
        assert!(!is_limited_peer(ServiceFlags::NETWORK));
        assert!(
            !is_limited_peer(ServiceFlags::WITNESS),
            "Core: limited only with NODE_NETWORK_LIMITED"
        );
    }

    #[test]
    fn traffic_line_gives_totals_and_rates() {
        let totals = ibex_p2p::net::NetTotals {
            bytes_received: 30 << 20,
            bytes_sent: 1 << 20,
            time: std::time::SystemTime::UNIX_EPOCH,
            events_dropped: 0,
        };
        assert_eq!(
            traffic_line(&totals, Duration::from_secs(10)),
            "Network traffic: received 30.0 MiB (3.0 MiB/s), sent 1.0 MiB (0.1 MiB/s) in 10.0 s"
        );
    }
}
