//! Headers sync with each peer (Core's `ProcessHeadersMessage` and the
//! headers parts of `SendMessages`, net_processing.cpp):
//!
//! - **Who to ask**: while the best header is more than a day old, one peer
//!   at a time is asked (`getheaders` from the best header's parent, so the
//!   answer is never empty); once it is recent, every peer.
//! - **One request at a time**: a `getheaders` goes out only if none went
//!   to that peer in the last 2 minutes (`HEADERS_RESPONSE_TIME`), or the
//!   last was answered.
//! - **Each `headers` message**: proof of work and continuity first
//!   (misbehaviour otherwise); then a low-work sync in progress takes it
//!   ([`HeadersSyncState`]); headers that do not connect to our index get a
//!   `getheaders` back (no penalty since Core v28); headers whose chain has
//!   less work than the anti-DoS threshold start a presync if the message
//!   was full and are dropped otherwise; the rest go to the engine, and a
//!   full message asks for more.
//! - **Timeout**: the single sync peer gets 15 minutes plus 1 ms per block
//!   the best header is behind today (`HEADERS_DOWNLOAD_TIMEOUT_BASE`,
//!   `_PER_HEADER`: ~31 minutes for all of mainnet); if it has not brought
//!   the best header within a day of now by then, and another peer could
//!   take over, it is disconnected.
//! - **Weak chains**: no peer is punished for a chain below the minimum
//!   chain work; only an automatic outbound peer
//!   ([`HeadersSync::mark_automatic_outbound`]) is dropped, in initial block
//!   download, when its chain ends there (inbound and manual peers are kept,
//!   as in Core).
//! - **Notes** ([`HeadersNote`], [`HeadersSync::take_notes`]): what Core
//!   logs about presync and ignored low-work chains, for the node's log.
//!
//! The node must carry out [`Action::OfferHeaders`] before it feeds the
//! next `headers` message: the next message is checked against the index
//! those headers went into (as in Core, where `ProcessNewBlockHeaders` runs
//! inside the handler).

mod checks;
mod notes;

pub use checks::{anti_dos_work_threshold, check_headers, claimed_work, NEAR_TIP_BLOCKS};
pub use notes::{HeadersNote, HEADERS_NOTES_MAX};

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ibex_primitives::hash::sha256;
use ibex_primitives::{BlockHash, ChainWork, Header, Params};

use crate::messages::headers::{LocatorRequest, HEADERS_PER_MESSAGE_MAX, LOCATOR_VERSION};
use crate::messages::NetworkMessage;
use crate::sync::action::{Action, DisconnectReason, PeerId};
use crate::sync::headers_presync::{
    ChainStart, HeadersSyncParams, HeadersSyncState, Outcome, Phase, SyncSecret,
};
use crate::sync::misbehavior::Misbehavior;
use notes::Notes;

/// How long a `getheaders` may go unanswered before another may be sent
/// (Core's `HEADERS_RESPONSE_TIME`).
pub const HEADERS_RESPONSE_TIME: Duration = Duration::from_secs(2 * 60);
/// The headers sync timeout's fixed part (Core's
/// `HEADERS_DOWNLOAD_TIMEOUT_BASE`).
pub const HEADERS_DOWNLOAD_TIMEOUT_BASE: Duration = Duration::from_secs(15 * 60);
/// The headers sync timeout per block the best header is behind (Core's
/// `HEADERS_DOWNLOAD_TIMEOUT_PER_HEADER`).
pub const HEADERS_DOWNLOAD_TIMEOUT_PER_HEADER: Duration = Duration::from_millis(1);
/// A best header at most this old (in seconds) means we are nearly caught
/// up: sync headers from every peer, no headers timeout (Core's `24h`).
pub const RECENT_BEST_HEADER_SECONDS: i64 = 24 * 60 * 60;
/// Peers tracked at once.
pub const HEADERS_PEERS_MAX: usize = 1024;

