//! Bitcoin Core's `debug.log`: one line per message, `2011-02-02T23:16:42Z
//! message` (UTC, whole seconds), appended to `<chain dir>/debug.log` and,
//! with `-printtoconsole`, written to standard output too; plus Core's
//! `UpdateTip` line and its verification-progress estimate.
//!
//! Every line is flushed as it is written, like Core's unbuffered log: a
//! crash loses none, and a line costs one `write` (about a microsecond; the
//! ~900k `UpdateTip` lines of a mainnet sync add up to about a second).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use ibex_primitives::params::Network;
use ibex_primitives::BlockHash;

use crate::options::NodeOptions;

/// Core keeps this many bytes of the log's end when it shrinks it
/// (`RECENT_DEBUG_HISTORY_SIZE`).
pub const LOG_SHRINK_KEEP_BYTES: u64 = 10_000_000;
/// Core shrinks the log at startup once it is 10% over the bytes it keeps.
pub const LOG_SHRINK_THRESHOLD_BYTES: u64 = LOG_SHRINK_KEEP_BYTES / 10 * 11;

/// The log could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// The chain directory (or the log's directory) could not be created.
    #[error("cannot create directory {}: {source}", .path.display())]
    CreateDirectory {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The log file could not be opened at start (its directory is missing,
    /// say: Core refuses to start with the same words, and creates no
    /// directory for it either).
    #[error("Could not open debug log file {}: {source}", .path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The log file could not be shrunk or written.
    #[error("cannot write log file {}: {source}", .path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

struct LogFile {
    path: PathBuf,
    writer: BufWriter<File>,
}

struct LoggerState {
    file: Mutex<Option<LogFile>>,
    print_to_console: bool,
    reopen_requested: Arc<AtomicBool>,
    /// `-logtimemicros`: timestamps with microseconds.
    time_micros: AtomicBool,
}

/// Core's logger: cheap to clone, shareable between threads.
#[derive(Clone)]
pub struct Logger {
    state: Arc<LoggerState>,
}

impl std::fmt::Debug for Logger {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Logger")
            .field("print_to_console", &self.state.print_to_console)
            .finish_non_exhaustive()
    }
}

fn open_append(path: &Path) -> Result<BufWriter<File>, LogError> {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| LogError::File { path: path.to_owned(), source })?;
    Ok(BufWriter::new(file))
}

fn create_directory(path: &Path) -> Result<(), LogError> {
    std::fs::create_dir_all(path)
        .map_err(|source| LogError::CreateDirectory { path: path.to_owned(), source })
}

impl Logger {
    /// Creates the chain directory and opens the log as `options` say:
    /// shrunk first if `-shrinkdebugfile` and too big, then appended to,
    /// starting with Core's five blank lines that set this run apart.
    pub fn open(options: &NodeOptions) -> Result<Logger, LogError> {
        create_directory(&options.chain_directory)?;
        let logger = Logger::open_file(
            options.debug_log_file.as_deref(),
            options.print_to_console,
            options.shrink_debug_log,
        )?;
        logger.set_time_micros(options.log_time_micros);
        Ok(logger)
    }

    /// Core's `-logtimemicros`: stamps lines `...T22:10:43.123456Z`.
    pub fn set_time_micros(&self, on: bool) {
        self.state.time_micros.store(on, Ordering::Relaxed);
    }

    /// Opens a logger on `path` (none: console only).
    pub fn open_file(
        path: Option<&Path>,
        print_to_console: bool,
        shrink: bool,
    ) -> Result<Logger, LogError> {
        let file = match path {
            None => None,
            Some(path) => {
                // The file's directory must exist (`-debuglogfile` may name
                // any path): as Core's `StartLogging`, none is created.
                if shrink {
                    shrink_log_file(path)
                        .map_err(|source| LogError::File { path: path.to_owned(), source })?;
                }
                let mut writer = open_append(path).map_err(|error| match error {
                    LogError::File { path, source } => LogError::Open { path, source },
                    other => other,
                })?;
                writer
                    .write_all(b"\n\n\n\n\n")
                    .and_then(|()| writer.flush())
                    .map_err(|source| LogError::File { path: path.to_owned(), source })?;
                Some(LogFile { path: path.to_owned(), writer })
            }
        };
        let state = LoggerState {
            file: Mutex::new(file),
            print_to_console,
            reopen_requested: Arc::new(AtomicBool::new(false)),
            time_micros: AtomicBool::new(false),
        };
        Ok(Logger { state: Arc::new(state) })
    }

