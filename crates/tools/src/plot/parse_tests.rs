//! Tests for the `debug.log` parser over small in-memory logs.

use super::*;

const CORE_LOG: &str = "\
2026-11-22T03:12:08Z Bitcoin Core version v30.0.0 (release build)
2026-11-22T03:12:08Z UpdateTip: new best=0f91 height=0 version=0x00000001 log2_work=1.000000 tx=1 date='2011-02-02T23:16:42Z' progress=0.000002 cache=0.3MiB(0txo)
2026-11-22T03:12:14Z UpdateTip: new best=0663 height=1 version=0x20000000 log2_work=2.000000 tx=2 date='2026-11-22T03:12:14Z' progress=1.000000 cache=0.3MiB(1txo)
2026-11-22T03:12:15Z [bench] FlushStateToDisk: write coins cache to disk (2 coins, 1kB) started
2026-11-22T03:12:16Z [bench] FlushStateToDisk: write coins cache to disk (2 coins, 1kB) completed (0.50ms)
2026-11-22T03:12:16Z [coindb] Committed 2 changed transaction outputs (out of 2) to coin database...
2026-11-22T03:12:17Z [bench] FlushStateToDisk: write block and undo data to disk completed (0.10ms)
2026-11-22T03:12:20Z UpdateTip: new best=4d0a height=2 version=0x20000000 log2_work=2.584963 tx=5 date='2026-11-22T03:12:15Z' progress=1.000000 cache=1.5MiB(4txo) warning='unknown new rules activated (versionbit 28)'
";

#[test]
fn parses_timestamps_with_and_without_microseconds() {
    assert_eq!(parse_timestamp_micros("1970-01-01T00:00:00Z x"), Some(0));
    assert_eq!(parse_timestamp_micros("1970-01-02T00:00:01Z"), Some(86_401_000_000));
    assert_eq!(
        parse_timestamp_micros("2026-11-24T14:46:47Z UpdateTip"),
        Some(1_795_531_607_000_000)
    );
    assert_eq!(
        parse_timestamp_micros("2026-11-24T14:46:47.123456Z UpdateTip"),
        Some(1_795_531_607_123_456)
    );
    assert_eq!(parse_timestamp_micros("2000-02-29T00:00:00.5Z"), Some(951_782_400_500_000));
    assert_eq!(parse_timestamp_micros("2026-11-24 14:46:47Z"), None);
    assert_eq!(parse_timestamp_micros("2026-13-24T14:46:47Z"), None);
    assert_eq!(parse_timestamp_micros("2026-11-24T14:46:47.Z"), None);
    assert_eq!(parse_timestamp_micros("  at line start only"), None);
    assert_eq!(parse_timestamp_micros("2026-11-2"), None);
}

#[test]
fn parses_core_update_tip_and_flush_lines() {
    let series = read_series("core", CORE_LOG.as_bytes(), ParseOptions::default()).unwrap();
    let heights: Vec<u32> = series.points.iter().map(|point| point.height).collect();
    assert_eq!(heights, [0, 1, 2]);
    let last = series.final_point().unwrap();
    assert_eq!(last.elapsed_micros, 12_000_000);
    assert_eq!(last.transaction_count, 5);
    assert_eq!(last.cache_mebibytes, 1.5);
    // The "started" line is not a flush; the "completed" one is, at height 1,
    // and the coindb line right after it reports the same flush.
    assert_eq!(series.flushes, [FlushPoint { elapsed_micros: 8_000_000, height: 1 }]);
    let committed = "2026-11-22T03:12:16Z Committed 5 changed transaction outputs (out of 9) to coin database...";
    assert_eq!(parse_line(committed), Some((1_795_317_136_000_000, LineEvent::Flush)));
    assert_eq!(series.skipped_line_count, 0);
}

