//! One task per connection: the socket, the [`Transport`], the protocol
//! state (handshake, pings, timeouts), the outbound queue and the delivery
//! of events to the node, driven by one `select!` loop.
//!
//! Each turn of the loop does what is ready: write pending bytes, read up
//! to 64 KiB, deliver one event, fire a timer, or take a close request.
//! Bytes read are pushed into the transport a message at a time; a
//! message for the node waits (and reading with it) until its peer's
//! receive budget and the event queue have room. Reading also stops while
//! the send side holds `send_queue_bytes_max` or more (Core pauses a peer
//! whose send buffer is full), so a peer that sends without reading gets
//! no more of our memory than its queue's bound.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{watch, Semaphore};

use crate::command::Command;
use crate::framing::{Frame, FRAME_HEADER_BYTES};
use crate::messages::NetworkMessage;
use crate::net::address_relay::AddressRelay;
use crate::net::config::RECEIVE_QUEUE_EVENTS_PER_PEER_MAX;
use crate::net::event::NetworkEvent;
use crate::net::permissions::PeerPermissions;
use crate::net::protocol::{
    Context, OurVersion, PeerProtocol, PingChange, ProtocolSettings, Received,
};
use crate::net::reason::DisconnectReason;
use crate::net::registry::Registry;
use crate::net::shared::PeerShared;
use crate::transport::{Transport, TransportKind, PACKET_OVERHEAD_BYTES};

/// Bytes read from the socket at once (Core's `recv` buffer, 0x10000).
pub const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Encoded bytes kept ready for the socket before more queued messages
/// are encoded (one large message may go past it).
pub const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// The output buffer's memory kept when it drains with nothing queued (a
/// sent block's 4 MB is returned).
const OUTPUT_KEPT_BYTES: usize = 4 * WRITE_BATCH_BYTES;
/// Dropped messages reported to the node per connection; later ones are
/// dropped without a word, so a peer sending nothing else cannot fill the
/// event queue with log lines.
pub const DROPPED_MESSAGES_REPORTED_MAX: u32 = 16;
/// The soonest a timer fires again after the loop turned.
const TIMER_RETRY: Duration = Duration::from_millis(1);

/// How a connection ended.
#[derive(Debug)]
pub(crate) struct PeerOutcome {
    /// The node heard `PeerConnected` for it.
    pub handshake_complete: bool,
    /// Reconnect at once with v1 (see [`Transport::should_reconnect_with_v1`]).
    pub retry_with_v1: bool,
}

type Delivery = Pin<Box<dyn Future<Output = bool> + Send>>;

/// A connection's task state.
pub(crate) struct Connection {
    registry: Arc<Registry>,
    shared: Arc<PeerShared>,
    transport: Transport,
    protocol: PeerProtocol,
    receive_budget: Arc<Semaphore>,
    shutdown: watch::Receiver<bool>,
    read_buffer: Box<[u8]>,
    input_start: usize,
    input_end: usize,
    output: Vec<u8>,
    output_written: usize,
    bytes_sent: u64,
    transport_kind: TransportKind,
    delivery: Option<Delivery>,
    delivering_connected: bool,
    connected_delivered: bool,
    /// The address exchange, when the layer has an address manager.
    address_relay: Option<AddressRelay>,
    dropped_reported: u32,
}

