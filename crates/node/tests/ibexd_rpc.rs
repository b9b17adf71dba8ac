//! `ibexd` serves JSON-RPC (issue 15): once it stays up (here `-listen=1`),
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
    wait_for_log(&datadir, "Binding RPC on address", &mut child);
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