#[test]
fn parses_ibex_lines_with_microseconds() {
    let log = "\
2026-11-24T14:46:47.000000Z Ibex version 0.1.0
2026-11-24T14:46:47.250000Z UpdateTip: new best=aa height=7 version=0x20000000 log2_work=4.000000 tx=12 date='2026-11-22T03:12:16Z' progress=1.000000 cache=0.0MiB(7txo)
2026-11-24T14:46:48.000000Z FlushStateToDisk start (periodic): writing 7 changed coins (0.00 MiB of cache) at height 7, in the background
2026-11-24T14:46:48.500000Z FlushStateToDisk (periodic): 7 coins written, 0 erased, 1 batches, 0.01 MiB, 8 block index records, 3 ms (validation waited 0 ms)
2026-11-24T14:46:49.000001Z UpdateTip: new best=bb height=8 version=0x20000000 log2_work=4.169925 tx=20 date='2026-11-22T03:12:17Z' progress=1.000000 cache=0.1MiB(9txo)
";
    let series = read_series("ibex", log.as_bytes(), ParseOptions::default()).unwrap();
    let times: Vec<i64> = series.points.iter().map(|point| point.elapsed_micros).collect();
    assert_eq!(times, [250_000, 2_000_001]);
    // The start line is not a flush: the flush is when it was written.
    assert_eq!(series.flushes, [FlushPoint { elapsed_micros: 1_500_000, height: 7 }]);
    let tip = parse_line("2026-11-24T14:46:47Z UpdateTip: new best=aa height=7 version=0x1 log2_work=4 tx=12 date='x' progress=1 cache=2.5MiB(31txo)");
    assert_eq!(
        tip.map(|(_, event)| event),
        Some(LineEvent::Tip(TipLine {
            height: 7,
            transaction_count: 12,
            cache_mebibytes: 2.5,
            cache_coin_count: 31
        }))
    );
}

#[test]
fn matches_the_format_ibex_writes() {
    let fields = ibex_daemon::logging::UpdateTipFields {
        block_hash: ibex_primitives::BlockHash([0xab; 32]),
        height: 812,
        version: 0x2000_0000,
        log2_work: 10.5,
        chain_transaction_count: 4_321,
        block_time: 1_700_000_000,
        progress: 0.5,
        cache_bytes: 3 * 1024 * 1024,
        cache_coins: 99,
        warnings: Vec::new(),
    };
    let line = format!("2026-11-24T14:46:47Z {}", ibex_daemon::logging::format_update_tip(&fields));
    let expected = TipLine {
        height: 812,
        transaction_count: 4_321,
        cache_mebibytes: 3.0,
        cache_coin_count: 99,
    };
    assert_eq!(parse_line(&line).map(|(_, event)| event), Some(LineEvent::Tip(expected)));
}

#[test]
fn skips_lines_that_are_not_utf8() {
    let mut log = Vec::new();
    log.extend_from_slice(
        b"2026-11-24T00:00:00Z UpdateTip: new best=aa height=1 tx=2 cache=0.1MiB(1txo)\n",
    );
    log.extend_from_slice(b"2026-11-24T00:00:01Z peer sent \xff\xfe garbage\n");
    log.extend_from_slice(b"2026-11-24T00:00:02Z UpdateTip: new best=\xc3 height=2 tx=3\n");
    log.extend_from_slice(
        b"2026-11-24T00:00:03Z UpdateTip: new best=bb height=3 tx=4 cache=0.2MiB(2txo)",
    );
    let series = read_series("bytes", log.as_slice(), ParseOptions::default()).unwrap();
    let heights: Vec<u32> = series.points.iter().map(|point| point.height).collect();
    assert_eq!(heights, [1, 3]);
    assert_eq!(series.skipped_line_count, 2);
    assert_eq!(series.final_point().unwrap().elapsed_micros, 3_000_000);
}

#[test]
fn skips_overlong_lines_with_a_bounded_buffer() {
    let mut log = b"2026-11-24T00:00:00Z UpdateTip: new best=aa height=1 tx=2 ".to_vec();
    log.extend(std::iter::repeat_n(b'x', LINE_BYTES_MAX * 2));
    log.extend_from_slice(b"\n2026-11-24T00:00:05Z UpdateTip: new best=bb height=2 tx=3\n");
    let mut reader = std::io::BufReader::with_capacity(1024, log.as_slice());
    let mut line = Vec::new();
    assert_eq!(read_bounded_line(&mut reader, &mut line).unwrap(), Some(true));
    assert_eq!(line.len(), LINE_BYTES_MAX);
    assert_eq!(read_bounded_line(&mut reader, &mut line).unwrap(), Some(false));
    assert!(line.starts_with(b"2026-11-24T00:00:05Z"));
    assert_eq!(read_bounded_line(&mut reader, &mut line).unwrap(), None);
    let series = read_series("long", log.as_slice(), ParseOptions::default()).unwrap();
    assert_eq!(series.points.len(), 1);
    assert_eq!(series.skipped_line_count, 1);
}