/// A header in the engine's block index, as headers sync reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedHeader {
    /// Its hash.
    pub hash: BlockHash,
    /// Its parent's hash (zero for genesis).
    pub previous_block_hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Work of its chain up to and including it.
    pub chain_work: ChainWork,
    /// Its `nBits`.
    pub bits: u32,
    /// Its time.
    pub time: u32,
    /// Its median time past.
    pub median_time_past: i64,
}

/// What headers sync reads from the engine's block index (through the
/// `ChainReader` in the node).
pub trait HeaderIndex {
    /// The header with this hash, if indexed (and not known invalid).
    fn lookup(&self, hash: &BlockHash) -> Option<IndexedHeader>;
    /// Whether `hash` is indexed and an ancestor of (or is) the best header
    /// or on the active chain (Core's `IsAncestorOfBestHeaderOrTip`).
    fn is_ancestor_of_best_header_or_tip(&self, hash: &BlockHash) -> bool;
    /// The most-work valid header (Core's `m_best_header`).
    fn best_header(&self) -> IndexedHeader;
    /// The locator of an indexed header (Core's `LocatorEntries`); see
    /// [`crate::sync::locator::locator_entries`].
    fn locator(&self, hash: &BlockHash) -> Vec<BlockHash>;
    /// The least work a new header chain must show (Core's
    /// `GetAntiDoSWorkThreshold`; see [`anti_dos_work_threshold`]).
    fn anti_dos_work_threshold(&self) -> ChainWork;
    /// The chain's minimum chain work (`-minimumchainwork`).
    fn minimum_chain_work(&self) -> ChainWork;
    /// Whether the engine is in initial block download.
    fn is_initial_block_download(&self) -> bool;
}

/// The sync cannot take another peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeadersError {
    /// [`HEADERS_PEERS_MAX`] peers are tracked already.
    #[error("headers sync tracks {HEADERS_PEERS_MAX} peers already")]
    TooManyPeers,
}

/// One peer's headers state (Core's `fSyncStarted`,
/// `m_last_getheaders_timestamp`, `m_headers_sync_timeout`,
/// `m_headers_sync`, `pindexBestKnownBlock`, `hashLastUnknownBlock`).
#[derive(Debug, Clone, Default)]
struct PeerHeaders {
    sync_started: bool,
    last_getheaders_at: Option<Instant>,
    /// `None`: no timeout (Core's `microseconds::max()`).
    sync_timeout_at: Option<Instant>,
    presync: Option<Box<HeadersSyncState>>,
    best_known: Option<BlockHash>,
    last_unknown: Option<BlockHash>,
    /// An outbound connection we opened on our own (not `-connect` or
    /// `-addnode`): the only kind Core drops for a chain below the minimum
    /// chain work.
    automatic_outbound: bool,
    /// It holds the `noban` permission: its headers skip the anti-DoS
    /// work check, and a headers timeout frees it instead of dropping it.
    no_ban: bool,
}

/// Headers sync over every peer (see the module docs).
#[derive(Debug, Clone)]
pub struct HeadersSync {
    params: Params,
    sync_params: HeadersSyncParams,
    seed: [u8; 32],
    presyncs_started: u64,
    peers: BTreeMap<PeerId, PeerHeaders>,
    sync_started_count: usize,
    notes: Notes,
}

impl HeadersSync {
    /// Headers sync for `params`' chain; `seed` (from a strong random
    /// source) salts every presync's commitments.
    pub fn new(params: &Params, sync_params: HeadersSyncParams, seed: [u8; 32]) -> HeadersSync {
        HeadersSync {
            params: params.clone(),
            sync_params,
            seed,
            presyncs_started: 0,
            peers: BTreeMap::new(),
            sync_started_count: 0,
            notes: Notes::default(),
        }
    }

