//! Which inbound connection makes room for a new one when the inbound
//! slots are full (Core's `SelectNodeToEvict`, node/eviction.cpp).
//!
//! An attacker who can open many connections must not be able to hold
//! every inbound slot: a new connection is refused only when every
//! inbound peer is protected. Protected, in Core's order, are the peers
//! an attacker cannot easily imitate:
//!
//! 1. 4 by keyed network group (the highest keyed hashes: which groups
//!    win is secret, so an attacker cannot pick its addresses to match);
//! 2. the 8 with the lowest minimum ping (distance cannot be faked);
//! 3. 4 by most recent novel transaction (Ibex has no mempool: all tie at
//!    never, so Core's tie-breaks decide: tx relay, then longevity);
//! 4. up to 8 peers that relay no transactions but all the services we
//!    want, by most recent novel block;
//! 5. 4 by most recent novel block (useful work);
//! 6. half of the rest by longevity, up to half of those reserved for
//!    local and privacy-network peers (Core's
//!    `ProtectEvictionCandidatesByRatio`).
//!
//! Of the rest, peers preferred for eviction (discouraged addresses) are
//! considered alone if any; then the network group with the most
//! connections (the youngest member breaking ties) loses its youngest
//! connection. So one group's flood evicts its own connections, and an
//! honest peer from another group keeps its slot.
//!
//! At most 114 inbound candidates: each selection sorts them 7 times,
//! a few microseconds under the registry's lock.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::addrman::{AddressNetwork, AddressPolicy, NetworkGroup, PeerAddress};
use crate::sync::PeerId;

/// Peers protected by keyed network group (Core: 4).
const PROTECTED_BY_GROUP: usize = 4;
/// Peers protected by lowest minimum ping (Core: 8).
const PROTECTED_BY_PING: usize = 8;
/// Peers protected by most recent novel transaction (Core: 4).
const PROTECTED_BY_TRANSACTION: usize = 4;
/// Block-relay peers protected by most recent novel block (Core: 8).
const PROTECTED_BLOCK_RELAY: usize = 8;
/// Peers protected by most recent novel block (Core: 4).
const PROTECTED_BY_BLOCK: usize = 4;

/// What eviction weighs of one inbound connection (Core's
/// `NodeEvictionCandidate`; Ibex has no bloom filters and relays no
/// transactions; `noban` peers are never candidates, as Core's
/// `ProtectNoBanConnections` removes them before any protection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EvictionCandidate {
    pub id: PeerId,
    /// When it connected.
    pub connected: Instant,
    /// Its fastest ping; `None` (never answered) sorts as the slowest.
    pub min_ping: Option<Duration>,
    /// When it last sent a block new to us.
    pub last_block: Option<Instant>,
    /// Whether it announced every service we want (Core's
    /// `m_has_all_wanted_services`).
    pub relevant_services: bool,
    /// Whether it asked for transactions (its `version`'s relay flag).
    pub relays_transactions: bool,
    /// Its network group under a secret key (Core's `nKeyedNetGroup`).
    pub keyed_group: u64,
    /// From a discouraged address (Core's `m_prefer_evict`).
    pub prefer_evict: bool,
    /// From a local address (Core's `m_is_local`).
    pub is_local: bool,
    /// The network it connected over.
    pub network: AddressNetwork,
}

/// How inbound connections are grouped for eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EvictionGrouping {
    /// Core's `GetGroup`: IPv4 by /16, IPv6 by /32, and every local or
    /// unroutable address in one group.
    #[default]
    Core,
    /// As `Core`, but a loopback IPv4 address is grouped by its /16 as a
    /// routable one would be (`127.a.b.c` in group `127.a`): a test seam
    /// for playing many hosts from one machine (regtest's
    /// `-test=evictionloopbackgroups`).
    LoopbackBySlash16,
}

impl EvictionGrouping {
    /// The group of a connection from `address`.
    pub(crate) fn group(self, address: SocketAddr) -> NetworkGroup {
        let peer = PeerAddress::from_socket_address(address);
        if let (EvictionGrouping::LoopbackBySlash16, std::net::IpAddr::V4(ipv4)) =
            (self, crate::net::address::canonical_ip(address.ip()))
        {
            if ipv4.is_loopback() {
                let octets = ipv4.octets();
                return NetworkGroup::ipv4_slash16([octets[0], octets[1]]);
            }
        }
        NetworkGroup::of(&peer, AddressPolicy::default())
    }
}

