//! Hostile requests against a running `ibexd`: no credentials,
//! wrong ones (401 after Core's 250 ms, other clients served meanwhile),
//! malformed JSON, deep nesting, a 100 MB body (refused at once by its
//! `Content-Length`, or after 32 MiB when chunked), bodies whose parse
//! would multiply them in memory, slow clients holding connections while
//! others are served, unknown methods, parameters of the wrong type, block
//! hashes that are not there: a clear error each, the node never stops,
//! and its peak memory (`VmHWM`) stays bounded. And a non-local
//! `-rpcbind` without `-rpcallowip` is refused at start as Core refuses
//! it: not bound, loopback only, with Core's warning.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{debug_log, free_port, generate_chain, wait_exit, wait_for_log, NodeProcess};
use serde_json::Value;

/// `alice:secret` in base64.
const CREDENTIALS_BASE64: &str = "YWxpY2U6c2VjcmV0";
/// `alice:wrong` in base64.
const WRONG_CREDENTIALS_BASE64: &str = "YWxpY2U6d3Jvbmc=";
/// Peak memory allowed over the node's own before the hostile bodies: the
/// 32 MiB a chunked body may be read to, the 32 MiB reply of a large batch
/// and their copies.
const HOSTILE_MEMORY_BYTES_MAX: u64 = 256 << 20;
/// `-rpcservertimeout` for the node under test, seconds.
const SERVER_TIMEOUT_SECONDS: u64 = 5;

/// A generated chain, imported by a node that stays up with its RPC server.
struct Node {
    datadir: PathBuf,
    port: u16,
    process: NodeProcess,
}

fn start_node(root: &Path, chain: &Path, name: &str, extra: &[&str]) -> Node {
    let datadir = common::datadir_with_blocks(&root.join(name), chain);
    let port = free_port();
    let options = [
        "-reindex".to_owned(),
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={}", free_port()),
        format!("-rpcport={port}"),
        "-rpcuser=alice".to_owned(),
        "-rpcpassword=secret".to_owned(),
    ];
    let mut arguments: Vec<&str> = options.iter().map(String::as_str).collect();
    arguments.extend_from_slice(extra);
    let mut process =
        common::spawn_node(&mut common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, &arguments));
    wait_for_log(&datadir, "init message: Done loading", &mut process);
    Node { datadir, port, process }
}

/// `VmHWM` of a process, in bytes.
fn peak_memory_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A reply's status and body.
struct Reply {
    status: u16,
    headers: String,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The error's code and message.
    fn error(&self) -> (i64, String) {
        let json = self.json();
        let error = &json["error"];
        (error["code"].as_i64().unwrap(), error["message"].as_str().unwrap().to_owned())
    }
}

/// Reads one HTTP reply (the server closes after it: `Connection: close`).
fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut bytes = Vec::new();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let _ = stream.read_to_end(&mut bytes);
    let text_end = bytes.windows(4).position(|window| window == b"\r\n\r\n").unwrap() + 4;
    let headers = String::from_utf8_lossy(&bytes[..text_end]).into_owned();
    let status = headers.split(' ').nth(1).unwrap().parse().unwrap();
    Reply { status, headers, body: bytes[text_end..].to_vec() }
}

/// POSTs `body` to `/` with `authorization` (base64 `user:password`).
fn post_with(port: u16, authorization: Option<&str>, body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(authorization) = authorization {
        head.push_str(&format!("Authorization: Basic {authorization}\r\n"));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    stream.write_all(&request).unwrap();
    read_reply(&mut stream)
}

fn post(port: u16, body: &str) -> Reply {
    post_with(port, Some(CREDENTIALS_BASE64), body.as_bytes())
}

/// Asserts a JSON-RPC 1.0 error reply.
fn assert_error(port: u16, body: &str, status: u16, code: i64, message: &str) {
    let reply = post(port, body);
    assert_eq!(reply.status, status, "{body}");
    let (got_code, got_message) = reply.error();
    assert_eq!((got_code, got_message.as_str()), (code, message), "{body}");
}

/// Sends a 100 MB body in the background after `head`, and returns the
/// reply and how many MiB went out before it came.
fn send_huge_body(port: u16, head: &str, chunked: bool) -> (Reply, usize) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let chunk = vec![b'1'; 1 << 20];
        let mut sent_mebibytes = 0;
        for _ in 0..100 {
            let written = if chunked {
                writer
                    .write_all(b"100000\r\n")
                    .and_then(|()| writer.write_all(&chunk))
                    .and_then(|()| writer.write_all(b"\r\n"))
            } else {
                writer.write_all(&chunk)
            };
            if written.is_err() {
                break;
            }
            sent_mebibytes += 1;
        }
        sent_mebibytes
    });
    let reply = read_reply(&mut stream);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    (reply, sender.join().unwrap())
}

