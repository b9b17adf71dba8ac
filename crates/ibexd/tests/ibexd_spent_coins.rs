//! BIP 455 serving, checked by a fake peer against a running `ibexd`:
//!
//! - with `-peerblockspentcoins` the node announces protocol 70017 and, to
//!   a peer at 70017, BIP 434's `feature blockspentcoinsv1 0x00` between
//!   `version` and `verack`; each `getbspent` gets the coins its block
//!   spent, in input order with the coinbase left out, those below the
//!   cutoff only when one is given; these equal what a replay of the
//!   chain's blocks in the test finds (an oracle that shares no code with
//!   the node's undo data);
//! - a block the node does not hold gets no answer, and the peer stays;
//! - without the option the node announces 70016, sends no `feature`, and
//!   ignores `getbspent`;
//! - a node syncing in SwiftSync's fully validating mode from a peer that
//!   lies about a coin's height (one block too low, which no rule catches)
//!   gives the attempt up at the end (the aggregate) and ends on the coin
//!   set of a node that imported the chain;
//! - one syncing from a liar (one coin short for every block that spends
//!   one the request asks for, created below its cutoff)
//!   and an honest peer refuses the liar's coins block by block, punishes
//!   it, asks the honest peer instead, and completes the proof; from the
//!   liar alone, it waits a minute for another serving peer, then gives
//!   the attempt up and ends on the same set;
//! - a serving peer that never answers `getbspent` is disconnected after
//!   60 s and its blocks' coins are asked of another: the proof holds;
//! - a peer whose coins name a block's inputs out of order is
//!   disconnected;
//! - a node stopped in the middle of its pass (a peer with the first 100
//!   blocks and their coins) keeps a checkpoint, and started again with a
//!   peer that has everything resumes from it, asks the coins of no block
//!   it had accounted, and ends on the same set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::swiftsync::{coin_set, node};
use hostile_peer::nodes::{Node, Setup};
use hostile_peer::{ChainData, FakePeer, GetData, Serving};
use ibex_p2p::messages::feature::FeatureMessage;
use ibex_p2p::messages::spent_coins::{GetSpentCoins, IndexedSpentCoin, SpentCoins};
use ibex_p2p::messages::spent_coins::{
    BLOCK_SPENT_COINS_FEATURE_DATA, BLOCK_SPENT_COINS_FEATURE_ID,
};
use ibex_p2p::messages::version::VersionMessage;
use ibex_p2p::NetworkMessage;
use ibex_primitives::{Amount, Block, BlockHash, Height, OutPoint, SpentCoinBuf};

/// How long an answer may take.
const ANSWER_WAIT: Duration = Duration::from_secs(20);

/// Starts `ibexd` on `datadir` with `options` and waits until it listens.
fn start_node(datadir: PathBuf, port: u16, options: &[&str]) -> Node {
    std::fs::create_dir_all(&datadir).unwrap();
    // A restart on the same directory logged the same lines before.
    let offset = common::log_bytes(&datadir);
    let mut command = common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, options);
    let mut process = common::spawn_node(&mut command);
    common::wait_for_log_after(&datadir, "Bound to 127.0.0.1", offset, &mut process);
    Node { datadir, port, process }
}

/// The coins each block of the best chain spent, found by replaying the
/// chain: for each block, its inputs' coins in order (coinbase left out).
fn replay_spent_coins(chain: &ChainData) -> Vec<Vec<SpentCoinBuf>> {
    let mut unspent: HashMap<OutPoint, SpentCoinBuf> = HashMap::new();
    let mut spent_by_height = Vec::new();
    for (height, hash) in chain.chain.iter().enumerate() {
        let block = Block::decode(&chain.blocks[hash]).unwrap();
        let mut spent = Vec::new();
        for (position, transaction) in block.transactions.iter().enumerate() {
            if position > 0 {
                for input in &transaction.inputs {
                    spent.push(unspent.remove(&input.previous_output).expect("a known coin"));
                }
            }
            let txid = transaction.txid();
            for (vout, output) in transaction.outputs.iter().enumerate() {
                let coin = SpentCoinBuf {
                    value: Amount::from_sat(output.value).unwrap(),
                    script_pubkey: output.script_pubkey.clone(),
                    height: Height::new(height as u32),
                    is_coinbase: position == 0,
                };
                unspent.insert(OutPoint { txid, vout: vout as u32 }, coin);
            }
        }
        spent_by_height.push(spent);
    }
    spent_by_height
}

