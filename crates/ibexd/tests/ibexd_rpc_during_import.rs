//! `ibexd` answers RPC from its start, as `bitcoind` does: once its port is
//! bound, every call gets an answer (-28 with the warmup status while the
//! chainstate loads, then `getblockchaininfo` with the height the import
//! has reached, growing block by block), never a refused connection, and
//! each within a bounded time; the import's result is the same as without
//! the calls.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{datadir_with_blocks, free_port, generate_chain, log_or_empty, utxo_hash, wait_exit};
use serde_json::Value;

/// Blocks of the generated chain: ~600 blocks of the `small` profile take
/// a few seconds to import, long enough to see the height grow.
const BLOCKS: u64 = 600;

/// The longest a call may wait. The engine answers reads between two
/// blocks (a few ms each here) and during the loading steps the server
/// answers -28 at once; a CI machine busy with other work gets a margin
/// of two orders of magnitude.
const CALL_LATENCY_MAX: Duration = Duration::from_secs(5);

/// `method` with `user:password` credentials (`dXNlcjpwYXNz` is
/// `user:pass`): the reply's JSON body. The connection must be accepted.
fn call(port: u16, method: &str) -> Value {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|error| panic!("RPC port {port} refused a connection: {error}"));
    let body = format!(r#"{{"jsonrpc":"1.0","id":1,"method":"{method}","params":[]}}"#);
    let request = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic dXNlcjpwYXNz\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let json = reply.split_once("\r\n\r\n").map_or("", |(_, json)| json);
    serde_json::from_str(json).unwrap_or_else(|error| panic!("{error}: {reply}"))
}

/// The height a `getblockchaininfo` reply gives, or `None` for Core's -28
/// (warming up, or no block connected yet); anything else fails.
fn height_of(reply: &Value) -> Option<u64> {
    if reply["error"].is_null() {
        return Some(reply["result"]["blocks"].as_u64().expect("no blocks in the result"));
    }
    assert_eq!(reply["error"]["code"], -28, "{reply}");
    None
}

#[test]
fn ibexd_answers_getblockchaininfo_at_every_moment_of_a_reindex() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "small", &BLOCKS.to_string(), "7", &[]);
    let datadir = datadir_with_blocks(&root.path().join("node"), &chain);
    let rpc_port = free_port();
    let (rpc_option, p2p_option) =
        (format!("-rpcport={rpc_port}"), format!("-port={}", free_port()));
    let options = [
        "-reindex",
        "-listen=1",
        "-bind=127.0.0.1",
        "-rpcuser=user",
        "-rpcpassword=pass",
        p2p_option.as_str(),
        rpc_option.as_str(),
    ];
    let mut child =
        common::spawn_node(&mut common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, &options));
    common::wait_for_log(&datadir, "Binding RPC on address", &mut child);

    let mut heights = Vec::new();
    let mut warming_up = 0;
    let mut slowest = Duration::ZERO;
    let started = Instant::now();
    while !log_or_empty(&datadir).contains("init message: Done loading") {
        assert!(child.try_wait().unwrap().is_none(), "{}", log_or_empty(&datadir));
        assert!(started.elapsed() < common::NODE_WAIT, "{}", log_or_empty(&datadir));
        let asked = Instant::now();
        let reply = call(rpc_port, "getblockchaininfo");
        slowest = slowest.max(asked.elapsed());
        match height_of(&reply) {
            Some(height) => heights.push(height),
            None => warming_up += 1,
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let answered = call(rpc_port, "getblockchaininfo");
    assert_eq!(height_of(&answered), Some(BLOCKS), "{answered}");
    assert!(slowest < CALL_LATENCY_MAX, "a call waited {slowest:?}");
    assert!(heights.windows(2).all(|pair| pair[0] <= pair[1]), "{heights:?}");
    let during_import: std::collections::BTreeSet<_> =
        heights.iter().filter(|height| **height < BLOCKS).collect();
    assert!(
        during_import.len() >= 3,
        "the import answered at heights {during_import:?} ({warming_up} calls got -28)"
    );
    call(rpc_port, "stop");
    assert!(wait_exit(&mut child, &datadir).success(), "{}", log_or_empty(&datadir));

    // The same import without a server, nor calls, gives the same coins.
    let alone = datadir_with_blocks(&root.path().join("alone"), &chain);
    let stop = format!("-stopatheight={BLOCKS}");
    let options = ["-reindex", "-server=0", stop.as_str()];
    let status = common::quiet_ibexd(&alone, &common::REGTEST_QUIET, &options).status().unwrap();
    assert!(status.success());
    assert_eq!(utxo_hash(&datadir), utxo_hash(&alone));
}
