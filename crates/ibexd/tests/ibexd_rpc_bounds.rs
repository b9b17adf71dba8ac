//! Attacks on the RPC, REST and metrics servers of a running `ibexd`, each
//! asserting the bound that holds it: clients that ask for large REST
//! replies and never read hold bounded memory and are disconnected after
//! `-rpcservertimeout`; trickled REST bodies cannot make JSON-RPC wait,
//! and a request finding its body budget full waits 5 s for a 503;
//! password guessing is slowed as Core slows it, to `-rpcthreads` failed
//! attempts per 250 ms whatever the number of connections; a batch whose
//! replies would exceed 128 MiB is refused with -7 before they take the
//! memory; idle metrics connections cannot keep a scrape waiting. Each
//! also checks that an honest client is answered meanwhile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{free_port, generate_chain, wait_exit, wait_for_log, NodeProcess};

/// `alice:secret` in base64.
const CREDENTIALS_BASE64: &str = "YWxpY2U6c2VjcmV0";
/// `alice:wrong` in base64.
const WRONG_CREDENTIALS_BASE64: &str = "YWxpY2U6d3Jvbmc=";
/// Blocks of the generated chain.
const CHAIN_BLOCKS: u64 = 150;
/// Core's `-rpcthreads` default, which the node under test keeps.
const RPC_THREADS: u64 = 16;
/// Core's delay before a failed authentication's 401, milliseconds.
const FAILED_AUTH_DELAY_MS: u64 = 250;

/// A generated chain imported by a node that stays up with its RPC server.
struct Node {
    datadir: PathBuf,
    port: u16,
    process: NodeProcess,
}

impl Node {
    /// A node over the tiny chain of [`CHAIN_BLOCKS`] blocks.
    fn start(root: &Path, extra: &[&str]) -> Node {
        Node::start_over(root, &CHAIN_BLOCKS.to_string(), &[], extra)
    }

    /// A node over a tiny chain of `blocks` blocks made with the generator
    /// options `chain_options`, started with `extra`.
    fn start_over(root: &Path, blocks: &str, chain_options: &[&str], extra: &[&str]) -> Node {
        let chain = root.join("chain");
        generate_chain(&chain, "tiny", blocks, "3", chain_options);
        let datadir = common::datadir_with_blocks(&root.join("node"), &chain);
        let port = free_port();
        let options = [
            "-reindex".to_owned(),
            // Listening on a port of its own (it stays up after the
            // import either way, as bitcoind).
            "-listen=1".to_owned(),
            "-bind=127.0.0.1".to_owned(),
            format!("-port={}", free_port()),
            format!("-rpcport={port}"),
            "-rpcuser=alice".to_owned(),
            "-rpcpassword=secret".to_owned(),
        ];
        let mut arguments: Vec<&str> = options.iter().map(String::as_str).collect();
        arguments.extend_from_slice(extra);
        let mut process = common::spawn_node(&mut common::quiet_ibexd(
            &datadir,
            &common::REGTEST_QUIET,
            &arguments,
        ));
        wait_for_log(&datadir, "init message: Done loading", &mut process);
        let node = Node { datadir, port, process };
        let started = Instant::now();
        while node.call("getblockcount").status != 200 {
            assert!(started.elapsed() < common::NODE_WAIT, "the RPC server never answered");
            std::thread::sleep(Duration::from_millis(50));
        }
        node
    }

    /// A JSON-RPC call with the right credentials.
    fn call(&self, method: &str) -> Reply {
        let body = format!(r#"{{"method":"{method}","id":1}}"#);
        post(self.port, Some(CREDENTIALS_BASE64), body.as_bytes())
    }

    fn pid(&self) -> u32 {
        self.process.id()
    }

    fn stop(mut self) {
        assert_eq!(self.call("stop").status, 200);
        assert!(wait_exit(&mut self.process, &self.datadir).success());
    }
}

/// A reply's status, headers and body.
struct Reply {
    status: u16,
    body: Vec<u8>,
}

/// Reads one reply from a connection the server closes after it.
fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut bytes = Vec::new();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let _ = stream.read_to_end(&mut bytes);
    let Some(text_end) = bytes.windows(4).position(|window| window == b"\r\n\r\n") else {
        return Reply { status: 0, body: bytes };
    };
    let headers = String::from_utf8_lossy(&bytes[..text_end]).into_owned();
    let status = headers.split(' ').nth(1).and_then(|status| status.parse().ok()).unwrap_or(0);
    Reply { status, body: bytes[text_end + 4..].to_vec() }
}

