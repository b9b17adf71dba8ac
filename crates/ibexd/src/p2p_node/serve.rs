//! Answering peers from our chain as Core's `ProcessMessage` ("getheaders",
//! "getdata") and `ProcessGetData` do.
//!
//! - `getheaders`: up to 2,000 headers of the active chain after the
//!   locator's fork point; an empty `headers` while our tip has less work
//!   than the minimum chain work (Core's "active chain has too little
//!   work"), unless the peer holds the `download` permission.
//! - `getdata`: block entries join the peer's queue of requests
//!   ([`GetDataQueue`], Core's `m_getdata_requests`); nothing is looked up
//!   when the message arrives. Each pass of the sync loop serves at most one
//!   block per peer, and only while that peer's send queue is below its
//!   limit (Core: one block per `ProcessGetData` call, none while
//!   `fPauseSend`). A block is served only under Core's
//!   `BlockRequestAllowed` ([`super::engine_view::block_for`]); `MSG_BLOCK`
//!   gets the block without witness data, `MSG_WITNESS_BLOCK` and
//!   `MSG_CMPCT_BLOCK` with it (Ibex announces no compact blocks, and Core
//!   answers a compact block request it will not build with the full
//!   block); `MSG_FILTERED_BLOCK` gets nothing (no bloom filter is ever
//!   loaded, as Core answers without one). A block we never held or may
//!   not serve (one below an AssumeUTXO snapshot's base among them), and
//!   any transaction (no mempool), gets `notfound`: Core sends nothing
//!   for such a block, and its peers ignore a `notfound` of blocks, but
//!   ours lets a peer stop waiting. A block whose data was pruned gets
//!   nothing, as in Core. When we announced `NODE_NETWORK_LIMITED`
//!   without `NODE_NETWORK` to the peer (always when pruning; while a
//!   snapshot is not validated), a block more than 290 below our tip gets
//!   the peer disconnected, unless it holds `noban`, whether we hold it
//!   or not, as Core does so that it does not stall waiting
//!   (`ProcessGetBlockData`). Pruning keeps the last 288 blocks, so the
//!   silence for a pruned block is met by `noban` peers and in the two
//!   blocks of slack.
//!
//! # Bounded cost per message (napkin math)
//! - `getheaders`: one settled engine query walking at most 2,000 entries of
//!   the active chain (~2,000 index lookups, ~100 us) and one `headers`
//!   message of at most 162 kB, built only while the peer's send queue has
//!   room (one waits otherwise; a later one replaces it).
//! - `getdata` on arrival: at most [`GETDATA_BLOCKS_PER_MESSAGE_MAX`] (128)
//!   block entries queued (the rest `notfound`), and at most
//!   [`GETDATA_QUEUE_ENTRIES_MAX`] (1,024 entries of 36 bytes: 37 kB) per
//!   peer; no engine time, no disk read.
//! - Serving, per queued entry: one settled query (one hash lookup, a walk
//!   of nothing) and one read of the block (at most 4 MB), and for
//!   `MSG_BLOCK` one parse and re-serialisation of it (~4 MB copied, a few
//!   ms at worst). The read happens only when the send queue is below its
//!   limit, and such a queue never refuses a message: every byte read is
//!   sent, none is read and dropped. So a peer costs at most the disk reads
//!   of the bytes it actually takes off its socket, plus one block; one that
//!   reads at a trickle holds its queue full and costs one lock per loop
//!   pass (~100 a second while idle: microseconds), and its 128 requests
//!   wait in its queue.

use std::collections::VecDeque;

use ibex_chainstate::ChainReader;
use ibex_p2p::messages::spent_coins::GetSpentCoins;
use ibex_p2p::net::error::NetworkError;
use ibex_p2p::net::NetworkHandle;
use ibex_p2p::sync::PeerId;
use ibex_p2p::{Inventory, InventoryType, LocatorRequest, NetworkMessage};
use ibex_primitives::encode::write_compact_size;
use ibex_primitives::{BlockHash, BlockView, ChainWork};

use super::engine_view::{block_for, headers_for, BlockAnswer};
use super::spent_coins::{spent_coins_for, SpentCoinsAnswer};

/// Block entries one `getdata` is answered with; the rest of a longer
/// request gets `notfound` (our own download asks for 16 at a time).
pub const GETDATA_BLOCKS_PER_MESSAGE_MAX: usize = 128;
/// Block requests of one peer waiting to be served, at most (eight full
/// `getdata` messages); more get `notfound`.
pub const GETDATA_QUEUE_ENTRIES_MAX: usize = 1024;

