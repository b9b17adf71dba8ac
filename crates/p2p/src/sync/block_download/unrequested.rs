//! Blocks outside the schedule: one that arrived unrequested and that the
//! node keeps (Core processes an unrequested block that would extend its
//! best chain), and one the engine did not store although it was
//! downloaded (a mutated copy, a block from the future), which must be
//! asked for again.

use std::time::Instant;

use ibex_primitives::BlockHash;

use super::{BlockDownload, Received, Role};
use crate::sync::action::PeerId;

impl BlockDownload {
    /// Whether `hash` is in flight from `peer` (Core's `IsBlockRequested`
    /// for that peer): its `block` message is then offered by
    /// [`BlockDownload::on_block`].
    pub fn is_requested_from(&self, peer: PeerId, hash: &BlockHash) -> bool {
        self.in_flight.get(hash).is_some_and(|entry| entry.peer == peer)
    }

    /// An unrequested block of `bytes` bytes at `height` that the node
    /// means to offer to the engine: counted against the byte bound as a
    /// received block until the tip reaches it or it leaves the best chain.
    /// `false` (do not offer it) when it is tracked already (in flight or
    /// received: that copy serves) or when it does not fit the byte bound
    /// with one block's estimate left free for the block after the tip.
    pub fn take_unrequested(&mut self, hash: BlockHash, height: u32, bytes: u64) -> bool {
        let tracked = self.in_flight.contains_key(&hash) || self.received.contains_key(&hash);
        if tracked || height <= self.tip_height {
            return false;
        }
        let held_after = self
            .bytes_held()
            .saturating_add(bytes)
            .saturating_add(self.config.block_bytes_estimate);
        if held_after > self.config.download_bytes_max {
            return false;
        }
        self.count_received(hash, Received { height, bytes, role: Role::Active });
        true
    }

    /// The engine did not store `hash` although it was delivered (a mutated
    /// copy, a header time too far ahead): its request and its received
    /// bytes are dropped, so the next poll asks a peer for it again (Core's
    /// `RemoveBlockRequest` for a mutated block).
    pub fn forget_block(&mut self, hash: &BlockHash, now: Instant) {
        self.remove_request(hash, now);
        self.forget_received(hash);
    }
}
