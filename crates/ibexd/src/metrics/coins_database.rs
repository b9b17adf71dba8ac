//! The coins database's families, measured before tuning: where
//! connect found the coins it spent, by age ([`ibex_chainstate::coin_reads`],
//! copied by the engine with its other counters), and RocksDB's I/O and
//! files ([`ibex_chainstate::database_io`], asked of RocksDB at each
//! scrape: tens of microseconds). A figure RocksDB does not give has no
//! sample; its cumulative byte counts are as precise as RocksDB prints
//! them (0.01 GiB, flushes 0.001 GiB).

use ibex_chainstate::{
    ChainMetrics, CoinReadCounts, CoinSource, CoinsDatabaseIo, GibibyteText, COIN_AGE_RANGES,
    COIN_AGE_RANGE_NAMES,
};

use super::exposition::{Exposition, Family};
use super::{family, number, Counter, Gauge};

/// `ibex_coin_reads_total`.
pub const COIN_READS: Family = family(
    "ibex_coin_reads_total",
    Counter,
    "Coins spent by connected blocks, by the coin's age in blocks (spending height minus its height) and where connect found it: in memory (live_map, frozen_map: a background flush's) or read from the coins database (prefetch, direct_read).",
);
/// `ibex_bip30_lookups_total`.
pub const BIP30_LOOKUPS: Family = family(
    "ibex_bip30_lookups_total",
    Counter,
    "BIP30 lookups of connected blocks' outputs, by what answered them: memory (the cache's maps) or the coins database.",
);
/// `ibex_coins_database_io_bytes_total`.
pub const DATABASE_IO_BYTES: Family = family(
    "ibex_coins_database_io_bytes_total",
    Counter,
    "Bytes RocksDB wrote or read for the coins since it opened, by kind: wal_written, flush_written (memtables to level 0), compaction_written, compaction_read; to RocksDB's printed precision (0.01 GiB, flushes 0.001 GiB).",
);
/// `ibex_coins_database_write_amplification`.
pub const WRITE_AMPLIFICATION: Family = family(
    "ibex_coins_database_write_amplification",
    Gauge,
    "(WAL + flush + compaction bytes written) / bytes the chainstate wrote to the coins database, since it opened.",
);
/// `ibex_coins_database_files`.
pub const DATABASE_FILES: Family =
    family("ibex_coins_database_files", Gauge, "SST files of the coins database, by level.");
/// `ibex_coins_database_bytes`.
pub const DATABASE_BYTES: Family = family(
    "ibex_coins_database_bytes",
    Gauge,
    "Coins database sizes by kind: sst_files (all), live_sst_files, live_data (RocksDB's estimate), pending_compaction (bytes compactions must rewrite), memtables.",
);
/// `ibex_coins_database_keys`.
pub const DATABASE_KEYS: Family =
    family("ibex_coins_database_keys", Gauge, "RocksDB's estimate of the coins database's keys.");
/// `ibex_coins_database_seconds_total`.
pub const DATABASE_SECONDS: Family = family(
    "ibex_coins_database_seconds_total",
    Counter,
    "Seconds RocksDB spent since it opened, by kind: compaction (all threads), write_stall (writes stopped or slowed).",
);

/// `ibex_coins_database_write_stalls_total`.
pub const DATABASE_WRITE_STALLS: Family = family(
    "ibex_coins_database_write_stalls_total",
    Counter,
    "Times RocksDB stopped (stop) or slowed down (slowdown) writes to the coins database since it opened: memtables full, too many level-0 files, compaction debt.",
);

/// This module's families, in page order.
pub const FAMILIES: [Family; 9] = [
    COIN_READS,
    BIP30_LOOKUPS,
    DATABASE_IO_BYTES,
    WRITE_AMPLIFICATION,
    DATABASE_FILES,
    DATABASE_BYTES,
    DATABASE_KEYS,
    DATABASE_SECONDS,
    DATABASE_WRITE_STALLS,
];

