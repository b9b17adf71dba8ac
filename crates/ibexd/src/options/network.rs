//! The P2P and RPC options, typed with Core's defaults and interplay
//! (`init.cpp`'s `InitParameterInteraction` and `AppInitMain`, `net.h`,
//! `httpserver.h`): what the networking and the RPC server are started
//! with.
//!
//! - `-connect` given (even `-connect=0`) turns `-listen` and `-dnsseed`
//!   off unless they are given, as Core's soft settings do; `-connect=0`
//!   (or `-noconnect`) means no outbound connections at all.
//! - `bitcoind` runs its RPC server by default (`-server` soft-set true);
//!   REST only with `-rest`.
//! - Ports default per chain: P2P from the chain's parameters, RPC from
//!   [`Network::default_rpc_port`].
//! - `ibexd` stays up after its import whatever these options say, as
//!   `bitcoind` does: with nobody to connect to and `-listen=0` it idles,
//!   answering RPC, until a signal, the `stop` RPC or `-stopatheight`.

use ibex_p2p::net::discovery::seeds::dns_seeds;
use ibex_p2p::net::whitelist::Whitelist;
use ibex_primitives::{Network, Params};

use super::error::ConfigError;
use super::rules::OptionSource;
use super::settings::SettingValue;

/// Core's `DEFAULT_MAX_PEER_CONNECTIONS`.
pub const MAX_CONNECTIONS_DEFAULT: usize = 125;
/// Core's `DEFAULT_HTTP_THREADS`.
pub const RPC_THREADS_DEFAULT: usize = 16;
/// Core's `DEFAULT_HTTP_WORKQUEUE`.
pub const RPC_WORK_QUEUE_DEFAULT: usize = 64;
/// Core's `DEFAULT_HTTP_SERVER_TIMEOUT`, seconds.
pub const RPC_SERVER_TIMEOUT_SECONDS_DEFAULT: u64 = 30;
/// The networks `-onlynet` accepts (Core's `ParseNetwork` names).
pub const ONLY_NET_NAMES: [&str; 5] = ["ipv4", "ipv6", "onion", "i2p", "cjdns"];

/// The P2P options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkOptions {
    /// `-connect` addresses (`HOST[:PORT]`): when any is given, the only
    /// outbound connections.
    pub connect: Vec<String>,
    /// `-connect=0` / `-noconnect`: no outbound connections.
    pub outbound_disabled: bool,
    /// `-addnode` addresses, kept connected besides the others.
    pub add_nodes: Vec<String>,
    /// `-seednode` addresses, asked for addresses then left.
    pub seed_nodes: Vec<String>,
    /// `-listen` (default: on unless `-connect` is given).
    pub listen: bool,
    /// `-bind` addresses (default: every interface on `port`).
    pub bind: Vec<String>,
    /// `-port` (default: the chain's).
    pub port: u16,
    /// `-maxconnections` (default 125).
    pub max_connections: usize,
    /// `-onlynet` networks (empty: all).
    pub only_networks: Vec<String>,
    /// `-dnsseed` (default: on unless `-connect` is given).
    pub dns_seed: bool,
    /// `-fixedseeds` (default on), and false on a signet of its own
    /// (`-signetchallenge`), which has no fixed seeds (Core's
    /// `SigNetParams` clears them).
    pub fixed_seeds: bool,
    /// The chain's DNS seeds (Core's `vSeeds`): the network's own, none on
    /// a signet of its own, and on signet the `-signetseednode` hosts in
    /// their place when given.
    pub chain_dns_seeds: Vec<String>,
    /// `-v2transport` (default on, as Core since v28).
    pub v2_transport: bool,
    /// `-peerblockspentcoins` (default off): serve BIP 455 spent coins
    /// (`getbspent`) and announce it with BIP 434's `feature`, which also
    /// raises our protocol version to 70017.
    pub peer_block_spent_coins: bool,
    /// `-whitelist` entries (Core's `NetWhitelistPermissions`).
    pub whitelist: Whitelist,
    /// `-blocksonly` (Ibex relays no transactions either way; it also
    /// announces `relay=false`).
    pub blocks_only: bool,
    /// `-test=evictionloopbackgroups` (regtest only): inbound loopback
    /// addresses are grouped for eviction by their /16, as routable IPv4
    /// would be, so tests can play many hosts from one machine.
    pub eviction_loopback_groups: bool,
    /// `-test=discourageloopback` (regtest only): misbehaving peers from
    /// loopback addresses other than `127.0.0.1` are discouraged as
    /// routable ones would be, so tests can play many hosts from one
    /// machine (Core spares every local address).
    pub loopback_discouraged: bool,
    /// `-test=fastfeelers` (regtest only): feeler connections every second
    /// on average instead of every 2 minutes, so tests can watch the
    /// address manager's test-before-evict without waiting.
    pub fast_feelers: bool,
}

