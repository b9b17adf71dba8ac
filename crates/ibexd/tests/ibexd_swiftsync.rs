//! SwiftSync end to end on a generated `small` chain: node A imports it
//! and writes the hints at height 250 (`dumphints`); node B syncs from A
//! over P2P with them (`-swiftsync`, `-assumevalid` at the tip, so that
//! Core would skip the scripts below 250) and ends on A's coin set; a
//! node importing the block files with hints wrong each way (an output
//! spent marked unspent, an unspent one marked spent) or for a height
//! beyond the chain gives SwiftSync up and ends on the same set; broken
//! files stop the start with a clear error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::assumeutxo::{rpc_options, start, stop};
use common::swiftsync::{
    client_options, coin_set, node, serving_node, wait_for_moment, ServingNode,
};
use common::{datadir_with_blocks, debug_log, free_port};
use ibex_primitives::hints::{HintsFile, HintsVersion, HintsWriter};
use serde_json::{json, Value};

const TIP_HEIGHT: u64 = 2_300;
/// More than 2,016 blocks below the tip: `-assumevalid` covers it.
const TERMINAL_HEIGHT: u32 = 250;

/// The hints of `path` with one output's mark flipped in the first block
/// above 100 that keeps one: `add` marks a spent output unspent, else the
/// block's last unspent output is marked spent.
fn flipped_hints(path: &Path, add: bool) -> Vec<u8> {
    let file = HintsFile::parse(std::fs::read(path).unwrap(), None).unwrap();
    let mut writer = HintsWriter::new(file.version(), file.terminal_height());
    let (mut flipped, mut indices) = (false, Vec::new());
    for height in 1..=file.terminal_height() {
        file.unspent_indices(height, &mut indices).unwrap();
        if !flipped && height > 100 && !indices.is_empty() {
            flipped = true;
            if add {
                let spent = (0..).find(|number| !indices.contains(number)).unwrap();
                indices.push(spent);
                indices.sort_unstable();
            } else {
                indices.pop();
            }
        }
        writer.push_block(&indices);
    }
    assert!(flipped);
    writer.finish().unwrap()
}

/// Imports the chain's block files into `datadir` again (`-reindex`, no
/// peers) with the hints file `hints`, waits for the tip, and returns the
/// coin set and what this run logged.
fn import_with_hints(datadir: &Path, hints: &Path, assume_valid: &str) -> ((Value, Value), String) {
    let options = [
        "-reindex".to_owned(),
        "-connect=0".to_owned(),
        "-listen=0".to_owned(),
        format!("-swiftsync={}", hints.display()),
        format!("-assumevalid={assume_valid}"),
    ];
    let offset = common::log_bytes(datadir);
    let (endpoint, mut process) = node(datadir, &options);
    endpoint.wait_for_height(TIP_HEIGHT, &mut process);
    let set = coin_set(endpoint);
    stop(endpoint, &mut process, datadir);
    (set, debug_log(datadir).get(offset..).unwrap_or_default().to_owned())
}

/// Starts a node with `-swiftsync=<hints>`: it must refuse to start, with
/// `words` on its standard error.
fn refused_start(datadir: &Path, hints: &Path, words: &str) {
    let output = common::ibexd(
        datadir,
        &common::REGTEST_QUIET,
        &["-connect=0", "-listen=0", "-server=0", &format!("-swiftsync={}", hints.display())],
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(words), "{stderr}");
}

/// Where a SwiftSync IBD is cut by `kill -9`: a log line to wait for
/// (empty: none), then milliseconds more.
const KILL_MOMENTS: [(&str, u64); 8] = [
    ("init message: Done loading", 0),
    ("[swiftsync] waiting", 0),
    ("[swiftsync] waiting", 300),
    ("[swiftsync] waiting", 900),
    ("[swiftsync] accounting", 0),
    ("[swiftsync] accounting", 40),
    ("[swiftsync] the aggregate is zero", 0),
    ("UpdateTip: new best=", 500),
];

/// A node syncing from A with the hints (`options`) on `datadir`, killed
/// (`kill -9`) at each of [`KILL_MOMENTS`] and started again: the last
/// start syncs to the tip and ends on `expected`.
fn killed_at_eight_moments(datadir: &Path, options: &[String], expected: &(Value, Value)) {
    std::fs::create_dir_all(datadir).unwrap();
    for (text, delay_ms) in KILL_MOMENTS {
        let offset = common::log_bytes(datadir);
        let port = free_port();
        let mut all = rpc_options(port);
        all.extend_from_slice(options);
        let mut process = start(datadir, &all);
        wait_for_moment(datadir, text, offset, &mut process);
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        process.kill().unwrap();
        process.wait().unwrap();
    }
    let (endpoint, mut process) = node(datadir, options);
    endpoint.wait_for_height(TIP_HEIGHT, &mut process);
    assert_eq!(&coin_set(endpoint), expected, "{}", debug_log(datadir));
    stop(endpoint, &mut process, datadir);
}