/// The group of `address` under `secret` (Core's
/// `CalculateKeyedNetGroup`): the first 8 bytes of SHA-256 over the
/// secret and the group's bytes.
pub(crate) fn keyed_group(secret: &[u8; 32], group: &NetworkGroup) -> u64 {
    let digest = ibex_primitives::hash::sha256_parts(&[&secret[..], group.as_bytes()]);
    let mut first = [0; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// The connection to close to make room, or `None` when every candidate
/// is protected (Core's `SelectNodeToEvict`).
pub(crate) fn select_to_evict(mut candidates: Vec<EvictionCandidate>) -> Option<PeerId> {
    use std::cmp::Ordering;
    // Each comparator orders the most evictable first; the last k are
    // protected (Core's `EraseLastKElements`).
    let by_group = |a: &EvictionCandidate, b: &EvictionCandidate| a.keyed_group.cmp(&b.keyed_group);
    let by_ping = |a: &EvictionCandidate, b: &EvictionCandidate| {
        let ping = |candidate: &EvictionCandidate| candidate.min_ping.unwrap_or(Duration::MAX);
        ping(b).cmp(&ping(a))
    };
    let by_transaction = |a: &EvictionCandidate, b: &EvictionCandidate| {
        // No transaction is ever novel: Core's tie-breaks alone.
        a.relays_transactions.cmp(&b.relays_transactions).then(younger_first(a, b))
    };
    let by_block_relay = |a: &EvictionCandidate, b: &EvictionCandidate| {
        b.relays_transactions.cmp(&a.relays_transactions).then_with(|| by_block(a, b))
    };
    protect_last(&mut candidates, by_group, PROTECTED_BY_GROUP, |_| true);
    protect_last(&mut candidates, by_ping, PROTECTED_BY_PING, |_| true);
    protect_last(&mut candidates, by_transaction, PROTECTED_BY_TRANSACTION, |_| true);
    protect_last(&mut candidates, by_block_relay, PROTECTED_BLOCK_RELAY, |candidate| {
        !candidate.relays_transactions && candidate.relevant_services
    });
    protect_last(&mut candidates, by_block, PROTECTED_BY_BLOCK, |_| true);
    protect_by_ratio(&mut candidates);
    if candidates.is_empty() {
        return None;
    }
    if candidates.iter().any(|candidate| candidate.prefer_evict) {
        candidates.retain(|candidate| candidate.prefer_evict);
    }
    // Youngest first after `protect_by_ratio`: the first of each group is
    // its youngest.
    let mut groups: HashMap<u64, (usize, Instant, PeerId)> = HashMap::new();
    let mut largest: Option<(usize, Instant, PeerId)> = None;
    for candidate in &candidates {
        let entry =
            groups.entry(candidate.keyed_group).or_insert((0, candidate.connected, candidate.id));
        entry.0 += 1;
        let (size, youngest, _) = *entry;
        let wins = largest.is_none_or(|(most, most_youngest, _)| {
            size > most || (size == most && youngest.cmp(&most_youngest) == Ordering::Greater)
        });
        if wins {
            largest = Some(*entry);
        }
    }
    largest.map(|(_, _, id)| id)
}

/// Younger connections first.
fn younger_first(a: &EvictionCandidate, b: &EvictionCandidate) -> std::cmp::Ordering {
    b.connected.cmp(&a.connected)
}

/// Core's `CompareNodeBlockTime`: older novel blocks first, then those
/// lacking services, then the younger.
fn by_block(a: &EvictionCandidate, b: &EvictionCandidate) -> std::cmp::Ordering {
    a.last_block
        .cmp(&b.last_block)
        .then(a.relevant_services.cmp(&b.relevant_services))
        .then_with(|| younger_first(a, b))
}

/// Sorts by `order` and removes those of the last `count` that match
/// `protected` (Core's `EraseLastKElements`).
fn protect_last(
    candidates: &mut Vec<EvictionCandidate>,
    order: impl Fn(&EvictionCandidate, &EvictionCandidate) -> std::cmp::Ordering,
    count: usize,
    protected: impl Fn(&EvictionCandidate) -> bool,
) {
    candidates.sort_by(order);
    let start = candidates.len() - count.min(candidates.len());
    let mut index = 0;
    candidates.retain(|candidate| {
        let keep = index < start || !protected(candidate);
        index += 1;
        keep
    });
}

/// A network Core reserves protected slots for: its peers tend to have
/// longer pings and would otherwise lose every other criterion.
#[derive(Debug, Clone, Copy)]
enum Disadvantaged {
    Local,
    Network(AddressNetwork),
}

impl Disadvantaged {
    fn contains(self, candidate: &EvictionCandidate) -> bool {
        match self {
            Disadvantaged::Local => candidate.is_local,
            Disadvantaged::Network(network) => candidate.network == network,
        }
    }

    /// Core's `CompareNodeNetworkTime`: others first, then this
    /// network's; the younger first within each.
    fn order(self, a: &EvictionCandidate, b: &EvictionCandidate) -> std::cmp::Ordering {
        self.contains(a).cmp(&self.contains(b)).then_with(|| younger_first(a, b))
    }
}

/// Protects half of `candidates` by longevity, up to half of those
/// reserved for disadvantaged networks, and leaves the rest youngest
/// first (Core's `ProtectEvictionCandidatesByRatio`).
fn protect_by_ratio(candidates: &mut Vec<EvictionCandidate>) {
    let initial = candidates.len();
    let protect_total = initial / 2;
    // Core's order: on equal counts, earlier networks recover unused
    // slots first.
    let mut networks: Vec<(Disadvantaged, usize)> = [
        Disadvantaged::Network(AddressNetwork::Cjdns),
        Disadvantaged::Network(AddressNetwork::I2p),
        Disadvantaged::Local,
        Disadvantaged::Network(AddressNetwork::Onion),
    ]
    .into_iter()
    .map(|network| {
        let count = candidates.iter().filter(|candidate| network.contains(candidate)).count();
        (network, count)
    })
    .collect();
    networks.sort_by_key(|&(_, count)| count);
    let protect_by_network_max = protect_total / 2;
    let mut protected = 0;
    while protected < protect_by_network_max {
        let with_peers = networks.iter().filter(|(_, count)| *count > 0).count();
        if with_peers == 0 {
            break;
        }
        let per_network = ((protect_by_network_max - protected) / with_peers).max(1);
        let mut protected_any = false;
        for (network, count) in networks.iter_mut() {
            if *count == 0 {
                continue;
            }
            let before = candidates.len();
            let network = *network;
            protect_last(
                candidates,
                |a, b| network.order(a, b),
                per_network,
                |candidate| network.contains(candidate),
            );
            let removed = before - candidates.len();
            if removed > 0 {
                protected_any = true;
                protected += removed;
                if protected >= protect_by_network_max {
                    break;
                }
                *count -= removed;
            }
        }
        if !protected_any {
            break;
        }
    }
    let remaining = protect_total.saturating_sub(protected);
    protect_last(candidates, younger_first, remaining, |_| true);
}

#[cfg(test)]
mod tests;
