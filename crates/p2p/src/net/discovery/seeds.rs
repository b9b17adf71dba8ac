//! Where a node with no addresses starts: the DNS seeds (host names run by
//! known operators, listed per network as in Core's chain parameters:
//! protocol facts) and the fixed seeds.
//!
//! The fixed seed lists are empty on purpose: Core's are a snapshot of
//! reachable nodes it generates from its own crawler data, and this
//! project copies no data from Core. The code path that uses them
//! (after 60 s with no address of a dialed network, see
//! [`super::open_connections`]) is in place and tested with addresses
//! given by the test; a list of our own could be filled in here (for
//! example from DNS seed answers collected at release time).

use std::net::SocketAddr;

use ibex_primitives::params::Network;

/// Mainnet's DNS seeds.
const MAIN_DNS_SEEDS: &[&str] = &[
    "seed.bitcoin.sipa.be",
    "dnsseed.bluematt.me",
    "dnsseed.bitcoin.dashjr-list-of-p2p-nodes.us",
    "seed.bitcoin.jonasschnelli.ch",
    "seed.btc.petertodd.net",
    "seed.bitcoin.sprovoost.nl",
    "dnsseed.emzy.de",
    "seed.bitcoin.wiz.biz",
    "seed.mainnet.achownodes.xyz",
];

/// Testnet3's DNS seeds.
const TESTNET3_DNS_SEEDS: &[&str] = &[
    "testnet-seed.bitcoin.jonasschnelli.ch",
    "seed.tbtc.petertodd.net",
    "seed.testnet.bitcoin.sprovoost.nl",
    "testnet-seed.bluematt.me",
    "seed.testnet.achownodes.xyz",
];

/// Testnet4's DNS seeds.
const TESTNET4_DNS_SEEDS: &[&str] =
    &["seed.testnet4.bitcoin.sprovoost.nl", "seed.testnet4.wiz.biz"];

/// The default signet's DNS seeds.
const SIGNET_DNS_SEEDS: &[&str] =
    &["seed.signet.bitcoin.sprovoost.nl", "seed.signet.achownodes.xyz"];

/// The DNS seeds of `network` (none on regtest).
pub fn dns_seeds(network: Network) -> &'static [&'static str] {
    match network {
        Network::Main => MAIN_DNS_SEEDS,
        Network::Testnet3 => TESTNET3_DNS_SEEDS,
        Network::Testnet4 => TESTNET4_DNS_SEEDS,
        Network::Signet => SIGNET_DNS_SEEDS,
        Network::Regtest => &[],
    }
}

/// The fixed seeds of `network`: empty for every network (see the module
/// docs).
pub fn fixed_seeds(network: Network) -> &'static [SocketAddr] {
    match network {
        Network::Main | Network::Testnet3 | Network::Testnet4 | Network::Signet => &[],
        Network::Regtest => &[],
    }
}
