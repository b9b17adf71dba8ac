//! What the writers are told rather than find out: a block's place in the
//! chain (from the block index), the coins a transaction spends (from undo
//! data), the verbosity asked for.

use ibex_primitives::{BlockHash, ChainWork};

/// `getblock`'s verbosity above 0 (0 is the block's hex:
/// [`crate::write_block_hex_json`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockVerbosity {
    /// 1: the header fields, sizes and the txids.
    TransactionIds,
    /// 2: every transaction decoded, with its fee when spent coins are given.
    Transactions,
    /// 3: as 2, and each input's spent coin (`prevout`) when given.
    TransactionsWithPrevouts,
}

impl BlockVerbosity {
    /// Core's `getblock` verbosity number for this level.
    pub const fn number(self) -> u8 {
        match self {
            BlockVerbosity::TransactionIds => 1,
            BlockVerbosity::Transactions => 2,
            BlockVerbosity::TransactionsWithPrevouts => 3,
        }
    }
}

/// How much of each transaction to write (Core's `TxVerbosity` above
/// `SHOW_TXID`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionVerbosity {
    /// `SHOW_DETAILS`: the decoded transaction, its fee when spent coins
    /// are given (`getrawtransaction` verbosity 1 gives none).
    Details,
    /// `SHOW_DETAILS_AND_PREVOUT`: also each input's spent coin
    /// (`getrawtransaction` verbosity 2).
    DetailsWithPrevouts,
}

/// A block's place in the chain, from the caller's block index: the
/// header fields Core takes from `CBlockIndex` and the active chain rather
/// than from the block's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockContext {
    /// The block's height.
    pub height: u32,
    /// Tip height - height + 1 in the active chain, -1 outside it (Core's
    /// `ComputeNextBlockAndDepth`).
    pub confirmations: i64,
    /// Median time past of the block and its 10 ancestors, seconds since
    /// the Unix epoch.
    pub median_time_seconds: i64,
    /// Total work of the chain up to and including the block.
    pub chain_work: ChainWork,
    /// The next block in the active chain, if any.
    pub next_block_hash: Option<BlockHash>,
    /// The index's transaction count (`nTx`): `getblockheader` has no
    /// block to count, and `getblock` prints the index's number too.
    pub transaction_count: u64,
}

/// Where `getrawtransaction` found a confirmed transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransactionBlockContext {
    /// The block holding the transaction.
    pub block_hash: BlockHash,
    /// `in_active_chain`, which Core writes first, only when the request
    /// named the block.
    pub in_active_chain: Option<bool>,
    /// The block's standing in the caller's index.
    pub position: ChainPosition,
}

/// The standing of a transaction's block, for `getrawtransaction`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChainPosition {
    /// In the active chain: confirmations, and the block's time (written as
    /// both `time` and `blocktime`).
    Active {
        /// Tip height - block height + 1.
        confirmations: i64,
        /// The block header's time, seconds since the Unix epoch.
        block_time_seconds: i64,
    },
    /// Known but not in the active chain: `"confirmations":0`.
    NotActive,
    /// Not in the index: only the block hash is written.
    Unknown,
}
