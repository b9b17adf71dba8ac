//! Manual connections the node opens while it runs (Core's `addnode`
//! RPC): an address kept connected until it is removed
//! ([`ManualConnection`], `addnode add`/`remove`), and one attempt at an
//! address (`addnode onetry`). Both are [`ConnectionType::Manual`]: never
//! punished, not counted against the automatic or inbound slots.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::net::connection_type::ConnectionType;
use crate::net::error::NetworkError;
use crate::net::manager::{connect_loop, connect_once};
use crate::net::registry::Registry;

/// The most one-try connections being opened or open at once (Core's
/// `MAX_ADDNODE_CONNECTIONS`, which bounds its added-node connections).
pub const ONE_TRY_CONNECTIONS_MAX: usize = 8;

/// An address kept connected (reconnected with backoff after each
/// connection ends) until [`ManualConnection::remove`] or the guard is
/// dropped. Removing it leaves the connection open at that moment alone,
/// as Core's `addnode remove` does; it is just not reconnected.
#[derive(Debug)]
pub struct ManualConnection {
    address: SocketAddr,
    removal: watch::Sender<bool>,
}

impl ManualConnection {
    /// The address kept connected.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops reconnecting to the address.
    pub fn remove(self) {
        self.removal.send_replace(true);
    }
}

/// Starts keeping `address` connected; it takes one of the outbound
/// address slots until removed and its last connection ended.
pub(crate) fn keep_connected(
    registry: &Arc<Registry>,
    address: SocketAddr,
) -> Result<ManualConnection, NetworkError> {
    if registry.is_shut_down() {
        return Err(NetworkError::Stopped);
    }
    registry.reserve_outbound_address()?;
    let (removal, receiver) = watch::channel(false);
    registry.runtime.spawn(connect_loop(Arc::clone(registry), address, Some(receiver)));
    Ok(ManualConnection { address, removal })
}

/// One manual connection attempt at `address` (v2 first when `v2` and the
/// layer speaks v2, with Core's one v1 retry), run to its end on its own
/// task. Nothing is done when a connection to that address and port is
/// open or being opened (Core's `OpenNetworkConnection` finds the node
/// and returns).
pub(crate) fn try_once(
    registry: &Arc<Registry>,
    address: SocketAddr,
    v2: bool,
) -> Result<(), NetworkError> {
    if registry.is_shut_down() {
        return Err(NetworkError::Stopped);
    }
    if registry.is_connected_to(address, true) {
        return Ok(());
    }
    if !registry.begin_one_try(ONE_TRY_CONNECTIONS_MAX) {
        return Err(NetworkError::ManualConnectionsFull { count_max: ONE_TRY_CONNECTIONS_MAX });
    }
    let registry = Arc::clone(registry);
    let runtime = registry.runtime.clone();
    runtime.spawn(async move {
        let use_v2 = registry.config.v2_transport && v2;
        let outcome = connect_once(&registry, address, use_v2, ConnectionType::Manual, None).await;
        if outcome.is_some_and(|outcome| outcome.retry_with_v1) && !registry.is_shut_down() {
            connect_once(&registry, address, false, ConnectionType::Manual, None).await;
        }
        registry.end_one_try();
    });
    Ok(())
}
