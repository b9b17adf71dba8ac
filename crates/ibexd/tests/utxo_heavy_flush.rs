//! The coins cache under the `utxo-heavy` load, on the profile
//! scaled down to CI's time (1,200 blocks of 100,000 WU: ~33 MB, ~340,000
//! coins), generated once for the file. Every import checks every script
//! (`-assumevalid=0`).
//!
//! - A cache that never flushes before shutdown (`-dbcache=200`) and one
//!   that flushes every few blocks (`-dbcache=4`) end with the same UTXO set
//!   (`ibex txoutsetinfo`: hash, count, amount...), the manifest's count at
//!   the manifest's tip; with `IBEX_CORE_BIN`, `bitcoind -reindex` of the
//!   same files gives the same set. The log has a `Coins database:` line
//!   after each flush, coin reads by age that add up to the inputs
//!   connected, and (with the small cache) bytes RocksDB flushed or
//!   compacted.
//! - `kill -9` while a background flush of 30,000+ changed coins is being
//!   written as eight tables ingested one after another (`-dbcache=20
//!   -dbflushtables=8`), seen from the flush's start line in the log and
//!   no end line after it, three times. Each table goes in atomically and
//!   the first records the flush's two tips (`ibex_chainstate::database_ingest`):
//!   what a kill leaves on disk is a prefix of the tables, either inside a
//!   flush (`ibex txoutsetinfo` reports the interrupted flush and the
//!   restart replays it) or at an earlier tip (the restart connects the
//!   blocks after it again); a clean run past each
//!   killed flush is checked against what was left, so the three kills hit
//!   three flushes further up the chain. The last run goes to the end: the
//!   clean run's UTXO set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{free_port, wait_exit, wait_for_log, NodeProcess, NODE_WAIT};

const BLOCKS: &str = "1200";
const TARGET_WEIGHT: &str = "100000";
const SEED: &str = "5";

/// Every run: regtest, every script checked, nothing on the console.
const NODE_OPTIONS: [&str; 3] = ["-regtest", "-printtoconsole=0", "-assumevalid=0"];
/// A coins cache of 190 MiB: the chain's whole set takes ~53 MiB of it.
const NO_FLUSH_DBCACHE: &str = "-dbcache=200";
/// Core's smallest: a 1.75 MiB coins cache, flushed every ~25 blocks.
const SMALL_DBCACHE: &str = "-dbcache=4";
/// Cache-full flushes the small cache makes at least (43 seen).
const SMALL_CACHE_FLUSHES_MIN: usize = 20;
/// A coins cache whose UTXO share (what `-dbcache=20` leaves after the
/// budget's other parts: `ibex_chainstate::MemoryBudget`) holds more than
/// [`KILLED_FLUSH_CHANGED_COINS_MIN`] changed coins a flush (~43,000 with
/// the cache's entries packed in chunks, where `-dbcache=32` flushes only
/// twice on this chain), written as eight tables (the default at this
/// size is one).
const KILL_CACHE_OPTIONS: [&str; 2] = ["-dbcache=20", "-dbflushtables=8"];
/// Changed coins a killed flush holds at least: ~70 bytes each, so tables
/// of ~260 KB.
const KILLED_FLUSH_CHANGED_COINS_MIN: u64 = 30_000;
/// How long after a flush's start line each kill comes: inside the write
/// (each table is written, synced and ingested in a few milliseconds).
const KILL_DELAYS_MS: [u64; 3] = [3, 8, 15];
/// Kills that may land after the flush's end line (the restart then goes
/// on from the flushed tip) before the test gives up.
const KILL_MISSES_MAX: usize = 2;
/// Blocks a clean run goes past a killed flush's height.
const CLEAN_RUN_BLOCKS: u64 = 100;
/// How often the log is read while waiting for a flush to start.
const LOG_POLL_INTERVAL: Duration = Duration::from_millis(2);

