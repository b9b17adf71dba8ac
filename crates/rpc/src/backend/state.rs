//! The chainstate-wide answers a [`super::NodeBackend`] gives:
//! `gettxoutsetinfo`'s statistics and the coins caches' sizes.

use ibex_primitives::txoutset::TxOutSetStats;
use ibex_primitives::BlockHash;

/// `gettxoutsetinfo` at a block: the UTXO set's statistics and hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxOutSetInfo {
    /// Height of the block the coins are at.
    pub height: u32,
    /// That block.
    pub best_block: BlockHash,
    /// The statistics and the hash asked for.
    pub stats: TxOutSetStats,
    /// The coins database's estimated size on disk, in bytes.
    pub disk_size_bytes: u64,
}

/// How `-dbcache` is split for the coins (Core's `CacheSizes`), as
/// `getchainstates` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoinsCacheSizes {
    /// The coins database's own cache, in bytes.
    pub coins_database_bytes: u64,
    /// The in-memory coins cache, in bytes.
    pub coins_tip_bytes: u64,
}

/// A UTXO set whose total amount overflowed `i64` (Core treats it as a
/// bug: `CHECK_NONFATAL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the UTXO set's total amount overflows")]
pub struct TotalAmountOverflow;

/// `dumptxoutset`'s answer: what was written where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpedTxOutSet {
    /// Coins written.
    pub coins_written: u64,
    /// The block the snapshot's coins are at.
    pub base_hash: BlockHash,
    /// Its height.
    pub base_height: u32,
    /// The absolute path written.
    pub path: String,
    /// `hash_serialized_3` of the coins written.
    pub txoutset_hash: ibex_primitives::Hash256,
    /// Transactions in the chain up to and including the base block.
    pub chain_transaction_count: u64,
}

/// `dumphints`' answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpedHints {
    /// The absolute path written.
    pub path: String,
    /// The terminal height: the last block the file covers.
    pub height: u32,
    /// The block at that height.
    pub hash: BlockHash,
    /// The file's version byte.
    pub version: u8,
    /// Outputs the file numbers (every spendable one up to the height).
    pub outputs: u64,
    /// Of them, those unspent at the height.
    pub unspent: u64,
    /// The file's size.
    pub bytes: u64,
    /// SHA-256 of the file, as a network's parameters commit to it.
    pub sha256: [u8; 32],
}

/// `loadtxoutset`'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedTxOutSet {
    /// Coins loaded.
    pub coins_loaded: u64,
    /// The snapshot's base block.
    pub tip_hash: BlockHash,
    /// Its height.
    pub base_height: u32,
    /// The absolute path loaded.
    pub path: String,
}

/// A chainstate's tip as `getchainstates` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainstateInfo {
    /// The tip's index entry.
    pub tip: super::BlockEntry,
    /// Its estimated verification progress, 0..=1 (towards the base for
    /// the background chainstate, as Core's
    /// `GetBackgroundVerificationProgress`).
    pub verification_progress: f64,
    /// Its share of `-dbcache`.
    pub cache: CoinsCacheSizes,
}

/// AssumeUTXO's chainstates: the active one loaded from a snapshot, and
/// the background one validating towards its base until it proves it.
#[derive(Debug, Clone, PartialEq)]
pub struct AssumeUtxoChainstates {
    /// The snapshot's base block.
    pub snapshot_base: BlockHash,
    /// Its height.
    pub snapshot_height: u32,
    /// Whether the background chainstate proved the snapshot.
    pub validated: bool,
    /// The active (snapshot) chainstate.
    pub active: ChainstateInfo,
    /// The background chainstate, until the snapshot is proved.
    pub background: Option<ChainstateInfo>,
}
