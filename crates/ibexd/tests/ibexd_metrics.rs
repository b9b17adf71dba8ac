//! `ibexd -metrics`: the endpoint is scraped all through a `-reindex` of a
//! generated chain with a small `-dbcache` (so flushes happen) and once the
//! node has moved on to P2P, where a raw inbound connection moves the network
//! figures. Every family is there with its `# HELP` and `# TYPE`, counters
//! never go down, the height rises to the tip, the flush histogram counts the
//! flushes, the import's read-ahead fills then drains, the coin reads by age
//! add up to the inputs and the coins database's figures are there; and
//! `contrib/grafana/ibex-ibd.json` only charts metrics the endpoint exports. A
//! non-loopback `-metrics` is refused at start unless `-metricsallowremote=1`
//! is given.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    datadir_with_blocks, free_port, generate_chain, log_or_empty, spawn_node, terminate, wait_exit,
    wait_for_log, NODE_WAIT, REGTEST_QUIET_SMALL_CACHE,
};

/// Blocks of the generated chain after genesis.
const CHAIN_BLOCKS: u32 = 400;
/// Pause between scrapes during the import.
const SCRAPE_INTERVAL: Duration = Duration::from_millis(50);
/// Every family the endpoint exports once the engine runs.
const FAMILIES: [&str; 31] = [
    "ibex_build_info",
    "ibex_block_height",
    "ibex_header_height",
    "ibex_blocks_connected_total",
    "ibex_blocks_disconnected_total",
    "ibex_blocks_invalid_total",
    "ibex_transactions_connected_total",
    "ibex_inputs_connected_total",
    "ibex_script_checks_total",
    "ibex_utxo_cache_bytes",
    "ibex_utxo_cache_coins",
    "ibex_utxo_cache_max_bytes",
    "ibex_flushes_total",
    "ibex_flush_duration_seconds",
    "ibex_coins_database_written_bytes_total",
    "ibex_pipeline_blocks",
    "ibex_read_ahead_bytes",
    "ibex_peers",
    "ibex_network_received_bytes_total",
    "ibex_network_sent_bytes_total",
    "process_resident_memory_bytes",
    "ibex_process_peak_resident_memory_bytes",
    "ibex_coin_reads_total",
    "ibex_bip30_lookups_total",
    "ibex_coins_database_io_bytes_total",
    "ibex_coins_database_write_amplification",
    "ibex_coins_database_files",
    "ibex_coins_database_bytes",
    "ibex_coins_database_keys",
    "ibex_coins_database_seconds_total",
    "ibex_coins_database_write_stalls_total",
];

/// One page of the endpoint, parsed.
#[derive(Debug)]
struct Scrape {
    /// `name{labels}` to value.
    samples: BTreeMap<String, f64>,
    /// Family name to its `# TYPE`.
    types: BTreeMap<String, String>,
    /// Families with a `# HELP` line.
    helped: BTreeSet<String>,
}

impl Scrape {
    fn parse(page: &str) -> Scrape {
        let mut scrape =
            Scrape { samples: BTreeMap::new(), types: BTreeMap::new(), helped: BTreeSet::new() };
        for line in page.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').unwrap();
                assert!(!help.trim().is_empty(), "empty help: {line}");
                scrape.helped.insert(name.to_owned());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').unwrap();
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
                scrape.types.insert(name.to_owned(), kind.to_owned());
            } else {
                let (key, value) = line.rsplit_once(' ').unwrap();
                let value = match value {
                    "+Inf" => f64::INFINITY,
                    other => other.parse().unwrap_or_else(|_| panic!("bad value: {line}")),
                };
                scrape.samples.insert(key.to_owned(), value);
            }
        }
        scrape
    }

    fn value(&self, key: &str) -> f64 {
        *self.samples.get(key).unwrap_or_else(|| panic!("no sample {key} in {:?}", self.samples))
    }

    fn has_engine(&self) -> bool {
        self.types.contains_key("ibex_blocks_connected_total")
    }

    fn height(&self) -> Option<f64> {
        self.samples.get("ibex_block_height").copied()
    }

    /// The family of sample `key` (`_bucket`, `_sum`, `_count` belong to
    /// their histogram).
    fn family_of(&self, key: &str) -> String {
        let name = key.split('{').next().unwrap();
        for suffix in ["_bucket", "_sum", "_count"] {
            if let Some(base) = name.strip_suffix(suffix) {
                if self.types.get(base).is_some_and(|kind| kind == "histogram") {
                    return base.to_owned();
                }
            }
        }
        name.to_owned()
    }
}

