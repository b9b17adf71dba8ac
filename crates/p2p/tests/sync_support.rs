//! Shared pieces of the sync tests: headers mined on regtest's easy target,
//! fake blocks, an in-memory block index, a peer that serves headers.
//! Included by the `sync_*` tests with `#[path]`; compiled alone it holds
//! no tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use ibex_p2p::sync::headers::{anti_dos_work_threshold, HeaderIndex, IndexedHeader};
use ibex_p2p::sync::locator::{headers_to_serve, locator_entries, HashChain};
use ibex_p2p::LocatorRequest;
use ibex_primitives::pow::{block_proof, check_proof_of_work};
use ibex_primitives::{BlockHash, ChainWork, CompactTarget, Hash256, Header, Params, U256};

/// Regtest's `nBits`: half of all hashes meet it; each header proves 2.
pub const REGTEST_BITS: u32 = 0x207f_ffff;
/// Seconds between mined headers.
pub const SPACING_SECONDS: u32 = 600;

/// Regtest with a minimum chain work of `work`.
pub fn regtest_with_minimum_work(work: u64) -> Params {
    let mut params = Params::regtest();
    params.minimum_chain_work = ChainWork::from_u256(U256::from_u64(work));
    params
}

/// A header on `previous` with a nonce that meets `bits`; `salt` tells
/// chains apart (it goes into the merkle root).
pub fn mine_header(params: &Params, previous: &Header, salt: u64, bits: u32) -> Header {
    let mut merkle_root = [0u8; 32];
    merkle_root[..8].copy_from_slice(&salt.to_le_bytes());
    merkle_root[8..12].copy_from_slice(&previous.time.to_le_bytes());
    let mut header = Header {
        version: 0x2000_0000,
        previous_block_hash: previous.block_hash(),
        merkle_root: Hash256(merkle_root),
        time: previous.time + SPACING_SECONDS,
        bits,
        nonce: 0,
    };
    while !check_proof_of_work(&header.block_hash(), CompactTarget(bits), params) {
        header.nonce += 1;
    }
    header
}

/// `count` headers mined on `start` (not included).
pub fn mine_chain(params: &Params, start: &Header, count: usize, salt: u64) -> Vec<Header> {
    let mut headers = Vec::with_capacity(count);
    let mut previous = *start;
    for _ in 0..count {
        let header = mine_header(params, &previous, salt, REGTEST_BITS);
        headers.push(header);
        previous = header;
    }
    headers
}

/// Genesis then `count` mined headers.
pub fn chain_from_genesis(params: &Params, count: usize, salt: u64) -> Vec<Header> {
    let genesis = params.genesis.header;
    let mut headers = vec![genesis];
    headers.extend(mine_chain(params, &genesis, count, salt));
    headers
}

/// The hashes of `headers`, as a chain.
pub fn hash_chain(headers: &[Header]) -> HashChain {
    let hashes: Vec<BlockHash> = headers.iter().map(Header::block_hash).collect();
    HashChain::from_hashes(&hashes).unwrap()
}

/// The work of `count` regtest headers.
pub fn regtest_work(count: u64) -> ChainWork {
    ChainWork::from_u256(U256::from_u64(2 * count))
}

/// A peer's answer to `getheaders` over its chain `headers` (genesis first).
pub fn serve_headers(
    headers: &[Header],
    chain: &HashChain,
    request: &LocatorRequest,
) -> Vec<Header> {
    match headers_to_serve(chain, request) {
        Some(range) => range.map(|height| headers[height as usize]).collect(),
        None => Vec::new(),
    }
}

/// A block index in memory: what the engine's `offer_headers` would keep.
pub struct MemoryIndex {
    params: Params,
    entries: HashMap<BlockHash, (IndexedHeader, Header)>,
    best: BlockHash,
    /// The best chain, by height.
    best_chain: Vec<BlockHash>,
    /// Every header accepted, in order of acceptance.
    pub accepted: Vec<Header>,
}

