//! The DNS seeds (Core's `ThreadDNSAddressSeed`, "dnsseed"):
//!
//! 1. with `-seednode`s, wait up to 30 s for them to bring 2 full-relay
//!    peers; if they do, the seeds are not needed;
//! 2. shuffle the seeds; with an empty address manager, query them all at
//!    once; otherwise, while fewer than 2 full-relay peers are connected,
//!    wait (11 s, or 5 minutes with 1,000 addresses or more, checking every
//!    11 s whether peers came) and query 3, then 3 more, ...;
//! 3. a query resolves `x9.<seed>` (nodes with `NODE_NETWORK |
//!    NODE_WITNESS`) through the system resolver (tokio's `lookup_host`),
//!    takes at most 32 addresses with the network's port, a last-seen time
//!    3 to 7 days ago and the seed's name as their source; a seed that
//!    answers nothing for the filtered name is queued for an addr-fetch
//!    connection to its plain name instead.
//!
//! Log lines are Core's ("Loading addresses from DNS seed ...", "N
//! addresses found from DNS seeds", "P2P peers available. Skipped DNS
//! seeding.", ...).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::addrman::{AddressCandidate, AddressSource, FastRandom, PeerAddress};
use crate::net::connection_type::ConnectionType;
use crate::net::discovery::open_connections::SEED_OUTBOUND_CONNECTIONS_THRESHOLD;
use crate::net::discovery::{resolve, Discovery};
use crate::net::registry::{unix_seconds, Registry};
use crate::services::ServiceFlags;

/// Seeds queried together once some addresses are known (Core's
/// `DNSSEEDS_TO_QUERY_AT_ONCE`).
const SEEDS_AT_ONCE: usize = 3;
/// Addresses taken from one seed at most (Core's 32: one seed must not
/// dominate the address manager).
pub const ADDRESSES_PER_SEED_MAX: usize = 32;
/// Known addresses from which the long delay applies (Core's
/// `DNSSEEDS_DELAY_PEER_THRESHOLD`).
const MANY_ADDRESSES: usize = 1000;
/// How often the wait for seed nodes checks for peers (Core: 500 ms).
const SEED_NODE_CHECK_INTERVAL: Duration = Duration::from_millis(500);
/// Seed answers get a last-seen time this many seconds ago, at least...
const SEED_ADDRESS_AGE_SECONDS_MIN: i64 = 3 * 24 * 60 * 60;
/// ...plus up to this much more (3 to 7 days, Core's random age).
const SEED_ADDRESS_AGE_JITTER_SECONDS: u64 = 4 * 24 * 60 * 60;

/// Full-relay peers whose handshake is complete.
fn full_relay_peers(registry: &Registry) -> usize {
    registry
        .outbound_connections()
        .iter()
        .filter(|outbound| {
            outbound.connection == ConnectionType::OutboundFullRelay && outbound.handshake_complete
        })
        .count()
}

/// Sleeps `duration` unless the layer shuts down first (then false).
async fn pause(registry: &Registry, duration: Duration) -> bool {
    let mut shutdown = registry.shutdown_signal();
    if registry.is_shut_down() {
        return false;
    }
    tokio::select! {
        _ = shutdown.changed() => false,
        () = tokio::time::sleep(duration) => !registry.is_shut_down(),
    }
}

/// Runs the DNS seeding to its end.
pub(crate) async fn query_dns_seeds(discovery: Arc<Discovery>, registry: Arc<Registry>) {
    discovery.log.log("dnsseed thread start");
    seed(&discovery, &registry).await;
    discovery.log.log("dnsseed thread exit");
}