/// `GET /metrics` on `port`; `None` while nothing listens there.
fn scrape(port: u16) -> Option<Scrape> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let content_type = "content-type: text/plain; version=0.0.4; charset=utf-8";
    assert!(head.to_lowercase().contains(content_type), "{head}");
    Some(Scrape::parse(body))
}

/// Checks what holds of every page with the engine's figures.
fn check_page(scrape: &Scrape) {
    for family in FAMILIES {
        assert!(scrape.helped.contains(family), "no # HELP for {family}");
        assert!(scrape.types.contains_key(family), "no # TYPE for {family}");
    }
    for key in scrape.samples.keys() {
        let family = scrape.family_of(key);
        assert!(scrape.types.contains_key(&family), "sample {key} of no family");
    }
    assert!(scrape.value("process_resident_memory_bytes") > 0.0);
    let peak = scrape.value("ibex_process_peak_resident_memory_bytes");
    assert!(peak >= scrape.value("process_resident_memory_bytes"));
    // -dbcache=4 is below the parts' minimums: the coins cache keeps its
    // own, 1 MiB (ibex_chainstate::budget).
    let budget = ibex_daemon::memory_budget::memory_budget_for(
        4,
        ibex_chainstate::FLUSH_BATCH_BYTES_DEFAULT,
    );
    assert_eq!(budget.coins_bytes, 1 << 20);
    assert_eq!(scrape.value("ibex_utxo_cache_max_bytes"), budget.coins_bytes as f64);
    let buckets: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|(key, _)| key.starts_with("ibex_flush_duration_seconds_bucket"))
        .map(|(_, value)| *value)
        .collect();
    assert_eq!(buckets.len(), 13);
    let count = scrape.value("ibex_flush_duration_seconds_count");
    assert!(buckets.iter().all(|bucket| *bucket <= count));
    assert_eq!(scrape.value("ibex_flush_duration_seconds_bucket{le=\"+Inf\"}"), count);
}

/// Counters and histogram samples of `later` are at least those of `earlier`.
fn check_counters_rise(earlier: &Scrape, later: &Scrape) {
    for (key, value) in &later.samples {
        let family = later.family_of(key);
        let kind = later.types.get(&family).map(String::as_str);
        if !matches!(kind, Some("counter" | "histogram")) {
            continue;
        }
        if let Some(before) = earlier.samples.get(key) {
            assert!(value >= before, "{key} went down from {before} to {value}");
        }
    }
    if let (Some(before), Some(after)) = (earlier.height(), later.height()) {
        assert!(after >= before, "the height went down from {before} to {after}");
    }
}

/// Scrapes every [`SCRAPE_INTERVAL`] until the import is over (the log
/// says the reindex finished), returning the pages with the engine's
/// figures.
fn scrape_through_import(port: u16, datadir: &Path, node: &mut std::process::Child) -> Vec<Scrape> {
    let started = Instant::now();
    let mut pages = Vec::new();
    while !log_or_empty(datadir).contains("Reindexing finished") {
        assert!(started.elapsed() < NODE_WAIT, "no end of import:\n{}", log_or_empty(datadir));
        if let Some(status) = node.try_wait().unwrap() {
            panic!("ibexd exited ({status:?}):\n{}", log_or_empty(datadir));
        }
        if let Some(page) = scrape(port).filter(Scrape::has_engine) {
            pages.push(page);
        }
        std::thread::sleep(SCRAPE_INTERVAL);
    }
    pages
}

/// Scrapes until `ready` holds of a page (at most [`NODE_WAIT`]).
fn scrape_until(port: u16, ready: impl Fn(&Scrape) -> bool) -> Scrape {
    let started = Instant::now();
    loop {
        if let Some(page) = scrape(port).filter(|page| ready(page)) {
            return page;
        }
        assert!(started.elapsed() < NODE_WAIT, "the endpoint never got there");
        std::thread::sleep(SCRAPE_INTERVAL);
    }
}

