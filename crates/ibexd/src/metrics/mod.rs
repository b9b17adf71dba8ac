//! `ibexd -metrics=ADDR:PORT`: the node's figures in Prometheus' text
//! format at `http://ADDR:PORT/metrics`, for a Prometheus server to scrape
//! and `contrib/grafana/ibex-ibd.json` to show.
//!
//! | module | job |
//! |---|---|
//! | [`crate::options::metrics`] | `-metrics` and `-metricsallowremote` (loopback only unless allowed; default ports) |
//! | this one | [`NodeMetrics`]: where the figures come from, and the page ([`NodeMetrics::render`]) |
//! | [`exposition`] | the text format |
//! | [`coins_database`] | the coins database's families: coin reads by age, RocksDB's I/O and files |
//! | [`process`] | the process's resident memory |
//! | [`server`] | the HTTP endpoint (hyper, on a thread of its own) |
//!
//! # Where the figures come from
//! - The engine's counters and levels ([`ibex_chainstate::ChainMetrics`]):
//!   heights, blocks, transactions, inputs and script checks connected,
//!   the UTXO cache's bytes, coins and limit, flushes (count, duration
//!   histogram, bytes written to the coins database), and the blocks and
//!   bytes waiting in the pipeline (the import's reader queue, the
//!   stored-block read-ahead, blocks whose scripts are being checked), the
//!   bytes of block and undo data on disk and the prune height. The
//!   engine stores them with relaxed atomics as it publishes each settled
//!   block, nothing more: validation takes no lock for them. With them,
//!   where connect found the coins it spent, by the coin's age.
//! - The coins database (RocksDB), asked at each scrape through a weak
//!   reference ([`ibex_chainstate::ChainMetrics::coins_database_io`]):
//!   bytes written to its log, by flushes and compactions, read by
//!   compactions; files per level; sizes; key estimate.
//! - The P2P side's handle, once it runs: peers by direction, bytes
//!   received and sent (what `getconnectioncount` and `getnettotals`
//!   read). Before it runs, 0 peers and 0 bytes.
//! - `/proc/self/status`: the resident set now and at its peak.
//!
//! Counters are named `..._total` and only go up (since the start of the
//! process): a dashboard takes their `rate()`. Levels are gauges. The
//! height gauges have no sample until the chain has a tip or a header,
//! the prune height none until a block file is pruned.
//!
//! # Napkin math
//! A page is 33 families, ~155 lines, ~9 KB; writing it reads ~70 atomics,
//! the peer list (one lock, ~300 bytes a peer), `/proc/self/status` and
//! RocksDB's properties (~20, tens of microseconds under its mutex): well
//! under a millisecond, on the endpoint's own thread. A scrape every 15 s
//! costs nothing measurable.

pub mod coins_database;
pub mod exposition;
pub mod process;
pub mod server;

use std::sync::{Arc, OnceLock};

use ibex_chainstate::{ChainMetrics, ChainMetricsReading, FLUSH_DURATION_BUCKETS_MS};
use ibex_p2p::net::NetworkHandle;

use exposition::{Exposition, Family, MetricKind};

const fn family(name: &'static str, kind: MetricKind, help: &'static str) -> Family {
    Family { name, kind, help }
}

use MetricKind::{Counter, Gauge, Histogram};

/// `ibex_build_info`.
pub const BUILD_INFO: Family =
    family("ibex_build_info", Gauge, "Always 1; the version in its label.");
/// `ibex_block_height`.
pub const BLOCK_HEIGHT: Family = family(
    "ibex_block_height",
    Gauge,
    "Height of the active chain's tip (blocks whose scripts are checked).",
);
/// `ibex_header_height`.
pub const HEADER_HEIGHT: Family =
    family("ibex_header_height", Gauge, "Height of the best valid header known.");
/// `ibex_blocks_connected_total`.
pub const BLOCKS_CONNECTED: Family =
    family("ibex_blocks_connected_total", Counter, "Blocks connected to the active chain.");
