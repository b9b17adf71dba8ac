//! Fake peers for `ibexd_hostile_peers`: a v1 peer on a blocking socket,
//! scripted by the test (framing and messages from `ibex-p2p`), the
//! generated chain it serves ([`ChainData`]), the blocks and headers it
//! breaks rules with ([`forge`]), and the nodes around it ([`nodes`]).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod forge;
pub mod nodes;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ibex_p2p::messages::address::ServiceAddress;
use ibex_p2p::messages::spent_coins::SpentCoins;
use ibex_p2p::{
    encode_message, FrameDecoder, NetworkMessage, ServiceFlags, UserAgent, VersionMessage,
    HEADERS_PER_MESSAGE_MAX,
};
use ibex_primitives::{BlockHash, Header, Params, HEADER_BYTES};

/// How long a fake peer waits for one message before it looks at its
/// stop flag again.
const POLL: Duration = Duration::from_millis(50);
/// How long a handshake may take.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(20);

/// Regtest's network magic.
pub fn magic() -> [u8; 4] {
    Params::regtest().message_start
}

/// A generated chain read back from its block file (`--xor-zero`): every
/// block by hash, and the best chain's hashes from genesis to the tip.
pub struct ChainData {
    /// Every block of the file.
    pub blocks: HashMap<BlockHash, Vec<u8>>,
    /// The best chain, genesis first.
    pub chain: Vec<BlockHash>,
    /// `manifest.json`.
    pub manifest: serde_json::Value,
}