/// Our `version` at `protocol_version`.
fn version_at(protocol_version: i32, marker: i32) -> NetworkMessage {
    let NetworkMessage::Version(version) = hostile_peer::version(marker) else { unreachable!() };
    NetworkMessage::Version(VersionMessage { protocol_version, ..version })
}

/// Opens a connection at `protocol_version`: the node's `version` and
/// the `feature` messages it sent before its `verack`.
fn connect(port: u16, protocol_version: i32) -> (FakePeer, VersionMessage, Vec<FeatureMessage>) {
    let mut peer = FakePeer::connect(port);
    peer.send(&version_at(protocol_version, 7)).unwrap();
    let (mut their_version, mut features) = (None, Vec::new());
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < ANSWER_WAIT, "no handshake");
        match peer.receive().expect("the node keeps the connection") {
            Some(NetworkMessage::Version(version)) => their_version = Some(version),
            Some(NetworkMessage::Feature(feature)) => features.push(feature),
            Some(NetworkMessage::Verack) => break,
            _ => {}
        }
    }
    peer.send(&NetworkMessage::Verack).unwrap();
    (peer, their_version.expect("version before verack"), features)
}

/// The `bspent` that came before the pong for a ping sent after the
/// request (none: the node answered nothing), pings answered.
fn next_spent_coins(peer: &mut FakePeer, nonce: u64) -> Option<SpentCoins> {
    peer.send(&NetworkMessage::Ping { nonce }).unwrap();
    let started = Instant::now();
    let mut answer = None;
    loop {
        assert!(started.elapsed() < ANSWER_WAIT, "no pong");
        match peer.receive().expect("the node keeps the peer") {
            Some(NetworkMessage::Ping { nonce }) => {
                peer.send(&NetworkMessage::Pong { nonce: Some(nonce) }).unwrap();
            }
            Some(NetworkMessage::SpentCoins(coins)) => {
                assert!(answer.is_none(), "one answer a request");
                answer = Some(coins);
            }
            Some(NetworkMessage::Pong { nonce: echoed }) if echoed == Some(nonce) => return answer,
            _ => {}
        }
    }
}

fn ask(peer: &mut FakePeer, block_hash: BlockHash, cutoff_height: u32) -> Option<SpentCoins> {
    let request = GetSpentCoins { block_hash, cutoff_height };
    peer.send(&NetworkMessage::GetSpentCoins(request)).unwrap();
    // Served at the loop's next pass; the ping goes after, so the answer,
    // if any, comes before the pong.
    std::thread::sleep(Duration::from_millis(100));
    next_spent_coins(peer, u64::from(cutoff_height) + 1)
}

/// `coins` with their input indices, those created below `cutoff` (any
/// when 0).
fn expected(coins: &[SpentCoinBuf], cutoff: u32) -> Vec<IndexedSpentCoin> {
    coins
        .iter()
        .enumerate()
        .filter(|(_, coin)| cutoff == 0 || coin.height.to_u32() < cutoff)
        .map(|(index, coin)| IndexedSpentCoin { input_index: index as u32, coin: coin.clone() })
        .collect()
}