/// `ibex_blocks_disconnected_total`.
pub const BLOCKS_DISCONNECTED: Family = family(
    "ibex_blocks_disconnected_total",
    Counter,
    "Blocks disconnected from the active chain (reorganisations, invalidateblock).",
);
/// `ibex_blocks_invalid_total`.
pub const BLOCKS_INVALID: Family =
    family("ibex_blocks_invalid_total", Counter, "Blocks found invalid.");
/// `ibex_transactions_connected_total`.
pub const TRANSACTIONS_CONNECTED: Family = family(
    "ibex_transactions_connected_total",
    Counter,
    "Transactions of the blocks connected (coinbases included).",
);
/// `ibex_inputs_connected_total`.
pub const INPUTS_CONNECTED: Family = family(
    "ibex_inputs_connected_total",
    Counter,
    "Inputs of the blocks connected (coinbases excluded).",
);
/// `ibex_script_checks_total`.
pub const SCRIPT_CHECKS: Family = family(
    "ibex_script_checks_total",
    Counter,
    "Inputs whose scripts (signatures) were verified; inputs under -assumevalid are not.",
);
/// `ibex_utxo_cache_bytes`.
pub const CACHE_BYTES: Family = family(
    "ibex_utxo_cache_bytes",
    Gauge,
    "Bytes the UTXO cache uses (a map a background flush still writes included).",
);
/// `ibex_utxo_cache_coins`.
pub const CACHE_COINS: Family =
    family("ibex_utxo_cache_coins", Gauge, "Coins (entries) in the UTXO cache.");
/// `ibex_utxo_cache_max_bytes`.
pub const CACHE_MAX_BYTES: Family = family(
    "ibex_utxo_cache_max_bytes",
    Gauge,
    "The UTXO cache's limit: its share of -dbcache; reaching it starts a flush.",
);
/// `ibex_flushes_total`.
pub const FLUSHES: Family =
    family("ibex_flushes_total", Counter, "Coins flushes to the chainstate database.");
/// `ibex_flush_duration_seconds`.
pub const FLUSH_DURATION: Family = family(
    "ibex_flush_duration_seconds",
    Histogram,
    "How long each coins flush took, start to written.",
);
/// `ibex_coins_database_written_bytes_total`.
pub const DATABASE_WRITTEN: Family = family(
    "ibex_coins_database_written_bytes_total",
    Counter,
    "Bytes of the write batches flushes sent to the coins database.",
);
/// `ibex_pipeline_blocks`.
pub const PIPELINE_BLOCKS: Family = family(
    "ibex_pipeline_blocks",
    Gauge,
    "Blocks waiting in the pipeline: read by the import (import), read ahead from block files (stored_blocks), connected with scripts being checked (script_checks).",
);
/// `ibex_read_ahead_bytes`.
pub const READ_AHEAD_BYTES: Family = family(
    "ibex_read_ahead_bytes",
    Gauge,
    "Serialised bytes of blocks read ahead of the connecting thread, by queue.",
);
/// `ibex_block_files_bytes`.
pub const BLOCK_FILES_BYTES: Family = family(
    "ibex_block_files_bytes",
    Gauge,
    "Bytes of block and undo data in the block files (getblockchaininfo's size_on_disk).",
);
/// `ibex_prune_height`.
pub const PRUNE_HEIGHT: Family = family(
    "ibex_prune_height",
    Gauge,
    "Lowest height of the active chain whose block is kept above pruned ones (getblockchaininfo's pruneheight); no sample until a block file is pruned.",
);
/// `ibex_peers`.
pub const PEERS: Family =
    family("ibex_peers", Gauge, "Open peer connections (handshake done or not), by direction.");
/// `ibex_network_received_bytes_total`.
pub const NETWORK_RECEIVED: Family =
    family("ibex_network_received_bytes_total", Counter, "Bytes received from peers.");
/// `ibex_network_sent_bytes_total`.
pub const NETWORK_SENT: Family =
    family("ibex_network_sent_bytes_total", Counter, "Bytes sent to peers.");
