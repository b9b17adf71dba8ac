//! Invalid siblings as a user meets them: block files ending with invalid
//! siblings of the tip (two script failures) before the valid one. `ibexd -reindex`
//! must end at the valid sibling with the UTXO set of the valid chain alone
//! and say in its log that the best valid candidate was reached; so must a
//! restart. `ibex gen --invalid-siblings` makes such files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::debug_log;

const BLOCKS: &str = "130";
/// Every run ends at the chain's tip height (`-stopatheight`), with no
/// RPC server to bind.
const NODE_OPTIONS: [&str; 5] =
    ["-regtest", "-printtoconsole=0", "-assumevalid=0", "-stopatheight=130", "-server=0"];

/// `ibex gen` of a tiny chain into `directory`: its manifest.
fn generate(directory: &Path, extra: &[&str]) -> serde_json::Value {
    common::generate_chain(directory, "tiny", BLOCKS, "9", extra);
    let manifest = std::fs::read_to_string(directory.join("manifest.json")).unwrap();
    serde_json::from_str(&manifest).unwrap()
}

/// Every block file of `chain` (siblings may add some) and its `xor.dat`.
fn install_blocks(datadir: &Path, chain: &Path) {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(chain).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("blk") || name == "xor.dat" {
            names.push(name);
        }
    }
    common::copy_block_files(datadir, chain, &names);
}

fn run_node(datadir: &Path, extra: &[&str]) {
    let status = common::quiet_ibexd(datadir, &NODE_OPTIONS, extra).status().unwrap();
    assert!(status.success(), "ibexd {extra:?}: {status:?}");
}

fn txoutsetinfo(datadir: &Path) -> serde_json::Value {
    common::txoutsetinfo_json(datadir, &[])
}

#[test]
fn reindex_and_restart_end_at_the_valid_sibling() {
    let root = tempfile::tempdir().unwrap();
    let alone = root.path().join("alone");
    let alone_manifest = generate(&alone, &[]);
    let chain = root.path().join("siblings");
    let siblings = "invalid_signature,invalid_signature";
    let manifest = generate(&chain, &["--invalid-siblings", siblings]);
    assert_eq!(manifest["tip_hash"], alone_manifest["tip_hash"]);
    let invalid = manifest["invalid_blocks"].as_array().unwrap();
    assert_eq!(invalid.len(), 2);

    let reference = root.path().join("reference");
    install_blocks(&reference, &alone);
    run_node(&reference, &["-reindex"]);
    let expected = txoutsetinfo(&reference);

    let datadir = root.path().join("node");
    install_blocks(&datadir, &chain);
    run_node(&datadir, &["-reindex"]);
    let tip = manifest["tip_hash"].as_str().unwrap();
    let reached =
        format!("Chain activation: best valid candidate reached: height={BLOCKS} best={tip}");
    let log = debug_log(&datadir);
    assert!(log.contains(&reached), "no '{reached}' in\n{log}");
    for record in invalid {
        let hash = record["hash"].as_str().unwrap();
        assert!(log.contains(&format!("InvalidChainFound: invalid block={hash}")), "{hash}");
    }
    let found = txoutsetinfo(&datadir);
    assert_eq!(found["bestblock"], tip);
    assert_eq!(found["hash_serialized_3"], expected["hash_serialized_3"]);
    assert_eq!(found["txouts"], expected["txouts"]);

    // A restart checks the fixed point again and stays there.
    let log_length = log.len();
    run_node(&datadir, &[]);
    let restarted = debug_log(&datadir)[log_length..].to_owned();
    assert!(restarted.contains(&reached), "no '{reached}' after the restart in\n{restarted}");
    assert_eq!(txoutsetinfo(&datadir)["hash_serialized_3"], expected["hash_serialized_3"]);
}