impl ChainData {
    /// Reads `directory`'s `blk00000.dat` (not obfuscated) and manifest.
    pub fn read(directory: &Path) -> ChainData {
        let file = std::fs::read(directory.join("blk00000.dat")).unwrap();
        let mut blocks = HashMap::new();
        let mut offset = 0;
        while offset + 8 <= file.len() {
            let size = u32::from_le_bytes(file[offset + 4..offset + 8].try_into().unwrap());
            if size == 0 {
                break;
            }
            let block = file[offset + 8..offset + 8 + size as usize].to_vec();
            blocks.insert(header_of(&block).block_hash(), block);
            offset += 8 + size as usize;
        }
        let manifest = std::fs::read_to_string(directory.join("manifest.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        let mut chain = vec![BlockHash::from_hex(manifest["tip_hash"].as_str().unwrap()).unwrap()];
        while let Some(block) = blocks.get(chain.last().unwrap()) {
            let parent = header_of(block).previous_block_hash;
            if parent == BlockHash::ZERO {
                break;
            }
            chain.push(parent);
        }
        chain.reverse();
        assert_eq!(chain[0], Params::regtest().genesis_hash, "the chain reaches genesis");
        ChainData { blocks, chain, manifest }
    }

    /// The tip's height.
    pub fn tip_height(&self) -> u32 {
        (self.chain.len() - 1) as u32
    }

    /// The tip's hash.
    pub fn tip(&self) -> BlockHash {
        *self.chain.last().unwrap()
    }

    /// The header of the best chain's block at `height`.
    pub fn header_at(&self, height: u32) -> Header {
        header_of(&self.blocks[&self.chain[height as usize]])
    }

    /// The best chain's headers above genesis.
    pub fn headers(&self) -> Vec<Header> {
        (1..=self.tip_height()).map(|height| self.header_at(height)).collect()
    }

    /// The invalid block of `class` (`--invalid`): its hash and bytes.
    pub fn invalid_block(&self, class: &str) -> (BlockHash, Vec<u8>) {
        let record = self.manifest["invalid_blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|record| record["class"] == class)
            .unwrap_or_else(|| panic!("no invalid block of class {class}"));
        let hash = BlockHash::from_hex(record["hash"].as_str().unwrap()).unwrap();
        (hash, self.blocks[&hash].clone())
    }
}

/// The header of a serialised block.
pub fn header_of(block: &[u8]) -> Header {
    Header::decode(block[..HEADER_BYTES].try_into().unwrap())
}

/// A v1 peer on a blocking TCP socket.
pub struct FakePeer {
    stream: TcpStream,
    /// The network's message start (regtest's unless connected with
    /// [`FakePeer::connect_on`]).
    magic: [u8; 4],
    decoder: FrameDecoder,
    pending: Vec<u8>,
    closed: bool,
}

/// The peer closed the connection (or it broke).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

impl FakePeer {
    /// Connects to `ibexd` on loopback `port` (an inbound peer for it).
    pub fn connect(port: u16) -> FakePeer {
        FakePeer::connect_on(port, magic())
    }

    /// [`FakePeer::connect`] on the network whose message start is `magic`.
    pub fn connect_on(port: u16, magic: [u8; 4]) -> FakePeer {
        FakePeer::over(TcpStream::connect(("127.0.0.1", port)).unwrap(), magic)
    }

    /// Takes the next connection `listener` accepts (`ibexd` connecting
    /// out: a manual peer for it).
    pub fn accept(listener: &TcpListener) -> FakePeer {
        FakePeer::over(listener.accept().unwrap().0, magic())
    }

    fn over(stream: TcpStream, magic: [u8; 4]) -> FakePeer {
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(POLL)).unwrap();
        let decoder = FrameDecoder::new(magic);
        FakePeer { stream, magic, decoder, pending: Vec::new(), closed: false }
    }

    /// Sends `message`; `Err` once the node has closed the connection.
    pub fn send(&mut self, message: &NetworkMessage) -> Result<(), Closed> {
        let mut bytes = Vec::new();
        encode_message(self.magic, message, &mut bytes).unwrap();
        self.send_raw(&bytes)
    }

    /// Sends bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) -> Result<(), Closed> {
        self.stream.write_all(bytes).map_err(|_| {
            self.closed = true;
            Closed
        })
    }

    /// The next message, waiting at most [`POLL`]: `Ok(None)` when none
    /// came, `Err` once the node closed the connection.
    pub fn receive(&mut self) -> Result<Option<NetworkMessage>, Closed> {
        loop {
            if let Some(message) = self.next_buffered()? {
                return Ok(Some(message));
            }
            let mut buffer = [0u8; 64 * 1024];
            match self.stream.read(&mut buffer) {
                Ok(0) => {
                    self.closed = true;
                    return Err(Closed);
                }
                Ok(read) => self.pending.extend_from_slice(&buffer[..read]),
                Err(error)
                    if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
                {
                    return Ok(None)
                }
                Err(_) => {
                    self.closed = true;
                    return Err(Closed);
                }
            }
        }
    }

    fn next_buffered(&mut self) -> Result<Option<NetworkMessage>, Closed> {
        loop {
            let taken = self.decoder.push(&self.pending);
            self.pending.drain(..taken);
            match self.decoder.next_frame() {
                Ok(Some(frame)) => {
                    return Ok(Some(NetworkMessage::from_frame(frame).map_err(|_| Closed)?))
                }
                Ok(None) if taken == 0 || self.pending.is_empty() => return Ok(None),
                Ok(None) => {}
                Err(_) => return Err(Closed),
            }
        }
    }

    /// The version handshake, as the side that opened the connection
    /// (`inbound` for the node) or the one that accepted it; `start_height`
    /// marks this peer in the node's log (`blocks=<start_height>`).
    pub fn handshake(&mut self, start_height: i32, opened: bool) {
        if opened {
            self.send(&version(start_height)).unwrap();
        }
        let (mut version_seen, mut verack_seen) = (false, false);
        let started = Instant::now();
        while !(version_seen && verack_seen) {
            assert!(started.elapsed() < HANDSHAKE_WAIT, "no handshake");
            match self.receive().expect("the node keeps the connection") {
                Some(NetworkMessage::Version(_)) => {
                    version_seen = true;
                    if !opened {
                        self.send(&version(start_height)).unwrap();
                    }
                    self.send(&NetworkMessage::Verack).unwrap();
                }
                Some(NetworkMessage::Verack) => verack_seen = true,
                _ => {}
            }
        }
    }

    /// Reads until the node closes the connection or `wait` passes,
    /// answering pings; whether it closed.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < wait {
            match self.receive() {
                Err(Closed) => return true,
                Ok(Some(NetworkMessage::Ping { nonce })) => {
                    let _ = self.send(&NetworkMessage::Pong { nonce: Some(nonce) });
                }
                Ok(_) => {}
            }
        }
        self.closed
    }

    /// A ping answered with its pong within `wait`: the connection is up.
    pub fn ping_pong(&mut self, nonce: u64, wait: Duration) -> bool {
        if self.send(&NetworkMessage::Ping { nonce }).is_err() {
            return false;
        }
        let started = Instant::now();
        while started.elapsed() < wait {
            match self.receive() {
                Err(Closed) => return false,
                Ok(Some(NetworkMessage::Pong { nonce: echoed })) if echoed == Some(nonce) => {
                    return true
                }
                Ok(_) => {}
            }
        }
        false
    }
}

/// Our `version`: protocol 70016, a full node with witness data.
pub fn version(start_height: i32) -> NetworkMessage {
    NetworkMessage::Version(VersionMessage {
        protocol_version: 70_016,
        services: ServiceFlags::NETWORK | ServiceFlags::WITNESS,
        timestamp_seconds: 1_700_000_000,
        receiver: ServiceAddress::default(),
        sender: ServiceAddress::default(),
        nonce: u64::from(start_height.unsigned_abs()) << 20 | u64::from(std::process::id()),
        user_agent: UserAgent::new(b"/HostilePeer:1.0/".to_vec()).unwrap(),
        start_height,
        relay: Some(false),
    })
}

/// How a serving fake peer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GetData {
    /// With the blocks it has.
    Answer,
    /// Never (a peer that stalls the download).
    Ignore,
}

