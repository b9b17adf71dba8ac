//! Signet as Core validates it (BIP325): a custom signet whose challenge is
//! a key this test holds (`ibex_generator::signet`), four valid blocks,
//! then at height 5 four blocks whose solutions are wrong (none, a wrong
//! signature, a solution for another challenge, contents changed after
//! signing) and the valid blocks 5 and 6.
//!
//! - `-loadblock` and `-reindex` read them from files: each wrong block is
//!   refused with `bad-signet-blksig` and marked (Core's `AcceptBlock`),
//!   the valid block 6 becomes the tip.
//! - Over P2P each wrong block's sender is punished and the block is not
//!   marked (Core's `ProcessNewBlock` runs `CheckBlock` before anything is
//!   stored); the valid chain from an honest peer becomes the tip.
//! - With `IBEX_CORE_BIN` set, `bitcoind -signetchallenge=...` loads the
//!   same file and ends on the same tip, with the same wrong blocks
//!   invalid.
//!
//! Also: `-signetchallenge` parsed as Core parses it, and
//! `getblockchaininfo`'s `signet_challenge`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hostile_peer::nodes::{rpc, update_tip_line, wait_until, RPC_CREDENTIALS};
use hostile_peer::{FakePeer, GetData, Serving};
use ibex_generator::signet::{signet_block, SignetPlace, SignetSigner, SolutionFault};
use ibex_p2p::NetworkMessage;
use ibex_primitives::{Block, BlockHash, Header, Params};

/// Heights of the wrong blocks (each a sibling of the valid block there,
/// announced before it, and followed by two valid blocks so the valid
/// chain always ends with more work than the wrong block).
const WRONG_HEIGHTS: [u32; 4] = [5, 7, 9, 11];
/// The valid chain's height.
const VALID_TIP_HEIGHT: u32 = 12;
/// How long a node may take.
const WAIT: Duration = Duration::from_secs(60);

/// A wrong block: what is wrong, the block, its height.
struct Wrong {
    name: &'static str,
    block: Block,
    height: u32,
}

/// The test's signet: its challenge, the valid chain (heights 1 to 12) and
/// the wrong blocks.
struct Signet {
    params: Params,
    challenge_hex: String,
    valid: Vec<Block>,
    wrong: Vec<Wrong>,
}

fn signet() -> Signet {
    let signer = SignetSigner::from_secret([0x42; 32]).unwrap();
    let other = SignetSigner::from_secret([0x43; 32]).unwrap();
    let params = Params::custom_signet(signer.challenge());
    let payout = signer.challenge();
    let faults = [
        ("no solution", SolutionFault::Missing),
        ("wrong signature", SolutionFault::WrongSignature),
        ("another challenge's solution", SolutionFault::OtherChallenge(&other)),
        ("changed after signing", SolutionFault::ChangedAfterSigning),
    ];
    let mut valid: Vec<Block> = Vec::new();
    let mut wrong = Vec::new();
    for height in 1..=VALID_TIP_HEIGHT {
        let place = match valid.last() {
            None => SignetPlace {
                previous_block_hash: params.genesis_hash,
                previous_time: params.genesis.header.time,
                height,
            },
            Some(last) => SignetPlace {
                previous_block_hash: last.block_hash(),
                previous_time: last.header.time,
                height,
            },
        };
        let block = |fault| signet_block(&params, place, &signer, &payout, fault, 2).unwrap();
        if let Some(index) = WRONG_HEIGHTS.iter().position(|wrong_height| *wrong_height == height) {
            let (name, fault) = faults[index];
            wrong.push(Wrong { name, block: block(fault), height });
        }
        valid.push(block(SolutionFault::None));
    }
    let challenge_hex = ibex_primitives::hex::encode(&signer.challenge());
    Signet { params, challenge_hex, valid, wrong }
}

impl Signet {
    /// Genesis, then the valid chain with each wrong block just before its
    /// valid sibling.
    fn file_order(&self) -> Vec<Vec<u8>> {
        let mut blocks = vec![self.params.genesis.encode()];
        for (index, block) in self.valid.iter().enumerate() {
            let height = index as u32 + 1;
            blocks.extend(
                self.wrong
                    .iter()
                    .filter(|wrong| wrong.height == height)
                    .map(|wrong| wrong.block.encode()),
            );
            blocks.push(block.encode());
        }
        blocks
    }

