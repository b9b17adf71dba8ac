//! The parsers on texts laid out as RocksDB 10 lays out its properties,
//! and on texts that are not: a changed format gives `None`, never a
//! wrong figure.

use super::*;

/// A column family's statistics as RocksDB 10 prints them (figures
/// made up; the level table is left out of what is parsed).
const COLUMN_FAMILY: &str = "
** Compaction Stats [default] **
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB)
  L0      2/0   60.00 MB   0.5      0.0     0.0      0.0       1.2      1.2
 Sum      9/0    1.10 GB   0.0      2.1     1.0      1.1       3.3      2.2

Uptime(secs): 300.5 total, 300.5 interval
Flush(GB): cumulative 1.234, interval 0.010
AddFile(GB): cumulative 0.000, interval 0.000
Cumulative compaction: 2.10 GB write, 7.15 MB/s write, 1.98 GB read, 6.75 MB/s read, 41.3 seconds
Interval compaction: 0.05 GB write, 1.00 MB/s write, 0.04 GB read, 0.90 MB/s read, 1.0 seconds
Estimated pending compaction bytes: 0
Write Stall (count): l0-file-count-limit-delays: 1, memtable-limit-stops: 15, total-delays: 2, total-stops: 15
interval: 17 total count
";

/// The database's statistics as RocksDB 10 prints them.
const DATABASE: &str = "
** DB Stats **
Uptime(secs): 300.5 total, 300.5 interval
Cumulative writes: 40K writes, 30M keys, 40K commit groups, 1.0 writes per commit group, ingest: 1.25 GB, 4.26 MB/s
Cumulative WAL: 40K writes, 12 syncs, 3333.33 writes per sync, written: 1.25 GB, 4.26 MB/s
Cumulative stall: 00:01:2.500 H:M:S, 20.8 percent
Interval writes: 0 writes, 0 keys, 0 commit groups, 0.0 writes per commit group, ingest: 0.00 MB, 0.00 MB/s
";

const LEVELS: &str = "Level Files Size(MB)
--------------------
  0        2       60
  1        3      250
  2        4      800
  3        0        0
  4        0        0
  5        0        0
  6        0        0
";

fn gibibytes(text: &str) -> GibibyteText {
    GibibyteText::parse(text).unwrap()
}

#[test]
fn cumulative_figures_are_read_with_their_precision() {
    assert_eq!(parse_flush_written(COLUMN_FAMILY), Some(gibibytes("1.234")));
    let compaction = parse_compaction(COLUMN_FAMILY).unwrap();
    assert_eq!(compaction.written, Some(gibibytes("2.10")));
    assert_eq!(compaction.read, Some(gibibytes("1.98")));
    assert_eq!(compaction.seconds, Some(41.3));
    assert_eq!(parse_wal_written(DATABASE), Some(gibibytes("1.25")));
    assert_eq!(parse_write_stall_seconds(DATABASE), Some(62.5));
    assert_eq!(parse_stall_count(COLUMN_FAMILY, "total-stops"), Some(15));
    assert_eq!(parse_stall_count(COLUMN_FAMILY, "total-delays"), Some(2));
    let bytes = parse_level_bytes(LEVELS);
    assert_eq!(bytes[0], Some(60 << 20));
    assert_eq!(bytes[2], Some(800 << 20));
    assert_eq!(bytes[6], Some(0));
}