/// Writes the coin reads from the engine's copy and the database's figures.
pub fn render(page: &mut Exposition, chain: &ChainMetrics, coin_reads: &CoinReadCounts) {
    render_coin_reads(page, coin_reads);
    render_database(page, chain.coins_database_io().as_ref());
}

fn render_coin_reads(page: &mut Exposition, counts: &CoinReadCounts) {
    page.family(&COIN_READS);
    for (range, sources) in counts.spends.iter().enumerate().take(COIN_AGE_RANGES) {
        for source in CoinSource::ALL {
            let labels = [("age", COIN_AGE_RANGE_NAMES[range]), ("source", source.name())];
            page.sample(COIN_READS.name, &labels, number(sources[source.index()]));
        }
    }
    page.family(&BIP30_LOOKUPS);
    let memory = counts.bip30_lookups.saturating_sub(counts.bip30_database_lookups);
    page.sample(BIP30_LOOKUPS.name, &[("answered_by", "memory")], number(memory));
    let database = number(counts.bip30_database_lookups);
    page.sample(BIP30_LOOKUPS.name, &[("answered_by", "database")], database);
}

/// A sample of `family` labelled `label=value` when `figure` is known.
fn known(page: &mut Exposition, family: &Family, label: (&str, &str), figure: Option<f64>) {
    if let Some(figure) = figure {
        page.sample(family.name, &[label], figure);
    }
}