impl Connection {
    /// A connection over `transport`; an outbound one queues its `version`.
    pub fn new(
        registry: Arc<Registry>,
        shared: Arc<PeerShared>,
        transport: Transport,
    ) -> Connection {
        let config = &registry.config;
        let our = OurVersion {
            user_agent: config.user_agent.clone(),
            nonce: shared.identity.nonce,
            ping_nonce_seed: shared.identity.ping_nonce_seed,
            protocol_version: config.protocol_version(),
            features: config.features.clone(),
        };
        let connection = shared.identity.connection;
        let settings = ProtocolSettings {
            peer_connect_timeout: config.peer_connect_timeout,
            inactivity_timeout: config.inactivity_timeout,
            ping_interval: config.ping_interval,
            outbound_services_required: config.outbound_services_required
                | connection.services_required(),
        };
        let is_own_nonce = |nonce| registry.is_own_pending_nonce(nonce);
        let context = context(&registry, shared.identity.connected_instant, &is_own_nonce);
        let mut protocol = PeerProtocol::new(
            shared.identity.inbound,
            shared.identity.address,
            our,
            settings,
            &context,
        );
        // Core's `MaybeDiscourageAndDisconnect` spares `noban` peers as it
        // spares manual connections.
        let no_ban = shared.identity.permissions.contains(PeerPermissions::NO_BAN);
        protocol.set_punishable(connection.is_punishable() && !no_ban);
        let address_relay = config.addresses.as_ref().map(|addresses| {
            let identity = &shared.identity;
            let mut relay = AddressRelay::new(
                addresses,
                connection,
                identity.address,
                identity.nonce,
                Instant::now(),
            );
            relay.set_address_permission(identity.permissions.contains(PeerPermissions::ADDR));
            relay
        });
        let receive_budget = Arc::new(Semaphore::new(config.receive_queue_bytes_max));
        let shutdown = registry.shutdown_signal();
        let transport_kind = transport.kind();
        shared.set_transport(transport_kind);
        Connection {
            registry,
            shared,
            transport,
            protocol,
            receive_budget,
            shutdown,
            read_buffer: vec![0; READ_CHUNK_BYTES].into_boxed_slice(),
            input_start: 0,
            input_end: 0,
            output: Vec::new(),
            output_written: 0,
            bytes_sent: 0,
            transport_kind,
            delivery: None,
            delivering_connected: false,
            connected_delivered: false,
            address_relay,
            dropped_reported: 0,
        }
    }

    /// Runs the connection to its end, then tells the node and the
    /// registry.
    pub async fn run(mut self, stream: TcpStream) -> PeerOutcome {
        let (mut reader, mut writer) = stream.into_split();
        let reason = match self.drive(&mut reader, &mut writer).await {
            Err(reason) => reason,
            Ok(never) => match never {},
        };
        drop((reader, writer));
        self.finish(reason).await
    }

    async fn drive(
        &mut self,
        reader: &mut OwnedReadHalf,
        writer: &mut OwnedWriteHalf,
    ) -> Result<Infallible, DisconnectReason> {
        self.transport.take_output(&mut self.output);
        self.flush_protocol()?;
        let sleep = tokio::time::sleep_until(self.protocol.next_deadline().into());
        tokio::pin!(sleep);
        loop {
            if *self.shutdown.borrow() {
                return Err(DisconnectReason::Shutdown);
            }
            self.step()?;
            // Never a deadline already past: a timer that found nothing to
            // do must not fire again at once, round after round.
            let deadline = self.protocol.next_deadline().max(Instant::now() + TIMER_RETRY);
            if sleep.deadline().into_std() != deadline {
                sleep.as_mut().reset(deadline.into());
            }
            let writing = self.output_written < self.output.len();
            let reading = self.delivery.is_none()
                && self.input_start == self.input_end
                && !self.shared.send_queue_full();
            // Unbiased: the branches ready at once are taken in random
            // order, so neither reading nor writing starves the other.
            tokio::select! {
                _ = self.shutdown.changed() => return Err(DisconnectReason::Shutdown),
                () = self.shared.close_wake.notified() => {
                    if let Some(reason) = self.shared.close_request() {
                        return Err(reason);
                    }
                }
                delivered = poll_delivery(&mut self.delivery) => {
                    self.on_delivered(delivered)?;
                }
                written = writer.write(&self.output[self.output_written..]), if writing => {
                    self.on_written(written)?;
                }
                () = self.shared.queue_wake.notified(), if !writing => {}
                read = reader.read(&mut self.read_buffer), if reading => self.on_read(read)?,
                () = &mut sleep => self.on_timer()?,
            }
        }
    }

