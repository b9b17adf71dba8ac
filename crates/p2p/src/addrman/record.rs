//! What the address manager knows about one address (`AddressRecord`),
//! what it is offered ([`AddressCandidate`], [`AddressSource`]), and Core's
//! rules for an address not worth keeping (`AddrInfo::IsTerrible`) and for
//! how likely one is to be picked (`AddrInfo::GetChance`).

use crate::addrman::address::{AddressPolicy, PeerAddress};
use crate::addrman::group::NetworkGroup;
use crate::services::ServiceFlags;

/// Seconds in an hour.
pub const HOUR_SECONDS: i64 = 60 * 60;
/// Seconds in a day.
pub const DAY_SECONDS: i64 = 24 * HOUR_SECONDS;
/// An address not seen for this long is terrible (Core's `ADDRMAN_HORIZON`).
pub const HORIZON_SECONDS: i64 = 30 * DAY_SECONDS;
/// Failed attempts after which a never-successful address is terrible
/// (Core's `ADDRMAN_RETRIES`).
pub const RETRIES_MAX: u32 = 3;
/// Failed attempts after which an address without a success in
/// [`MIN_FAIL_SECONDS`] is terrible (Core's `ADDRMAN_MAX_FAILURES`).
pub const FAILURES_MAX: u32 = 10;
/// See [`FAILURES_MAX`] (Core's `ADDRMAN_MIN_FAIL`).
pub const MIN_FAIL_SECONDS: i64 = 7 * DAY_SECONDS;
/// An address tried this recently is never terrible.
pub const RECENT_TRY_SECONDS: i64 = 60;
/// A last-seen time this far in the future is terrible.
pub const FUTURE_SLACK_SECONDS: i64 = 10 * 60;
/// A tried address connected to this recently is not evicted from its
/// tried slot by another (Core's `ADDRMAN_REPLACEMENT`).
pub const REPLACEMENT_SECONDS: i64 = 4 * HOUR_SECONDS;

/// An address offered to the manager (from `addr`, a seed, a connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressCandidate {
    /// The address.
    pub address: PeerAddress,
    /// The services it is said to offer.
    pub services: ServiceFlags,
    /// When it was last seen, seconds since the Unix epoch.
    pub time_seconds: i64,
}

/// Who told us of an address: its group chooses the new-table buckets,
/// so one source fills at most 64 of the 1,024.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressSource {
    /// The source's group.
    pub group: NetworkGroup,
    /// The source's own address, when it is a peer: an address it
    /// announces of itself is not aged (Core's `addr == source`).
    pub address: Option<PeerAddress>,
}

impl AddressSource {
    /// A peer at `address`.
    pub fn peer(address: PeerAddress, policy: AddressPolicy) -> AddressSource {
        AddressSource { group: NetworkGroup::of(&address, policy), address: Some(address) }
    }

    /// A named source (a DNS seed's host name, `fixed seeds`).
    pub fn named(name: &str) -> AddressSource {
        AddressSource { group: NetworkGroup::named(name), address: None }
    }

    /// Whether `address` is the source's own (same host, any port).
    pub fn is_self(&self, address: &PeerAddress) -> bool {
        self.address
            .is_some_and(|own| own.network() == address.network() && own.bytes() == address.bytes())
    }
}

/// Where a record sits: a table, a bucket and a position in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub tried: bool,
    pub bucket: usize,
    pub position: usize,
}

impl Slot {
    /// The slot's index in its table.
    pub fn index(&self) -> usize {
        self.bucket * crate::addrman::buckets::BUCKET_SLOTS + self.position
    }
}

