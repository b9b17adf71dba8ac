//! The coins database's column family gets the options Ibex sets, not
//! RocksDB's defaults: read back from the `OPTIONS-*` file RocksDB writes
//! with the settings it actually applied, and from its properties.
//!
//! Opened with `DB::open_cf` and a list of names, the family would get
//! `Options::default()`, as every listed family does: no bloom filter, 64
//! MiB memtables and RocksDB's own block cache, whatever the module docs
//! say. This test fails on that mistake.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use ibex_chainstate::level0_file_triggers;
use ibex_chainstate::{CoinsDatabase, DatabaseOptions};

mod options_file;

use options_file::{sections, setting};

/// The `[CFOptions "default"]` and `[TableOptions/BlockBasedTable
/// "default"]` sections, as one text.
fn default_family_options(path: &Path) -> String {
    sections(path, |header| header.contains("\"default\""))
}

/// The `[DBOptions]` section.
fn database_options_section(path: &Path) -> String {
    sections(path, |header| header.starts_with("[DBOptions]"))
}

#[test]
fn the_coins_family_gets_ibex_options_not_rocksdb_defaults() {
    let directory = tempfile::tempdir().unwrap();
    let options = DatabaseOptions {
        memtable_bytes: 3 << 20,
        block_cache_bytes: 5 << 20,
        ..DatabaseOptions::default()
    };
    let database = CoinsDatabase::open(directory.path(), &options).unwrap();
    let applied = default_family_options(directory.path());
    assert_eq!(setting(&applied, "write_buffer_size"), (3u64 << 20).to_string());
    assert_eq!(setting(&applied, "max_write_buffer_number"), "3");
    // Two full memtables are written to one level-0 table.
    assert_eq!(setting(&applied, "min_write_buffer_number_to_merge"), "2");
    // 3 MiB memtables: 24 files (the most) of two memtables each.
    let triggers = level0_file_triggers(3 << 20);
    assert_eq!(triggers.compaction_files, 24);
    let applied_trigger = setting(&applied, "level0_file_num_compaction_trigger");
    assert_eq!(applied_trigger, triggers.compaction_files.to_string());
    let slowdown = setting(&applied, "level0_slowdown_writes_trigger");
    assert_eq!(slowdown, triggers.slowdown_files.to_string());
    assert_eq!(setting(&applied, "level0_stop_writes_trigger"), triggers.stop_files.to_string());
    assert_eq!(setting(&applied, "compression"), "kNoCompression");
    assert_eq!(setting(&applied, "max_bytes_for_level_multiplier"), "3.000000");
    assert_eq!(setting(&applied, "level_compaction_dynamic_level_bytes"), "true");
    assert_eq!(setting(&applied, "memtable_whole_key_filtering"), "true");
    assert_ne!(setting(&applied, "memtable_prefix_bloom_size_ratio").parse::<f64>().unwrap(), 0.0);
    assert!(setting(&applied, "filter_policy").contains("bloomfilter"), "{applied}");
    // None in the last level (`database::LAST_LEVEL_FILTERS`).
    assert_eq!(setting(&applied, "optimize_filters_for_hits"), "true");
    // Binary search in data blocks, no hash index (`database::DATA_BLOCK_INDEX`).
    assert_eq!(setting(&applied, "data_block_index_type"), "kDataBlockBinarySearch");
    // Three compaction threads and a flush thread, compactions split in two.
    let database_wide = database_options_section(directory.path());
    let jobs = ibex_chainstate::COMPACTION_JOBS_MAX + 1;
    assert_eq!(setting(&database_wide, "max_background_jobs"), jobs.to_string());
    let subcompactions = ibex_chainstate::SUBCOMPACTIONS_MAX;
    assert_eq!(setting(&database_wide, "max_subcompactions"), subcompactions.to_string());
    // BIP30's per-transaction seek needs `'C' || txid` prefixes in the filters.
    assert!(setting(&applied, "prefix_extractor").contains("FixedPrefix.33"), "{applied}");
    assert_eq!(database.block_cache_capacity_bytes(), Some(5 << 20));
}
