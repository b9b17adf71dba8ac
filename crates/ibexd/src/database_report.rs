//! The log's lines about the coins database, for measuring before tuning:
//! where connect found the coins it spent, by age, and what RocksDB wrote
//! and read for them.
//!
//! - After each coins flush (its `FlushStateToDisk (...)` line), one line:
//!   [`database_line`].
//! - At the end of a run, beside `Imported to height ...`: the coin reads
//!   ([`coin_reads_line`]) and the database's full summary
//!   ([`database_summary_lines`]).
//!
//! Byte counts the node knows exactly are in MiB; RocksDB's cumulative
//! figures keep the GiB and the decimals RocksDB printed them with
//! ([`ibex_chainstate::GibibyteText`]); what RocksDB did not say is
//! "unknown".

use std::fmt::Write;

use ibex_chainstate::{
    CoinReadCounts, CoinSource, CoinsDatabaseIo, GibibyteText, COIN_AGE_RANGE_NAMES,
};

const MEBIBYTE_BYTES: f64 = (1u64 << 20) as f64;

fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / MEBIBYTE_BYTES)
}

fn known<T>(value: Option<T>, show: impl Fn(T) -> String) -> String {
    value.map_or_else(|| "unknown".to_owned(), show)
}

fn gibibytes(value: Option<GibibyteText>) -> String {
    known(value, |figure| figure.to_string())
}

fn percent(part: u64, whole: u64) -> String {
    format!("{:.1} %", part as f64 * 100.0 / whole.max(1) as f64)
}

/// `Coin reads by age: 0-1 blocks 1234 (98.1 % in memory), ...; in memory
/// N (live map N, frozen map N), from the database N (prefetch N, direct
/// reads N); BIP30 lookups N (N reached the database)`.
pub fn coin_reads_line(counts: &CoinReadCounts) -> String {
    let mut line = "Coin reads by age:".to_owned();
    for (range, name) in COIN_AGE_RANGE_NAMES.iter().enumerate() {
        let spends = counts.spends_in_range(range);
        let separator = if range == 0 { "" } else { "," };
        let _ = write!(line, "{separator} {name} blocks {spends}");
        if spends > 0 {
            let in_memory = counts.memory_spends_in_range(range);
            let _ = write!(line, " ({} in memory)", percent(in_memory, spends));
        }
    }
    let from = |source| counts.spends_from(source);
    let memory = from(CoinSource::LiveMap) + from(CoinSource::FrozenMap);
    let _ = write!(
        line,
        "; in memory {memory} (live map {}, frozen map {}), from the database {} (prefetch {}, direct reads {}); BIP30 lookups {} ({} reached the database)",
        from(CoinSource::LiveMap),
        from(CoinSource::FrozenMap),
        counts.database_spends(),
        from(CoinSource::Prefetch),
        from(CoinSource::DirectRead),
        counts.bip30_lookups,
        counts.bip30_database_lookups,
    );
    line
}

/// `write amplification 3.75 ± 0.01`, or `unknown`.
fn amplification_text(io: &CoinsDatabaseIo) -> String {
    known(io.write_amplification(), |amplification| {
        format!("{:.2} ± {:.2}", amplification.ratio, amplification.error)
    })
}

/// `1.5 s (15 stops, 2 slowdowns)`, unknowns said.
fn stall_text(io: &CoinsDatabaseIo) -> String {
    format!(
        "{} ({} stops, {} slowdowns)",
        known(io.write_stall_seconds, |seconds| format!("{seconds:.1} s")),
        known(io.write_stops, |count| count.to_string()),
        known(io.write_slowdowns, |count| count.to_string()),
    )
}

/// `L0 2, L1 3` (levels with files), or `unknown`.
fn files_by_level(io: &CoinsDatabaseIo) -> String {
    if io.files_per_level.iter().any(Option::is_none) {
        return "unknown".to_owned();
    }
    let levels: Vec<String> = io
        .files_per_level
        .iter()
        .enumerate()
        .filter_map(|(level, files)| files.filter(|&count| count > 0).map(|count| (level, count)))
        .map(|(level, count)| format!("L{level} {count}"))
        .collect();
    if levels.is_empty() {
        "none".to_owned()
    } else {
        levels.join(", ")
    }
}

