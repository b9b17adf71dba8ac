//! Helpers the `ibexd` and `ibex` integration tests share: the two binaries
//! as commands, `ibex txoutsetinfo` and `ibex gen` runs, block files copied
//! into a regtest data directory, the regtest log and `../shared` paths.
//! Each test file of `ibex-daemon` includes this module with `mod common;`,
//! each of `ibex-tools` with `#[path = "../../ibexd/tests/common/mod.rs"]`,
//! and uses a part.
//!
//! The two binaries belong to two packages: a test finds its own package's
//! binary where Cargo says (`CARGO_BIN_EXE_*`), the other one beside it in
//! the target directory (`target/<profile>/`), where
//! `cargo test --workspace` builds both before any test runs.
#![allow(dead_code, clippy::panic)]

pub mod assumeutxo;
pub mod rpc;
pub mod swiftsync;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The options most node runs start with: regtest, nothing on the console.
pub const REGTEST_QUIET: [&str; 2] = ["-regtest", "-printtoconsole=0"];

/// [`REGTEST_QUIET`] with Core's smallest `-dbcache`, so flushes are frequent.
pub const REGTEST_QUIET_SMALL_CACHE: [&str; 3] = ["-regtest", "-printtoconsole=0", "-dbcache=4"];

/// The first block file and the obfuscation key: what the tests copy from a
/// generated chain or from Core's into a data directory.
pub const FIRST_BLOCK_FILE_AND_KEY: [&str; 2] = ["blk00000.dat", "xor.dat"];

/// `path` under the project's root. The manifest directory is the one
/// Cargo gives the run, not the one compiled in: a target directory shared
/// by two checkouts reuses a test binary built in the other one, whose path
/// may be gone.
pub fn project(path: &str) -> PathBuf {
    PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into()),
    )
    .join("../..")
    .join(path)
}

/// `path` under the read-only ground truth, `../shared` from the project root.
pub fn shared(path: &str) -> PathBuf {
    project("../shared").join(path)
}

/// Core's regtest chain: `blocks/` and `expected.json`.
pub fn core_chain() -> PathBuf {
    shared("chains/core-wallet-mix")
}

/// `-datadir=<directory>`.
pub fn datadir_argument(directory: &Path) -> String {
    format!("-datadir={}", directory.display())
}

/// The binary `name` of package `package`: where Cargo built it for this
/// test (`built`, set when the test belongs to that package), else in the
/// directory of the profile this test was built with (a test runs from
/// `target/<profile>/deps/`, the binaries sit in `target/<profile>/`).
fn binary(name: &str, built: Option<&str>, package: &str) -> PathBuf {
    if let Some(path) = built {
        return PathBuf::from(path);
    }
    let test_executable = std::env::current_exe().unwrap();
    let profile_directory = test_executable.parent().and_then(Path::parent).unwrap();
    let path = profile_directory.join(name);
    assert!(
        path.is_file(),
        "no `{name}` at {}: build it with `cargo build -p {package} --bin {name}` and the \
         profile of this test (`--profile ci`, ...), or run the tests with \
         `cargo test --workspace`, which builds both binaries first",
        path.display()
    );
    path
}

/// The `ibex` tool's path.
pub fn ibex_path() -> PathBuf {
    binary("ibex", option_env!("CARGO_BIN_EXE_ibex"), "ibex-tools")
}

/// The `ibexd` node's path.
pub fn ibexd_path() -> PathBuf {
    binary("ibexd", option_env!("CARGO_BIN_EXE_ibexd"), "ibex-daemon")
}

/// The `ibex` tool, with no arguments yet.
pub fn ibex() -> Command {
    Command::new(ibex_path())
}

/// `ibexd -datadir=<datadir> <options> <extra>`, output not redirected.
pub fn ibexd(datadir: &Path, options: &[&str], extra: &[&str]) -> Command {
    let mut command = Command::new(ibexd_path());
    command.arg(datadir_argument(datadir)).args(options).args(extra);
    command
}

/// [`ibexd`] with its standard output and error discarded.
pub fn quiet_ibexd(datadir: &Path, options: &[&str], extra: &[&str]) -> Command {
    let mut command = ibexd(datadir, options, extra);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    command
}

/// `ibex gen --profile <profile> --blocks <blocks> --seed <seed> --out
/// <directory> <extra>`, its summary discarded; the run must succeed.
pub fn generate_chain(directory: &Path, profile: &str, blocks: &str, seed: &str, extra: &[&str]) {
    let status = ibex()
        .args(["gen", "--profile", profile, "--blocks", blocks, "--seed", seed, "--out"])
        .arg(directory)
        .args(extra)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
}

/// `ibex txoutsetinfo -datadir=<datadir> -regtest <extra>`, whatever its end.
pub fn txoutsetinfo(datadir: &Path, extra: &[&str]) -> Output {
    ibex()
        .args(["txoutsetinfo", &datadir_argument(datadir), "-regtest"])
        .args(extra)
        .output()
        .unwrap()
}

