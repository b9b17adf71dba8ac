//! The five chains Core knows, by the names its `-chain=` option takes.

use std::fmt;
use std::str::FromStr;

/// A Bitcoin chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Network {
    /// The main network.
    Main,
    /// Testnet version 3 (`-testnet`).
    Testnet3,
    /// Testnet version 4 (`-testnet4`, BIP94).
    Testnet4,
    /// Signet (BIP325), by default the global default signet.
    Signet,
    /// Regression test: private chains with trivial proof of work.
    Regtest,
}

/// A chain name Core does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown chain {name:?} (expected main, test, testnet4, signet or regtest)")]
pub struct UnknownNetwork {
    /// The name given.
    pub name: String,
}

impl Network {
    /// Every network, in Core's `ChainType` order.
    pub const ALL: [Network; 5] =
        [Network::Main, Network::Testnet3, Network::Testnet4, Network::Signet, Network::Regtest];

    /// Core's chain name (`ChainTypeToString`), as `-chain=` takes it and
    /// `getblockchaininfo` reports it.
    pub const fn name(self) -> &'static str {
        match self {
            Network::Main => "main",
            Network::Testnet3 => "test",
            Network::Testnet4 => "testnet4",
            Network::Signet => "signet",
            Network::Regtest => "regtest",
        }
    }

    /// The subdirectory of the data directory Core keeps this chain in
    /// (empty for main, which lives in the data directory itself).
    pub const fn data_dir_name(self) -> &'static str {
        match self {
            Network::Main => "",
            Network::Testnet3 => "testnet3",
            Network::Testnet4 => "testnet4",
            Network::Signet => "signet",
            Network::Regtest => "regtest",
        }
    }

    /// Core's default JSON-RPC port for this chain.
    pub const fn default_rpc_port(self) -> u16 {
        match self {
            Network::Main => 8332,
            Network::Testnet3 => 18332,
            Network::Testnet4 => 48332,
            Network::Signet => 38332,
            Network::Regtest => 18443,
        }
    }
}

impl FromStr for Network {
    type Err = UnknownNetwork;

    /// Parses Core's chain names exactly (`ChainTypeFromString`: case
    /// sensitive, `test` for testnet3).
    fn from_str(name: &str) -> Result<Network, UnknownNetwork> {
        Network::ALL
            .into_iter()
            .find(|network| network.name() == name)
            .ok_or_else(|| UnknownNetwork { name: name.to_owned() })
    }
}

impl fmt::Display for Network {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}
