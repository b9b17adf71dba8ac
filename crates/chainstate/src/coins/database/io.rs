//! What RocksDB did with the coins, for measuring before tuning: bytes
//! written to its write-ahead log, by memtable flushes (memtable to level
//! 0) and by compactions, bytes compactions read, time writes stalled, the
//! files and bytes at each level, and its estimates of the live data and
//! the keys; write amplification from them.
//!
//! # Where the figures come from
//! RocksDB's properties only, read when asked (after each coins flush, at
//! shutdown, at each `-metrics` scrape): no `enable_statistics`, whose
//! counters cost every read and write (tickers on per-core slots, several
//! per point read) for figures the properties already keep. The cumulative
//! byte counts exist only in the text properties (`rocksdb.cfstats`,
//! `rocksdb.dbstats`), printed in GiB (RocksDB's "GB" is 2^30 bytes) to
//! two or three decimals: [`GibibyteText`] keeps the printed value and its
//! precision, so a figure is never shown finer than RocksDB gave it. The
//! texts are parsed defensively: a line or field that is not where and
//! what this module expects gives `None` ("unknown"), never a guess or a
//! panic. Files per level, SST sizes and key estimates are integer
//! properties; the bytes written by the chainstate (RocksDB's "user
//! bytes") are counted exactly by [`CoinsDatabase`] itself. Reading
//! `rocksdb.dbstats` restarts its "interval" figures (those of RocksDB's
//! own `LOG` dumps); the cumulative ones read here are untouched.
//!
//! # Napkin math
//! Reading everything takes one text property of ~2 KB per family and
//! ~15 integer properties, each under RocksDB's mutex for microseconds:
//! ~50-100 us, a few times a minute at most.

use super::store::CoinsDatabase;

/// Levels reported: RocksDB's default `num_levels`, which the coins
/// database keeps.
pub const DATABASE_LEVELS: usize = 7;

/// Bytes in RocksDB's "GB".
const GIBIBYTE_BYTES: f64 = (1u64 << 30) as f64;
/// Bytes in RocksDB's "MB".
const MEBIBYTE_BYTES: u64 = 1 << 20;
/// Largest figure believed, in GiB (a petabyte and a bit): anything
/// larger is a misparse.
const GIBIBYTES_BELIEVABLE_MAX: f64 = 1e6;
/// Most decimals believed in a GiB figure (RocksDB prints two or three).
const DECIMALS_MAX: u32 = 9;

/// A byte count RocksDB printed in GiB with `decimals` decimals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GibibyteText {
    /// The printed value, in GiB.
    pub gibibytes: f64,
    /// Decimals printed: the true value is within half a unit of the last.
    pub decimals: u32,
}

impl GibibyteText {
    /// Parses a plain decimal number (`0.123`); `None` for anything else.
    pub fn parse(text: &str) -> Option<GibibyteText> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(fraction) {
            return None;
        }
        let decimals = u32::try_from(fraction.len()).ok().filter(|&count| count <= DECIMALS_MAX)?;
        let gibibytes: f64 = text.parse().ok()?;
        (gibibytes.is_finite() && gibibytes <= GIBIBYTES_BELIEVABLE_MAX)
            .then_some(GibibyteText { gibibytes, decimals })
    }

    /// The value in bytes.
    pub fn bytes(&self) -> u64 {
        (self.gibibytes * GIBIBYTE_BYTES).round() as u64
    }

    /// How far the true value may be from [`Self::bytes`]: half of the
    /// last printed digit.
    pub fn error_bytes(&self) -> u64 {
        (GIBIBYTE_BYTES / 10f64.powi(self.decimals as i32) / 2.0).ceil() as u64
    }
}

impl std::fmt::Display for GibibyteText {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{:.*} GiB", self.decimals as usize, self.gibibytes)
    }
}

/// Write amplification and how uncertain it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteAmplification {
    /// Bytes RocksDB wrote (log, flushes, compactions) per byte written to it.
    pub ratio: f64,
    /// The ratio is within this of the true one (RocksDB's rounding).
    pub error: f64,
}