    /// A peer that can serve headers finished its handshake.
    pub fn peer_connected(&mut self, peer: PeerId) -> Result<(), HeadersError> {
        if !self.peers.contains_key(&peer) && self.peers.len() >= HEADERS_PEERS_MAX {
            return Err(HeadersError::TooManyPeers);
        }
        self.peers.entry(peer).or_default();
        Ok(())
    }

    /// `peer` is an outbound connection the node opened on its own (Core's
    /// `OUTBOUND_FULL_RELAY` or `BLOCK_RELAY`): in initial block download
    /// it is dropped when its chain ends below the minimum chain work.
    /// Inbound and manual (`-connect`, `-addnode`) peers never are, as in
    /// Core.
    pub fn mark_automatic_outbound(&mut self, peer: PeerId) {
        if let Some(state) = self.peers.get_mut(&peer) {
            state.automatic_outbound = true;
        }
    }

    /// Marks `peer` as holding the `noban` permission (`-whitelist`): as
    /// Core's `ProcessHeadersMessage`, its headers are taken without the
    /// low-work presync, and as Core's `SendMessages`, a headers download
    /// timeout ends its sync without disconnecting it.
    pub fn mark_no_ban(&mut self, peer: PeerId) {
        if let Some(state) = self.peers.get_mut(&peer) {
            state.no_ban = true;
        }
    }

    /// What happened since the last call that Core logs, oldest first (at
    /// most [`HEADERS_NOTES_MAX`]).
    pub fn take_notes(&mut self) -> Vec<HeadersNote> {
        self.notes.take()
    }

    /// A peer left.
    pub fn peer_disconnected(&mut self, peer: PeerId) {
        if let Some(state) = self.peers.remove(&peer) {
            if state.sync_started {
                self.sync_started_count = self.sync_started_count.saturating_sub(1);
            }
        }
    }

    /// The last header `peer` sent that we offered or already had (Core's
    /// `pindexBestKnownBlock`, before the engine has looked at it).
    pub fn best_known_block(&self, peer: PeerId) -> Option<BlockHash> {
        self.peers.get(&peer).and_then(|state| state.best_known)
    }

    /// The last header `peer` announced that did not connect (Core's
    /// `hashLastUnknownBlock`).
    pub fn last_unknown_block(&self, peer: PeerId) -> Option<BlockHash> {
        self.peers.get(&peer).and_then(|state| state.last_unknown)
    }

    /// `peer`'s low-work sync, while one runs.
    pub fn presync(&self, peer: PeerId) -> Option<&HeadersSyncState> {
        self.peers.get(&peer).and_then(|state| state.presync.as_deref())
    }

    /// Whether headers sync was started with `peer`.
    pub fn sync_started(&self, peer: PeerId) -> bool {
        self.peers.get(&peer).is_some_and(|state| state.sync_started)
    }

    /// Time passed: starts syncing with peers as Core does and disconnects
    /// a sync peer that timed out. `now_unix_seconds` is the wall clock.
    pub fn poll(
        &mut self,
        now: Instant,
        now_unix_seconds: i64,
        index: &impl HeaderIndex,
    ) -> Vec<Action> {
        let mut actions = Vec::new();
        let best = index.best_header();
        let best_is_recent = i64::from(best.time) > now_unix_seconds - RECENT_BEST_HEADER_SECONDS;
        let peers: Vec<PeerId> = self.peers.keys().copied().collect();
        for peer in peers {
            self.maybe_start_sync(
                peer,
                &best,
                best_is_recent,
                now,
                now_unix_seconds,
                index,
                &mut actions,
            );
            self.check_sync_timeout(peer, best_is_recent, now, &mut actions);
        }
        actions
    }

