//! A peer's mangled copy never condemns a valid block (Core's
//! `IsBlockMutated` in its `block` handler, and `ProcessNewBlock`, which
//! never marks a block for a `CheckBlock` failure). An `ibexd` (B) syncs a
//! regtest chain built here from an honest fake peer; for each new block a
//! hostile fake peer announces it first and answers `getdata` with a
//! mutated copy: its 64-byte-transaction reading, a CVE-2012-2459
//! duplicate, a stripped witness, an altered witness. Each time B must
//! punish the hostile peer ("mutated block"), leave the header unmarked
//! (`getchaintips` says `headers-only`, never `invalid`), and take the
//! real block from the next honest peer as its tip.
//!
//! The same copies in a block file before the real blocks (`-loadblock`)
//! get Core's `AcceptBlock` verdicts: the mutations it knows there
//! (merkle, witness) mark nothing and the real blocks follow; the 64-byte
//! reading, which Core's `AcceptBlock` sees only as `bad-cb-missing`,
//! marks the header failed and the real block is then refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;
mod mutated_blocks;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use hostile_peer::nodes::{rpc, update_tip_line, wait_until, Node, RPC_CREDENTIALS};
use hostile_peer::{FakePeer, GetData, Serving};
use ibex_p2p::NetworkMessage;
use ibex_primitives::{Block, BlockHash, Header};
use mutated_blocks::{
    coinbase, commit_witnesses, duplicated_last_transaction, p2wsh_true, spend_true, with_witness,
    Chain,
};

/// How long B may take to drop the hostile peer or move its tip.
const WAIT: Duration = Duration::from_secs(30);
/// Blocks before the mutated ones: enough for coinbases to mature.
const MATURE_HEIGHT: u32 = 110;

/// One case: the real block on the chain's tip and the copy a peer sends.
struct Case {
    name: &'static str,
    block: Block,
    mutated: Vec<u8>,
}

/// The four cases, each built on the previous one's real block.
fn cases(chain: &mut Chain) -> Vec<Case> {
    let mut cases = Vec::new();
    let (block, twin) = chain.with_sixty_four_byte_twin(2);
    chain.append(&block);
    cases.push(Case { name: "64-byte transaction", block, mutated: twin });

    let height = chain.height() + 1;
    let block = chain.next_block(vec![
        coinbase(height, b"dup", vec![0x51], false),
        spend_true(&chain.coinbase_at(4), 1_000),
        spend_true(&chain.coinbase_at(6), 1_000),
    ]);
    chain.append(&block);
    let mutated = duplicated_last_transaction(&block);
    cases.push(Case { name: "duplicated transaction", block, mutated });

    for (name, funding, witness) in
        [("stripped witness", 3, Vec::new()), ("altered witness", 5, vec![Vec::new(), vec![0x51]])]
    {
        let height = chain.height() + 1;
        let mut transactions = vec![
            coinbase(height, name.as_bytes(), p2wsh_true(), true),
            spend_true(&chain.coinbase_at(funding), 1_000),
        ];
        commit_witnesses(&mut transactions);
        let block = chain.next_block(transactions);
        chain.append(&block);
        let mutated = with_witness(&block, 1, witness);
        cases.push(Case { name, block, mutated });
    }
    cases
}

/// The mature chain, then the four cases' real blocks on it.
fn chain_with_cases() -> (Chain, Vec<Case>) {
    let mut chain = Chain::new();
    chain.extend_with_coinbases(MATURE_HEIGHT);
    let cases = cases(&mut chain);
    (chain, cases)
}

/// B: an empty regtest node listening on loopback, with RPC.
fn start_node(datadir: &Path, extra: &[&str]) -> (Node, u16) {
    std::fs::create_dir_all(datadir).unwrap();
    let port = common::free_port();
    let rpc_port = common::free_port();
    let (user, password) = RPC_CREDENTIALS.split_once(':').unwrap();
    let options: Vec<String> = [
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
        format!("-rpcport={rpc_port}"),
        format!("-rpcuser={user}"),
        format!("-rpcpassword={password}"),
    ]
    .into_iter()
    .chain(extra.iter().map(|option| option.to_string()))
    .collect();
    let options: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut command = common::quiet_ibexd(datadir, &common::REGTEST_QUIET, &options);
    let mut process = common::spawn_node(&mut command);
    common::wait_for_log(datadir, "Bound to 127.0.0.1", &mut process);
    // The RPC server starts after the P2P side: wait until it listens.
    let rpc_listens = || std::net::TcpStream::connect(("127.0.0.1", rpc_port)).is_ok();
    assert!(wait_until(WAIT, rpc_listens), "no RPC");
    (Node { datadir: datadir.to_owned(), port, process }, rpc_port)
}

