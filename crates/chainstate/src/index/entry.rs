//! One block in the index: its header, place in the tree, validity and
//! where its data and undo data are stored.

use ibex_blockstore::BlockPosition;
use ibex_primitives::{BlockHash, ChainWork, Header};

/// A block's position in [`super::BlockIndex`]'s arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryId(pub(crate) u32);

impl EntryId {
    /// The arena slot.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Validity and storage flags, with Bitcoin Core's `BlockStatus` values so
/// the meaning of each bit can be checked against `chain.h`. The bits are
/// private: they change only through the named methods below, and are
/// stored as [`BlockStatus::bits`] (read back with [`BlockStatus::from_bits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockStatus(u32);

impl BlockStatus {
    /// Header parsed, proof of work and parent known (`BLOCK_VALID_TREE`).
    pub const VALID_TREE: u32 = 2;
    /// Context-free and contextual block checks passed (`BLOCK_VALID_TRANSACTIONS`).
    pub const VALID_TRANSACTIONS: u32 = 3;
    /// Connected once: every rule including scripts passed (`BLOCK_VALID_SCRIPTS`).
    pub const VALID_SCRIPTS: u32 = 5;
    /// The validity level bits (`BLOCK_VALID_MASK`).
    pub const VALID_MASK: u32 = 7;
    /// The full block is in a `blk` file (`BLOCK_HAVE_DATA`).
    pub const HAVE_DATA: u32 = 8;
    /// Its undo data is in a `rev` file (`BLOCK_HAVE_UNDO`).
    pub const HAVE_UNDO: u32 = 16;
    /// The block itself broke a rule (`BLOCK_FAILED_VALID`).
    pub const FAILED_VALID: u32 = 32;
    /// An ancestor broke a rule (`BLOCK_FAILED_CHILD`).
    pub const FAILED_CHILD: u32 = 64;
    /// Any failure.
    pub const FAILED_MASK: u32 = Self::FAILED_VALID | Self::FAILED_CHILD;

    /// The status of a header just linked into the tree: [`Self::VALID_TREE`],
    /// and failed-child when its parent failed (Core's `AddToBlockIndex`
    /// inherits the failure).
    pub fn new_header(parent: Option<BlockStatus>) -> BlockStatus {
        let mut status = BlockStatus(Self::VALID_TREE);
        if parent.is_some_and(BlockStatus::is_failed) {
            status.mark_failed_child();
        }
        status
    }

    /// The status stored as `bits` (Core's values; see [`Self::bits`]).
    pub fn from_bits(bits: u32) -> BlockStatus {
        BlockStatus(bits)
    }

    /// The bits as stored in the block index database.
    pub fn bits(self) -> u32 {
        self.0
    }

    /// The validity level (0 to 5).
    pub fn validity(self) -> u32 {
        self.0 & Self::VALID_MASK
    }

    /// Whether the block reached `level` and has not failed (Core's `IsValid`).
    pub fn is_valid(self, level: u32) -> bool {
        self.0 & Self::FAILED_MASK == 0 && self.validity() >= level
    }

    /// Whether the block or an ancestor failed.
    pub fn is_failed(self) -> bool {
        self.0 & Self::FAILED_MASK != 0
    }

    /// Whether `flag` is set.
    pub fn has(self, flag: u32) -> bool {
        self.0 & flag != 0
    }

    /// Records that the full block is in a `blk` file ([`Self::HAVE_DATA`]).
    pub fn set_have_data(&mut self) {
        self.0 |= Self::HAVE_DATA;
    }

    /// Records that the block's undo data is in a `rev` file ([`Self::HAVE_UNDO`]).
    pub fn set_have_undo(&mut self) {
        self.0 |= Self::HAVE_UNDO;
    }

    /// Forgets that the block and its undo data are stored (Core's
    /// `PruneOneBlockFile`): validity and failure marks stay.
    pub fn clear_stored_data(&mut self) {
        self.0 &= !(Self::HAVE_DATA | Self::HAVE_UNDO);
    }

    /// Marks the block itself as having broken a rule ([`Self::FAILED_VALID`]).
    pub fn mark_failed_valid(&mut self) {
        self.0 |= Self::FAILED_VALID;
    }

    /// Marks the block as descending from one that broke a rule
    /// ([`Self::FAILED_CHILD`]).
    pub fn mark_failed_child(&mut self) {
        self.0 |= Self::FAILED_CHILD;
    }

    /// Clears both failure marks (Core's `ResetBlockFailureFlags`, which
    /// `reconsiderblock` runs); the validity level and storage flags stay.
    pub fn clear_failure(&mut self) {
        self.0 &= !Self::FAILED_MASK;
    }

