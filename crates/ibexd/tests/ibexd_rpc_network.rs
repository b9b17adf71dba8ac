//! The network methods against two `ibexd` on loopback: A imports a
//! generated chain and listens (RPC with user and password); B starts
//! empty with `-addnode` A (RPC with its cookie) and syncs. Each side's
//! `getpeerinfo`, `getconnectioncount`, `getnettotals`, `getnetworkinfo`
//! and `getaddednodeinfo` must describe the same connection from its own
//! end (addresses and ports crossed, inbound on A only, the v2 session id
//! shared, bytes counted, B's peer synced to A's tip); `addnode remove`
//! stops the reconnecting, `disconnectnode` drops the peer, `addnode
//! onetry` brings it back; bad inputs get Core's codes; `setban` and
//! friends keep Core's list. With `IBEX_CORE_BIN`, Core's `bitcoin-cli
//! getpeerinfo` reads B's answer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{datadir_with_blocks, free_port, generate_chain, wait_exit, wait_for_log, NODE_WAIT};
use serde_json::{json, Value};

const BLOCKS: u64 = 150;
const A_CREDENTIALS: &str = "alice:secret";

fn base64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in text.as_bytes().chunks(3) {
        let value = chunk
            .iter()
            .enumerate()
            .fold(0u32, |value, (index, byte)| value | u32::from(*byte) << (16 - 8 * index));
        for index in 0..4 {
            let sextet = (value >> (18 - 6 * index) & 63) as usize;
            out.push(if index <= chunk.len() { char::from(ALPHABET[sextet]) } else { '=' });
        }
    }
    out
}

/// One node's RPC endpoint.
struct Rpc {
    port: u16,
    credentials: String,
}

