//! Core's side: libbitcoinkernel's `ChainstateManager` reindexing a copy of
//! the block files (`-reindex`), with `-par` script threads.
//!
//! What the kernel (`bitcoinkernel` 0.3) lets us set, and what it does not:
//! - script threads: `worker_threads` = `-par` - 1, as `bitcoind -par=N`
//!   does (the validation thread checks scripts too);
//! - the cache: fixed at the kernel's default, 450 MiB in all (440 MiB of
//!   coins cache, Core's `-dbcache=450`); the crate exposes no option;
//! - assumevalid: not exposed, and regtest's default is none, so Core checks
//!   every script whatever `--assumevalid-tip` says.

use std::time::Instant;

use bitcoinkernel::{ChainType, ChainstateManager, ContextBuilder};

use crate::chain::{copy_block_files, fresh_directory, path_text, ChainFacts};
use crate::error::BenchError;
use crate::measurement::{peak_rss_kib, Measurement, Side};
use crate::BenchSettings;

/// The kernel's fixed cache (`DEFAULT_KERNEL_CACHE`), in MiB.
pub const KERNEL_CACHE_MIB: u64 = 450;

/// Reindexes the chain into a fresh kernel datadir under `datadir/core`.
pub fn run(settings: &BenchSettings, facts: &ChainFacts) -> Result<Measurement, BenchError> {
    let root = fresh_directory(&settings.datadir.join("core"))?;
    let blocks = root.join("blocks");
    copy_block_files(&settings.blocks_dir, &blocks)?;
    let data = root.join("data");
    let worker_threads = i32::try_from(settings.par.saturating_sub(1)).unwrap_or(i32::MAX);
    let started = Instant::now();
    let context = ContextBuilder::new().chain_type(ChainType::Regtest).build()?;
    let chainman = ChainstateManager::builder(&context, path_text(&data)?, path_text(&blocks)?)?
        .worker_threads(worker_threads)
        .wipe_db(true, true)?
        .build()?;
    chainman.import_blocks()?;
    let tip = chainman.active_chain().tip();
    let found = (tip.block_hash().to_string(), u32::try_from(tip.height()).unwrap_or(0));
    // Dropping it flushes the coins and the index (`ForceFlushStateToDisk`).
    drop(chainman);
    drop(context);
    let seconds = started.elapsed().as_secs_f64();
    let expected = (facts.tip_hash.clone(), facts.tip_height);
    if found != expected {
        return Err(BenchError::WrongTip {
            side: Side::Core,
            found: format!("{found:?}"),
            expected: format!("{expected:?}"),
        });
    }
    Ok(Measurement {
        side: Side::Core,
        blocks: facts.block_count(),
        transactions: facts.transactions,
        inputs: facts.inputs,
        scripts_checked: facts.inputs,
        seconds,
        peak_rss_kib: peak_rss_kib(),
        flushes: None,
        longest_flush_ms: None,
    })
}