#[test]
fn spent_coins_are_served_as_the_chain_spent_them() {
    let setup = Setup::generate(200, "455", &[]);
    let spent = replay_spent_coins(&setup.chain);
    let spending_heights: Vec<usize> =
        (1..spent.len()).filter(|&height| !spent[height].is_empty()).collect();
    assert!(spending_heights.len() >= 10, "the chain spends coins: {spending_heights:?}");

    let datadir = common::datadir_with_blocks(&setup.root.path().join("a"), &setup.chain_directory);
    let port = common::free_port();
    let port_option = format!("-port={port}");
    let listen = ["-listen=1", "-bind=127.0.0.1", &port_option, "-server=0", "-v2transport=0"];

    // Without the option: Core's version, no feature, no answer.
    let mut options = listen.to_vec();
    options.push("-reindex");
    let mut node = start_node(datadir.clone(), port, &options);
    node.wait_for_log(&setup.tip_line());
    let (mut peer, version, features) = connect(port, 70_017);
    assert_eq!(version.protocol_version, 70_016);
    assert!(features.is_empty(), "{features:?}");
    let some_block = setup.chain.chain[spending_heights[0]];
    assert_eq!(ask(&mut peer, some_block, 0), None, "getbspent is ignored");
    drop(peer);
    node.stop();

    let mut options = listen.to_vec();
    options.push("-peerblockspentcoins");
    let offset = common::log_bytes(&datadir);
    let mut node = start_node(datadir.clone(), port, &options);
    // The chain is at its tip already: no new tip is logged.
    common::wait_for_log_after(&datadir, "init message: Done loading", offset, &mut node.process);
    // A peer below 70017 is sent no feature.
    let (old_peer, version, features) = connect(port, 70_016);
    assert_eq!(version.protocol_version, 70_017);
    assert!(features.is_empty());
    drop(old_peer);

    let (mut peer, _, features) = connect(port, 70_017);
    assert_eq!(features, [FeatureMessage::new(b"blockspentcoinsv1", &[0])]);
    let mut coins_checked = 0;
    for &height in &spending_heights {
        let hash = setup.chain.chain[height];
        let answer = ask(&mut peer, hash, 0).unwrap_or_else(|| panic!("no answer for {height}"));
        assert_eq!(answer.block_hash, hash);
        assert_eq!(answer.coins, expected(&spent[height], 0), "block {height}");
        coins_checked += answer.coins.len();
    }
    eprintln!("{coins_checked} coins of {} blocks checked", spending_heights.len());
    // A cutoff keeps the older coins only; in-block spends are the youngest.
    let last = *spending_heights.last().unwrap();
    let hash = setup.chain.chain[last];
    for cutoff in [1, last as u32 / 2, last as u32, last as u32 + 1] {
        let answer = ask(&mut peer, hash, cutoff).expect("an answer");
        assert_eq!(answer.coins, expected(&spent[last], cutoff), "cutoff {cutoff}");
    }
    // A block without spends gets an empty answer; an unknown one none.
    let genesis_child = setup.chain.chain[1];
    assert_eq!(ask(&mut peer, genesis_child, 0).map(|answer| answer.coins), Some(Vec::new()));
    assert_eq!(ask(&mut peer, BlockHash([0x5a; 32]), 0), None);
    assert!(peer.ping_pong(99, ANSWER_WAIT), "the peer stays connected");
    node.stop();
}

/// The coins blocks 1 to `terminal_height` spent, as `bspent` answers,
/// by block.
fn answers(chain: &ChainData, terminal_height: u32) -> HashMap<BlockHash, SpentCoins> {
    let spent = replay_spent_coins(chain);
    (1..=terminal_height as usize)
        .map(|height| {
            let block_hash = chain.chain[height];
            (block_hash, SpentCoins { block_hash, coins: expected(&spent[height], 0) })
        })
        .collect()
}

/// The terminal height of the hints the fully validating nodes sync with.
const TERMINAL_HEIGHT: u32 = 150;

/// A generated chain, the coin set of a node that imported it, hints at
/// [`TERMINAL_HEIGHT`] that node wrote, and honest `bspent` answers.
struct Prepared {
    setup: Setup,
    tip_height: u64,
    expected: (serde_json::Value, serde_json::Value),
    hints: String,
    honest: HashMap<BlockHash, SpentCoins>,
}

fn prepared(seed: &str) -> Prepared {
    let setup = Setup::generate(220, seed, &[]);
    let tip_height = u64::from(setup.chain.tip_height());
    let a_datadir =
        common::datadir_with_blocks(&setup.root.path().join("a"), &setup.chain_directory);
    let import = ["-reindex".to_owned(), "-connect=0".to_owned(), "-listen=0".to_owned()];
    let (a, mut a_process) = node(&a_datadir, &import);
    a.wait_for_height(tip_height, &mut a_process);
    let expected = coin_set(a);
    let answer = a.call("dumphints", serde_json::json!(["hints.dat", TERMINAL_HEIGHT]));
    let hints = answer["path"].as_str().unwrap().to_owned();
    common::assumeutxo::stop(a, &mut a_process, &a_datadir);
    let honest = answers(&setup.chain, TERMINAL_HEIGHT);
    Prepared { setup, tip_height, expected, hints, honest }
}

