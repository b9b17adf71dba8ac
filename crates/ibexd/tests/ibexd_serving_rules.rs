//! Serving rules, checked by fake peers against a running `ibexd`, each as
//! Core's net_processing.cpp has it:
//!
//! - `getheaders` gets an empty `headers` while our tip is below the
//!   minimum chain work, except from a peer with the `download`
//!   permission (`-whitelist`);
//! - a block off the active chain is served only under Core's
//!   `BlockRequestAllowed` (validated once, less than 30 days behind the
//!   best header);
//! - `MSG_BLOCK` gets the block without witness data, `MSG_WITNESS_BLOCK`
//!   and `MSG_CMPCT_BLOCK` with it, `MSG_FILTERED_BLOCK` nothing, and no
//!   `sendcmpct` announces compact blocks Ibex does not build.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hostile_peer::forge::{grind, REGTEST_BITS};
use hostile_peer::nodes::{serving_node, update_tip_line, Node, Setup};
use hostile_peer::{header_of, FakePeer};
use ibex_p2p::messages::headers::LOCATOR_VERSION;
use ibex_p2p::{Inventory, InventoryType, LocatorRequest, NetworkMessage};
use ibex_primitives::{
    Block, BlockHash, Hash256, Header, OutPoint, Params, Transaction, TxInput, TxOutput,
};

/// How long an answer may take.
const ANSWER_WAIT: Duration = Duration::from_secs(20);
/// Regtest genesis' time.
const GENESIS_TIME: u32 = 1_296_688_602;
/// Core's `STALE_RELAY_AGE_LIMIT` and a day more.
const PAST_STALE_LIMIT_SECONDS: u32 = 31 * 24 * 60 * 60;

/// Starts `ibexd` on `datadir` with `options` and waits until it listens.
fn start_node(datadir: PathBuf, port: u16, options: &[&str]) -> Node {
    std::fs::create_dir_all(&datadir).unwrap();
    let mut command = common::quiet_ibexd(&datadir, &common::REGTEST_QUIET, options);
    let mut process = common::spawn_node(&mut command);
    common::wait_for_log(&datadir, "Bound to 127.0.0.1", &mut process);
    Node { datadir, port, process }
}

/// `getdata` of `entries` (kind, hash).
fn get_data(entries: &[(InventoryType, BlockHash)]) -> NetworkMessage {
    let entries = entries
        .iter()
        .map(|(kind, hash)| Inventory { inventory_type: *kind, hash: Hash256(hash.0) })
        .collect();
    NetworkMessage::GetData(entries)
}

/// The next answer to a request of ours (`block`, `notfound`, `headers`),
/// pings answered and the node's other messages passed over; fails after
/// [`ANSWER_WAIT`], and on a `sendcmpct` (Ibex builds no compact blocks).
fn next_answer(peer: &mut FakePeer) -> NetworkMessage {
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < ANSWER_WAIT, "no answer");
        match peer.receive().expect("the node keeps the peer") {
            Some(NetworkMessage::Ping { nonce }) => {
                peer.send(&NetworkMessage::Pong { nonce: Some(nonce) }).unwrap();
            }
            Some(NetworkMessage::SendCompact { .. }) => panic!("compact blocks announced"),
            Some(
                message @ (NetworkMessage::Block(_)
                | NetworkMessage::NotFound(_)
                | NetworkMessage::Headers(_)),
            ) => return message,
            _ => {}
        }
    }
}

/// The answer to a `getheaders` from genesis.
fn headers_from_genesis(peer: &mut FakePeer) -> Vec<Header> {
    let request = LocatorRequest {
        locator_version: LOCATOR_VERSION,
        locator_hashes: vec![Params::regtest().genesis_hash],
        stop_hash: BlockHash::ZERO,
    };
    peer.send(&NetworkMessage::GetHeaders(request)).unwrap();
    loop {
        if let NetworkMessage::Headers(headers) = next_answer(peer) {
            return headers;
        }
    }
}

