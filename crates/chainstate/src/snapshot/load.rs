//! A snapshot's coins into a new coins database: read and checked as they
//! come ([`SnapshotReader`]), written in key order as ingested tables
//! ([`crate::coins::database::bulk`]), and hashed on the way in Core's
//! `hash_serialized_3` order. Only when the hash equals the AssumeUTXO
//! entry's is the base block recorded as the database's best block; a
//! database without one is an unfinished or refused load.

use std::io::Read;

use ibex_primitives::params::AssumeUtxoEntry;
use ibex_primitives::txoutset::{TxOutSetHashType, TxOutSetStats};

use super::error::SnapshotError;
use super::reader::SnapshotReader;
use crate::coins::database::CoinsDatabase;
use crate::coins::txoutset::GroupedHasher;
use crate::error::ChainstateError;

/// What a load read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSnapshot {
    /// Coins loaded.
    pub coins_loaded: u64,
    /// Their statistics and `hash_serialized_3`.
    pub stats: TxOutSetStats,
}

/// Loads every coin of `reader` (whose header names `entry`'s block) into
/// `database`, which must hold no coins, and checks their hash against
/// `entry`'s (Core's "Bad snapshot content hash"); then records the base
/// block. `progress` is called every [`LOAD_PROGRESS_COINS`] coins with
/// the coins loaded.
pub fn load_snapshot<R: Read>(
    mut reader: SnapshotReader<R>,
    database: &CoinsDatabase,
    entry: &AssumeUtxoEntry,
    mut progress: impl FnMut(u64),
) -> Result<LoadedSnapshot, ChainstateError> {
    let base_block = reader.metadata().base_block;
    if base_block != entry.block_hash {
        return Err(SnapshotError::NotAssumeUtxoBlock { hash: base_block }.into());
    }
    let mut writer = database.bulk_coin_writer()?;
    let mut hasher = GroupedHasher::new(TxOutSetHashType::HashSerialized3);
    while let Some((outpoint, coin)) = reader.next_coin()? {
        writer.put(&outpoint, &coin)?;
        hasher.add(outpoint, coin)?;
        if reader.coins_read() % LOAD_PROGRESS_COINS == 0 {
            progress(reader.coins_read());
        }
    }
    let coins_loaded = writer.finish()?;
    let stats = hasher.finish()?;
    let got = stats.hash.unwrap_or(ibex_primitives::Hash256([0; 32]));
    if got != entry.hash_serialized {
        return Err(
            SnapshotError::ContentHashMismatch { expected: entry.hash_serialized, got }.into()
        );
    }
    database.set_best_block(&base_block)?;
    Ok(LoadedSnapshot { coins_loaded, stats })
}

/// Coins between two progress calls of [`load_snapshot`] (Core logs every
/// million).
pub const LOAD_PROGRESS_COINS: u64 = 1_000_000;
