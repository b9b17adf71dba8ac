//! `ibexd` stays up after its import as `bitcoind` does, even with nobody
//! to reach (`-connect=0 -listen=0`): it answers RPC until the `stop` RPC
//! (or a signal) ends it, and ends by itself only once its tip reaches
//! `-stopatheight`. A reindex that `-stopatheight` cuts short of the end
//! of its block files stays unfinished: the marker keeps `importing`, no
//! `-loadblock` file is read, and the run counts as interrupted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    datadir_with_blocks, debug_log, free_port, generate_chain, log_or_empty, wait_exit,
    wait_for_log, NodeProcess,
};
use ibex_daemon::engine::run_engine;
use ibex_daemon::logging::Logger;
use ibex_daemon::options::parse_options;

/// The generated chain's tip height.
const BLOCKS: u32 = 120;

/// How long a node that is asked to stop may take to exit.
const STOP_WAIT: Duration = Duration::from_secs(10);

const CREDENTIALS: [&str; 2] = ["-rpcuser=stays", "-rpcpassword=up"];

/// A data directory holding a generated chain's block files.
fn datadir(root: &Path) -> PathBuf {
    let chain = root.join("chain");
    generate_chain(&chain, "tiny", &BLOCKS.to_string(), "43", &[]);
    datadir_with_blocks(&root.join("node"), &chain)
}

/// One JSON-RPC call with [`CREDENTIALS`]; the response's body.
fn call(port: u16, method: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#);
    // "stays:up" in base64.
    let request = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nAuthorization: Basic c3RheXM6dXA=\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{method}: {response}");
    response.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned()
}

/// `ibexd -regtest -reindex -connect=0 -listen=0 -server=1` on `datadir`
/// with its RPC server on `rpc_port`, and `extra`.
fn start_alone(datadir: &Path, rpc_port: u16, extra: &[&str]) -> NodeProcess {
    let rpc_option = format!("-rpcport={rpc_port}");
    let mut options = vec!["-reindex", "-connect=0", "-listen=0", "-server=1", rpc_option.as_str()];
    options.extend(CREDENTIALS);
    options.extend(extra);
    common::spawn_node(&mut common::quiet_ibexd(datadir, &common::REGTEST_QUIET, &options))
}

/// Waits up to [`STOP_WAIT`] for `child` to exit by itself.
fn exits_within_stop_wait(child: &mut NodeProcess) -> Option<std::process::ExitStatus> {
    let started = Instant::now();
    while started.elapsed() < STOP_WAIT {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn an_import_with_nobody_to_reach_stays_up_until_the_stop_rpc() {
    let root = tempfile::tempdir().unwrap();
    let datadir = datadir(root.path());
    let port = free_port();
    let mut child = start_alone(&datadir, port, &[]);
    wait_for_log(&datadir, "init message: Done loading", &mut child);
    // Idle with no peer and no listener, it does not end by itself.
    std::thread::sleep(Duration::from_secs(1));
    assert!(child.try_wait().unwrap().is_none(), "{}", log_or_empty(&datadir));
    let count = call(port, "getblockcount");
    assert!(count.contains(&format!("\"result\":{BLOCKS}")), "{count}");
    let stop = call(port, "stop");
    assert!(stop.contains("stopping"), "{stop}");
    let status = exits_within_stop_wait(&mut child);
    assert_eq!(status.and_then(|status| status.code()), Some(0), "{}", log_or_empty(&datadir));
    let log = debug_log(&datadir);
    assert!(log.contains("Reindexing finished") && log.contains("Shutdown: done"), "{log}");
    assert!(!datadir.join("regtest/blocks/reindex.state").exists(), "the reindex is done");
}

#[test]
fn an_import_that_reaches_stopatheight_ends_by_itself() {
    let root = tempfile::tempdir().unwrap();
    let datadir = datadir(root.path());
    let stop_option = format!("-stopatheight={BLOCKS}");
    let mut child = start_alone(&datadir, free_port(), &[&stop_option]);
    let status = wait_exit(&mut child, &datadir);
    assert_eq!(status.code(), Some(0), "{}", log_or_empty(&datadir));
    let log = debug_log(&datadir);
    assert!(log.contains(&format!("Imported to height {BLOCKS}:")), "{log}");
    // It shut down at the end of its import: no sync was started.
    assert!(!log.contains("init message: Done loading"), "{log}");
    // Its last block reached the stop height: the files were read whole.
    assert!(!datadir.join("regtest/blocks/reindex.state").exists(), "the reindex is done");
}

#[test]
fn a_stopatheight_above_the_tip_keeps_the_node_up() {
    let root = tempfile::tempdir().unwrap();
    let datadir = datadir(root.path());
    let port = free_port();
    let stop_option = format!("-stopatheight={}", BLOCKS + 10);
    let mut child = start_alone(&datadir, port, &[&stop_option]);
    wait_for_log(&datadir, "init message: Done loading", &mut child);
    std::thread::sleep(Duration::from_secs(1));
    assert!(child.try_wait().unwrap().is_none(), "{}", log_or_empty(&datadir));
    let count = call(port, "getblockcount");
    assert!(count.contains(&format!("\"result\":{BLOCKS}")), "{count}");
    common::terminate(&child);
    let status = exits_within_stop_wait(&mut child);
    assert_eq!(status.and_then(|status| status.code()), Some(0), "{}", log_or_empty(&datadir));
}

/// `-reindex -stopatheight` below the tip, with a `-loadblock` file, run
/// through the library to read the run's summary.
#[test]
fn a_reindex_cut_short_by_stopatheight_stays_unfinished() {
    let root = tempfile::tempdir().unwrap();
    let datadir = datadir(root.path());
    let stop = BLOCKS / 2;
    let external = root.path().join("chain/blk00000.dat");
    let arguments: Vec<String> = [
        common::datadir_argument(&datadir),
        "-regtest".to_owned(),
        "-printtoconsole=0".to_owned(),
        "-server=0".to_owned(),
        "-reindex".to_owned(),
        format!("-stopatheight={stop}"),
        format!("-loadblock={}", external.display()),
    ]
    .to_vec();
    let options = parse_options(&arguments).unwrap();
    let logger = Logger::open(&options).unwrap();
    let summary = run_engine(&options, &logger, &Arc::new(AtomicBool::new(false))).unwrap();
    logger.flush().unwrap();
    assert!(summary.interrupted, "{summary:?}");
    assert_eq!(summary.height, Some(stop));
    let marker = std::fs::read_to_string(datadir.join("regtest/blocks/reindex.state")).unwrap();
    assert_eq!(marker.trim(), "importing");
    let log = debug_log(&datadir);
    assert!(!log.contains("Importing blocks file"), "the -loadblock file is skipped:\n{log}");
    assert!(!log.contains("init message: Done loading"), "{log}");
}
