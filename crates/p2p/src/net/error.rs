//! [`NetworkError`]: why the networking layer cannot start or cannot do
//! what the node asked.

use std::net::SocketAddr;

use thiserror::Error;

use crate::sync::PeerId;

/// Why the networking layer cannot start, or refuses a request.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum NetworkError {
    /// A configuration value is outside its limits.
    #[error("network setting {name} = {value} is outside {min}..={max}")]
    InvalidConfig {
        /// The setting.
        name: &'static str,
        /// Its value (milliseconds for durations).
        value: u64,
        /// The least allowed.
        min: u64,
        /// The most allowed.
        max: u64,
    },
    /// The listener could not be bound (Core: "Unable to bind to %s on this
    /// computer").
    #[error("unable to bind to {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The operating system's random source failed.
    #[error("operating system random source failed: {source}")]
    RandomSource {
        /// The error.
        source: getrandom::Error,
    },
    /// No connection has this id (never had, or it closed).
    #[error("no connection {id}")]
    UnknownPeer {
        /// The id.
        id: PeerId,
    },
    /// The peer's send queue is at its limit (`send_queue_bytes_max`, Core's
    /// `-maxsendbuffer`); the message was not queued. The peer is slow to
    /// read: retry later, or choose another peer.
    #[error("send queue of {id} holds {queued_bytes} bytes, at its limit of {limit_bytes}")]
    SendQueueFull {
        /// The peer.
        id: PeerId,
        /// Bytes queued and not yet written to the socket.
        queued_bytes: usize,
        /// The limit.
        limit_bytes: usize,
    },
    /// A message whose payload exceeds the 4,000,000-byte limit: the peer
    /// would disconnect us for it.
    #[error("message {command} of {payload_bytes} payload bytes exceeds the limit of 4000000")]
    MessageTooLarge {
        /// The message's command.
        command: crate::command::Command,
        /// Its payload's length.
        payload_bytes: usize,
    },
    /// Too many one-try manual connections are under way (Core's
    /// `addnode onetry`).
    #[error("{count_max} one-try connections are under way already")]
    ManualConnectionsFull {
        /// The most at once.
        count_max: usize,
    },
    /// The networking layer was shut down.
    #[error("network stopped")]
    Stopped,
}
