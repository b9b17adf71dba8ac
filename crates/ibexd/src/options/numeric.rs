//! The numeric options (`-dbcache`, `-par`, `-stopatheight`, ...) read as
//! Bitcoin Core 30 reads them, with a word in the log whenever the value
//! used is not the value given.
//!
//! Core converts every number with `LocaleIndependentAtoi` (`SettingToInt`
//! in `src/common/args.cpp`): the leading digits, 0 when there are none, no
//! error. It then clamps silently: `-dbcache` to at least 4 MiB
//! (`CalculateDbCacheBytes`, `src/node/caches.cpp`), the script workers of
//! `-par` to 0..=15 (`ApplyArgsManOptions`,
//! `src/node/chainstatemanager_args.cpp`); a negative `-stopatheight` is
//! kept, and every height reaches it (`KernelNotifications::blockTip`,
//! `src/node/kernel_notifications.cpp`). Core refuses none of these values,
//! so neither does Ibex; but each time Core would change or reinterpret a
//! value without a word, Ibex logs a [`ConfigWarning`] naming the option,
//! the value given and the value used. Core's own warning for a `-dbcache`
//! too large for the machine's memory (`LogOversizedDbCache`) is kept.

use super::defaults::{
    DBCACHE_MEBIBYTES_MAX, DBCACHE_MEBIBYTES_MIN, MEBIBYTE, PROGRESS_INTERVAL_MS_DEFAULT,
    PROGRESS_INTERVAL_MS_MIN, SCRIPT_CHECK_WORKER_THREADS_MAX,
};
use super::error::{ConfigError, ConfigWarning};
use super::given::GivenValue;
use ibex_chainstate::{PruneMode, PRUNE_TARGET_BYTES_MIN};
/// Below this much memory Core warns above its default `-dbcache`, above it
/// at 75 % of the memory (`ShouldWarnOversizedDbCache`).
const SMALL_MEMORY_BYTES: u64 = 2 << 30;
/// Core's `DEFAULT_DB_CACHE`, the warning threshold on small machines.
const SMALL_MEMORY_DBCACHE_BYTES_MAX: u64 = 450 * MEBIBYTE;

/// The number of `name` (or `default` when not given), with a warning when
/// the text is not a whole number.
pub fn read_integer(
    name: &'static str,
    given: Option<&GivenValue>,
    default: i64,
    warnings: &mut Vec<ConfigWarning>,
) -> i64 {
    let Some(given) = given else { return default };
    warn_unless_whole(name, given, warnings);
    given.read
}

fn warn_unless_whole(name: &'static str, given: &GivenValue, warnings: &mut Vec<ConfigWarning>) {
    if !given.is_whole_number() {
        warnings.push(ConfigWarning::NotANumber { name, value: given.clone() });
    }
}

/// `-dbcache` in MiB: Core's `CalculateDbCacheBytes` (negative is 0, then
/// at least [`DBCACHE_MEBIBYTES_MIN`]), and Ibex's ceiling of
/// [`DBCACHE_MEBIBYTES_MAX`]; a warning whenever the value changes.
pub fn dbcache_mebibytes(
    given: Option<&GivenValue>,
    default: u64,
    warnings: &mut Vec<ConfigWarning>,
) -> u64 {
    let Some(given) = given else { return default };
    let requested = u64::try_from(given.read.max(0)).unwrap_or(0);
    let used = requested.clamp(DBCACHE_MEBIBYTES_MIN, DBCACHE_MEBIBYTES_MAX);
    if i128::from(used) > i128::from(given.read) {
        warnings.push(ConfigWarning::DbcacheBelowMinimum {
            value: given.clone(),
            used_mebibytes: used,
        });
    } else if i128::from(used) < i128::from(given.read) {
        warnings.push(ConfigWarning::DbcacheAboveMaximum {
            value: given.clone(),
            used_mebibytes: used,
        });
    } else {
        warn_unless_whole("dbcache", given, warnings);
    }
    used
}