#[test]
fn a_peer_that_does_not_answer_is_disconnected_and_its_blocks_asked_elsewhere() {
    let Prepared { setup, tip_height, expected, hints, honest } = prepared("4553");
    let (silent, truthful) = (bind_loopback(), bind_loopback());
    let b_datadir = setup.root.path().join("b-silent");
    let (b, mut b_process) = fully_validating_node(&b_datadir, &hints, &[&silent, &truthful]);
    // Serves headers and blocks, and never a `bspent`.
    let quiet = serve_with_coins(&silent, &setup.chain, HashMap::new());
    let serving = serve_with_coins(&truthful, &setup.chain, honest);
    b.wait_for_height(tip_height, &mut b_process);
    assert_eq!(coin_set(b), expected);
    common::assumeutxo::stop(b, &mut b_process, &b_datadir);
    assert!(quiet.stop().closed_by_node, "the peer that never answered was disconnected");
    serving.stop();
    let log = common::debug_log(&b_datadir);
    assert!(log.contains("Timeout downloading spent coins of block"), "{log}");
    assert!(log.contains("[swiftsync] the aggregate is zero"), "{log}");
    assert!(!log.contains("[swiftsync] given up"), "{log}");
}

#[test]
fn coins_refused_by_every_serving_peer_end_the_attempt_after_a_minute() {
    let Prepared { setup, tip_height, expected, hints, honest } = prepared("4554");
    let honest = short_of_one(&setup.chain, honest);
    let liar = bind_loopback();
    let b_datadir = setup.root.path().join("b-only-liar");
    let (b, mut b_process) = fully_validating_node(&b_datadir, &hints, &[&liar]);
    let lying = serve_with_coins(&liar, &setup.chain, honest);
    b.wait_for_height(tip_height, &mut b_process);
    assert_eq!(coin_set(b), expected);
    common::assumeutxo::stop(b, &mut b_process, &b_datadir);
    lying.stop();
    let log = common::debug_log(&b_datadir);
    assert!(log.contains("refused, asking another peer"), "{log}");
    assert!(log.contains("refused, for 60 s: syncing without hints"), "{log}");
    assert!(
        log.contains("[swiftsync] given up, syncing without hints: no spent coins came"),
        "{log}"
    );
}

/// Serves the chain to a node that connected to `listener`, as a peer at
/// 70017 that announces `blockspentcoinsv1` and answers with `spent`.
fn serve_with_coins(
    listener: &std::net::TcpListener,
    chain: &ChainData,
    spent: HashMap<BlockHash, SpentCoins>,
) -> Serving {
    serve_blocks_with_coins(listener, chain, chain.blocks.clone(), spent)
}

/// [`serve_with_coins`] with only `blocks` (every header).
fn serve_blocks_with_coins(
    listener: &std::net::TcpListener,
    chain: &ChainData,
    blocks: HashMap<BlockHash, Vec<u8>>,
    spent: HashMap<BlockHash, SpentCoins>,
) -> Serving {
    let mut peer = FakePeer::accept(listener);
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < ANSWER_WAIT, "no version from the node");
        if let Some(NetworkMessage::Version(version)) = peer.receive().unwrap() {
            assert_eq!(version.protocol_version, 70_017, "a node reading features says so");
            break;
        }
    }
    peer.send(&version_at(70_017, 9)).unwrap();
    let feature = FeatureMessage::new(BLOCK_SPENT_COINS_FEATURE_ID, BLOCK_SPENT_COINS_FEATURE_DATA);
    peer.send(&NetworkMessage::Feature(feature)).unwrap();
    peer.send(&NetworkMessage::Verack).unwrap();
    Serving::start_with_spent_coins(peer, chain.headers(), blocks, GetData::Answer, spent)
}