/// `process_resident_memory_bytes`.
pub const RESIDENT_MEMORY: Family =
    family("process_resident_memory_bytes", Gauge, "Resident memory size in bytes.");
/// `ibex_process_peak_resident_memory_bytes`.
pub const PEAK_RESIDENT_MEMORY: Family = family(
    "ibex_process_peak_resident_memory_bytes",
    Gauge,
    "Peak resident memory size so far in bytes (VmHWM).",
);

/// Every family the page can hold, in page order.
pub const FAMILIES: &[Family] = &[
    BUILD_INFO,
    BLOCK_HEIGHT,
    HEADER_HEIGHT,
    BLOCKS_CONNECTED,
    BLOCKS_DISCONNECTED,
    BLOCKS_INVALID,
    TRANSACTIONS_CONNECTED,
    INPUTS_CONNECTED,
    SCRIPT_CHECKS,
    CACHE_BYTES,
    CACHE_COINS,
    CACHE_MAX_BYTES,
    FLUSHES,
    FLUSH_DURATION,
    DATABASE_WRITTEN,
    PIPELINE_BLOCKS,
    READ_AHEAD_BYTES,
    BLOCK_FILES_BYTES,
    PRUNE_HEIGHT,
    PEERS,
    NETWORK_RECEIVED,
    NETWORK_SENT,
    RESIDENT_MEMORY,
    PEAK_RESIDENT_MEMORY,
    coins_database::COIN_READS,
    coins_database::BIP30_LOOKUPS,
    coins_database::DATABASE_IO_BYTES,
    coins_database::WRITE_AMPLIFICATION,
    coins_database::DATABASE_FILES,
    coins_database::DATABASE_BYTES,
    coins_database::DATABASE_KEYS,
    coins_database::DATABASE_SECONDS,
    coins_database::DATABASE_WRITE_STALLS,
];

/// The sources of the page (see the module docs); shared with the
/// endpoint's thread.
#[derive(Debug, Default)]
pub struct NodeMetrics {
    chain: OnceLock<Arc<ChainMetrics>>,
    network: OnceLock<NetworkHandle>,
}

/// A count as the format's number (exact below 2^53).
fn number(value: u64) -> f64 {
    value as f64
}

impl NodeMetrics {
    /// Sources with nothing attached yet: the page has the process's figures.
    pub fn new() -> NodeMetrics {
        NodeMetrics::default()
    }

    /// Reads the engine's figures from `metrics` from now on (the first
    /// call counts; there is one engine).
    pub fn attach_chain(&self, metrics: Arc<ChainMetrics>) {
        let _ = self.chain.set(metrics);
    }

    /// Reads the P2P side's figures from `handle` from now on (the first
    /// call counts).
    pub fn attach_network(&self, handle: NetworkHandle) {
        let _ = self.network.set(handle);
    }

    /// The page: every family whose source is attached.
    pub fn render(&self) -> String {
        let mut page = Exposition::new();
        page.family(&BUILD_INFO);
        page.sample(BUILD_INFO.name, &[("version", env!("CARGO_PKG_VERSION"))], 1.0);
        if let Some(chain) = self.chain.get() {
            render_chain(&mut page, chain);
        }
        self.render_network(&mut page);
        if let Some(memory) = process::process_memory() {
            page.single(&RESIDENT_MEMORY, number(memory.resident_bytes));
            page.single(&PEAK_RESIDENT_MEMORY, number(memory.peak_resident_bytes));
        }
        page.finish()
    }

    fn render_network(&self, page: &mut Exposition) {
        let (inbound, outbound, totals) = match self.network.get() {
            Some(handle) => {
                let peers = handle.peers();
                let inbound = peers.iter().filter(|peer| peer.inbound).count();
                let totals = handle.totals();
                (inbound, peers.len() - inbound, (totals.bytes_received, totals.bytes_sent))
            }
            None => (0, 0, (0, 0)),
        };
        page.family(&PEERS);
        page.sample(PEERS.name, &[("direction", "inbound")], inbound as f64);
        page.sample(PEERS.name, &[("direction", "outbound")], outbound as f64);
        page.single(&NETWORK_RECEIVED, number(totals.0));
        page.single(&NETWORK_SENT, number(totals.1));
    }
}