    fn tip(&self) -> BlockHash {
        self.valid.last().unwrap().block_hash()
    }

    fn challenge_option(&self) -> String {
        format!("-signetchallenge={}", self.challenge_hex)
    }
}

fn signet_log(datadir: &Path) -> String {
    std::fs::read_to_string(datadir.join("signet/debug.log")).unwrap_or_default()
}

/// Runs `ibexd -signet` over `datadir` with `options` until it exits (at
/// `-stopatheight`, or on the SIGTERM sent once the log holds
/// `stop_after` when given); its log.
fn run_to_exit(datadir: &Path, options: &[&str], stop_after: Option<&str>) -> String {
    let quiet = ["-signet", "-printtoconsole=0", "-server=0", "-dnsseed=0", "-fixedseeds=0"];
    let mut child = common::ibexd(datadir, &quiet, options)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut signalled = false;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if !signalled && stop_after.is_some_and(|text| signet_log(datadir).contains(text)) {
            common::terminate(&child);
            signalled = true;
        }
        if started.elapsed() > WAIT {
            let _ = child.kill();
            panic!("ibexd did not exit\n{}", signet_log(datadir));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = signet_log(datadir);
    assert!(status.success(), "{status:?}\n{log}");
    log
}

/// Every wrong block refused as `bad-signet-blksig` and marked, the valid
/// chain's tip the tip.
fn assert_file_verdicts(signet: &Signet, log: &str) {
    for wrong in &signet.wrong {
        let line = format!(
            "InvalidChainFound: invalid block={} height={} reason=bad-signet-blksig",
            wrong.block.block_hash(),
            wrong.height
        );
        assert!(log.contains(&line), "{}: no '{line}'\n{log}", wrong.name);
    }
    assert!(log.contains(&update_tip_line(signet.tip(), VALID_TIP_HEIGHT)), "{log}");
}

#[test]
fn signet_blocks_from_files_are_checked_against_the_challenge() {
    let signet = signet();
    let root = tempfile::tempdir().unwrap();
    let file = common::write_block_file(
        &root.path().join("file"),
        signet.params.message_start,
        &signet.file_order(),
    );
    let challenge = signet.challenge_option();

    let loaded = root.path().join("loaded");
    std::fs::create_dir_all(&loaded).unwrap();
    let load = format!("-loadblock={}", file.display());
    // Every run that imports the file ends at the valid chain's tip.
    let stop = format!("-stopatheight={VALID_TIP_HEIGHT}");
    let log = run_to_exit(&loaded, &[&challenge, &load, &stop], None);
    assert!(log.contains(&format!("Signet with challenge {}", signet.challenge_hex)), "{log}");
    assert_file_verdicts(&signet, &log);

    let reindexed = root.path().join("reindexed");
    let blocks = reindexed.join("signet/blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    std::fs::copy(&file, blocks.join("blk00000.dat")).unwrap();
    std::fs::copy(file.with_file_name("xor.dat"), blocks.join("xor.dat")).unwrap();
    let log = run_to_exit(&reindexed, &[&challenge, "-reindex", &stop], None);
    assert_file_verdicts(&signet, &log);

    // The same blocks without the challenge: the default signet's magic
    // differs, so none of the file's records is even read as a block (the
    // node, left at its genesis, stays up with no P2P until SIGTERM).
    let default = root.path().join("default");
    std::fs::create_dir_all(&default).unwrap();
    let alone = [load.as_str(), "-connect=0", "-listen=0"];
    let log = run_to_exit(&default, &alone, Some("init message: Done loading"));
    assert!(!log.contains(&signet.tip().to_string()), "{log}");
}

/// A fake inbound signet peer marked `marker` serving `headers` and
/// `blocks` and announcing the last header; its id in the node.
fn serve(
    port: u16,
    datadir: &Path,
    magic: [u8; 4],
    marker: i32,
    headers: Vec<Header>,
    blocks: HashMap<BlockHash, Vec<u8>>,
) -> (Serving, u64) {
    let mut peer = FakePeer::connect_on(port, magic);
    peer.handshake(marker, true);
    let needle = format!("blocks={marker}, peer=");
    assert!(wait_until(WAIT, || signet_log(datadir).contains(&needle)), "{}", signet_log(datadir));
    let log = signet_log(datadir);
    let line = log.lines().find(|line| line.contains(&needle)).unwrap();
    let id = line.rsplit("peer=").next().unwrap().trim().parse().unwrap();
    peer.send(&NetworkMessage::Headers(headers.clone())).unwrap();
    (Serving::start(peer, headers, blocks, GetData::Answer), id)
}

#[test]
fn signet_blocks_from_peers_are_checked_and_never_marked() {
    let signet = signet();
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("node");
    std::fs::create_dir_all(&datadir).unwrap();
    let port = common::free_port();
    let rpc_port = common::free_port();
    let (user, password) = RPC_CREDENTIALS.split_once(':').unwrap();
    let options = [
        signet.challenge_option(),
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
        format!("-rpcport={rpc_port}"),
        format!("-rpcuser={user}"),
        format!("-rpcpassword={password}"),
        "-dnsseed=0".to_owned(),
    ];
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut command = common::ibexd(&datadir, &["-signet", "-printtoconsole=0"], &options);
    let mut node = common::spawn_node(command.stdout(Stdio::null()).stderr(Stdio::null()));
    assert!(wait_until(WAIT, || signet_log(&datadir).contains("Bound to 127.0.0.1")));
    // The RPC server starts after the P2P side: wait until it listens.
    let rpc_listens = || std::net::TcpStream::connect(("127.0.0.1", rpc_port)).is_ok();
    assert!(wait_until(WAIT, rpc_listens), "{}", signet_log(&datadir));
    let info = rpc(rpc_port, "getblockchaininfo", "[]");
    assert_eq!(info["result"]["chain"], "signet");
    assert_eq!(info["result"]["signet_challenge"], signet.challenge_hex);

    let magic = signet.params.message_start;
    let by_hash = |blocks: &[Block]| -> HashMap<BlockHash, Vec<u8>> {
        blocks.iter().map(|block| (block.block_hash(), block.encode())).collect()
    };
    let headers_of =
        |blocks: &[Block]| -> Vec<Header> { blocks.iter().map(|block| block.header).collect() };
    let mut peers = Vec::new();
    let mut marker = 1;
    let serve_valid = |up_to: u32, peers: &mut Vec<Serving>, marker: &mut i32| {
        let blocks = &signet.valid[..up_to as usize];
        let (honest, _) =
            serve(port, &datadir, magic, *marker, headers_of(blocks), by_hash(blocks));
        *marker += 1;
        peers.push(honest);
        let line = update_tip_line(blocks.last().unwrap().block_hash(), up_to);
        assert!(
            wait_until(WAIT, || signet_log(&datadir).contains(&line)),
            "{}",
            signet_log(&datadir)
        );
    };
    serve_valid(WRONG_HEIGHTS[0] - 1, &mut peers, &mut marker);
    for wrong in &signet.wrong {
        // Announced on the valid chain below it, with more work than any
        // header before: the best header, so it is asked for.
        let below = &signet.valid[..wrong.height as usize - 1];
        let mut headers = headers_of(below);
        headers.push(wrong.block.header);
        let mut blocks = by_hash(below);
        blocks.insert(wrong.block.block_hash(), wrong.block.encode());
        let (hostile, id) = serve(port, &datadir, magic, marker, headers, blocks);
        marker += 1;
        let name = wrong.name;
        assert!(
            wait_until(WAIT, || hostile.is_finished()),
            "{name}: kept\n{}",
            signet_log(&datadir)
        );
        let log = signet_log(&datadir);
        let punished = format!("Misbehaving: peer={id}");
        assert!(
            log.lines().any(|line| line.ends_with(&punished)),
            "{name}: no '{punished}'\n{log}"
        );
        let rejected = format!(
            "rejected block (not marked)={} height={} reason=bad-signet-blksig",
            wrong.block.block_hash(),
            wrong.height
        );
        assert!(log.contains(&rejected), "{name}: no '{rejected}'\n{log}");
        let tips = rpc(rpc_port, "getchaintips", "[]");
        let hash = wrong.block.block_hash().to_string();
        let tip = tips["result"].as_array().unwrap().iter().find(|tip| tip["hash"] == hash);
        let status = tip.map(|tip| tip["status"].as_str().unwrap());
        assert_eq!(status, Some("headers-only"), "{name}: {tips}");
        peers.push(hostile);
        // The valid sibling and the block after it (more work than the
        // unmarked wrong header, which stays best until then: Ibex fetches
        // along its best header chain, where Core would also fetch an
        // equal-work sibling from the peer whose best it is).
        serve_valid(wrong.height + 1, &mut peers, &mut marker);
    }
    common::terminate(&node);
    assert!(common::wait_exit(&mut node, &datadir).success());
    for peer in peers {
        peer.stop();
    }
}

#[test]
fn signet_challenge_is_parsed_as_core_parses_it() {
    let root = tempfile::tempdir().unwrap();
    let cases = [
        (
            vec!["-signetchallenge=51", "-signetchallenge=52"],
            "Error: -signetchallenge cannot be multiple values.",
        ),
        (vec!["-signetchallenge=5x"], "Error: -signetchallenge must be hex, not '5x'."),
        (vec!["-signetchallenge=515"], "Error: -signetchallenge must be hex, not '515'."),
        (
            vec!["-nosignetchallenge"],
            "Error: Error parsing command line arguments: Negating of -signetchallenge is meaningless and therefore forbidden",
        ),
        (
            vec!["-nosignetseednode"],
            "Error: Error parsing command line arguments: Negating of -signetseednode is meaningless and therefore forbidden",
        ),
    ];
    for (arguments, expected) in cases {
        let output = common::ibexd(root.path(), &["-signet", "-printtoconsole=0"], &arguments)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{arguments:?}");
        assert!(stderr.contains(expected), "{arguments:?}: {stderr}");
    }
}

#[test]
fn bitcoind_gives_the_same_signet_verdicts() {
    let Some(binaries) = common::core_binaries("signet verdicts of bitcoind") else { return };
    let signet = signet();
    let root = tempfile::tempdir().unwrap();
    let file = common::write_block_file(
        &root.path().join("file"),
        signet.params.message_start,
        &signet.file_order(),
    );
    let datadir = root.path().join("core");
    std::fs::create_dir_all(&datadir).unwrap();
    let rpc_port = common::free_port();
    let datadir_option = format!("-datadir={}", datadir.display());
    let rpc_option = format!("-rpcport={rpc_port}");
    let challenge = signet.challenge_option();
    let mut bitcoind = common::spawn_node(
        Command::new(binaries.join("bitcoind"))
            .args(["-signet", "-printtoconsole=0", "-listen=0", "-dnsseed=0", "-fixedseeds=0"])
            .args([&datadir_option, &rpc_option, &challenge])
            .arg(format!("-loadblock={}", file.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let cli = |arguments: &[&str]| -> Option<String> {
        let output = Command::new(binaries.join("bitcoin-cli"))
            .args(["-signet", &datadir_option, &rpc_option, &challenge])
            .args(arguments)
            .output()
            .unwrap();
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let tip = signet.tip().to_string();
    let reached = wait_until(WAIT, || cli(&["getbestblockhash"]).as_deref() == Some(tip.as_str()));
    let tips = cli(&["getchaintips"]).unwrap_or_default();
    let _ = cli(&["stop"]);
    assert!(common::wait_exit(&mut bitcoind, &datadir).success());
    assert!(reached, "bitcoind did not reach {tip}: {tips}");
    let tips: serde_json::Value = serde_json::from_str(&tips).unwrap();
    for Wrong { name, block, .. } in &signet.wrong {
        let hash = block.block_hash().to_string();
        let status = tips
            .as_array()
            .unwrap()
            .iter()
            .find(|tip| tip["hash"] == hash)
            .map(|tip| tip["status"].clone());
        assert_eq!(status, Some(serde_json::json!("invalid")), "{name}: {tips}");
    }
}