impl NetworkOptions {
    /// Whether outbound connections are chosen from the address manager:
    /// neither `-connect=ADDR` nor `-connect=0` given (Core's
    /// `m_use_addrman_outgoing`).
    pub fn automatic_outbound(&self) -> bool {
        self.connect.is_empty() && !self.outbound_disabled
    }
}

/// The RPC server's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcOptions {
    /// `-server` (default on for the daemon).
    pub server: bool,
    /// `-rest` (default off).
    pub rest: bool,
    /// `-rpcport` (default: the chain's).
    pub port: u16,
    /// `-rpcbind` addresses (default: localhost only).
    pub bind: Vec<String>,
    /// `-rpcallowip` subnets (default: localhost only).
    pub allow_ip: Vec<String>,
    /// `-rpcuser`.
    pub user: Option<String>,
    /// `-rpcpassword`.
    pub password: Option<String>,
    /// `-rpcauth` lines (`user:salt$hash`).
    pub auth: Vec<String>,
    /// `-rpccookiefile` (default `.cookie` in the chain directory), `None`
    /// for `-norpccookiefile`.
    pub cookie_file: Option<String>,
    /// `-rpcthreads` (at least 1, default 16).
    pub threads: usize,
    /// `-rpcworkqueue` (at least 1, default 64).
    pub work_queue: usize,
    /// `-rpcservertimeout` in seconds (at least 1, default 30): how long an
    /// idle keep-alive connection, or a request's headers or body, may take.
    pub server_timeout_seconds: u64,
}

fn boolean(source: &impl OptionSource, name: &str, default: bool) -> bool {
    source.option(name).map_or(default, |value| value.to_bool())
}

/// The texts of `name`, leaving out negations (`-noaddnode`).
fn texts(source: &impl OptionSource, name: &str) -> Vec<String> {
    source
        .options(name)
        .into_iter()
        .filter_map(|value| match value {
            SettingValue::Text(text) if !text.is_empty() => Some(text),
            _ => None,
        })
        .collect()
}

fn optional_text(source: &impl OptionSource, name: &str) -> Option<String> {
    match source.option(name)? {
        SettingValue::Text(text) => Some(text),
        SettingValue::Bool(_) => None,
    }
}

/// A port: Core refuses anything but 1-65535 (`Invalid port specified in
/// -port`).
fn port(source: &impl OptionSource, name: &'static str, default: u16) -> Result<u16, ConfigError> {
    let Some(value) = source.option(name) else { return Ok(default) };
    let text = value.to_text();
    match text.parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(ConfigError::InvalidValue { name, value: text }),
    }
}

/// A count of at least `minimum` (Core clamps thread and queue counts up).
fn count(source: &impl OptionSource, name: &str, default: usize, minimum: usize) -> usize {
    source.option(name).map_or(default, |value| {
        usize::try_from(value.to_integer().max(0)).unwrap_or(usize::MAX).max(minimum)
    })
}

/// The `-test` option that splits loopback addresses into eviction
/// groups.
pub(crate) const EVICTION_LOOPBACK_GROUPS: &str = "evictionloopbackgroups";

/// The `-test` option that discourages misbehaving loopback peers other
/// than `127.0.0.1`.
pub(crate) const DISCOURAGE_LOOPBACK: &str = "discourageloopback";

/// The `-test` option that shortens the mean time between feelers.
pub(crate) const FAST_FEELERS: &str = "fastfeelers";