/// POSTs `body` to `/` with `authorization` (base64 `user:password`).
fn post(port: u16, authorization: Option<&str>, body: &[u8]) -> Reply {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return Reply { status: 0, body: Vec::new() };
    };
    let mut request = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(authorization) = authorization {
        request.push_str(&format!("Authorization: Basic {authorization}\r\n"));
    }
    request.push_str("\r\n");
    let mut request = request.into_bytes();
    request.extend_from_slice(body);
    if stream.write_all(&request).is_err() {
        return Reply { status: 0, body: Vec::new() };
    }
    read_reply(&mut stream)
}

/// Runs `attack` on `threads` threads until `duration` has passed; each
/// call returns whether it counts. The number counted.
fn attack_for(threads: usize, duration: Duration, attack: impl Fn() -> bool + Sync) -> usize {
    let counted = AtomicUsize::new(0);
    let deadline = Instant::now() + duration;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while Instant::now() < deadline {
                    let counts = attack();
                    if counts && Instant::now() <= deadline {
                        counted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    counted.into_inner()
}

/// The longest of `count` honest `getblockcount` calls made one after
/// another while `busy` holds.
fn honest_latency_while(node_port: u16, busy: &AtomicBool, count: usize) -> Duration {
    let mut slowest = Duration::ZERO;
    for _ in 0..count {
        if !busy.load(Ordering::Relaxed) {
            break;
        }
        let started = Instant::now();
        let reply = post(node_port, Some(CREDENTIALS_BASE64), br#"{"method":"getblockcount"}"#);
        assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
        slowest = slowest.max(started.elapsed());
        std::thread::sleep(Duration::from_millis(50));
    }
    slowest
}

/// 64 connections guessing passwords for 2 s get at most `-rpcthreads` answers
/// per 250 ms (Core holds a worker thread for each failed attempt's delay), not
/// one per connection per 250 ms; a client with the right password is answered
/// within 500 ms meanwhile.
#[test]
fn password_guessing_is_bounded_per_second_while_honest_calls_pass() {
    const GUESSERS: usize = 64;
    const ATTACK_MS: u64 = 2_000;
    let root = tempfile::tempdir().unwrap();
    let node = Node::start(root.path(), &[]);
    let port = node.port;
    let busy = AtomicBool::new(true);
    let (guesses, honest_slowest) = std::thread::scope(|scope| {
        let honest = scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            honest_latency_while(port, &busy, 20)
        });
        let guesses = attack_for(GUESSERS, Duration::from_millis(ATTACK_MS), || {
            let body = br#"{"method":"getblockcount"}"#;
            post(port, Some(WRONG_CREDENTIALS_BASE64), body).status == 401
        });
        busy.store(false, Ordering::Relaxed);
        (guesses, honest.join().unwrap())
    });
    let bound = (RPC_THREADS * ATTACK_MS / FAILED_AUTH_DELAY_MS + RPC_THREADS) as usize;
    eprintln!(
        "failed authentications answered in {ATTACK_MS} ms by {GUESSERS} connections: {guesses} \
         (bound {bound}); slowest honest call {honest_slowest:?}"
    );
    assert!(guesses <= bound, "{guesses} guesses in {ATTACK_MS} ms, bound {bound}");
    assert!(guesses >= RPC_THREADS as usize, "guessers are still answered (401): {guesses}");
    assert!(honest_slowest < Duration::from_millis(500), "honest call took {honest_slowest:?}");
    node.stop();
}

/// Core's request body limit (`MAX_SIZE`), bytes.
const REQUEST_BODY_BYTES_MAX: usize = 32 << 20;
/// How long a request waits for room in its body budget before its 503.
const BODY_BUDGET_WAIT_MS: u64 = 5_000;

/// Opens a request declaring a 32 MiB body to `path` and sends 16 bytes
/// of it, then nothing more.
fn trickle_body(port: u16, path: &str, authorization: Option<&str>) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {REQUEST_BODY_BYTES_MAX}\r\n"
    );
    if let Some(authorization) = authorization {
        head.push_str(&format!("Authorization: Basic {authorization}\r\n"));
    }
    head.push_str("\r\n0000000000000000");
    stream.write_all(head.as_bytes()).unwrap();
    stream
}

/// Reads each trickled request's reply on a thread of its own; the
/// threads say whether a 503 came within `within` of `started`.
fn watch_for_503(
    streams: Vec<TcpStream>,
    started: Instant,
    within: Duration,
) -> Vec<std::thread::JoinHandle<bool>> {
    streams
        .into_iter()
        .map(|mut stream| {
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(within)).unwrap();
                let mut head = [0u8; 12];
                let read = stream.read_exact(&mut head);
                read.is_ok() && &head == b"HTTP/1.1 503" && started.elapsed() < within
            })
        })
        .collect()
}