/// The coins database's I/O since it was opened, and its shape now.
/// `None` fields are unknown (RocksDB did not say, or not in a form this
/// module reads).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CoinsDatabaseIo {
    /// Bytes of the write batches the chainstate wrote (exact).
    pub user_written_bytes: u64,
    /// Written to the write-ahead log.
    pub wal_written: Option<GibibyteText>,
    /// Written by memtable flushes (new level-0 files).
    pub flush_written: Option<GibibyteText>,
    /// Written by compactions.
    pub compaction_written: Option<GibibyteText>,
    /// Read by compactions.
    pub compaction_read: Option<GibibyteText>,
    /// Time compactions took, seconds (added up over threads).
    pub compaction_seconds: Option<f64>,
    /// Time writes were stalled or slowed down by RocksDB, seconds.
    pub write_stall_seconds: Option<f64>,
    /// Times writes were stopped (a full set of memtables, too many
    /// level-0 files or too much compaction debt).
    pub write_stops: Option<u64>,
    /// Times writes were slowed down for the same reasons.
    pub write_slowdowns: Option<u64>,
    /// SST files at each level.
    pub files_per_level: [Option<u64>; DATABASE_LEVELS],
    /// Bytes of each level's files (to the MiB RocksDB prints).
    pub level_bytes: [Option<u64>; DATABASE_LEVELS],
    /// Bytes of every SST file, obsolete ones not yet deleted included.
    pub sst_files_bytes: Option<u64>,
    /// Bytes of the SST files of the current version.
    pub live_sst_files_bytes: Option<u64>,
    /// RocksDB's estimate of the live data (what a full compaction keeps).
    pub live_data_bytes: Option<u64>,
    /// RocksDB's estimate of the keys (coins and two records).
    pub estimated_keys: Option<u64>,
    /// Whether a compaction is due.
    pub compaction_pending: Option<bool>,
    /// RocksDB's estimate of the bytes compactions must rewrite to bring
    /// every level under its target.
    pub pending_compaction_bytes: Option<u64>,
    /// Bytes of the memtables, the one being filled and those waiting to
    /// be flushed.
    pub memtable_bytes: Option<u64>,
}

impl CoinsDatabaseIo {
    /// `(WAL + flush + compaction writes) / user bytes`; `None` when
    /// nothing was written or a term is unknown.
    pub fn write_amplification(&self) -> Option<WriteAmplification> {
        if self.user_written_bytes == 0 {
            return None;
        }
        let terms = [self.wal_written?, self.flush_written?, self.compaction_written?];
        let written: u64 = terms.iter().map(GibibyteText::bytes).sum();
        let error: u64 = terms.iter().map(GibibyteText::error_bytes).sum();
        let user = self.user_written_bytes as f64;
        Some(WriteAmplification { ratio: written as f64 / user, error: error as f64 / user })
    }

    /// SST files at every level; `None` if a level is unknown.
    pub fn sst_file_count(&self) -> Option<u64> {
        self.files_per_level.iter().copied().sum()
    }
}

impl CoinsDatabase {
    /// The database's I/O and shape now, from RocksDB's properties (see
    /// the module docs).
    pub fn io(&self) -> CoinsDatabaseIo {
        let column_family = self.property_text("rocksdb.cfstats-no-file-histogram");
        let database = self.property_text("rocksdb.dbstats");
        let levels = self.property_text("rocksdb.levelstats");
        let compaction = column_family.as_deref().and_then(parse_compaction);
        let integer = |name: &str| self.property_integer(name);
        let mut files_per_level = [None; DATABASE_LEVELS];
        for (level, files) in files_per_level.iter_mut().enumerate() {
            *files = integer(&format!("rocksdb.num-files-at-level{level}"));
        }
        CoinsDatabaseIo {
            user_written_bytes: self.written_bytes(),
            wal_written: database.as_deref().and_then(parse_wal_written),
            flush_written: column_family.as_deref().and_then(parse_flush_written),
            compaction_written: compaction.and_then(|totals| totals.written),
            compaction_read: compaction.and_then(|totals| totals.read),
            compaction_seconds: compaction.and_then(|totals| totals.seconds),
            write_stall_seconds: database.as_deref().and_then(parse_write_stall_seconds),
            write_stops: column_family
                .as_deref()
                .and_then(|text| parse_stall_count(text, "total-stops")),
            write_slowdowns: column_family
                .as_deref()
                .and_then(|text| parse_stall_count(text, "total-delays")),
            files_per_level,
            level_bytes: levels.as_deref().map_or([None; DATABASE_LEVELS], parse_level_bytes),
            sst_files_bytes: integer("rocksdb.total-sst-files-size"),
            live_sst_files_bytes: integer("rocksdb.live-sst-files-size"),
            live_data_bytes: integer("rocksdb.estimate-live-data-size"),
            estimated_keys: integer("rocksdb.estimate-num-keys"),
            compaction_pending: integer("rocksdb.compaction-pending").map(|pending| pending != 0),
            pending_compaction_bytes: integer("rocksdb.estimate-pending-compaction-bytes"),
            memtable_bytes: integer("rocksdb.cur-size-all-mem-tables"),
        }
    }
}

