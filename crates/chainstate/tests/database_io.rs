//! The coins database's I/O figures read from a real RocksDB, not from sample
//! text: after coins are written through small memtables, flushed to level 0
//! and compacted, every figure is known, the bytes written to it are counted
//! exactly, and the figures RocksDB prints agree with its integer properties
//! and with each other within the precision it prints them with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use ibex_chainstate::{Coin, CoinsDatabase, CoinsDatabaseIo, DatabaseOptions, FlushStats};
use ibex_primitives::{Amount, BlockHash, OutPoint, Txid};

/// Coins written, in [`FLUSHES`] flushes: ~70 bytes each, ~91 MB, so
/// more than 0.01 GiB (RocksDB's precision) of every kind, and more than
/// the 24 level-0 files that start a compaction with 1 MiB memtables
/// (`level0_file_triggers`). A file holds two memtables
/// (`budget::MEMTABLES_MERGED_PER_FLUSH`), or three when the flush thread
/// falls behind: 800,000 coins (~56 MB) once made only 23 files, and no
/// compaction started.
const COINS: u32 = 1_300_000;
const FLUSHES: u32 = 6;
/// A 1 MiB memtable: ~30-45 level-0 files of two or three, so compactions
/// run.
const MEMTABLE_BYTES: usize = 1 << 20;
/// How long RocksDB gets to finish its compactions.
const COMPACTION_WAIT: Duration = Duration::from_secs(60);

fn outpoint(index: u32) -> OutPoint {
    let mut txid = [0u8; 32];
    // Spread over the key space, as txids are.
    txid[..4].copy_from_slice(&index.wrapping_mul(2_654_435_761).to_be_bytes());
    txid[4..8].copy_from_slice(&index.to_le_bytes());
    OutPoint { txid: Txid(txid), vout: index % 3 }
}

fn coin(index: u32) -> Coin {
    let mut script = vec![0x00, 0x14];
    script.extend_from_slice(&[index as u8; 20]);
    Coin::new(Amount::from_sat(i64::from(index) + 1).unwrap(), script, index / 1_000, false)
        .unwrap()
}

/// Writes every coin, a flush at a time; what the flushes wrote.
fn write_coins(database: &CoinsDatabase) -> FlushStats {
    let mut total = FlushStats::default();
    let per_flush = COINS / FLUSHES;
    for flush in 0..FLUSHES {
        let tip = BlockHash([flush as u8 + 1; 32]);
        let mut writer = database.begin_flush(tip).unwrap();
        for index in flush * per_flush..(flush + 1) * per_flush {
            writer.put(&outpoint(index), &coin(index)).unwrap();
        }
        total += writer.finish().unwrap();
    }
    total
}

/// Waits until RocksDB has nothing left to flush or compact.
fn wait_for_compactions(database: &CoinsDatabase) -> CoinsDatabaseIo {
    let started = Instant::now();
    loop {
        let io = database.io();
        let running = database.property_integer("rocksdb.num-running-compactions");
        if io.compaction_pending == Some(false) && running == Some(0) {
            return io;
        }
        assert!(started.elapsed() < COMPACTION_WAIT, "compactions never ended: {io:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn figures_from_rocksdb_are_known_and_agree() {
    let directory = tempfile::tempdir().unwrap();
    let options = DatabaseOptions {
        memtable_bytes: MEMTABLE_BYTES,
        flush_batch_bytes_max: 1 << 20,
        ..DatabaseOptions::default()
    };
    let database = CoinsDatabase::open(directory.path(), &options).unwrap();
    let fresh = database.io();
    assert_eq!(fresh.user_written_bytes, 0);
    assert_eq!(fresh.sst_file_count(), Some(0), "{fresh:?}");
    assert_eq!(fresh.write_amplification(), None, "nothing written yet");

    let written = write_coins(&database);
    database.persist_memtables().unwrap();
    let io = wait_for_compactions(&database);
    let text = database.property_text("rocksdb.cfstats-no-file-histogram").unwrap_or_default();
    let context = format!("{io:#?}\n{text}");

    // Counted exactly, by the database itself.
    assert_eq!(io.user_written_bytes, written.batch_bytes);
    assert!(io.user_written_bytes > 15 << 20, "{context}");
    // Nothing goes through the write-ahead log (`coins::database`'s docs).
    let wal = io.wal_written.expect("WAL bytes known");
    assert_eq!(wal.bytes(), 0, "{context}");
    // Memtables went to level 0, and level 0 was compacted below.
    let flushed = io.flush_written.expect("flush bytes known");
    assert!(flushed.bytes() > 0, "{context}");
    let compacted = io.compaction_written.expect("compaction bytes known");
    assert!(compacted.bytes() > 0, "{context}");
    assert!(io.compaction_read.expect("compaction reads known").bytes() > 0, "{context}");
    assert!(io.compaction_seconds.expect("compaction time known") > 0.0, "{context}");
    assert!(io.write_stall_seconds.is_some(), "{context}");
    // Three 1 MiB memtables taking 1 MiB batches usually make writes wait,
    // but not always: whether they do depends on the flush thread's pace
    // (a loaded machine once let every flush keep up), so only the count's
    // presence is asserted.
    assert!(io.write_stops.is_some(), "{context}");
    assert!(io.write_slowdowns.is_some(), "{context}");
    let deeper: u64 = io.files_per_level[1..].iter().map(|files| files.unwrap()).sum();
    assert!(deeper > 0, "compactions moved files below level 0: {context}");

    // What is on disk was written by flushes and compactions.
    let sst_bytes = io.live_sst_files_bytes.expect("live SST bytes known");
    let written_to_files = flushed.bytes() + flushed.error_bytes() + compacted.bytes();
    assert!(sst_bytes <= written_to_files + compacted.error_bytes(), "{context}");
    assert!(io.sst_files_bytes.unwrap() >= sst_bytes, "{context}");
    // Levels' sizes, each to the MiB, add up to the live files.
    let level_bytes: u64 = io.level_bytes.iter().map(|bytes| bytes.unwrap()).sum();
    let rounding = (io.level_bytes.len() as u64) << 19;
    assert!(level_bytes.abs_diff(sst_bytes) <= rounding, "{context}");
    let keys = io.estimated_keys.unwrap();
    assert!(keys >= u64::from(COINS) / 2 && keys <= u64::from(COINS) * 2, "{context}");
    assert!(io.live_data_bytes.unwrap() > 0, "{context}");
    assert_eq!(io.memtable_bytes.map(|bytes| bytes < MEMTABLE_BYTES as u64 * 4), Some(true));

    let amplification = io.write_amplification().expect("every term known");
    // Each byte went to the log and, at least once, to a file.
    assert!(amplification.ratio + amplification.error >= 2.0, "{amplification:?}\n{context}");
    eprintln!("{amplification:?}\n{context}");
}