/// The P2P options of `network` from `source`.
pub(crate) fn network_options(
    source: &impl OptionSource,
    params: &Params,
) -> Result<NetworkOptions, ConfigError> {
    let connect_given = source.option("connect").is_some();
    let connect = texts(source, "connect");
    // `-connect=0` and `-noconnect` both mean no outbound connections.
    let outbound_disabled = connect_given && connect.iter().all(|address| address == "0");
    let only_networks = texts(source, "onlynet");
    if let Some(unknown) =
        only_networks.iter().find(|name| !ONLY_NET_NAMES.contains(&name.to_lowercase().as_str()))
    {
        return Err(ConfigError::InvalidValue { name: "onlynet", value: unknown.clone() });
    }
    let connect: Vec<String> = connect.into_iter().filter(|address| address != "0").collect();
    let add_nodes = texts(source, "addnode");
    let whitelist_texts = texts(source, "whitelist");
    let whitelist = Whitelist::parse(&whitelist_texts).map_err(|error| {
        ConfigError::InvalidValue { name: "whitelist", value: error.to_string() }
    })?;
    let seed_nodes = texts(source, "seednode");
    let (chain_dns_seeds, chain_has_fixed_seeds) = chain_seeds(source, params);
    let dns_seed = boolean(source, "dnsseed", !connect_given);
    Ok(NetworkOptions {
        connect,
        outbound_disabled,
        add_nodes,
        seed_nodes,
        listen: boolean(source, "listen", !connect_given),
        bind: texts(source, "bind"),
        port: port(source, "port", params.default_port)?,
        max_connections: count(source, "maxconnections", MAX_CONNECTIONS_DEFAULT, 0),
        only_networks: only_networks.iter().map(|name| name.to_lowercase()).collect(),
        dns_seed,
        fixed_seeds: chain_has_fixed_seeds && boolean(source, "fixedseeds", true),
        chain_dns_seeds,
        v2_transport: boolean(source, "v2transport", true),
        blocks_only: boolean(source, "blocksonly", false),
        peer_block_spent_coins: boolean(source, "peerblockspentcoins", false),
        whitelist,
        eviction_loopback_groups: params.network == Network::Regtest
            && texts(source, "test").iter().any(|option| option == EVICTION_LOOPBACK_GROUPS),
        loopback_discouraged: params.network == Network::Regtest
            && texts(source, "test").iter().any(|option| option == DISCOURAGE_LOOPBACK),
        fast_feelers: params.network == Network::Regtest
            && texts(source, "test").iter().any(|option| option == FAST_FEELERS),
    })
}

/// The chain's DNS seeds and whether it has fixed seeds (Core's
/// `SigNetParams`: a signet with its own challenge has neither, and
/// `-signetseednode` replaces the DNS seeds on any signet).
fn chain_seeds(source: &impl OptionSource, params: &Params) -> (Vec<String>, bool) {
    let network_seeds = || dns_seeds(params.network).iter().map(|seed| seed.to_string()).collect();
    if params.network != Network::Signet {
        return (network_seeds(), true);
    }
    let own_challenge = params.is_custom_signet();
    let seed_nodes = texts(source, "signetseednode");
    let seeds = match (seed_nodes.is_empty(), own_challenge) {
        (false, _) => seed_nodes,
        (true, true) => Vec::new(),
        (true, false) => network_seeds(),
    };
    (seeds, !own_challenge)
}

