//! Who sent each block (Core's `mapBlockSource`), so that a block found
//! invalid, when accepted or much later when connected, costs its sender
//! what Core's `MaybePunishNodeForBlock` makes it cost.
//!
//! Memory: at most [`BLOCK_SOURCES_MAX`] entries of a hash and a peer id
//! (~60 bytes with the map's overhead and the order queue): ~250 KB. The
//! oldest entries go first; by then their blocks were connected long ago
//! (the download window is a quarter of that).

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

use ibex_chainstate::BlockRejection;
use ibex_consensus::BlockFailureKind;
use ibex_p2p::sync::block_download::BLOCK_DOWNLOAD_WINDOW_BLOCKS;
use ibex_p2p::sync::{Misbehavior, PeerId};
use ibex_primitives::BlockHash;

use super::SyncLoop;
use crate::p2p_node::invalid_blocks::InvalidBlockReceiver;

/// Blocks whose sender is remembered, at most: four download windows.
pub const BLOCK_SOURCES_MAX: usize = 4 * BLOCK_DOWNLOAD_WINDOW_BLOCKS as usize;

/// The senders of the blocks offered to the engine, and the feed of the
/// blocks it marks invalid.
#[derive(Debug, Default)]
pub struct BlockSources {
    senders: HashMap<BlockHash, PeerId>,
    /// Insertion order, to forget the oldest first.
    order: VecDeque<BlockHash>,
    feed: Option<InvalidBlockReceiver>,
}

impl BlockSources {
    /// Blocks the engine marks invalid come from `feed` from now on.
    pub fn attach_feed(&mut self, feed: InvalidBlockReceiver) {
        self.feed = Some(feed);
    }

    /// `peer` sent `hash`, which goes to the engine.
    pub fn record(&mut self, hash: BlockHash, peer: PeerId) {
        if self.senders.insert(hash, peer).is_some() {
            return;
        }
        self.order.push_back(hash);
        while self.order.len() > BLOCK_SOURCES_MAX {
            if let Some(oldest) = self.order.pop_front() {
                self.senders.remove(&oldest);
            }
        }
    }

    /// The sender of `hash`, forgotten (Core erases the entry once the block
    /// is checked). The order queue keeps the hash until it comes round.
    pub fn take(&mut self, hash: &BlockHash) -> Option<PeerId> {
        self.senders.remove(hash)
    }

    fn drain_invalid(&self) -> Vec<BlockHash> {
        self.feed.as_ref().map(InvalidBlockReceiver::drain).unwrap_or_default()
    }
}

/// What Core's `MaybePunishNodeForBlock` does to a peer (inbound, or
/// manual: `ibexd` has no other kind) for a block rejected so: `None` for a
/// header time in the future (`BLOCK_TIME_FUTURE`) and for a block already
/// known invalid (`BLOCK_CACHED_INVALID`, punished only on automatic
/// outbound connections); "mutated block" for transactions that do not
/// match the header (`BLOCK_MUTATED`, Core's message from its `block`
/// handler); a message-less `Misbehaving` for the rest.
pub fn punishment(hash: BlockHash, rejection: &BlockRejection) -> Option<Misbehavior> {
    match rejection {
        BlockRejection::DuplicateInvalid => None,
        BlockRejection::Block(error) => match error.kind() {
            BlockFailureKind::TimeFuture => None,
            BlockFailureKind::Mutated => Some(Misbehavior::MutatedBlock { hash }),
            BlockFailureKind::InvalidHeader | BlockFailureKind::Consensus => {
                Some(Misbehavior::InvalidBlock { hash })
            }
        },
        _ => Some(Misbehavior::InvalidBlock { hash }),
    }
}

impl SyncLoop {
    /// Punishes the senders of the blocks the engine marked invalid since
    /// the last call (those found invalid when connected are only known
    /// this way).
    pub(super) fn punish_senders_of_invalid_blocks(&mut self) {
        for hash in self.block_sources.drain_invalid() {
            if let Some(peer) = self.block_sources.take(&hash) {
                self.misbehaving(peer, Misbehavior::InvalidBlock { hash });
            }
        }
    }

    /// The engine refused `hash` when it was offered: its sender (if still
    /// remembered: the feed may have been first) is punished as Core
    /// would, and a block the engine did not store is asked for again.
    pub(super) fn on_block_rejected(&mut self, hash: BlockHash, rejection: &BlockRejection) {
        if !matches!(rejection, BlockRejection::DuplicateInvalid) {
            self.download.forget_block(&hash, Instant::now());
            self.download_due = true;
        }
        let Some(peer) = self.block_sources.take(&hash) else { return };
        if let Some(reason) = punishment(hash, rejection) {
            self.misbehaving(peer, reason);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_consensus::BlockError;

    #[test]
    fn the_oldest_senders_are_forgotten_first() {
        let mut sources = BlockSources::default();
        let hash = |index: usize| {
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&(index as u64).to_le_bytes());
            BlockHash(bytes)
        };
        for index in 0..BLOCK_SOURCES_MAX + 10 {
            sources.record(hash(index), PeerId(index as u64 % 3));
        }
        assert_eq!(sources.senders.len(), BLOCK_SOURCES_MAX);
        assert_eq!(sources.take(&hash(0)), None);
        let newest = BLOCK_SOURCES_MAX + 9;
        assert_eq!(sources.take(&hash(newest)), Some(PeerId(newest as u64 % 3)));
        assert_eq!(sources.take(&hash(newest)), None, "taken once");
    }

    #[test]
    fn punishments_follow_core() {
        let hash = BlockHash([5; 32]);
        assert_eq!(punishment(hash, &BlockRejection::DuplicateInvalid), None);
        let future = BlockRejection::Block(BlockError::TimeTooNew { time: 0, limit: 0 });
        assert_eq!(punishment(hash, &future), None);
        let mutated = BlockRejection::Block(BlockError::BadMerkleRoot);
        assert_eq!(punishment(hash, &mutated), Some(Misbehavior::MutatedBlock { hash }));
        let amount = BlockRejection::InvalidParent;
        assert_eq!(punishment(hash, &amount), Some(Misbehavior::InvalidBlock { hash }));
        let header = BlockRejection::Block(BlockError::HighHash);
        assert_eq!(punishment(hash, &header), Some(Misbehavior::InvalidBlock { hash }));
    }
}