#[test]
fn swiftsync_ends_on_the_usual_coin_set_or_gives_up_for_wrong_hints() {
    let root = tempfile::tempdir().unwrap();
    let ServingNode { endpoint: a, process: mut a_process, datadir: a_datadir, p2p_port, expected } =
        serving_node(root.path(), TIP_HEIGHT, "46", &[]);
    let chain = root.path().join("chain");
    let tip_hash = a.call("getbestblockhash", json!([]));
    let tip_hash = tip_hash.as_str().unwrap().to_owned();
    let answer = a.call("dumphints", json!(["hints.dat", TERMINAL_HEIGHT]));
    let hints = PathBuf::from(answer["path"].as_str().unwrap());
    assert_eq!(answer["version"], u64::from(HintsVersion::EliasFano.byte()));

    // B: an IBD over P2P with the hints.
    let b_datadir = root.path().join("b");
    std::fs::create_dir_all(&b_datadir).unwrap();
    let b_options = client_options(p2p_port, &hints, &tip_hash);
    let (b, mut b_process) = node(&b_datadir, &b_options);
    b.wait_for_height(TIP_HEIGHT, &mut b_process);
    assert_eq!(coin_set(b), expected);
    stop(b, &mut b_process, &b_datadir);
    let log = debug_log(&b_datadir);
    let proven =
        format!("[swiftsync] the aggregate is zero: chainstate at height {TERMINAL_HEIGHT}");
    assert!(log.contains(&proven), "{log}");
    assert!(!log.contains("given up"), "{log}");
    // A restart checks the last blocks (they have undo data) and goes on.
    let (b, mut b_process) = node(&b_datadir, &["-connect=0".to_owned(), "-listen=0".to_owned()]);
    assert_eq!(coin_set(b), expected);
    stop(b, &mut b_process, &b_datadir);
    killed_at_eight_moments(&root.path().join("d"), &b_options, &expected);
    stop(a, &mut a_process, &a_datadir);

    // C: the block files imported with hints that are wrong.
    let c_datadir = datadir_with_blocks(&root.path().join("c"), &chain);
    for add in [true, false] {
        let path = root.path().join(format!("flipped-{add}.dat"));
        std::fs::write(&path, flipped_hints(&hints, add)).unwrap();
        let (set, log) = import_with_hints(&c_datadir, &path, &tip_hash);
        assert_eq!(set, expected);
        let given_up = format!("[swiftsync] given up, syncing without hints: the aggregate is not zero at height {TERMINAL_HEIGHT}");
        assert!(log.contains(&given_up), "{log}");
    }
    let beyond_height = TIP_HEIGHT as u32 + 5;
    let mut writer = HintsWriter::new(HintsVersion::EliasFano, beyond_height);
    (0..beyond_height).for_each(|_| writer.push_block(&[]));
    let beyond = root.path().join("beyond.dat");
    std::fs::write(&beyond, writer.finish().unwrap()).unwrap();
    let (set, log) = import_with_hints(&c_datadir, &beyond, &tip_hash);
    assert_eq!(set, expected);
    let given_up =
        format!("the hints end at height {beyond_height}, above the best header ({TIP_HEIGHT})");
    assert!(log.contains(&given_up), "{log}");

    // Files that are not hints files stop the start.
    let bytes = std::fs::read(&hints).unwrap();
    let truncated = root.path().join("truncated.dat");
    std::fs::write(&truncated, &bytes[..bytes.len() - 3]).unwrap();
    let mut magic = bytes.clone();
    magic[0] ^= 0x01;
    let bad_magic = root.path().join("magic.dat");
    std::fs::write(&bad_magic, magic).unwrap();
    let refused = root.path().join("refused");
    std::fs::create_dir_all(&refused).unwrap();
    for path in [&truncated, &bad_magic] {
        refused_start(&refused, path, "is not usable");
    }
    refused_start(
        &refused,
        &root.path().join("missing.dat"),
        "cannot read the SwiftSync hints file",
    );
}
