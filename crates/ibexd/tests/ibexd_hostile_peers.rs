//! Hostile peers: fake peers scripted here (v1 framing and
//! messages from `ibex-p2p`) against a real `ibexd` (B) syncing a generated
//! chain from an honest `ibexd` (A, a `-connect` peer). The fake peers
//! connect inbound, where Core punishes; some are `-connect` peers, which
//! Core never punishes for misbehaving but still drops for stalling. Each
//! scenario asserts what Core does with the fake peer, with Core's log
//! lines; that B still syncs A's chain to its tip with A's UTXO set; and
//! that B's peak resident set stays under [`PEAK_RESIDENT_BYTES_MAX`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::collections::HashMap;
use std::net::TcpListener;
use std::time::Duration;

use hostile_peer::forge::{branch_from_genesis, coinbase_block, without_proof_of_work};
use hostile_peer::nodes::{
    finish, rpc, serving_node, syncing_node, update_tip_line, wait_until, Node, Setup,
};
use hostile_peer::{magic, ChainData, FakePeer, GetData, Serving};
use ibex_p2p::NetworkMessage;
use ibex_primitives::{BlockHash, Header};

/// B's peak resident set must stay under this: 16-32 MiB measured in these
/// scenarios (a tiny chain's coins, RocksDB, a peer's 5 MB receive budget,
/// a 4 MB frame), with room to spare, and far under what the flood below
/// sends (300 MB of blocks).
const PEAK_RESIDENT_BYTES_MAX: u64 = 96 << 20;
/// How long B may take to drop a fake peer it must drop.
const DROP_WAIT: Duration = Duration::from_secs(30);

/// A log line ending exactly with `text` (after the timestamp).
fn has_line_ending(log: &str, text: &str) -> bool {
    log.lines().any(|line| line.ends_with(text))
}

/// A fake inbound peer marked `blocks=<marker>`, handshaken; its id in B.
fn inbound(b: &mut Node, marker: i32) -> (FakePeer, u64) {
    let mut peer = FakePeer::connect(b.port);
    peer.handshake(marker, true);
    let id = b.peer_id(marker);
    (peer, id)
}

/// Sends `headers` unasked, in messages of at most 2,000.
fn announce(peer: &mut FakePeer, headers: &[Header]) {
    for chunk in headers.chunks(ibex_p2p::HEADERS_PER_MESSAGE_MAX) {
        peer.send(&NetworkMessage::Headers(chunk.to_vec())).unwrap();
    }
}

/// Serves the chain's blocks and its headers honestly (or never answers
/// `getdata`).
fn serve_chain(peer: FakePeer, chain: &ChainData, get_data: GetData) -> Serving {
    Serving::start(peer, chain.headers(), chain.blocks.clone(), get_data)
}

/// Scenario 1: headers whose hash misses their target. An inbound peer is
/// disconnected (Core's `Misbehaving` "header with invalid proof of work";
/// a local address is not discouraged); a `-connect` peer is only logged
/// and keeps serving.
#[test]
fn headers_without_proof_of_work() {
    let setup = Setup::generate(300, "141", &[]);
    let a = serving_node(&setup);
    let manual_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let manual_port = manual_listener.local_addr().unwrap().port();
    let connect_manual = format!("-connect=127.0.0.1:{manual_port}");
    let mut b = syncing_node(&setup, a.port, &["-v2transport=0", &connect_manual]);
    // A is the headers sync peer (so B knows what A has); B's connection
    // to the manual peer waits in the listener's backlog meanwhile.
    b.wait_for_log(&setup.headers_line());
    let mut manual = FakePeer::accept(&manual_listener);
    manual.handshake(710_002, false);
    let manual_id = b.peer_id(710_002);
    let (mut hostile, hostile_id) = inbound(&mut b, 710_001);

    let bad = vec![without_proof_of_work(setup.chain.header_at(1))];
    hostile.send(&NetworkMessage::Headers(bad.clone())).unwrap();
    assert!(hostile.closed_within(DROP_WAIT), "the inbound peer was not dropped\n{}", b.log());
    manual.send(&NetworkMessage::Headers(bad)).unwrap();
    let manual = serve_chain(manual, &setup.chain, GetData::Answer);
    b.wait_for_log(&format!("Not punishing manually connected peer {manual_id}!"));

    let log = b.log();
    let pow = "header with invalid proof of work";
    assert!(has_line_ending(&log, &format!("Misbehaving: peer={hostile_id}: {pow}")), "{log}");
    assert!(has_line_ending(
        &log,
        &format!("Warning: disconnecting but not discouraging local peer {hostile_id}!")
    ));
    assert!(has_line_ending(&log, &format!("Misbehaving: peer={manual_id}: {pow}")));
    assert!(has_line_ending(
        &log,
        &format!("[warning] Not punishing manually connected peer {manual_id}!")
    ));
    b.wait_for_log(&setup.tip_line());
    assert!(!b.logged(&format!("disconnecting peer={manual_id}")), "{}", b.log());
    let report = manual.stop();
    assert!(!report.closed_by_node, "the manual peer was dropped\n{}", b.log());
    finish(&setup, a, b, PEAK_RESIDENT_BYTES_MAX);
}