/// Answers a `getheaders` from `peer`: nothing, or one `headers` message
/// (empty while our tip has less than `minimum_chain_work`, unless
/// `download_permitted`: Core's `NetPermissionFlags::Download`).
pub fn serve_headers(
    network: &NetworkHandle,
    reader: &ChainReader,
    peer: PeerId,
    request: LocatorRequest,
    minimum_chain_work: ChainWork,
    download_permitted: bool,
) {
    let floor = (!download_permitted).then_some(minimum_chain_work);
    if let Some(headers) = headers_for(reader, request, floor) {
        // A peer gone meanwhile is no error of ours.
        let _ = network.send(peer, NetworkMessage::Headers(headers));
    }
}

/// A request waiting in a peer's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeRequest {
    /// A block entry of a `getdata`.
    Data(Inventory),
    /// A `getbspent` (BIP 455).
    SpentCoins(GetSpentCoins),
}

/// One peer's block requests not served yet, oldest first (Core's
/// `m_getdata_requests`), with its `getbspent` requests among them.
#[derive(Debug, Default)]
pub struct GetDataQueue {
    entries: VecDeque<ServeRequest>,
}

impl GetDataQueue {
    /// Takes a `getdata`: its block entries are queued; what is answered at
    /// once with `notfound` is returned (transactions, block entries past
    /// [`GETDATA_BLOCKS_PER_MESSAGE_MAX`] or past the queue's room).
    /// Filtered blocks are dropped unanswered, as Core answers them
    /// without a bloom filter.
    pub fn push(&mut self, inventory: Vec<Inventory>) -> Vec<Inventory> {
        let mut not_found = Vec::new();
        let mut blocks_taken = 0;
        for entry in inventory {
            let kind = entry.inventory_type;
            if kind == InventoryType::FILTERED_BLOCK {
                continue;
            }
            let room = self.entries.len() < GETDATA_QUEUE_ENTRIES_MAX
                && blocks_taken < GETDATA_BLOCKS_PER_MESSAGE_MAX;
            if kind.is_block_request() && room {
                self.entries.push_back(ServeRequest::Data(entry));
                blocks_taken += 1;
            } else {
                not_found.push(entry);
            }
        }
        not_found
    }

    /// Takes a `getbspent`; false, and nothing queued, when the queue is
    /// full (the draft has no `notfound` for it).
    pub fn push_spent_coins(&mut self, request: GetSpentCoins) -> bool {
        if self.entries.len() >= GETDATA_QUEUE_ENTRIES_MAX {
            return false;
        }
        self.entries.push_back(ServeRequest::SpentCoins(request));
        true
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn pop(&mut self) -> Option<ServeRequest> {
        self.entries.pop_front()
    }

    /// Drops every request (a peer being disconnected is served nothing
    /// more, as Core serves nothing once `fDisconnect` is set).
    fn clear(&mut self) {
        self.entries.clear();
    }

    /// Puts back a request that could not be sent, first in line.
    fn put_back(&mut self, entry: ServeRequest) {
        self.entries.push_front(entry);
    }
}

/// Answers what a `getdata` cannot queue with one `notfound`.
pub fn send_not_found(network: &NetworkHandle, peer: PeerId, not_found: Vec<Inventory>) {
    if !not_found.is_empty() {
        let _ = network.send(peer, NetworkMessage::NotFound(not_found));
    }
}

/// What serving a peer's queue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Nothing waited, or its send queue was full.
    Nothing,
    /// A block request was answered (the caller's loop has more work).
    Request,
    /// It asked for a block below what a `NODE_NETWORK_LIMITED` node
    /// serves, having been told that is all we serve: its queue is
    /// emptied, the caller disconnects it.
    BelowLimitedThreshold,
}