    /// Raises the validity level to `level` (never lowers it); false if failed.
    pub fn raise_validity(&mut self, level: u32) -> bool {
        if self.is_failed() {
            return false;
        }
        if self.validity() < level {
            self.0 = (self.0 & !Self::VALID_MASK) | level;
            return true;
        }
        false
    }
}

/// One block of the header tree.
#[derive(Debug, Clone)]
pub struct BlockIndexEntry {
    /// The block's hash.
    pub hash: BlockHash,
    /// Its header.
    pub header: Header,
    /// Height above genesis.
    pub height: u32,
    /// Total work of the chain ending here.
    pub chain_work: ChainWork,
    /// The parent (`None` for genesis).
    pub parent: Option<EntryId>,
    /// Validity and storage.
    pub status: BlockStatus,
    /// Transactions in the block (0 until its data is known).
    pub transaction_count: u32,
    /// Transactions in the chain up to and including this block, when every
    /// ancestor's data is known (Core's `m_chain_tx_count`); 0 otherwise.
    pub chain_transaction_count: u64,
    /// Where the block is stored.
    pub block_position: Option<BlockPosition>,
    /// Where its undo data is stored.
    pub undo_position: Option<BlockPosition>,
    /// Order in which the block's data was met (Core's `nSequenceId`): on
    /// equal work the chain whose tip was met first wins.
    pub sequence: u64,
}

impl BlockIndexEntry {
    /// Whether the block and all its ancestors have their data (Core's `HaveNumChainTxs`).
    pub fn has_chain_data(&self) -> bool {
        self.chain_transaction_count != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_cores_values() {
        // chain.h: BLOCK_VALID_TREE 2, BLOCK_VALID_TRANSACTIONS 3,
        // BLOCK_VALID_SCRIPTS 5, BLOCK_HAVE_DATA 8, BLOCK_HAVE_UNDO 16,
        // BLOCK_FAILED_VALID 32, BLOCK_FAILED_CHILD 64.
        let mut status = BlockStatus::new_header(None);
        assert_eq!(status.bits(), 2);
        status.set_have_data();
        assert_eq!(status.bits(), 2 | 8);
        status.set_have_undo();
        assert_eq!(status.bits(), 2 | 8 | 16);
        assert!(status.raise_validity(BlockStatus::VALID_SCRIPTS));
        assert_eq!(status.bits(), 5 | 8 | 16);
        status.mark_failed_valid();
        assert_eq!(status.bits(), 5 | 8 | 16 | 32);
        status.mark_failed_child();
        assert_eq!(status.bits(), 5 | 8 | 16 | 32 | 64);
        assert_eq!(BlockStatus::from_bits(status.bits()), status);
    }

    #[test]
    fn storage_flags_leave_validity_alone() {
        let mut status = BlockStatus::new_header(None);
        assert!(status.raise_validity(BlockStatus::VALID_TRANSACTIONS));
        status.set_have_data();
        status.set_have_data();
        status.set_have_undo();
        assert_eq!(status.validity(), BlockStatus::VALID_TRANSACTIONS);
        assert!(status.has(BlockStatus::HAVE_DATA) && status.has(BlockStatus::HAVE_UNDO));
        assert!(status.is_valid(BlockStatus::VALID_TRANSACTIONS));
        assert!(!status.is_failed());
    }

    #[test]
    fn failures_stop_validity_and_are_inherited_by_new_headers() {
        let mut failed = BlockStatus::new_header(None);
        failed.set_have_data();
        failed.mark_failed_valid();
        assert!(failed.is_failed());
        assert!(failed.has(BlockStatus::FAILED_VALID) && !failed.has(BlockStatus::FAILED_CHILD));
        assert!(!failed.is_valid(BlockStatus::VALID_TREE));
        assert!(!failed.raise_validity(BlockStatus::VALID_SCRIPTS));
        assert_eq!(failed.validity(), BlockStatus::VALID_TREE);
        assert!(failed.has(BlockStatus::HAVE_DATA), "a failure keeps the storage flags");

        let child = BlockStatus::new_header(Some(failed));
        assert_eq!(child.bits(), BlockStatus::VALID_TREE | BlockStatus::FAILED_CHILD);
        let grandchild = BlockStatus::new_header(Some(child));
        assert!(grandchild.has(BlockStatus::FAILED_CHILD));
        assert!(!grandchild.has(BlockStatus::FAILED_VALID));

        let mut marked = BlockStatus::new_header(None);
        marked.mark_failed_child();
        assert!(marked.is_failed() && !marked.has(BlockStatus::FAILED_VALID));

        let mut cleared = failed;
        cleared.mark_failed_child();
        cleared.clear_failure();
        assert!(!cleared.is_failed());
        assert_eq!(cleared.bits(), BlockStatus::VALID_TREE | BlockStatus::HAVE_DATA);

        let healthy = BlockStatus::new_header(Some(BlockStatus::new_header(None)));
        assert_eq!(healthy.bits(), BlockStatus::VALID_TREE);
        assert!(healthy.is_valid(BlockStatus::VALID_TREE));
    }
}