fn huge_bodies_are_refused_without_being_read_whole(port: u16) {
    let started = Instant::now();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {CREDENTIALS_BASE64}\r\nContent-Length: {}\r\n\r\n",
        100 << 20
    );
    let (declared, _) = send_huge_body(port, &head, false);
    assert_eq!(declared.status, 413, "{}", declared.headers);
    assert!(started.elapsed() < Duration::from_secs(10), "refused by its length, not read");
    let chunked_head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {CREDENTIALS_BASE64}\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let (chunked, sent_mebibytes) = send_huge_body(port, &chunked_head, true);
    assert_eq!(chunked.status, 413, "{}", chunked.headers);
    assert!(sent_mebibytes < 100, "refused after at most 32 MiB of it ({sent_mebibytes} MiB sent)");
}

fn expanding_bodies_stay_small(port: u16) {
    // 30 MB of parameters: 15 million values (gigabytes as parse trees).
    let values =
        format!(r#"{{"method":"getblockcount","params":[{}1],"id":3}}"#, "1,".repeat(15_000_000));
    let reply = post(port, &values);
    assert_eq!(reply.status, 400);
    let (code, message) = reply.error();
    assert_eq!(
        (code, message.as_str()),
        (-32600, "Request too large: more than 100000 JSON values")
    );
    // A 30 MB batch runs element by element.
    let count = 800_000;
    let element = r#"{"method":"getblockcount","id":1}"#;
    let batch = format!("[{}]", vec![element; count].join(","));
    let reply = post(port, &batch);
    assert_eq!(reply.status, 200);
    let one = br#"{"result":150,"error":null,"id":1}"#;
    let answers = reply.body.chunks(one.len() + 1).filter(|chunk| chunk.ends_with(b"}")).count();
    assert!(reply.body.starts_with(b"[") && reply.body.ends_with(b"]\n"));
    assert_eq!(reply.body.len(), 1 + count * (one.len() + 1) + 1, "one reply per element");
    assert_eq!(&reply.body[1..=one.len()], one);
    assert_eq!(answers, count);
}

fn malformed_and_wrong_requests_get_cores_errors(port: u16) {
    for body in [r#"{"method":"#, "not json", "\u{1}", "[", r#"{"method":"getblockcount"}}"#] {
        assert_error(port, body, 500, -32700, "Parse error");
    }
    assert_error(port, "5", 500, -32700, "Top-level object parse error");
    let deep = format!("{}{}", "[".repeat(1 << 20), "]".repeat(1 << 20));
    assert_error(port, &deep, 500, -32700, "Parse error");
    let deep_params =
        format!(r#"{{"method":"getblockcount","params":{}1{}}}"#, "[".repeat(200), "]".repeat(200));
    assert_error(port, &deep_params, 500, -32700, "Parse error");
    assert_error(port, r#"{"method":"nosuchmethod","id":1}"#, 404, -32601, "Method not found");
    assert_error(port, r#"{"method":42,"id":1}"#, 400, -32600, "Method must be a string");
    assert_error(port, r#"{"params":[],"id":1}"#, 400, -32600, "Missing method");
    assert_error(
        port,
        r#"{"method":"getblockhash","params":["1"],"id":1}"#,
        500,
        -3,
        "Wrong type passed:\n{\n    \"Position 1 (height)\": \"JSON value of type string is not of expected type number\"\n}",
    );
    assert_error(
        port,
        r#"{"method":"getblockstats","params":[1, {"a":1}],"id":1}"#,
        500,
        -3,
        "Wrong type passed:\n{\n    \"Position 2 (stats)\": \"JSON value of type object is not of expected type array\"\n}",
    );
    assert_error(
        port,
        r#"{"method":"getblockhash","params":[99999999999],"id":1}"#,
        500,
        -1,
        "JSON integer out of range",
    );
    let missing = "ab".repeat(32);
    for method in ["getblock", "getblockheader", "getblockstats", "getdeploymentinfo"] {
        let body = format!(r#"{{"method":"{method}","params":["{missing}"],"id":1}}"#);
        assert_error(port, &body, 500, -5, "Block not found");
    }
    let body =
        format!(r#"{{"method":"getrawtransaction","params":["{missing}",1,"{missing}"],"id":1}}"#);
    assert_error(port, &body, 500, -5, "Block hash not found");
}

fn credentials_are_required_and_guessing_is_slowed(port: u16) {
    let started = Instant::now();
    let missing = post_with(port, None, br#"{"method":"getblockcount"}"#);
    let missing_elapsed = started.elapsed();
    assert_eq!(missing.status, 401);
    let headers = missing.headers.to_ascii_lowercase();
    assert!(headers.contains("www-authenticate: basic realm=\"jsonrpc\""), "{headers}");
    assert!(missing.body.is_empty());
    // Four guessers at once: each waits 250 ms (Core's deterrent), side by
    // side rather than one after another, and a good client is served
    // meanwhile.
    let all_started = Instant::now();
    let guessers: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let started = Instant::now();
                let body = br#"{"method":"getblockcount"}"#;
                let reply = post_with(port, Some(WRONG_CREDENTIALS_BASE64), body);
                (reply.status, started.elapsed())
            })
        })
        .collect();
    let served = Instant::now();
    assert_eq!(post(port, r#"{"method":"getblockcount","id":1}"#).status, 200);
    let served = served.elapsed();
    for guesser in guessers {
        let (status, waited) = guesser.join().unwrap();
        assert_eq!(status, 401);
        assert!(waited >= Duration::from_millis(250), "a wrong password waits 250 ms: {waited:?}");
        assert!(missing_elapsed < waited, "no credentials: no delay ({missing_elapsed:?})");
    }
    let all_waited = all_started.elapsed();
    assert!(all_waited < Duration::from_millis(900), "the waits overlap: {all_waited:?}");
    assert!(served < Duration::from_secs(1), "others are served meanwhile: {served:?}");
}

fn slow_clients_do_not_hold_up_others(port: u16) {
    let mut slow_headers = TcpStream::connect(("127.0.0.1", port)).unwrap();
    slow_headers.write_all(b"POST / HTTP/1.1\r\nHost: loc").unwrap();
    let mut slow_body = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {CREDENTIALS_BASE64}\r\nContent-Length: 1000\r\n\r\n{{\"method\":"
    );
    slow_body.write_all(head.as_bytes()).unwrap();
    let idle: Vec<TcpStream> =
        (0..20).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    for _ in 0..5 {
        let started = Instant::now();
        let reply = post(port, r#"{"method":"getbestblockhash","id":1}"#);
        assert_eq!(reply.status, 200);
        assert!(started.elapsed() < Duration::from_secs(1), "served beside slow clients");
    }
    drop((slow_body, idle));
    slow_headers_are_dropped_at_the_server_timeout(slow_headers);
}

/// The node runs with `-rpcservertimeout=SERVER_TIMEOUT_SECONDS`: a client
/// that never finishes its headers is disconnected after about that long
/// (Core's libevent timeout), not held forever.
fn slow_headers_are_dropped_at_the_server_timeout(mut slow_headers: TcpStream) {
    let started = Instant::now();
    slow_headers.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut reply = Vec::new();
    // Whatever the server answers before closing (a 408, or nothing), the
    // read ends with end of file or a reset once it drops the connection.
    let _ = slow_headers.read_to_end(&mut reply);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(SERVER_TIMEOUT_SECONDS + 5),
        "the slow client was dropped after {waited:?}"
    );
}

#[test]
fn hostile_requests_get_clear_errors_and_memory_stays_bounded() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", "150", "3", &[]);
    let timeout = format!("-rpcservertimeout={SERVER_TIMEOUT_SECONDS}");
    let mut node = start_node(root.path(), &chain, "node", &[&timeout]);
    let port = node.port;
    let pid = node.process.id();
    let before = peak_memory_bytes(pid);
    credentials_are_required_and_guessing_is_slowed(port);
    malformed_and_wrong_requests_get_cores_errors(port);
    huge_bodies_are_refused_without_being_read_whole(port);
    expanding_bodies_stay_small(port);
    slow_clients_do_not_hold_up_others(port);
    let peak = peak_memory_bytes(pid);
    assert!(
        peak < before + HOSTILE_MEMORY_BYTES_MAX,
        "peak memory {} MiB after the hostile bodies, {} MiB before",
        peak >> 20,
        before >> 20
    );
    eprintln!(
        "ibexd VmHWM: {} MiB before the hostile requests, {} MiB after",
        before >> 20,
        peak >> 20
    );
    // Still up and answering, then a clean stop.
    let count = post(port, r#"{"method":"getblockcount","id":1}"#);
    assert_eq!(count.json()["result"], 150);
    assert!(post(port, r#"{"method":"stop","id":1}"#).json()["result"].is_string());
    assert!(wait_exit(&mut node.process, &node.datadir).success());
}

/// A non-loopback address of this machine, if it has one (the source
/// address a datagram to a documentation address would leave from).
fn non_loopback_address() -> Option<IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let address = socket.local_addr().ok()?.ip();
    (!address.is_loopback() && !address.is_unspecified()).then_some(address)
}

#[test]
fn a_non_local_rpcbind_without_rpcallowip_is_refused_at_start() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", "110", "4", &[]);
    let mut refused = start_node(root.path(), &chain, "refused", &["-rpcbind=0.0.0.0"]);
    let log = debug_log(&refused.datadir);
    assert!(log.contains("Option -rpcbind was ignored because -rpcallowip was not specified, refusing to allow everyone to connect"), "{log}");
    assert!(log.contains(&format!("Binding RPC on address 127.0.0.1:{}", refused.port)), "{log}");
    assert!(!log.contains("Binding RPC on address 0.0.0.0"), "{log}");
    let outside = non_loopback_address();
    if let Some(address) = outside {
        let connected = TcpStream::connect_timeout(
            &SocketAddr::new(address, refused.port),
            Duration::from_secs(2),
        );
        assert!(connected.is_err(), "nothing listens on {address}");
    } else {
        eprintln!("skipped: no non-loopback address to connect from");
    }
    assert_eq!(post(refused.port, r#"{"method":"getblockcount","id":1}"#).json()["result"], 110);
    refused.process.kill().unwrap();
    // With -rpcallowip too, the address is bound and the subnet allowed.
    let mut allowed =
        start_node(root.path(), &chain, "allowed", &["-rpcbind=0.0.0.0", "-rpcallowip=0.0.0.0/0"]);
    let log = debug_log(&allowed.datadir);
    assert!(log.contains(&format!("Binding RPC on address 0.0.0.0:{}", allowed.port)), "{log}");
    assert!(!log.contains("Option -rpcbind was ignored"), "{log}");
    if let Some(address) = outside {
        let mut stream = TcpStream::connect((address, allowed.port)).unwrap();
        let body = r#"{"method":"getblockcount","id":1}"#;
        let request = format!("POST / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Basic {CREDENTIALS_BASE64}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        stream.write_all(request.as_bytes()).unwrap();
        assert_eq!(read_reply(&mut stream).status, 200);
    }
    allowed.process.kill().unwrap();
}
