//! What the pass hands its workers.

use ibex_blockstore::BlockPosition;
use ibex_primitives::BlockHash;

use super::claimed::ClaimedSpentCoins;
use crate::block_source::BlockSource;
use crate::index::EntryId;
use crate::prepared::PreparedBlock;

/// A stored block of the pass.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunBlock {
    /// Its index entry.
    pub(crate) id: EntryId,
    /// Its height.
    pub(crate) height: u32,
    /// Its hash.
    pub(crate) hash: BlockHash,
    /// Where it is stored.
    pub(crate) position: BlockPosition,
}

/// A block handed to the workers: parsed already (just accepted, and
/// checked then), or to read back from its file.
pub(super) struct PassJob {
    pub(super) block: RunBlock,
    pub(super) parsed: Option<PreparedBlock>,
    /// The coins claimed for its inputs (the fully validating mode), and
    /// who sent them.
    pub(super) spent: Option<(ClaimedSpentCoins, BlockSource)>,
    /// The stored blocks from the coins' cutoff to the block before it,
    /// newest first (`super::recent`; none without a cutoff).
    pub(super) recent: Vec<RunBlock>,
}