    fn file(&self) -> MutexGuard<'_, Option<LogFile>> {
        // A panic while logging leaves the file usable: take it back.
        self.state.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes `message` with the current UTC time. A failing write is
    /// dropped, as Core drops it: logging never stops the node.
    pub fn log(&self, message: &str) {
        let line = if self.state.time_micros.load(Ordering::Relaxed) {
            format_log_line_micros(unix_time_micros(), message)
        } else {
            format_log_line(unix_time_seconds(), message)
        };
        let mut file = self.file();
        if self.state.reopen_requested.swap(false, Ordering::AcqRel) {
            if let Some(current) = file.as_mut() {
                // Core's SIGHUP: reopen, so that log rotation works.
                if let Ok(writer) = open_append(&current.path) {
                    let _ = current.writer.flush();
                    current.writer = writer;
                }
            }
        }
        if let Some(current) = file.as_mut() {
            let _ = current.writer.write_all(line.as_bytes()).and_then(|()| current.writer.flush());
        }
        if self.state.print_to_console {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(line.as_bytes()).and_then(|()| stdout.flush());
        }
    }

    /// Flushes the file.
    pub fn flush(&self) -> Result<(), LogError> {
        match self.file().as_mut() {
            Some(current) => current
                .writer
                .flush()
                .map_err(|source| LogError::File { path: current.path.clone(), source }),
            None => Ok(()),
        }
    }

    /// The flag that makes the next message reopen the file (set it from
    /// SIGHUP: [`crate::signals::register_log_reopen`]).
    pub fn reopen_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.state.reopen_requested)
    }

    /// The log file, if there is one.
    pub fn path(&self) -> Option<PathBuf> {
        self.file().as_ref().map(|current| current.path.clone())
    }
}

/// Core's `ShrinkDebugFile`: past [`LOG_SHRINK_THRESHOLD_BYTES`], keep only
/// the last [`LOG_SHRINK_KEEP_BYTES`].
pub fn shrink_log_file(path: &Path) -> std::io::Result<()> {
    let Ok(metadata) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !metadata.is_file() || metadata.len() <= LOG_SHRINK_THRESHOLD_BYTES {
        return Ok(());
    }
    let mut file = File::open(path)?;
    file.seek(SeekFrom::End(-(LOG_SHRINK_KEEP_BYTES as i64)))?;
    let mut tail = Vec::with_capacity(LOG_SHRINK_KEEP_BYTES as usize);
    file.take(LOG_SHRINK_KEEP_BYTES).read_to_end(&mut tail)?;
    std::fs::write(path, tail)
}

fn unix_time_seconds() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(elapsed) => i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

fn unix_time_micros() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(elapsed) => i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

/// [`format_log_line`] with microseconds (`-logtimemicros`): Core puts
/// `.ffffff` between the seconds and the `Z`.
pub fn format_log_line_micros(unix_micros: i64, message: &str) -> String {
    let message = message.strip_suffix('\n').unwrap_or(message);
    let stamp = format_iso8601(unix_micros.div_euclid(1_000_000));
    let stamp = stamp.strip_suffix('Z').unwrap_or(&stamp);
    format!("{stamp}.{:06}Z {message}\n", unix_micros.rem_euclid(1_000_000))
}