/// How many of the watched requests got their 503 in time.
fn refused(watchers: Vec<std::thread::JoinHandle<bool>>) -> usize {
    watchers.into_iter().map(|watcher| watcher.join().unwrap()).filter(|refused| *refused).count()
}

/// The slowest of three calls of each of `bodies`, each answered 200.
fn slowest_call(port: u16, bodies: &[&str]) -> Duration {
    let mut slowest = Duration::ZERO;
    for body in bodies {
        for _ in 0..3 {
            let started = Instant::now();
            let reply = post(port, Some(CREDENTIALS_BASE64), body.as_bytes());
            assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
            slowest = slowest.max(started.elapsed());
        }
    }
    slowest
}

/// REST clients declaring 32 MiB `getutxos` bodies and trickling
/// them hold only the REST body budget: JSON-RPC calls (small bodies, and
/// a 100 KiB one that reserves from the JSON-RPC budget) are answered
/// within 500 ms meanwhile, and the REST requests that find no room wait
/// `BODY_BUDGET_WAIT_MS` (5 s) for their 503, not for ever. Authenticated
/// clients trickling JSON-RPC bodies then fill the JSON-RPC budget: small
/// calls (at most 64 KiB, never reserved) are still answered within
/// 500 ms, and the trickled requests past the budget get their 503 within
/// 5 s + 2 s.
#[test]
fn trickled_rest_bodies_do_not_delay_json_rpc_and_excess_waits_answer_503() {
    const REST_TRICKLERS: usize = 6;
    const JSON_RPC_TRICKLERS: usize = 5;
    let root = tempfile::tempdir().unwrap();
    let node = Node::start(root.path(), &["-rest", "-rpcservertimeout=30"]);
    let port = node.port;
    let within = Duration::from_millis(BODY_BUDGET_WAIT_MS + 2_000);
    let rest_started = Instant::now();
    let rest: Vec<TcpStream> =
        (0..REST_TRICKLERS).map(|_| trickle_body(port, "/rest/getutxos.bin", None)).collect();
    let rest_watchers = watch_for_503(rest, rest_started, within);
    std::thread::sleep(Duration::from_millis(300));
    let padded = format!(r#"{{"method":"getblockchaininfo","id":1{}}}"#, " ".repeat(100 << 10));
    let small = [r#"{"method":"getblockcount"}"#, r#"{"method":"getblockchaininfo"}"#];
    let beside_rest = slowest_call(port, &[small[0], small[1], &padded]);
    let json_rpc_started = Instant::now();
    let json_rpc: Vec<TcpStream> = (0..JSON_RPC_TRICKLERS)
        .map(|_| trickle_body(port, "/", Some(CREDENTIALS_BASE64)))
        .collect();
    let json_rpc_watchers = watch_for_503(json_rpc, json_rpc_started, within);
    std::thread::sleep(Duration::from_millis(300));
    let beside_json_rpc = slowest_call(port, &small);
    let (rest_refused, json_rpc_refused) = (refused(rest_watchers), refused(json_rpc_watchers));
    eprintln!(
        "slowest JSON-RPC call beside trickled REST bodies {beside_rest:?}, beside trickled \
         JSON-RPC bodies {beside_json_rpc:?}; 503 within {within:?}: {rest_refused} of \
         {REST_TRICKLERS} REST, {json_rpc_refused} of {JSON_RPC_TRICKLERS} JSON-RPC"
    );
    assert!(beside_rest < Duration::from_millis(500), "JSON-RPC waited {beside_rest:?}");
    assert!(beside_json_rpc < Duration::from_millis(500), "{beside_json_rpc:?}");
    // 64 MiB of REST budget holds one 32 MiB body; 128 MiB of JSON-RPC
    // budget holds three.
    assert_eq!(rest_refused, REST_TRICKLERS - 1, "REST requests past the budget get 503");
    assert_eq!(json_rpc_refused, JSON_RPC_TRICKLERS - 3, "JSON-RPC past the budget get 503");
    node.stop();
}

/// `VmHWM` of a process, in bytes.
fn peak_memory_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Sockets a process holds open (listeners included).
fn open_sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| std::fs::read_link(entry.path()).ok())
                .filter(|target| target.to_string_lossy().starts_with("socket:"))
                .count()
        })
        .unwrap_or(0)
}