const START_LINE: &str = "FlushStateToDisk start (cache full): writing ";
const CACHE_FULL_END_LINE: &str = "FlushStateToDisk (cache full): ";
const REPLAY_LINE: &str = "Replaying blocks after an interrupted flush";

/// The generated chain and what its manifest says.
struct ScaledChain {
    directory: PathBuf,
    tip: String,
    height: u64,
    utxo_count: u64,
}

/// The chain, generated once for the file under Cargo's scratch directory
/// for integration tests (replaced at each run: generation is ~1 s).
fn scaled_chain() -> &'static ScaledChain {
    static CHAIN: OnceLock<ScaledChain> = OnceLock::new();
    CHAIN.get_or_init(|| {
        let directory = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("utxo-heavy-flush-chain");
        let _ = std::fs::remove_dir_all(&directory);
        let extra = ["--target-weight", TARGET_WEIGHT];
        common::generate_chain(&directory, "utxo-heavy", BLOCKS, SEED, &extra);
        let text = std::fs::read_to_string(directory.join("manifest.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(manifest["options"]["profile"], "utxo_heavy");
        let utxo_count = manifest["utxo_count"].as_u64().unwrap();
        assert!(utxo_count > 250_000, "{utxo_count} coins");
        ScaledChain {
            tip: manifest["tip_hash"].as_str().unwrap().to_owned(),
            height: manifest["block_count"].as_u64().unwrap(),
            utxo_count,
            directory,
        }
    })
}

/// `datadir` with the chain's block files and `xor.dat`.
fn install_blocks(datadir: &Path, chain: &Path) {
    let names: Vec<String> = std::fs::read_dir(chain)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("blk") || name == "xor.dat")
        .collect();
    assert!(names.iter().any(|name| name == "blk00000.dat"));
    common::copy_block_files(datadir, chain, &names);
}

/// `ibexd` with no RPC server, ending at the chain's tip (`-stopatheight`,
/// which a later one in `extra` overrides: the last value wins).
fn ibexd(datadir: &Path, extra: &[&str]) -> Command {
    let stop = format!("-stopatheight={}", scaled_chain().height);
    let mut command = common::quiet_ibexd(datadir, &NODE_OPTIONS, &["-server=0", stop.as_str()]);
    command.args(extra);
    command
}

/// The node's log without its `UpdateTip` lines, for failure messages.
fn log_summary(log: &str) -> String {
    let lines = log.lines().filter(|line| !line.contains("UpdateTip"));
    lines.collect::<Vec<_>>().join("\n")
}

/// The log's `Imported to height` line, to show what a run did.
fn import_line(log: &str) -> &str {
    log.lines().rev().find(|line| line.contains("Imported to height")).unwrap_or("")
}

/// `ibexd -reindex <extra>` of the chain in a new `datadir`, run to its
/// end; its log and `ibex txoutsetinfo`.
fn import(datadir: &Path, extra: &[&str]) -> (String, serde_json::Value) {
    let chain = scaled_chain();
    install_blocks(datadir, &chain.directory);
    let options = [&["-reindex"][..], extra].concat();
    let mut node = common::spawn_node(&mut ibexd(datadir, &options));
    let status = wait_exit(&mut node, datadir);
    let log = common::debug_log(datadir);
    assert!(status.success(), "{}", log_summary(&log));
    let found = common::txoutsetinfo_json(datadir, &[]);
    // A stop asked by a signal also ends with success: check the tip first.
    assert_eq!(found["bestblock"].as_str(), Some(chain.tip.as_str()), "{}", log_summary(&log));
    assert_eq!(found["height"].as_u64(), Some(chain.height));
    assert_eq!(found["txouts"].as_u64(), Some(chain.utxo_count));
    (log, found)
}