/// A fake inbound peer marked `marker` serving `headers` and `blocks`,
/// announcing the last header; its id in B.
fn serve(
    node: &mut Node,
    marker: i32,
    headers: &[Header],
    blocks: HashMap<BlockHash, Vec<u8>>,
) -> (Serving, u64) {
    let mut peer = FakePeer::connect(node.port);
    peer.handshake(marker, true);
    let id = node.peer_id(marker);
    peer.send(&NetworkMessage::Headers(headers.to_vec())).unwrap();
    (Serving::start(peer, headers.to_vec(), blocks, GetData::Answer), id)
}

fn blocks_by_hash(chain: &Chain, up_to: u32) -> HashMap<BlockHash, Vec<u8>> {
    (1..=up_to)
        .map(|height| {
            (chain.headers[height as usize - 1].block_hash(), chain.block_at(height).to_vec())
        })
        .collect()
}

/// `getchaintips`' status for `hash`, if it is a tip.
fn tip_status(rpc_port: u16, hash: BlockHash) -> Option<String> {
    let tips = rpc(rpc_port, "getchaintips", "[]");
    tips["result"].as_array().unwrap().iter().find_map(|tip| {
        (tip["hash"] == hash.to_string()).then(|| tip["status"].as_str().unwrap().to_owned())
    })
}

#[test]
fn a_mutated_copy_from_a_peer_never_condemns_the_block() {
    let root = tempfile::tempdir().unwrap();
    let (chain, cases) = chain_with_cases();
    let (mut b, rpc_port) = start_node(&root.path().join("b"), &[]);

    let (honest, _) = serve(
        &mut b,
        1,
        &chain.headers[..MATURE_HEIGHT as usize],
        blocks_by_hash(&chain, MATURE_HEIGHT),
    );
    b.wait_for_log(&update_tip_line(
        chain.headers[MATURE_HEIGHT as usize - 1].block_hash(),
        MATURE_HEIGHT,
    ));
    let mut keep = vec![honest];
    for (index, case) in cases.iter().enumerate() {
        let height = MATURE_HEIGHT + 1 + index as u32;
        let hash = case.block.block_hash();
        let headers = &chain.headers[..height as usize];
        let mut mangled = blocks_by_hash(&chain, height - 1);
        mangled.insert(hash, case.mutated.clone());
        let marker = 900 + 2 * index as i32;
        let (hostile, id) = serve(&mut b, marker, headers, mangled);
        assert!(wait_until(WAIT, || hostile.is_finished()), "{}: kept\n{}", case.name, b.log());
        let report = hostile.stop();
        assert!(report.blocks_sent >= 1 && report.closed_by_node, "{}: {report:?}", case.name);
        let log = b.log();
        assert!(
            log.contains(&format!("Received mutated block from peer={id}")),
            "{}\n{log}",
            case.name
        );
        assert!(
            log.lines()
                .any(|line| line.ends_with(&format!("Misbehaving: peer={id}: mutated block"))),
            "{}\n{log}",
            case.name
        );
        assert!(!log.contains("InvalidChainFound: invalid block"), "{}: marked\n{log}", case.name);
        assert_eq!(tip_status(rpc_port, hash).as_deref(), Some("headers-only"), "{}", case.name);

        let (honest, _) = serve(&mut b, marker + 1, headers, blocks_by_hash(&chain, height));
        b.wait_for_log(&update_tip_line(hash, height));
        assert_eq!(tip_status(rpc_port, hash).as_deref(), Some("active"), "{}", case.name);
        keep.push(honest);
    }
    b.stop();
    for serving in keep {
        serving.stop();
    }
}

/// The genesis block then `blocks`, as a node's own files start, in a
/// block file in `directory`; the file's path.
fn block_file(directory: &Path, blocks: &[&[u8]]) -> std::path::PathBuf {
    let params = ibex_primitives::Params::regtest();
    let genesis = params.genesis.encode();
    let all: Vec<&[u8]> = std::iter::once(&genesis[..]).chain(blocks.iter().copied()).collect();
    common::write_block_file(directory, params.message_start, &all)
}