/// One known address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AddressRecord {
    pub address: PeerAddress,
    pub services: ServiceFlags,
    /// Last seen (Core's `nTime`), seconds since the epoch.
    pub time_seconds: i64,
    /// Last connection attempt; 0 for never.
    pub last_try_seconds: i64,
    /// Last attempt counted as a failure; 0 for never.
    pub last_count_attempt_seconds: i64,
    /// Last successful connection; 0 for never.
    pub last_success_seconds: i64,
    /// Failed attempts since the last success.
    pub attempts: u32,
    /// The group of who told us of it.
    pub source: NetworkGroup,
    /// Its place; `None` only while being moved between tables.
    pub slot: Option<Slot>,
}

impl AddressRecord {
    /// Core's `IsTerrible`: not worth keeping over a new address.
    pub fn is_terrible(&self, now_seconds: i64) -> bool {
        // Saturating: times come from peers and files.
        let since = |time: i64| now_seconds.saturating_sub(time);
        if self.last_try_seconds != 0 && since(self.last_try_seconds) <= RECENT_TRY_SECONDS {
            return false;
        }
        if self.time_seconds > now_seconds.saturating_add(FUTURE_SLACK_SECONDS) {
            return true;
        }
        if since(self.time_seconds) > HORIZON_SECONDS {
            return true;
        }
        if self.last_success_seconds == 0 && self.attempts >= RETRIES_MAX {
            return true;
        }
        since(self.last_success_seconds) > MIN_FAIL_SECONDS && self.attempts >= FAILURES_MAX
    }

    /// Core's `GetChance`: 1, a hundredth if tried in the last 10 minutes,
    /// times 0.66 per failed attempt (at most 8 of them).
    pub fn chance(&self, now_seconds: i64) -> f64 {
        let mut chance = 1.0;
        if now_seconds.saturating_sub(self.last_try_seconds) < 10 * 60 {
            chance *= 0.01;
        }
        chance * 0.66f64.powi(self.attempts.min(8) as i32)
    }

    pub fn is_tried(&self) -> bool {
        self.slot.is_some_and(|slot| slot.tried)
    }

    /// The candidate form, for `getaddr` answers.
    pub fn candidate(&self) -> AddressCandidate {
        AddressCandidate {
            address: self.address,
            services: self.services,
            time_seconds: self.time_seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn record(time_seconds: i64) -> AddressRecord {
        let address = PeerAddress::from_socket_address(SocketAddr::from(([8, 8, 8, 8], 8333)));
        AddressRecord {
            address,
            services: ServiceFlags::NETWORK,
            time_seconds,
            last_try_seconds: 0,
            last_count_attempt_seconds: 0,
            last_success_seconds: 0,
            attempts: 0,
            source: NetworkGroup::named("test"),
            slot: None,
        }
    }

    #[test]
    fn terrible_as_core() {
        let now = 1_700_000_000;
        assert!(!record(now - DAY_SECONDS).is_terrible(now));
        assert!(record(now - HORIZON_SECONDS - 1).is_terrible(now));
        assert!(record(now + FUTURE_SLACK_SECONDS + 1).is_terrible(now));
        let mut failing = record(now);
        failing.attempts = RETRIES_MAX;
        assert!(failing.is_terrible(now));
        failing.last_try_seconds = now - 30;
        assert!(!failing.is_terrible(now), "tried in the last minute");
        let mut once_good = record(now);
        once_good.last_success_seconds = now - 8 * DAY_SECONDS;
        once_good.attempts = FAILURES_MAX - 1;
        assert!(!once_good.is_terrible(now));
        once_good.attempts = FAILURES_MAX;
        assert!(once_good.is_terrible(now));
    }

    #[test]
    fn chance_falls_with_failures_and_recent_tries() {
        let now = 1_700_000_000;
        let fresh = record(now);
        assert!((fresh.chance(now) - 1.0).abs() < 1e-12);
        let mut tried = fresh.clone();
        tried.last_try_seconds = now - 60;
        assert!((tried.chance(now) - 0.01).abs() < 1e-12);
        let mut failing = fresh;
        failing.attempts = 20;
        assert!((failing.chance(now) - 0.66f64.powi(8)).abs() < 1e-12);
    }
}
