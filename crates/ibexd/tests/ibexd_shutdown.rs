//! `ibexd` stops cleanly on SIGTERM and SIGINT (flush, `Shutdown: done`,
//! exit 0) and a restart continues to the same UTXO set; `-loadblock`
//! imports an unobfuscated block file into a fresh datadir (the node writes
//! the blocks into its own files) and reaches the same UTXO set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{datadir_with_blocks, generate_chain, utxo_hash};

/// The generated chain's tip height.
const BLOCKS: &str = "300";

/// `ibexd` with no RPC server, ending at the chain's tip
/// (`-stopatheight`) unless a signal ends it first, with `extra`.
fn node(datadir: &Path, extra: &[&str]) -> Command {
    let stop = format!("-stopatheight={BLOCKS}");
    let options = ["-server=0", stop.as_str()];
    let mut command = common::quiet_ibexd(datadir, &common::REGTEST_QUIET_SMALL_CACHE, &options);
    command.args(extra);
    command
}

fn signal(pid: u32, name: &str) {
    let status =
        Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

#[test]
fn signals_stop_cleanly_and_loadblock_imports() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "small", BLOCKS, "5", &["--xor-zero"]);
    let clean = datadir_with_blocks(&root.path().join("clean"), &chain);
    assert!(node(&clean, &["-reindex"]).status().unwrap().success());
    let expected = utxo_hash(&clean);

    for (index, name) in ["TERM", "INT"].iter().enumerate() {
        let datadir = datadir_with_blocks(&root.path().join(format!("signal-{name}")), &chain);
        let mut child = node(&datadir, &["-reindex"]).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(300 + 200 * index as u64));
        signal(child.id(), name);
        let status = child.wait().unwrap();
        assert!(status.success(), "SIG{name}: {status:?}");
        let log = common::debug_log(&datadir);
        assert!(log.contains("Shutdown: done"), "SIG{name}: no clean shutdown in the log");
        assert!(node(&datadir, &[]).status().unwrap().success());
        assert_eq!(utxo_hash(&datadir), expected, "after SIG{name} and a restart");
    }

    let loaded = root.path().join("loaded");
    std::fs::create_dir_all(&loaded).unwrap();
    let file = chain.join("blk00000.dat");
    assert!(node(&loaded, &[&format!("-loadblock={}", file.display())])
        .status()
        .unwrap()
        .success());
    assert_eq!(utxo_hash(&loaded), expected);
    assert!(loaded.join("regtest/blocks/blk00000.dat").exists());
}