/// The rest of the first line of `text` that starts (after spaces) with
/// `prefix`.
fn line_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find_map(|line| line.trim_start().strip_prefix(prefix))
}

/// The fields of a line's rest: RocksDB separates them with `, `.
fn fields(rest: &str) -> impl Iterator<Item = &str> {
    rest.split(", ").map(str::trim)
}

/// The number of the field of `rest` written as `<number><suffix>`.
fn field_before<'a>(rest: &'a str, suffix: &str) -> Option<&'a str> {
    fields(rest).find_map(|field| field.strip_suffix(suffix))
}

/// `Flush(GB): cumulative 0.123, interval 0.000`.
fn parse_flush_written(column_family: &str) -> Option<GibibyteText> {
    let rest = line_after(column_family, "Flush(GB): cumulative ")?;
    let mut parts = fields(rest);
    let cumulative = parts.next()?;
    parts.next()?.starts_with("interval ").then_some(())?;
    GibibyteText::parse(cumulative)
}

/// A compaction line's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CompactionTotals {
    written: Option<GibibyteText>,
    read: Option<GibibyteText>,
    seconds: Option<f64>,
}

/// `Cumulative compaction: 0.12 GB write, 1.00 MB/s write, 0.10 GB read,
/// 0.50 MB/s read, 1.2 seconds`.
fn parse_compaction(column_family: &str) -> Option<CompactionTotals> {
    let rest = line_after(column_family, "Cumulative compaction: ")?;
    Some(CompactionTotals {
        written: field_before(rest, " GB write").and_then(GibibyteText::parse),
        read: field_before(rest, " GB read").and_then(GibibyteText::parse),
        seconds: field_before(rest, " seconds").and_then(parse_seconds),
    })
}

/// A non-negative, finite number of seconds.
fn parse_seconds(text: &str) -> Option<f64> {
    let seconds: f64 = text.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then_some(seconds)
}

/// `Cumulative WAL: 12 writes, 0 syncs, 12.00 writes per sync, written:
/// 0.12 GB, 0.01 MB/s`.
fn parse_wal_written(database: &str) -> Option<GibibyteText> {
    let rest = line_after(database, "Cumulative WAL: ")?;
    let written = fields(rest).find_map(|field| field.strip_prefix("written: "))?;
    GibibyteText::parse(written.strip_suffix(" GB")?)
}

/// `Cumulative stall: 00:00:1.500 H:M:S, 0.1 percent`.
fn parse_write_stall_seconds(database: &str) -> Option<f64> {
    let rest = line_after(database, "Cumulative stall: ")?;
    let clock = fields(rest).next()?.strip_suffix(" H:M:S")?;
    let mut parts = clock.split(':');
    let hours: u64 = parts.next()?.parse().ok()?;
    let minutes: u64 = parts.next()?.parse().ok()?;
    let seconds = parse_seconds(parts.next()?)?;
    if parts.next().is_some() || minutes >= 60 || seconds >= 60.0 {
        return None;
    }
    Some((hours * 3_600 + minutes * 60) as f64 + seconds)
}

/// The count `name` of `Write Stall (count): memtable-limit-stops: 15,
/// ..., total-delays: 0, total-stops: 15`.
fn parse_stall_count(column_family: &str, name: &str) -> Option<u64> {
    let rest = line_after(column_family, "Write Stall (count): ")?;
    let count = fields(rest).find_map(|field| field.strip_prefix(name)?.strip_prefix(": "))?;
    count.parse().ok()
}

/// `rocksdb.levelstats`: a `Level Files Size(MB)` header, a rule, then
/// `level files mebibytes` a line.
fn parse_level_bytes(levels: &str) -> [Option<u64>; DATABASE_LEVELS] {
    let mut bytes = [None; DATABASE_LEVELS];
    let is_header = |line: &str| line.split_whitespace().eq(["Level", "Files", "Size(MB)"]);
    let mut lines = levels.lines();
    if !lines.any(is_header) {
        return bytes;
    }
    for line in lines {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [level, _files, mebibytes] = fields[..] else { continue };
        let (Ok(level), Ok(mebibytes)) = (level.parse::<usize>(), mebibytes.parse::<u64>()) else {
            continue;
        };
        if let Some(slot) = bytes.get_mut(level) {
            *slot = mebibytes.checked_mul(MEBIBYTE_BYTES);
        }
    }
    bytes
}

#[cfg(test)]
mod tests;
