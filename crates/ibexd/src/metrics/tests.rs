#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::server::{MetricsServer, METRICS_CONNECTIONS_MAX};
use super::*;

/// The sample lines of `page` whose name is `name` (labels included).
fn samples<'a>(page: &'a str, name: &str) -> Vec<&'a str> {
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| line.split(['{', ' ']).next() == Some(name))
        .collect()
}

#[test]
fn without_sources_the_page_has_the_process_and_an_idle_network() {
    let page = NodeMetrics::new().render();
    for family in [BUILD_INFO, PEERS, NETWORK_RECEIVED, NETWORK_SENT, RESIDENT_MEMORY] {
        assert!(page.contains(&format!("# TYPE {} ", family.name)), "{}\n{page}", family.name);
    }
    assert!(!page.contains(BLOCKS_CONNECTED.name), "no engine attached yet:\n{page}");
    assert_eq!(samples(&page, PEERS.name).len(), 2);
    assert!(samples(&page, NETWORK_SENT.name)[0].ends_with(" 0"));
    let resident = samples(&page, RESIDENT_MEMORY.name)[0];
    let bytes: f64 = resident.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(bytes > 0.0, "{resident}");
}

#[test]
fn with_the_engine_every_family_has_help_type_and_samples() {
    let metrics = NodeMetrics::new();
    let chain = Arc::new(ChainMetrics::default());
    chain.flush_durations.observe(30);
    chain.flush_durations.observe(70_000);
    metrics.attach_chain(chain);
    let page = metrics.render();
    for family in FAMILIES {
        assert!(exposition::is_valid_name(family.name));
        assert!(page.contains(&format!("# HELP {} ", family.name)), "{}", family.name);
        assert!(page.contains(&format!("# TYPE {} ", family.name)), "{}", family.name);
        let is_counter = family.kind == MetricKind::Counter;
        assert_eq!(is_counter, family.name.ends_with("_total"), "{}", family.name);
    }
    // No tip and no header yet: the height families have no sample; nor
    // the prune height, nothing being pruned.
    assert!(samples(&page, BLOCK_HEIGHT.name).is_empty());
    assert!(samples(&page, HEADER_HEIGHT.name).is_empty());
    assert!(samples(&page, PRUNE_HEIGHT.name).is_empty());
    assert_eq!(samples(&page, BLOCK_FILES_BYTES.name), ["ibex_block_files_bytes 0"]);
    assert_eq!(samples(&page, BLOCKS_CONNECTED.name), ["ibex_blocks_connected_total 0"]);
    let buckets = samples(&page, "ibex_flush_duration_seconds_bucket");
    assert_eq!(buckets.len(), FLUSH_DURATION_BUCKETS_MS.len() + 1);
    assert_eq!(buckets[0], "ibex_flush_duration_seconds_bucket{le=\"0.01\"} 0");
    assert_eq!(buckets[2], "ibex_flush_duration_seconds_bucket{le=\"0.05\"} 1");
    assert_eq!(buckets[11], "ibex_flush_duration_seconds_bucket{le=\"60\"} 1");
    assert_eq!(buckets[12], "ibex_flush_duration_seconds_bucket{le=\"+Inf\"} 2");
    assert_eq!(
        samples(&page, "ibex_flush_duration_seconds_sum"),
        ["ibex_flush_duration_seconds_sum 70.03"]
    );
    assert_eq!(
        samples(&page, "ibex_flush_duration_seconds_count"),
        ["ibex_flush_duration_seconds_count 2"]
    );
    let pipeline = samples(&page, PIPELINE_BLOCKS.name);
    assert_eq!(pipeline.len(), 3, "{pipeline:?}");
    assert!(pipeline.iter().any(|line| line.contains("queue=\"script_checks\"")));
}

