//! The chain facts a [`super::NodeBackend`] hands the server.

use ibex_primitives::{Amount, BlockHash, ChainWork, Header, Height, SpentCoinBuf};

use crate::context::BlockContext;

/// A block in the active chain, named by hash and height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TipRef {
    /// The block's hash.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
}

/// Whether a known block's data is stored (Core's `BLOCK_HAVE_DATA`,
/// `BLOCK_HAVE_UNDO` and `IsBlockPruned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockData {
    /// The block is stored; `have_undo` once it was connected and its undo
    /// data written.
    Stored {
        /// Whether the undo data is stored too.
        have_undo: bool,
    },
    /// Only the header is known.
    NotDownloaded,
    /// The block was stored and then pruned.
    Pruned,
}

/// A block index entry, with its place relative to the active chain read at
/// the same instant (what Core's `blockheaderToJSON` reads under
/// `cs_main`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockEntry {
    /// The block's hash.
    pub hash: BlockHash,
    /// Its header.
    pub header: Header,
    /// Its height.
    pub height: u32,
    /// Total work of the chain up to and including it.
    pub chain_work: ChainWork,
    /// Median time past of it and its ten ancestors, seconds since the epoch.
    pub median_time_past: i64,
    /// Transactions in the block (`nTx`; 0 while only the header is known).
    pub transaction_count: u64,
    /// Whether its data is stored.
    pub data: BlockData,
    /// Whether it is in the active chain.
    pub in_active_chain: bool,
    /// Its successor in the active chain, if any.
    pub next_block_hash: Option<BlockHash>,
    /// The active tip's height when this entry was read.
    pub tip_height: u32,
}

impl BlockEntry {
    /// Core's `confirmations`: tip height - height + 1 in the active chain,
    /// -1 outside it (`ComputeNextBlockAndDepth`).
    pub fn confirmations(&self) -> i64 {
        if self.in_active_chain {
            i64::from(self.tip_height) - i64::from(self.height) + 1
        } else {
            -1
        }
    }

    /// What the block JSON writers are told about this block.
    pub fn context(&self) -> BlockContext {
        BlockContext {
            height: self.height,
            confirmations: self.confirmations(),
            median_time_seconds: self.median_time_past,
            chain_work: self.chain_work,
            next_block_hash: if self.in_active_chain { self.next_block_hash } else { None },
            transaction_count: self.transaction_count,
        }
    }
}

/// A stored block as [`super::NodeBackend::block`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBlock {
    /// Its index entry.
    pub entry: BlockEntry,
    /// The serialised block, witness included.
    pub bytes: Vec<u8>,
    /// One coin per input of every transaction after the coinbase, in block
    /// order, when asked for and the undo data is stored.
    pub spent_coins: Option<Vec<SpentCoinBuf>>,
}

/// Pruning as `getblockchaininfo` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneInfo {
    /// Height of the last pruned block plus one (0 when none is pruned).
    pub prune_height: u32,
    /// `-prune`'s target in bytes when pruning is automatic.
    pub automatic_target_bytes: Option<u64>,
}

/// Pruning as the node runs it (`-prune`), fixed at start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneSettings {
    /// `-prune`'s target in bytes when pruning is automatic (`None`:
    /// `-prune=1`, only when the operator asks).
    pub automatic_target_bytes: Option<u64>,
    /// The height the active chain must reach before `pruneblockchain`
    /// prunes (Core's `nPruneAfterHeight`, lowered by `-fastprune` on
    /// regtest).
    pub prune_after_height: u32,
}

/// What `getblockchaininfo` reports beyond the tip's entry.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockchainInfo {
    /// The active tip's index entry.
    pub tip: BlockEntry,
    /// Height of the most-work valid header (`None`: no header, -1).
    pub best_header_height: Option<u32>,
    /// Estimated fraction of the chain's transactions verified, 0..=1.
    pub verification_progress: f64,
    /// Whether the node is in initial block download.
    pub initial_block_download: bool,
    /// Bytes of block and undo files on disk.
    pub size_on_disk_bytes: u64,
    /// Pruning, when `-prune` is on.
    pub prune: Option<PruneInfo>,
    /// The signet challenge script, on signet.
    pub signet_challenge: Option<Vec<u8>>,
    /// Warnings for the operator.
    pub warnings: Vec<String>,
}

/// A chain tip's standing (Core's `getchaintips` status words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainTipStatus {
    /// The active chain's tip.
    Active,
    /// Fully validated, not in the active chain.
    ValidFork,
    /// Headers valid, block data not all checked.
    ValidHeaders,
    /// Only headers known.
    HeadersOnly,
    /// Invalid.
    Invalid,
    /// None of the above.
    Unknown,
}

impl ChainTipStatus {
    /// Core's word for it.
    pub const fn name(self) -> &'static str {
        match self {
            ChainTipStatus::Active => "active",
            ChainTipStatus::ValidFork => "valid-fork",
            ChainTipStatus::ValidHeaders => "valid-headers",
            ChainTipStatus::HeadersOnly => "headers-only",
            ChainTipStatus::Invalid => "invalid",
            ChainTipStatus::Unknown => "unknown",
        }
    }
}

/// One tip of the block tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainTip {
    /// Its height.
    pub height: u32,
    /// Its hash.
    pub hash: BlockHash,
    /// Blocks between it and the active chain (0 for the active tip).
    pub branch_length: u32,
    /// Its standing.
    pub status: ChainTipStatus,
}

/// An unspent output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnspentOutput {
    /// Its value.
    pub value: Amount,
    /// Its script.
    pub script_pubkey: Vec<u8>,
    /// Height of the block that created it; `None` for an output of a
    /// transaction in the mempool, not in a block yet (Core answers 0
    /// confirmations for it, and BIP64's `MEMPOOL_HEIGHT`).
    pub height: Option<Height>,
    /// Whether a coinbase created it.
    pub is_coinbase: bool,
}

/// Coins looked up together at one tip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoinsAnswer {
    /// The tip the coins were read at (the coins view's best block).
    pub tip: TipRef,
    /// One answer per outpoint asked, in order.
    pub coins: Vec<Option<UnspentOutput>>,
}
