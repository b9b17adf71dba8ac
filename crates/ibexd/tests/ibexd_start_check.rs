//! A start checks the active chain's last blocks, as Core's `VerifyDB`
//! (`-checkblocks`, default 6, and `-checklevel`) does: after a clean
//! stop, a tip block cut off in its file, a replaced or removed `xor.dat`, or a damaged
//! undo record stops the next start with exit status 1 and the remedy
//! named (Core's "Corrupted block database detected", then the one option
//! that cures it, `-reindex`: Core also names `-reindex-chainstate`, which
//! keeps the damaged records; for the key, which a reindex cannot fix, the
//! key to restore). A `-reindex` over the cut-off
//! file says in the log that its last record is cut off.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{datadir_with_blocks, debug_log, generate_chain};

/// The generated chain's tip height.
const TIP_HEIGHT: u32 = 200;
/// Core's corruption message and remedy.
const CORRUPTED: &str = "Error: Corrupted block database detected: ";
const REINDEX_REMEDY: &str = "Please restart with -reindex to recover.";

/// `ibexd` with no RPC server and `extra`, ending at the chain's tip
/// (`-stopatheight`) unless it is refused first.
fn ibexd(datadir: &Path, extra: &[&str]) -> Output {
    let stop = format!("-stopatheight={TIP_HEIGHT}");
    let options = ["-server=0", stop.as_str()];
    common::ibexd(datadir, &common::REGTEST_QUIET, &options).args(extra).output().unwrap()
}

/// `ibexd` with no RPC server, no P2P and `extra`, on a chain that ends
/// below the stop height: stopped with SIGTERM once loaded; its status.
fn ibexd_until_loaded(datadir: &Path, extra: &[&str]) -> std::process::ExitStatus {
    let options = ["-server=0", "-connect=0", "-listen=0"];
    let log_bytes_before = common::log_bytes(datadir);
    let mut node = common::spawn_node(
        common::quiet_ibexd(datadir, &common::REGTEST_QUIET, &options).args(extra),
    );
    common::wait_for_log_after(datadir, "init message: Done loading", log_bytes_before, &mut node);
    common::terminate(&node);
    common::wait_exit(&mut node, datadir)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The offset just past the last non-zero byte of `path` (a block or undo
/// file may end in pre-allocated zeros).
fn data_end(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap();
    bytes.iter().rposition(|byte| *byte != 0).unwrap() + 1
}

/// A start on `datadir` must fail with `expected` (and `remedy`) on stderr
/// and in the log, and leave it as it was.
fn assert_refused(datadir: &Path, expected: &str, remedy: &str) -> String {
    let output = ibexd(datadir, &[]);
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains(expected), "{text}");
    assert!(text.trim_end().ends_with(remedy), "{text}");
    let log = debug_log(datadir);
    assert!(log.contains("Verifying last 6 blocks at level 2"), "{log}");
    assert!(log.contains("Verification error: "), "{log}");
    text
}

struct Fixture {
    root: tempfile::TempDir,
    clean: PathBuf,
    key: Vec<u8>,
}

impl Fixture {
    /// A generated chain reindexed and stopped cleanly.
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let chain = root.path().join("chain");
        generate_chain(&chain, "small", &TIP_HEIGHT.to_string(), "18", &[]);
        let clean = datadir_with_blocks(&root.path().join("clean"), &chain);
        let output = ibexd(&clean, &["-reindex"]);
        assert!(output.status.success(), "{}", stderr(&output));
        let key = std::fs::read(clean.join("regtest/blocks/xor.dat")).unwrap();
        assert!(key.iter().any(|byte| *byte != 0), "the generated chain is obfuscated");
        Fixture { root, clean, key }
    }

    fn copy(&self, name: &str) -> PathBuf {
        let datadir = self.root.path().join(name);
        copy_tree(&self.clean, &datadir);
        datadir
    }
}

#[test]
fn a_start_refuses_damaged_last_blocks_with_the_remedy() {
    let fixture = Fixture::new();
    let log = {
        let output = ibexd(&fixture.clean, &[]);
        assert!(output.status.success(), "{}", stderr(&output));
        debug_log(&fixture.clean)
    };
    assert!(
        log.contains("Verification: No block data inconsistencies in last 6 blocks"),
        "an intact datadir passes: {log}"
    );

    // -checkblocks=0 checks every block of the chain.
    let before = log.len();
    let output = ibexd(&fixture.clean, &["-checkblocks=0"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let log = debug_log(&fixture.clean);
    let every_block = TIP_HEIGHT + 1;
    assert!(log[before..].contains(&format!("Verifying last {every_block} blocks at level 2")));
    assert!(log[before..]
        .contains(&format!("No block data inconsistencies in last {every_block} blocks")));

    // The tip block cut off in its file.
    let truncated = fixture.copy("truncated");
    let block_file = truncated.join("regtest/blocks/blk00000.dat");
    let end = data_end(&block_file);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&block_file)
        .unwrap()
        .set_len(end as u64 - 100)
        .unwrap();
    assert_refused(&truncated, &format!("ReadBlock failed at {TIP_HEIGHT}, hash="), REINDEX_REMEDY);
    // A reindex over it says the last record is cut off, and ends a block
    // short (below the stop height: it stays up until SIGTERM).
    let status = ibexd_until_loaded(&truncated, &["-reindex"]);
    assert!(status.success(), "{status:?}");
    let log = debug_log(&truncated);
    assert!(log.contains("blk00000.dat: the last record is cut off"), "{log}");
    assert!(log.contains(&format!("Imported to height {}:", TIP_HEIGHT - 1)), "{log}");

    // A replaced xor.dat, then none: the remedy is the key, which a reindex
    // cannot supply.
    let key_hex = ibex_primitives::hex::encode(&fixture.key);
    let restore = format!(
        "Please restore {}",
        fixture.root.path().join("wrong-key/regtest/blocks/xor.dat").display()
    );
    let wrong_key = fixture.copy("wrong-key");
    std::fs::write(wrong_key.join("regtest/blocks/xor.dat"), [0x11u8; 8]).unwrap();
    let text = assert_refused(
        &wrong_key,
        &format!("obfuscated with the key {key_hex}"),
        "with the wrong key too.",
    );
    assert!(text.contains(&restore), "{text}");
    assert!(text.contains("holds 1111111111111111"), "{text}");
    std::fs::remove_file(wrong_key.join("regtest/blocks/xor.dat")).unwrap();
    let text = assert_refused(&wrong_key, "xor.dat is missing", "with the wrong key too.");
    assert!(text.contains(&format!("its 8 bytes are {key_hex}")), "{text}");

    // The tip's undo record failing its checksum (its last byte changed).
    let bad_undo = fixture.copy("bad-undo");
    let undo_file = bad_undo.join("regtest/blocks/rev00000.dat");
    let mut bytes = std::fs::read(&undo_file).unwrap();
    let last = data_end(&undo_file) - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&undo_file, &bytes).unwrap();
    let text = assert_refused(
        &bad_undo,
        &format!("found bad undo data at {TIP_HEIGHT}, hash="),
        REINDEX_REMEDY,
    );
    assert!(text.starts_with(CORRUPTED), "{text}");
    // -checklevel=1 does not read undo records: the start goes on.
    let output = ibexd(&bad_undo, &["-checklevel=1"]);
    assert!(output.status.success(), "-checklevel=1: {}", stderr(&output));
    // The remedy named works.
    let output = ibexd(&bad_undo, &["-reindex"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = ibexd(&bad_undo, &[]);
    assert!(output.status.success(), "after -reindex: {}", stderr(&output));
}