/// Core's `ShouldWarnOversizedDbCache`: above its default on a machine with
/// less than 2 GiB of memory, above 75 % of the memory otherwise.
pub fn dbcache_is_oversized(dbcache_mebibytes: u64, memory_bytes: u64) -> bool {
    let cap_bytes = if memory_bytes < SMALL_MEMORY_BYTES {
        SMALL_MEMORY_DBCACHE_BYTES_MAX
    } else {
        (memory_bytes / 100) * 75
    };
    dbcache_mebibytes.saturating_mul(MEBIBYTE) > cap_bytes
}

/// Core's `LogOversizedDbCache` warning, when the machine's memory is known
/// and `dbcache_mebibytes` is too large for it.
pub fn oversized_dbcache_warning(
    dbcache_mebibytes: u64,
    memory_bytes: Option<u64>,
) -> Option<ConfigWarning> {
    let memory_bytes = memory_bytes?;
    dbcache_is_oversized(dbcache_mebibytes, memory_bytes).then_some(
        ConfigWarning::DbcacheOversized {
            dbcache_mebibytes,
            memory_mebibytes: memory_bytes / MEBIBYTE,
        },
    )
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`, what Core's
/// `GetTotalRAM` reads through `sysinfo`); `None` where there is no such
/// file, and Core's warning is then not given, as on the platforms Core
/// cannot measure.
pub fn total_memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_memory_total(&meminfo)
}

/// `MemTotal:  16314832 kB` in `/proc/meminfo`'s text, in bytes.
fn parse_memory_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find_map(|line| line.strip_prefix("MemTotal:"))?;
    let kibibytes: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kibibytes.checked_mul(1024)
}

/// Core's `-par` arithmetic: 0 means every core, `-n` leaves `n` free; the
/// main thread counts, and the workers besides it are clamped to 0..=15.
/// Returns the total, main thread included (1..=16).
pub fn script_threads_from_par(par: i64, cores: usize) -> usize {
    // Core stores the option in an `int`.
    let mut threads = i64::from(par as i32);
    if threads <= 0 {
        threads += i64::try_from(cores).unwrap_or(i64::MAX);
    }
    let workers = (threads - 1).clamp(0, SCRIPT_CHECK_WORKER_THREADS_MAX as i64);
    workers as usize + 1
}

/// The threads `-par` asks for on `cores` cores before any clamping (may be
/// 0 or less, or more than allowed).
fn requested_script_threads(par: i64, cores: usize) -> i128 {
    let cores = i128::try_from(cores).unwrap_or(i128::MAX);
    match i128::from(par) {
        threads if threads <= 0 => threads + cores,
        threads => threads,
    }
}

/// `-par` as script threads on `cores` cores ([`script_threads_from_par`]),
/// with a warning when the threads used are not the threads asked for.
pub fn script_threads(
    given: Option<&GivenValue>,
    cores: usize,
    warnings: &mut Vec<ConfigWarning>,
) -> usize {
    let par = given.map_or(0, |given| given.read);
    let used = script_threads_from_par(par, cores);
    let Some(given) = given else { return used };
    let requested = requested_script_threads(par, cores);
    if par > 0 && requested != used as i128 {
        // More than Core's cap, or a number Core's `int` truncates.
        warnings.push(ConfigWarning::ParAdjusted { value: given.clone(), used_threads: used });
    } else if requested < 1 {
        warnings.push(ConfigWarning::ParBelowOne { value: given.clone(), cores });
    } else {
        // `-par=0` or `-par=-n` on a machine with many cores is capped
        // by design (Core's autodetection): no warning for that.
        warn_unless_whole("par", given, warnings);
    }
    used
}

/// `-stopatheight`: `None` for 0 (never). A negative height is one every
/// block reaches: Core stops at its first new block, Ibex as soon as the
/// chain has a tip (height 0 or more), with a warning.
pub fn stop_at_height(
    given: Option<&GivenValue>,
    warnings: &mut Vec<ConfigWarning>,
) -> Option<u32> {
    let given = given?;
    if given.read < 0 {
        warnings.push(ConfigWarning::StopAtHeightNegative { value: given.clone() });
        return Some(0);
    }
    warn_unless_whole("stopatheight", given, warnings);
    match given.read {
        0 => None,
        height => Some(u32::try_from(height).unwrap_or(u32::MAX)),
    }
}

/// `-prune` as Core's `ApplyArgsManOptions` reads it: 0 keeps every block,
/// 1 prunes only when asked (`pruneblockchain`), a number of MiB of at
/// least 550 is the automatic target; a negative value, or one from 2 to
/// 549, is refused with Core's words. Core refuses `-reindex-chainstate`
/// with any other value than 0 first.
pub fn prune_mode(
    given: Option<&GivenValue>,
    reindex_chainstate: bool,
    warnings: &mut Vec<ConfigWarning>,
) -> Result<PruneMode, ConfigError> {
    let mebibytes = read_integer("prune", given, 0, warnings);
    if mebibytes != 0 && reindex_chainstate {
        return Err(ConfigError::PruneWithReindexChainstate);
    }
    match mebibytes {
        0 => Ok(PruneMode::Disabled),
        1 => Ok(PruneMode::Manual),
        negative if negative < 0 => Err(ConfigError::PruneNegative),
        positive => {
            let target_bytes = positive.unsigned_abs().saturating_mul(1 << 20);
            if target_bytes < PRUNE_TARGET_BYTES_MIN {
                return Err(ConfigError::PruneBelowMinimum {
                    minimum_mebibytes: PRUNE_TARGET_BYTES_MIN >> 20,
                });
            }
            Ok(PruneMode::Automatic { target_bytes })
        }
    }
}

/// Core's `DEFAULT_CHECKBLOCKS`: the last blocks a start checks.
pub const CHECK_BLOCKS_DEFAULT: u32 = 6;
/// Core's `DEFAULT_CHECKLEVEL`.
pub const CHECK_LEVEL_DEFAULT: u32 = 3;
/// Core's highest `-checklevel`.
pub const CHECK_LEVEL_MAX: u32 = 4;

/// What a start checks of the active chain's last blocks (Core's
/// `-checkblocks` and `-checklevel`, read as `VerifyDB` reads them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockCheckDepth {
    /// Blocks to check; `None` for every block of the chain (Core's 0 or a
    /// negative `-checkblocks`).
    pub blocks: Option<u32>,
    /// `-checklevel`, 0 to [`CHECK_LEVEL_MAX`].
    pub level: u32,
}

/// `-checkblocks` and `-checklevel`: a negative or zero count is every
/// block, as in Core; the level is clamped to 0..=4 as Core clamps it.
pub fn block_check_depth(
    blocks: Option<&GivenValue>,
    level: Option<&GivenValue>,
    warnings: &mut Vec<ConfigWarning>,
) -> BlockCheckDepth {
    let blocks = read_integer("checkblocks", blocks, i64::from(CHECK_BLOCKS_DEFAULT), warnings);
    let level = read_integer("checklevel", level, i64::from(CHECK_LEVEL_DEFAULT), warnings);
    BlockCheckDepth {
        blocks: (blocks > 0).then(|| u32::try_from(blocks).unwrap_or(u32::MAX)),
        level: u32::try_from(level.clamp(0, i64::from(CHECK_LEVEL_MAX))).unwrap_or(0),
    }
}

/// `-progressinterval` (an Ibex option): milliseconds between plain
/// progress lines, [`PROGRESS_INTERVAL_MS_DEFAULT`] unless
/// given, at least [`PROGRESS_INTERVAL_MS_MIN`].
pub fn progress_interval_ms(given: Option<&GivenValue>, warnings: &mut Vec<ConfigWarning>) -> u64 {
    let default = i64::try_from(PROGRESS_INTERVAL_MS_DEFAULT).unwrap_or(i64::MAX);
    let read = read_integer("progressinterval", given, default, warnings);
    u64::try_from(read).unwrap_or(0).max(PROGRESS_INTERVAL_MS_MIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::settings::SettingValue;

    fn given(text: &str) -> GivenValue {
        GivenValue::from_setting(&SettingValue::Text(text.to_owned()))
    }

    fn dbcache(text: &str) -> (u64, Vec<ConfigWarning>) {
        let mut warnings = Vec::new();
        let used = dbcache_mebibytes(Some(&given(text)), 450, &mut warnings);
        (used, warnings)
    }

    #[test]
    fn check_blocks_and_level_are_read_as_core_reads_them() {
        let depth = |blocks: Option<&str>, level: Option<&str>| {
            let mut warnings = Vec::new();
            let blocks = blocks.map(given);
            let level = level.map(given);
            block_check_depth(blocks.as_ref(), level.as_ref(), &mut warnings)
        };
        assert_eq!(depth(None, None), BlockCheckDepth { blocks: Some(6), level: 3 });
        assert_eq!(depth(Some("0"), Some("9")), BlockCheckDepth { blocks: None, level: 4 });
        assert_eq!(depth(Some("-3"), Some("-1")), BlockCheckDepth { blocks: None, level: 0 });
        assert_eq!(depth(Some("100"), Some("1")), BlockCheckDepth { blocks: Some(100), level: 1 });
    }

    #[test]
    fn given_values_show_what_was_read() {
        assert_eq!(given("12").to_string(), "12");
        assert_eq!(given("+12").to_string(), "+12");
        assert_eq!(given("abc").to_string(), "abc (read as 0)");
        assert_eq!(given("12abc").to_string(), "12abc (read as 12)");
        assert_eq!(given("").to_string(), " (read as 0)");
        assert_eq!(
            given("99999999999999999999").to_string(),
            format!("99999999999999999999 (read as {})", i64::MAX)
        );
        let negated = GivenValue::from_setting(&SettingValue::Bool(false));
        assert!(negated.is_whole_number());
        assert_eq!(negated.read, 0);
    }

    #[test]
    fn dbcache_values_like_core_with_a_word() {
        assert_eq!(dbcache("100"), (100, vec![]));
        assert_eq!(dbcache("4"), (4, vec![]));
        let (used, warnings) = dbcache("abc");
        assert_eq!(used, DBCACHE_MEBIBYTES_MIN);
        assert_eq!(
            warnings[0].to_string(),
            "-dbcache=abc (read as 0) is below the minimum of 4 MiB; using -dbcache=4"
        );
        assert_eq!(warnings.len(), 1);
        let (used, warnings) = dbcache("-5");
        assert_eq!(used, 4);
        assert_eq!(
            warnings[0].to_string(),
            "-dbcache=-5 is below the minimum of 4 MiB; using -dbcache=4"
        );
        let (used, warnings) = dbcache("999999999");
        assert_eq!(used, DBCACHE_MEBIBYTES_MAX);
        assert_eq!(
            warnings[0].to_string(),
            "-dbcache=999999999 is above Ibex's maximum of 1048576 MiB; using -dbcache=1048576"
        );
        let (used, warnings) = dbcache("100MB");
        assert_eq!(used, 100);
        assert_eq!(
            warnings,
            [ConfigWarning::NotANumber { name: "dbcache", value: given("100MB") }]
        );
        assert_eq!(
            warnings[0].to_string(),
            "-dbcache=100MB is not a whole number; read as 100, as Bitcoin Core reads it"
        );
        let mut warnings = Vec::new();
        assert_eq!(dbcache_mebibytes(None, 450, &mut warnings), 450);
        assert!(warnings.is_empty());
    }

    #[test]
    fn oversized_dbcache_like_core() {
        const GIBIBYTE: u64 = 1 << 30;
        // Small machines: above Core's 450 MiB default.
        assert!(!dbcache_is_oversized(450, GIBIBYTE));
        assert!(dbcache_is_oversized(451, GIBIBYTE));
        // From 2 GiB: above 75 % of the memory, a hundredth rounded down
        // first (Core's cases: 1500 and 1600 MiB on 2 GiB).
        assert!(!dbcache_is_oversized(1500, 2 * GIBIBYTE));
        assert!(dbcache_is_oversized(1600, 2 * GIBIBYTE));
        assert!(dbcache_is_oversized(1536, 2 * GIBIBYTE));
        assert!(!dbcache_is_oversized(1535, 2 * GIBIBYTE));
        assert!(!dbcache_is_oversized(DBCACHE_MEBIBYTES_MAX, 2048 * GIBIBYTE));
        let warning = oversized_dbcache_warning(999_999, Some(8 * GIBIBYTE)).unwrap();
        assert_eq!(
            warning.to_string(),
            "A 999999 MiB dbcache may be too large for a system memory of only 8192 MiB."
        );
        assert_eq!(oversized_dbcache_warning(999_999, None), None);
        assert_eq!(oversized_dbcache_warning(450, Some(8 * GIBIBYTE)), None);
    }

    #[test]
    fn memory_total_from_meminfo() {
        let meminfo = "MemTotal:        8039524 kB\nMemFree:  1 kB\n";
        assert_eq!(parse_memory_total(meminfo), Some(8_039_524 * 1024));
        assert_eq!(parse_memory_total("MemFree: 1 kB\n"), None);
        assert_eq!(parse_memory_total("MemTotal: many kB\n"), None);
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(total_memory_bytes().is_some_and(|bytes| bytes > 0));
        }
    }

    #[test]
    fn par_like_core() {
        assert_eq!(script_threads_from_par(0, 2), 2);
        assert_eq!(script_threads_from_par(0, 64), 16);
        assert_eq!(script_threads_from_par(-1, 2), 1);
        assert_eq!(script_threads_from_par(-5, 2), 1);
        assert_eq!(script_threads_from_par(1, 8), 1);
        assert_eq!(script_threads_from_par(4, 2), 4);
        assert_eq!(script_threads_from_par(100, 2), 16);
        // Core's int truncation: 2^32 + 3 is 3.
        assert_eq!(script_threads_from_par((1 << 32) + 3, 2), 3);
    }

    fn par(text: &str, cores: usize) -> (usize, Vec<String>) {
        let mut warnings = Vec::new();
        let used = script_threads(Some(&given(text)), cores, &mut warnings);
        (used, warnings.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn par_values_with_a_word() {
        assert_eq!(par("4", 2), (4, vec![]));
        assert_eq!(par("0", 2), (2, vec![]));
        assert_eq!(par("-1", 2), (1, vec![]));
        // Every core of a big machine: Core's cap, as Core's default.
        assert_eq!(par("0", 64), (16, vec![]));
        assert_eq!(par("-8", 64), (16, vec![]));
        assert_eq!(
            par("1000", 2),
            (
                16,
                vec!["-par=1000 is more script threads than the 16 allowed; using -par=16"
                    .to_owned()]
            )
        );
        assert_eq!(
            par("-5", 2),
            (
                1,
                vec![
                    "-par=-5 leaves no core for script checks on this 2-core machine; using -par=1"
                        .to_owned()
                ]
            )
        );
        assert_eq!(
            par("4294967299", 2),
            (
                3,
                vec!["-par=4294967299 is more script threads than the 16 allowed; using -par=3"
                    .to_owned()]
            )
        );
        assert_eq!(
            par("two", 2),
            (
                2,
                vec!["-par=two is not a whole number; read as 0, as Bitcoin Core reads it"
                    .to_owned()]
            )
        );
        let mut warnings = Vec::new();
        assert_eq!(script_threads(None, 4, &mut warnings), 4);
        assert!(warnings.is_empty());
    }

    #[test]
    fn stop_height_with_a_word() {
        let mut warnings = Vec::new();
        assert_eq!(stop_at_height(None, &mut warnings), None);
        assert_eq!(stop_at_height(Some(&given("0")), &mut warnings), None);
        assert_eq!(stop_at_height(Some(&given("120")), &mut warnings), Some(120));
        assert_eq!(
            stop_at_height(Some(&given(&i64::MAX.to_string())), &mut warnings),
            Some(u32::MAX)
        );
        assert!(warnings.is_empty());
        assert_eq!(stop_at_height(Some(&given("-1")), &mut warnings), Some(0));
        assert_eq!(stop_at_height(Some(&given("-3")), &mut warnings), Some(0));
        assert_eq!(
            warnings[0].to_string(),
            "-stopatheight=-1 is negative, a height every block reaches: stopping as soon as the chain has a tip (Bitcoin Core stops at its first new block)"
        );
        warnings.clear();
        assert_eq!(stop_at_height(Some(&given("ten")), &mut warnings), None);
        assert_eq!(
            warnings[0].to_string(),
            "-stopatheight=ten is not a whole number; read as 0, as Bitcoin Core reads it"
        );
    }

    #[test]
    fn prune_is_read_and_refused_as_core_does() {
        let mut warnings = Vec::new();
        let mode = |text: Option<&str>, reindex_chainstate: bool| {
            prune_mode(text.map(given).as_ref(), reindex_chainstate, &mut Vec::new())
        };
        assert_eq!(mode(None, false).unwrap(), PruneMode::Disabled);
        assert_eq!(mode(Some("0"), true).unwrap(), PruneMode::Disabled);
        assert_eq!(mode(Some("1"), false).unwrap(), PruneMode::Manual);
        assert_eq!(
            mode(Some("550"), false).unwrap(),
            PruneMode::Automatic { target_bytes: 550 << 20 }
        );
        assert_eq!(
            mode(Some("549"), false).unwrap_err().to_string(),
            "Prune configured below the minimum of 550 MiB.  Please use a higher number."
        );
        assert!(matches!(
            mode(Some("2"), false),
            Err(ConfigError::PruneBelowMinimum { minimum_mebibytes: 550 })
        ));
        assert_eq!(
            mode(Some("-1"), false).unwrap_err().to_string(),
            "Prune cannot be configured with a negative value."
        );
        // Core checks -reindex-chainstate first, for any value but 0.
        assert_eq!(
            mode(Some("-1"), true).unwrap_err().to_string(),
            "Prune mode is incompatible with -reindex-chainstate. Use full -reindex instead."
        );
        assert!(matches!(mode(Some("1"), true), Err(ConfigError::PruneWithReindexChainstate)));
        // Leading digits, as Core's atoi reads them, with Ibex's warning.
        assert_eq!(
            prune_mode(Some(&given("600xyz")), false, &mut warnings).unwrap(),
            PruneMode::Automatic { target_bytes: 600 << 20 }
        );
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn read_integer_warns_only_for_text_that_is_not_a_number() {
        let mut warnings = Vec::new();
        assert_eq!(progress_interval_ms(None, &mut warnings), 10_000);
        assert_eq!(progress_interval_ms(Some(&given("1000")), &mut warnings), 1_000);
        assert_eq!(progress_interval_ms(Some(&given("-5")), &mut warnings), 100);
        assert_eq!(read_integer("dbcrashratio", None, 0, &mut warnings), 0);
        assert_eq!(read_integer("dbcrashratio", Some(&given("5")), 0, &mut warnings), 5);
        assert!(warnings.is_empty());
        assert_eq!(read_integer("dbcrashratio", Some(&given("5x")), 0, &mut warnings), 5);
        assert_eq!(warnings.len(), 1);
    }
}