/// One log line: timestamp, space, message, newline (one newline at the end
/// of `message` is not doubled).
pub fn format_log_line(unix_seconds: i64, message: &str) -> String {
    let message = message.strip_suffix('\n').unwrap_or(message);
    format!("{} {message}\n", format_iso8601(unix_seconds))
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Core's `FormatISO8601DateTime`: `YYYY-MM-DDTHH:MM:SSZ`, UTC.
pub fn format_iso8601(unix_seconds: i64) -> String {
    let (year, month, day) = civil_from_days(unix_seconds.div_euclid(86_400));
    let second_of_day = unix_seconds.rem_euclid(86_400);
    let (hour, minute, second) =
        (second_of_day / 3600, second_of_day / 60 % 60, second_of_day % 60);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

/// What Core's `UpdateTipLog` prints for a new tip.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateTipFields {
    /// The tip's hash.
    pub block_hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Its header version (printed as the hex of its bits).
    pub version: i32,
    /// log2 of the chain work (`ChainWork::log2`).
    pub log2_work: f64,
    /// Transactions in the chain up to and including the tip.
    pub chain_transaction_count: u64,
    /// The tip's header time.
    pub block_time: u32,
    /// [`verification_progress`].
    pub progress: f64,
    /// Memory the coins cache uses, bytes.
    pub cache_bytes: u64,
    /// Coins in the cache.
    pub cache_coins: u64,
    /// Warnings Core appends (unknown rules activated); usually none.
    pub warnings: Vec<String>,
}

/// Core v30's `UpdateTip: new best=...` line (without timestamp).
pub fn format_update_tip(fields: &UpdateTipFields) -> String {
    let warning = if fields.warnings.is_empty() {
        String::new()
    } else {
        format!(" warning='{}'", fields.warnings.join(", "))
    };
    format!(
        "UpdateTip: new best={} height={} version=0x{:08x} log2_work={:.6} tx={} date='{}' progress={:.6} cache={:.1}MiB({}txo){warning}",
        fields.block_hash,
        fields.height,
        fields.version as u32,
        fields.log2_work,
        fields.chain_transaction_count,
        format_iso8601(i64::from(fields.block_time)),
        fields.progress,
        fields.cache_bytes as f64 / (1024.0 * 1024.0),
        fields.cache_coins,
    )
}

/// A chain's transaction statistics at a recent block (Core's `ChainTxData`
/// in `kernel/chainparams.cpp`), for estimating progress.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainTransactionData {
    /// Unix time of the block the statistics are for.
    pub time: i64,
    /// Transactions in the chain up to that block.
    pub transaction_count: u64,
    /// Transactions per second since.
    pub transactions_per_second: f64,
}

impl ChainTransactionData {
    /// Core v30's values. Regtest's rate is not zero but 0.001 ("to make it
    /// testable"), which is why Core logs `progress=0.000002` for regtest's
    /// 2011 genesis block: 1 / (1 + 0.001 x ~5e8 seconds since).
    pub const fn for_network(network: Network) -> ChainTransactionData {
        let (time, transaction_count, transactions_per_second) = match network {
            Network::Main => (1_756_722_903, 1_235_299_397, 5.456290459519495),
            Network::Testnet3 => (1_751_816_758, 508_468_699, 7.172978845985714),
            Network::Testnet4 => (1_752_470_331, 11_414_302, 0.2842619757327476),
            Network::Signet => (1_756_723_017, 26_185_472, 0.7452721495389969),
            Network::Regtest => (0, 0, 0.001),
        };
        ChainTransactionData { time, transaction_count, transactions_per_second }
    }
}

/// Core's `GuessVerificationProgress`: transactions so far over the
/// transactions expected by now, at most 1. Below the statistics' block the
/// total is its count plus the rate since its time; past it, this chain's
/// count plus the rate since `block_time`.
pub fn verification_progress(
    chain_transaction_count: u64,
    block_time: u32,
    now_seconds: i64,
    data: &ChainTransactionData,
) -> f64 {
    progress_from_reference_time(chain_transaction_count, i64::from(block_time), now_seconds, data)
}

/// The tip and the best header's heights, for [`verification_progress_near_tip`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TipHeights {
    /// The tip block's height.
    pub height: u32,
    /// The best known header's height (at least the tip's).
    pub best_header_height: u32,
}

/// Core v30's refinement: when the tip's time is within two hours of now and
/// the headers go at least as far, the time it counts from is `now` minus
/// the missing blocks' expected spacing, so that progress reaches exactly
/// 1.0 at the tip whatever time the miner wrote.
pub fn verification_progress_near_tip(
    chain_transaction_count: u64,
    block_time: u32,
    heights: TipHeights,
    target_spacing_seconds: i64,
    now_seconds: i64,
    data: &ChainTransactionData,
) -> f64 {
    const RECENT_SECONDS: i64 = 2 * 60 * 60;
    let block_time = i64::from(block_time);
    let reference_time = if (now_seconds - block_time).abs() <= RECENT_SECONDS
        && heights.best_header_height >= heights.height
    {
        let missing = i64::from(heights.best_header_height - heights.height);
        now_seconds - missing * target_spacing_seconds
    } else {
        block_time
    };
    progress_from_reference_time(chain_transaction_count, reference_time, now_seconds, data)
}

