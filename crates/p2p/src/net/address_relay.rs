//! One connection's address exchange, as Core's net_processing.cpp runs it
//! (`ProcessMessage` for `addr`, `addrv2`, `getaddr`; the `version`
//! handler's `Good` and `getaddr`; `ProcessAddrs`' rate limit):
//!
//! - an outbound connection that completes its handshake is marked good in
//!   the address manager (learned if it was not known); a feeler closes
//!   right after the peer's `version`;
//! - outbound connections that relay addresses (all but block-relay-only)
//!   send one `getaddr`, and may then receive 1,000 addresses at once;
//! - `addr`/`addrv2` entries spend a token each from a bucket refilled at
//!   0.1 a second (at most 1,000; it starts at 1), so an unsolicited flood
//!   is mostly dropped; entries without `NODE_NETWORK` or
//!   `NODE_NETWORK_LIMITED`, on networks not stored, or from banned
//!   addresses are skipped; times that are implausible become 5 days ago;
//!   the rest go to the address manager with the peer as source, aged 2
//!   hours. Messages of more than 1,000 entries never get here: they fail
//!   to decode and the peer is punished (Core's "addr message size").
//! - an addr-fetch connection closes once it received more than one
//!   address (one may be the peer's own announcement);
//! - an inbound peer's first `getaddr` is answered with the address
//!   manager's cached sample (as `addrv2` if it asked with `sendaddrv2`,
//!   else the IPv4 and IPv6 entries as `addr`); later ones, and those from
//!   outbound peers, are ignored. Block-relay-only connections exchange no
//!   addresses at all.
//! - a peer with the `addr` permission (`-whitelist`) is answered from a
//!   fresh sample, which neither reads nor replaces the cached one, and
//!   its entries spend no tokens (Core's `NetPermissionFlags::Addr`).
//!
//! Not done (Core does): relaying received addresses on to other peers,
//! and advertising our own address.

use std::time::Instant;

use crate::addrman::{AddressCandidate, AddressPolicy, AddressSource, FastRandom, PeerAddress};
use crate::messages::address::{AddressEntry, AddressV2Entry, ADDRESSES_PER_MESSAGE_MAX};
use crate::messages::NetworkMessage;
use crate::net::config::AddressSettings;
use crate::net::connection_type::ConnectionType;
use crate::net::protocol::Received;
use crate::net::reason::DisconnectReason;
use crate::net::registry::{unix_seconds, Registry};
use crate::net::stats::PeerVersion;
use crate::services::ServiceFlags;

/// Tokens gained per second (Core's `MAX_ADDR_RATE_PER_SECOND`).
pub const ADDRESS_TOKENS_PER_SECOND: f64 = 0.1;
/// The most tokens kept from refills (Core's
/// `MAX_ADDR_PROCESSING_TOKEN_BUCKET`); a `getaddr` adds 1,000 beyond it.
pub const ADDRESS_TOKENS_MAX: f64 = ADDRESSES_PER_MESSAGE_MAX as f64;
/// How much older than announced a relayed address is taken to be
/// (Core's two-hour penalty in `ProcessAddrs`).
pub const RELAYED_ADDRESS_PENALTY_SECONDS: i64 = 2 * 60 * 60;
/// Announced times at or before this are implausible (Core's 100000000).
const PLAUSIBLE_TIME_SECONDS_MIN: i64 = 100_000_000;
/// Announced times this far ahead are implausible.
const FUTURE_TIME_SLACK_SECONDS: i64 = 10 * 60;
/// What an implausible time becomes: 5 days ago.
const IMPLAUSIBLE_TIME_AGE_SECONDS: i64 = 5 * 24 * 60 * 60;

/// One connection's address exchange state.
#[derive(Debug)]
pub(crate) struct AddressRelay {
    settings: AddressSettings,
    policy: AddressPolicy,
    connection: ConnectionType,
    peer: PeerAddress,
    getaddr_answered: bool,
    getaddr_sent: bool,
    wants_address_v2: bool,
    /// The `addr` permission: no rate limit, uncached `getaddr` answers.
    address_permission: bool,
    tokens: f64,
    tokens_at: Instant,
    random: FastRandom,
    outgoing: Vec<NetworkMessage>,
}

