//! A JSON-RPC client on loopback for tests: one connection a request,
//! `user:password` credentials (what the tests start nodes with).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// `user:password` in base64.
pub const CREDENTIALS_BASE64: &str = "dXNlcjpwYXNzd29yZA==";

/// A node's JSON-RPC port.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint {
    /// The port on 127.0.0.1.
    pub port: u16,
}

impl Endpoint {
    /// The whole reply object (result and error).
    pub fn request(&self, method: &str, params: &Value) -> Value {
        self.post(&json!({"method": method, "params": params, "id": 1}))
    }

    /// The results of one batch calling `method` with each of `params`
    /// (one HTTP request: Core answers each new connection ~25 ms late).
    pub fn batch(&self, method: &str, params: &[Value]) -> Vec<Value> {
        let requests: Vec<Value> = params
            .iter()
            .enumerate()
            .map(|(id, params)| json!({"method": method, "params": params, "id": id}))
            .collect();
        let Value::Array(replies) = self.post(&Value::Array(requests)) else { panic!("a batch") };
        assert_eq!(replies.len(), params.len());
        replies
            .into_iter()
            .map(|reply| {
                assert!(reply["error"].is_null(), "{method}: {reply}");
                reply["result"].clone()
            })
            .collect()
    }

    /// The result of a call that must succeed.
    pub fn call(&self, method: &str, params: Value) -> Value {
        let reply = self.request(method, &params);
        assert!(reply["error"].is_null(), "{method} {params}: {reply}");
        reply["result"].clone()
    }

    /// The error (code, message) of a call that must fail.
    pub fn error(&self, method: &str, params: Value) -> (i64, String) {
        let reply = self.request(method, &params);
        let error = &reply["error"];
        assert!(!error.is_null(), "{method} {params} succeeded: {reply}");
        (error["code"].as_i64().unwrap(), error["message"].as_str().unwrap().to_owned())
    }

    /// Waits until the node answers `getblockcount` with `height`.
    pub fn wait_for_height(&self, height: u64, child: &mut std::process::Child) {
        let started = Instant::now();
        loop {
            assert!(child.try_wait().unwrap().is_none(), "the node exited");
            let ready = TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && self.request("getblockcount", &json!([]))["result"] == height;
            if ready {
                return;
            }
            assert!(started.elapsed() < super::NODE_WAIT, "no tip at {height}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn post(&self, request: &Value) -> Value {
        let body = request.to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let request = format!(
            "POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Basic {CREDENTIALS_BASE64}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut reply = Vec::new();
        stream.read_to_end(&mut reply).unwrap();
        let start = reply.windows(4).position(|window| window == b"\r\n\r\n").unwrap() + 4;
        serde_json::from_slice(&reply[start..]).unwrap()
    }
}

/// Bitcoin Core's `bitcoind` (from `core_binaries`, the directory
/// `IBEX_CORE_BIN` names) reindexing a copy of Core's regtest chain in
/// `datadir`, with the tests' credentials and no networking.
pub fn bitcoind_on_core_chain(
    core_binaries: &Path,
    datadir: &Path,
) -> (Endpoint, super::NodeProcess) {
    super::copy_block_files(
        datadir,
        &super::core_chain().join("blocks"),
        &super::FIRST_BLOCK_FILE_AND_KEY,
    );
    let port = super::free_port();
    let mut command = std::process::Command::new(core_binaries.join("bitcoind"));
    command
        .arg(format!("-datadir={}", datadir.display()))
        .args([
            "-regtest",
            "-reindex",
            "-listen=0",
            "-connect=0",
            "-dnsseed=0",
            "-printtoconsole=0",
        ])
        .args(["-disablewallet", "-dbcache=200"])
        .args(["-rpcuser=user", "-rpcpassword=password", &format!("-rpcport={port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    (Endpoint { port }, super::spawn_node(&mut command))
}