/// Scenario 2: a header chain with less work than `-minimumchainwork`
/// (Core's option). A full first message starts Core's low-work presync,
/// which ends when the chain does, storing nothing; a short one is ignored
/// at once. Core punishes neither (an inbound peer on a weak chain is not
/// misbehaving). The honest chain, which has exactly the minimum work, is
/// itself presynced and redownloaded before it is stored.
#[test]
fn a_low_work_header_chain_is_presynced_and_never_stored() {
    const HONEST_BLOCKS: u32 = 2_100;
    const WEAK_BLOCKS: u32 = 2_050;
    let setup = Setup::generate(HONEST_BLOCKS, "142", &[]);
    let a = serving_node(&setup);
    // Regtest blocks prove 2 each, genesis included: the honest tip's work.
    let minimum_work = format!("{:x}", 2 * (HONEST_BLOCKS + 1));
    let minimum_option = format!("-minimumchainwork=0x{minimum_work}");
    let rpc_port = common::free_port();
    let rpc_option = format!("-rpcport={rpc_port}");
    let mut b = syncing_node(
        &setup,
        a.port,
        &[&minimum_option, "-server=1", &rpc_option, "-rpcuser=hostile", "-rpcpassword=peers"],
    );
    let weak = branch_from_genesis(WEAK_BLOCKS);
    const { assert!(WEAK_BLOCKS < HONEST_BLOCKS) };
    // The honest chain first: presync, then redownload.
    let a_id = b.peer_id(HONEST_BLOCKS as i32);
    b.wait_for_log(&format!(
        "Initial headers sync complete with peer={a_id}: releasing all at height={HONEST_BLOCKS} (redownload phase)"
    ));

    let (mut long_weak, long_id) = inbound(&mut b, 720_001);
    long_weak.send(&NetworkMessage::Headers(weak[..2_000].to_vec())).unwrap();
    let long_weak = Serving::start(long_weak, weak.clone(), HashMap::new(), GetData::Answer);
    let (mut short_weak, short_id) = inbound(&mut b, 720_002);
    short_weak.send(&NetworkMessage::Headers(weak[..10].to_vec())).unwrap();
    let short_weak = Serving::start(short_weak, weak.clone(), HashMap::new(), GetData::Answer);

    b.wait_for_log(&format!(
        "Initial headers sync aborted with peer={long_id}: incomplete headers message at height={WEAK_BLOCKS} (presync phase)"
    ));
    b.wait_for_log(&format!("Ignoring low-work chain (height=10) from peer={short_id}"));
    b.wait_for_log(&setup.tip_line());
    for header in [weak[0], weak[1_999], weak[WEAK_BLOCKS as usize - 1]] {
        let params = format!(r#"["{}"]"#, header.block_hash());
        let answer = rpc(rpc_port, "getblockheader", &params);
        assert_eq!(answer["error"]["code"], -5, "a weak header was stored: {answer}");
    }
    let tips = rpc(rpc_port, "getchaintips", "[]");
    assert_eq!(tips["result"].as_array().unwrap().len(), 1, "{tips}");

    let log = b.log();
    assert!(log.contains(&format!("Setting nMinimumChainWork={minimum_work:0>64}")), "{log}");
    assert!(log.contains(&format!(
        "Initial headers sync started with peer={long_id}: height=0, max_commitments="
    )));
    assert!(!log.contains(&format!("Misbehaving: peer={long_id}")), "{log}");
    assert!(!log.contains(&format!("Misbehaving: peer={short_id}")), "{log}");
    assert!(!long_weak.stop().closed_by_node, "{log}");
    assert!(!short_weak.stop().closed_by_node, "{log}");
    finish(&setup, a, b, PEAK_RESIDENT_BYTES_MAX);
}

/// Scenario 3: a peer announces the honest chain plus one invalid block
/// and serves it. Core disconnects the sender (`MaybePunishNodeForBlock`:
/// "Misbehaving: peer=N" for a block found invalid when accepted or
/// connected, "mutated block" for one whose transactions do not match its
/// header, "invalid header received" for a header the chain refuses),
/// whether the block fails at once or only when connected, long after the
/// engine took it. One peer after another, so that each invalid block
/// becomes the best header.
#[test]
fn the_sender_of_an_invalid_block_is_disconnected() {
    let setup = Setup::generate(300, "143", &["--invalid"]);
    let a = serving_node(&setup);
    let mut b = syncing_node(&setup, a.port, &[]);
    b.wait_for_log(&setup.headers_line());
    let height = setup.chain.tip_height() + 1;
    // Found invalid when connected (amounts, then scripts), when accepted,
    // by its header, and mutated (never marked invalid nor offered to the
    // engine: another copy of the block may be valid, so it goes last: it
    // stays the best header).
    let classes = [
        ("coinbase_overpays", Some("invalid block=HASH height=HEIGHT reason=bad-cb-amount"), ""),
        (
            "invalid_signature",
            Some("invalid block=HASH height=HEIGHT reason=block-script-verify-flag-failed"),
            "",
        ),
        ("wrong_bip34_height", Some("invalid block=HASH height=HEIGHT reason=bad-cb-height"), ""),
        ("time_too_old", None, ": invalid header received"),
        ("wrong_difficulty_bits", None, ": invalid header received"),
        // Caught by `IsBlockMutated` before the engine: nothing logged by it.
        ("bad_merkle_root", None, ": mutated block"),
    ];
    for (index, (class, invalid_chain_found, message)) in classes.into_iter().enumerate() {
        let (hash, block) = setup.chain.invalid_block(class);
        let mut headers = setup.chain.headers();
        headers.push(hostile_peer::header_of(&block));
        let mut blocks = setup.chain.blocks.clone();
        blocks.insert(hash, block);
        let marker = 730_001 + index as i32;
        let (mut peer, id) = inbound(&mut b, marker);
        peer.send(&NetworkMessage::Headers(headers.clone())).unwrap();
        let serving = Serving::start(peer, headers, blocks, GetData::Answer);
        if let Some(found) = invalid_chain_found {
            let found =
                found.replace("HASH", &hash.to_string()).replace("HEIGHT", &height.to_string());
            b.wait_for_log(&format!("InvalidChainFound: {found}"));
        }
        assert!(wait_until(DROP_WAIT, || serving.is_finished()), "{class}: kept\n{}", b.log());
        let log = b.log();
        let expected = format!("Misbehaving: peer={id}{message}");
        assert!(has_line_ending(&log, &expected), "{class}: no '{expected}'\n{log}");
        assert!(has_line_ending(
            &log,
            &format!("Warning: disconnecting but not discouraging local peer {id}!")
        ));
        let report = serving.stop();
        assert!(report.closed_by_node, "{class}: {report:?}");
        if invalid_chain_found.is_some() {
            assert!(report.blocks_sent > 0, "{class}: {report:?}");
        }
    }
    finish(&setup, a, b, PEAK_RESIDENT_BYTES_MAX);
}

/// Scenario 4: peers that announce the chain and never answer `getdata`.
/// Core's stalling rule: once the download window cannot move past a
/// peer's blocks while another peer waits, it has 2 s to deliver, then it
/// is dropped (a `-connect` peer too) and its blocks go to the others; the
/// timeout doubles for the next staller. (Core's block download timeout,
/// 10 minutes on regtest, is beyond an end-to-end test; the scheduler's
/// tests cover it.)
#[test]
fn peers_that_never_deliver_are_dropped_for_stalling() {
    // Longer than the 1,024-block window, so that it fills while the
    // stallers hold their first blocks.
    let setup = Setup::generate(2_500, "144", &[]);
    let a = serving_node(&setup);
    let manual_listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let manual_port = manual_listener.local_addr().unwrap().port();
    let connect_manual = format!("-connect=127.0.0.1:{manual_port}");
    let mut b = syncing_node(&setup, a.port, &["-v2transport=0", &connect_manual]);
    b.wait_for_log(&setup.headers_line());
    let mut manual = FakePeer::accept(&manual_listener);
    manual.handshake(740_002, false);
    let manual_id = b.peer_id(740_002);
    announce(&mut manual, &setup.chain.headers());
    let manual = serve_chain(manual, &setup.chain, GetData::Ignore);
    let (mut staller, staller_id) = inbound(&mut b, 740_001);
    announce(&mut staller, &setup.chain.headers());
    let staller = serve_chain(staller, &setup.chain, GetData::Ignore);

    b.wait_for_log(&setup.tip_line());
    assert!(
        wait_until(DROP_WAIT, || staller.is_finished() && manual.is_finished()),
        "a staller is still connected\n{}",
        b.log()
    );
    let log = b.log();
    for id in [staller_id, manual_id] {
        let line = format!("Peer is stalling block download, disconnecting peer={id}");
        assert!(has_line_ending(&log, &line), "no '{line}'\n{log}");
    }
    assert!(log.contains("Increased stalling timeout temporarily to 4 seconds"), "{log}");
    for report in [staller.stop(), manual.stop()] {
        assert!(report.closed_by_node && report.blocks_requested > 0, "{report:?}");
        assert_eq!(report.blocks_sent, 0);
    }
    finish(&setup, a, b, PEAK_RESIDENT_BYTES_MAX);
}

/// A v1 frame header: `command`, a declared `length` and `checksum`.
fn frame_header(command: &[u8], length: u32, checksum: [u8; 4]) -> Vec<u8> {
    let mut bytes = magic().to_vec();
    let mut command_bytes = [0u8; 12];
    command_bytes[..command.len()].copy_from_slice(command);
    bytes.extend_from_slice(&command_bytes);
    bytes.extend_from_slice(&length.to_le_bytes());
    bytes.extend_from_slice(&checksum);
    bytes
}

/// Deterministic bytes that are not a v1 frame.
fn garbage(count: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Scenario 5: bytes that are not messages. After the handshake, a wrong
/// magic and a length over 4,000,000 bytes disconnect at the header
/// (Core's "Header error" lines); a wrong checksum drops only that message
/// (here a `headers` message that would have been punished) and the peer
/// stays; garbage in place of a handshake ends at the v2 garbage bound; a
/// large message declared and never finished costs no more than its bytes.
#[test]
fn garbage_oversized_frames_and_wrong_checksums() {
    let setup = Setup::generate(300, "145", &[]);
    let a = serving_node(&setup);
    let mut b = syncing_node(&setup, a.port, &[]);
    b.wait_for_log(&setup.headers_line());

    let (mut wrong_magic, wrong_magic_id) = inbound(&mut b, 750_001);
    wrong_magic.send_raw(&[0xab; 100]).unwrap();
    let (mut oversized, oversized_id) = inbound(&mut b, 750_002);
    oversized.send_raw(&frame_header(b"block", 4_000_001, [0; 4])).unwrap();
    let (mut unfinished, unfinished_id) = inbound(&mut b, 750_003);
    unfinished.send_raw(&frame_header(b"block", 3_999_999, [0; 4])).unwrap();
    unfinished.send_raw(&[0; 1_000]).unwrap();
    let (mut checksum, checksum_id) = inbound(&mut b, 750_004);
    let bad_headers =
        NetworkMessage::Headers(vec![without_proof_of_work(setup.chain.header_at(1))]);
    let mut frame = Vec::new();
    ibex_p2p::encode_message(magic(), &bad_headers, &mut frame).unwrap();
    frame[20..24].copy_from_slice(&[0; 4]);
    checksum.send_raw(&frame).unwrap();
    let checksum = serve_chain(checksum, &setup.chain, GetData::Answer);
    let mut not_v1 = FakePeer::connect(b.port);
    not_v1.send_raw(&garbage(5_000)).unwrap();

    assert!(wrong_magic.closed_within(DROP_WAIT));
    assert!(oversized.closed_within(DROP_WAIT));
    assert!(not_v1.closed_within(DROP_WAIT));
    b.wait_for_log(&setup.tip_line());
    let log = b.log();
    assert!(has_line_ending(
        &log,
        &format!("Header error: Wrong MessageStart abababab received, disconnecting peer={wrong_magic_id}")
    ), "{log}");
    assert!(has_line_ending(
        &log,
        &format!("Header error: Size too large (block, 4000001 bytes), disconnecting peer={oversized_id}")
    ));
    let dropped = "Header error: Wrong checksum (headers, 82 bytes), expected ";
    let dropped_line = log.lines().find(|line| line.contains(dropped)).expect(&log);
    assert!(
        dropped_line.ends_with(&format!(" was 00000000, peer={checksum_id}")),
        "{dropped_line}"
    );
    assert!(!log.contains(&format!("Misbehaving: peer={checksum_id}")), "{log}");
    assert!(log.contains("V2 transport error: missing garbage terminator, disconnecting peer="));
    assert!(!log.contains(&format!("disconnecting peer={unfinished_id}")), "{log}");
    assert!(!unfinished.closed_within(Duration::from_millis(100)));
    assert!(!checksum.stop().closed_by_node, "{log}");
    finish(&setup, a, b, PEAK_RESIDENT_BYTES_MAX);
}

/// Scenario 6: blocks nobody asked for. Core punishes no peer for sending
/// one: a block of the best chain it lacks is processed (here, the honest
/// blocks pushed ahead of the download), a block it has or one off the
/// best chain with less work is dropped (here, a 990 kB block on genesis
/// sent 300 times: 300 MB, more than B's memory bound). Only a block whose
/// parent it does not know is punished (`prev-blk-not-found`).
#[test]
fn a_flood_of_unrequested_blocks_is_dropped_without_keeping_it() {
    const STALE_COPIES: usize = 300;
    let setup = Setup::generate(1_500, "146", &[]);
    let a = serving_node(&setup);
    let mut b = syncing_node(&setup, a.port, &[]);
    b.wait_for_log(&setup.headers_line());
    b.wait_for_log(&update_tip_line(setup.chain.chain[10], 10));

    let (mut flooder, flooder_id) = inbound(&mut b, 760_001);
    let genesis = setup.chain.header_at(0);
    let stale = coinbase_block(genesis.block_hash(), genesis.time + 1, 990_000, 1);
    assert!(stale.len() < 1_000_000);
    let honest: Vec<Vec<u8>> =
        setup.chain.chain[1..=300].iter().map(|hash| setup.chain.blocks[hash].clone()).collect();
    let flood = std::thread::spawn(move || {
        for block in honest {
            flooder.send(&NetworkMessage::Block(block)).unwrap();
        }
        for _ in 0..STALE_COPIES {
            flooder.send(&NetworkMessage::Block(stale.clone())).unwrap();
        }
        flooder
    });
    let (mut orphan_sender, orphan_id) = inbound(&mut b, 760_002);
    let orphan = coinbase_block(BlockHash([0x42; 32]), genesis.time + 1, 100, 2);
    orphan_sender.send(&NetworkMessage::Block(orphan)).unwrap();
    assert!(orphan_sender.closed_within(DROP_WAIT), "{}", b.log());

    let mut flooder = flood.join().unwrap();
    assert!(flooder.ping_pong(7, DROP_WAIT), "the flooder was dropped\n{}", b.log());
    let log = b.log();
    assert!(has_line_ending(&log, &format!("Misbehaving: peer={orphan_id}")), "{log}");
    assert!(has_line_ending(
        &log,
        "[error] ProcessNewBlock: AcceptBlock FAILED (prev-blk-not-found)"
    ));
    assert!(!log.contains(&format!("Misbehaving: peer={flooder_id}")), "{log}");
    let stale_hash = hostile_peer::header_of(&coinbase_block(
        genesis.block_hash(),
        genesis.time + 1,
        990_000,
        1,
    ))
    .block_hash();
    assert!(!log.contains(&stale_hash.to_string()), "the stale block reached the engine\n{log}");
    finish(&setup, a, b, PEAK_RESIDENT_BYTES_MAX);
}

/// The forged headers really are what the scenarios say.
#[test]
fn forged_headers_are_what_they_claim() {
    let bad: Header = without_proof_of_work(branch_from_genesis(1)[0]);
    assert!(!hostile_peer::forge::meets_target(&bad));
    let branch = branch_from_genesis(3);
    assert!(branch.iter().all(hostile_peer::forge::meets_target));
    assert_eq!(branch[1].previous_block_hash, branch[0].block_hash());
}
