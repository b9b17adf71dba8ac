//! The nodes around a hostile peer: an honest `ibexd` serving a generated
//! chain (A) and the `ibexd` under attack syncing it (B), which listens on
//! loopback for the fake peers and reaches A through `-connect`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ibex_primitives::BlockHash;

use super::ChainData;
use crate::common::{self, NodeProcess};

/// Weight the test chains' blocks fill toward: a few transactions each, so
/// that a chain of 2,000 blocks is generated and synced in about a second.
const CHAIN_TARGET_WEIGHT: &str = "12000";

/// A generated chain in a temporary directory.
pub struct Setup {
    /// Everything of the test lives under it.
    pub root: tempfile::TempDir,
    /// The chain's directory (block file, `xor.dat`, manifest).
    pub chain_directory: PathBuf,
    /// The chain, read back.
    pub chain: ChainData,
}

impl Setup {
    /// A tiny chain of `blocks` blocks (`extra`: more `ibex gen` options),
    /// not obfuscated so the fake peers can read it.
    pub fn generate(blocks: u32, seed: &str, extra: &[&str]) -> Setup {
        let root = tempfile::tempdir().unwrap();
        let chain_directory = root.path().join("chain");
        let mut options = vec!["--target-weight", CHAIN_TARGET_WEIGHT, "--xor-zero"];
        options.extend_from_slice(extra);
        common::generate_chain(&chain_directory, "tiny", &blocks.to_string(), seed, &options);
        let chain = ChainData::read(&chain_directory);
        Setup { root, chain_directory, chain }
    }

    /// The line B logs once it holds every header of the chain.
    pub fn headers_line(&self) -> String {
        format!("Synchronizing blockheaders, height: {} ", self.chain.tip_height())
    }

    /// `UpdateTip` of the chain's tip, as the log writes it.
    pub fn tip_line(&self) -> String {
        update_tip_line(self.chain.tip(), self.chain.tip_height())
    }
}

/// `UpdateTip: new best=<hash> height=<height> `.
pub fn update_tip_line(hash: BlockHash, height: u32) -> String {
    format!("UpdateTip: new best={hash} height={height} ")
}

/// A running `ibexd`.
pub struct Node {
    /// Its data directory.
    pub datadir: PathBuf,
    /// Its P2P port on 127.0.0.1.
    pub port: u16,
    /// The process (killed when dropped).
    pub process: NodeProcess,
}

/// A: imports the chain from its block file and serves it on a free port.
pub fn serving_node(setup: &Setup) -> Node {
    let datadir = common::datadir_with_blocks(&setup.root.path().join("a"), &setup.chain_directory);
    let port = common::free_port();
    let port_option = format!("-port={port}");
    let options = ["-reindex", "-listen=1", "-bind=127.0.0.1", &port_option, "-server=0"];
    start(datadir, port, &options)
}

/// B: empty, listening on a free port, connected to A (`a_port`) with
/// `-connect` (a manual peer), with `extra` options.
pub fn syncing_node(setup: &Setup, a_port: u16, extra: &[&str]) -> Node {
    let datadir = setup.root.path().join("b");
    std::fs::create_dir_all(&datadir).unwrap();
    let port = common::free_port();
    let port_option = format!("-port={port}");
    let connect = format!("-connect=127.0.0.1:{a_port}");
    let mut options = vec!["-listen=1", "-bind=127.0.0.1", &port_option, &connect];
    if !extra.iter().any(|option| option.starts_with("-server") || option.starts_with("-rpc")) {
        options.push("-server=0");
    }
    options.extend_from_slice(extra);
    start(datadir, port, &options)
}

fn start(datadir: PathBuf, port: u16, options: &[&str]) -> Node {
    let mut command = common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, options);
    let mut process = common::spawn_node(&mut command);
    common::wait_for_log(&datadir, "Bound to 127.0.0.1", &mut process);
    Node { datadir, port, process }
}

impl Node {
    /// Its log so far.
    pub fn log(&self) -> String {
        common::log_or_empty(&self.datadir)
    }

    /// Waits until its log holds `text` (fails after `NODE_WAIT`).
    pub fn wait_for_log(&mut self, text: &str) {
        common::wait_for_log(&self.datadir, text, &mut self.process);
    }

    /// Waits until its log holds a line with `text` and the peer id of a
    /// fake peer marked `blocks=<marker>` in its `version`; that id.
    pub fn peer_id(&mut self, marker: i32) -> u64 {
        let needle = format!("blocks={marker}, peer=");
        self.wait_for_log(&needle);
        let log = self.log();
        let line = log.lines().find(|line| line.contains(&needle)).unwrap();
        line.rsplit("peer=").next().unwrap().trim().parse().unwrap()
    }

    /// Whether its log holds `text`.
    pub fn logged(&self, text: &str) -> bool {
        self.log().contains(text)
    }

    /// The peak resident set of the process so far (`VmHWM`), bytes.
    pub fn peak_resident_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.process.id()))
            .expect("the node runs");
        let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
        let kibibytes: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kibibytes * 1024
    }

    /// Stops it with SIGTERM; it must exit cleanly.
    pub fn stop(&mut self) {
        let pid = self.process.id().to_string();
        let signal = std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(signal.success());
        let status = common::wait_exit(&mut self.process, &self.datadir);
        assert!(status.success(), "{status:?}\n{}", self.log());
    }

    /// Its UTXO set hash at its height (stopped first).
    pub fn utxo_hash(&self) -> String {
        common::utxo_hash(&self.datadir)
    }

    /// Its data directory.
    pub fn datadir(&self) -> &Path {
        &self.datadir
    }
}

/// Waits until `condition` holds, checking every 20 ms, for at most `wait`.
pub fn wait_until(wait: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < wait {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}

/// Ends a scenario: B reached the chain's tip, its peak memory stayed
/// under `peak_bytes_max`, both nodes stop cleanly and B's UTXO set is A's.
pub fn finish(setup: &Setup, mut a: Node, mut b: Node, peak_bytes_max: u64) -> String {
    b.wait_for_log(&setup.tip_line());
    let peak = b.peak_resident_bytes();
    eprintln!("B's peak resident set: {:.1} MiB", peak as f64 / (1 << 20) as f64);
    assert!(peak < peak_bytes_max, "B peaked at {peak} bytes, over {peak_bytes_max}\n{}", b.log());
    b.stop();
    a.stop();
    let expected = a.utxo_hash();
    assert!(expected.ends_with(&format!("@{}", setup.chain.tip_height())), "A: {expected}");
    assert_eq!(b.utxo_hash(), expected);
    b.log()
}

/// One JSON-RPC call to a node started with `-rpcport=<port>`,
/// `-rpcuser=hostile` and `-rpcpassword=peers`; the whole answer's body.
pub fn rpc(port: u16, method: &str, params: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let body = format!(r#"{{"jsonrpc":"1.0","id":1,"method":"{method}","params":{params}}}"#);
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        base64(RPC_CREDENTIALS.as_bytes()),
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (_, json) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(json).unwrap_or_else(|error| panic!("{error}: {response}"))
}

/// The credentials [`rpc`] uses.
pub const RPC_CREDENTIALS: &str = "hostile:peers";

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let mut group = [0u8; 3];
        group[..chunk.len()].copy_from_slice(chunk);
        let value = u32::from(group[0]) << 16 | u32::from(group[1]) << 8 | u32::from(group[2]);
        for position in 0..4 {
            if position <= chunk.len() {
                out.push(char::from(ALPHABET[(value >> (18 - 6 * position) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}