    /// Handles buffered input up to the next event for the node, then
    /// refills the output from the queue.
    fn step(&mut self) -> Result<(), DisconnectReason> {
        if self.delivery.is_none() {
            if let Some((event, budget_bytes)) = self.process_input()? {
                self.start_delivery(event, budget_bytes);
            }
        }
        self.fill_output()
    }

    /// Pushes buffered bytes into the transport and handles the messages
    /// that come out, until one is for the node, the input is used up, or
    /// the send side is full.
    fn process_input(&mut self) -> Result<Option<(NetworkEvent, usize)>, DisconnectReason> {
        let mut pushed_nothing = false;
        loop {
            match self.transport.next_message() {
                Ok(Some(frame)) => {
                    pushed_nothing = false;
                    if let Some(event) = self.on_frame(frame)? {
                        return Ok(Some(event));
                    }
                    continue;
                }
                Err(error) if error.disconnects() => {
                    return Err(DisconnectReason::Transport(error))
                }
                // A bad checksum or message type: Core drops that message
                // (logging it) and reads on.
                Err(error) => {
                    self.report_dropped(error);
                    continue;
                }
                Ok(None) if pushed_nothing => return Err(DisconnectReason::TransportStalled),
                Ok(None) => {}
            }
            if self.input_start == self.input_end || self.shared.send_queue_full() {
                return Ok(None);
            }
            let taken = self.transport.push(&self.read_buffer[self.input_start..self.input_end]);
            self.input_start += taken;
            pushed_nothing = taken == 0;
            self.transport.take_output(&mut self.output);
            self.note_transport_kind();
            self.publish_unsent();
        }
    }

    /// Tells the node of a message dropped for a bad checksum or type, up
    /// to [`DROPPED_MESSAGES_REPORTED_MAX`] per connection.
    fn report_dropped(&mut self, error: crate::transport::TransportError) {
        if self.dropped_reported >= DROPPED_MESSAGES_REPORTED_MAX {
            return;
        }
        self.dropped_reported += 1;
        let id = self.shared.identity.id;
        self.registry.events.send_or_drop(NetworkEvent::MessageDropped { id, error });
    }

    /// A complete message: decoded and handed to the protocol.
    fn on_frame(
        &mut self,
        frame: Frame,
    ) -> Result<Option<(NetworkEvent, usize)>, DisconnectReason> {
        let command = frame.command;
        let payload_bytes = frame.payload.len();
        let registry = &self.registry;
        let is_own_nonce = |nonce| registry.is_own_pending_nonce(nonce);
        let context = context(registry, Instant::now(), &is_own_nonce);
        let received = if command == Command::BLOCK {
            // Moved, not copied: the node gets the bytes as received.
            match NetworkMessage::from_frame(frame) {
                Ok(message) => self.protocol.on_message(message, &context),
                Err(error) => self.protocol.on_undecodable(command, &[], error),
            }
        } else {
            match NetworkMessage::decode(command, &frame.payload) {
                Ok(message) => self.protocol.on_message(message, &context),
                Err(error) => self.protocol.on_undecodable(command, &frame.payload, error),
            }
        }?;
        self.flush_protocol()?;
        let received = self.exchange_addresses(received)?;
        let id = self.shared.identity.id;
        Ok(match received {
            Received::Nothing => None,
            Received::Version(version) => {
                self.shared.set_version(version);
                None
            }
            Received::Connected(version) => {
                self.shared
                    .set_handshake_complete(self.transport.kind(), self.transport.session_id());
                let identity = self.shared.identity;
                let event = NetworkEvent::PeerConnected {
                    id,
                    address: identity.address,
                    inbound: identity.inbound,
                    connection: identity.connection,
                    version,
                    transport: self.transport.kind(),
                    our_services: self.protocol.announced_services(),
                };
                Some((event, 0))
            }
            Received::Forward(message) => Some((
                NetworkEvent::Message { id, message, payload_bytes },
                payload_bytes + FRAME_HEADER_BYTES,
            )),
        })
    }