/// Below the minimum chain work (`-minimumchainwork` above the imported
/// chain's), an inbound peer's `getheaders` gets an empty `headers`; an
/// outbound peer holding `download` (`-whitelist=download,out@...`) gets
/// the chain's headers.
#[test]
fn headers_are_served_below_the_minimum_chain_work_only_with_download() {
    let setup = Setup::generate(300, "431", &[]);
    let datadir = common::datadir_with_blocks(&setup.root.path().join("a"), &setup.chain_directory);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let connect = format!("-connect=127.0.0.1:{}", listener.local_addr().unwrap().port());
    let port = common::free_port();
    let port_option = format!("-port={port}");
    let options = [
        "-reindex",
        "-listen=1",
        "-bind=127.0.0.1",
        &port_option,
        "-server=0",
        "-v2transport=0",
        &connect,
        // Regtest blocks prove 2 each: far above 300 blocks' work.
        "-minimumchainwork=100000",
        "-whitelist=download,out@127.0.0.1",
    ];
    let mut node = start_node(datadir, port, &options);
    node.wait_for_log(&setup.tip_line());
    let mut permitted = FakePeer::accept(&listener);
    permitted.handshake(431_001, false);
    let mut inbound = FakePeer::connect(port);
    inbound.handshake(431_002, true);
    assert_eq!(headers_from_genesis(&mut inbound), Vec::new(), "{}", node.log());
    let served = headers_from_genesis(&mut permitted);
    assert_eq!(served.len(), 300, "{}", node.log());
    assert_eq!(served[299].block_hash(), setup.chain.tip());
    node.stop();
}

/// `MSG_BLOCK` is answered without witness data, `MSG_WITNESS_BLOCK` and
/// `MSG_CMPCT_BLOCK` with it (byte for byte what is stored), a filtered
/// block not at all, and no `sendcmpct` comes.
#[test]
fn block_serialisation_follows_the_requested_type() {
    let setup = Setup::generate(300, "432", &[]);
    let mut a = serving_node(&setup);
    a.wait_for_log(&setup.tip_line());
    let mut peer = FakePeer::connect(a.port);
    peer.handshake(432_001, true);
    let mut witness_blocks = 0;
    for hash in setup.chain.chain.iter().skip(101) {
        let stored = &setup.chain.blocks[hash];
        let decoded = Block::decode(stored).unwrap();
        let mut stripped = decoded.header.encode().to_vec();
        ibex_primitives::encode::write_compact_size(
            &mut stripped,
            decoded.transactions.len() as u64,
        );
        for transaction in &decoded.transactions {
            transaction.encode_to(&mut stripped, false);
        }
        witness_blocks += usize::from(stripped != *stored);
        let request = get_data(&[
            (InventoryType::FILTERED_BLOCK, *hash),
            (InventoryType::BLOCK, *hash),
            (InventoryType::WITNESS_BLOCK, *hash),
            (InventoryType::COMPACT_BLOCK, *hash),
        ]);
        peer.send(&request).unwrap();
        for (kind, expected) in [("block", &stripped), ("witness", stored), ("compact", stored)] {
            match next_answer(&mut peer) {
                NetworkMessage::Block(bytes) => assert!(bytes == *expected, "{kind} of {hash}"),
                other => panic!("{kind} of {hash}: {:?}", other.command()),
            }
        }
    }
    assert!(witness_blocks > 0, "the chain has no witness data to strip");
    a.stop();
}

/// A coinbase-only block at `height` (1 to 16: the BIP34 height is one
/// opcode) on `parent`, at `time`.
fn block_at(parent: BlockHash, height: u8, time: u32, tag: u8) -> Vec<u8> {
    let coinbase = Transaction {
        version: 1,
        inputs: vec![TxInput {
            previous_output: OutPoint::NULL,
            script_sig: vec![0x50 + height, tag, 0xc0, 0xde],
            sequence: u32::MAX,
            witness: Vec::new(),
        }],
        outputs: vec![TxOutput { value: 0, script_pubkey: vec![0x6a] }],
        lock_time: 0,
    };
    let header = grind(Header {
        version: 0x2000_0000,
        previous_block_hash: parent,
        merkle_root: Hash256(coinbase.txid().0),
        time,
        bits: REGTEST_BITS,
        nonce: 0,
    });
    Block { header, transactions: vec![coinbase] }.encode()
}

