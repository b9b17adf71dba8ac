//! The connection manager: [`start`] binds the listener and starts one
//! task per `connect` address and one per inbound connection.
//!
//! - Outbound (Core's `-connect`, manual connections): connect within
//!   `connect_timeout`, run the connection to its end in the same task,
//!   wait, retry. v2 first when enabled; a v2 attempt the peer closed
//!   before sending a byte is retried at once with v1 (Core's
//!   `ShouldReconnectV1`, "retrying with v1 transport protocol"); the next
//!   attempt after that tries v2 again, as Core's `-connect` loop does. The
//!   wait starts at `reconnect_delay_min` and doubles to
//!   `reconnect_delay_max`, back to the minimum after a handshake.
//! - Automatic outbound (`open_automatic`, chosen by
//!   [`crate::net::discovery`] from the address manager): one attempt, run
//!   to its end, v2 first if the address announces `NODE_P2P_V2`, with the
//!   same one v1 retry; counted in the registry while it opens so the
//!   slots are never overfilled, and reported to the address manager
//!   (Core's `Attempt`).
//! - Inbound: refused when the address is banned, or discouraged while
//!   the inbound slots are (almost) full; when they are full, another
//!   inbound connection is evicted to make room
//!   ([`crate::net::eviction`]), and the new one is refused only when
//!   every inbound peer is protected (Core's order and rules). Otherwise
//!   a v2 responder that falls back to v1 by itself for a v1 peer (or v1
//!   when v2 is off).
//! - Bans: in memory with an expiry ([`crate::net::bans`]), manual bans
//!   apart from discouragements. A peer that is not a manual connection,
//!   from a non-local address, that misbehaves (Core's `Misbehaving`) is
//!   discouraged for `discourage_duration`: not chosen outbound, and
//!   accepted inbound only while slots are free, as the first to evict.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use crate::addrman::PeerAddress;
use crate::net::config::NetworkConfig;
use crate::net::connection_type::ConnectionType;
use crate::net::error::NetworkError;
use crate::net::event::{EventSender, NetworkEvent, NetworkEvents};
use crate::net::handle::NetworkHandle;
use crate::net::peer::{Connection, PeerOutcome};
use crate::net::reason::DisconnectReason;
use crate::net::registry::{unix_seconds, Registry};
use crate::transport::{HandshakeSecrets, Transport, TransportError};

/// How long the listener pauses after `accept` fails (out of file
/// descriptors, say) before it tries again.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Starts the networking layer on the current tokio runtime: binds the
/// listener (if any), starts the outbound connections, and returns the
/// handle and the node's end of the event queue.
pub async fn start(config: NetworkConfig) -> Result<(NetworkHandle, NetworkEvents), NetworkError> {
    config.validate()?;
    let listener = match config.listen {
        Some(address) => {
            let listener = TcpListener::bind(address)
                .await
                .map_err(|source| NetworkError::Bind { address, source })?;
            Some(listener)
        }
        None => None,
    };
    let listen_address = match &listener {
        Some(listener) => {
            let address = config.listen.unwrap_or(SocketAddr::from(([0; 4], 0)));
            Some(listener.local_addr().map_err(|source| NetworkError::Bind { address, source })?)
        }
        None => None,
    };
    let (sender, receiver) = mpsc::channel(config.event_queue_events_max);
    let runtime = tokio::runtime::Handle::current();
    let registry =
        Arc::new(Registry::new(config, EventSender::new(sender), listen_address, runtime));
    if let Some(listener) = listener {
        tokio::spawn(accept_loop(Arc::clone(&registry), listener));
    }
    for address in registry.config.connect.clone() {
        add_outbound(&registry, address)?;
    }
    crate::net::discovery::start(&registry);
    let events = NetworkEvents::new(receiver, registry.shutdown_switch());
    Ok((NetworkHandle::new(registry), events))
}

/// Starts keeping a connection to `address` open (a `-connect` address, or
/// one added later, as Core's `addnode add`).
pub(crate) fn add_outbound(
    registry: &Arc<Registry>,
    address: SocketAddr,
) -> Result<(), NetworkError> {
    if registry.is_shut_down() {
        return Err(NetworkError::Stopped);
    }
    registry.reserve_outbound_address()?;
    registry.runtime.spawn(connect_loop(Arc::clone(registry), address, None));
    Ok(())
}