const TWO_RUNS: &str = "\
2026-11-24T00:00:00Z Bitcoin Core version v30.0.0 (release build)
2026-11-24T00:00:10Z UpdateTip: new best=a1 height=1 tx=2 cache=0.1MiB(1txo)
2026-11-24T00:00:20Z UpdateTip: new best=a2 height=2 tx=3 cache=0.1MiB(2txo)
2026-11-24T00:00:21Z Shutdown: done
2026-11-24T01:00:00Z Bitcoin Core version v30.0.0 (release build)
2026-11-24T01:00:05Z UpdateTip: new best=a1 height=1 tx=2 cache=0.1MiB(1txo)
2026-11-24T01:00:06Z UpdateTip: new best=a2 height=2 tx=3 cache=0.1MiB(2txo)
2026-11-24T01:00:07Z UpdateTip: new best=a3 height=3 tx=4 cache=0.1MiB(3txo)
";

#[test]
fn after_shutdown_starts_with_the_second_run() {
    let options = ParseOptions { after_shutdown: true, from_height: 0 };
    let series = read_series("second", TWO_RUNS.as_bytes(), options).unwrap();
    let points: Vec<(i64, u32)> = series
        .points
        .iter()
        .map(|point| (point.elapsed_micros / 1_000_000, point.height))
        .collect();
    assert_eq!(points, [(5, 1), (6, 2), (7, 3)]);
    assert_eq!(series.repeated_tip_count, 0);
}

#[test]
fn without_after_shutdown_a_restart_continues_the_series() {
    let series = read_series("both", TWO_RUNS.as_bytes(), ParseOptions::default()).unwrap();
    let points: Vec<(i64, u32)> = series
        .points
        .iter()
        .map(|point| (point.elapsed_micros / 1_000_000, point.height))
        .collect();
    assert_eq!(points, [(10, 1), (20, 2), (3_607, 3)]);
    assert_eq!(series.repeated_tip_count, 2);
}

#[test]
fn reorganisation_keeps_the_first_time_each_height_was_reached() {
    let log = "\
2026-11-24T00:00:00Z start
2026-11-24T00:00:01Z UpdateTip: new best=a1 height=1 tx=2
2026-11-24T00:00:02Z UpdateTip: new best=a2 height=2 tx=3
2026-11-24T00:00:03Z UpdateTip: new best=a3 height=3 tx=4
2026-11-24T00:00:04Z UpdateTip: new best=a2 height=2 tx=3
2026-11-24T00:00:05Z UpdateTip: new best=a1 height=1 tx=2
2026-11-24T00:00:06Z UpdateTip: new best=b2 height=2 tx=3
2026-11-24T00:00:07Z UpdateTip: new best=b3 height=3 tx=4
2026-11-24T00:00:08Z FlushStateToDisk (periodic): 1 coins written
2026-11-24T00:00:09Z UpdateTip: new best=b4 height=4 tx=6
";
    let series = read_series("reorg", log.as_bytes(), ParseOptions::default()).unwrap();
    let points: Vec<(i64, u32)> = series
        .points
        .iter()
        .map(|point| (point.elapsed_micros / 1_000_000, point.height))
        .collect();
    assert_eq!(points, [(1, 1), (2, 2), (3, 3), (9, 4)]);
    assert_eq!(series.repeated_tip_count, 4);
    assert_eq!(series.flushes, [FlushPoint { elapsed_micros: 8_000_000, height: 3 }]);
    assert_eq!(series.elapsed_micros_at(3), Some(3_000_000));
    assert_eq!(series.elapsed_micros_at(5), None);
}

#[test]
fn from_height_times_from_reaching_that_height() {
    let options = ParseOptions { after_shutdown: false, from_height: 2 };
    let log = "\
2026-11-24T00:00:00Z start
2026-11-24T00:00:01Z UpdateTip: new best=a1 height=1 tx=2
2026-11-24T00:00:02Z FlushStateToDisk (periodic): 1 coins written
2026-11-24T00:00:04Z UpdateTip: new best=a2 height=2 tx=3
2026-11-24T00:00:09Z UpdateTip: new best=a3 height=3 tx=4
";
    let series = read_series("from", log.as_bytes(), options).unwrap();
    let points: Vec<(i64, u32)> = series
        .points
        .iter()
        .map(|point| (point.elapsed_micros / 1_000_000, point.height))
        .collect();
    assert_eq!(points, [(0, 2), (5, 3)]);
    assert!(series.flushes.is_empty());
}
