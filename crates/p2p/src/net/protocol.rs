//! One connection's protocol, without I/O: the version handshake, pings,
//! and the inactivity timeouts, as Core's net_processing.cpp
//! (`ProcessMessage` for `version`, `verack`, `wtxidrelay`, `sendaddrv2`,
//! `ping`, `pong`; `PushNodeVersion`; `MaybeSendPing`) and net.cpp
//! (`InactivityCheck`) run them. Messages in, messages to send out
//! ([`PeerProtocol::take_outgoing`]), and what to tell the node
//! ([`Received`]).
//!
//! | phase | accepted | then |
//! |---|---|---|
//! | awaiting `version` | `version` (others ignored, as Core's "non-version message before version handshake") | inbound: our `version`; both: `wtxidrelay`, `sendaddrv2`, `verack` |
//! | awaiting `verack` | `verack`, `wtxidrelay`, `sendaddrv2` (others ignored: "Unsupported message prior to verack") | a first ping; the node hears `PeerConnected` |
//! | connected | everything; `ping`/`pong` handled here; `wtxidrelay`/`sendaddrv2` disconnect; duplicates of `version`/`verack` ignored | the rest goes to the node |
//!
//! No `sendcmpct` is sent: it would announce that we serve BIP152 compact
//! blocks, and Ibex, with no mempool, builds none (Core answers a
//! `MSG_CMPCT_BLOCK` request it will not build with the full block, which
//! is what the node sends; a peer told nothing asks for full blocks).
//!
//! `sendheaders` is not sent here: Core sends it only once the peer's best
//! header has the minimum chain work (`MaybeSendSendHeaders`), a sync
//! decision the node takes.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::command::Command;
use crate::messages::address::ServiceAddress;
use crate::messages::error::{CoreResponse, MessageError};
use crate::messages::feature::{FeatureMessage, FEATURE_NEGOTIATION_VERSION};
use crate::messages::spent_coins::{BLOCK_SPENT_COINS_FEATURE_DATA, BLOCK_SPENT_COINS_FEATURE_ID};
use crate::messages::version::{UserAgent, VersionMessage, PEER_PROTOCOL_VERSION_MIN};
use crate::messages::NetworkMessage;
use crate::net::address::receiver_address;
use crate::net::reason::DisconnectReason;
use crate::net::stats::PeerVersion;
use crate::services::ServiceFlags;
use crate::transport::TransportKind;

/// Core's `BIP0031_VERSION`: peers above it get `pong` for `ping`.
pub const BIP0031_VERSION: i32 = 60_000;
/// Core's `WTXID_RELAY_VERSION`: peers at or above it get `wtxidrelay` and
/// `sendaddrv2`.
pub const WTXID_RELAY_VERSION: i32 = 70_016;
/// Timers fire this long after their deadline: Core's checks are strict
/// (`now > last + timeout`), so a wake-up exactly at the deadline would do
/// nothing and wake again.
const TIMER_SLACK: Duration = Duration::from_millis(1);

/// What we announce, fixed for the connection (but the services, read
/// when our `version` goes out: see [`Context::local_services`]), and the
/// secret our pings are numbered from.
#[derive(Debug, Clone)]
pub(crate) struct OurVersion {
    pub user_agent: UserAgent,
    /// The nonce in our `version` (the self-connection check's key).
    pub nonce: u64,
    /// The seed of our ping nonces: random, never sent.
    pub ping_nonce_seed: u64,
    /// The protocol version we announce.
    pub protocol_version: i32,
    /// BIP 434 features we announce to peers at 70017 or above.
    pub features: Vec<FeatureMessage>,
}

/// The timeouts and the service rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProtocolSettings {
    pub peer_connect_timeout: Duration,
    pub inactivity_timeout: Duration,
    pub ping_interval: Duration,
    pub outbound_services_required: ServiceFlags,
}

