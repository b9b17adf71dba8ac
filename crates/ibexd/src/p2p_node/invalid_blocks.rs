//! Blocks the engine found invalid, from its observer (on the engine's
//! thread) to the sync loop, which maps each back to the peer that sent it
//! (Core's `BlockChecked` signal, which `PeerManager` answers with
//! `MaybePunishNodeForBlock`). A block that fails when it is connected,
//! long after it was offered, is only known through this feed.
//!
//! The channel is bounded: when the sync loop falls behind by
//! [`INVALID_BLOCK_NOTICES_MAX`] blocks, later ones are dropped (their
//! senders go unpunished; the blocks stay invalid).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use ibex_primitives::BlockHash;

/// Invalid blocks waiting for the sync loop, at most.
pub const INVALID_BLOCK_NOTICES_MAX: usize = 1024;

/// The observer's end.
#[derive(Debug, Clone)]
pub struct InvalidBlockSender(SyncSender<BlockHash>);

/// The sync loop's end.
#[derive(Debug)]
pub struct InvalidBlockReceiver(Receiver<BlockHash>);

/// A new feed.
pub fn invalid_block_feed() -> (InvalidBlockSender, InvalidBlockReceiver) {
    let (sender, receiver) = sync_channel(INVALID_BLOCK_NOTICES_MAX);
    (InvalidBlockSender(sender), InvalidBlockReceiver(receiver))
}

impl InvalidBlockSender {
    /// `hash` was marked invalid; never waits (dropped when the feed is
    /// full or nobody listens).
    pub fn send(&self, hash: BlockHash) {
        let _ = self.0.try_send(hash);
    }
}

impl InvalidBlockReceiver {
    /// The blocks reported since the last call, oldest first.
    pub fn drain(&self) -> Vec<BlockHash> {
        self.0.try_iter().take(INVALID_BLOCK_NOTICES_MAX).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_feed_is_bounded_and_drains_in_order() {
        let (sender, receiver) = invalid_block_feed();
        for byte in 0..=u8::MAX {
            for round in 0..5u8 {
                let mut hash = [byte; 32];
                hash[0] = round;
                sender.send(BlockHash(hash));
            }
        }
        let drained = receiver.drain();
        assert_eq!(drained.len(), INVALID_BLOCK_NOTICES_MAX);
        assert_eq!(drained[0], BlockHash([0; 32]));
        assert!(receiver.drain().is_empty());
        sender.send(BlockHash([9; 32]));
        assert_eq!(receiver.drain(), vec![BlockHash([9; 32])]);
    }
}
