//! Small operator-facing behaviours of `ibexd`: `-debuglogfile` in a
//! missing directory is refused as Core refuses it, creating nothing;
//! `-help` written to a closed pipe ends quietly (no panic), and so does
//! `ibex block`'s answer; a start after a reindex that did not finish says
//! so in the log.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, unsafe_code)]

mod common;

use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

use common::{datadir_with_blocks, debug_log, generate_chain, wait_for_log, REGTEST_QUIET};

#[test]
fn a_log_file_in_a_missing_directory_is_refused_and_nothing_is_created() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("node");
    std::fs::create_dir_all(&datadir).unwrap();
    let missing = root.path().join("missing/deeper");
    let log_file = missing.join("node.log");
    let option = format!("-debuglogfile={}", log_file.display());
    let output = common::ibexd(&datadir, &REGTEST_QUIET, &[&option]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let expected = format!("Error: Could not open debug log file {}", log_file.display());
    assert!(stderr.starts_with(&expected), "{stderr}");
    assert!(!root.path().join("missing").exists(), "no directory is created for the log");
}

/// A pipe whose read end is already closed: writing to it fails with EPIPE.
fn pipe_without_reader() -> OwnedFd {
    let mut ends = [0 as libc::c_int; 2];
    // SAFETY: `ends` is a valid array of two descriptors for `pipe` to fill.
    assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
    // SAFETY: `pipe` returned two new descriptors that nothing else owns.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    drop(read_end);
    write_end
}

#[test]
fn help_to_a_closed_pipe_ends_quietly() {
    let home = tempfile::tempdir().unwrap();
    for (binary, argument) in
        [(env!("CARGO_BIN_EXE_ibexd"), "-help"), (env!("CARGO_BIN_EXE_ibexd"), "-version")]
    {
        let output = std::process::Command::new(binary)
            .arg(argument)
            .env("HOME", home.path())
            .stdout(Stdio::from(pipe_without_reader()))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!stderr.contains("panicked"), "{binary} {argument}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{binary} {argument}: {stderr}");
    }
    // `ibex block`'s JSON summary, to a reader that has gone.
    let output = common::ibex()
        .arg("block")
        .arg(common::shared("vectors/blocks/mainnet-413567.raw"))
        .stdout(Stdio::from(pipe_without_reader()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[test]
fn a_start_after_an_unfinished_reindex_says_so() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "tiny", "50", "19", &[]);
    let datadir = datadir_with_blocks(&root.path().join("node"), &chain);
    // The reindex's own files are read, then `/dev/zero` is scanned
    // forever: a kill there leaves the reindex unfinished, every time.
    let mut child = common::spawn_node(&mut common::quiet_ibexd(
        &datadir,
        &REGTEST_QUIET,
        &["-reindex", "-loadblock=/dev/zero", "-server=0"],
    ));
    wait_for_log(&datadir, "Importing blocks file /dev/zero", &mut child);
    child.kill().unwrap();
    child.wait().unwrap();
    let before = debug_log(&datadir).len();
    // The restart ends at the chain's tip.
    let restart_options = ["-stopatheight=50", "-server=0"];
    let output = common::ibexd(&datadir, &REGTEST_QUIET, &restart_options).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let log = debug_log(&datadir);
    let restart = &log[before..];
    assert!(
        restart.contains(
            "An earlier reindex was interrupted: continuing it from the blocks already imported"
        ),
        "{restart}"
    );
    assert!(restart.contains("Reindexing finished"), "{restart}");
    assert!(restart.contains("Imported to height 50:"), "{restart}");
}