/// Announces `blocks` by their headers and serves the node's requests for
/// them until its tip is the last one.
fn feed(node: &mut Node, peer: &mut FakePeer, blocks: &[Vec<u8>], tip_height: u32) {
    let headers: Vec<Header> = blocks.iter().map(|block| header_of(block)).collect();
    let by_hash: HashMap<BlockHash, &Vec<u8>> =
        blocks.iter().map(|block| (header_of(block).block_hash(), block)).collect();
    let tip_line = update_tip_line(headers.last().unwrap().block_hash(), tip_height);
    peer.send(&NetworkMessage::Headers(headers)).unwrap();
    let started = Instant::now();
    while !node.logged(&tip_line) {
        assert!(started.elapsed() < ANSWER_WAIT, "no '{tip_line}'\n{}", node.log());
        match peer.receive().expect("the node keeps the peer") {
            Some(NetworkMessage::GetData(entries)) => {
                for entry in entries {
                    if let Some(block) = by_hash.get(&BlockHash(entry.hash.0)) {
                        peer.send(&NetworkMessage::Block(block.to_vec())).unwrap();
                    }
                }
            }
            Some(NetworkMessage::Ping { nonce }) => {
                peer.send(&NetworkMessage::Pong { nonce: Some(nonce) }).unwrap();
            }
            _ => {}
        }
    }
}

/// Core's `BlockRequestAllowed`: after a reorganisation, the block left
/// behind (validated, minutes older than the best header) is served; once
/// the best header is 31 days younger, the blocks left behind by a second
/// reorganisation are not (`notfound`), while the active chain's are.
#[test]
fn stale_blocks_are_served_only_while_recent() {
    let root = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let port_option = format!("-port={port}");
    let options = ["-listen=1", "-bind=127.0.0.1", &port_option, "-server=0", "-v2transport=0"];
    let mut node = start_node(root.path().join("node"), port, &options);
    let mut peer = FakePeer::connect(port);
    peer.handshake(433_001, true);
    let genesis = Params::regtest().genesis_hash;
    let one_a = block_at(genesis, 1, GENESIS_TIME + 600, 0xa);
    let hash_one_a = header_of(&one_a).block_hash();
    feed(&mut node, &mut peer, std::slice::from_ref(&one_a), 1);
    let one_b = block_at(genesis, 1, GENESIS_TIME + 700, 0xb);
    let two_b = block_at(header_of(&one_b).block_hash(), 2, GENESIS_TIME + 800, 0xb);
    let (hash_one_b, hash_two_b) = (header_of(&one_b).block_hash(), header_of(&two_b).block_hash());
    feed(&mut node, &mut peer, &[one_b, two_b], 2);
    peer.send(&get_data(&[(InventoryType::WITNESS_BLOCK, hash_one_a)])).unwrap();
    match next_answer(&mut peer) {
        NetworkMessage::Block(bytes) => assert_eq!(bytes, one_a, "the recent stale block"),
        other => panic!("the recent stale block is not served: {:?}", other.command()),
    }
    let two_a = block_at(hash_one_a, 2, GENESIS_TIME + 900, 0xa);
    let three_a =
        block_at(header_of(&two_a).block_hash(), 3, GENESIS_TIME + PAST_STALE_LIMIT_SECONDS, 0xa);
    let hash_three_a = header_of(&three_a).block_hash();
    feed(&mut node, &mut peer, &[two_a, three_a], 3);
    let request = get_data(&[
        (InventoryType::WITNESS_BLOCK, hash_two_b),
        (InventoryType::WITNESS_BLOCK, hash_one_b),
        (InventoryType::WITNESS_BLOCK, hash_three_a),
    ]);
    peer.send(&request).unwrap();
    let mut refused = Vec::new();
    loop {
        match next_answer(&mut peer) {
            NetworkMessage::NotFound(entries) => {
                refused.extend(entries.iter().map(|entry| BlockHash(entry.hash.0)))
            }
            NetworkMessage::Block(bytes) => {
                let hash = header_of(&bytes).block_hash();
                assert_eq!(hash, hash_three_a, "a stale block 31 days old was served");
                break;
            }
            _ => {}
        }
    }
    assert_eq!(refused, [hash_two_b, hash_one_b]);
    node.stop();
}