#[test]
fn a_pruned_node_shows_its_block_files_and_prune_height() {
    let reading = ChainMetricsReading {
        block_files_bytes: 576_716_800,
        prune_height: Some(1_233),
        ..ChainMetricsReading::default()
    };
    let mut page = Exposition::new();
    render_block_files(&mut page, &reading);
    let page = page.finish();
    assert_eq!(samples(&page, BLOCK_FILES_BYTES.name), ["ibex_block_files_bytes 576716800"]);
    assert_eq!(samples(&page, PRUNE_HEIGHT.name), ["ibex_prune_height 1234"], "{page}");
    assert!(page.contains("# TYPE ibex_prune_height gauge"), "{page}");
}

/// Sends `request` on a new connection and reads the reply to its end
/// (each request closes its connection).
fn exchange(server: &MetricsServer, request: &str) -> String {
    let mut stream = TcpStream::connect(server.local_address()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

fn get(path: &str, method: &str) -> String {
    format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
}

#[test]
fn the_endpoint_answers_get_metrics_and_nothing_else() {
    let server =
        MetricsServer::start("127.0.0.1:0".parse().unwrap(), Arc::new(NodeMetrics::new())).unwrap();
    let reply = exchange(&server, &get("/metrics", "GET"));
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    let lower = reply.to_lowercase();
    assert!(lower.contains("content-type: text/plain; version=0.0.4; charset=utf-8"), "{reply}");
    assert!(reply.contains("# TYPE process_resident_memory_bytes gauge"), "{reply}");
    let reply = exchange(&server, &get("/metrics?name=x", "GET"));
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    let reply = exchange(&server, &get("/", "GET"));
    assert!(reply.starts_with("HTTP/1.1 404 Not Found\r\n"), "{reply}");
    let reply = exchange(&server, &get("/metrics/x", "GET"));
    assert!(reply.starts_with("HTTP/1.1 404 Not Found\r\n"), "{reply}");
    let post =
        "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello";
    let reply = exchange(&server, post);
    assert!(reply.starts_with("HTTP/1.1 405 Method Not Allowed\r\n"), "{reply}");
    assert!(reply.to_lowercase().contains("allow: get, head"), "{reply}");
    // Headers past the buffer are refused, not buffered.
    let huge = format!("GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(64 * 1024));
    let mut stream = TcpStream::connect(server.local_address()).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = stream.write_all(huge.as_bytes());
    let mut reply = String::new();
    let _ = stream.read_to_string(&mut reply);
    assert!(!reply.contains("200 OK"), "{reply}");
    server.stop();
}

#[test]
fn a_connection_beyond_the_limit_is_answered_and_closes_the_oldest() {
    let server =
        MetricsServer::start("127.0.0.1:0".parse().unwrap(), Arc::new(NodeMetrics::new())).unwrap();
    // Idle connections take every slot.
    let mut idle: Vec<TcpStream> = (0..METRICS_CONNECTIONS_MAX)
        .map(|_| TcpStream::connect(server.local_address()).unwrap())
        .collect();
    // Make sure each was accepted: a request on each is answered.
    for stream in &mut idle {
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(get("/", "GET").replace("close", "keep-alive").as_bytes()).unwrap();
        let mut buffer = [0u8; 4096];
        assert!(stream.read(&mut buffer).unwrap() > 0);
    }
    let mut newcomer = TcpStream::connect(server.local_address()).unwrap();
    newcomer.write_all(get("/metrics", "GET").as_bytes()).unwrap();
    newcomer.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reply = String::new();
    newcomer.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
    // The oldest connection was closed for it; the next oldest is open.
    let mut buffer = [0u8; 64];
    let oldest = idle[0].read(&mut buffer);
    assert!(
        matches!(oldest, Ok(0))
            || oldest.is_err_and(|error| error.kind() == std::io::ErrorKind::ConnectionReset)
    );
    idle[1].set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let next = idle[1].read(&mut buffer).unwrap_err();
    assert!(matches!(next.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
}

#[test]
fn a_port_in_use_is_an_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let error = MetricsServer::start(address, Arc::new(NodeMetrics::new())).unwrap_err();
    assert!(error.to_string().starts_with(&format!("cannot listen for -metrics on {address}")));
}
