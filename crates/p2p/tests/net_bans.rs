//! Manual bans and discouragements kept apart (Core's `m_banned` and
//! `m_discouraged`), on a running layer: 60,000 addresses discouraged
//! (as many misbehaving peers would be) cannot lift an operator's ban,
//! are never listed as bans, and are held to 50,000 at most.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod net_support;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use ibex_p2p::net::bans::DISCOURAGED_ADDRESSES_MAX;
use ibex_p2p::net::{BanReason, DisconnectReason, NetworkEvent};
use net_support::{config, start, wait_for, within, FakePeer};

/// The `index`th misbehaving address (routable, distinct).
fn misbehaving(index: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0b00_0000 + index as u32))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discouragement_flood_never_lifts_an_operators_ban() {
    within(Duration::from_secs(20), async {
        let (handle, mut events, listen) = start(config(false)).await;
        let banned_host = Ipv4Addr::new(127, 3, 0, 1);
        handle.ban(IpAddr::V4(banned_host), BanReason::Manual, Duration::from_secs(3600));
        let flood = DISCOURAGED_ADDRESSES_MAX + 10_000;
        for index in 0..flood {
            handle.ban(misbehaving(index), BanReason::Misbehaving, Duration::from_secs(86_400));
        }
        let bans = handle.banned();
        assert_eq!(bans.len(), 1, "discouragements are not listed as bans");
        assert_eq!(bans[0].address, IpAddr::V4(banned_host));
        assert!(handle.manual_ban(IpAddr::V4(banned_host)).is_some());
        assert!(handle.is_discouraged(misbehaving(flood - 1)));
        assert!(!handle.is_discouraged(misbehaving(0)), "the oldest made room: at most 50,000");

        let mut refused = FakePeer::connect_from(listen, banned_host).await;
        assert!(refused.is_closed_within(Duration::from_secs(3)).await);
        let reason = wait_for(&mut events, |event| match event {
            NetworkEvent::ConnectionClosed { reason, .. } => Some(reason),
            _ => None,
        })
        .await;
        assert!(matches!(reason, DisconnectReason::RefusedBanned { .. }), "{reason}");

        // `setban remove` and `clearbanned` lift manual bans only.
        handle.ban(misbehaving(flood - 1), BanReason::Manual, Duration::from_secs(60));
        handle.clear_bans();
        assert!(handle.banned().is_empty());
        assert!(handle.is_discouraged(misbehaving(flood - 1)), "the discouragement stays");
        handle.shutdown();
    })
    .await;
}