/// The import with a cache that never fills: the reference UTXO set, made
/// once for the file. Its only flush is the one at shutdown.
fn unflushed_utxo_set() -> &'static serde_json::Value {
    static SET: OnceLock<serde_json::Value> = OnceLock::new();
    SET.get_or_init(|| {
        let root = tempfile::tempdir().unwrap();
        let (log, found) = import(&root.path().join("ibex"), &[NO_FLUSH_DBCACHE]);
        let flushes = flush_lines(&log);
        let starts: Vec<&FlushLine> = flushes.iter().filter(|line| line.start).collect();
        assert_eq!(starts.len(), 1, "{}", log_summary(&log));
        assert_eq!(starts[0].reason, "shutdown", "{}", log_summary(&log));
        assert!(!log.contains("(cache full)") && !log.contains("(periodic)"));
        check_coins_database_lines(&log);
        eprintln!("no flush before shutdown ({NO_FLUSH_DBCACHE}): {}", import_line(&log));
        found
    })
}

/// A `FlushStateToDisk` line: a flush's start or its end.
#[derive(Debug)]
struct FlushLine {
    start: bool,
    reason: String,
    /// Changed coins to write (start), or coins written and erased (end).
    changed_coin_count: u64,
}

/// The number after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    rest.split(|character: char| !character.is_ascii_digit()).next()?.parse().ok()
}

fn parse_flush_line(line: &str) -> Option<FlushLine> {
    let (start, rest) = match line.split_once("FlushStateToDisk start (") {
        Some((_, rest)) => (true, rest),
        None => (false, line.split_once("FlushStateToDisk (")?.1),
    };
    let (reason, counts) = rest.split_once("): ")?;
    let changed_coin_count = if start {
        number_after(counts, "writing ")?
    } else {
        number_after(counts, "")? + number_after(counts, "written, ")?
    };
    Some(FlushLine { start, reason: reason.to_owned(), changed_coin_count })
}

/// The log's flush lines, checked to pair up: each start is followed by
/// its end (same reason, every changed coin written or erased) before the
/// next start, as a flush waits for the one before it.
fn flush_lines(log: &str) -> Vec<FlushLine> {
    let lines: Vec<FlushLine> = log.lines().filter_map(parse_flush_line).collect();
    assert!(lines.len() % 2 == 0, "{lines:?}");
    for pair in lines.chunks(2) {
        assert!(pair[0].start && !pair[1].start, "{pair:?}");
        assert_eq!(pair[0].reason, pair[1].reason);
        assert_eq!(pair[0].changed_coin_count, pair[1].changed_coin_count);
    }
    lines
}

/// What the log says of the coins database, checked to hang together.
struct DatabaseLines {
    coin_reads_line: String,
    io_line: String,
    /// Spends whose coin was read from the database.
    from_database: u64,
    /// GiB written by memtable flushes and by compactions.
    written_gibibytes: (f64, f64),
}

/// A GiB figure after `prefix`: `0.012 GiB`.
fn gibibytes_after(text: &str, prefix: &str) -> Option<f64> {
    let rest = &text[text.find(prefix)? + prefix.len()..];
    rest.split(" GiB").next()?.parse().ok()
}

/// One `Coins database:` line per finished flush; the coin reads by age
/// add up to the inputs of the `Imported to height` line; the full
/// summary at the end.
fn check_coins_database_lines(log: &str) -> DatabaseLines {
    let flush_ends = log.lines().filter(|line| line.contains("FlushStateToDisk (")).count();
    let database_lines = log.lines().filter(|line| line.contains(" Coins database: ")).count();
    assert_eq!(database_lines, flush_ends, "{}", log_summary(log));
    let imported = import_line(log);
    let inputs = number_after(imported, "transactions, ").unwrap();
    let find = |text: &str| log.lines().rev().find(|line| line.contains(text)).map(str::to_owned);
    let coin_reads_line = find("Coin reads by age: ").expect("coin reads logged");
    let ages = ["0-1", "2-10", "11-100", "101-1000", "1001-10000", "10001+"];
    let spends: u64 = ages
        .iter()
        .map(|age| number_after(&coin_reads_line, &format!(" {age} blocks ")).unwrap())
        .sum();
    assert_eq!(spends, inputs, "{coin_reads_line}\n{imported}");
    let in_memory = number_after(&coin_reads_line, "; in memory ").unwrap();
    let from_database = number_after(&coin_reads_line, ", from the database ").unwrap();
    assert_eq!(in_memory + from_database, inputs, "{coin_reads_line}");
    let io_line = find("Coins database I/O since open: ").expect("database summary logged");
    let flushed = gibibytes_after(&io_line, "memtable flushes ").unwrap();
    let compacted = gibibytes_after(&io_line, "compactions wrote ").unwrap();
    assert!(
        find("Coins database files: ").is_some() && find("Coins database levels: L0 ").is_some()
    );
    DatabaseLines {
        coin_reads_line,
        io_line,
        from_database,
        written_gibibytes: (flushed, compacted),
    }
}

