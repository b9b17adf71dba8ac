//! The HTTP server as Core's `httpserver.cpp` and `httprpc.cpp` behave:
//! authentication (none, wrong, password, cookie, `-rpcauth`), methods and
//! paths, keep-alive, the body limit, the work queue's 503, and a graceful
//! shutdown that answers what is in flight and deletes the cookie.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use support::backend::ChainBackend;
use support::http::{
    basic, post, request, start, start_with, test_config, Connection, PASSWORD, USER,
};

const CALL: &[u8] = br#"{"method":"getblockcount","params":[],"id":1}"#;

fn call_with(address: std::net::SocketAddr, authorization: Option<&str>) -> support::http::Reply {
    let headers: Vec<(&str, &str)> =
        authorization.map(|value| ("Authorization", value)).into_iter().collect();
    request(address, "POST", "/", &headers, CALL)
}

#[test]
fn credentials_are_checked_as_core_checks_them() {
    let test = start();
    let missing = call_with(test.address, None);
    assert_eq!(missing.status, 401);
    assert_eq!(missing.header("www-authenticate"), Some("Basic realm=\"jsonrpc\""));
    assert!(missing.body.is_empty());
    let started = Instant::now();
    let wrong = call_with(test.address, Some(&basic(&format!("{USER}:wrong"))));
    assert_eq!(wrong.status, 401);
    assert!(started.elapsed() >= Duration::from_millis(250), "a wrong password waits 250 ms");
    assert_eq!(wrong.header("www-authenticate"), Some("Basic realm=\"jsonrpc\""));
    assert_eq!(call_with(test.address, Some("Bearer abc")).status, 401);
    assert_eq!(call_with(test.address, Some(&basic(&format!("{USER}:{PASSWORD}")))).status, 200);
}