#[test]
fn a_lie_a_rule_catches_is_refused_and_asked_elsewhere_one_none_catches_costs_the_attempt() {
    let Prepared { setup, tip_height, expected, hints, honest } = prepared("4552");
    let (block, input) = (1..=TERMINAL_HEIGHT as usize)
        .find_map(|height| {
            let coins = &honest[&setup.chain.chain[height]].coins;
            // A coin the request asks for (created below the cutoff).
            let cutoff = ibex_chainstate::spent_coins_cutoff(height as u32);
            let input = coins.iter().position(|coin| {
                !coin.coin.is_coinbase
                    && coin.coin.height.to_u32() > 1
                    && coin.coin.height.to_u32() < cutoff
            })?;
            Some((setup.chain.chain[height], input))
        })
        .unwrap();
    let mut lower = honest.clone();
    let coin = &mut lower.get_mut(&block).unwrap().coins[input].coin;
    coin.height = Height::new(coin.height.to_u32() - 1);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let b_datadir = setup.root.path().join("b-lower");
    let (b, mut b_process) = fully_validating_node(&b_datadir, &hints, &[&listener]);
    let serving = serve_with_coins(&listener, &setup.chain, lower);
    b.wait_for_height(tip_height, &mut b_process);
    assert_eq!(coin_set(b), expected);
    common::assumeutxo::stop(b, &mut b_process, &b_datadir);
    serving.stop();
    let log = common::debug_log(&b_datadir);
    let failure = format!("the aggregate is not zero at height {TERMINAL_HEIGHT}");
    assert!(log.contains("[swiftsync] given up"), "{log}");
    assert!(log.contains(&failure), "{failure}: {log}");

    // One coin short for every block that spends, from a liar, beside an
    // honest peer: each block the liar answers is refused and asked of the
    // honest peer, and the proof holds.
    let short = short_of_one(&setup.chain, honest.clone());
    let (liar, truthful) = (bind_loopback(), bind_loopback());
    let b_datadir = setup.root.path().join("b-short");
    let (b, mut b_process) = fully_validating_node(&b_datadir, &hints, &[&liar, &truthful]);
    let lying = serve_with_coins(&liar, &setup.chain, short);
    let serving = serve_with_coins(&truthful, &setup.chain, honest);
    b.wait_for_height(tip_height, &mut b_process);
    assert_eq!(coin_set(b), expected);
    common::assumeutxo::stop(b, &mut b_process, &b_datadir);
    lying.stop();
    serving.stop();
    let log = common::debug_log(&b_datadir);
    assert!(!log.contains("[swiftsync] given up"), "{log}");
    assert!(log.contains("[swiftsync] the aggregate is zero"), "{log}");
    let refused = log.lines().filter(|line| line.contains("refused, asking another peer")).count();
    assert!(refused > 0, "the liar was asked for some blocks: {log}");
    let why = "no coin sent, and none of the blocks from the cutoff up created it";
    assert!(log.contains(why), "the refusal says why: {log}");
    // `-connect` peers are spared the disconnect (as Core spares manual
    // connections), but the punishment is logged.
    assert!(log.contains("fail its checks"), "{log}");
    assert!(log.contains("Not punishing manually connected peer"), "{log}");
}

/// `honest` without the last coin each block's request asks for (created
/// below its cutoff), where it has one.
fn short_of_one(
    chain: &ChainData,
    mut honest: HashMap<BlockHash, SpentCoins>,
) -> HashMap<BlockHash, SpentCoins> {
    for (height, hash) in chain.chain.iter().enumerate() {
        let cutoff = ibex_chainstate::spent_coins_cutoff(height as u32);
        if let Some(answer) = honest.get_mut(hash) {
            let asked = answer.coins.iter().rposition(|coin| coin.coin.height.to_u32() < cutoff);
            if let Some(asked) = asked {
                answer.coins.remove(asked);
            }
        }
    }
    honest
}

fn bind_loopback() -> std::net::TcpListener {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap()
}

/// A node syncing in the fully validating mode with `hints` from the fake
/// peers listening on `listeners`.
fn fully_validating_node(
    datadir: &std::path::Path,
    hints: &str,
    listeners: &[&std::net::TcpListener],
) -> (common::rpc::Endpoint, common::NodeProcess) {
    std::fs::create_dir_all(datadir).unwrap();
    let mut options: Vec<String> = listeners
        .iter()
        .map(|listener| format!("-connect=127.0.0.1:{}", listener.local_addr().unwrap().port()))
        .collect();
    options.extend([
        "-listen=0".to_owned(),
        // The fake peers speak v1.
        "-v2transport=0".to_owned(),
        format!("-swiftsync={hints}"),
        "-assumevalid=0".to_owned(),
    ]);
    node(datadir, &options)
}