    /// Lets the address exchange take what concerns it, and sends what it
    /// answers.
    fn exchange_addresses(&mut self, received: Received) -> Result<Received, DisconnectReason> {
        let Some(relay) = self.address_relay.as_mut() else { return Ok(received) };
        let received = relay.filter(received, &self.registry, Instant::now())?;
        for message in relay.take_outgoing() {
            self.transport
                .encode(&message, &mut self.output)
                .map_err(DisconnectReason::Transport)?;
        }
        self.publish_unsent();
        Ok(received)
    }

    /// Encodes what the protocol wants sent and records ping changes.
    fn flush_protocol(&mut self) -> Result<(), DisconnectReason> {
        for message in self.protocol.take_outgoing() {
            self.transport
                .encode(&message, &mut self.output)
                .map_err(DisconnectReason::Transport)?;
        }
        for change in self.protocol.take_ping_changes() {
            match change {
                PingChange::Sent(at) => self.shared.ping_sent(at),
                PingChange::Finished(round_trip) => self.shared.ping_finished(round_trip),
            }
        }
        self.publish_unsent();
        Ok(())
    }

    /// Encodes queued messages while less than a batch waits for the socket.
    fn fill_output(&mut self) -> Result<(), DisconnectReason> {
        while self.output.len() - self.output_written < WRITE_BATCH_BYTES {
            let Some(message) = self.shared.pop_message() else {
                break;
            };
            if let NetworkMessage::Block(bytes) = &message {
                // One allocation for the frame instead of doublings.
                self.output.reserve(bytes.len() + PACKET_OVERHEAD_BYTES + FRAME_HEADER_BYTES);
            }
            self.transport
                .encode(&message, &mut self.output)
                .map_err(DisconnectReason::Transport)?;
        }
        self.publish_unsent();
        Ok(())
    }

    /// Drops written bytes from the output buffer: all of them once it is
    /// drained (and its memory, after a large message, when nothing else
    /// waits), or the written half once it is half written, so the buffer
    /// never grows past twice its unsent bytes and each byte moves at most
    /// once on average.
    fn compact_output(&mut self) {
        if self.output_written == self.output.len() {
            self.output.clear();
            self.output_written = 0;
            if self.output.capacity() > OUTPUT_KEPT_BYTES && self.shared.send_queue_bytes() == 0 {
                self.output.shrink_to(WRITE_BATCH_BYTES);
            }
        } else if self.output_written >= WRITE_BATCH_BYTES
            && self.output_written >= self.output.len() / 2
        {
            self.output.drain(..self.output_written);
            self.output_written = 0;
        }
    }

    fn publish_unsent(&self) {
        let unsent_bytes = self.output.len() - self.output_written;
        self.shared.set_unsent_bytes(unsent_bytes, &self.registry.send_ready);
    }

    fn note_transport_kind(&mut self) {
        let kind = self.transport.kind();
        if kind != self.transport_kind {
            self.transport_kind = kind;
            self.shared.set_transport(kind);
        }
    }

    fn start_delivery(&mut self, event: NetworkEvent, budget_bytes: usize) {
        self.delivering_connected = matches!(event, NetworkEvent::PeerConnected { .. });
        let events = self.registry.events.clone();
        let budget = Arc::clone(&self.receive_budget);
        let charge_bytes = match budget_bytes {
            0 => 0,
            bytes => bytes.max(
                self.registry.config.receive_queue_bytes_max / RECEIVE_QUEUE_EVENTS_PER_PEER_MAX,
            ),
        };
        // At most a payload and its header, or a 256th of the budget:
        // within u32 and within the budget (`RECEIVE_QUEUE_BYTES_MIN`).
        assert!(charge_bytes <= self.registry.config.receive_queue_bytes_max);
        let permits = u32::try_from(charge_bytes).unwrap_or(u32::MAX);
        self.delivery = Some(Box::pin(async move {
            let permit = match permits {
                0 => None,
                _ => match budget.acquire_many_owned(permits).await {
                    Ok(permit) => Some(permit),
                    Err(_closed) => return false,
                },
            };
            events.send(event, permit).await
        }));
    }