#[test]
fn scrapes_during_an_import_see_every_metric_move_the_right_way() {
    let root = tempfile::tempdir().unwrap();
    let chain = root.path().join("chain");
    generate_chain(&chain, "small", &CHAIN_BLOCKS.to_string(), "16", &[]);
    let datadir = datadir_with_blocks(&root.path().join("node"), &chain);
    let (metrics_port, p2p_port) = (free_port(), free_port());
    let metrics = format!("-metrics=127.0.0.1:{metrics_port}");
    let port = format!("-port={p2p_port}");
    // One script thread keeps the import long enough to scrape it often;
    // the node stays up after it, listening, for the last scrape. BIP34
    // from block 2 makes BIP30 look up every block's outputs first (from
    // block 1, regtest's default, only failing blocks are looked up).
    let options = [
        "-reindex",
        "-par=1",
        "-listen=1",
        "-bind=127.0.0.1",
        &port,
        "-server=0",
        &metrics,
        "-testactivationheight=bip34@2",
    ];
    let mut node =
        spawn_node(&mut common::quiet_ibexd(&datadir, &REGTEST_QUIET_SMALL_CACHE, &options));

    let during = scrape_through_import(metrics_port, &datadir, &mut node);
    let tip = f64::from(CHAIN_BLOCKS);
    let early: Vec<&Scrape> =
        during.iter().filter(|page| page.height().is_some_and(|height| height < tip)).collect();
    eprintln!("{} scrapes during the import, {} below the tip", during.len(), early.len());
    assert!(early.len() >= 2, "{} scrapes during the import: too few", early.len());
    let read_ahead = |page: &Scrape| page.value("ibex_read_ahead_bytes{queue=\"import\"}");
    assert!(during.iter().any(|page| read_ahead(page) > 0.0), "the import read nothing ahead");
    assert!(during.iter().any(|page| page.value("ibex_utxo_cache_coins") > 0.0));

    wait_for_log(&datadir, "Bound to 127.0.0.1", &mut node);
    // An inbound connection that sends what could be a v2 key.
    let mut peer = TcpStream::connect(("127.0.0.1", p2p_port)).unwrap();
    peer.write_all(&[0x5a; 64]).unwrap();
    let last = scrape_until(metrics_port, |page| {
        page.value("ibex_peers{direction=\"inbound\"}") == 1.0
            && page.value("ibex_network_received_bytes_total") >= 64.0
    });
    drop(peer);
    for page in during.iter().chain([&last]) {
        check_page(page);
    }
    for pair in during.windows(2) {
        check_counters_rise(&pair[0], &pair[1]);
    }
    check_counters_rise(during.last().unwrap(), &last);
    check_end(&last, early[0]);
    check_dashboard(&last);

    terminate(&node);
    let status = wait_exit(&mut node, &datadir);
    assert!(status.success(), "{status:?}\n{}", log_or_empty(&datadir));
    let log = log_or_empty(&datadir);
    assert!(log.contains(&format!("Serving metrics on http://127.0.0.1:{metrics_port}/metrics")));
}

/// The page after the import, against one early in it.
fn check_end(last: &Scrape, early: &Scrape) {
    let tip = f64::from(CHAIN_BLOCKS);
    assert_eq!(last.height(), Some(tip));
    assert_eq!(last.value("ibex_header_height"), tip);
    assert!(early.height().unwrap() < tip);
    // Genesis included; every script checked (regtest has no -assumevalid).
    assert_eq!(last.value("ibex_blocks_connected_total"), tip + 1.0);
    let inputs = last.value("ibex_inputs_connected_total");
    assert!(inputs > early.value("ibex_inputs_connected_total"));
    assert_eq!(last.value("ibex_script_checks_total"), inputs);
    assert!(last.value("ibex_transactions_connected_total") > tip);
    assert_eq!(last.value("ibex_blocks_invalid_total"), 0.0);
    let flushes = last.value("ibex_flushes_total");
    assert!(flushes >= 1.0, "-dbcache=4 flushed nothing");
    assert_eq!(last.value("ibex_flush_duration_seconds_count"), flushes);
    assert!(last.value("ibex_coins_database_written_bytes_total") > 0.0);
    // The import is over: its queue is drained, no script check pending.
    assert_eq!(last.value("ibex_read_ahead_bytes{queue=\"import\"}"), 0.0);
    assert_eq!(last.value("ibex_pipeline_blocks{queue=\"import\"}"), 0.0);
    assert_eq!(last.value("ibex_pipeline_blocks{queue=\"script_checks\"}"), 0.0);
    assert!(last.value("ibex_network_sent_bytes_total") >= 0.0);
    check_coins_database(last);
}

