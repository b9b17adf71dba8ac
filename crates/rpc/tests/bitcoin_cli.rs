//! Core's own client against our server: `bitcoin-cli` from the directory
//! `IBEX_CORE_BIN` names, with a password, with the cookie file, with a
//! wrong password, named arguments, `-getinfo` (a batch), and `getblock`
//! compared by value with Core's answer. Skipped (saying so) when
//! `IBEX_CORE_BIN` is not set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::backend::ChainBackend;
use support::chain::chain_directory;
use support::compare::assert_same_value;
use support::http::{start, start_with, test_config, PASSWORD, USER};
use support::json::parse;

fn bitcoin_cli() -> Option<PathBuf> {
    let directory = std::env::var_os("IBEX_CORE_BIN")?;
    let path = Path::new(&directory).join("bitcoin-cli");
    assert!(path.exists(), "IBEX_CORE_BIN has no bitcoin-cli: {}", path.display());
    Some(path)
}

/// Runs `bitcoin-cli -regtest` against `port` with `options` and `args`.
fn run(cli: &Path, data_directory: &Path, port: u16, options: &[String], args: &[&str]) -> Output {
    Command::new(cli)
        .arg("-regtest")
        .arg(format!("-datadir={}", data_directory.display()))
        .arg("-rpcconnect=127.0.0.1")
        .arg(format!("-rpcport={port}"))
        .args(options)
        .args(args)
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "bitcoin-cli failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap().trim_end().to_owned()
}

fn scratch_directory(name: &str) -> PathBuf {
    let directory =
        std::env::temp_dir().join(format!("ibex-rpc-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}

#[test]
fn bitcoin_cli_drives_the_server() {
    let Some(cli) = bitcoin_cli() else {
        eprintln!("skipped: IBEX_CORE_BIN not set");
        return;
    };
    let test = start();
    let port = test.address.port();
    let data_directory = scratch_directory("password");
    let credentials = [format!("-rpcuser={USER}"), format!("-rpcpassword={PASSWORD}")];
    let chain = test.backend.chain();
    let tip_height = chain.active().len() - 1;
    let cli_run = |args: &[&str]| stdout(&run(&cli, &data_directory, port, &credentials, args));
    assert_eq!(cli_run(&["getblockcount"]), tip_height.to_string());
    assert_eq!(cli_run(&["getbestblockhash"]), chain.active()[tip_height].to_hex());
    assert_eq!(cli_run(&["getblockhash", "0"]), chain.active()[0].to_hex());
    assert_eq!(cli_run(&["-named", "getblockhash", "height=1"]), chain.active()[1].to_hex());
    let core =
        parse(&std::fs::read_to_string(chain_directory().join("getblock/000439.json")).unwrap());
    let hash = core.get("hash").unwrap().as_str().unwrap();
    for verbosity in ["0", "1", "2", "3"] {
        let ours = cli_run(&["getblock", hash, verbosity]);
        let expected = core.get(&format!("verbosity{verbosity}")).unwrap();
        if verbosity == "0" {
            assert_eq!(ours, expected.as_str().unwrap());
        } else {
            assert_same_value(
                &parse(&ours),
                expected,
                &format!("bitcoin-cli getblock {verbosity}"),
            );
        }
    }
    assert!(cli_run(&["help"]).contains("== Blockchain =="));
    let info = cli_run(&["-getinfo"]);
    assert!(info.contains(&format!("Blocks: {tip_height}")), "{info}");
    // Errors come back as Core's client shows them.
    let missing = run(&cli, &data_directory, port, &credentials, &["getblock", &"00".repeat(32)]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("error code: -5"));
    let wrong = [format!("-rpcuser={USER}"), "-rpcpassword=wrong".to_owned()];
    let refused = run(&cli, &data_directory, port, &wrong, &["getblockcount"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("Incorrect rpcuser or rpcpassword"));
    std::fs::remove_dir_all(&data_directory).unwrap();
}

#[test]
fn bitcoin_cli_reads_the_cookie() {
    let Some(cli) = bitcoin_cli() else {
        eprintln!("skipped: IBEX_CORE_BIN not set");
        return;
    };
    let data_directory = scratch_directory("cookie");
    let cookie = data_directory.join("regtest").join(".cookie");
    std::fs::create_dir_all(cookie.parent().unwrap()).unwrap();
    let mut config = test_config();
    config.rpc_password = String::new();
    config.cookie_file = Some(cookie.clone());
    let test = start_with(config, ChainBackend::new());
    let port = test.address.port();
    let count = stdout(&run(&cli, &data_directory, port, &[], &["getblockcount"]));
    assert_eq!(count, (test.backend.chain().active().len() - 1).to_string());
    let explicit = [format!("-rpccookiefile={}", cookie.display())];
    assert_eq!(stdout(&run(&cli, &data_directory, port, &explicit, &["getblockcount"])), count);
    test.server.shutdown();
    assert!(!cookie.exists());
    std::fs::remove_dir_all(&data_directory).unwrap();
}