/// The one line after each flush: what the database wrote since open and
/// its files now.
pub fn database_line(io: &CoinsDatabaseIo) -> String {
    format!(
        "Coins database: {} written to it, WAL {}, memtable flushes {}, compactions wrote {} and read {}, write amplification {}; {} SST files ({}), {}; pending compaction {}; writes stalled {}",
        mebibytes(io.user_written_bytes),
        gibibytes(io.wal_written),
        gibibytes(io.flush_written),
        gibibytes(io.compaction_written),
        gibibytes(io.compaction_read),
        amplification_text(io),
        known(io.sst_file_count(), |count| count.to_string()),
        files_by_level(io),
        known(io.sst_files_bytes, mebibytes),
        known(io.pending_compaction_bytes, mebibytes),
        stall_text(io),
    )
}

/// The full summary at the end of a run: I/O, files and estimates, and
/// each level.
pub fn database_summary_lines(io: &CoinsDatabaseIo) -> Vec<String> {
    let io_line = format!(
        "Coins database I/O since open: {} written to it by the chainstate, WAL {}, memtable flushes {}, compactions wrote {} and read {} in {}; write amplification {} ((WAL + flushes + compactions) / bytes written to it); writes stalled {}",
        mebibytes(io.user_written_bytes),
        gibibytes(io.wal_written),
        gibibytes(io.flush_written),
        gibibytes(io.compaction_written),
        gibibytes(io.compaction_read),
        known(io.compaction_seconds, |seconds| format!("{seconds:.1} s")),
        amplification_text(io),
        stall_text(io),
    );
    let files_line = format!(
        "Coins database files: {} SST files, {} ({} live); live data ~{}, ~{} keys; compaction pending {}, ~{} to rewrite; memtables {}",
        known(io.sst_file_count(), |count| count.to_string()),
        known(io.sst_files_bytes, mebibytes),
        known(io.live_sst_files_bytes, mebibytes),
        known(io.live_data_bytes, mebibytes),
        known(io.estimated_keys, |keys| keys.to_string()),
        known(io.compaction_pending, |pending| if pending { "yes" } else { "no" }.to_owned()),
        known(io.pending_compaction_bytes, mebibytes),
        known(io.memtable_bytes, mebibytes),
    );
    let levels: Vec<String> = io
        .files_per_level
        .iter()
        .zip(&io.level_bytes)
        .enumerate()
        .map(|(level, (files, bytes))| {
            let files = known(*files, |count| count.to_string());
            format!(
                "L{level} {files} files {}",
                known(*bytes, |bytes| format!("{} MiB", bytes >> 20))
            )
        })
        .collect();
    vec![io_line, files_line, format!("Coins database levels: {}", levels.join(", "))]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coin_reads_show_each_age_with_its_share_in_memory() {
        let mut counts = CoinReadCounts::default();
        for _ in 0..981 {
            counts.count_spend(10, 10, CoinSource::LiveMap);
        }
        for _ in 0..19 {
            counts.count_spend(10, 9, CoinSource::Prefetch);
        }
        counts.count_spend(2_000, 5, CoinSource::DirectRead);
        counts.count_spend(2_000, 1_990, CoinSource::FrozenMap);
        counts.bip30_lookups = 70;
        counts.bip30_database_lookups = 12;
        let line = coin_reads_line(&counts);
        assert!(
            line.starts_with("Coin reads by age: 0-1 blocks 1000 (98.1 % in memory), "),
            "{line}"
        );
        assert!(line.contains(", 2-10 blocks 1 (100.0 % in memory), 11-100 blocks 0, "), "{line}");
        assert!(
            line.contains(", 1001-10000 blocks 1 (0.0 % in memory), 10001+ blocks 0;"),
            "{line}"
        );
        assert!(line.contains("; in memory 982 (live map 981, frozen map 1), from the database 20 (prefetch 19, direct reads 1); "), "{line}");
        assert!(line.ends_with("; BIP30 lookups 70 (12 reached the database)"), "{line}");
    }

    fn measured() -> CoinsDatabaseIo {
        let figure = |text| GibibyteText::parse(text);
        CoinsDatabaseIo {
            user_written_bytes: 1 << 30,
            wal_written: figure("1.00"),
            flush_written: figure("0.900"),
            compaction_written: figure("2.10"),
            compaction_read: figure("1.98"),
            compaction_seconds: Some(41.3),
            write_stall_seconds: Some(1.5),
            write_stops: Some(15),
            write_slowdowns: Some(2),
            files_per_level: [Some(2), Some(0), Some(4), Some(0), Some(0), Some(0), Some(0)],
            level_bytes: [
                Some(60 << 20),
                Some(0),
                Some(800 << 20),
                Some(0),
                Some(0),
                Some(0),
                None,
            ],
            sst_files_bytes: Some(860 << 20),
            live_sst_files_bytes: Some(860 << 20),
            live_data_bytes: Some(850 << 20),
            estimated_keys: Some(12_000_000),
            compaction_pending: Some(false),
            pending_compaction_bytes: Some(0),
            memtable_bytes: Some(3 << 20),
        }
    }

    #[test]
    fn the_flush_line_is_one_line_with_what_rocksdb_said() {
        let line = database_line(&measured());
        assert!(!line.contains('\n'));
        assert_eq!(
            line,
            "Coins database: 1024.0 MiB written to it, WAL 1.00 GiB, memtable flushes 0.900 GiB, compactions wrote 2.10 GiB and read 1.98 GiB, write amplification 4.00 ± 0.01; 6 SST files (L0 2, L2 4), 860.0 MiB; pending compaction 0.0 MiB; writes stalled 1.5 s (15 stops, 2 slowdowns)"
        );
        // Not "FlushStateToDisk (": `ibex plot` counts those as flushes.
        assert!(!line.contains("FlushStateToDisk"));
    }

    #[test]
    fn what_rocksdb_did_not_say_is_unknown() {
        let io = CoinsDatabaseIo { user_written_bytes: 5 << 20, ..CoinsDatabaseIo::default() };
        let line = database_line(&io);
        assert_eq!(
            line,
            "Coins database: 5.0 MiB written to it, WAL unknown, memtable flushes unknown, compactions wrote unknown and read unknown, write amplification unknown; unknown SST files (unknown), unknown; pending compaction unknown; writes stalled unknown (unknown stops, unknown slowdowns)"
        );
        let lines = database_summary_lines(&io);
        assert_eq!(lines.len(), 3);
        assert!(lines.iter().all(|line| !line.contains("Some") && !line.contains("None")));
        assert!(lines[2].starts_with("Coins database levels: L0 unknown files unknown, "));
    }

    #[test]
    fn the_summary_has_io_files_and_every_level() {
        let lines = database_summary_lines(&measured());
        assert!(lines[0].contains("compactions wrote 2.10 GiB and read 1.98 GiB in 41.3 s; write amplification 4.00 ± 0.01"), "{}", lines[0]);
        assert_eq!(
            lines[1],
            "Coins database files: 6 SST files, 860.0 MiB (860.0 MiB live); live data ~850.0 MiB, ~12000000 keys; compaction pending no, ~0.0 MiB to rewrite; memtables 3.0 MiB"
        );
        assert_eq!(
            lines[2],
            "Coins database levels: L0 2 files 60 MiB, L1 0 files 0 MiB, L2 4 files 800 MiB, L3 0 files 0 MiB, L4 0 files 0 MiB, L5 0 files 0 MiB, L6 0 files unknown"
        );
        let mut io = measured();
        io.files_per_level = [Some(0); ibex_chainstate::DATABASE_LEVELS];
        assert!(database_line(&io).contains("; 0 SST files (none), "));
    }
}