    #[allow(clippy::too_many_arguments)]
    fn maybe_start_sync(
        &mut self,
        peer: PeerId,
        best: &IndexedHeader,
        best_is_recent: bool,
        now: Instant,
        now_unix_seconds: i64,
        index: &impl HeaderIndex,
        actions: &mut Vec<Action>,
    ) {
        let no_sync_yet = self.sync_started_count == 0;
        let Some(state) = self.peers.get_mut(&peer) else { return };
        if state.sync_started || !(no_sync_yet || best_is_recent) {
            return;
        }
        // Start from the best header's parent, so that an up-to-date peer
        // answers with at least one header.
        let start = if best.height > 0 { best.previous_block_hash } else { best.hash };
        let locator = index.locator(&start);
        if !maybe_send_getheaders(state, peer, locator, now, actions) {
            return;
        }
        state.sync_started = true;
        let behind_seconds = now_unix_seconds.saturating_sub(i64::from(best.time)).max(0) as u64;
        let spacing = u64::try_from(self.params.pow_target_spacing_seconds).unwrap_or(600).max(1);
        let per_header = HEADERS_DOWNLOAD_TIMEOUT_PER_HEADER
            .saturating_mul(u32::try_from(behind_seconds / spacing).unwrap_or(u32::MAX));
        state.sync_timeout_at = Some(now + HEADERS_DOWNLOAD_TIMEOUT_BASE + per_header);
        self.sync_started_count += 1;
    }

    fn check_sync_timeout(
        &mut self,
        peer: PeerId,
        best_is_recent: bool,
        now: Instant,
        actions: &mut Vec<Action>,
    ) {
        let only_sync_peer = self.sync_started_count == 1;
        let others_available = self.peers.len() > 1;
        let Some(state) = self.peers.get_mut(&peer) else { return };
        let Some(timeout_at) = state.sync_timeout_at.filter(|_| state.sync_started) else {
            return;
        };
        if best_is_recent {
            // Caught up once: no timeout from now on.
            state.sync_timeout_at = None;
            return;
        }
        if now > timeout_at && only_sync_peer && others_available && state.no_ban {
            // Another peer may be asked; this one is asked again later.
            state.sync_started = false;
            state.sync_timeout_at = None;
            self.sync_started_count = self.sync_started_count.saturating_sub(1);
            self.notes.push(HeadersNote::NoBanSyncTimeout { peer });
        } else if now > timeout_at && only_sync_peer && others_available {
            actions.push(Action::Disconnect {
                peer,
                reason: DisconnectReason::HeadersDownloadTimeout,
            });
            self.peer_disconnected(peer);
        }
    }

    /// A `headers` message from `peer` (Core's `ProcessHeadersMessage`).
    pub fn on_headers(
        &mut self,
        peer: PeerId,
        headers: Vec<Header>,
        now: Instant,
        now_unix_seconds: i64,
        index: &impl HeaderIndex,
    ) -> Vec<Action> {
        let mut actions = Vec::new();
        let Some(state) = self.peers.get_mut(&peer) else { return actions };
        if headers.is_empty() {
            // The peer has nothing more: a sync in progress ends, and the
            // request counts as answered.
            state.presync = None;
            state.last_getheaders_at = None;
            return actions;
        }
        if headers.len() > HEADERS_PER_MESSAGE_MAX {
            let count = headers.len() as u64;
            actions
                .push(Action::Misbehaving { peer, reason: Misbehavior::TooManyHeaders { count } });
            return actions;
        }
        if let Err(reason) = check_headers(&headers, &self.params) {
            actions.push(Action::Misbehaving { peer, reason });
            return actions;
        }
        let full_message = headers.len() == HEADERS_PER_MESSAGE_MAX;
        let mut headers = headers;
        let mut already_validated_work = false;
        if let Some(released) =
            self.continue_presync(peer, &headers, full_message, now, &mut actions)
        {
            already_validated_work = true;
            headers = released;
            if headers.is_empty() {
                return actions;
            }
        }
        self.process_connecting(
            peer,
            headers,
            full_message,
            already_validated_work,
            now,
            now_unix_seconds,
            index,
            &mut actions,
        );
        actions
    }