/// What a serving fake peer saw by the time it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingReport {
    /// The node closed the connection.
    pub closed_by_node: bool,
    /// Blocks the node asked it for.
    pub blocks_requested: usize,
    /// Blocks it sent.
    pub blocks_sent: usize,
    /// The blocks whose spent coins (BIP 455 `getbspent`) the node asked
    /// for, in order.
    pub spent_coins_requested: Vec<BlockHash>,
}

/// A fake peer serving `headers` (answering `getheaders` from them) and
/// `blocks` on its own thread until the node closes the connection or
/// [`Serving::stop`].
pub struct Serving {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<ServingReport>,
}

impl Serving {
    /// Starts serving over `peer`.
    pub fn start(
        peer: FakePeer,
        headers: Vec<Header>,
        blocks: HashMap<BlockHash, Vec<u8>>,
        get_data: GetData,
    ) -> Serving {
        Serving::start_with_spent_coins(peer, headers, blocks, get_data, HashMap::new())
    }

    /// [`Serving::start`], answering `getbspent` (BIP 455) with `spent`'s
    /// coins the request's cutoff asks for.
    pub fn start_with_spent_coins(
        mut peer: FakePeer,
        headers: Vec<Header>,
        blocks: HashMap<BlockHash, Vec<u8>>,
        get_data: GetData,
        spent: HashMap<BlockHash, SpentCoins>,
    ) -> Serving {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut report = ServingReport {
                closed_by_node: false,
                blocks_requested: 0,
                blocks_sent: 0,
                spent_coins_requested: Vec::new(),
            };
            while !flag.load(Ordering::Relaxed) {
                match peer.receive() {
                    Err(Closed) => {
                        report.closed_by_node = true;
                        break;
                    }
                    Ok(Some(NetworkMessage::GetSpentCoins(request))) => {
                        report.spent_coins_requested.push(request.block_hash);
                        // The coins the request's cutoff asks for.
                        if let Some(coins) = spent.get(&request.block_hash) {
                            let mut answer = coins.clone();
                            answer.coins.retain(|coin| request.wants(coin.coin.height));
                            let _ = peer.send(&NetworkMessage::SpentCoins(answer));
                        }
                    }
                    Ok(Some(message)) => {
                        answer(&mut peer, message, &headers, &blocks, get_data, &mut report)
                    }
                    Ok(None) => {}
                }
            }
            report
        });
        Serving { stop, thread }
    }

    /// Whether the node has closed the connection.
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Stops serving; what it saw.
    pub fn stop(self) -> ServingReport {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

fn answer(
    peer: &mut FakePeer,
    message: NetworkMessage,
    headers: &[Header],
    blocks: &HashMap<BlockHash, Vec<u8>>,
    get_data: GetData,
    report: &mut ServingReport,
) {
    match message {
        NetworkMessage::Ping { nonce } => {
            let _ = peer.send(&NetworkMessage::Pong { nonce: Some(nonce) });
        }
        NetworkMessage::GetHeaders(request) => {
            let start = request
                .locator_hashes
                .iter()
                .find_map(|hash| headers.iter().position(|header| header.block_hash() == *hash))
                .map_or(0, |position| position + 1);
            let end = (start + HEADERS_PER_MESSAGE_MAX).min(headers.len());
            let _ = peer.send(&NetworkMessage::Headers(headers[start..end].to_vec()));
        }
        NetworkMessage::GetData(inventory) => {
            report.blocks_requested += inventory.len();
            if get_data == GetData::Ignore {
                return;
            }
            for entry in inventory {
                if let Some(block) = blocks.get(&BlockHash(entry.hash.0)) {
                    if peer.send(&NetworkMessage::Block(block.clone())).is_ok() {
                        report.blocks_sent += 1;
                    }
                }
            }
        }
        _ => {}
    }
}

impl FakePeer {
    /// Connects to `ibexd` on loopback `port` from the loopback address
    /// `source` (Linux routes all of 127.0.0.0/8 to the loopback device),
    /// so one machine plays many hosts.
    pub fn connect_from(port: u16, source: std::net::Ipv4Addr) -> FakePeer {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        let stream = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind((source, 0).into()).unwrap();
            socket.connect(([127, 0, 0, 1], port).into()).await.unwrap()
        });
        let stream = stream.into_std().unwrap();
        stream.set_nonblocking(false).unwrap();
        FakePeer::over(stream, magic())
    }

    /// Reads at most `bytes_max` bytes off the socket as they come and
    /// drops them, undecoded (a peer reading at a trickle): the bytes read,
    /// 0 when none came within [`POLL`], `Err` once the node closed.
    pub fn drain_raw(&mut self, bytes_max: usize) -> Result<usize, Closed> {
        let mut buffer = vec![0u8; bytes_max];
        match self.stream.read(&mut buffer) {
            Ok(0) => Err(Closed),
            Ok(read) => Ok(read),
            Err(error) if matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Ok(0)
            }
            Err(_) => Err(Closed),
        }
    }
}
