//! `dumphints` on Core's regtest chain (`shared/chains/core-wallet-mix`):
//! the hints at the tip name exactly as many unspent outputs as Core's
//! `gettxoutsetinfo` counts coins, and rolled back to height 800 as many
//! as Core counts there; both codings read back, the answer's digest is
//! the file's, the node's chain is untouched, and wrong arguments are
//! refused with `dumptxoutset`'s codes. `ibex hints` refuses while the
//! node runs and, once it is stopped, writes the same bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};

use common::rpc::Endpoint;
use common::{free_port, wait_for_log, NodeProcess};
use ibex_primitives::hints::{HintsFile, HintsVersion};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const TIP_HEIGHT: u64 = 1190;

fn expected() -> Value {
    let text = std::fs::read_to_string(common::core_chain().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ibexd_on_core_chain(datadir: &Path) -> (Endpoint, NodeProcess) {
    common::copy_core_blocks(datadir);
    let port = free_port();
    let options = [
        "-reindex".to_owned(),
        "-listen=0".to_owned(),
        format!("-rpcport={port}"),
        "-rpcuser=user".to_owned(),
        "-rpcpassword=password".to_owned(),
    ];
    let arguments: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut process =
        common::spawn_node(&mut common::quiet_ibexd(datadir, &common::REGTEST_QUIET, &arguments));
    wait_for_log(datadir, "init message: Done loading", &mut process);
    let endpoint = Endpoint { port };
    endpoint.wait_for_height(TIP_HEIGHT, &mut process);
    (endpoint, process)
}

fn chain_directory(datadir: &Path) -> PathBuf {
    datadir.join("regtest")
}

/// The file at `path` read as a hints file of `height`, checked against
/// the answer that wrote it.
fn read_hints(path: &Path, height: u32, answer: &Value) -> HintsFile {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(answer["bytes"], bytes.len() as u64);
    let digest: [u8; 32] = Sha256::digest(&bytes).into();
    assert_eq!(answer["sha256"], ibex_primitives::hex::encode(&digest));
    let file = HintsFile::parse(bytes, Some(height)).unwrap();
    assert_eq!(answer["unspent"], file.unspent_count());
    assert_eq!(u64::from(file.version().byte()), answer["version"].as_u64().unwrap());
    file
}

#[test]
fn dumphints_names_as_many_unspent_outputs_as_core_counts_coins() {
    let root = tempfile::tempdir().unwrap();
    let datadir = root.path().join("ibex");
    let (ibex, mut process) = ibexd_on_core_chain(&datadir);
    let core = expected();
    let tip = &core["gettxoutsetinfo_tip_hash_serialized_3"];

    let answer = ibex.call("dumphints", json!(["hints-tip.dat"]));
    let path = chain_directory(&datadir).join("hints-tip.dat");
    let keys: Vec<&str> = answer.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["path", "height", "hash", "version", "outputs", "unspent", "bytes", "sha256"]
    );
    assert_eq!(answer["path"], path.display().to_string());
    assert_eq!(answer["height"], TIP_HEIGHT);
    assert_eq!(answer["hash"], tip["bestblock"]);
    assert_eq!(answer["version"], 0);
    // Every coin of the set is a numbered output unspent at the tip.
    assert_eq!(answer["unspent"], tip["txouts"]);
    assert!(answer["outputs"].as_u64().unwrap() > answer["unspent"].as_u64().unwrap());
    let file = read_hints(&path, TIP_HEIGHT as u32, &answer);
    assert_eq!(file.version(), HintsVersion::EliasFano);
    assert!(!chain_directory(&datadir).join("hints-tip.dat.incomplete").exists());

    // Rolled back to 800, in btcd's coding: Core's count at 800.
    let at_800 = &core["gettxoutsetinfo"]["800"]["muhash"];
    let answer = ibex.call("dumphints", json!(["hints-800.dat", 800, "btcd"]));
    assert_eq!(answer["height"], 800);
    assert_eq!(answer["hash"], at_800["bestblock"]);
    assert_eq!(answer["unspent"], at_800["txouts"]);
    let file = read_hints(&chain_directory(&datadir).join("hints-800.dat"), 800, &answer);
    assert_eq!(file.version(), HintsVersion::GapList);
    // A name ending in .gz: gzip, as btcd ships its files; the answer's
    // size and hash are the compressed file's.
    let answer = ibex.call("dumphints", json!(["hints-800.dat.gz", 800, "btcd"]));
    let compressed = std::fs::read(chain_directory(&datadir).join("hints-800.dat.gz")).unwrap();
    assert_eq!(compressed[..2], [0x1f, 0x8b]);
    assert_eq!(answer["bytes"], compressed.len() as u64);
    let digest: [u8; 32] = Sha256::digest(&compressed).into();
    assert_eq!(answer["sha256"], ibex_primitives::hex::encode(&digest));
    let mut decompressed = Vec::new();
    flate2::read::GzDecoder::new(compressed.as_slice()).read_to_end(&mut decompressed).unwrap();
    let plain = std::fs::read(chain_directory(&datadir).join("hints-800.dat")).unwrap();
    assert_eq!(decompressed, plain);
    assert!(compressed.len() < plain.len());
    // The same hints in the other coding.
    let answer = ibex.call("dumphints", json!({"path": "hints-800-bip456.dat", "height": 800}));
    let other = read_hints(&chain_directory(&datadir).join("hints-800-bip456.dat"), 800, &answer);
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for height in 1..=800 {
        file.unspent_indices(height, &mut first).unwrap();
        other.unspent_indices(height, &mut second).unwrap();
        assert_eq!(first, second, "block {height}");
    }
    // The node's chain and coins are untouched.
    assert_eq!(ibex.call("getblockcount", json!([])), TIP_HEIGHT);
    let now = ibex.call("gettxoutsetinfo", json!([]));
    assert_eq!(now["hash_serialized_3"], tip["hash_serialized_3"]);

    refusals(ibex, &path);
    let tool_out = root.path().join("tool-800.dat");
    let running = hints_tool(&datadir, &tool_out, &["-height=800", "-format=btcd"]);
    assert!(!running.status.success());
    assert!(String::from_utf8_lossy(&running.stderr).contains("lock"), "{running:?}");
    assert!(!tool_out.exists());
    common::terminate(&process);
    common::wait_exit(&mut process, &datadir);

    // On the stopped node, the tool writes what the RPC wrote.
    let stopped = hints_tool(&datadir, &tool_out, &["-height=800", "-format=btcd"]);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let answer: Value = serde_json::from_slice(&stopped.stdout).unwrap();
    assert_eq!(answer["height"], 800);
    let rpc_bytes = std::fs::read(chain_directory(&datadir).join("hints-800.dat")).unwrap();
    assert_eq!(std::fs::read(&tool_out).unwrap(), rpc_bytes);
    let tool_gzip = root.path().join("tool-800.dat.gz");
    let stopped = hints_tool(&datadir, &tool_gzip, &["-height=800", "-format=btcd"]);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let rpc_gzip = std::fs::read(chain_directory(&datadir).join("hints-800.dat.gz")).unwrap();
    assert_eq!(std::fs::read(&tool_gzip).unwrap(), rpc_gzip);
    let at_tip = root.path().join("tool-tip.dat");
    let stopped = hints_tool(&datadir, &at_tip, &[]);
    assert!(stopped.status.success(), "{}", String::from_utf8_lossy(&stopped.stderr));
    let rpc_bytes = std::fs::read(chain_directory(&datadir).join("hints-tip.dat")).unwrap();
    assert_eq!(std::fs::read(&at_tip).unwrap(), rpc_bytes);
    let again = hints_tool(&datadir, &at_tip, &[]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"), "{again:?}");
}

/// `ibex hints` on `datadir` writing `out`.
fn hints_tool(datadir: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    common::ibex()
        .args(["hints", &common::datadir_argument(datadir), "-regtest"])
        .arg(format!("-out={}", out.display()))
        .args(extra)
        .output()
        .unwrap()
}

fn refusals(ibex: Endpoint, existing: &Path) {
    let (code, message) = ibex.error("dumphints", json!(["hints-tip.dat"]));
    assert_eq!(code, -8);
    assert_eq!(
        message,
        format!(
            "{} already exists. If you are sure this is what you want, move it out of the way first",
            existing.display()
        )
    );
    let (code, message) = ibex.error("dumphints", json!(["other.dat", 5000]));
    assert_eq!((code, message.as_str()), (-8, "Target block height 5000 after current tip 1190"));
    let (code, message) = ibex.error("dumphints", json!(["other.dat", 0]));
    assert_eq!(
        (code, message.as_str()),
        (-8, "Invalid height 0: hints cover blocks from height 1")
    );
    let (code, message) = ibex.error("dumphints", json!(["other.dat", 10, "gzip"]));
    assert_eq!(
        (code, message.as_str()),
        (-8, "Invalid format \"gzip\". Please specify \"bip456\" or \"btcd\"")
    );
    let (code, _) = ibex.error("dumphints", json!(["other.dat", "ten"]));
    assert_eq!(code, -3);
    let (code, message) = ibex.error("dumphints", json!(["missing/dir/hints.dat"]));
    assert_eq!(code, -8);
    assert!(message.ends_with("hints.dat.incomplete for writing."), "{message}");
}
