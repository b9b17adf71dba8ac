//! Answering peers from our chain: `getheaders` with up to 2,000 headers
//! of the active chain after the locator's fork point, `getdata` for
//! blocks with the stored blocks (`notfound` for the rest).

use ibex_chainstate::ChainReader;
use ibex_p2p::net::error::NetworkError;
use ibex_p2p::net::NetworkHandle;
use ibex_p2p::sync::PeerId;
use ibex_p2p::{Inventory, LocatorRequest, NetworkMessage};
use ibex_primitives::BlockHash;

use super::engine_view::{blocks_for, headers_for, SERVED_BLOCKS_PER_REQUEST_MAX};

/// Blocks read from the engine in one query while serving.
const SERVE_READ_BATCH_BLOCKS: usize = 4;

/// Answers a `getheaders` from `peer`.
pub fn serve_headers(
    network: &NetworkHandle,
    reader: &ChainReader,
    peer: PeerId,
    request: LocatorRequest,
) {
    if let Some(headers) = headers_for(reader, request) {
        // A peer gone meanwhile is no error of ours.
        let _ = network.send(peer, NetworkMessage::Headers(headers));
    }
}

/// Answers a `getdata` from `peer`: blocks we hold, in the order asked,
/// then one `notfound` for the blocks we do not have. Other inventory
/// (transactions: Ibex has no mempool) is `notfound` too. Returns the
/// block requests left when the peer's send queue filled (Core, too,
/// stops serving until it drains): the caller retries them later.
pub fn serve_data(
    network: &NetworkHandle,
    reader: &ChainReader,
    peer: PeerId,
    inventory: Vec<Inventory>,
) -> Vec<Inventory> {
    let mut not_found = Vec::new();
    let mut blocks = Vec::new();
    for entry in inventory {
        let wanted =
            entry.inventory_type.is_block_request() && blocks.len() < SERVED_BLOCKS_PER_REQUEST_MAX;
        if wanted {
            blocks.push(entry);
        } else {
            not_found.push(entry);
        }
    }
    let mut left = Vec::new();
    let mut queue_full = false;
    // Read a few blocks at a time: a send queue that fills wastes at most
    // one batch of reads.
    for batch in blocks.chunks(SERVE_READ_BATCH_BLOCKS) {
        if queue_full {
            left.extend_from_slice(batch);
            continue;
        }
        let hashes = batch.iter().map(|entry| BlockHash(entry.hash.0)).collect();
        let found = blocks_for(reader, hashes);
        for (entry, bytes) in batch.iter().zip(found) {
            if queue_full {
                left.push(*entry);
                continue;
            }
            match bytes {
                Some(bytes) => match network.send(peer, NetworkMessage::Block(bytes)) {
                    Ok(()) => {}
                    Err(NetworkError::SendQueueFull { .. }) => {
                        queue_full = true;
                        left.push(*entry);
                    }
                    // The peer left: nothing more to send it.
                    Err(_) => return Vec::new(),
                },
                None => not_found.push(*entry),
            }
        }
    }
    if !not_found.is_empty() {
        let _ = network.send(peer, NetworkMessage::NotFound(not_found));
    }
    left
}
