//! UTXO snapshots in Bitcoin Core's format (`node/utxo_snapshot.h`,
//! version 2, grouped by transaction), the files `dumptxoutset` writes
//! and `loadtxoutset` reads, byte for byte Core's:
//!
//! | bytes | field |
//! |---|---|
//! | 5 | magic `utxo\xff` |
//! | 2 | version, `u16` little-endian: 2 |
//! | 4 | the network's message start |
//! | 32 | the base block's hash |
//! | 8 | the coin count, `u64` little-endian |
//! | then per transaction | its id (32), a compact-size count, then per coin its output index (compact size) and Core's coin serialisation (`VARINT(height * 2 + coinbase)`, compressed amount, compressed script) |
//!
//! Transactions and their coins come in the coins database's key order
//! (`'C' || txid || VARINT(vout)`), which is RocksDB's order here as it is
//! LevelDB's in Core: the same coins give the same bytes.
//!
//! # Napkin math
//! Mainnet at 935,000 holds 164.2 M coins in ~100 M transactions; a
//! P2WPKH coin is ~1 + 4 + 3 + 21 = ~29 bytes, a group header 33: ~7-9 GB
//! of file. Writing is one walk of the coins database (RocksDB iterates at
//! ~1-3 M coins/s on one core) plus SHA-256 of ~75 bytes a coin (0.1-0.2 µs):
//! one to three minutes of CPU, then the disk's write speed. Reading
//! decodes ~30 bytes a coin from a 1 MiB buffer (~50-100 ns a coin).

mod dump;
mod error;
mod load;
mod metadata;
mod reader;
mod rollback;
#[cfg(test)]
mod tests;
mod writer;

pub use dump::{
    count_coins, roll_back_to_target, write_snapshot, WrittenSnapshot, WRITE_BUFFER_BYTES,
};
pub use error::{BadCoinReason, SnapshotError};
pub use load::{load_snapshot, LoadedSnapshot, LOAD_PROGRESS_COINS};
pub use metadata::{
    SnapshotMetadata, COIN_COUNT_OFFSET, METADATA_BYTES, SNAPSHOT_MAGIC, SNAPSHOT_VERSION,
};
pub use reader::{
    SnapshotReader, COIN_BYTES_MIN, COIN_RECORD_BYTES_MAX, GROUP_COINS_MAX, READ_BUFFER_BYTES,
};
pub use rollback::{RollbackChanges, ROLLBACK_COIN_CHANGES_MAX};
pub use writer::SnapshotWriter;