fn progress_from_reference_time(
    chain_transaction_count: u64,
    reference_time: i64,
    now_seconds: i64,
    data: &ChainTransactionData,
) -> f64 {
    if chain_transaction_count == 0 {
        return 0.0;
    }
    let total = if chain_transaction_count <= data.transaction_count {
        data.transaction_count as f64
            + (now_seconds - data.time) as f64 * data.transactions_per_second
    } else {
        chain_transaction_count as f64
            + (now_seconds - reference_time) as f64 * data.transactions_per_second
    };
    (chain_transaction_count as f64 / total).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::pow::block_proof;
    use ibex_primitives::{ChainWork, CompactTarget};

    /// Inverse of `format_iso8601`, for the tests (Hinnant's
    /// `days_from_civil`).
    fn parse_iso8601(text: &str) -> i64 {
        let number = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
        let (year, month, day) = (number(0..4), number(5..7), number(8..10));
        let year = if month <= 2 { year - 1 } else { year };
        let era = year.div_euclid(400);
        let year_of_era = year - era * 400;
        let shifted_month = if month > 2 { month - 3 } else { month + 9 };
        let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
        let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
        let days = era * 146_097 + day_of_era - 719_468;
        days * 86_400 + number(11..13) * 3600 + number(14..16) * 60 + number(17..19)
    }

    #[test]
    fn timestamps_at_known_instants() {
        assert_eq!(format_iso8601(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_iso8601(1_296_688_602), "2011-02-02T23:16:42Z");
        assert_eq!(format_iso8601(1_231_006_505), "2009-01-03T18:15:05Z");
        assert_eq!(format_iso8601(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_iso8601(4_107_542_399), "2100-02-28T23:59:59Z");
        assert_eq!(format_iso8601(4_107_542_400), "2100-03-01T00:00:00Z");
        assert_eq!(format_iso8601(-1), "1969-12-31T23:59:59Z");
        for seconds in [0, 59, 86_399, 951_868_799, 1_795_316_328, 4_294_967_295] {
            assert_eq!(parse_iso8601(&format_iso8601(seconds)), seconds);
        }
        assert_eq!(format_log_line(1_296_688_602, "hello\n"), "2011-02-02T23:16:42Z hello\n");
        assert_eq!(
            format_log_line_micros(1_296_688_602_000_042, "hello"),
            "2011-02-02T23:16:42.000042Z hello\n"
        );
        assert_eq!(format_log_line_micros(-1, "x"), "1969-12-31T23:59:59.999999Z x\n");
    }

    /// Every `UpdateTip` line of Core's regtest log rebuilt from its fields:
    /// log2_work from regtest's per-block work, progress from Core's formula
    /// at the line's own timestamp, date from the block time.
    #[test]
    fn update_tip_lines_match_core_sample() {
        let path = PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR")
                .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
        )
        .join("../../../shared/chains/core-wallet-mix/debug-sample.log");
        let sample = std::fs::read_to_string(path).unwrap();
        let regtest = ChainTransactionData::for_network(Network::Regtest);
        let proof = block_proof(CompactTarget(0x207f_ffff));
        let mut checked = 0;
        for line in sample.lines().map(|line| line.trim_start_matches("[*] ")) {
            let Some((stamp, message)) = line.split_once(' ') else { continue };
            if !message.starts_with("UpdateTip:") {
                continue;
            }
            let field = |name: &str| {
                let start = message.find(&format!(" {name}=")).unwrap() + name.len() + 2;
                message[start..].split(' ').next().unwrap()
            };
            let height: u32 = field("height").parse().unwrap();
            let date = field("date").trim_matches('\'');
            let cache = field("cache");
            let (mebibytes, coins) = cache.split_once("MiB(").unwrap();
            let mut chain_work = ChainWork::ZERO;
            for _ in 0..=height {
                chain_work = chain_work.wrapping_add(proof);
            }
            let chain_transaction_count: u64 = field("tx").parse().unwrap();
            let block_time = u32::try_from(parse_iso8601(date)).unwrap();
            let now = parse_iso8601(stamp);
            let fields = UpdateTipFields {
                block_hash: BlockHash::from_hex(field("best")).unwrap(),
                height,
                version: u32::from_str_radix(&field("version")[2..], 16).unwrap() as i32,
                log2_work: chain_work.log2(),
                chain_transaction_count,
                block_time,
                progress: verification_progress(chain_transaction_count, block_time, now, &regtest),
                cache_bytes: (mebibytes.parse::<f64>().unwrap() * 1_048_576.0) as u64,
                cache_coins: coins.trim_end_matches("txo)").parse().unwrap(),
                warnings: Vec::new(),
            };
            assert_eq!(format_update_tip(&fields), message, "line {line}");
            assert_eq!(format_log_line(now, &format_update_tip(&fields)), format!("{line}\n"));
            checked += 1;
        }
        assert_eq!(checked, 201);
    }

    #[test]
    fn update_tip_version_and_warnings() {
        let fields = UpdateTipFields {
            block_hash: BlockHash::ZERO,
            height: 7,
            version: -1,
            log2_work: 0.5,
            chain_transaction_count: 9,
            block_time: 0,
            progress: 0.25,
            cache_bytes: 3 * 1024 * 1024 / 2,
            cache_coins: 4,
            warnings: vec!["a".into(), "b".into()],
        };
        let line = format_update_tip(&fields);
        assert!(line.contains(" version=0xffffffff "), "{line}");
        assert!(line.contains(" cache=1.5MiB(4txo) warning='a, b'"), "{line}");
        assert!(line.contains(" date='1970-01-01T00:00:00Z' progress=0.250000 "), "{line}");
    }

    #[test]
    fn progress_like_core() {
        let regtest = ChainTransactionData::for_network(Network::Regtest);
        // Regtest genesis logged at 2026-11-22T03:12:08Z: Core's 0.000002.
        let now = parse_iso8601("2026-11-22T03:12:08Z");
        let genesis = verification_progress(1, 1_296_688_602, now, &regtest);
        assert_eq!(format!("{genesis:.6}"), "0.000002");
        assert_eq!(verification_progress(0, 0, now, &regtest), 0.0);
        // Mainnet below the statistics' block: count over statistics' total.
        let main = ChainTransactionData::for_network(Network::Main);
        let expected = 1_000.0 / (main.transaction_count as f64);
        assert_eq!(verification_progress(1_000, 0, main.time, &main), expected);
        // Past them: one day behind at 5.46 tx/s.
        let count = main.transaction_count + 1;
        let day_old = verification_progress(count, 0, 86_400, &main);
        let expected = count as f64 / (count as f64 + 86_400.0 * main.transactions_per_second);
        assert_eq!(day_old, expected);
        // Near the tip with all headers: exactly 1 whatever the block time.
        let heights = TipHeights { height: 10, best_header_height: 10 };
        let near = verification_progress_near_tip(20, 100, heights, 600, 1_000, &regtest);
        assert_eq!(near, 1.0);
        // Two blocks short: counted from 1,200 seconds ago.
        let heights = TipHeights { height: 8, best_header_height: 10 };
        let near = verification_progress_near_tip(20, 100, heights, 600, 1_000, &regtest);
        assert_eq!(near, 20.0 / (20.0 + 1.2));
    }

    #[test]
    fn logger_appends_timestamped_lines_and_reopens() {
        let directory = tempfile::tempdir().unwrap();
        let missing = directory.path().join("sub/debug.log");
        let error = Logger::open_file(Some(&missing), false, true).unwrap_err();
        assert!(matches!(error, LogError::Open { .. }), "{error}");
        assert!(!directory.path().join("sub").exists(), "no directory is created for the log");
        let path = directory.path().join("debug.log");
        let logger = Logger::open_file(Some(&path), false, true).unwrap();
        let clone = logger.clone();
        std::thread::spawn(move || clone.log("from a thread")).join().unwrap();
        logger.log("second\n");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("\n\n\n\n\n"));
        let lines: Vec<&str> = text.trim_start_matches('\n').lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].ends_with("Z from a thread"));
        assert_eq!(parse_iso8601(lines[1]) / 1_000_000_000, unix_time_seconds() / 1_000_000_000);
        // Rotation: move the file away, raise the flag, log again.
        let rotated = directory.path().join("rotated.log");
        std::fs::rename(&path, &rotated).unwrap();
        logger.reopen_flag().store(true, Ordering::Release);
        logger.log("after rotation");
        logger.flush().unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("Z after rotation\n"));
        assert_eq!(logger.path(), Some(path));
    }

    #[test]
    fn shrinking_keeps_the_tail() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("debug.log");
        let small = vec![b'a'; 1000];
        std::fs::write(&path, &small).unwrap();
        shrink_log_file(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), small);
        let mut big = vec![b'x'; (LOG_SHRINK_THRESHOLD_BYTES + 1 - 3) as usize];
        big.extend_from_slice(b"end");
        std::fs::write(&path, &big).unwrap();
        shrink_log_file(&path).unwrap();
        let kept = std::fs::read(&path).unwrap();
        assert_eq!(kept.len() as u64, LOG_SHRINK_KEEP_BYTES);
        assert!(kept.ends_with(b"end"));
    }
}