#[test]
fn a_changed_format_is_unknown_not_a_guess() {
    // Units changed to MB: the GiB fields are not found.
    let in_megabytes =
        COLUMN_FAMILY.replace(" GB write", " MB write").replace("Flush(GB)", "Flush(MB)");
    assert_eq!(parse_flush_written(&in_megabytes), None);
    let compaction = parse_compaction(&in_megabytes).unwrap();
    assert_eq!(compaction.written, None);
    assert_eq!(compaction.read, Some(gibibytes("1.98")), "the untouched field still reads");
    // Numbers that are not plain decimals.
    for bad in ["-1.0", "1e3", "nan", "inf", "", ".5", "1.2.3", "1,5", "99999999999.0"] {
        let text = COLUMN_FAMILY.replace("cumulative 1.234", &format!("cumulative {bad}"));
        assert_eq!(parse_flush_written(&text), None, "{bad}");
        assert_eq!(GibibyteText::parse(bad), None, "{bad}");
    }
    assert_eq!(parse_wal_written(&DATABASE.replace("written: 1.25 GB", "written: 1.25 TB")), None);
    assert_eq!(parse_write_stall_seconds(&DATABASE.replace("H:M:S", "M:S")), None);
    assert_eq!(parse_write_stall_seconds(&DATABASE.replace("00:01:2.500", "00:61:2.500")), None);
    assert_eq!(parse_write_stall_seconds(&DATABASE.replace("00:01:2.500", "1:2:3:4")), None);
    assert_eq!(parse_stall_count(COLUMN_FAMILY, "total-pauses"), None);
    assert_eq!(
        parse_stall_count(&COLUMN_FAMILY.replace("stops: 15", "stops: many"), "total-stops"),
        None
    );
    // A different level table header: every level unknown.
    let renamed = LEVELS.replace("Size(MB)", "Size(GB)");
    assert_eq!(parse_level_bytes(&renamed), [None; DATABASE_LEVELS]);
    // Lines out of shape, or beyond the levels reported, are skipped.
    let odd = format!("{LEVELS}  9 1 5\n  x 1 5\n  1 2\n");
    assert_eq!(parse_level_bytes(&odd), parse_level_bytes(LEVELS));
    // Nothing at all.
    for parse in [parse_flush_written, parse_wal_written] {
        assert_eq!(parse(""), None);
        assert_eq!(parse("garbage\n\u{0}\u{ffff}"), None);
    }
    assert_eq!(parse_compaction(""), None);
    assert_eq!(parse_write_stall_seconds(""), None);
}

#[test]
fn gibibyte_figures_know_their_resolution() {
    let figure = gibibytes("1.25");
    assert_eq!(figure.decimals, 2);
    assert_eq!(figure.bytes(), 5 << 28);
    // Half of 0.01 GiB.
    assert_eq!(figure.error_bytes(), 5_368_710);
    assert_eq!(figure.to_string(), "1.25 GiB");
    assert_eq!(gibibytes("0.010").to_string(), "0.010 GiB");
    assert_eq!(gibibytes("3").error_bytes(), 1 << 29);
    assert_eq!(gibibytes("0.000").bytes(), 0);
}

#[test]
fn write_amplification_counts_every_write_over_the_users() {
    let user_written_bytes = 1 << 30;
    let mut io = CoinsDatabaseIo {
        user_written_bytes,
        wal_written: Some(gibibytes("1.00")),
        flush_written: Some(gibibytes("0.900")),
        compaction_written: Some(gibibytes("2.10")),
        ..CoinsDatabaseIo::default()
    };
    let amplification = io.write_amplification().unwrap();
    assert!((amplification.ratio - 4.0).abs() < 1e-9, "{amplification:?}");
    // Half a unit of each printed figure: 0.005 + 0.0005 + 0.005 GiB.
    assert!((amplification.error - 0.0105).abs() < 1e-6, "{amplification:?}");
    io.compaction_written = None;
    assert_eq!(io.write_amplification(), None, "a term unknown");
    io.compaction_written = Some(gibibytes("0.00"));
    io.user_written_bytes = 0;
    assert_eq!(io.write_amplification(), None, "nothing written");
}

#[test]
fn file_counts_add_up_only_when_every_level_is_known() {
    let mut io = CoinsDatabaseIo::default();
    assert_eq!(io.sst_file_count(), None);
    io.files_per_level = [Some(2), Some(3), Some(4), Some(0), Some(0), Some(0), Some(0)];
    assert_eq!(io.sst_file_count(), Some(9));
    io.files_per_level[6] = None;
    assert_eq!(io.sst_file_count(), None);
}
