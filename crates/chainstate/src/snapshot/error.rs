//! Why a UTXO snapshot could not be read or written. Every reason found in
//! the file names where: the byte offset, and the coins read before it.

use ibex_primitives::{BlockHash, OutPoint, Txid};

use crate::error::CoinDecodeError;

/// A snapshot file that is not a well-formed snapshot for this node, or an
/// I/O failure while reading or writing one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file could not be read or written.
    #[error("snapshot I/O: {source}")]
    Io {
        /// The failure.
        #[from]
        source: std::io::Error,
    },
    /// Fewer bytes than a header.
    #[error("snapshot header truncated: {length_bytes} bytes")]
    TruncatedHeader {
        /// Bytes there were.
        length_bytes: usize,
    },
    /// Not a snapshot, or one of an older format (Core's wording).
    #[error("Invalid UTXO set snapshot magic bytes. Please check if this is indeed a snapshot file or if you are using an outdated snapshot format.")]
    BadMagic,
    /// A version other than 2.
    #[error("Version of snapshot {version} does not match any of the supported versions.")]
    UnsupportedVersion {
        /// The version read.
        version: u16,
    },
    /// Made on another known network.
    #[error("The network of the snapshot ({snapshot}) does not match the network of this node ({node}).")]
    WrongNetwork {
        /// The snapshot's network.
        snapshot: &'static str,
        /// This node's.
        node: &'static str,
    },
    /// Made on a network no default parameters use.
    #[error("This snapshot has been created for an unrecognized network (message start {}). This could be a custom signet, a new testnet or possibly caused by data corruption.", ibex_primitives::hex::encode(message_start))]
    UnknownNetwork {
        /// The message start read.
        message_start: [u8; 4],
    },
    /// The header claims more coins than the file could hold.
    #[error("snapshot claims {coin_count} coins but holds {data_bytes} bytes after its header (at least {coin_bytes_min} a coin)")]
    CoinCountBeyondFile {
        /// Coins claimed.
        coin_count: u64,
        /// Bytes after the header.
        data_bytes: u64,
        /// Fewest bytes one coin takes.
        coin_bytes_min: u64,
    },
    /// The file ended inside a coin or a transaction's group.
    #[error("Bad snapshot format or truncated snapshot after deserializing {coins_read} coins (at byte {offset})")]
    Truncated {
        /// Where the unfinished field starts.
        offset: u64,
        /// Coins read before it.
        coins_read: u64,
    },
    /// A transaction's group claims more coins than the header has left.
    #[error("Mismatch in coins count in snapshot metadata and actual snapshot data: transaction {txid} at byte {offset} has {group_count} coins, {coins_left} left")]
    CoinCountMismatch {
        /// The group's transaction.
        txid: Txid,
        /// Where its count starts.
        offset: u64,
        /// The count read.
        group_count: u64,
        /// Coins the header has left.
        coins_left: u64,
    },
    /// A transaction's group with more coins than a transaction can have
    /// outputs.
    #[error("snapshot transaction {txid} at byte {offset} has {group_count} coins, more than a transaction can have")]
    GroupTooLarge {
        /// The group's transaction.
        txid: Txid,
        /// Where its count starts.
        offset: u64,
        /// The count read.
        group_count: u64,
    },
    /// A transaction's group with no coins: Core never writes one.
    #[error("snapshot transaction {txid} at byte {offset} has no coins")]
    EmptyGroup {
        /// The group's transaction.
        txid: Txid,
        /// Where its count starts.
        offset: u64,
    },
    /// A count or a coin that does not decode.
    #[error(
        "Bad snapshot data after deserializing {coins_read} coins: {source} (at byte {offset})"
    )]
    CorruptCoin {
        /// Where the field starts.
        offset: u64,
        /// Coins read before it.
        coins_read: u64,
        /// What is wrong with it.
        source: CoinDecodeError,
    },
    /// A coin that decodes but cannot be in a UTXO set at the base block.
    #[error("Bad snapshot data after deserializing {coins_read} coins: {outpoint} {reason} (at byte {offset})")]
    BadCoin {
        /// The coin's outpoint.
        outpoint: OutPoint,
        /// Where the coin's record starts.
        offset: u64,
        /// Coins read before it.
        coins_read: u64,
        /// Why it cannot be.
        reason: BadCoinReason,
    },
    /// Coins not in the database's key order, or one outpoint twice: Core
    /// writes them in its database's order, and Ibex loads them by sorted
    /// ingestion.
    #[error("snapshot coin {outpoint} at byte {offset} does not follow {previous} in key order (unsorted or duplicate)")]
    OutOfOrder {
        /// The coin's outpoint.
        outpoint: OutPoint,
        /// The coin before it.
        previous: OutPoint,
        /// Where the coin's record starts.
        offset: u64,
    },
    /// Bytes after the last coin the header counts.
    #[error(
        "Bad snapshot - coins left over after deserializing {coin_count} coins (at byte {offset})"
    )]
    CoinsLeftOver {
        /// Coins the header counts.
        coin_count: u64,
        /// Where the extra bytes start.
        offset: u64,
    },
    /// A writer was given coins out of key order: a broken invariant of
    /// the coins walk, never written to the file.
    #[error("snapshot writer given {outpoint} after {previous}: not in key order")]
    WriterOutOfOrder {
        /// The coin given.
        outpoint: OutPoint,
        /// The coin before it.
        previous: OutPoint,
    },
    /// The coins do not hash to the AssumeUTXO entry's value (Core's
    /// words).
    #[error("Bad snapshot content hash: expected {expected}, got {got}")]
    ContentHashMismatch {
        /// The entry's `hash_serialized_3`.
        expected: ibex_primitives::Hash256,
        /// The coins'.
        got: ibex_primitives::Hash256,
    },
    /// The base block is not in the network's AssumeUTXO table.
    #[error("assumeutxo block hash in snapshot metadata not recognized (hash: {hash})")]
    NotAssumeUtxoBlock {
        /// The snapshot's base block.
        hash: BlockHash,
    },
    /// The base block a snapshot is made at is not in the block index.
    #[error("snapshot base block {hash} is not in the block index")]
    UnknownBaseBlock {
        /// The block.
        hash: BlockHash,
    },
}

/// Why a decoded coin cannot be in the UTXO set a snapshot claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadCoinReason {
    /// Made above the base block.
    #[error("has height {height}, above the base block's {base_height}")]
    AboveBase {
        /// The coin's height.
        height: u32,
        /// The base block's height.
        base_height: u32,
    },
    /// Output index `u32::MAX`, which Core refuses (its statistics would
    /// wrap around).
    #[error("has output index 4294967295")]
    OutputIndexMax,
    /// A provably unspendable script (`OP_RETURN` first, or longer than
    /// 10,000 bytes): Core never adds one to the UTXO set.
    #[error("has an unspendable script")]
    Unspendable,
    /// Longer than any coin Core could write.
    #[error("is longer than any coin")]
    Oversized,
}