    /// Core's `IsContinuationOfLowWorkHeadersSync`: the presync in progress
    /// takes the message. `Some(headers to process further)` when it
    /// succeeded (often none), `None` when there was no sync or it failed
    /// (the message is then processed as if no sync had run).
    fn continue_presync(
        &mut self,
        peer: PeerId,
        headers: &[Header],
        full_message: bool,
        now: Instant,
        actions: &mut Vec<Action>,
    ) -> Option<Vec<Header>> {
        let state = self.peers.get_mut(&peer)?;
        let presync = state.presync.as_mut()?;
        let phase_before = presync.phase();
        let result = presync.process_next_headers(headers, full_message);
        let next_locator = match result.outcome {
            Outcome::RequestMore => presync.next_request_locator(),
            _ => None,
        };
        if phase_before == Phase::Presync && presync.phase() == Phase::Redownload {
            self.notes.push(HeadersNote::RedownloadStarted {
                peer,
                height: presync.presync_height(),
                redownload_from: presync.chain_start_height(),
            });
        }
        match &result.outcome {
            Outcome::RequestMore => {}
            Outcome::Finished(finish) => {
                self.notes.push(HeadersNote::Finished { peer, finish: *finish })
            }
            Outcome::Aborted(abort) => {
                self.notes.push(HeadersNote::Aborted { peer, abort: *abort })
            }
        }
        if presync.phase() == Phase::Final {
            state.presync = None;
        }
        if result.success() {
            state.last_getheaders_at = None;
        }
        if let Some(locator) = next_locator {
            maybe_send_getheaders(state, peer, locator, now, actions);
        }
        result.success().then_some(result.headers_to_offer)
    }

    /// The rest of `ProcessHeadersMessage`, for headers past presync.
    #[allow(clippy::too_many_arguments)]
    fn process_connecting(
        &mut self,
        peer: PeerId,
        headers: Vec<Header>,
        full_message: bool,
        mut already_validated_work: bool,
        now: Instant,
        now_unix_seconds: i64,
        index: &impl HeaderIndex,
        actions: &mut Vec<Action>,
    ) {
        let (Some(first), Some(last)) = (headers.first(), headers.last()) else { return };
        let last_hash = last.block_hash();
        let Some(chain_start) = index.lookup(&first.previous_block_hash) else {
            self.handle_unconnecting(peer, last_hash, now, index, actions);
            return;
        };
        let have_presync = self.peers.get(&peer).is_some_and(|state| state.presync.is_some());
        if let Some(state) = self.peers.get_mut(&peer) {
            state.last_getheaders_at = None;
        }
        // Core skips the anti-DoS check for a `noban` peer's headers too.
        let no_ban = self.peers.get(&peer).is_some_and(|state| state.no_ban);
        if no_ban || index.is_ancestor_of_best_header_or_tip(&last_hash) {
            already_validated_work = true;
        }
        let chain_work = chain_start.chain_work.wrapping_add(claimed_work(&headers));
        if !already_validated_work && chain_work < index.anti_dos_work_threshold() {
            if full_message {
                self.start_presync(
                    peer,
                    &chain_start,
                    &headers,
                    now,
                    now_unix_seconds,
                    index,
                    actions,
                );
            } else {
                // The peer's chain ends here, below the threshold: Core
                // ignores it ("Ignoring low-work chain").
                let height = chain_start
                    .height
                    .saturating_add(u32::try_from(headers.len()).unwrap_or(u32::MAX));
                self.notes.push(HeadersNote::LowWorkChainIgnored { peer, height });
            }
            return;
        }
        let Some(state) = self.peers.get_mut(&peer) else { return };
        actions.push(Action::OfferHeaders { peer, headers });
        if full_message && !have_presync {
            let mut locator = vec![last_hash];
            locator.extend(index.locator(&chain_start.hash));
            locator.truncate(crate::messages::headers::LOCATOR_HASHES_MAX);
            maybe_send_getheaders(state, peer, locator, now, actions);
        }
        state.best_known = Some(last_hash);
        // Core's `UpdatePeerStateForReceivedHeaders`: in IBD, an automatic
        // outbound peer whose chain ends below the minimum chain work cannot
        // help us (inbound and manual peers are kept).
        if state.automatic_outbound
            && index.is_initial_block_download()
            && !full_message
            && chain_work < index.minimum_chain_work()
        {
            actions.push(Action::Disconnect { peer, reason: DisconnectReason::InsufficientWork });
        }
    }