#[test]
fn cookie_is_written_accepted_and_deleted() {
    let directory =
        std::env::temp_dir().join(format!("ibex-rpc-server-cookie-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let cookie_path = directory.join(".cookie");
    let mut config = test_config();
    config.rpc_password = String::new();
    config.cookie_file = Some(cookie_path.clone());
    let test = start_with(config, ChainBackend::new());
    let cookie = std::fs::read_to_string(&cookie_path).unwrap();
    assert!(cookie.starts_with("__cookie__:") && cookie.len() == "__cookie__:".len() + 64);
    assert_eq!(call_with(test.address, Some(&basic(&cookie))).status, 200);
    assert_eq!(call_with(test.address, Some(&basic(&format!("{USER}:{PASSWORD}")))).status, 401);
    test.server.shutdown();
    assert!(!cookie_path.exists(), "the cookie is deleted at exit");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn rpcauth_lines_are_accepted() {
    // As share/rpcauth/rpcauth.py builds one: HMAC-SHA256 of the password
    // keyed by the salt, in hex.
    let salt = "9f4e1fa2cd32a1c5b0b8a1a2f3e4d5c6";
    let mut mac = Hmac::<Sha256>::new_from_slice(salt.as_bytes()).unwrap();
    mac.update(b"correct horse");
    let hmac_hex = ibex_primitives::hex::encode(&mac.finalize().into_bytes());
    let mut config = test_config();
    config.rpc_auth = vec![format!("alice:{salt}${hmac_hex}")];
    let test = start_with(config, ChainBackend::new());
    assert_eq!(call_with(test.address, Some(&basic("alice:correct horse"))).status, 200);
    assert_eq!(call_with(test.address, Some(&basic("alice:wrong horse"))).status, 401);
    assert_eq!(call_with(test.address, Some(&basic(&format!("{USER}:{PASSWORD}")))).status, 200);
    let mut bad = test_config();
    bad.rpc_auth = vec!["alice:no-dollar".into()];
    assert!(ibex_rpc::RpcServer::start(bad, Arc::new(ChainBackend::new())).is_err());
}

#[test]
fn methods_paths_and_limits() {
    let mut config = test_config();
    config.request_body_bytes_max = 1024;
    let test = start_with(config, ChainBackend::new());
    let credentials = basic(&format!("{USER}:{PASSWORD}"));
    let auth = [("Authorization", credentials.as_str())];
    let get = request(test.address, "GET", "/", &auth, b"");
    assert_eq!(
        (get.status, get.text()),
        (405, "JSONRPC server handles only POST requests".to_owned())
    );
    assert_eq!(request(test.address, "DELETE", "/", &auth, b"").status, 405);
    assert_eq!(request(test.address, "POST", "/wallet/x", &auth, CALL).status, 404);
    assert_eq!(request(test.address, "POST", "/?x=1", &auth, CALL).status, 404);
    assert_eq!(request(test.address, "GET", "/rest/tx/00.json", &[], b"").status, 404);
    let big = vec![b' '; 2048];
    assert_eq!(request(test.address, "POST", "/", &auth, &big).status, 413);
    // REST off: its paths are unknown.
    let mut no_rest = test_config();
    no_rest.rest = false;
    let plain = start_with(no_rest, ChainBackend::new());
    assert_eq!(request(plain.address, "GET", "/rest/chaininfo.json", &[], b"").status, 404);
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let test = start();
    let credentials = basic(&format!("{USER}:{PASSWORD}"));
    let mut connection = Connection::open(test.address);
    for _ in 0..50 {
        let reply = connection.send("POST", "/", &[("Authorization", &credentials)], CALL);
        assert_eq!(reply.status, 200);
    }
    let rest = connection.send("GET", "/rest/blockhashbyheight/0.hex", &[], b"");
    assert_eq!(rest.status, 200);
}

#[test]
fn a_full_work_queue_answers_503() {
    let mut config = test_config();
    config.threads = 1;
    config.work_queue_depth = 1;
    let test = start_with(config, ChainBackend::new());
    test.backend.close_gate();
    let address = test.address;
    // Too long for the fast lane (a short `getblockcount` skips the queue).
    let call = format!(r#"{{"method":"getblockcount","params":[],"id":"{}"}}"#, "x".repeat(600));
    let calls = [call.clone(), call.clone(), call];
    let [first, second, third] = calls;
    let running = std::thread::spawn(move || post(address, &first));
    test.backend.wait_entered(1);
    let queued = std::thread::spawn(move || post(address, &second));
    std::thread::sleep(Duration::from_millis(200));
    // The second request waits in the queue; a third finds it full.
    let third = std::thread::spawn(move || post(address, &third));
    std::thread::sleep(Duration::from_millis(200));
    test.backend.open_gate();
    let replies = [running, queued, third].map(|thread| thread.join().unwrap());
    assert_eq!(replies[0].status, 200);
    let mut statuses: Vec<u16> = replies.iter().map(|reply| reply.status).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 503]);
    let refused = replies.iter().find(|reply| reply.status == 503).unwrap();
    assert_eq!(refused.text(), "Work queue depth exceeded");
}

/// Short requests for methods that read only the published snapshot or
/// the clock (`uptime` here; `getblockcount` too) are answered while every
/// worker is busy and the queue is full.
#[test]
fn snapshot_reads_skip_a_full_work_queue() {
    let mut config = test_config();
    config.threads = 1;
    config.work_queue_depth = 1;
    let test = start_with(config, ChainBackend::new());
    let address = test.address;
    let slow = format!(r#"{{"method":"getblockcount","params":[],"id":"{}"}}"#, "x".repeat(600));
    let (first, second) = (slow.clone(), slow);
    test.backend.close_gate();
    let running = std::thread::spawn(move || post(address, &first));
    test.backend.wait_entered(1);
    let queued = std::thread::spawn(move || post(address, &second));
    std::thread::sleep(Duration::from_millis(200));
    let fast = post(address, r#"{"method":"uptime","id":1}"#);
    assert_eq!(fast.status, 200, "{}", fast.text());
    assert!(fast.text().contains("\"result\":"), "{}", fast.text());
    assert!(!running.is_finished() && !queued.is_finished(), "the gate let them through");
    test.backend.open_gate();
    assert_eq!(running.join().unwrap().status, 200);
    assert_eq!(queued.join().unwrap().status, 200);
}

#[test]
fn shutdown_answers_requests_in_flight() {
    let test = start();
    let address = test.address;
    let waiting =
        std::thread::spawn(move || post(address, r#"{"method":"waitfornewblock","id":1}"#));
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    test.server.shutdown();
    assert!(started.elapsed() < Duration::from_secs(5));
    let reply = waiting.join().unwrap();
    assert_eq!(reply.status, 200, "the wait ends with the current tip");
    let tip = test.backend.chain().active().last().unwrap().to_hex();
    assert_eq!(
        reply.json().get("result").unwrap().get("hash").and_then(|hash| hash.as_str()),
        Some(tip.as_str())
    );
    assert!(std::net::TcpStream::connect(address).is_err(), "no longer listening");
}

#[test]
fn slow_clients_are_cut_off_after_the_server_timeout() {
    use std::io::{Read, Write};
    let mut config = test_config();
    config.server_timeout = Duration::from_secs(1);
    let test = start_with(config, ChainBackend::new());
    let credentials = basic(&format!("{USER}:{PASSWORD}"));
    // Headers that never end, and a body that never comes.
    let mut slow_headers = std::net::TcpStream::connect(test.address).unwrap();
    slow_headers.write_all(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").unwrap();
    let mut slow_body = std::net::TcpStream::connect(test.address).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {credentials}\r\nContent-Length: 100\r\n\r\n{{\"method\":"
    );
    slow_body.write_all(head.as_bytes()).unwrap();
    let started = Instant::now();
    // Others are served meanwhile.
    assert_eq!(call_with(test.address, Some(&credentials)).status, 200);
    assert!(started.elapsed() < Duration::from_millis(500));
    for stream in [&mut slow_headers, &mut slow_body] {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    let mut reply = Vec::new();
    slow_body.read_to_end(&mut reply).unwrap();
    assert!(reply.starts_with(b"HTTP/1.1 408"), "{}", String::from_utf8_lossy(&reply));
    let mut closed = Vec::new();
    slow_headers.read_to_end(&mut closed).unwrap();
    assert!(!closed.starts_with(b"HTTP/1.1 200"), "the connection is closed, not served");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(900) && waited < Duration::from_secs(5), "{waited:?}");
}
