//! Ibex's side: `-reindex` of a copy of the block files with
//! [`import_blocks`], then the final flush.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ibex_chainstate::{
    import_blocks, ChainEvent, Chainstate, ChainstateOptions, CoinsCache, FlushMode, FlushReason,
    ImportSource, FLUSH_BATCH_BYTES_DEFAULT,
};
use ibex_primitives::{BlockHash, Params};

use crate::chain::{copy_block_files, fresh_directory, ChainFacts};
use crate::error::BenchError;
use crate::measurement::{peak_rss_kib, Measurement, Side};
use crate::BenchSettings;

/// Flush counts and the longest flush, from the chainstate's events.
#[derive(Debug, Default, Clone, Copy)]
struct FlushLog {
    count: u64,
    longest_ms: u64,
}

/// Imports the chain into a fresh Ibex chainstate under `datadir/ibex`.
pub fn run(settings: &BenchSettings, facts: &ChainFacts) -> Result<Measurement, BenchError> {
    let root = fresh_directory(&settings.datadir.join("ibex"))?;
    let blocks = root.join("blocks");
    copy_block_files(&settings.blocks_dir, &blocks)?;
    let assume_valid = if settings.assume_valid_tip {
        Some(BlockHash::from_hex(&facts.tip_hash).map_err(|_| BenchError::ManifestField {
            path: settings.blocks_dir.join("manifest.json"),
            field: "tip_hash",
        })?)
    } else {
        None
    };
    let options = ChainstateOptions {
        params: Params::regtest(),
        blocks_directory: blocks,
        chainstate_directory: root.join("chainstate"),
        memory: ibex_chainstate::MemoryBudget::from_dbcache_bytes(
            CoinsCache::bytes_for_dbcache_mebibytes(settings.dbcache_mib),
            FLUSH_BATCH_BYTES_DEFAULT,
        ),
        script_threads: settings.par,
        assume_valid,
        // Only the cache limit flushes during the run, as in a short IBD.
        periodic_flush_interval: Duration::from_secs(24 * 60 * 60),
        stop_at_height: None,
        prune: ibex_chainstate::PruneMode::Disabled,
        fast_prune: false,
    };
    import(options, facts, &root)
}

fn import(
    options: ChainstateOptions,
    facts: &ChainFacts,
    root: &Path,
) -> Result<Measurement, BenchError> {
    let flushes = Arc::new(Mutex::new(FlushLog::default()));
    let observed = Arc::clone(&flushes);
    let observer = move |event: &ChainEvent| {
        if let ChainEvent::Flushed { duration_ms, .. } = event {
            if let Ok(mut log) = observed.lock() {
                log.count += 1;
                log.longest_ms = log.longest_ms.max(*duration_ms);
            }
        }
    };
    // As `ibexd` does first thing: this child process is Ibex's alone.
    ibex_chainstate::bound_heap_retention(options.memory.dbcache_bytes);
    let started = Instant::now();
    let mut chainstate = Chainstate::open(options, Box::new(observer))?;
    import_blocks(&mut chainstate, &ImportSource::OwnBlockFiles, &AtomicBool::new(false))?;
    chainstate.flush(FlushReason::Shutdown, FlushMode::KeepCoins)?;
    let tip = chainstate.tip();
    let statistics = chainstate.statistics();
    drop(chainstate);
    let seconds = started.elapsed().as_secs_f64();
    let expected = (facts.tip_hash.clone(), facts.tip_height);
    let found = tip.map(|(hash, height)| (hash.to_hex(), height));
    if found.as_ref() != Some(&expected) {
        return Err(BenchError::WrongTip {
            side: Side::Ibex,
            found: format!("{found:?} in {}", root.display()),
            expected: format!("{expected:?}"),
        });
    }
    let log = flushes.lock().map(|log| *log).unwrap_or_default();
    Ok(Measurement {
        side: Side::Ibex,
        blocks: statistics.blocks_connected,
        transactions: statistics.transactions_connected,
        inputs: statistics.inputs_connected,
        scripts_checked: statistics.scripts_checked,
        seconds,
        peak_rss_kib: peak_rss_kib(),
        flushes: Some(log.count),
        longest_flush_ms: Some(log.longest_ms),
    })
}
