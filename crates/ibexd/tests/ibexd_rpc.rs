//! `ibexd` serves JSON-RPC: after its import (here listening, `-listen=1`),
//! its RPC server answers with user/password and with the cookie it writes
//! in the chain directory, `stop` shuts it down cleanly (the cookie is
//! removed), and a real `bitcoin-cli` drives it when `IBEX_CORE_BIN` names a
//! directory holding one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

use common::{datadir_with_blocks, debug_log, free_port, generate_chain, wait_exit, wait_for_log};

const BLOCKS: u32 = 150;

fn base64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let value =
            chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for index in 0..4 {
            if index <= chunk.len() {
                out.push(ALPHABET[(value >> (18 - 6 * index) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// POSTs `body` with `credentials` (`user:password`); the whole response.
fn post(port: u16, credentials: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        base64(credentials),
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// A node that imported a generated chain and stays up with its RPC server
/// on a free port; the datadir, the port and the process.
fn serving_node(root: &Path, extra: &[&str]) -> (std::path::PathBuf, u16, common::NodeProcess) {
    let chain = root.join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "15", &[]);
    let datadir = datadir_with_blocks(&root.join("node"), &chain);
    let rpc_port = free_port();
    let p2p_port = free_port();
    let rpc_option = format!("-rpcport={rpc_port}");
    let p2p_option = format!("-port={p2p_port}");
    let mut options =
        vec!["-reindex", "-listen=1", "-bind=127.0.0.1", p2p_option.as_str(), rpc_option.as_str()];
    options.extend_from_slice(extra);
    let mut child =
        common::spawn_node(&mut common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, &options));
    wait_for_log(&datadir, "init message: Done loading", &mut child);
    (datadir, rpc_port, child)
}

#[test]
fn ibexd_answers_rpc_with_a_password_and_stops_on_request() {
    let root = tempfile::tempdir().unwrap();
    let (datadir, port, mut child) =
        serving_node(root.path(), &["-rpcuser=alice", "-rpcpassword=secret"]);
    let count = post(port, "alice:secret", r#"{"jsonrpc":"2.0","id":1,"method":"getblockcount"}"#);
    assert!(count.starts_with("HTTP/1.1 200"), "{count}");
    assert!(count.contains(&format!("\"result\":{BLOCKS}")), "{count}");
    let refused = post(port, "alice:wrong", r#"{"method":"getblockcount"}"#);
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let hash = post(port, "alice:secret", r#"{"method":"getblockhash","params":[1],"id":2}"#);
    assert!(hash.contains("\"error\":null"), "{hash}");
    let missing =
        post(port, "alice:secret", r#"{"method":"getblockhash","params":[99999],"id":3}"#);
    assert!(missing.contains("-8") && missing.contains("Block height out of range"), "{missing}");
    // No cookie when a password is set (Core's rule).
    assert!(!datadir.join("regtest/.cookie").exists());
    let stop = post(port, "alice:secret", r#"{"method":"stop","id":4}"#);
    assert!(stop.contains("stopping"), "{stop}");
    let status = wait_exit(&mut child, &datadir);
    assert!(status.success(), "{status:?}");
    let log = debug_log(&datadir);
    assert!(log.contains("Flushing chainstate to disk") && log.contains("Shutdown: done"), "{log}");
}

#[test]
fn ibexd_writes_a_cookie_that_authenticates_and_removes_it_at_exit() {
    let root = tempfile::tempdir().unwrap();
    let (datadir, port, mut child) = serving_node(root.path(), &[]);
    let cookie_path = datadir.join("regtest/.cookie");
    let cookie = std::fs::read_to_string(&cookie_path).unwrap();
    assert!(cookie.starts_with("__cookie__:"), "{cookie}");
    let answer = post(port, cookie.trim(), r#"{"method":"getbestblockhash","id":1}"#);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    match std::env::var_os("IBEX_CORE_BIN") {
        Some(directory) => {
            let cli = Path::new(&directory).join("bitcoin-cli");
            let output = std::process::Command::new(cli)
                .arg(format!("-datadir={}", datadir.display()))
                .args(["-regtest", &format!("-rpcport={port}"), "getblockcount"])
                .output()
                .unwrap();
            assert!(output.status.success(), "{output:?}");
            assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), BLOCKS.to_string());
        }
        None => eprintln!("skipped: bitcoin-cli against ibexd (IBEX_CORE_BIN not set)"),
    }
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(wait_exit(&mut child, &datadir).success());
    assert!(!cookie_path.exists(), "the cookie outlived the node");
}

/// Runs `bitcoin-cli` from `directory` with `arguments`; its output.
fn bitcoin_cli(directory: &Path, arguments: &[String]) -> std::process::Output {
    std::process::Command::new(directory.join("bitcoin-cli")).args(arguments).output().unwrap()
}

/// What Core's users type: `bitcoin-cli -rpcwait` started before the node
/// (it waits for the server, then for the warm-up), named arguments
/// (`-named`), user/password auth, `stop`. Named parameters are also
/// checked over plain HTTP on every run.
#[test]
fn bitcoin_cli_waits_for_ibexd_uses_named_arguments_and_stops_it() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "16", &[]);
    let datadir = datadir_with_blocks(&root.path().join("node"), &chain);
    let (rpc_port, p2p_port) = (free_port(), free_port());
    let rpc_option = format!("-rpcport={rpc_port}");
    let p2p_option = format!("-port={p2p_port}");
    let options = [
        "-reindex",
        "-listen=1",
        "-bind=127.0.0.1",
        p2p_option.as_str(),
        rpc_option.as_str(),
        "-rpcuser=bob",
        "-rpcpassword=hunter2",
    ];
    let core = std::env::var_os("IBEX_CORE_BIN").map(std::path::PathBuf::from);
    let cli_base = vec![
        "-regtest".to_owned(),
        format!("-rpcport={rpc_port}"),
        "-rpcuser=bob".to_owned(),
        "-rpcpassword=hunter2".to_owned(),
    ];
    // Started before the node exists: -rpcwait retries until it answers.
    let waiting = core.as_ref().map(|directory| {
        let mut arguments = cli_base.clone();
        arguments.extend(["-rpcwait".to_owned(), "-rpcwaittimeout=120".to_owned()]);
        arguments.push("getblockcount".to_owned());
        std::process::Command::new(directory.join("bitcoin-cli"))
            .args(&arguments)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    });
    let mut child =
        common::spawn_node(&mut common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, &options));
    wait_for_log(&datadir, "init message: Done loading", &mut child);

    let hash = post(rpc_port, "bob:hunter2", r#"{"method":"getblockhash","params":[1],"id":1}"#);
    let hash = hash.split("\"result\":\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let named = format!(
        r#"{{"method":"getblock","params":{{"blockhash":"{hash}","verbosity":1}},"id":2}}"#
    );
    let block = post(rpc_port, "bob:hunter2", &named);
    assert!(block.contains("\"height\":1,"), "{block}");
    let unknown_name = r#"{"method":"getblockhash","params":{"tallness":1},"id":3}"#;
    let refused = post(rpc_port, "bob:hunter2", unknown_name);
    assert!(refused.contains("Unknown named parameter tallness"), "{refused}");

    let Some(directory) = core else {
        eprintln!(
            "skipped: bitcoin-cli -rpcwait/-named/stop against ibexd (IBEX_CORE_BIN not set)"
        );
        return;
    };
    let waited = waiting.unwrap().wait_with_output().unwrap();
    assert!(waited.status.success(), "{waited:?}");
    // The node answers while its import still connects blocks: -rpcwait
    // returns the first answer, at whatever height it was.
    let waited_height: u64 = String::from_utf8_lossy(&waited.stdout).trim().parse().unwrap();
    assert!(waited_height <= u64::from(BLOCKS), "{waited_height}");

    let mut arguments = cli_base.clone();
    arguments.extend(
        ["-named", "getblock", &format!("blockhash={hash}"), "verbosity=1"].map(String::from),
    );
    let output = bitcoin_cli(&directory, &arguments);
    assert!(output.status.success(), "{output:?}");
    let block: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(block["height"], 1);
    assert_eq!(block["hash"], hash.as_str());

    let mut arguments = cli_base.clone();
    arguments.extend(
        ["-named", "getblockheader", &format!("blockhash={hash}"), "verbose=false"]
            .map(String::from),
    );
    let output = bitcoin_cli(&directory, &arguments);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim().len(), 160, "80 bytes of hex");

    let mut arguments = cli_base;
    arguments.push("stop".to_owned());
    let output = bitcoin_cli(&directory, &arguments);
    assert!(output.status.success(), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("stopping"), "{output:?}");
    assert!(wait_exit(&mut child, &datadir).success());
}
