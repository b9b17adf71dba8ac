//! A settled query, run on the engine's thread during an import with
//! reorganisations, sees one settled state: the tip settled with its undo
//! data, the published snapshot and hash list at that tip, the coins the
//! tip's. The read API's answers are computed in such queries; this test
//! looks at the engine's inner state from inside one, so it lives in the
//! crate.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ibex_generator::{generate, GeneratorOptions, Profile};
use ibex_primitives::{OutPoint, Params};

use crate::engine::{ChainReader, Chainstate, ChainstateOptions, ReadError};
use crate::import::{import_blocks, ImportSource};
use crate::index::BlockStatus;

const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// A generated chain with forks in `root/blocks`, and its tip's hash (hex)
/// and height; the chainstate opened on it, nothing imported.
fn forked_chain(root: &std::path::Path) -> ((String, u32), Chainstate) {
    let generated = root.join("generated");
    let mut options = GeneratorOptions::new(Profile::Tiny, 7, generated.clone());
    options.threads = Some(2);
    options.forks = true;
    let manifest = generate(&options).unwrap().manifest;
    let blocks = root.join("blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for entry in std::fs::read_dir(&generated).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("blk") || name == "xor.dat" {
            std::fs::copy(entry.path(), blocks.join(name)).unwrap();
        }
    }
    let options = ChainstateOptions {
        params: Params::regtest(),
        blocks_directory: blocks,
        chainstate_directory: root.join("chainstate"),
        memory: crate::MemoryBudget::for_coins_bytes(32 << 20, 1 << 16),
        script_threads: 2,
        assume_valid: None,
        periodic_flush_interval: Duration::from_secs(3600),
        stop_at_height: None,
        prune: crate::PruneMode::Disabled,
        fast_prune: false,
    };
    let chainstate = Chainstate::open(options, Box::new(|_: &crate::ChainEvent| {})).unwrap();
    ((manifest.tip_hash.clone(), manifest.block_count), chainstate)
}

/// What a query found wrong about the state it saw, if anything.
fn inconsistency(chainstate: &Chainstate, reader: &ChainReader) -> Option<String> {
    let (tip_hash, tip_height) = chainstate.tip()?;
    let tip = chainstate.chain().tip()?;
    let entry = chainstate.index().entry(tip);
    // Settled: the tip's scripts were checked and its undo data written.
    if !entry.status.is_valid(BlockStatus::VALID_SCRIPTS) {
        return Some(format!("tip {tip_height} not settled"));
    }
    if tip_height > 0 && entry.undo_position.is_none() {
        return Some(format!("tip {tip_height} has no undo data"));
    }
    // The published snapshot is this very tip, and the hash list ends at it.
    let snapshot = reader.snapshot();
    let published = snapshot.tip.as_ref()?;
    if (published.hash, published.height) != (tip_hash, tip_height) {
        return Some(format!("published {} but the tip is {tip_height}", published.height));
    }
    for height in [0, tip_height / 2, tip_height] {
        let active = chainstate.chain().at(height).map(|id| chainstate.index().entry(id).hash);
        if reader.block_hash_at(height) != active {
            return Some(format!("published hash at {height} differs"));
        }
    }
    if reader.block_hash_at(tip_height + 1).is_some() {
        return Some("a hash published above the tip".into());
    }
    // The coins are the tip's: its coinbase's first spendable output is
    // unspent (coinbases mature after 100 blocks).
    if tip_height > 0 {
        let block = chainstate.read_block(tip).unwrap();
        let coinbase = block.view().transactions().next()?;
        let spendable = coinbase.outputs().iter().position(|output| {
            output.script_pubkey.first() != Some(&0x6a) && !output.script_pubkey.is_empty()
        })?;
        let outpoint = OutPoint { txid: block.txids()[0], vout: spendable as u32 };
        let coin = chainstate.coin(&outpoint).unwrap();
        if coin.map(|coin| coin.height()) != Some(tip_height) {
            return Some(format!("the coinbase coin of tip {tip_height} is missing"));
        }
    }
    None
}

#[test]
fn queries_during_an_import_with_reorganisations_see_one_settled_state() {
    let root = tempfile::tempdir().unwrap();
    let (expected_tip, mut chainstate) = forked_chain(root.path());
    let reader = chainstate.reader();
    let stop = Arc::new(AtomicBool::new(false));
    let asker = {
        let (reader, stop) = (reader.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut answered = 0u32;
            let mut heights = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let inner = reader.clone();
                let query = move |chainstate: &Chainstate| {
                    (chainstate.tip().map(|(_, height)| height), inconsistency(chainstate, &inner))
                };
                match reader.query(query, ANSWER_TIMEOUT) {
                    Ok((height, None)) => {
                        answered += 1;
                        heights.extend(height);
                    }
                    Ok((height, Some(problem))) => panic!("at {height:?}: {problem}"),
                    Err(ReadError::Stopped) => break,
                    Err(error) => panic!("query failed: {error}"),
                }
            }
            (answered, heights)
        })
    };
    let summary =
        import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false))
            .unwrap();
    stop.store(true, Ordering::Relaxed);
    // The asker's last query is answered here, after the import.
    let mut waited = 0;
    while !asker.is_finished() && waited < 600 {
        chainstate.wait_and_serve_reads(Duration::from_millis(100)).unwrap();
        waited += 1;
    }
    let (answered, heights) = asker.join().unwrap();
    assert!(summary.blocks_accepted > 0);
    assert!(answered >= 2, "only {answered} queries answered during the import");
    assert!(heights.windows(2).any(|pair| pair[0] != pair[1]), "no query between two tips");
    let (tip_hash, tip_height) = chainstate.tip().unwrap();
    assert_eq!((tip_hash.to_hex(), tip_height), expected_tip, "imported tip");
}