/// What the moment brings: the time, our height and services, and the
/// self-connection check (whether a nonce is one of our outbound
/// connections' still in their handshake, Core's `CheckIncomingNonce`).
pub(crate) struct Context<'a> {
    pub now: Instant,
    pub now_unix_seconds: i64,
    pub start_height: i32,
    /// The services announced now: they change while the node runs (Core's
    /// `RemoveLocalServices(NODE_NETWORK)` while an AssumeUTXO snapshot is
    /// not validated), and a `version` carries those of its moment.
    pub local_services: ServiceFlags,
    pub is_own_nonce: &'a dyn Fn(u64) -> bool,
}

/// What a received message means for the node.
#[derive(Debug)]
pub(crate) enum Received {
    /// Nothing (handled here, or ignored as Core ignores it).
    Nothing,
    /// The peer's `version` arrived.
    Version(PeerVersion),
    /// The handshake is complete.
    Connected(PeerVersion),
    /// A message for the node.
    Forward(NetworkMessage),
}

/// A change to the ping figures `getpeerinfo` shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum PingChange {
    Sent(Instant),
    /// Answered (round trip) or cancelled (`None`).
    Finished(Option<Duration>),
}

#[derive(Debug)]
enum Phase {
    AwaitingVersion,
    AwaitingVerack(PeerVersion),
    Connected(PeerVersion),
}

/// One connection's protocol state.
#[derive(Debug)]
pub(crate) struct PeerProtocol {
    inbound: bool,
    /// Whether a message Core punishes for closes the connection: not for
    /// manual connections (by default every outbound one).
    punishable: bool,
    address: SocketAddr,
    our: OurVersion,
    /// The services our `version` announced (none before it went out):
    /// what the peer may ask of us (Core's `Peer::m_our_services`).
    announced_services: ServiceFlags,
    settings: ProtocolSettings,
    phase: Phase,
    connected_at: Instant,
    last_send: Option<Instant>,
    last_receive: Option<Instant>,
    /// The pong we wait for; 0 when none (Core's `m_ping_nonce_sent`).
    ping_nonce_sent: u64,
    /// When the last ping went out (Core's `m_ping_start`).
    ping_started: Option<Instant>,
    nonces: NonceSource,
    outgoing: Vec<NetworkMessage>,
    ping_changes: Vec<PingChange>,
}

impl PeerProtocol {
    /// A new connection; an outbound one sends its `version` at once.
    pub fn new(
        inbound: bool,
        address: SocketAddr,
        our: OurVersion,
        settings: ProtocolSettings,
        context: &Context<'_>,
    ) -> PeerProtocol {
        let nonces = NonceSource::new(our.ping_nonce_seed);
        let mut protocol = PeerProtocol {
            inbound,
            punishable: inbound,
            address,
            our,
            announced_services: ServiceFlags::NONE,
            settings,
            phase: Phase::AwaitingVersion,
            connected_at: context.now,
            last_send: None,
            last_receive: None,
            ping_nonce_sent: 0,
            ping_started: None,
            nonces,
            outgoing: Vec::new(),
            ping_changes: Vec::new(),
        };
        if !inbound {
            protocol.push_our_version(context);
        }
        protocol
    }

    /// Whether misbehaviour closes the connection (Core spares manual
    /// connections only).
    pub fn set_punishable(&mut self, punishable: bool) {
        self.punishable = punishable;
    }