/// An entry of either message, before it is checked.
struct ReceivedEntry {
    address: Option<PeerAddress>,
    services: ServiceFlags,
    time_seconds: u32,
}

impl AddressRelay {
    /// The exchange with `peer` on a `connection`; `seed` varies the order
    /// in which a rate-limited message's entries are taken.
    pub fn new(
        settings: &AddressSettings,
        connection: ConnectionType,
        peer: std::net::SocketAddr,
        seed: u64,
        now: Instant,
    ) -> AddressRelay {
        let mut seed_bytes = [0; 32];
        seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
        AddressRelay {
            policy: settings.book.lock().policy(),
            settings: settings.clone(),
            connection,
            peer: PeerAddress::from_socket_address(peer),
            getaddr_answered: false,
            getaddr_sent: false,
            wants_address_v2: false,
            address_permission: false,
            tokens: 1.0,
            tokens_at: now,
            random: FastRandom::from_seed(&seed_bytes),
            outgoing: Vec::new(),
        }
    }

    /// Grants or withdraws the `addr` permission.
    pub fn set_address_permission(&mut self, permitted: bool) {
        self.address_permission = permitted;
    }

    /// Messages to send, in order.
    pub fn take_outgoing(&mut self) -> std::vec::Drain<'_, NetworkMessage> {
        self.outgoing.drain(..)
    }

    /// Takes what concerns addresses out of what the protocol made of a
    /// message; the rest is returned as it was. An error closes the
    /// connection (a feeler or addr-fetch connection that did its job).
    pub fn filter(
        &mut self,
        received: Received,
        registry: &Registry,
        now: Instant,
    ) -> Result<Received, DisconnectReason> {
        match received {
            Received::Version(version) if self.connection == ConnectionType::Feeler => {
                self.settings.book.lock().mark_good(&self.peer, version.services, unix_seconds());
                Err(DisconnectReason::FeelerDone)
            }
            Received::Connected(version) => {
                self.on_connected(&version);
                Ok(Received::Connected(version))
            }
            Received::Forward(NetworkMessage::Address(entries)) => {
                let entries = entries.iter().map(|entry| ReceivedEntry {
                    address: Some(PeerAddress::from_v1(&entry.address)),
                    services: entry.address.services,
                    time_seconds: entry.time_seconds,
                });
                self.on_addresses(entries.collect(), registry, now)
            }
            Received::Forward(NetworkMessage::AddressV2(entries)) => {
                let entries = entries.iter().map(|entry| ReceivedEntry {
                    address: PeerAddress::from_v2(&entry.address, entry.port),
                    services: entry.services,
                    time_seconds: entry.time_seconds,
                });
                self.on_addresses(entries.collect(), registry, now)
            }
            Received::Forward(NetworkMessage::GetAddress) => {
                self.on_getaddr();
                Ok(Received::Nothing)
            }
            other => Ok(other),
        }
    }

    fn on_connected(&mut self, version: &PeerVersion) {
        self.wants_address_v2 = version.wants_address_v2;
        if self.connection.is_inbound() {
            return;
        }
        self.settings.book.lock().mark_good(&self.peer, version.services, unix_seconds());
        if self.connection.relays_addresses() {
            self.outgoing.push(NetworkMessage::GetAddress);
            self.getaddr_sent = true;
            self.tokens += ADDRESS_TOKENS_MAX;
        }
    }

    fn on_addresses(
        &mut self,
        mut entries: Vec<ReceivedEntry>,
        registry: &Registry,
        now: Instant,
    ) -> Result<Received, DisconnectReason> {
        if !self.connection.relays_addresses() {
            // Core: "ignoring addr message from block-relay-only peer".
            return Ok(Received::Nothing);
        }
        let count = entries.len();
        self.refill(now);
        self.random.shuffle(&mut entries);
        let now_seconds = unix_seconds();
        let mut accepted = Vec::with_capacity(count.min(ADDRESSES_PER_MESSAGE_MAX));
        // As Core's `ProcessAddrs`: only peers without the `addr`
        // permission are rate limited.
        let rate_limited = !self.address_permission;
        for entry in entries {
            if rate_limited {
                if self.tokens < 1.0 {
                    continue;
                }
                self.tokens -= 1.0;
            }
            if let Some(candidate) = self.acceptable(entry, registry, now_seconds) {
                accepted.push(candidate);
            }
        }
        let source = AddressSource::peer(self.peer, self.policy);
        self.settings.book.lock().add(
            &accepted,
            source,
            RELAYED_ADDRESS_PENALTY_SECONDS,
            now_seconds,
        );
        if count < ADDRESSES_PER_MESSAGE_MAX {
            self.getaddr_sent = false;
        }
        if self.connection == ConnectionType::AddressFetch && count > 1 {
            return Err(DisconnectReason::AddressFetchDone);
        }
        Ok(Received::Nothing)
    }

    /// Core's token refill: 0.1 a second since the last message, up to
    /// 1,000 (a bucket already past that, after a `getaddr`, is left).
    fn refill(&mut self, now: Instant) {
        if self.tokens < ADDRESS_TOKENS_MAX {
            let elapsed = now.saturating_duration_since(self.tokens_at).as_secs_f64();
            self.tokens =
                (self.tokens + elapsed * ADDRESS_TOKENS_PER_SECOND).min(ADDRESS_TOKENS_MAX);
        }
        self.tokens_at = now;
    }

    /// The entry as a candidate, if worth offering to the manager.
    fn acceptable(
        &self,
        entry: ReceivedEntry,
        registry: &Registry,
        now_seconds: i64,
    ) -> Option<AddressCandidate> {
        let full_node = ServiceFlags::NETWORK;
        let limited = ServiceFlags::NETWORK_LIMITED;
        if !entry.services.contains(full_node) && !entry.services.contains(limited) {
            return None;
        }
        let address = entry.address?;
        if !self.settings.stored_networks.contains(address.network()) {
            return None;
        }
        if address.ip().is_some_and(|ip| registry.is_banned(ip)) {
            return None;
        }
        let mut time_seconds = i64::from(entry.time_seconds);
        if time_seconds <= PLAUSIBLE_TIME_SECONDS_MIN
            || time_seconds > now_seconds + FUTURE_TIME_SLACK_SECONDS
        {
            time_seconds = now_seconds - IMPLAUSIBLE_TIME_AGE_SECONDS;
        }
        Some(AddressCandidate { address, services: entry.services, time_seconds })
    }

    fn on_getaddr(&mut self) {
        // Core: "Ignoring getaddr from outbound connection", "Ignoring
        // repeated getaddr".
        if !self.connection.is_inbound() || self.getaddr_answered {
            return;
        }
        self.getaddr_answered = true;
        // Core's `GETADDR` handler: `addr` peers get a fresh sample.
        let answer = if self.address_permission {
            self.settings.book.getaddr_answer_uncached(unix_seconds())
        } else {
            self.settings.book.getaddr_answer(unix_seconds())
        };
        let time = |candidate: &AddressCandidate| {
            u32::try_from(candidate.time_seconds.max(0)).unwrap_or(u32::MAX)
        };
        let message = if self.wants_address_v2 {
            let entries: Vec<AddressV2Entry> = answer
                .iter()
                .map(|candidate| AddressV2Entry {
                    time_seconds: time(candidate),
                    services: candidate.services,
                    address: candidate.address.to_v2(),
                    port: candidate.address.port(),
                })
                .collect();
            (!entries.is_empty()).then_some(NetworkMessage::AddressV2(entries))
        } else {
            let entries: Vec<AddressEntry> = answer
                .iter()
                .filter_map(|candidate| {
                    let address = candidate.address.to_v1(candidate.services)?;
                    Some(AddressEntry { time_seconds: time(candidate), address })
                })
                .collect();
            (!entries.is_empty()).then_some(NetworkMessage::Address(entries))
        };
        self.outgoing.extend(message);
    }
}