/// GETs `path` on a connection closed after the reply.
fn get(port: u16, path: &str) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    read_reply(&mut stream)
}

/// The block whose REST JSON is largest among heights `heights`, and that
/// JSON's length in bytes.
fn largest_block_json(port: u16, heights: std::ops::RangeInclusive<u64>) -> (String, usize) {
    let mut largest = (String::new(), 0);
    for height in heights {
        let reply = get(port, &format!("/rest/blockhashbyheight/{height}.hex"));
        assert_eq!(reply.status, 200);
        let hash = String::from_utf8(reply.body).unwrap().trim().to_owned();
        let json = get(port, &format!("/rest/block/{hash}.json"));
        assert_eq!(json.status, 200);
        if json.body.len() > largest.1 {
            largest = (hash, json.body.len());
        }
    }
    largest
}

/// Replies of more than 64 KiB held at once, across connections, bytes.
const REPLY_BYTES_IN_FLIGHT_MAX: u64 = 128 << 20;

/// 200 clients each ask for the largest block's REST JSON (12 MB:
/// 2.4 GB between them) and never read. The node's peak memory grows by
/// at most twice the reply budget (128 MiB: a REST block reply takes its
/// room before it is built, and one being built may hold its old and new
/// buffers while it grows) plus 128 MiB; an honest `getblockcount` is answered
/// within 1 s throughout; the non-readers' connections are closed once
/// their writes have stalled for `-rpcservertimeout` (5 s); and the block
/// is served whole afterwards.
#[test]
fn clients_that_never_read_large_replies_hold_bounded_memory_and_are_closed() {
    const NON_READERS: usize = 200;
    const SERVER_TIMEOUT_SECONDS: u64 = 5;
    let root = tempfile::tempdir().unwrap();
    let timeout = format!("-rpcservertimeout={SERVER_TIMEOUT_SECONDS}");
    let chain = ["--target-weight", "4000000"];
    let node = Node::start_over(root.path(), "120", &chain, &["-rest", &timeout]);
    let (port, pid) = (node.port, node.pid());
    let fetches_started = Instant::now();
    let (hash, json_bytes) = largest_block_json(port, 101..=120);
    eprintln!(
        "20 blocks' REST JSON, the largest {json_bytes} bytes: {:?}",
        fetches_started.elapsed()
    );
    let (memory_before, sockets_before) = (peak_memory_bytes(pid), open_sockets(pid));
    let request = format!("GET /rest/block/{hash}.json HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let busy = AtomicBool::new(true);
    let (non_readers, honest_slowest) = std::thread::scope(|scope| {
        let honest = scope.spawn(|| honest_latency_while(port, &busy, 1_000));
        let mut non_readers = Vec::new();
        for _ in 0..NON_READERS / 10 {
            for _ in 0..10 {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
                stream.write_all(request.as_bytes()).unwrap();
                non_readers.push(stream);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let attack_sent = Instant::now();
        while open_sockets(pid) > sockets_before + 2 {
            assert!(
                attack_sent.elapsed() < Duration::from_secs(SERVER_TIMEOUT_SECONDS + 15),
                "{} sockets still open",
                open_sockets(pid)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "non-readers' connections closed {:?} after the last request",
            attack_sent.elapsed()
        );
        busy.store(false, Ordering::Relaxed);
        (non_readers, honest.join().unwrap())
    });
    let memory_grown = peak_memory_bytes(pid).saturating_sub(memory_before);
    let bound = 2 * REPLY_BYTES_IN_FLIGHT_MAX + (128 << 20);
    eprintln!(
        "{NON_READERS} non-readers of {json_bytes} bytes of JSON each: VmHWM grew {} MiB \
         (bound {} MiB); slowest honest call {honest_slowest:?}",
        memory_grown >> 20,
        bound >> 20
    );
    drop(non_readers);
    assert!(memory_grown < bound, "VmHWM grew {} MiB", memory_grown >> 20);
    assert!(honest_slowest < Duration::from_secs(1), "honest call took {honest_slowest:?}");
    let whole = get(port, &format!("/rest/block/{hash}.json"));
    assert_eq!((whole.status, whole.body.len()), (200, json_bytes));
    node.stop();
}

/// A batch reply at most, bytes.
const BATCH_REPLY_BYTES_MAX: u64 = 128 << 20;

/// Batches whose replies would be gigabytes (an id of 1 MiB that
/// Core echoes for each of 15 million elements that are not objects; 10
/// million empty objects each answered with an error) are refused with -7
/// (Core's `RPC_OUT_OF_MEMORY`) while the node's peak memory grows by less
/// than the batch bound plus two copies of the body (hyper's chunks and
/// the whole) and 128 MiB; an ordinary batch
/// is answered after.
#[test]
fn batches_whose_replies_exceed_the_bound_are_refused_before_memory_grows() {
    let root = tempfile::tempdir().unwrap();
    let node = Node::start(root.path(), &[]);
    let (port, pid) = (node.port, node.pid());
    let memory_before = peak_memory_bytes(pid);
    let id = "x".repeat(1 << 20);
    let echoed =
        format!(r#"[{{"method":"getblockcount","id":"{id}"}}{}]"#, ",0".repeat(15_000_000));
    let empty_objects = format!("[{}{{}}]", "{},".repeat(10_000_000));
    let expected = format!("Batch reply too large: more than {BATCH_REPLY_BYTES_MAX} bytes");
    for body in [&echoed, &empty_objects] {
        assert!(body.len() < REQUEST_BODY_BYTES_MAX);
        let reply = post(port, Some(CREDENTIALS_BASE64), body.as_bytes());
        assert_eq!(reply.status, 500);
        let error: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
        assert_eq!(error["error"]["code"], -7, "{error}");
        assert_eq!(error["error"]["message"], expected.as_str());
    }
    let memory_grown = peak_memory_bytes(pid).saturating_sub(memory_before);
    let bound = BATCH_REPLY_BYTES_MAX + 2 * REQUEST_BODY_BYTES_MAX as u64 + (128 << 20);
    eprintln!("refused batches: VmHWM grew {} MiB (bound {} MiB)", memory_grown >> 20, bound >> 20);
    assert!(memory_grown < bound, "VmHWM grew {} MiB", memory_grown >> 20);
    let ordinary = br#"[{"method":"getblockcount","id":1},{"method":"getbestblockhash","id":2}]"#;
    let reply = post(port, Some(CREDENTIALS_BASE64), ordinary);
    assert_eq!(reply.status, 200);
    let answers: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(answers[0]["result"], CHAIN_BLOCKS);
    assert_eq!(answers.as_array().unwrap().len(), 2);
    node.stop();
}

/// `GET /metrics` on `port`: the status and how long the reply took.
fn scrape(port: u16) -> (u16, Duration) {
    let started = Instant::now();
    let reply = get(port, "/metrics");
    assert!(reply.status != 200 || String::from_utf8_lossy(&reply.body).contains("ibex_"));
    (reply.status, started.elapsed())
}

/// One client keeps opening metrics connections that never finish
/// their headers (up to 500 open at once, a new one every 2 ms) for 3 s;
/// honest scrapes made meanwhile are each answered within 1 s (a new
/// connection closes the oldest when the slots are full, instead of
/// waiting up to a connection's lifetime of 60 s for one to free).
#[test]
fn idle_metrics_connections_cannot_keep_a_scrape_waiting() {
    const ATTACK_MS: u64 = 3_000;
    const HELD_CONNECTIONS_MAX: usize = 500;
    let root = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let metrics = format!("-metrics=127.0.0.1:{metrics_port}");
    let node = Node::start(root.path(), &[&metrics]);
    assert_eq!(scrape(metrics_port).0, 200);
    let attacking = AtomicBool::new(true);
    let opened = AtomicUsize::new(0);
    let scrapes = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut held = std::collections::VecDeque::new();
            while attacking.load(Ordering::Relaxed) {
                if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", metrics_port)) {
                    let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHo");
                    held.push_back(stream);
                    opened.fetch_add(1, Ordering::Relaxed);
                }
                if held.len() > HELD_CONNECTIONS_MAX {
                    held.pop_front();
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        let started = Instant::now();
        let mut scrapes = Vec::new();
        while started.elapsed() < Duration::from_millis(ATTACK_MS) {
            scrapes.push(scrape(metrics_port));
            std::thread::sleep(Duration::from_millis(100));
        }
        attacking.store(false, Ordering::Relaxed);
        scrapes
    });
    let slowest = scrapes.iter().map(|(_, took)| *took).max().unwrap();
    eprintln!(
        "{} scrapes beside {} idle connections opened: slowest {slowest:?}",
        scrapes.len(),
        opened.load(Ordering::Relaxed)
    );
    assert!(scrapes.iter().all(|(status, _)| *status == 200), "{scrapes:?}");
    assert!(slowest < Duration::from_secs(1), "a scrape took {slowest:?}");
    node.stop();
}
