//! Manual connections opened while the layer runs (Core's `addnode`): an
//! address kept connected is reconnected after a disconnect until it is
//! removed, and then left alone; a one-try connection connects once, does
//! nothing for an address already connected, and at most
//! `ONE_TRY_CONNECTIONS_MAX` are under way at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::time::Duration;

use ibex_p2p::net::{
    ConnectionType, DisconnectReason, NetworkError, NetworkEvent, ONE_TRY_CONNECTIONS_MAX,
};
use net_support::{config, start, wait_connected, wait_for, within};

const LIMIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_added_address_is_reconnected_until_removed() {
    within(LIMIT, async {
        let (_listener, _listener_events, address) = start(config(true)).await;
        let mut connector_config = config(true);
        connector_config.listen = None;
        let (connector, mut events) = ibex_p2p::net::start(connector_config).await.unwrap();

        let added = connector.keep_connected(address).unwrap();
        assert_eq!(added.address(), address);
        let (first, event) = wait_connected(&mut events).await;
        let NetworkEvent::PeerConnected { connection, .. } = event else { unreachable!() };
        assert_eq!(connection, ConnectionType::Manual);
        connector.disconnect(first, DisconnectReason::Manual).unwrap();
        let (second, _) = wait_connected(&mut events).await;
        assert_ne!(first, second, "reconnected after the disconnect");

        // Removed: the open connection stays, and once dropped it is not
        // reconnected (the delay is 20-200 ms in these tests).
        added.remove();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(connector.peers().len(), 1, "removing leaves the connection open");
        connector.disconnect(second, DisconnectReason::Manual).unwrap();
        wait_for(&mut events, |event| {
            matches!(event, NetworkEvent::PeerDisconnected { id, .. } if id == second).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(connector.peers().is_empty(), "not reconnected after removal");

        // One try: connects once, as a manual connection.
        connector.try_once(address, true).unwrap();
        let (third, event) = wait_connected(&mut events).await;
        let NetworkEvent::PeerConnected { connection, .. } = event else { unreachable!() };
        assert_eq!(connection, ConnectionType::Manual);
        connector.try_once(address, true).unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let peers = connector.peers();
        assert_eq!(peers.len(), 1, "a second try while connected does nothing");
        connector.disconnect(third, DisconnectReason::Manual).unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(connector.peers().is_empty(), "a one-try connection is not reconnected");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_try_connections_are_bounded() {
    within(LIMIT, async {
        // Listeners that never accept: each connection sits in the
        // kernel's backlog, its handshake waiting, holding its try.
        let silent: Vec<std::net::TcpListener> = (0..=ONE_TRY_CONNECTIONS_MAX)
            .map(|_| std::net::TcpListener::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut connector_config = config(false);
        connector_config.listen = None;
        let (connector, _events) = ibex_p2p::net::start(connector_config).await.unwrap();
        for listener in &silent[..ONE_TRY_CONNECTIONS_MAX] {
            connector.try_once(listener.local_addr().unwrap(), false).unwrap();
        }
        let refused =
            connector.try_once(silent[ONE_TRY_CONNECTIONS_MAX].local_addr().unwrap(), false);
        assert!(
            matches!(
                refused,
                Err(NetworkError::ManualConnectionsFull { count_max: ONE_TRY_CONNECTIONS_MAX })
            ),
            "{refused:?}"
        );
        connector.shutdown();
        assert!(matches!(
            connector.try_once(silent[0].local_addr().unwrap(), false),
            Err(NetworkError::Stopped)
        ));
        assert!(matches!(
            connector.keep_connected(silent[0].local_addr().unwrap()),
            Err(NetworkError::Stopped)
        ));
    })
    .await;
}
