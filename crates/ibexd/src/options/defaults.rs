//! The defaults and bounds of `ibexd`'s options that more than one part of
//! the daemon reads: the option parsing above them, the log, the progress
//! display and the RPC server. They import nothing of the daemon, so every
//! layer can read them without reaching up.

/// Bytes in a MiB.
pub const MEBIBYTE: u64 = 1 << 20;

/// `-dbcache` default, MiB (Core's `DEFAULT_DB_CACHE`).
pub const DBCACHE_MEBIBYTES_DEFAULT: u64 = 450;
/// `-dbcache` floor, MiB (Core's `MIN_DB_CACHE`).
pub const DBCACHE_MEBIBYTES_MIN: u64 = 4;
/// `-dbcache` ceiling, MiB: 1 TiB. Core only caps at the address space; no
/// machine we run on has this much memory.
pub const DBCACHE_MEBIBYTES_MAX: u64 = 1 << 20;
const _: () = assert!(DBCACHE_MEBIBYTES_MIN <= DBCACHE_MEBIBYTES_DEFAULT);
const _: () = assert!(DBCACHE_MEBIBYTES_DEFAULT <= DBCACHE_MEBIBYTES_MAX);

/// `-dbflushtables` at most: every count up to it is honoured (a map has at
/// least that many shards to group).
pub const FLUSH_TABLE_COUNT_OPTION_MAX: usize = ibex_chainstate::budget::FLUSH_TABLE_COUNT_LIMIT;

/// Script-check threads besides the main thread, at most (Core's
/// `MAX_SCRIPTCHECK_THREADS`).
pub const SCRIPT_CHECK_WORKER_THREADS_MAX: usize = 15;

/// The default data directory, under the home directory.
pub const DATA_DIRECTORY_DEFAULT_NAME: &str = ".ibex";
/// The default log file, in the chain directory.
pub const DEBUG_LOG_FILE_DEFAULT: &str = "debug.log";

/// `-progressinterval` default: milliseconds between plain progress lines
/// when stderr is not a terminal.
pub const PROGRESS_INTERVAL_MS_DEFAULT: u64 = 10_000;
/// The shortest `-progressinterval`, in milliseconds (a shorter one is
/// raised to it).
pub const PROGRESS_INTERVAL_MS_MIN: u64 = 100;
const _: () = assert!(PROGRESS_INTERVAL_MS_MIN <= PROGRESS_INTERVAL_MS_DEFAULT);