/// Every field of two `txoutsetinfo` answers but the database's size on
/// disk: the same UTXO set at the same tip.
fn assert_same_utxo_set(expected: &serde_json::Value, found: &serde_json::Value) {
    let fields = ["height", "bestblock", "txouts", "bogosize", "hash_serialized_3"];
    for field in fields.into_iter().chain(["total_amount", "transactions"]) {
        assert_eq!(found[field], expected[field], "{field}");
    }
}

#[test]
fn a_cache_that_never_flushes_and_one_that_flushes_every_few_blocks_agree() {
    let unflushed = unflushed_utxo_set();
    let root = tempfile::tempdir().unwrap();
    let (log, flushed) = import(&root.path().join("ibex"), &[SMALL_DBCACHE]);
    let flushes = flush_lines(&log);
    let cache_full = flushes.iter().filter(|line| line.start && line.reason == "cache full");
    let cache_full_count = cache_full.count();
    assert!(cache_full_count >= SMALL_CACHE_FLUSHES_MIN, "{}", log_summary(&log));
    eprintln!("{cache_full_count} cache-full flushes ({SMALL_DBCACHE}): {}", import_line(&log));
    assert_same_utxo_set(unflushed, &flushed);
    // Whole-key filters are dropped at most once (here the table readers
    // stay under half of even this share; the drop itself is imported
    // through in `ibex-chainstate`'s `generated_chains` tests).
    let filters_line = "tables written from now on filter on transaction ids only";
    assert!(log.matches(filters_line).count() <= 1, "{}", log_summary(&log));
    let database_lines = check_coins_database_lines(&log);
    let (flushes_gibibytes, compactions_gibibytes) = database_lines.written_gibibytes;
    assert!(flushes_gibibytes + compactions_gibibytes > 0.0, "{}", database_lines.io_line);
    assert!(database_lines.from_database > 0, "a small cache reads old coins back");
    eprintln!("{}\n{}", database_lines.coin_reads_line, database_lines.io_line);

    let Some(binaries) = core_binaries() else { return };
    let chain = scaled_chain();
    let core = root.path().join("core");
    install_blocks(&core, &chain.directory);
    let expected = core_utxo_set(&binaries, &core, &chain.tip, chain.height);
    assert_same_utxo_set(&expected, &flushed);
}

fn core_binaries() -> Option<PathBuf> {
    let directory = std::env::var_os("IBEX_CORE_BIN");
    if directory.is_none() {
        eprintln!("skipped: bitcoind -reindex of the utxo-heavy chain (IBEX_CORE_BIN not set)");
    }
    directory.map(PathBuf::from)
}

