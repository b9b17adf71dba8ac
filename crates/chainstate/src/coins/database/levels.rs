//! RocksDB's level shape for the coins database: the level-0 thresholds
//! from its memtable size ([`level0_file_triggers`]) and the size ratio
//! between levels ([`LEVEL_SIZE_MULTIPLIER`]).

use rocksdb::Options;

use super::options::MEMTABLES_MERGED_PER_FLUSH;

/// Level-0 bytes a compaction into the next level starts from, at least,
/// counted in memtables written (a table holds
/// [`MEMTABLES_MERGED_PER_FLUSH`] of them).
pub const LEVEL0_COMPACTION_BYTES_MIN: usize = 336 << 20;
/// Level-0 files that start a compaction, at most.
pub const LEVEL0_COMPACTION_FILES_MAX: usize = 24;

/// Each level's target size over the one above it (RocksDB's default: 10),
/// with `level_compaction_dynamic_level_bytes` sizing the levels from the
/// last one up.
///
/// # Why
/// Coin keys are random, so a compaction from one level into the next
/// rewrites the part of the next level its key range covers: about the
/// ratio of the two levels' sizes for each byte moved down. A smaller
/// ratio makes more levels but rewrites less at each step. Measured on
/// the `utxo-heavy` chain to height 2,000, scripts skipped,
/// `-reindex-chainstate` (one run each): at `-dbcache=100`,
/// 10 took 64.6 s (compactions wrote 6.07 GiB, 64.6 s of compaction
/// time), 5 took 61.3 s (6.02 GiB, 57.8 s), 3 took 59.8 s (5.58 GiB, 54.7
/// s); at `-dbcache=450`, 10 took 46.2 s and 3 took 44.3 s. The price is
/// a level more to probe on a read that misses the memtables (a bloom
/// filter in memory, ~0.1 us).
pub const LEVEL_SIZE_MULTIPLIER: f64 = 3.0;

/// RocksDB's level-0 thresholds, in files (one per memtable written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level0Triggers {
    /// Files that start a compaction into the next level.
    pub compaction_files: usize,
    /// Files from which writes are slowed.
    pub slowdown_files: usize,
    /// Files at which writes stop until a compaction ends.
    pub stop_files: usize,
}

/// The level-0 thresholds for memtables of `memtable_bytes`.
///
/// # Why
/// Coin keys are random, so a compaction from level 0 rewrites the whole
/// next level (~130 MB at 26 M coins). RocksDB starts one at 4 files
/// (slowing writes at 20, stopping them at 36): with `-dbcache=100`'s
/// 3.1 MiB memtables, to height 1,300 of the `utxo-heavy` chain,
/// compactions wrote 11 GB for 1.5 GB of memtables, writes stalled at 20
/// files (down to 3.5 MB/s), and validation waited up to 1.6 s for a
/// flush. Starting at `LEVEL0_COMPACTION_BYTES_MIN` of level 0 (4
/// files from 64 MiB memtables up, RocksDB's defaults; 15 at
/// `-dbcache=100`'s 16.7 MiB) makes each rewrite carry several times as much, with the stall thresholds moved
/// up alike: over the whole 2,000 blocks at `-dbcache=100`, no stall, the
/// longest wait for a flush 21 ms, 218 s of CPU against 252 s. The price
/// is a bloom filter probe (~0.1 us, the filters are in memory) per
/// extra level-0 file a lookup passes.
///
/// Why hundreds of MiB: with 14 MiB memtables at `-dbcache=450` and
/// scripts skipped, 48 MiB a compaction wrote 9.2 GiB in compactions
/// (write amplification 6.6), stopped writes 11 times for 24 s in all,
/// and took 73.1 s; 256 MiB (and 24 files at most) wrote 5.1 GiB (4.5),
/// stalled 0.2 s and took 52.6 s. 512 MiB (32 files of 16 MiB) was slower
/// again at `-dbcache=100`, 70.3 s against 66.8 s: every read probes more
/// level-0 files.
///
/// Each table holds [`MEMTABLES_MERGED_PER_FLUSH`] memtables, so the
/// bytes are 336 MiB rather than 256: with memtables of 11.1 MiB
/// (`-dbcache=100`'s with flushes through the memtables) 15 tables, as in
/// the three runs that chose the merge (docs/utxo-heavy.md), where 11
/// tables (the same 256 MiB) gave back most of the gain (52.8 s against
/// 50.7 s and 53.6 s in one round). Flushes are ingested as one table
/// each ([`crate::coins::database::ingest`]) and the memtables are 1 MiB, so this
/// gives the cap, 24 tables; RocksDB also compacts level 0 once
/// it holds more bytes than the base level's target (256 MiB), which is
/// what starts most compactions there (tables of 20-120 MB a flush).
pub fn level0_file_triggers(memtable_bytes: usize) -> Level0Triggers {
    let table_bytes = memtable_bytes.saturating_mul(MEMTABLES_MERGED_PER_FLUSH).max(1);
    let compaction_files =
        (LEVEL0_COMPACTION_BYTES_MIN / table_bytes).clamp(4, LEVEL0_COMPACTION_FILES_MAX);
    Level0Triggers {
        compaction_files,
        slowdown_files: (3 * compaction_files).max(20),
        stop_files: (4 * compaction_files).max(36),
    }
}

