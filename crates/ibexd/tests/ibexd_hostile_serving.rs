//! Serving and download attacks, played by fake peers against a
//! running `ibexd`:
//!
//! - a peer that asks for 128 large blocks and reads its socket at a
//!   trickle costs the serving node no more disk reads than the bytes it
//!   takes plus a block or two, and little CPU, while an honest peer is
//!   still served (Core's `ProcessGetData` under `fPauseSend`);
//! - a peer that answers every block request with a valid header and
//!   garbage is dropped by the stalling timeout, as one that never answers
//!   (Core keeps the request of a block that does not deserialise in
//!   flight), and the sync still ends at the right tip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod hostile_peer;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hostile_peer::nodes::{finish, serving_node, syncing_node, wait_until, Node, Setup};
use hostile_peer::{ChainData, FakePeer, GetData, Serving};
use ibex_p2p::{Inventory, InventoryType, NetworkMessage};
use ibex_primitives::{BlockHash, Hash256, Header};

/// Peak resident set of a syncing node in these scenarios (see
/// `ibexd_hostile_peers`: 16-32 MiB measured).
const PEAK_RESIDENT_BYTES_MAX: u64 = 96 << 20;
/// How long a node may take to drop a peer it must drop.
const DROP_WAIT: Duration = Duration::from_secs(30);
/// How long the trickle-reading attacker is measured.
const ATTACK_WINDOW: Duration = Duration::from_secs(5);
/// What the attacker reads per poll: 16 KiB every 100 ms, 160 KiB/s.
const TRICKLE_BYTES: usize = 16 << 10;
/// The pause between two trickle reads.
const TRICKLE_PAUSE: Duration = Duration::from_millis(100);

/// CPU time (user and system) of process `pid` so far, in milliseconds
/// (`/proc/<pid>/stat`, in clock ticks of 10 ms: Linux's `USER_HZ`).
fn cpu_milliseconds(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = stat.rsplit_once(')').unwrap().1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 and 15 of the whole line (utime, stime); the name ends 2.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks * 10
}

