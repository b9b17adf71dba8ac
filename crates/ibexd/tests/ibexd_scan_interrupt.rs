//! SIGTERM stops `ibexd` while it scans a `-loadblock` source that holds no
//! block: `/dev/zero` and `/dev/urandom` never end and an 8 GiB file of zeros
//! takes many seconds to search for the network magic, yet the node stops
//! within [`STOP_WAIT_MAX`] of the signal, cleanly (exit status 0, `Shutdown:
//! done`), as Core's `LoadExternalBlockFile` checks its interrupt in its loop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{quiet_ibexd, spawn_node, terminate, wait_exit, wait_for_log, REGTEST_QUIET};

/// The longest a scanning node may take to exit after SIGTERM (it reads one
/// 8 MiB window after the signal at most, then flushes an empty chainstate).
const STOP_WAIT_MAX: Duration = Duration::from_secs(5);
/// How long the node scans before the signal.
const SCAN_BEFORE_SIGNAL: Duration = Duration::from_millis(700);

/// Starts a node importing `source`, signals it mid-scan; the time it took
/// to exit after the signal.
fn stop_during_scan(datadir: &Path, source: &Path) -> Duration {
    std::fs::create_dir_all(datadir).unwrap();
    let option = format!("-loadblock={}", source.display());
    let mut child = spawn_node(&mut quiet_ibexd(datadir, &REGTEST_QUIET, &[&option, "-server=0"]));
    wait_for_log(datadir, "Importing blocks file", &mut child);
    std::thread::sleep(SCAN_BEFORE_SIGNAL);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the scan of {} ended by itself",
        source.display()
    );
    let signalled = Instant::now();
    terminate(&child);
    let status = wait_exit(&mut child, datadir);
    let stop_time = signalled.elapsed();
    assert!(status.success(), "{}: {status:?}", source.display());
    let log = common::debug_log(datadir);
    assert!(log.contains("Shutdown: done"), "{}: no clean shutdown:\n{log}", source.display());
    stop_time
}

#[test]
fn sigterm_stops_a_scan_of_endless_or_huge_sources() {
    let root = tempfile::tempdir().unwrap();
    let zeros = root.path().join("zeros.dat");
    // Sparse: 8 GiB of zeros to read, none on disk.
    std::fs::File::create(&zeros).unwrap().set_len(8 << 30).unwrap();
    for (index, source) in
        [Path::new("/dev/zero"), Path::new("/dev/urandom"), zeros.as_path()].iter().enumerate()
    {
        let datadir = root.path().join(format!("node-{index}"));
        let stop_time = stop_during_scan(&datadir, source);
        eprintln!("{}: exited {} ms after SIGTERM", source.display(), stop_time.as_millis());
        assert!(stop_time < STOP_WAIT_MAX, "{}: {stop_time:?}", source.display());
    }
}