#[test]
fn coins_that_name_inputs_out_of_order_disconnect_their_sender() {
    let Prepared { setup, honest, hints, .. } = prepared("4556");
    let mut reversed = honest.clone();
    for answer in reversed.values_mut() {
        answer.coins.reverse();
    }
    let listener = bind_loopback();
    let b_datadir = setup.root.path().join("b-reversed");
    let (b, mut b_process) = fully_validating_node(&b_datadir, &hints, &[&listener]);
    let serving = serve_with_coins(&listener, &setup.chain, reversed);
    let text = "repeat inputs or name them out of order, disconnecting peer=";
    common::wait_for_log_after(&b_datadir, text, 0, &mut b_process.0);
    common::assumeutxo::stop(b, &mut b_process, &b_datadir);
    assert!(serving.stop().closed_by_node, "the peer was disconnected");
}

/// Blocks the first peer of the resumed node has, genesis included.
const FIRST_PEER_BLOCKS: usize = 101;

#[test]
fn a_pass_stopped_halfway_resumes_and_asks_only_the_coins_it_lacks() {
    let Prepared { setup, tip_height, expected, hints, honest } = prepared("4555");
    let chain = &setup.chain;
    let first_blocks: HashMap<BlockHash, Vec<u8>> = chain.chain[..FIRST_PEER_BLOCKS]
        .iter()
        .map(|hash| (*hash, chain.blocks[hash].clone()))
        .collect();
    let first_coins = honest
        .iter()
        .filter(|(hash, _)| first_blocks.contains_key(*hash))
        .map(|(hash, coins)| (*hash, coins.clone()))
        .collect();
    let first = bind_loopback();
    let b_datadir = setup.root.path().join("b-resumed");
    let (b, mut b_process) = fully_validating_node(&b_datadir, &hints, &[&first]);
    let serving = serve_blocks_with_coins(&first, chain, first_blocks, first_coins);
    common::swiftsync::wait_for_moment(&b_datadir, "[swiftsync] accounting", 0, &mut b_process);
    // Time to store, check and account the blocks the peer has.
    std::thread::sleep(Duration::from_secs(3));
    common::assumeutxo::stop(b, &mut b_process, &b_datadir);
    serving.stop();
    let log = common::debug_log(&b_datadir);
    let kept_marker = "[swiftsync] checkpoint kept: ";
    let kept = log.split(kept_marker).nth(1).expect("a checkpoint kept at the stop");
    let accounted: usize = kept.split(' ').next().unwrap().parse().unwrap();
    let whole = format!(" of {TERMINAL_HEIGHT} blocks accounted");
    assert!(kept.starts_with(&format!("{accounted}{whole}")), "{log}");
    assert!(accounted > 0 && accounted < FIRST_PEER_BLOCKS, "{log}");

    // Started again with a peer that has everything: it resumes, and asks
    // only the coins of the blocks not accounted.
    let offset = common::log_bytes(&b_datadir);
    let second = bind_loopback();
    let (b, mut b_process) = fully_validating_node(&b_datadir, &hints, &[&second]);
    let serving = serve_with_coins(&second, chain, honest);
    b.wait_for_height(tip_height, &mut b_process);
    assert_eq!(coin_set(b), expected);
    common::assumeutxo::stop(b, &mut b_process, &b_datadir);
    let report = serving.stop();
    let log = common::debug_log(&b_datadir).get(offset..).unwrap_or_default().to_owned();
    let resumed = format!("[swiftsync] resuming from the last checkpoint: {accounted}{whole}");
    assert!(log.contains(&resumed), "{log}");
    assert!(log.contains("[swiftsync] the aggregate is zero"), "{log}");
    let asked: std::collections::HashSet<BlockHash> =
        report.spent_coins_requested.iter().copied().collect();
    assert_eq!(asked.len(), TERMINAL_HEIGHT as usize - accounted, "{log}");
    let terminal_chain = &chain.chain[1..=TERMINAL_HEIGHT as usize];
    assert!(asked.iter().all(|hash| terminal_chain.contains(hash)));
    let asked_of_first =
        chain.chain[1..FIRST_PEER_BLOCKS].iter().filter(|hash| asked.contains(*hash));
    assert_eq!(asked_of_first.count(), FIRST_PEER_BLOCKS - 1 - accounted, "{log}");
}