/// Bytes process `pid` read through `read`-like calls so far (`rchar` of
/// `/proc/<pid>/io`: the block files' reads, page cache or not; socket
/// receives are not counted).
fn bytes_read(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    let line = io.lines().find(|line| line.starts_with("rchar:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A chain whose last blocks are large (~1.3 MB from height 106: the
/// generator fills them toward 4,000,000 weight once coinbases mature).
fn large_block_setup() -> Setup {
    let root = tempfile::tempdir().unwrap();
    let chain_directory = root.path().join("chain");
    let options = ["--target-weight", "3990000", "--xor-zero"];
    common::generate_chain(&chain_directory, "tiny", "112", "421", &options);
    let chain = ChainData::read(&chain_directory);
    Setup { root, chain_directory, chain }
}

/// `getdata` for `hashes` as `kind`.
fn get_data(kind: InventoryType, hashes: &[BlockHash]) -> NetworkMessage {
    let entries = hashes
        .iter()
        .map(|hash| Inventory { inventory_type: kind, hash: Hash256(hash.0) })
        .collect();
    NetworkMessage::GetData(entries)
}

/// An honest peer: asks for `hashes` and waits for every one, asking
/// again for a block answered with `notfound` (the engine too busy to
/// answer in time); the time it took and the bytes received, or what is
/// still missing when `wait` passed.
fn fetch_blocks(
    port: u16,
    hashes: &[BlockHash],
    wait: Duration,
) -> Result<(Duration, usize), String> {
    let mut peer = FakePeer::connect(port);
    peer.handshake(420_002, true);
    let started = Instant::now();
    peer.send(&get_data(InventoryType::WITNESS_BLOCK, hashes)).unwrap();
    let mut missing: Vec<BlockHash> = hashes.to_vec();
    let (mut bytes, mut not_found) = (0, 0);
    while !missing.is_empty() {
        if started.elapsed() > wait {
            return Err(format!("missing {missing:?} after {not_found} notfound"));
        }
        match peer.receive().map_err(|_| "the node closed the honest peer".to_owned())? {
            Some(NetworkMessage::Block(block)) => {
                let hash = hostile_peer::header_of(&block).block_hash();
                missing.retain(|wanted| *wanted != hash);
                bytes += block.len();
            }
            Some(NetworkMessage::NotFound(entries)) => {
                not_found += entries.len();
                let again: Vec<BlockHash> =
                    entries.iter().map(|entry| BlockHash(entry.hash.0)).collect();
                peer.send(&get_data(InventoryType::WITNESS_BLOCK, &again)).unwrap();
            }
            Some(NetworkMessage::Ping { nonce }) => {
                peer.send(&NetworkMessage::Pong { nonce: Some(nonce) }).unwrap();
            }
            _ => {}
        }
    }
    Ok((started.elapsed(), bytes))
}

/// 128 requests for the largest blocks from a peer that reads 160
/// KiB/s. The node serves a block only while the peer's send queue is
/// below its 1 MB limit, so over the measured window its reads stay within
/// what the attacker and an honest peer took plus two blocks (a node that
/// looks up and reads blocks to find the queue full reads gigabytes), its
/// CPU stays under a quarter of the window, and the honest peer gets its
/// 6 blocks at once. The 128 requests cycle over the 6 largest blocks
/// (Core serves a block asked for twice twice).
#[test]
fn a_trickle_reader_holding_128_block_requests_costs_what_it_reads() {
    let setup = large_block_setup();
    let mut a = serving_node(&setup);
    a.wait_for_log(&setup.tip_line());
    let pid = a.process.id();
    let mut by_size: Vec<(usize, BlockHash)> =
        setup.chain.blocks.iter().map(|(hash, block)| (block.len(), *hash)).collect();
    by_size.sort_unstable_by(|left, right| right.cmp(left));
    let largest_bytes = by_size[0].0 as u64;
    assert!(largest_bytes > 1_000_000, "the chain's blocks are small: {largest_bytes}");
    let large: Vec<BlockHash> = by_size.iter().take(6).map(|(_, hash)| *hash).collect();
    let requested: Vec<BlockHash> = large.iter().cycle().take(128).copied().collect();

    let mut attacker = FakePeer::connect(a.port);
    attacker.handshake(420_001, true);
    attacker.send(&get_data(InventoryType::WITNESS_BLOCK, &requested)).unwrap();
    // The send queue and the socket buffers fill first.
    let mut attacker_bytes = 0u64;
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(1) {
        attacker_bytes += attacker.drain_raw(TRICKLE_BYTES).unwrap() as u64;
        std::thread::sleep(TRICKLE_PAUSE);
    }
    let (cpu_before, read_before) = (cpu_milliseconds(pid), bytes_read(pid));
    let honest_port = a.port;
    let honest_hashes = large.clone();
    let honest = std::thread::spawn(move || {
        fetch_blocks(honest_port, &honest_hashes, Duration::from_secs(20))
    });
    let window_start = Instant::now();
    let mut window_bytes = 0u64;
    while window_start.elapsed() < ATTACK_WINDOW {
        window_bytes += attacker.drain_raw(TRICKLE_BYTES).expect("the attacker stays") as u64;
        std::thread::sleep(TRICKLE_PAUSE);
    }
    let (cpu_after, read_after) = (cpu_milliseconds(pid), bytes_read(pid));
    let fetched = honest.join().unwrap();
    let (honest_latency, honest_bytes) =
        fetched.unwrap_or_else(|error| panic!("honest peer: {error}\n{}", a.log()));
    let window_milliseconds = window_start.elapsed().as_millis() as u64;
    let cpu = cpu_after - cpu_before;
    let read = read_after - read_before;
    let read_bound = window_bytes + honest_bytes as u64 + 2 * largest_bytes + (8 << 20);
    eprintln!(
        "attacker: {attacker_bytes} B before and {window_bytes} B in the window; honest: {honest_bytes} B in {honest_latency:?}; node: {cpu} ms CPU in {window_milliseconds} ms, {read} B read (bound {read_bound})"
    );
    assert!(read <= read_bound, "the node read {read} bytes, over {read_bound}\n{}", a.log());
    assert!(
        cpu * 4 <= window_milliseconds,
        "the node spent {cpu} ms of CPU in {window_milliseconds} ms"
    );
    assert!(honest_latency < Duration::from_secs(10), "the honest peer waited {honest_latency:?}");
    a.stop();
}

/// Blocks of `chain` that keep their header and lose their transactions
/// to bytes that do not decode.
fn garbage_blocks(chain: &ChainData) -> HashMap<BlockHash, Vec<u8>> {
    chain
        .blocks
        .iter()
        .map(|(hash, block)| {
            let mut bytes = block[..80].to_vec();
            bytes.extend_from_slice(&[0xfd, 0xff, 0xff, 0x01]);
            (*hash, bytes)
        })
        .collect()
}

/// A peer answering every request with a valid header and garbage.
/// Core drops each such message without penalty but keeps the request in
/// flight, so once the window waits on its blocks it is dropped by the
/// stalling timeout like a peer that never answers; the node syncs A's
/// chain to its tip with A's UTXO set.
#[test]
fn a_peer_answering_with_garbage_is_dropped_for_stalling() {
    // Longer than the 1,024-block window, so that it fills while the
    // garbage peer holds its first blocks.
    let setup = Setup::generate(2_500, "422", &[]);
    let a = serving_node(&setup);
    let mut b = syncing_node(&setup, a.port, &["-v2transport=0"]);
    b.wait_for_log(&setup.headers_line());
    let mut broken = FakePeer::connect(b.port);
    broken.handshake(422_001, true);
    let broken_id = b.peer_id(422_001);
    let headers: Vec<Header> = setup.chain.headers();
    for chunk in headers.chunks(ibex_p2p::HEADERS_PER_MESSAGE_MAX) {
        broken.send(&NetworkMessage::Headers(chunk.to_vec())).unwrap();
    }
    let broken = Serving::start(broken, headers, garbage_blocks(&setup.chain), GetData::Answer);
    assert!(
        wait_until(DROP_WAIT, || broken.is_finished()),
        "the garbage peer is still connected\n{}",
        b.log()
    );
    let report = broken.stop();
    assert!(report.closed_by_node && report.blocks_sent > 0, "{report:?}");
    let log = finish_log(&setup, a, b);
    let undecodable = format!("ProcessMessages(block, peer={broken_id}): undecodable block");
    assert!(log.contains(&undecodable), "no '{undecodable}'\n{log}");
    let stalling = format!("Peer is stalling block download, disconnecting peer={broken_id}");
    assert!(log.lines().any(|line| line.ends_with(&stalling)), "no '{stalling}'\n{log}");
    assert!(!log.contains(&format!("Misbehaving: peer={broken_id}")), "{log}");
}

/// [`finish`] with this file's memory bound.
fn finish_log(setup: &Setup, a: Node, b: Node) -> String {
    finish(setup, a, b, PEAK_RESIDENT_BYTES_MAX)
}