/// Accepts inbound connections until shutdown.
async fn accept_loop(registry: Arc<Registry>, listener: TcpListener) {
    let mut shutdown = registry.shutdown_signal();
    loop {
        if registry.is_shut_down() || registry.events.is_closed() {
            return;
        }
        tokio::select! {
            _ = shutdown.changed() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, address)) => accept_one(&registry, stream, address),
                Err(_error) => tokio::time::sleep(ACCEPT_ERROR_PAUSE).await,
            },
        }
    }
}

fn accept_one(registry: &Arc<Registry>, stream: TcpStream, address: SocketAddr) {
    // Nagle's algorithm would hold small messages (pings, getdata) back.
    let _ = stream.set_nodelay(true);
    let local_address = stream.local_addr().ok();
    let refuse = |reason: DisconnectReason| {
        registry.events.send_or_drop(NetworkEvent::ConnectionClosed {
            id: None,
            address,
            inbound: true,
            reason,
            retry_with_v1: false,
        });
    };
    // Admission first: a refused connection costs no key generation.
    let shared = match registry.register_inbound(address, local_address) {
        Ok(Ok(shared)) => shared,
        Ok(Err(reason)) => return refuse(reason),
        Err(error) => return refuse(random_source_failed(error)),
    };
    let transport = match new_transport(registry, true, registry.config.v2_transport) {
        Ok(transport) => transport,
        Err(error) => {
            let reason = DisconnectReason::Transport(error);
            registry.unregister(shared.identity.id, &reason);
            return refuse(reason);
        }
    };
    let connection = Connection::new(Arc::clone(registry), shared, transport);
    tokio::spawn(connection.run(stream));
}

/// Keeps a connection to `address` open while the layer runs, or (with
/// `removal`) until the node removes it: then the connection open at that
/// moment runs to its end, and its outbound address slot is given back.
pub(crate) async fn connect_loop(
    registry: Arc<Registry>,
    address: SocketAddr,
    mut removal: Option<watch::Receiver<bool>>,
) {
    run_connect_loop(&registry, address, &mut removal).await;
    if removal.is_some() {
        registry.release_outbound_address();
    }
}

async fn run_connect_loop(
    registry: &Arc<Registry>,
    address: SocketAddr,
    removal: &mut Option<watch::Receiver<bool>>,
) {
    let config = &registry.config;
    let mut shutdown = registry.shutdown_signal();
    let mut delay = config.reconnect_delay_min;
    let mut use_v2 = config.v2_transport;
    loop {
        if registry.is_shut_down() || registry.events.is_closed() || is_removed(removal) {
            return;
        }
        let outcome = connect_once(registry, address, use_v2, ConnectionType::Manual, None).await;
        let retry_now = outcome.as_ref().is_some_and(|outcome| outcome.retry_with_v1);
        use_v2 = config.v2_transport && !retry_now;
        if outcome.as_ref().is_some_and(|outcome| outcome.handshake_complete) {
            delay = config.reconnect_delay_min;
        }
        if retry_now {
            continue;
        }
        tokio::select! {
            _ = shutdown.changed() => return,
            () = removed(removal) => return,
            () = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(config.reconnect_delay_max);
    }
}

/// Whether the node removed the address (or dropped its guard).
fn is_removed(removal: &Option<watch::Receiver<bool>>) -> bool {
    removal.as_ref().is_some_and(|receiver| *receiver.borrow() || receiver.has_changed().is_err())
}

/// Returns once the node removes the address; never without `removal`.
async fn removed(removal: &mut Option<watch::Receiver<bool>>) {
    let Some(receiver) = removal else { return std::future::pending().await };
    // An error means the guard was dropped: removed as well.
    let _ = receiver.wait_for(|removed| *removed).await;
}

/// An automatic attempt: its number in the registry, and whether a
/// failure counts against the address (Core counts failures only once a
/// few connections show that the network works).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AutomaticAttempt {
    pub attempt: u64,
    pub count_failure: bool,
}