/// The two file sequences: `followed` (the 64-byte reading after its block,
/// every other mutated copy before its block) and `marked` (the mature
/// chain, then the 64-byte reading before its block).
fn file_sequences<'a>(
    chain: &'a Chain,
    cases: &'a [Case],
    encoded: &'a [Vec<u8>],
) -> (Vec<&'a [u8]>, Vec<&'a [u8]>) {
    let mature: Vec<&[u8]> = (1..=MATURE_HEIGHT).map(|height| chain.block_at(height)).collect();
    let mut followed = mature.clone();
    followed.push(&encoded[0]);
    followed.push(&cases[0].mutated);
    for (case, real) in cases.iter().zip(encoded).skip(1) {
        followed.push(&case.mutated);
        followed.push(real);
    }
    let mut marked = mature;
    marked.push(&cases[0].mutated);
    marked.push(&encoded[0]);
    (followed, marked)
}

/// Imports `file` with `-loadblock` into an empty node with no P2P, which
/// stays up when done until SIGTERM; its log.
fn load(root: &Path, name: &str, file: &Path) -> String {
    let datadir = root.join(name);
    std::fs::create_dir_all(&datadir).unwrap();
    let load = format!("-loadblock={}", file.display());
    let options = [&load, "-server=0", "-connect=0", "-listen=0"];
    let mut command = common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, &options);
    let mut process = common::spawn_node(&mut command);
    common::wait_for_log(&datadir, "init message: Done loading", &mut process);
    common::terminate(&process);
    let status = common::wait_exit(&mut process, &datadir);
    let log = common::debug_log(&datadir);
    assert!(status.success(), "{status:?}\n{log}");
    log
}

#[test]
fn mutated_copies_in_a_block_file_get_cores_accept_block_verdicts() {
    let root = tempfile::tempdir().unwrap();
    let (chain, cases) = chain_with_cases();
    let encoded: Vec<Vec<u8>> = cases.iter().map(|case| case.block.encode()).collect();
    let (followed, marked) = file_sequences(&chain, &cases, &encoded);

    // Merkle and witness mutations (cases after the first) come before
    // their real blocks and mark nothing: the chain reaches its tip. The
    // 64-byte reading comes after its real block, which is stored by
    // then, so the copy is skipped.
    let file = block_file(&root.path().join("followed"), &followed);
    let log = load(root.path(), "followed", &file);
    let tip_height = MATURE_HEIGHT + cases.len() as u32;
    assert!(log.contains(&update_tip_line(chain.tip(), tip_height)), "{log}");
    assert!(!log.contains("InvalidChainFound: invalid block"), "{log}");

    // The 64-byte reading before its block: Core's AcceptBlock runs
    // CheckBlock (`bad-cb-missing`, a consensus failure, not a mutation
    // there) and marks the header; the real block is then refused.
    let file = block_file(&root.path().join("marked"), &marked);
    let log = load(root.path(), "marked", &file);
    let marked = cases[0].block.block_hash();
    assert!(log.contains(&format!("InvalidChainFound: invalid block={marked}")), "{log}");
    assert!(!log.contains(&format!("new best={marked}")), "{log}");
    let last = chain.headers[MATURE_HEIGHT as usize - 1].block_hash();
    assert!(log.contains(&update_tip_line(last, MATURE_HEIGHT)), "{log}");
}

/// A `bitcoind -regtest` on an empty datadir with `options`, and its
/// `bitcoin-cli` (`None` when a call fails).
struct Bitcoind {
    binaries: std::path::PathBuf,
    datadir: std::path::PathBuf,
    rpc_port: u16,
    process: common::NodeProcess,
}

