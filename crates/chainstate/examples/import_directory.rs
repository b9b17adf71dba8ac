//! Imports a blocks directory (`blk?????.dat` + `xor.dat`, e.g. from
//! `ibex gen`) into a fresh chainstate and prints timings: a quick
//! profiling aid. Usage:
//! `import_directory SOURCE_BLOCKS WORK_DIR [DBCACHE_MIB] [PAR] [assumevalid]`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use ibex_chainstate::{
    import_blocks, ChainEvent, Chainstate, ChainstateOptions, FlushMode, FlushReason, ImportSource,
};
use ibex_primitives::{BlockHash, Params};

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    let source = PathBuf::from(&arguments[1]);
    let work = PathBuf::from(&arguments[2]);
    let dbcache: usize = arguments.get(3).map_or(450, |text| text.parse().unwrap());
    let par: usize = arguments.get(4).map_or(2, |text| text.parse().unwrap());
    let assume_valid_tip = arguments.get(5).is_some_and(|text| text == "assumevalid");
    let _ = std::fs::remove_dir_all(&work);
    let blocks = work.join("blocks");
    std::fs::create_dir_all(&blocks).unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("blk") || name == "xor.dat" {
            std::fs::copy(&path, blocks.join(&name)).unwrap();
        }
    }
    let assume_valid = assume_valid_tip.then(|| {
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(source.join("manifest.json")).unwrap())
                .unwrap();
        let tip = manifest["tip"]["hash"].as_str().or(manifest["tip_hash"].as_str()).unwrap();
        BlockHash::from_hex(tip).unwrap()
    });
    let options = ChainstateOptions {
        params: Params::regtest(),
        blocks_directory: blocks,
        chainstate_directory: work.join("chainstate"),
        memory: ibex_chainstate::MemoryBudget::from_dbcache_bytes(dbcache << 20, 32 << 20),
        script_threads: par,
        assume_valid,
        periodic_flush_interval: Duration::from_secs(3600),
        stop_at_height: None,
        prune: ibex_chainstate::PruneMode::Disabled,
        fast_prune: false,
    };
    let mut invalid = 0;
    let observer = move |event: &ChainEvent| match event {
        ChainEvent::BlockInvalid { hash, reason, .. } => {
            invalid += 1;
            eprintln!("invalid {hash}: {reason} ({invalid})");
        }
        ChainEvent::Flushed { stats, duration_ms, .. } => {
            eprintln!("flush {duration_ms} ms: {stats:?}");
        }
        _ => {}
    };
    let started = Instant::now();
    let mut chainstate = Chainstate::open(options, Box::new(observer)).unwrap();
    let summary =
        import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false))
            .unwrap();
    let import_seconds = started.elapsed().as_secs_f64();
    chainstate.flush(FlushReason::Shutdown, FlushMode::EmptyCache).unwrap();
    let total_seconds = started.elapsed().as_secs_f64();
    let statistics = chainstate.statistics();
    println!(
        "{summary:?}\ntip {:?}\n{statistics:?}\nimport {import_seconds:.2} s, with final flush {total_seconds:.2} s, {:.0} blocks/s, {:.0} inputs/s",
        chainstate.tip(),
        statistics.blocks_connected as f64 / import_seconds,
        statistics.inputs_connected as f64 / import_seconds
    );
}