/// [`txoutsetinfo`]'s answer; the run must succeed.
pub fn txoutsetinfo_json(datadir: &Path, extra: &[&str]) -> serde_json::Value {
    let output = txoutsetinfo(datadir, extra);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `<hash_serialized_3>@<height>` of a `txoutsetinfo` answer.
pub fn hash_at_height(answer: &serde_json::Value) -> String {
    format!("{}@{}", answer["hash_serialized_3"], answer["height"])
}

/// The UTXO set hash and height of `datadir`; `txoutsetinfo` must succeed.
pub fn utxo_hash(datadir: &Path) -> String {
    hash_at_height(&txoutsetinfo_json(datadir, &[]))
}

/// Copies the files `names` of `source` into `<datadir>/regtest/blocks`,
/// created if missing, and returns that directory.
pub fn copy_block_files<Name: AsRef<Path>>(
    datadir: &Path,
    source: &Path,
    names: &[Name],
) -> PathBuf {
    let blocks = datadir.join("regtest/blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for name in names {
        std::fs::copy(source.join(name), blocks.join(name)).unwrap();
    }
    blocks
}

/// `datadir` with the first block file and `xor.dat` of the generated
/// `chain` in its regtest blocks directory.
pub fn datadir_with_blocks(datadir: &Path, chain: &Path) -> PathBuf {
    copy_block_files(datadir, chain, &FIRST_BLOCK_FILE_AND_KEY);
    datadir.to_path_buf()
}

/// Core's regtest chain, its block file and `xor.dat`, copied into
/// `datadir`'s regtest blocks directory, which is returned.
pub fn copy_core_blocks(datadir: &Path) -> PathBuf {
    copy_block_files(datadir, &core_chain().join("blocks"), &FIRST_BLOCK_FILE_AND_KEY)
}

/// `<datadir>/regtest/debug.log`.
pub fn debug_log_path(datadir: &Path) -> PathBuf {
    datadir.join("regtest/debug.log")
}

/// The regtest log of `datadir`, which must exist.
pub fn debug_log(datadir: &Path) -> String {
    std::fs::read_to_string(debug_log_path(datadir)).unwrap()
}

/// Longest wait for a long-running node to get where a test needs it.
pub const NODE_WAIT: Duration = Duration::from_secs(120);

/// Ports [`free_port`] draws from: below Linux's ephemeral range
/// (32768-60999), which the kernel hands out as the source port of every
/// outbound connection, so a node's or a test's `connect` cannot take a
/// port between the moment it is found free and the node binding it.
const TEST_PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A TCP port free on loopback a moment ago, outside the ephemeral range
/// (a pseudo-random draw seeded by the process and the clock, so tests
/// running at once rarely draw the same one).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static DRAWS: AtomicU64 = AtomicU64::new(0);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos() as u64);
    let mut state =
        clock ^ u64::from(std::process::id()) << 32 ^ DRAWS.fetch_add(1, Ordering::Relaxed);
    let span = u64::from(TEST_PORTS.end - TEST_PORTS.start);
    for _ in 0..1_000 {
        // SplitMix64.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^= mixed >> 31;
        let port = TEST_PORTS.start + (mixed % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {TEST_PORTS:?}");
}

/// The regtest log of `datadir`, or nothing if it does not exist yet.
pub fn log_or_empty(datadir: &Path) -> String {
    std::fs::read_to_string(debug_log_path(datadir)).unwrap_or_default()
}

/// Waits until `datadir`'s log contains `text`, or fails with the log.
pub fn wait_for_log(datadir: &Path, text: &str, child: &mut Child) {
    wait_for_log_after(datadir, text, 0, child);
}

/// The bytes `datadir`'s log holds now: what a node started next writes
/// comes after them ([`wait_for_log_after`]).
pub fn log_bytes(datadir: &Path) -> usize {
    log_or_empty(datadir).len()
}

/// As [`wait_for_log`], for `text` written after the log's first
/// `offset_bytes` (a run on a data directory that earlier runs logged to).
pub fn wait_for_log_after(datadir: &Path, text: &str, offset_bytes: usize, child: &mut Child) {
    let started = Instant::now();
    while !log_or_empty(datadir).get(offset_bytes..).is_some_and(|new| new.contains(text)) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ibexd exited ({status:?}) before '{text}':\n{}", log_or_empty(datadir));
        }
        assert!(started.elapsed() < NODE_WAIT, "no '{text}' in\n{}", log_or_empty(datadir));
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for `child` to exit, killing it (and failing with `datadir`'s
/// log) after [`NODE_WAIT`].
pub fn wait_exit(child: &mut Child, datadir: &Path) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > NODE_WAIT {
            child.kill().unwrap();
            panic!("ibexd did not exit; its log:\n{}", log_or_empty(datadir));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A node process that is killed when dropped, so that a failing test
/// leaves no node running behind it (a clean stop waits for its exit first,
/// and then the kill does nothing).
pub struct NodeProcess(pub Child);

impl std::ops::Deref for NodeProcess {
    type Target = Child;

    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for NodeProcess {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Sends SIGTERM to `child` (a node shutting down as on Ctrl-C).
pub fn terminate(child: &Child) {
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success(), "kill -TERM {}", child.id());
}

/// Starts `command` as a [`NodeProcess`].
pub fn spawn_node(command: &mut Command) -> NodeProcess {
    NodeProcess(command.spawn().unwrap())
}

/// The directory `IBEX_CORE_BIN` names (Core's `bitcoind` and
/// `bitcoin-cli`), or `None` after saying that `what` was skipped.
pub fn core_binaries(what: &str) -> Option<PathBuf> {
    match std::env::var_os("IBEX_CORE_BIN") {
        Some(directory) => Some(PathBuf::from(directory)),
        None => {
            eprintln!("skipped: {what} (IBEX_CORE_BIN not set)");
            None
        }
    }
}

/// Writes `blocks` in order to `blk00000.dat` in `directory` with the
/// network's `magic` and no obfuscation (an all-zero `xor.dat`); the file.
pub fn write_block_file<Bytes: AsRef<[u8]>>(
    directory: &Path,
    magic: [u8; 4],
    blocks: &[Bytes],
) -> PathBuf {
    let mut writer = ibex_generator::output::ChainWriter::create(directory, magic, [0; 8]).unwrap();
    for block in blocks {
        writer.append(block.as_ref()).unwrap();
    }
    writer.finish().unwrap();
    directory.join("blk00000.dat")
}