impl Bitcoind {
    fn start(binaries: &Path, datadir: &Path, options: &[String]) -> Bitcoind {
        std::fs::create_dir_all(datadir).unwrap();
        let rpc_port = common::free_port();
        let process = common::spawn_node(
            std::process::Command::new(binaries.join("bitcoind"))
                .args(["-regtest", "-printtoconsole=0", "-dnsseed=0", "-fixedseeds=0"])
                .arg(format!("-datadir={}", datadir.display()))
                .arg(format!("-rpcport={rpc_port}"))
                .args(options)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        let bitcoind = Bitcoind {
            binaries: binaries.to_owned(),
            datadir: datadir.to_owned(),
            rpc_port,
            process,
        };
        let log = || std::fs::read_to_string(datadir.join("regtest/debug.log")).unwrap_or_default();
        assert!(
            wait_until(WAIT, || bitcoind.cli(&["getblockcount"]).is_some()),
            "no RPC\n{}",
            log()
        );
        bitcoind
    }

    fn cli(&self, arguments: &[&str]) -> Option<String> {
        let output = std::process::Command::new(self.binaries.join("bitcoin-cli"))
            .arg("-regtest")
            .arg(format!("-datadir={}", self.datadir.display()))
            .arg(format!("-rpcport={}", self.rpc_port))
            .args(arguments)
            .output()
            .unwrap();
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    fn best(&self) -> Option<String> {
        self.cli(&["getbestblockhash"])
    }

    fn tip_status(&self, hash: BlockHash) -> Option<String> {
        let tips: serde_json::Value = serde_json::from_str(&self.cli(&["getchaintips"])?).ok()?;
        tips.as_array()?.iter().find_map(|tip| {
            (tip["hash"] == hash.to_string()).then(|| tip["status"].as_str().unwrap().to_owned())
        })
    }

    fn stop(mut self) {
        let _ = self.cli(&["stop"]);
        assert!(common::wait_exit(&mut self.process, &self.datadir).success());
    }
}

#[test]
fn bitcoind_fed_the_same_sequences_ends_on_the_same_tips() {
    let Some(binaries) = common::core_binaries("mutated blocks fed to bitcoind") else { return };
    let root = tempfile::tempdir().unwrap();
    let (chain, cases) = chain_with_cases();

    // Over P2P: the same fake peers, the same verdicts.
    let port = common::free_port();
    let options = [
        "-listen=1".to_owned(),
        "-bind=127.0.0.1".to_owned(),
        format!("-port={port}"),
        "-connect=0".to_owned(),
        "-v2transport=0".to_owned(),
    ];
    let core = Bitcoind::start(&binaries, &root.path().join("p2p"), &options);
    let serve_core = |marker: i32, up_to_headers: &[Header], blocks| {
        let mut peer = FakePeer::connect(port);
        peer.handshake(marker, true);
        peer.send(&NetworkMessage::Headers(up_to_headers.to_vec())).unwrap();
        Serving::start(peer, up_to_headers.to_vec(), blocks, GetData::Answer)
    };
    let mature_tip = chain.headers[MATURE_HEIGHT as usize - 1].block_hash().to_string();
    let mut keep = vec![serve_core(
        1,
        &chain.headers[..MATURE_HEIGHT as usize],
        blocks_by_hash(&chain, MATURE_HEIGHT),
    )];
    assert!(wait_until(WAIT, || core.best().as_deref() == Some(mature_tip.as_str())));
    for (index, case) in cases.iter().enumerate() {
        let height = MATURE_HEIGHT + 1 + index as u32;
        let hash = case.block.block_hash();
        let headers = &chain.headers[..height as usize];
        let mut mangled = blocks_by_hash(&chain, height - 1);
        mangled.insert(hash, case.mutated.clone());
        let hostile = serve_core(900 + 2 * index as i32, headers, mangled);
        assert!(
            wait_until(WAIT, || hostile.is_finished()),
            "{}: bitcoind kept the peer",
            case.name
        );
        assert_eq!(core.tip_status(hash).as_deref(), Some("headers-only"), "{}", case.name);
        keep.push(serve_core(901 + 2 * index as i32, headers, blocks_by_hash(&chain, height)));
        let expected = hash.to_string();
        assert!(
            wait_until(WAIT, || core.best().as_deref() == Some(expected.as_str())),
            "{}",
            case.name
        );
    }
    core.stop();
    for serving in keep {
        serving.stop();
    }

    // From files: the sequences `mutated_copies_in_a_block_file_...` loads.
    let encoded: Vec<Vec<u8>> = cases.iter().map(|case| case.block.encode()).collect();
    let (followed, marked) = file_sequences(&chain, &cases, &encoded);
    let file = block_file(&root.path().join("followed-file"), &followed);
    let core = Bitcoind::start(
        &binaries,
        &root.path().join("followed"),
        &[format!("-loadblock={}", file.display()), "-listen=0".to_owned()],
    );
    let tip = chain.tip().to_string();
    assert!(wait_until(WAIT, || core.best().as_deref() == Some(tip.as_str())), "{:?}", core.best());
    core.stop();

    let file = block_file(&root.path().join("marked-file"), &marked);
    let core = Bitcoind::start(
        &binaries,
        &root.path().join("marked"),
        &[format!("-loadblock={}", file.display()), "-listen=0".to_owned()],
    );
    let marked_hash = cases[0].block.block_hash();
    // The import activates once at its end: wait for both.
    let settled = || {
        core.tip_status(marked_hash).as_deref() == Some("invalid")
            && core.best().as_deref() == Some(mature_tip.as_str())
    };
    assert!(wait_until(WAIT, settled), "{:?}", core.cli(&["getchaintips"]));
    core.stop();
}