/// Opens one automatic connection to `address` (v2 first if it announces
/// `NODE_P2P_V2`, one v1 retry as for manual ones), run to its end on its
/// own task; the address manager hears of the attempt.
pub(crate) fn open_automatic(
    registry: &Arc<Registry>,
    address: SocketAddr,
    connection: ConnectionType,
    v2: bool,
    count_failure: bool,
) {
    let attempt = registry.begin_attempt(address, connection);
    let registry = Arc::clone(registry);
    let runtime = registry.runtime.clone();
    runtime.spawn(async move {
        let use_v2 = registry.config.v2_transport && v2;
        let first = AutomaticAttempt { attempt, count_failure };
        let outcome = connect_once(&registry, address, use_v2, connection, Some(first)).await;
        registry.end_attempt(attempt);
        if outcome.is_some_and(|outcome| outcome.retry_with_v1) && !registry.is_shut_down() {
            let retry = AutomaticAttempt {
                attempt: registry.begin_attempt(address, connection),
                count_failure: false,
            };
            connect_once(&registry, address, false, connection, Some(retry)).await;
            registry.end_attempt(retry.attempt);
        }
    });
}

/// One outbound attempt, run to its end; `None` if no connection opened.
pub(crate) async fn connect_once(
    registry: &Arc<Registry>,
    address: SocketAddr,
    use_v2: bool,
    connection: ConnectionType,
    automatic: Option<AutomaticAttempt>,
) -> Option<PeerOutcome> {
    let failed = |reason: DisconnectReason| {
        // Failed automatic attempts are routine (Core logs them only with
        // `-debug=net`): the node hears of manual ones only.
        if automatic.is_none() {
            registry.events.send_or_drop(NetworkEvent::ConnectionClosed {
                id: None,
                address,
                inbound: false,
                reason,
                retry_with_v1: false,
            });
        }
        None
    };
    let stream =
        match tokio::time::timeout(registry.config.connect_timeout, TcpStream::connect(address))
            .await
        {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(error)) => Err(DisconnectReason::ConnectFailed { address, kind: error.kind() }),
            Err(_elapsed) => Err(DisconnectReason::ConnectTimedOut { address }),
        };
    if let (Some(automatic), Some(addresses)) = (automatic, &registry.config.addresses) {
        // Core's `Attempt`, whatever the outcome of the connect.
        let peer_address = PeerAddress::from_socket_address(address);
        addresses.book.lock().mark_attempt(&peer_address, automatic.count_failure, unix_seconds());
    }
    let stream = match stream {
        Ok(stream) => stream,
        Err(reason) => return failed(reason),
    };
    let _ = stream.set_nodelay(true);
    let transport = match new_transport(registry, false, use_v2) {
        Ok(transport) => transport,
        Err(error) => return failed(DisconnectReason::Transport(error)),
    };
    let attempt = automatic.map(|automatic| automatic.attempt);
    let local_address = stream.local_addr().ok();
    let shared = match registry.register_outbound(address, local_address, connection, attempt) {
        Ok(shared) => shared,
        Err(error) => return failed(random_source_failed(error)),
    };
    Some(Connection::new(Arc::clone(registry), shared, transport).run(stream).await)
}

/// A v2 transport with fresh secrets, or v1.
fn new_transport(
    registry: &Registry,
    inbound: bool,
    v2: bool,
) -> Result<Transport, TransportError> {
    let magic = registry.config.magic;
    if !v2 {
        return Ok(Transport::v1(magic));
    }
    let secrets = HandshakeSecrets::from_os_random()?;
    Ok(if inbound {
        Transport::v2_responder(magic, secrets)
    } else {
        Transport::v2_initiator(magic, secrets)
    })
}

/// A connection given up because the random source failed (the only way
/// registering one fails).
fn random_source_failed(error: NetworkError) -> DisconnectReason {
    match error {
        NetworkError::RandomSource { source } => {
            DisconnectReason::Transport(TransportError::RandomSource { source })
        }
        _ => DisconnectReason::Shutdown,
    }
}