async fn seed(discovery: &Discovery, registry: &Registry) {
    if !discovery.config.seed_nodes.is_empty() && !wait_for_seed_nodes(discovery, registry).await {
        return;
    }
    let mut random = FastRandom::from_os().unwrap_or_else(|_| FastRandom::from_seed(&[1; 32]));
    let mut seeds = discovery.config.dns_seeds.clone().unwrap_or_default();
    random.shuffle(&mut seeds);
    let mut right_now = if discovery.book.is_empty() { seeds.len() } else { 0 };
    if full_relay_peers(registry) >= SEED_OUTBOUND_CONNECTIONS_THRESHOLD && right_now == 0 {
        discovery.log.log("Skipping DNS seeds. Enough peers have been found");
        return;
    }
    let timing = discovery.config.timing;
    let wait = if discovery.book.len() >= MANY_ADDRESSES {
        timing.dns_seed_delay_many
    } else {
        timing.dns_seed_delay_few
    };
    let mut found = 0;
    for seed in seeds {
        if right_now == 0 {
            right_now += SEEDS_AT_ONCE;
            if !discovery.book.is_empty() {
                match wait_for_peers(discovery, registry, wait, found).await {
                    WaitOutcome::Continue => {}
                    WaitOutcome::Done | WaitOutcome::Stopped => return,
                }
            }
        }
        if registry.is_shut_down() {
            return;
        }
        found += query_seed(discovery, &seed, &mut random).await;
        right_now -= 1;
    }
    discovery.log.log(&format!("{found} addresses found from DNS seeds"));
}

/// Core's 30 s for seed nodes; false when the layer stopped meanwhile.
async fn wait_for_seed_nodes(discovery: &Discovery, registry: &Registry) -> bool {
    let timing = discovery.config.timing;
    discovery.log.log(&format!(
        "-seednode enabled. Trying the provided seeds for {} seconds before defaulting to the dnsseeds.",
        timing.seed_node_wait.as_secs()
    ));
    let started = Instant::now();
    loop {
        if !pause(registry, SEED_NODE_CHECK_INTERVAL).await {
            return false;
        }
        if started.elapsed() > timing.seed_node_wait {
            discovery.log.log("Couldn't connect to enough peers via seed nodes. Handing fetch logic to the DNS seeds.");
            return true;
        }
        if full_relay_peers(registry) >= SEED_OUTBOUND_CONNECTIONS_THRESHOLD {
            discovery.log.log("P2P peers available. Finished fetching data from seed nodes.");
            return true;
        }
    }
}

enum WaitOutcome {
    Continue,
    Done,
    Stopped,
}

/// Waits `wait` before the next seeds, in 11 s steps; done early when
/// enough full-relay peers came.
async fn wait_for_peers(
    discovery: &Discovery,
    registry: &Registry,
    wait: Duration,
    found: usize,
) -> WaitOutcome {
    discovery.log.log(&format!("Waiting {} seconds before querying DNS seeds.", wait.as_secs()));
    let step = discovery.config.timing.dns_seed_delay_few;
    let mut left = wait;
    while !left.is_zero() {
        let this_step = step.min(left);
        if !pause(registry, this_step).await {
            return WaitOutcome::Stopped;
        }
        left = left.saturating_sub(this_step);
        if full_relay_peers(registry) >= SEED_OUTBOUND_CONNECTIONS_THRESHOLD {
            if found > 0 {
                discovery.log.log(&format!("{found} addresses found from DNS seeds"));
                discovery.log.log("P2P peers available. Finished DNS seeding.");
            } else {
                discovery.log.log("P2P peers available. Skipped DNS seeding.");
            }
            return WaitOutcome::Done;
        }
    }
    WaitOutcome::Continue
}

/// Queries one seed; returns the addresses it gave.
async fn query_seed(discovery: &Discovery, seed: &str, random: &mut FastRandom) -> usize {
    discovery.log.log(&format!("Loading addresses from DNS seed {seed}"));
    let config = &discovery.config;
    let wanted = ServiceFlags::NETWORK | ServiceFlags::WITNESS;
    let filtered_name = format!("x{:x}.{seed}", wanted.bits());
    let resolved =
        resolve(&filtered_name, config.default_port, config.timing.resolve_timeout).await;
    if resolved.is_empty() {
        discovery.queue_address_fetch(seed.to_owned());
        return 0;
    }
    let now_seconds = unix_seconds();
    let candidates: Vec<AddressCandidate> = resolved
        .into_iter()
        .take(ADDRESSES_PER_SEED_MAX)
        .map(PeerAddress::from_socket_address)
        .filter(|address| discovery.stored_networks.contains(address.network()))
        .map(|address| AddressCandidate {
            address,
            services: wanted,
            time_seconds: now_seconds
                - SEED_ADDRESS_AGE_SECONDS_MIN
                - random.below(SEED_ADDRESS_AGE_JITTER_SECONDS) as i64,
        })
        .collect();
    let source = AddressSource::named(&filtered_name);
    discovery.book.lock().add(&candidates, source, 0, now_seconds);
    candidates.len()
}