fn render_database(page: &mut Exposition, io: Option<&CoinsDatabaseIo>) {
    let io = io.copied().unwrap_or_default();
    let bytes = |figure: Option<GibibyteText>| figure.map(|figure| number(figure.bytes()));
    page.family(&DATABASE_IO_BYTES);
    known(page, &DATABASE_IO_BYTES, ("kind", "wal_written"), bytes(io.wal_written));
    known(page, &DATABASE_IO_BYTES, ("kind", "flush_written"), bytes(io.flush_written));
    let compaction_written = bytes(io.compaction_written);
    known(page, &DATABASE_IO_BYTES, ("kind", "compaction_written"), compaction_written);
    known(page, &DATABASE_IO_BYTES, ("kind", "compaction_read"), bytes(io.compaction_read));
    page.family(&WRITE_AMPLIFICATION);
    if let Some(amplification) = io.write_amplification() {
        page.sample(WRITE_AMPLIFICATION.name, &[], amplification.ratio);
    }
    page.family(&DATABASE_FILES);
    for (level, files) in io.files_per_level.iter().enumerate() {
        let level = level.to_string();
        known(page, &DATABASE_FILES, ("level", &level), files.map(number));
    }
    page.family(&DATABASE_BYTES);
    let sizes = [
        ("sst_files", io.sst_files_bytes),
        ("live_sst_files", io.live_sst_files_bytes),
        ("live_data", io.live_data_bytes),
        ("pending_compaction", io.pending_compaction_bytes),
        ("memtables", io.memtable_bytes),
    ];
    for (kind, size) in sizes {
        known(page, &DATABASE_BYTES, ("kind", kind), size.map(number));
    }
    page.family(&DATABASE_KEYS);
    if let Some(keys) = io.estimated_keys {
        page.sample(DATABASE_KEYS.name, &[], number(keys));
    }
    page.family(&DATABASE_SECONDS);
    known(page, &DATABASE_SECONDS, ("kind", "compaction"), io.compaction_seconds);
    known(page, &DATABASE_SECONDS, ("kind", "write_stall"), io.write_stall_seconds);
    page.family(&DATABASE_WRITE_STALLS);
    known(page, &DATABASE_WRITE_STALLS, ("kind", "stop"), io.write_stops.map(number));
    known(page, &DATABASE_WRITE_STALLS, ("kind", "slowdown"), io.write_slowdowns.map(number));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn sample_lines(page: &str, name: &str) -> Vec<String> {
        page.lines()
            .filter(|line| line.split(['{', ' ']).next() == Some(name))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn coin_reads_have_an_age_and_a_source_label_each() {
        let mut counts =
            CoinReadCounts { bip30_lookups: 9, bip30_database_lookups: 4, ..Default::default() };
        counts.count_spend(50, 50, CoinSource::LiveMap);
        counts.count_spend(5_000, 10, CoinSource::Prefetch);
        counts.count_spend(5_000, 10, CoinSource::Prefetch);
        let mut page = Exposition::new();
        render_coin_reads(&mut page, &counts);
        let page = page.finish();
        let reads = sample_lines(&page, COIN_READS.name);
        assert_eq!(reads.len(), COIN_AGE_RANGES * CoinSource::ALL.len());
        assert!(
            reads.contains(&"ibex_coin_reads_total{age=\"0-1\",source=\"live_map\"} 1".to_owned())
        );
        assert!(reads.contains(
            &"ibex_coin_reads_total{age=\"1001-10000\",source=\"prefetch\"} 2".to_owned()
        ));
        assert!(reads.contains(
            &"ibex_coin_reads_total{age=\"10001+\",source=\"direct_read\"} 0".to_owned()
        ));
        assert_eq!(
            sample_lines(&page, BIP30_LOOKUPS.name),
            [
                "ibex_bip30_lookups_total{answered_by=\"memory\"} 5",
                "ibex_bip30_lookups_total{answered_by=\"database\"} 4"
            ]
        );
    }

    #[test]
    fn database_figures_are_samples_only_when_known() {
        let mut page = Exposition::new();
        render_database(&mut page, None);
        let page = page.finish();
        for family in &FAMILIES[2..] {
            assert!(page.contains(&format!("# TYPE {} ", family.name)), "{}", family.name);
            assert!(sample_lines(&page, family.name).is_empty(), "{}: {page}", family.name);
        }
        let io = CoinsDatabaseIo {
            user_written_bytes: 1 << 30,
            wal_written: GibibyteText::parse("1.00"),
            flush_written: GibibyteText::parse("0.500"),
            compaction_written: GibibyteText::parse("0.50"),
            files_per_level: [Some(3), Some(1), None, None, None, None, None],
            sst_files_bytes: Some(123),
            estimated_keys: Some(77),
            write_stall_seconds: Some(0.5),
            write_stops: Some(3),
            ..CoinsDatabaseIo::default()
        };
        let mut page = Exposition::new();
        render_database(&mut page, Some(&io));
        let page = page.finish();
        assert_eq!(
            sample_lines(&page, DATABASE_IO_BYTES.name),
            [
                "ibex_coins_database_io_bytes_total{kind=\"wal_written\"} 1073741824",
                "ibex_coins_database_io_bytes_total{kind=\"flush_written\"} 536870912",
                "ibex_coins_database_io_bytes_total{kind=\"compaction_written\"} 536870912"
            ]
        );
        assert_eq!(
            sample_lines(&page, WRITE_AMPLIFICATION.name),
            ["ibex_coins_database_write_amplification 2"]
        );
        assert_eq!(
            sample_lines(&page, DATABASE_FILES.name),
            [
                "ibex_coins_database_files{level=\"0\"} 3",
                "ibex_coins_database_files{level=\"1\"} 1"
            ]
        );
        assert_eq!(
            sample_lines(&page, DATABASE_BYTES.name),
            ["ibex_coins_database_bytes{kind=\"sst_files\"} 123"]
        );
        assert_eq!(sample_lines(&page, DATABASE_KEYS.name), ["ibex_coins_database_keys 77"]);
        assert_eq!(
            sample_lines(&page, DATABASE_SECONDS.name),
            ["ibex_coins_database_seconds_total{kind=\"write_stall\"} 0.5"]
        );
        assert_eq!(
            sample_lines(&page, DATABASE_WRITE_STALLS.name),
            ["ibex_coins_database_write_stalls_total{kind=\"stop\"} 3"]
        );
    }
}