    /// The messages to send, in order.
    pub fn take_outgoing(&mut self) -> std::vec::Drain<'_, NetworkMessage> {
        self.outgoing.drain(..)
    }

    /// Changes to the ping figures since the last call.
    pub fn take_ping_changes(&mut self) -> std::vec::Drain<'_, PingChange> {
        self.ping_changes.drain(..)
    }

    /// The services our `version` announced; none before it went out.
    pub fn announced_services(&self) -> ServiceFlags {
        self.announced_services
    }

    /// Whether `version` and `verack` were both exchanged.
    pub fn is_connected(&self) -> bool {
        matches!(self.phase, Phase::Connected(_))
    }

    /// Bytes went out at `now`.
    pub fn note_sent(&mut self, now: Instant) {
        self.last_send = Some(now);
    }

    /// Bytes came in at `now`.
    pub fn note_received(&mut self, now: Instant) {
        self.last_receive = Some(now);
    }

    /// A decoded message from the peer.
    pub fn on_message(
        &mut self,
        message: NetworkMessage,
        context: &Context<'_>,
    ) -> Result<Received, DisconnectReason> {
        match (&self.phase, message) {
            (Phase::AwaitingVersion, NetworkMessage::Version(version)) => {
                self.on_version(version, context)
            }
            // "redundant version message", "ignoring redundant verack".
            (_, NetworkMessage::Version(_)) | (Phase::Connected(_), NetworkMessage::Verack) => {
                Ok(Received::Nothing)
            }
            // "non-version message before version handshake".
            (Phase::AwaitingVersion, _) => Ok(Received::Nothing),
            (Phase::AwaitingVerack(_), message) => Ok(self.before_verack(message, context.now)),
            (Phase::Connected(_), message) => self.after_verack(message, context.now),
        }
    }

    /// A message that failed to decode: dropped, unless Core disconnects
    /// for it. Before `verack` Core never decodes messages other than
    /// `version` (it returns before), so only `version` counts there.
    pub fn on_undecodable(
        &mut self,
        command: Command,
        payload: &[u8],
        error: MessageError,
    ) -> Result<Received, DisconnectReason> {
        match self.phase {
            Phase::AwaitingVersion if command == Command::VERSION => {
                // Core checks services and the version on the four
                // required fields before it reads (and fails on) the rest.
                if let Ok(required) = VersionMessage::decode_required(payload) {
                    self.check_version_rules(&required)?;
                }
                Ok(Received::Nothing)
            }
            Phase::Connected(_) => match error.core_response() {
                CoreResponse::IgnoreMessage => Ok(Received::Nothing),
                CoreResponse::Disconnect => Err(DisconnectReason::MessageRejected(error)),
                // Core's `MaybeDiscourageAndDisconnect` spares manual
                // connections ("not punishing manually connected peer")
                // and `noban` peers ("not punishing noban peer").
                CoreResponse::Misbehaving if !self.punishable => Ok(Received::Nothing),
                CoreResponse::Misbehaving => Err(DisconnectReason::MessageRejected(error)),
            },
            _ => Ok(Received::Nothing),
        }
    }

    /// Checks the timeouts and sends a ping when one is due.
    pub fn on_timer(
        &mut self,
        now: Instant,
        transport: TransportKind,
    ) -> Result<(), DisconnectReason> {
        self.check_inactivity(now, transport)?;
        self.maybe_send_ping(now);
        Ok(())
    }

    /// When [`on_timer`](Self::on_timer) has something to do next.
    pub fn next_deadline(&self) -> Instant {
        let checks_start = self.connected_at + self.settings.peer_connect_timeout;
        let mut deadline = checks_start;
        if let (Some(sent), Some(received)) = (self.last_send, self.last_receive) {
            let inactivity = self.settings.inactivity_timeout;
            let idle_deadline = (sent.min(received) + inactivity).max(checks_start);
            if self.is_connected() {
                deadline = idle_deadline;
            }
            if let (true, Some(started)) = (self.ping_nonce_sent != 0, self.ping_started) {
                deadline = deadline.min((started + inactivity).max(checks_start));
            }
        }
        if let (true, 0, Some(started)) =
            (self.is_connected(), self.ping_nonce_sent, self.ping_started)
        {
            deadline = deadline.min(started + self.settings.ping_interval);
        }
        deadline + TIMER_SLACK
    }

    fn on_version(
        &mut self,
        version: VersionMessage,
        context: &Context<'_>,
    ) -> Result<Received, DisconnectReason> {
        self.check_version_rules(&version)?;
        if self.inbound && (context.is_own_nonce)(version.nonce) {
            return Err(DisconnectReason::SelfConnection { address: self.address });
        }
        if self.inbound {
            self.push_our_version(context);
        }
        let peer = PeerVersion {
            protocol_version: version.protocol_version,
            services: version.services,
            user_agent: version.user_agent.clone(),
            start_height: version.start_height,
            relay: version.relays_transactions(),
            timestamp_seconds: version.timestamp_seconds.max(0),
            time_offset_seconds: version
                .timestamp_seconds
                .max(0)
                .saturating_sub(context.now_unix_seconds),
            address_local: version.receiver,
            wtxid_relay: false,
            wants_address_v2: false,
            serves_spent_coins: false,
        };
        let common_version = peer.common_version();
        if common_version >= WTXID_RELAY_VERSION {
            self.outgoing.push(NetworkMessage::WtxidRelay);
            // Core sends `sendaddrv2` from 70016 on, as a courtesy to older
            // implementations that reject unknown messages.
            self.outgoing.push(NetworkMessage::SendAddressV2);
        }
        // BIP 434: features go out between `version` and `verack`, and only
        // to a peer that announced 70017 (as we then do).
        if self.our.protocol_version >= FEATURE_NEGOTIATION_VERSION
            && peer.protocol_version >= FEATURE_NEGOTIATION_VERSION
        {
            let features = self.our.features.iter().cloned().map(NetworkMessage::Feature);
            self.outgoing.extend(features);
        }
        self.outgoing.push(NetworkMessage::Verack);
        self.phase = Phase::AwaitingVerack(peer.clone());
        Ok(Received::Version(peer))
    }

    /// Core's checks on a `version`'s required fields, in its order.
    fn check_version_rules(&self, version: &VersionMessage) -> Result<(), DisconnectReason> {
        let expected = self.settings.outbound_services_required;
        if !self.inbound && !version.services.contains(expected) {
            return Err(DisconnectReason::MissingServices { offered: version.services, expected });
        }
        if version.protocol_version < PEER_PROTOCOL_VERSION_MIN {
            return Err(DisconnectReason::ObsoleteVersion {
                protocol_version: version.protocol_version,
            });
        }
        Ok(())
    }

    fn before_verack(&mut self, message: NetworkMessage, now: Instant) -> Received {
        let Phase::AwaitingVerack(peer) = &mut self.phase else {
            return Received::Nothing;
        };
        match message {
            NetworkMessage::WtxidRelay if peer.common_version() >= WTXID_RELAY_VERSION => {
                peer.wtxid_relay = true
            }
            NetworkMessage::SendAddressV2 => peer.wants_address_v2 = true,
            // BIP 434: unknown features are ignored.
            NetworkMessage::Feature(feature)
                if feature.is(BLOCK_SPENT_COINS_FEATURE_ID, BLOCK_SPENT_COINS_FEATURE_DATA) =>
            {
                peer.serves_spent_coins = true
            }
            NetworkMessage::Verack => {
                let peer = peer.clone();
                self.phase = Phase::Connected(peer.clone());
                self.maybe_send_ping(now);
                return Received::Connected(peer);
            }
            _ => {}
        }
        Received::Nothing
    }

    fn after_verack(
        &mut self,
        message: NetworkMessage,
        now: Instant,
    ) -> Result<Received, DisconnectReason> {
        let Phase::Connected(peer) = &self.phase else {
            return Ok(Received::Nothing);
        };
        match message {
            NetworkMessage::WtxidRelay | NetworkMessage::SendAddressV2 => {
                Err(DisconnectReason::FeatureAfterVerack { command: message.command() })
            }
            NetworkMessage::Ping { nonce } => {
                if peer.common_version() > BIP0031_VERSION {
                    self.outgoing.push(NetworkMessage::Pong { nonce: Some(nonce) });
                }
                Ok(Received::Nothing)
            }
            NetworkMessage::Pong { nonce } => {
                self.on_pong(nonce, now);
                Ok(Received::Nothing)
            }
            // Core ignores unknown commands ("Unknown command"); BIP 434
            // lets a `feature` after `verack` be ignored.
            NetworkMessage::Unknown { .. } | NetworkMessage::Feature(_) => Ok(Received::Nothing),
            message => Ok(Received::Forward(message)),
        }
    }

    /// Core's `PONG` handler: a matching nonce finishes the ping; a zero
    /// nonce or a short payload cancels it; other nonces are ignored.
    fn on_pong(&mut self, nonce: Option<u64>, now: Instant) {
        let finished = match nonce {
            None => Some(None),
            Some(_) if self.ping_nonce_sent == 0 => None,
            Some(nonce) if nonce == self.ping_nonce_sent => {
                Some(self.ping_started.map(|started| now.saturating_duration_since(started)))
            }
            Some(0) => Some(None),
            Some(_) => None,
        };
        if let Some(round_trip) = finished {
            self.ping_nonce_sent = 0;
            self.ping_changes.push(PingChange::Finished(round_trip));
        }
    }

    /// Core's `MaybeSendPing`: a ping when none is outstanding and the last
    /// went out `ping_interval` ago (the first right after `verack`).
    fn maybe_send_ping(&mut self, now: Instant) {
        let due =
            self.ping_started.is_none_or(|started| now > started + self.settings.ping_interval);
        if !self.is_connected() || self.ping_nonce_sent != 0 || !due {
            return;
        }
        let nonce = self.nonces.next_nonzero();
        self.ping_nonce_sent = nonce;
        self.ping_started = Some(now);
        self.outgoing.push(NetworkMessage::Ping { nonce });
        self.ping_changes.push(PingChange::Sent(now));
    }

    /// Core's `InactivityCheck`, then its ping timeout.
    fn check_inactivity(
        &self,
        now: Instant,
        transport: TransportKind,
    ) -> Result<(), DisconnectReason> {
        if now < self.connected_at + self.settings.peer_connect_timeout {
            return Ok(());
        }
        let (Some(last_send), Some(last_receive)) = (self.last_send, self.last_receive) else {
            return Err(DisconnectReason::NoMessageInFirst {
                timeout: self.settings.peer_connect_timeout,
                never_received: self.last_receive.is_none(),
                never_sent: self.last_send.is_none(),
            });
        };
        let inactivity = self.settings.inactivity_timeout;
        if now > last_send + inactivity {
            return Err(DisconnectReason::SendTimeout { idle: now - last_send });
        }
        if now > last_receive + inactivity {
            return Err(DisconnectReason::ReceiveTimeout { idle: now - last_receive });
        }
        if !self.is_connected() {
            return Err(match transport {
                TransportKind::Detecting => DisconnectReason::V2HandshakeTimeout,
                _ => DisconnectReason::VersionHandshakeTimeout,
            });
        }
        if let (true, Some(started)) = (self.ping_nonce_sent != 0, self.ping_started) {
            if now > started + inactivity {
                return Err(DisconnectReason::PingTimeout { waited: now - started });
            }
        }
        Ok(())
    }

    /// Core's `PushNodeVersion`.
    fn push_our_version(&mut self, context: &Context<'_>) {
        let services = context.local_services;
        self.announced_services = services;
        let version = VersionMessage {
            protocol_version: self.our.protocol_version,
            services,
            timestamp_seconds: context.now_unix_seconds,
            receiver: receiver_address(self.address),
            sender: ServiceAddress { services, ..ServiceAddress::default() },
            nonce: self.our.nonce,
            user_agent: self.our.user_agent.clone(),
            start_height: context.start_height,
            // Ibex relays no transactions (as Core's `-blocksonly`).
            relay: Some(false),
        };
        self.outgoing.push(NetworkMessage::Version(version));
    }
}

/// Ping nonces: SplitMix64 seeded from a secret drawn from the system's
/// CSPRNG for the connection (Core draws them from `FastRandomContext`):
/// they must differ, and a peer must not predict them from anything it
/// sees.
#[derive(Debug)]
struct NonceSource(u64);

impl NonceSource {
    fn new(seed: u64) -> NonceSource {
        NonceSource(seed)
    }

    fn next_nonzero(&mut self) -> u64 {
        loop {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut mixed = self.0;
            mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            mixed ^= mixed >> 31;
            if mixed != 0 {
                return mixed;
            }
        }
    }
}

#[cfg(test)]
mod tests;