impl MemoryIndex {
    /// An index holding genesis.
    pub fn new(params: &Params) -> MemoryIndex {
        let genesis = params.genesis.header;
        let hash = genesis.block_hash();
        let entry = IndexedHeader {
            hash,
            previous_block_hash: BlockHash::ZERO,
            height: 0,
            chain_work: block_proof(CompactTarget(genesis.bits)),
            bits: genesis.bits,
            time: genesis.time,
            median_time_past: i64::from(genesis.time),
        };
        let mut entries = HashMap::new();
        entries.insert(hash, (entry, genesis));
        MemoryIndex {
            params: params.clone(),
            entries,
            best: hash,
            best_chain: vec![hash],
            accepted: Vec::new(),
        }
    }

    /// Indexes headers whose parents are indexed (as `offer_headers`).
    pub fn accept(&mut self, headers: &[Header]) {
        for header in headers {
            let hash = header.block_hash();
            if self.entries.contains_key(&hash) {
                continue;
            }
            let (parent, _) =
                self.entries.get(&header.previous_block_hash).expect("parent indexed");
            let entry = IndexedHeader {
                hash,
                previous_block_hash: header.previous_block_hash,
                height: parent.height + 1,
                chain_work: parent.chain_work.wrapping_add(block_proof(CompactTarget(header.bits))),
                bits: header.bits,
                time: header.time,
                median_time_past: 0,
            };
            let mut entry = entry;
            entry.median_time_past = self.median_time_past(header);
            let more_work = entry.chain_work > self.best_entry().chain_work;
            self.entries.insert(hash, (entry, *header));
            self.accepted.push(*header);
            if more_work {
                self.best = hash;
            }
        }
        self.best_chain = self.ancestors(&self.best);
    }

    fn best_entry(&self) -> &IndexedHeader {
        &self.entries[&self.best].0
    }

    fn median_time_past(&self, header: &Header) -> i64 {
        let mut times = vec![i64::from(header.time)];
        let mut cursor = header.previous_block_hash;
        while times.len() < 11 {
            let Some((_, parent)) = self.entries.get(&cursor) else { break };
            times.push(i64::from(parent.time));
            cursor = parent.previous_block_hash;
        }
        times.sort_unstable();
        times[times.len() / 2]
    }

    /// Hashes from genesis to `hash`.
    fn ancestors(&self, hash: &BlockHash) -> Vec<BlockHash> {
        let mut hashes = Vec::new();
        let mut cursor = *hash;
        while let Some((entry, _)) = self.entries.get(&cursor) {
            hashes.push(entry.hash);
            if entry.height == 0 {
                break;
            }
            cursor = entry.previous_block_hash;
        }
        hashes.reverse();
        hashes
    }

    /// The best header's height.
    pub fn best_height(&self) -> u32 {
        self.best_entry().height
    }

    /// The best chain's hashes.
    pub fn best_chain(&self) -> &[BlockHash] {
        &self.best_chain
    }
}

impl HeaderIndex for MemoryIndex {
    fn lookup(&self, hash: &BlockHash) -> Option<IndexedHeader> {
        self.entries.get(hash).map(|(entry, _)| entry.clone())
    }

    fn is_ancestor_of_best_header_or_tip(&self, hash: &BlockHash) -> bool {
        self.entries
            .get(hash)
            .is_some_and(|(entry, _)| self.best_chain.get(entry.height as usize) == Some(hash))
    }

    fn best_header(&self) -> IndexedHeader {
        self.best_entry().clone()
    }

    fn locator(&self, hash: &BlockHash) -> Vec<BlockHash> {
        let ancestors = self.ancestors(hash);
        let Some(tip) = ancestors.len().checked_sub(1) else { return Vec::new() };
        locator_entries(&HashChain::from_hashes(&ancestors).unwrap(), tip as u32)
    }

    fn anti_dos_work_threshold(&self) -> ChainWork {
        // No block is connected: the tip is genesis.
        let genesis = &self.entries[&self.best_chain[0]].0;
        anti_dos_work_threshold(genesis.chain_work, genesis.bits, self.params.minimum_chain_work)
    }

    fn minimum_chain_work(&self) -> ChainWork {
        self.params.minimum_chain_work
    }

    fn is_initial_block_download(&self) -> bool {
        true
    }
}