/// The RPC options of `network` from `source`.
pub(crate) fn rpc_options(
    source: &impl OptionSource,
    network: Network,
) -> Result<RpcOptions, ConfigError> {
    let cookie_file = match source.option("rpccookiefile") {
        Some(SettingValue::Bool(false)) => None,
        Some(SettingValue::Text(text)) if !text.is_empty() => Some(text),
        _ => Some(".cookie".to_owned()),
    };
    Ok(RpcOptions {
        server: boolean(source, "server", true),
        rest: boolean(source, "rest", false),
        port: port(source, "rpcport", network.default_rpc_port())?,
        bind: texts(source, "rpcbind"),
        allow_ip: texts(source, "rpcallowip"),
        user: optional_text(source, "rpcuser"),
        password: optional_text(source, "rpcpassword"),
        auth: texts(source, "rpcauth"),
        cookie_file,
        threads: count(source, "rpcthreads", RPC_THREADS_DEFAULT, 1),
        work_queue: count(source, "rpcworkqueue", RPC_WORK_QUEUE_DEFAULT, 1),
        server_timeout_seconds: count(
            source,
            "rpcservertimeout",
            RPC_SERVER_TIMEOUT_SECONDS_DEFAULT as usize,
            1,
        ) as u64,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;

    /// Options as a command line gives them.
    #[derive(Default)]
    struct Given(BTreeMap<&'static str, Vec<SettingValue>>);

    impl Given {
        fn with(mut self, name: &'static str, value: &str) -> Given {
            self.0.entry(name).or_default().push(SettingValue::Text(value.to_owned()));
            self
        }

        fn negated(mut self, name: &'static str) -> Given {
            self.0.entry(name).or_default().push(SettingValue::Bool(false));
            self
        }
    }

    impl OptionSource for Given {
        fn option(&self, name: &str) -> Option<SettingValue> {
            self.0.get(name).and_then(|values| values.last().cloned())
        }

        fn options(&self, name: &str) -> Vec<SettingValue> {
            self.0.get(name).cloned().unwrap_or_default()
        }
    }

    #[test]
    fn defaults_follow_the_chain() {
        for (params, p2p_port, rpc_port) in
            [(Params::main(), 8333, 8332), (Params::regtest(), 18444, 18443)]
        {
            let network = network_options(&Given::default(), &params).unwrap();
            assert_eq!(network.port, p2p_port);
            assert!(network.listen && network.dns_seed && network.v2_transport);
            assert!(!network.outbound_disabled && network.connect.is_empty());
            assert_eq!(network.max_connections, 125);
            let rpc = rpc_options(&Given::default(), params.network).unwrap();
            assert_eq!(rpc.port, rpc_port);
            assert!(rpc.server && !rpc.rest);
            assert_eq!((rpc.threads, rpc.work_queue), (16, 64));
            assert_eq!(rpc.cookie_file.as_deref(), Some(".cookie"));
        }
    }

    #[test]
    fn connect_turns_off_listening_and_seeds_unless_given() {
        let params = Params::regtest();
        let only = network_options(&Given::default().with("connect", "127.0.0.1:1"), &params);
        let only = only.unwrap();
        assert_eq!(only.connect, vec!["127.0.0.1:1".to_owned()]);
        assert!(!only.listen && !only.dns_seed && !only.outbound_disabled);
        let none = network_options(&Given::default().with("connect", "0"), &params).unwrap();
        assert!(none.outbound_disabled && none.connect.is_empty() && !none.listen);
        let negated = network_options(&Given::default().negated("connect"), &params).unwrap();
        assert!(negated.outbound_disabled);
        let listening = Given::default().with("connect", "0").with("listen", "1");
        assert!(network_options(&listening, &params).unwrap().listen);
    }

    #[test]
    fn outbound_is_automatic_unless_connect_decides_the_peers() {
        let params = Params::regtest();
        let plain = network_options(&Given::default(), &params).unwrap();
        assert!(plain.automatic_outbound());
        let none = network_options(&Given::default().with("connect", "0"), &params).unwrap();
        assert!(!none.automatic_outbound());
    }

    #[test]
    fn bad_values_are_refused_and_counts_clamped() {
        let params = Params::regtest();
        for bad in ["0", "65536", "abc", "-1"] {
            let error = network_options(&Given::default().with("port", bad), &params).unwrap_err();
            assert_eq!(error.to_string(), format!("Invalid value for -port: {bad}"));
        }
        let error = network_options(&Given::default().with("onlynet", "carrier-pigeon"), &params);
        assert!(error.is_err());
        let ok = network_options(&Given::default().with("onlynet", "IPv4"), &params).unwrap();
        assert_eq!(ok.only_networks, vec!["ipv4".to_owned()]);
        let rpc = Given::default().with("rpcthreads", "0").with("rpcworkqueue", "-5");
        let rpc = rpc_options(&rpc, Network::Regtest).unwrap();
        assert_eq!((rpc.threads, rpc.work_queue), (1, 1));
        let timeouts = |given: Given| rpc_options(&given, Network::Regtest).unwrap();
        assert_eq!(timeouts(Given::default()).server_timeout_seconds, 30);
        let given = Given::default().with("rpcservertimeout", "5");
        assert_eq!(timeouts(given).server_timeout_seconds, 5);
        let given = Given::default().with("rpcservertimeout", "0");
        assert_eq!(timeouts(given).server_timeout_seconds, 1);
        let no_cookie = rpc_options(&Given::default().negated("rpccookiefile"), Network::Main);
        assert_eq!(no_cookie.unwrap().cookie_file, None);
        let no_server = rpc_options(&Given::default().with("server", "0"), Network::Main);
        assert!(!no_server.unwrap().server);
    }
}
