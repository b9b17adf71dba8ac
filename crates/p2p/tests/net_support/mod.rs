//! Shared pieces of the `net_*` tests: configurations on loopback with
//! short timeouts, waiting for events, and a fake v1 peer written on raw
//! TCP that can say anything. Included by the `net_*` tests; compiled alone
//! it holds no tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use ibex_p2p::messages::address::ServiceAddress;
use ibex_p2p::net::{self, NetworkConfig, NetworkEvent, NetworkEvents, NetworkHandle};
use ibex_p2p::{
    encode_message, FrameDecoder, NetworkMessage, ServiceFlags, UserAgent, VersionMessage,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::timeout;

/// Regtest's magic.
pub const MAGIC: [u8; 4] = [0xfa, 0xbf, 0xb5, 0xda];
/// How long a test waits for anything before failing.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// A loopback configuration: listening on a port the system picks, timeouts
/// short enough for tests but far from firing unless a test wants them.
pub fn config(v2: bool) -> NetworkConfig {
    let mut config = NetworkConfig::new(MAGIC);
    config.listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    config.v2_transport = v2;
    config.reconnect_delay_min = Duration::from_millis(20);
    config.reconnect_delay_max = Duration::from_millis(200);
    config.connect_timeout = Duration::from_secs(2);
    config
}

/// Starts a manager; returns its handle, events and listening address.
pub async fn start(config: NetworkConfig) -> (NetworkHandle, NetworkEvents, SocketAddr) {
    let (handle, events) = net::start(config).await.expect("the network starts");
    let address = handle.listen_address().expect("listening");
    (handle, events, address)
}

/// The first event `select` accepts, skipping others; fails after PATIENCE.
pub async fn wait_for<T>(
    events: &mut NetworkEvents,
    mut select: impl FnMut(NetworkEvent) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("the awaited event in time")
            .expect("the event queue open");
        if let Some(found) = select(event) {
            return found;
        }
    }
}

/// Waits for a `PeerConnected`; returns its id, inbound flag and transport.
pub async fn wait_connected(events: &mut NetworkEvents) -> (ibex_p2p::sync::PeerId, NetworkEvent) {
    wait_for(events, |event| match &event {
        NetworkEvent::PeerConnected { id, .. } => Some((*id, event.clone())),
        _ => None,
    })
    .await
}

/// Waits for a message from a peer.
pub async fn wait_message(events: &mut NetworkEvents) -> NetworkMessage {
    wait_for(events, |event| match event {
        NetworkEvent::Message { message, .. } => Some(message),
        _ => None,
    })
    .await
}

/// Waits for the end of any connection (connected or not); returns the
/// reason and whether it had completed its handshake.
pub async fn wait_closed(events: &mut NetworkEvents) -> (net::DisconnectReason, bool) {
    wait_for(events, |event| match event {
        NetworkEvent::PeerDisconnected { reason, .. } => Some((reason, true)),
        NetworkEvent::ConnectionClosed { reason, .. } => Some((reason, false)),
        _ => None,
    })
    .await
}

/// A `version` as a Core peer would send it.
pub fn version_message(nonce: u64) -> NetworkMessage {
    NetworkMessage::Version(VersionMessage {
        protocol_version: 70_016,
        services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        timestamp_seconds: 1_700_000_000,
        receiver: ServiceAddress::default(),
        sender: ServiceAddress::default(),
        nonce,
        user_agent: UserAgent::new(b"/Fake:1.0/".to_vec()).unwrap(),
        start_height: 5,
        relay: Some(false),
    })
}

/// A v1 peer on raw TCP.
pub struct FakePeer {
    pub stream: TcpStream,
    decoder: FrameDecoder,
    buffer: Vec<u8>,
    start: usize,
}

impl FakePeer {
    /// Connects to `address`.
    pub async fn connect(address: SocketAddr) -> FakePeer {
        FakePeer::from_stream(TcpStream::connect(address).await.expect("connects"))
    }

    /// Connects with small socket buffers, so a peer that stops reading
    /// shows it after a few kilobytes.
    pub async fn connect_small_buffers(address: SocketAddr) -> FakePeer {
        let socket = TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(16 * 1024).unwrap();
        socket.set_send_buffer_size(16 * 1024).unwrap();
        FakePeer::from_stream(socket.connect(address).await.expect("connects"))
    }

    fn from_stream(stream: TcpStream) -> FakePeer {
        FakePeer { stream, decoder: FrameDecoder::new(MAGIC), buffer: Vec::new(), start: 0 }
    }

    /// Sends bytes as they are.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("writes");
    }

    /// Sends a message in a v1 frame.
    pub async fn send(&mut self, message: &NetworkMessage) {
        let mut bytes = Vec::new();
        encode_message(MAGIC, message, &mut bytes).unwrap();
        self.send_raw(&bytes).await;
    }

    /// The next message, or `None` when the connection closed or nothing
    /// came within `wait`.
    pub async fn receive(&mut self, wait: Duration) -> Option<NetworkMessage> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if self.start < self.buffer.len() {
                let taken = self.decoder.push(&self.buffer[self.start..]);
                self.start += taken;
            }
            if let Some(frame) = self.decoder.next_frame().expect("valid frames from the node") {
                return Some(
                    NetworkMessage::from_frame(frame).expect("valid messages from the node"),
                );
            }
            if self.start < self.buffer.len() {
                continue;
            }
            let mut chunk = vec![0u8; 64 * 1024];
            let read = tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await;
            match read {
                Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return None,
                Ok(Ok(bytes)) => {
                    self.buffer = chunk[..bytes].to_vec();
                    self.start = 0;
                }
            }
        }
    }

    /// The version handshake from the connecting side: our `version`, then
    /// `verack` for theirs, until their `verack` came.
    pub async fn handshake(&mut self) {
        self.send(&version_message(0x5eed)).await;
        let mut their_verack = false;
        let mut their_version = false;
        while !(their_verack && their_version) {
            match self.receive(PATIENCE).await.expect("handshake messages") {
                NetworkMessage::Version(_) => {
                    their_version = true;
                    self.send(&NetworkMessage::Verack).await;
                }
                NetworkMessage::Verack => their_verack = true,
                _ => {}
            }
        }
    }

    /// Whether the other side closed the connection within `wait`
    /// (whatever it sent meanwhile is read and dropped).
    pub async fn is_closed_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }

    /// Pings and waits for the matching pong: the connection is alive.
    pub async fn ping_pong(&mut self, nonce: u64) -> bool {
        self.send(&NetworkMessage::Ping { nonce }).await;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.receive(left).await {
                Some(NetworkMessage::Pong { nonce: Some(received) }) if received == nonce => {
                    return true
                }
                Some(NetworkMessage::Ping { nonce }) => {
                    self.send(&NetworkMessage::Pong { nonce: Some(nonce) }).await;
                }
                Some(_) => {}
                None => return false,
            }
        }
    }
}

/// Runs `test` with a time limit, so a hang fails instead of stalling CI.
pub async fn within<F: std::future::Future>(limit: Duration, test: F) -> F::Output {
    timeout(limit, test).await.expect("the test finishes in time")
}

impl FakePeer {
    /// Connects to `address` from the loopback address `source` (Linux
    /// routes all of 127.0.0.0/8 to the loopback device), so one machine
    /// plays many hosts.
    pub async fn connect_from(address: SocketAddr, source: std::net::Ipv4Addr) -> FakePeer {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(SocketAddr::from((source, 0))).expect("binds the source address");
        FakePeer::from_stream(socket.connect(address).await.expect("connects"))
    }
}