    fn on_delivered(&mut self, delivered: bool) -> Result<(), DisconnectReason> {
        self.delivery = None;
        if !delivered {
            // The node's end of the queue is gone.
            return Err(DisconnectReason::Shutdown);
        }
        if self.delivering_connected {
            self.delivering_connected = false;
            self.connected_delivered = true;
        }
        Ok(())
    }

    fn on_written(&mut self, written: io::Result<usize>) -> Result<(), DisconnectReason> {
        let bytes = match written {
            Ok(0) => return Err(DisconnectReason::SendError { kind: io::ErrorKind::WriteZero }),
            Ok(bytes) => bytes,
            Err(error) => return Err(DisconnectReason::SendError { kind: error.kind() }),
        };
        self.output_written += bytes;
        self.compact_output();
        self.bytes_sent += bytes as u64;
        self.shared.record_sent(bytes, SystemTime::now());
        self.registry.record_sent(bytes);
        self.protocol.note_sent(Instant::now());
        self.publish_unsent();
        Ok(())
    }

    fn on_read(&mut self, read: io::Result<usize>) -> Result<(), DisconnectReason> {
        let bytes = match read {
            Ok(0) => return Err(DisconnectReason::PeerClosed),
            Ok(bytes) => bytes,
            Err(error) => return Err(DisconnectReason::ReceiveError { kind: error.kind() }),
        };
        self.input_start = 0;
        self.input_end = bytes;
        self.shared.record_received(bytes, SystemTime::now());
        self.registry.record_received(bytes);
        self.protocol.note_received(Instant::now());
        Ok(())
    }

    fn on_timer(&mut self) -> Result<(), DisconnectReason> {
        self.protocol.on_timer(Instant::now(), self.transport.kind())?;
        self.flush_protocol()
    }

    /// Closes the books: the registry forgets the connection, the node
    /// hears of it, and the caller learns whether to retry with v1.
    async fn finish(mut self, reason: DisconnectReason) -> PeerOutcome {
        self.delivery = None;
        self.shared.mark_closed();
        let identity = self.shared.identity;
        let retry_with_v1 = !identity.inbound
            && !reason.is_local_decision()
            && self.transport.should_reconnect_with_v1(self.bytes_sent);
        self.registry.unregister(identity.id, &reason);
        let events = &self.registry.events;
        if self.connected_delivered {
            let event = NetworkEvent::PeerDisconnected { id: identity.id, reason: reason.clone() };
            if reason == DisconnectReason::Shutdown {
                events.send_or_drop(event);
            } else {
                events.send(event, None).await;
            }
        } else {
            events.send_or_drop(NetworkEvent::ConnectionClosed {
                id: Some(identity.id),
                address: identity.address,
                inbound: identity.inbound,
                reason: reason.clone(),
                retry_with_v1,
            });
        }
        PeerOutcome { handshake_complete: self.connected_delivered, retry_with_v1 }
    }
}

/// Waits for the delivery in progress; never completes when there is none.
async fn poll_delivery(delivery: &mut Option<Delivery>) -> bool {
    match delivery {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

/// The protocol's view of the moment.
fn context<'a>(
    registry: &Registry,
    now: Instant,
    is_own_nonce: &'a dyn Fn(u64) -> bool,
) -> Context<'a> {
    let now_unix_seconds =
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs());
    Context {
        now,
        now_unix_seconds: i64::try_from(now_unix_seconds).unwrap_or(i64::MAX),
        start_height: registry.best_height(),
        local_services: registry.local_services(),
        is_own_nonce,
    }
}