impl Level0Triggers {
    /// The thresholds for flushes of `tables_per_flush` tables each: a
    /// flush written in groups of key ranges adds that many level-0 files
    /// for the bytes one table held, so the counts scale with it (the
    /// compaction still starts from the same bytes).
    pub fn for_tables_per_flush(self, tables_per_flush: usize) -> Level0Triggers {
        let scale = tables_per_flush.max(1);
        Level0Triggers {
            compaction_files: self.compaction_files.saturating_mul(scale),
            slowdown_files: self.slowdown_files.saturating_mul(scale),
            stop_files: self.stop_files.saturating_mul(scale),
        }
    }
}

/// Sets [`level0_file_triggers`] for flushes of `tables_per_flush` tables
/// and [`LEVEL_SIZE_MULTIPLIER`] on `rocks`.
pub(crate) fn set_level0_triggers(
    rocks: &mut Options,
    memtable_bytes: usize,
    tables_per_flush: usize,
) {
    rocks.set_level_compaction_dynamic_level_bytes(true);
    rocks.set_max_bytes_for_level_multiplier(LEVEL_SIZE_MULTIPLIER);
    let triggers = level0_file_triggers(memtable_bytes).for_tables_per_flush(tables_per_flush);
    let files = |count: usize| i32::try_from(count).unwrap_or(i32::MAX);
    rocks.set_level_zero_file_num_compaction_trigger(files(triggers.compaction_files));
    rocks.set_level_zero_slowdown_writes_trigger(files(triggers.slowdown_files));
    rocks.set_level_zero_stop_writes_trigger(files(triggers.stop_files));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_memtables_wait_for_more_level0_files() {
        let triggers = |memtable_bytes| {
            let found = level0_file_triggers(memtable_bytes);
            (found.compaction_files, found.slowdown_files, found.stop_files)
        };
        // RocksDB's defaults from 33.6 MiB memtables up (`-dbcache=303`).
        assert_eq!(triggers(64 << 20), (4, 20, 36));
        assert_eq!(triggers(crate::coins::database::MEMTABLE_BYTES_DEFAULT), (4, 20, 36));
        assert_eq!(triggers(34 << 20), (4, 20, 36));
        assert_eq!(triggers(33 << 20), (5, 20, 36));
        // -dbcache=100: 8.3 MiB memtables, tables of two, 20 of them
        // (~333 MiB of memtables) a compaction.
        assert_eq!(triggers((100 << 20) / 12), (20, 60, 80));
        assert_eq!(triggers((100 << 20) / 9), (15, 45, 60));
        assert_eq!(triggers(8 << 20), (21, 63, 84));
        assert_eq!(triggers(1 << 20), (24, 72, 96));
        assert_eq!(triggers(0), (24, 72, 96));
        assert_eq!(triggers(usize::MAX), (4, 20, 36));
        // Eight tables a flush: eight times the files, the same bytes.
        let eight = level0_file_triggers(1 << 20).for_tables_per_flush(8);
        assert_eq!(
            (eight.compaction_files, eight.slowdown_files, eight.stop_files),
            (192, 576, 768)
        );
        assert_eq!(
            level0_file_triggers(1 << 20).for_tables_per_flush(0),
            level0_file_triggers(1 << 20)
        );
    }
}