    /// Core's `HandleUnconnectingHeaders`: ask for the headers between our
    /// best header and these, remember the announced block; no penalty.
    fn handle_unconnecting(
        &mut self,
        peer: PeerId,
        last_hash: BlockHash,
        now: Instant,
        index: &impl HeaderIndex,
        actions: &mut Vec<Action>,
    ) {
        let best = index.best_header();
        let Some(state) = self.peers.get_mut(&peer) else { return };
        maybe_send_getheaders(state, peer, index.locator(&best.hash), now, actions);
        state.last_unknown = Some(last_hash);
    }

    /// Core's `TryLowWorkHeadersSync` for a full message: a presync from
    /// the fork point, fed this first message at once.
    #[allow(clippy::too_many_arguments)]
    fn start_presync(
        &mut self,
        peer: PeerId,
        chain_start: &IndexedHeader,
        headers: &[Header],
        now: Instant,
        now_unix_seconds: i64,
        index: &impl HeaderIndex,
        actions: &mut Vec<Action>,
    ) {
        let secret = self.next_secret(peer);
        let start = ChainStart {
            hash: chain_start.hash,
            height: chain_start.height,
            chain_work: chain_start.chain_work,
            bits: chain_start.bits,
            time: chain_start.time,
            median_time_past: chain_start.median_time_past,
            locator: index.locator(&chain_start.hash),
        };
        let presync = HeadersSyncState::new(
            &self.params,
            self.sync_params,
            start,
            index.anti_dos_work_threshold(),
            secret,
            now_unix_seconds,
        );
        self.notes.push(HeadersNote::PresyncStarted {
            peer,
            height: chain_start.height,
            max_commitments: presync.max_commitments(),
            minimum_work: presync.minimum_required_work(),
        });
        let Some(state) = self.peers.get_mut(&peer) else { return };
        state.presync = Some(Box::new(presync));
        // Whatever it says, nothing of this message is stored yet: a
        // presync releases headers only in redownload.
        let _ = self.continue_presync(peer, headers, true, now, actions);
    }

    /// A fresh secret per presync: SHA-256 of the seed, the peer and a
    /// counter.
    fn next_secret(&mut self, peer: PeerId) -> SyncSecret {
        self.presyncs_started += 1;
        let mut input = [0u8; 48];
        input[..32].copy_from_slice(&self.seed);
        input[32..40].copy_from_slice(&peer.0.to_le_bytes());
        input[40..].copy_from_slice(&self.presyncs_started.to_le_bytes());
        SyncSecret(sha256(&input))
    }
}

/// Core's `MaybeSendGetHeaders`: a `getheaders` with `locator` (and no stop
/// hash) unless one went to this peer less than 2 minutes ago and is not
/// answered. Returns whether it was sent.
fn maybe_send_getheaders(
    state: &mut PeerHeaders,
    peer: PeerId,
    locator: Vec<BlockHash>,
    now: Instant,
    actions: &mut Vec<Action>,
) -> bool {
    let recent = state
        .last_getheaders_at
        .is_some_and(|sent| now.saturating_duration_since(sent) <= HEADERS_RESPONSE_TIME);
    if recent || locator.is_empty() {
        return false;
    }
    let request = LocatorRequest {
        locator_version: LOCATOR_VERSION,
        locator_hashes: locator,
        stop_hash: BlockHash::ZERO,
    };
    actions.push(Action::Send { peer, message: NetworkMessage::GetHeaders(request) });
    state.last_getheaders_at = Some(now);
    true
}