impl Rpc {
    /// The whole JSON-RPC reply to `method` with `params`.
    fn reply(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "1.0", "id": 1, "method": method, "params": params});
        let body = body.to_string();
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let request = format!(
            "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            base64(&self.credentials),
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (_, json) = response.split_once("\r\n\r\n").unwrap();
        serde_json::from_str(json).unwrap_or_else(|_| panic!("{method}: {response}"))
    }

    /// The result of `method`, which must succeed.
    fn call(&self, method: &str, params: Value) -> Value {
        let reply = self.reply(method, params.clone());
        assert_eq!(reply["error"], Value::Null, "{method} {params}: {reply}");
        reply["result"].clone()
    }

    /// Asserts `method` fails with `code` and a message starting with
    /// `message`.
    fn assert_error(&self, method: &str, params: Value, code: i64, message: &str) {
        let reply = self.reply(method, params.clone());
        let error = &reply["error"];
        assert_eq!(error["code"], json!(code), "{method} {params}: {reply}");
        let text = error["message"].as_str().unwrap();
        assert!(text.starts_with(message), "{method} {params}: {text}");
    }

    /// Polls `method` until `done` holds for its result.
    fn wait_until(&self, method: &str, params: Value, done: impl Fn(&Value) -> bool) -> Value {
        let started = Instant::now();
        loop {
            let result = self.call(method, params.clone());
            if done(&result) {
                return result;
            }
            assert!(started.elapsed() < NODE_WAIT, "{method} never got there: {result}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A node's datadir, its P2P and RPC ports, and the process.
struct Node {
    datadir: PathBuf,
    rpc: Rpc,
    process: common::NodeProcess,
}

fn start_node(datadir: &Path, options: &[&str], rpc_port: u16) -> common::NodeProcess {
    let rpc_option = format!("-rpcport={rpc_port}");
    let mut all = vec![rpc_option.as_str(), "-dnsseed=0", "-fixedseeds=0"];
    all.extend_from_slice(options);
    let mut process =
        common::spawn_node(&mut common::quiet_ibexd(datadir, &common::REGTEST_QUIET, &all));
    wait_for_log(datadir, "init message: Done loading", &mut process);
    process
}

/// A: the chain imported, listening on `p2p_port`, RPC with a password.
fn serving_node(root: &Path, p2p_port: u16) -> Node {
    let chain = root.join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "15", &[]);
    let datadir = datadir_with_blocks(&root.join("a"), &chain);
    let rpc_port = free_port();
    let port = format!("-port={p2p_port}");
    let options = ["-reindex", "-listen=1", "-bind=127.0.0.1", &port, "-rpcuser=alice"];
    let process =
        start_node(&datadir, &[&options[..], &["-rpcpassword=secret"]].concat(), rpc_port);
    let rpc = Rpc { port: rpc_port, credentials: A_CREDENTIALS.to_owned() };
    Node { datadir, rpc, process }
}

/// B: empty, `-addnode` A, RPC with its cookie.
fn syncing_node(root: &Path, a_port: u16) -> Node {
    let datadir = root.join("b");
    std::fs::create_dir_all(&datadir).unwrap();
    let rpc_port = free_port();
    let add = format!("-addnode=127.0.0.1:{a_port}");
    let process = start_node(&datadir, &[&add, "-listen=0"], rpc_port);
    let cookie = std::fs::read_to_string(datadir.join("regtest/.cookie")).unwrap();
    let rpc = Rpc { port: rpc_port, credentials: cookie.trim().to_owned() };
    Node { datadir, rpc, process }
}

fn number(value: &Value) -> u64 {
    value.as_u64().unwrap_or_else(|| panic!("not a number: {value}"))
}

fn only_peer(peers: &Value) -> &Value {
    let peers = peers.as_array().unwrap();
    assert_eq!(peers.len(), 1, "{peers:?}");
    &peers[0]
}

/// Both ends of the one connection, each from its side.
fn check_both_ends(a: &Node, b: &Node, a_port: u16) {
    let b_peers = b.rpc.wait_until("getpeerinfo", json!([]), |peers| {
        peers.as_array().is_some_and(|peers| {
            peers.len() == 1
                && peers[0]["synced_headers"] == json!(BLOCKS)
                && peers[0]["synced_blocks"] == json!(BLOCKS)
        })
    });
    let from_b = only_peer(&b_peers);
    assert_eq!(from_b["addr"], json!(format!("127.0.0.1:{a_port}")));
    assert_eq!(from_b["inbound"], json!(false));
    assert_eq!(from_b["connection_type"], json!("manual"));
    assert_eq!(from_b["network"], json!("not_publicly_routable"));
    assert_eq!(from_b["startingheight"], json!(BLOCKS), "A announced its tip");
    assert_eq!(from_b["version"], json!(70016));
    assert!(from_b["subver"].as_str().unwrap().starts_with("/Ibex:"), "{from_b}");
    assert_eq!(from_b["transport_protocol_type"], json!("v2"));
    assert_eq!(from_b["inflight"], json!([]));
    assert!(from_b["last_block"].as_i64().unwrap() > 0, "A sent B new blocks: {from_b}");
    let names = from_b["servicesnames"].as_array().unwrap();
    assert!(names.contains(&json!("NETWORK")) && names.contains(&json!("WITNESS")), "{names:?}");
    assert!(number(&from_b["bytesrecv"]) > number(&from_b["bytessent"]), "B downloads: {from_b}");
    let b_bind = from_b["addrbind"].as_str().unwrap().to_owned();

    let a_peers = a.rpc.call("getpeerinfo", json!([]));
    let from_a = only_peer(&a_peers);
    assert_eq!(from_a["addr"], json!(b_bind), "A sees B at B's end of the socket");
    assert_eq!(from_a["addrbind"], json!(format!("127.0.0.1:{a_port}")));
    assert_eq!(from_a["inbound"], json!(true));
    assert_eq!(from_a["connection_type"], json!("inbound"));
    assert_eq!(from_a["startingheight"], json!(0), "B started empty");
    assert_eq!(from_a["session_id"], from_b["session_id"], "one BIP324 session");
    assert_eq!(from_a["session_id"].as_str().unwrap().len(), 64);
    assert!(number(&from_a["bytessent"]) > 0 && number(&from_a["bytesrecv"]) > 0);

    for (node, inbound) in [(a, 1), (b, 0)] {
        assert_eq!(node.rpc.call("getconnectioncount", json!([])), json!(1));
        let info = node.rpc.call("getnetworkinfo", json!([]));
        assert_eq!(info["connections"], json!(1));
        assert_eq!(info["connections_in"], json!(inbound));
        assert_eq!(info["connections_out"], json!(1 - inbound));
        assert_eq!(info["protocolversion"], json!(70016));
        assert_eq!(info["localrelay"], json!(false));
        assert!(info["localservicesnames"].as_array().unwrap().contains(&json!("P2P_V2")));
        assert_eq!(
            info["networks"][0],
            json!({"name": "ipv4", "limited": false, "reachable": true, "proxy": "", "proxy_randomize_credentials": false})
        );
        assert_eq!(info["networks"][2]["reachable"], json!(false), "no Tor");
    }
    let a_totals = a.rpc.call("getnettotals", json!([]));
    let b_totals = b.rpc.call("getnettotals", json!([]));
    assert!(number(&a_totals["totalbytessent"]) >= number(&from_a["bytessent"]));
    assert!(number(&b_totals["totalbytesrecv"]) >= number(&from_b["bytesrecv"]));
    assert!(number(&b_totals["totalbytesrecv"]) > 10_000, "{BLOCKS} blocks: {b_totals}");
    let now_millis =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis()
            as u64;
    assert!(number(&b_totals["timemillis"]).abs_diff(now_millis) < 60_000, "{b_totals}");
}

fn bad_inputs_get_cores_errors(b: &Node, a_port: u16) {
    let a_address = format!("127.0.0.1:{a_port}");
    b.rpc.assert_error("addnode", json!([a_address, "add"]), -23, "Error: Node already added");
    b.rpc.assert_error(
        "addnode",
        json!([format!("127.0.0.1:{a_port}"), "bogus"]),
        -1,
        "addnode \"node\" \"command\"",
    );
    b.rpc.assert_error(
        "addnode",
        json!(["10.9.9.9", "remove"]),
        -24,
        "Error: Node could not be removed.",
    );
    b.rpc.assert_error("addnode", json!([a_address, "add", "yes"]), -3, "Wrong type passed");
    b.rpc.assert_error(
        "disconnectnode",
        json!(["", 999_999]),
        -29,
        "Node not found in connected nodes",
    );
    b.rpc.assert_error(
        "disconnectnode",
        json!(["10.9.9.9:1"]),
        -29,
        "Node not found in connected nodes",
    );
    let both = "Only one of address and nodeid should be provided.";
    b.rpc.assert_error("disconnectnode", json!([a_address, 0]), -32602, both);
    b.rpc.assert_error("disconnectnode", json!([]), -32602, both);
    b.rpc.assert_error(
        "getaddednodeinfo",
        json!(["10.9.9.9"]),
        -24,
        "Error: Node has not been added.",
    );
    b.rpc.assert_error("getnodeaddresses", json!([-1]), -8, "Address count out of range");
    b.rpc.assert_error("getnodeaddresses", json!([0, "foo"]), -8, "Network not recognized: foo");
    b.rpc.assert_error("setban", json!(["not an ip", "add"]), -30, "Error: Invalid IP/Subnet");
    b.rpc.assert_error("setban", json!(["10.9.9.9", "bogus"]), -1, "setban \"subnet\" \"command\"");
    b.rpc.assert_error("setban", json!(["10.9.9.9", "remove"]), -30, "Error: Unban failed.");
    b.rpc.assert_error(
        "setban",
        json!(["10.9.9.9", "add", 5, true]),
        -8,
        "Error: Absolute timestamp is in the past",
    );
    assert!(b.rpc.call("getnodeaddresses", json!([0, "ipv4"])).is_array());
}

fn bans_as_core_lists_them(a: &Node) {
    assert_eq!(a.rpc.call("setban", json!(["10.1.2.3", "add"])), Value::Null);
    a.rpc.assert_error(
        "setban",
        json!(["10.1.2.3/32", "add"]),
        -23,
        "Error: IP/Subnet already banned",
    );
    assert_eq!(a.rpc.call("setban", json!(["::ffff:10.1.2.4", "add", 100])), Value::Null);
    let banned = a.rpc.call("listbanned", json!([]));
    let banned = banned.as_array().unwrap();
    let addresses: Vec<&Value> = banned.iter().map(|ban| &ban["address"]).collect();
    assert_eq!(addresses, [&json!("10.1.2.3/32"), &json!("10.1.2.4/32")]);
    assert_eq!(banned[0]["ban_duration"], json!(86_400));
    assert_eq!(banned[1]["ban_duration"], json!(100));
    assert!(number(&banned[1]["time_remaining"]) <= 100);
    assert_eq!(a.rpc.call("setban", json!(["10.1.2.3", "remove"])), Value::Null);
    assert_eq!(a.rpc.call("listbanned", json!([])).as_array().unwrap().len(), 1);
    assert_eq!(a.rpc.call("clearbanned", json!([])), Value::Null);
    assert_eq!(a.rpc.call("listbanned", json!([])), json!([]));
}

/// `addnode remove` keeps the connection; `disconnectnode` drops it and
/// nothing reconnects; `onetry` connects again (not as an added node).
fn disconnect_and_try_again(a: &Node, b: &Node, a_port: u16) {
    let a_address = format!("127.0.0.1:{a_port}");
    let added = b.rpc.call("getaddednodeinfo", json!([]));
    let expected = json!([{"addednode": a_address, "connected": true, "addresses": [{"address": a_address, "connected": "outbound"}]}]);
    assert_eq!(added, expected);
    assert_eq!(b.rpc.call("addnode", json!([a_address, "remove"])), Value::Null);
    assert_eq!(b.rpc.call("getaddednodeinfo", json!([])), json!([]));
    assert_eq!(b.rpc.call("getconnectioncount", json!([])), json!(1), "remove keeps it");
    assert_eq!(b.rpc.call("disconnectnode", json!([a_address])), Value::Null);
    b.rpc.wait_until("getconnectioncount", json!([]), |count| *count == json!(0));
    a.rpc.wait_until("getconnectioncount", json!([]), |count| *count == json!(0));
    // More than the manual reconnect delay (0.5 s): nothing comes back.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(b.rpc.call("getpeerinfo", json!([])), json!([]));
    assert_eq!(b.rpc.call("addnode", json!([a_address, "onetry"])), Value::Null);
    let peers = b.rpc.wait_until("getpeerinfo", json!([]), |peers| {
        peers.as_array().is_some_and(|peers| peers.len() == 1 && peers[0]["version"] != json!(0))
    });
    let peer = only_peer(&peers);
    assert_eq!((&peer["addr"], &peer["connection_type"]), (&json!(a_address), &json!("manual")));
    assert_eq!(b.rpc.call("getaddednodeinfo", json!([])), json!([]), "onetry is not added");
    let a_peers = a.rpc.wait_until("getpeerinfo", json!([]), |peers| {
        peers.as_array().is_some_and(|peers| peers.len() == 1)
    });
    // Now by id, from A's side.
    let id = only_peer(&a_peers)["id"].clone();
    assert_eq!(a.rpc.call("disconnectnode", json!(["", id])), Value::Null);
    a.rpc.wait_until("getconnectioncount", json!([]), |count| *count == json!(0));
    b.rpc.wait_until("getconnectioncount", json!([]), |count| *count == json!(0));
}

fn bitcoin_cli_reads_getpeerinfo(b: &Node) {
    let Some(directory) = std::env::var_os("IBEX_CORE_BIN") else {
        eprintln!("skipped: bitcoin-cli getpeerinfo against ibexd (IBEX_CORE_BIN not set)");
        return;
    };
    let output = std::process::Command::new(Path::new(&directory).join("bitcoin-cli"))
        .arg(format!("-datadir={}", b.datadir.display()))
        .args(["-regtest", &format!("-rpcport={}", b.rpc.port), "getpeerinfo"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let peers: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(only_peer(&peers)["connection_type"], json!("manual"));
}

fn stop(node: &mut Node) {
    assert!(node.rpc.call("stop", json!([])).as_str().unwrap().contains("stopping"));
    let status = wait_exit(&mut node.process, &node.datadir);
    assert!(status.success(), "{status:?}");
}

#[test]
fn network_methods_describe_both_ends_of_a_loopback_connection() {
    let root = tempfile::tempdir().unwrap();
    let a_port = free_port();
    let mut a = serving_node(root.path(), a_port);
    let mut b = syncing_node(root.path(), a_port);
    b.rpc.wait_until("getblockcount", json!([]), |count| *count == json!(BLOCKS));
    check_both_ends(&a, &b, a_port);
    bitcoin_cli_reads_getpeerinfo(&b);
    bad_inputs_get_cores_errors(&b, a_port);
    bans_as_core_lists_them(&a);
    disconnect_and_try_again(&a, &b, a_port);
    stop(&mut b);
    stop(&mut a);
}