/// Coin reads by age add up to the inputs; BIP30 looked up every output
/// (with BIP34 from block 2 it is checked before every block); RocksDB's
/// figures are there.
fn check_coins_database(last: &Scrape) {
    let sum = |prefix: &str| -> f64 {
        let samples = last.samples.iter().filter(|(key, _)| key.starts_with(prefix));
        samples.map(|(_, value)| value).sum()
    };
    let reads = last.samples.keys().filter(|key| key.starts_with("ibex_coin_reads_total{"));
    assert_eq!(reads.count(), 6 * 4, "six ages by four sources");
    assert_eq!(sum("ibex_coin_reads_total{"), last.value("ibex_inputs_connected_total"));
    let young_in_memory = last.value("ibex_coin_reads_total{age=\"0-1\",source=\"live_map\"}");
    assert!(young_in_memory > 0.0, "the small profile spends coins of the block before");
    let database = last.value("ibex_bip30_lookups_total{answered_by=\"database\"}");
    assert!(database > last.value("ibex_transactions_connected_total"), "one per output");
    for level in 0..7 {
        assert!(last.value(&format!("ibex_coins_database_files{{level=\"{level}\"}}")) >= 0.0);
    }
    assert!(last.value("ibex_coins_database_io_bytes_total{kind=\"wal_written\"}") >= 0.0);
    assert!(last.value("ibex_coins_database_keys") >= 0.0);
    assert!(last.value("ibex_coins_database_bytes{kind=\"memtables\"}") > 0.0);
    assert!(last.value("ibex_coins_database_write_amplification") >= 0.0);
}

/// The metric names in a PromQL expression: identifiers starting with
/// `ibex_` or `process_`.
fn metric_names(expression: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut current = String::new();
    for character in expression.chars().chain([' ']) {
        if character.is_ascii_alphanumeric() || character == '_' || character == ':' {
            current.push(character);
            continue;
        }
        if current.starts_with("ibex_") || current.starts_with("process_") {
            names.push(current.clone());
        }
        current.clear();
    }
    names
}

/// Every expression of the dashboard names exported metrics, every panel
/// has one, and every exported family is on it.
fn check_dashboard(last: &Scrape) {
    let path = common::project("contrib/grafana/ibex-ibd.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let source = variables.iter().find(|variable| variable["type"] == "datasource").unwrap();
    assert_eq!(source["query"], "prometheus");
    let mut used = BTreeSet::new();
    for variable in variables.iter().filter(|variable| variable["type"] == "query") {
        used.extend(metric_names(variable["definition"].as_str().unwrap()));
    }
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] == "row" {
            continue;
        }
        let title = panel["title"].as_str().unwrap();
        let targets = panel["targets"].as_array().unwrap();
        assert!(!targets.is_empty(), "panel {title} shows nothing");
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "panel {title}");
        for target in targets {
            let names = metric_names(target["expr"].as_str().unwrap());
            assert!(!names.is_empty(), "panel {title}: {target}");
            for name in names {
                let family = last.family_of(&name);
                assert!(last.types.contains_key(&family), "panel {title}: {name} is not exported");
                used.insert(family);
            }
        }
    }
    for family in FAMILIES {
        assert!(used.contains(family), "{family} is on no panel");
    }
}

#[test]
fn a_non_loopback_address_is_refused_unless_allowed() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let everywhere = format!("-metrics=0.0.0.0:{port}");
    let output =
        common::ibexd(root.path(), &common::REGTEST_QUIET, &[&everywhere]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = format!(
        "Error: -metrics=0.0.0.0:{port} is not a loopback address: refusing to serve metrics to other machines without -metricsallowremote=1"
    );
    assert!(stderr.contains(&message), "{stderr}");
    assert!(!root.path().join("regtest").exists(), "refused before touching the data directory");

    // Allowed, it serves there (an empty node: it starts, idles, and
    // stops on SIGTERM).
    let options = [everywhere.as_str(), "-metricsallowremote=1", "-server=0", "-listen=0"];
    let mut node =
        spawn_node(&mut common::quiet_ibexd(root.path(), &common::REGTEST_QUIET, &options));
    wait_for_log(root.path(), "init message: Done loading", &mut node);
    terminate(&node);
    let status = wait_exit(&mut node, root.path());
    assert!(status.success(), "{status:?}\n{}", log_or_empty(root.path()));
    let log = log_or_empty(root.path());
    assert!(log.contains(&format!("Serving metrics on http://0.0.0.0:{port}/metrics")), "{log}");
}
