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
/// the meaning of each bit can be checked against `chain.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockStatus(pub u32);

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