/// Serves the oldest request `queue` holds for `peer`, when its send queue
/// is below its limit (Core's `ProcessGetData`: one block per call, none
/// while `fPauseSend`); the send queue is looked at before any lookup or
/// read. `limited`: we announced only `NODE_NETWORK_LIMITED` to the peer
/// and it lacks `noban` ([`block_for`]).
pub fn serve_next(
    network: &NetworkHandle,
    reader: &ChainReader,
    peer: PeerId,
    queue: &mut GetDataQueue,
    spacing_seconds: i64,
    limited: bool,
) -> Served {
    if queue.is_empty() || network.send_queue_full(peer) {
        return Served::Nothing;
    }
    let entry = match queue.pop() {
        None => return Served::Nothing,
        Some(ServeRequest::Data(entry)) => entry,
        Some(ServeRequest::SpentCoins(request)) => {
            return serve_spent_coins(
                network,
                reader,
                peer,
                queue,
                request,
                spacing_seconds,
                limited,
            )
        }
    };
    let bytes = match block_for(reader, BlockHash(entry.hash.0), spacing_seconds, limited) {
        BlockAnswer::Block(bytes) => Some(bytes),
        BlockAnswer::NotServed => None,
        BlockAnswer::Pruned => return Served::Request,
        BlockAnswer::BelowLimitedThreshold => {
            queue.clear();
            return Served::BelowLimitedThreshold;
        }
    };
    let payload = bytes.and_then(|bytes| match entry.inventory_type {
        InventoryType::BLOCK => without_witness(bytes),
        _ => Some(bytes),
    });
    match payload {
        // A queue below its limit takes one more message, so this is not
        // refused; were it, the request waits again rather than be lost. A
        // peer gone meanwhile is no error of ours.
        Some(payload) => {
            if let Err(NetworkError::SendQueueFull { .. }) =
                network.send(peer, NetworkMessage::Block(payload))
            {
                queue.put_back(ServeRequest::Data(entry));
            }
        }
        None => send_not_found(network, peer, vec![entry]),
    }
    Served::Request
}

/// Serves a `getbspent` ([`spent_coins_for`]), as [`serve_next`] serves a
/// block.
fn serve_spent_coins(
    network: &NetworkHandle,
    reader: &ChainReader,
    peer: PeerId,
    queue: &mut GetDataQueue,
    request: GetSpentCoins,
    spacing_seconds: i64,
    limited: bool,
) -> Served {
    match spent_coins_for(reader, request, spacing_seconds, limited) {
        SpentCoinsAnswer::Coins(answer) => {
            // An answer over the message limit fails to encode and is not
            // sent; one refused by a full queue waits again.
            if let Err(NetworkError::SendQueueFull { .. }) =
                network.send(peer, NetworkMessage::SpentCoins(answer))
            {
                queue.put_back(ServeRequest::SpentCoins(request));
            }
            Served::Request
        }
        SpentCoinsAnswer::NotServed => Served::Request,
        SpentCoinsAnswer::BelowLimitedThreshold => {
            queue.clear();
            Served::BelowLimitedThreshold
        }
    }
}

/// The block `bytes` without witness data (Core's `TX_NO_WITNESS`), as they
/// are when they hold none; `None` when they do not parse (a damaged file:
/// nothing is sent).
fn without_witness(bytes: Vec<u8>) -> Option<Vec<u8>> {
    let view = BlockView::parse(&bytes).ok()?;
    if !view.has_witness() {
        return Some(bytes);
    }
    let mut out = Vec::with_capacity(view.stripped_size());
    out.extend_from_slice(&bytes[..ibex_primitives::HEADER_BYTES]);
    write_compact_size(&mut out, view.transaction_count() as u64);
    for transaction in view.transactions() {
        transaction.to_owned().encode_to(&mut out, false);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::Hash256;

    fn entry(kind: InventoryType, byte: u8) -> Inventory {
        Inventory { inventory_type: kind, hash: Hash256([byte; 32]) }
    }

    #[test]
    fn a_getdata_queues_blocks_within_its_bounds() {
        let mut queue = GetDataQueue::default();
        let mut inventory = vec![entry(InventoryType::TRANSACTION, 1)];
        inventory.push(entry(InventoryType::FILTERED_BLOCK, 2));
        inventory.extend((0..200).map(|_| entry(InventoryType::WITNESS_BLOCK, 3)));
        let not_found = queue.push(inventory);
        assert_eq!(queue.len(), GETDATA_BLOCKS_PER_MESSAGE_MAX);
        assert_eq!(not_found.len(), 1 + 200 - GETDATA_BLOCKS_PER_MESSAGE_MAX);
        assert_eq!(not_found[0].inventory_type, InventoryType::TRANSACTION);
        for _ in 0..20 {
            queue.push((0..128).map(|_| entry(InventoryType::BLOCK, 4)).collect());
        }
        assert_eq!(queue.len(), GETDATA_QUEUE_ENTRIES_MAX);
        assert_eq!(queue.push(vec![entry(InventoryType::BLOCK, 5)]).len(), 1);
        let request = GetSpentCoins { block_hash: BlockHash([6; 32]), cutoff_height: 0 };
        assert!(!queue.push_spent_coins(request), "a full queue takes no getbspent");
        let mut queue = GetDataQueue::default();
        assert!(queue.push_spent_coins(request));
        queue.push(vec![entry(InventoryType::BLOCK, 7)]);
        assert_eq!(queue.pop(), Some(ServeRequest::SpentCoins(request)), "served in order");
        assert_eq!(queue.len(), 1);
    }
}
