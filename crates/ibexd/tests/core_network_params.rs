//! Ibex's network parameters against what Bitcoin Core's own `bitcoind`
//! prints, run when `IBEX_CORE_BIN` names a directory holding `bitcoind`
//! and `bitcoin-cli`; otherwise it says it was skipped. For every network:
//! the default P2P and RPC ports, minimum chain work and assumed-valid
//! block (`bitcoind -help -help-debug`), and from a running `bitcoind`
//! the chain's name, genesis hash and buried deployment heights
//! (`getblockchaininfo`, `getblockhash 0`, `getdeploymentinfo`).
//!
//! Ibex follows Core v30.0's values; a `bitcoind` of another version
//! (`scripts/build-core-bitcoind` builds the source the kernel crate
//! vendors) may have moved its minimum chain work and assumed-valid
//! blocks since, so those two are compared only when it says v30.0.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::{Network, Params};

/// `bitcoind`'s help for every option, whitespace collapsed.
fn core_help(binaries: &Path) -> String {
    let output =
        Command::new(binaries.join("bitcoind")).args(["-help", "-help-debug"]).output().unwrap();
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The per-chain defaults of `option` in the help: `default: A, testnet3:
/// B, ...)` after the option's name, by chain name as the help spells it.
fn defaults(help: &str, option: &str) -> Vec<(String, String)> {
    let start = help.find(&format!("{option} ")).unwrap_or_else(|| panic!("no {option}"));
    let rest = &help[start..];
    let open = rest.find("default: ").unwrap();
    let close = open + rest[open..].find(')').unwrap();
    rest[open..close]
        .split(", ")
        .map(|pair| {
            let (chain, value) = pair.split_once(": ").unwrap();
            (chain.to_owned(), value.to_owned())
        })
        .collect()
}

/// The help's name for `network`'s entry (`default` is mainnet).
fn help_name(network: Network) -> &'static str {
    match network {
        Network::Main => "default",
        Network::Testnet3 => "testnet3",
        Network::Testnet4 => "testnet4",
        Network::Signet => "signet",
        Network::Regtest => "regtest",
    }
}

fn default_for(pairs: &[(String, String)], network: Network) -> Option<String> {
    pairs.iter().find(|(chain, _)| chain == help_name(network)).map(|(_, value)| value.clone())
}

/// Whether the `bitcoind` is Core v30.0 itself.
fn is_v30(binaries: &Path) -> bool {
    let output = Command::new(binaries.join("bitcoind")).arg("-version").output().unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .is_some_and(|line| line.ends_with("v30.0.0"))
}

#[test]
fn help_defaults_are_ibexs_parameters() {
    let Some(binaries) = common::core_binaries("network parameters against bitcoind") else {
        return;
    };
    let help = core_help(&binaries);
    let ports = defaults(&help, "-port=<port>");
    let rpc_ports = defaults(&help, "-rpcport=<port>");
    let chain_work = defaults(&help, "-minimumchainwork=<hex>");
    let assume_valid = defaults(&help, "-assumevalid=<hex>");
    let v30 = is_v30(&binaries);
    if !v30 {
        eprintln!(
            "bitcoind is not v30.0: minimum chain work and assumed-valid blocks not compared"
        );
    }
    for network in Network::ALL {
        let params = Params::for_network(network);
        assert_eq!(
            default_for(&ports, network),
            Some(params.default_port.to_string()),
            "{network}"
        );
        assert_eq!(
            default_for(&rpc_ports, network),
            Some(network.default_rpc_port().to_string()),
            "{network}"
        );
        if !v30 || network == Network::Regtest {
            continue;
        }
        assert_eq!(
            default_for(&chain_work, network),
            Some(params.minimum_chain_work.to_string()),
            "{network}"
        );
        let expected =
            params.default_assume_valid.map_or_else(|| "0".repeat(64), |hash| hash.to_string());
        assert_eq!(default_for(&assume_valid, network), Some(expected), "{network}");
    }
}

/// A `bitcoind` on `network` with no peers and a free RPC port, the
/// answers to `calls`, then stopped.
fn core_answers(binaries: &Path, network: Network, calls: &[&[&str]]) -> Vec<serde_json::Value> {
    let root = tempfile::tempdir().unwrap();
    let datadir = format!("-datadir={}", root.path().display());
    let rpc_port = format!("-rpcport={}", common::free_port());
    let chain = format!("-chain={}", network.name());
    let quiet = ["-printtoconsole=0", "-listen=0", "-connect=0", "-dnsseed=0", "-fixedseeds=0"];
    let mut node = common::spawn_node(
        Command::new(binaries.join("bitcoind"))
            .args([&chain, &datadir, &rpc_port])
            .args(quiet)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let cli = |arguments: &[&str]| {
        let output = Command::new(binaries.join("bitcoin-cli"))
            .args([&chain, &datadir, &rpc_port])
            .args(arguments)
            .output()
            .unwrap();
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let ready = (0..600).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        cli(&["getblockcount"]).is_some()
    });
    assert!(ready, "bitcoind -chain={network} did not answer");
    let answers = calls
        .iter()
        .map(|call| {
            let text = cli(call).unwrap_or_else(|| panic!("{call:?} failed"));
            serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
        })
        .collect();
    let _ = cli(&["stop"]);
    assert!(common::wait_exit(&mut node, root.path()).success());
    answers
}

#[test]
fn a_running_bitcoind_agrees_on_each_network() {
    let Some(binaries) = common::core_binaries("network parameters against bitcoind") else {
        return;
    };
    let deployments = [
        ("bip34", BuriedDeployment::HeightInCoinbase),
        ("bip65", BuriedDeployment::CheckLockTimeVerify),
        ("bip66", BuriedDeployment::StrictDerSignatures),
        ("csv", BuriedDeployment::CheckSequenceVerify),
        ("segwit", BuriedDeployment::Segwit),
    ];
    for network in Network::ALL {
        let params = Params::for_network(network);
        let calls: [&[&str]; 3] =
            [&["getblockchaininfo"], &["getblockhash", "0"], &["getdeploymentinfo"]];
        let answers = core_answers(&binaries, network, &calls);
        assert_eq!(answers[0]["chain"], network.name(), "{network}");
        if let Some(challenge) = &params.signet_challenge {
            assert_eq!(answers[0]["signet_challenge"], ibex_primitives::hex::encode(challenge));
        }
        assert_eq!(answers[1], params.genesis_hash.to_string(), "{network}");
        for (name, deployment) in deployments {
            let height = &answers[2]["deployments"][name]["height"];
            assert_eq!(height, params.deployment_height(deployment), "{network} {name}");
        }
    }
}
