//! `-metrics` and `-metricsallowremote`: where the metrics endpoint
//! listens, if anywhere.
//!
//! | value | listens on |
//! |---|---|
//! | not given, `-metrics=0`, `-nometrics` | nowhere (the default) |
//! | `-metrics`, `-metrics=1` | `127.0.0.1` on the chain's default port |
//! | `-metrics=PORT` (2-65535) | `127.0.0.1:PORT` |
//! | `-metrics=ADDR` | `ADDR` on the chain's default port |
//! | `-metrics=ADDR:PORT`, `-metrics=[IPV6]:PORT` | there (port 0: one the system picks, logged) |
//!
//! `ADDR` is an IP address or `localhost`. The default ports
//! ([`default_metrics_port`]) sit beside no port Bitcoin Core or the
//! common Prometheus exporters use: 9338 on mainnet, then 19338 (testnet3),
//! 49338 (testnet4), 39338 (signet) and 29338 (regtest), each chain's
//! leading digits as in Core's RPC ports.
//!
//! Metrics tell anyone who can read them how far the node is and how busy,
//! so an address other than loopback is refused unless
//! `-metricsallowremote=1` is given too, as Core refuses a non-local
//! `-rpcbind` without `-rpcallowip` (here an error at start, not a warning:
//! the operator asked for an endpoint and would otherwise not get one).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use ibex_primitives::Network;

use super::error::ConfigError;
use super::rules::OptionSource;
use super::settings::SettingValue;

/// The metrics endpoint's default port on `network`.
pub const fn default_metrics_port(network: Network) -> u16 {
    match network {
        Network::Main => 9338,
        Network::Testnet3 => 19338,
        Network::Testnet4 => 49338,
        Network::Signet => 39338,
        Network::Regtest => 29338,
    }
}

/// Where the metrics endpoint listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MetricsOptions {
    /// The address to listen on; `None` when `-metrics` is off.
    pub address: Option<SocketAddr>,
}

/// `-metrics` as the table in the module docs reads it; `Err` with the
/// value for anything else.
fn listen_address(text: &str, network: Network) -> Result<Option<SocketAddr>, ()> {
    let default_port = default_metrics_port(network);
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    if text.is_empty() {
        return Ok(Some(SocketAddr::new(loopback, default_port)));
    }
    if text.bytes().all(|byte| byte.is_ascii_digit()) {
        return match text.parse::<u16>().map_err(|_| ())? {
            0 => Ok(None),
            1 => Ok(Some(SocketAddr::new(loopback, default_port))),
            port => Ok(Some(SocketAddr::new(loopback, port))),
        };
    }
    let host = |text: &str| match text {
        "localhost" => Ok(loopback),
        _ => text.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().map_err(|_| ()),
    };
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(Some(address));
    }
    // `localhost:PORT`; an IPv6 address without brackets has more colons.
    if let Some((name, port)) = text.rsplit_once(':').filter(|(name, _)| !name.contains(':')) {
        let port = port.parse::<u16>().map_err(|_| ())?;
        return Ok(Some(SocketAddr::new(host(name)?, port)));
    }
    Ok(Some(SocketAddr::new(host(text)?, default_port)))
}

/// Whether `address` only this machine reaches (`127.0.0.0/8`, `::1`,
/// and `::ffff:127.0.0.0/104`).
fn is_loopback(address: IpAddr) -> bool {
    address.to_canonical().is_loopback()
}

/// `-metrics` and `-metricsallowremote` for `network` from `source`.
pub(crate) fn metrics_options(
    source: &impl OptionSource,
    network: Network,
) -> Result<MetricsOptions, ConfigError> {
    let address = match source.option("metrics") {
        None | Some(SettingValue::Bool(false)) => None,
        Some(SettingValue::Bool(true)) => listen_address("", network).ok().flatten(),
        Some(SettingValue::Text(text)) => listen_address(text.trim(), network)
            .map_err(|()| ConfigError::InvalidValue { name: "metrics", value: text.clone() })?,
    };
    let allow_remote = source.option("metricsallowremote").is_some_and(|value| value.to_bool());
    if let Some(address) = address.filter(|address| !is_loopback(address.ip()) && !allow_remote) {
        return Err(ConfigError::MetricsNotLoopback { address });
    }
    Ok(MetricsOptions { address })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    struct Given(Vec<(&'static str, SettingValue)>);

    impl OptionSource for Given {
        fn option(&self, name: &str) -> Option<SettingValue> {
            self.0.iter().rev().find(|(given, _)| *given == name).map(|(_, value)| value.clone())
        }

        fn options(&self, name: &str) -> Vec<SettingValue> {
            self.0
                .iter()
                .filter(|(given, _)| *given == name)
                .map(|(_, value)| value.clone())
                .collect()
        }
    }

    fn text(value: &str) -> SettingValue {
        SettingValue::Text(value.to_owned())
    }

    fn address_for(value: &str) -> Result<Option<SocketAddr>, ConfigError> {
        let given = Given(vec![("metrics", text(value))]);
        metrics_options(&given, Network::Regtest).map(|options| options.address)
    }

    #[test]
    fn values_follow_the_table() {
        let local = |port: u16| Some(SocketAddr::from(([127, 0, 0, 1], port)));
        assert_eq!(metrics_options(&Given(vec![]), Network::Main).unwrap().address, None);
        assert_eq!(address_for("0").unwrap(), None);
        let negated = Given(vec![("metrics", SettingValue::Bool(false))]);
        assert_eq!(metrics_options(&negated, Network::Main).unwrap().address, None);
        assert_eq!(address_for("").unwrap(), local(29338));
        assert_eq!(address_for("1").unwrap(), local(29338));
        assert_eq!(address_for("9100").unwrap(), local(9100));
        assert_eq!(address_for("127.0.0.1:9101").unwrap(), local(9101));
        assert_eq!(address_for("localhost:9102").unwrap(), local(9102));
        assert_eq!(address_for("localhost").unwrap(), local(29338));
        assert_eq!(address_for("127.0.0.2").unwrap(), Some("127.0.0.2:29338".parse().unwrap()));
        assert_eq!(address_for("[::1]:9103").unwrap(), Some("[::1]:9103".parse().unwrap()));
        assert_eq!(address_for("::1").unwrap(), Some("[::1]:29338".parse().unwrap()));
        assert_eq!(address_for("127.0.0.1:0").unwrap(), local(0));
        for bad in ["65536", "host.example:1", "127.0.0.1:x", "1.2.3", "[::1]:99999"] {
            let error = address_for(bad).unwrap_err();
            assert_eq!(error.to_string(), format!("Invalid value for -metrics: {bad}"));
        }
        assert_eq!(default_metrics_port(Network::Main), 9338);
    }

    #[test]
    fn other_machines_need_the_allow_option() {
        for remote in ["0.0.0.0:9104", "[::]:9104", "192.168.1.2", "[::ffff:10.0.0.1]:1"] {
            let error = address_for(remote).unwrap_err();
            assert!(error.to_string().contains("-metricsallowremote=1"), "{error}");
            let allowed = Given(vec![("metrics", text(remote)), ("metricsallowremote", text("1"))]);
            assert!(metrics_options(&allowed, Network::Main).unwrap().address.is_some());
            let refused = Given(vec![("metrics", text(remote)), ("metricsallowremote", text("0"))]);
            assert!(metrics_options(&refused, Network::Main).is_err());
        }
        // An IPv4 loopback address written as IPv6 is still loopback.
        assert!(address_for("[::ffff:127.0.0.1]:9105").unwrap().is_some());
    }
}