/// `bitcoind -reindex` of the chain in `datadir` up to `tip` at `height`:
/// its `gettxoutsetinfo`.
fn core_utxo_set(binaries: &Path, datadir: &Path, tip: &str, height: u64) -> serde_json::Value {
    let rpc_port = free_port();
    let rpc_port_option = format!("-rpcport={rpc_port}");
    let datadir_option = common::datadir_argument(datadir);
    let mut bitcoind = common::spawn_node(
        Command::new(binaries.join("bitcoind"))
            .args([datadir_option.as_str(), rpc_port_option.as_str()])
            .args(["-regtest", "-reindex", "-printtoconsole=0", "-listen=0", "-connect=0"])
            .args(["-dnsseed=0", "-fixedseeds=0", "-disablewallet", SMALL_DBCACHE])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_for_log(datadir, &format!("UpdateTip: new best={tip} height={height} "), &mut bitcoind);
    let cli = |arguments: &[&str]| {
        Command::new(binaries.join("bitcoin-cli"))
            .args(["-regtest", datadir_option.as_str(), rpc_port_option.as_str()])
            .args(arguments)
            .output()
            .unwrap()
    };
    let output = cli(&["gettxoutsetinfo"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let answer = serde_json::from_slice(&output.stdout).unwrap();
    assert!(cli(&["stop"]).status.success());
    assert!(wait_exit(&mut bitcoind, datadir).success());
    answer
}

/// The lines a node appends to its log, read as they come.
struct LogTail {
    path: PathBuf,
    offset_bytes: u64,
    text: String,
}

impl LogTail {
    /// What is appended to `datadir`'s log from now on.
    fn from_end(datadir: &Path) -> LogTail {
        let path = common::debug_log_path(datadir);
        let offset_bytes = std::fs::metadata(&path).map_or(0, |metadata| metadata.len());
        LogTail { path, offset_bytes, text: String::new() }
    }

    /// Reads what was appended since the last call.
    fn read(&mut self) -> &str {
        let Ok(mut file) = std::fs::File::open(&self.path) else { return &self.text };
        file.seek(SeekFrom::Start(self.offset_bytes)).unwrap();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        // Keep a torn last line for the next read.
        let complete = bytes.iter().rposition(|byte| *byte == b'\n').map_or(0, |end| end + 1);
        self.offset_bytes += complete as u64;
        self.text.push_str(&String::from_utf8_lossy(&bytes[..complete]));
        &self.text
    }

    /// Waits for the first line containing `text`, polling every
    /// [`LOG_POLL_INTERVAL`]; fails if `node` exits first.
    fn wait_for_line(&mut self, text: &str, node: &mut NodeProcess) -> String {
        let started = Instant::now();
        loop {
            if let Some(line) = self.read().lines().find(|line| line.contains(text)) {
                return line.to_owned();
            }
            if let Some(status) = node.try_wait().unwrap() {
                panic!("ibexd exited ({status:?}) before '{text}':\n{}", log_summary(self.read()));
            }
            assert!(started.elapsed() < NODE_WAIT, "no '{text}' in\n{}", log_summary(self.read()));
            std::thread::sleep(LOG_POLL_INTERVAL);
        }
    }
}

/// A run killed during a flush.
struct Kill {
    /// The height the killed flush was writing.
    height: u64,
    /// Whether the log shows the flush still running at the kill (no end
    /// line after its start line).
    in_flight: bool,
    /// Whether the coins database was left with a flush unfinished.
    interrupted: bool,
}

/// Starts `ibexd` (after the first kill, without `-reindex`: the import
/// goes on), waits for its first cache-full flush to start writing, and
/// kills it `delay_ms` later with SIGKILL.
fn kill_during_next_flush(datadir: &Path, previous: Option<&Kill>, delay_ms: u64) -> Kill {
    let mut tail = LogTail::from_end(datadir);
    let extra: &[&str] = if previous.is_none() { &["-reindex"] } else { &[] };
    let options = [&KILL_CACHE_OPTIONS[..], extra].concat();
    let mut node = common::spawn_node(&mut ibexd(datadir, &options));
    let start = tail.wait_for_line(START_LINE, &mut node);
    std::thread::sleep(Duration::from_millis(delay_ms));
    node.kill().unwrap();
    node.wait().unwrap();
    let log = tail.read().to_owned();
    let replayed = log.find(REPLAY_LINE).is_some_and(|at| at < log.find(&start).unwrap());
    // A clean run followed every earlier kill: nothing is left to replay.
    assert!(!replayed, "{}", log_summary(&log));
    assert!(start.ends_with(", in the background"), "{start}");
    let changed = number_after(&start, "writing ").unwrap();
    assert!(changed >= KILLED_FLUSH_CHANGED_COINS_MIN, "{start}");
    let height = number_after(&start, "at height ").unwrap();
    let after_start = &log[log.find(&start).unwrap() + start.len()..];
    let in_flight = !after_start.contains(CACHE_FULL_END_LINE);
    let output = common::txoutsetinfo(datadir, &[]);
    let interrupted = !output.status.success();
    if interrupted {
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(error.contains("interrupted flush"), "{error}");
    }
    eprintln!(
        "killed {delay_ms} ms into a flush of {changed} changed coins at height {height}: {}, {}",
        if in_flight { "still writing" } else { "it had ended" },
        if interrupted { "left unfinished on disk" } else { "an earlier tip on disk" }
    );
    Kill { height, in_flight, interrupted }
}

/// Runs `ibexd` to `height` and lets it stop there; says whether it
/// replayed an interrupted flush first.
fn run_to_height(datadir: &Path, height: u64) -> bool {
    let mut tail = LogTail::from_end(datadir);
    let stop = format!("-stopatheight={height}");
    let options = [&KILL_CACHE_OPTIONS[..], &[stop.as_str()]].concat();
    let mut node = common::spawn_node(&mut ibexd(datadir, &options));
    assert!(wait_exit(&mut node, datadir).success(), "{}", log_summary(tail.read()));
    tail.read().contains(REPLAY_LINE)
}

#[test]
fn kill_nine_during_background_flushes_then_restart_reaches_the_same_utxo_set() {
    let chain = scaled_chain();
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("ibex");
    install_blocks(&datadir, &chain.directory);
    let started = Instant::now();
    let mut kills: Vec<Kill> = Vec::new();
    let mut interrupted_heights = Vec::new();
    while interrupted_heights.len() < KILL_DELAYS_MS.len() {
        let misses = kills.len() - interrupted_heights.len();
        assert!(misses <= KILL_MISSES_MAX, "{misses} kills came after the flush ended");
        let delay_ms = KILL_DELAYS_MS[interrupted_heights.len()];
        let kill = kill_during_next_flush(&datadir, kills.last(), delay_ms);
        if kill.in_flight {
            interrupted_heights.push(kill.height);
        }
        // A kill may leave an earlier tip on disk (the memtables holding the
        // flush died with the process): a clean run past the killed flush,
        // replaying it if it was left unfinished, makes the next kill land
        // at a later flush.
        let replayed = run_to_height(&datadir, kill.height + CLEAN_RUN_BLOCKS);
        assert_eq!(replayed, kill.interrupted, "height {}", kill.height);
        kills.push(kill);
    }
    // Three different flushes, each further up the chain (the clean runs
    // between the kills move past each killed flush).
    assert!(
        interrupted_heights.windows(2).all(|pair| pair[0] < pair[1]),
        "{interrupted_heights:?}"
    );

    let mut tail = LogTail::from_end(&datadir);
    let mut node = common::spawn_node(&mut ibexd(&datadir, &KILL_CACHE_OPTIONS));
    assert!(wait_exit(&mut node, &datadir).success(), "{}", log_summary(tail.read()));
    let log = tail.read().to_owned();
    assert!(!log.contains(REPLAY_LINE), "{}", log_summary(&log));
    let found = common::txoutsetinfo_json(&datadir, &[]);
    assert_eq!(found["txouts"].as_u64(), Some(chain.utxo_count));
    assert_same_utxo_set(unflushed_utxo_set(), &found);
    eprintln!(
        "{} kills ({} inside a flush, at heights {interrupted_heights:?}), then to the end in {:.1} s: {}",
        kills.len(),
        interrupted_heights.len(),
        started.elapsed().as_secs_f64(),
        import_line(&log)
    );
}