fn render_chain(page: &mut Exposition, chain: &ChainMetrics) {
    let reading = chain.read();
    page.family(&BLOCK_HEIGHT);
    if let Some(height) = reading.tip_height {
        page.sample(BLOCK_HEIGHT.name, &[], f64::from(height));
    }
    page.family(&HEADER_HEIGHT);
    if let Some(height) = reading.best_header_height {
        page.sample(HEADER_HEIGHT.name, &[], f64::from(height));
    }
    page.single(&BLOCKS_CONNECTED, number(reading.blocks_connected));
    page.single(&BLOCKS_DISCONNECTED, number(reading.blocks_disconnected));
    page.single(&BLOCKS_INVALID, number(reading.blocks_invalid));
    page.single(&TRANSACTIONS_CONNECTED, number(reading.transactions_connected));
    page.single(&INPUTS_CONNECTED, number(reading.inputs_connected));
    page.single(&SCRIPT_CHECKS, number(reading.scripts_checked));
    page.single(&CACHE_BYTES, number(reading.cache_bytes));
    page.single(&CACHE_COINS, number(reading.cache_coins));
    page.single(&CACHE_MAX_BYTES, number(reading.cache_bytes_max));
    page.single(&FLUSHES, number(reading.flushes));
    render_flush_durations(page, chain);
    page.single(&DATABASE_WRITTEN, number(reading.coins_database_written_bytes));
    let (import, stored) = (&chain.import_queue, &chain.stored_block_read_ahead);
    page.family(&PIPELINE_BLOCKS);
    page.sample(PIPELINE_BLOCKS.name, &[("queue", "import")], number(import.blocks()));
    page.sample(PIPELINE_BLOCKS.name, &[("queue", "stored_blocks")], number(stored.blocks()));
    let scripts = number(reading.script_pipeline_blocks);
    page.sample(PIPELINE_BLOCKS.name, &[("queue", "script_checks")], scripts);
    page.family(&READ_AHEAD_BYTES);
    page.sample(READ_AHEAD_BYTES.name, &[("queue", "import")], number(import.bytes()));
    page.sample(READ_AHEAD_BYTES.name, &[("queue", "stored_blocks")], number(stored.bytes()));
    render_block_files(page, &reading);
    coins_database::render(page, chain, &reading.coin_reads);
}

/// The block files' bytes, and the prune height once blocks were pruned.
fn render_block_files(page: &mut Exposition, reading: &ChainMetricsReading) {
    page.single(&BLOCK_FILES_BYTES, number(reading.block_files_bytes));
    page.family(&PRUNE_HEIGHT);
    if let Some(height) = reading.prune_height {
        // Core's `pruneheight`: the height pruned up to, plus one.
        page.sample(PRUNE_HEIGHT.name, &[], f64::from(height) + 1.0);
    }
}

fn render_flush_durations(page: &mut Exposition, chain: &ChainMetrics) {
    let durations = chain.flush_durations.read();
    page.family(&FLUSH_DURATION);
    let bucket = format!("{}_bucket", FLUSH_DURATION.name);
    for (bound_ms, count) in FLUSH_DURATION_BUCKETS_MS.iter().zip(durations.cumulative_counts) {
        let bound = exposition::format_value(*bound_ms as f64 / 1000.0);
        page.sample(&bucket, &[("le", &bound)], number(count));
    }
    page.sample(&bucket, &[("le", "+Inf")], number(durations.count));
    let sum_seconds = durations.sum_ms as f64 / 1000.0;
    page.sample(&format!("{}_sum", FLUSH_DURATION.name), &[], sum_seconds);
    page.sample(&format!("{}_count", FLUSH_DURATION.name), &[], number(durations.count));
}

#[cfg(test)]
mod tests;
