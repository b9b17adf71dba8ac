//! Tests for the chain by quarter, the cache allowance a log states and
//! how a run's cache filled.

use std::io::Write as _;

use super::*;
use crate::bench::quarters::quarter_table;

/// A tip at `height` holding `transactions` in the chain and a cache of
/// `cache_mebibytes` with `cache_coin_count` coins, one second a block.
fn tip(height: u32, transactions: u64, cache_mebibytes: f64, cache_coin_count: u64) -> TipPoint {
    TipPoint {
        elapsed_micros: i64::from(height) * 1_000_000,
        height,
        transaction_count: transactions,
        cache_mebibytes,
        cache_coin_count,
    }
}

fn series(points: Vec<TipPoint>) -> RunSeries {
    RunSeries { name: "ibexd-1".to_owned(), points, ..RunSeries::default() }
}

#[test]
fn reads_core_and_ibex_allowances_from_their_lines() {
    let core = "2026-11-29T10:19:52.081899Z * Using 90.0 MiB for in-memory UTXO set (plus up to \
                286.1 MiB of unused mempool space)";
    let allowance = parse_cache_allowance(core).expect("Core's line");
    assert_eq!(allowance.share_mebibytes, 90.0);
    assert_eq!(allowance.lent_mebibytes, Some(286.1));
    assert!((allowance.total_mebibytes() - 376.1).abs() < 1e-9);
    let ibex = "2026-11-29T10:18:35.046534Z * Using 72.8 MiB for in-memory UTXO set";
    let allowance = parse_cache_allowance(ibex).expect("Ibex's line");
    assert_eq!((allowance.share_mebibytes, allowance.lent_mebibytes), (72.8, None));
    assert_eq!(allowance.total_mebibytes(), 72.8);
    // Other lines, and numbers that are not sizes, are not allowances.
    assert_eq!(parse_cache_allowance("* Using 8.0 MiB for chain state database"), None);
    assert_eq!(parse_cache_allowance("* Using -3 MiB for in-memory UTXO set"), None);
    assert_eq!(parse_cache_allowance("* Using NaN MiB for in-memory UTXO set"), None);
    assert_eq!(parse_cache_allowance("Using  MiB for in-memory UTXO set"), None);
    let odd = parse_cache_allowance(
        "* Using 4 MiB for in-memory UTXO set (plus up to x MiB of unused mempool space)",
    );
    assert_eq!(odd.map(|allowance| allowance.lent_mebibytes), Some(None));
}

#[test]
fn finds_the_allowance_near_the_start_of_a_log() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("bitcoind-1.log");
    let mut file = std::fs::File::create(&path).expect("log");
    writeln!(file, "2026-11-29T10:19:52.081847Z Cache configuration:").expect("write");
    writeln!(file, "2026-11-29T10:19:52.081856Z * Using 2.0 MiB for block index database")
        .expect("write");
    writeln!(
        file,
        "2026-11-29T10:19:52.081899Z * Using 90.0 MiB for in-memory UTXO set (plus up to 4.8 MiB of unused mempool space)"
    )
    .expect("write");
    drop(file);
    let allowance = read_cache_allowance(&path).expect("read").expect("found");
    assert_eq!((allowance.share_mebibytes, allowance.lent_mebibytes), (90.0, Some(4.8)));
    let without = directory.path().join("other.log");
    std::fs::write(&without, "no cache line\n").expect("write");
    assert_eq!(read_cache_allowance(&without).expect("read"), None);
    assert!(read_cache_allowance(&directory.path().join("missing.log")).is_err());
}

#[test]
fn counts_the_flushes_that_emptied_a_cache_by_its_coins() {
    // Ibex's size still counts the map a background flush writes, so only
    // the coins show the flush: 64 MiB of 405,366 coins, then 68 MiB of
    // 22,839. A small cache at the start and a cache shrinking by less
    // than half are not flushes.
    let run = series(vec![
        tip(0, 1, 0.0, 0),
        tip(1, 2, 0.1, 900),
        tip(2, 3, 0.0, 10),
        tip(3, 4, 64.4, 405_366),
        tip(4, 5, 68.4, 22_839),
        tip(5, 6, 70.0, 300_000),
        tip(6, 7, 60.0, 160_000),
        tip(7, 8, 20.0, 100),
    ]);
    assert_eq!(cache_use(&run), (70.0, 2));
    let other = series(vec![tip(0, 1, 10.0, 5_000), tip(1, 2, 30.0, 9_000)]);
    let cache = node_cache(
        "ibexd",
        Some(CacheAllowance { share_mebibytes: 72.8, lent_mebibytes: None }),
        &[&run, &other],
    )
    .expect("two runs");
    assert_eq!(cache.largest_mebibytes.mean, 50.0);
    assert_eq!(cache.largest_mebibytes.max, 70.0);
    assert_eq!(cache.emptied.mean, 1.0);
    assert_eq!(node_cache("none", None, &[]), None);
    let text = caches_markdown(&[cache]);
    assert!(text.contains("| `ibexd` | 72.8 | 50.0 (70.0) | 1.0 |"), "{text}");
    let core = NodeCache {
        node: "bitcoind".to_owned(),
        allowance: Some(CacheAllowance { share_mebibytes: 90.0, lent_mebibytes: Some(286.1) }),
        largest_mebibytes: summarize(&[368.1]).expect("one"),
        emptied: summarize(&[18.0]).expect("one"),
    };
    let text = caches_markdown(std::slice::from_ref(&core));
    assert!(
        text.contains(
            "| `bitcoind` | 90.0 + 286.1 of unused mempool = 376.1 | 368.1 (368.1) | 18.0 |"
        ),
        "{text}"
    );
    let json = caches_json(&[core]);
    assert_eq!(json[0]["unused_mempool_mib"], 286.1);
    assert_eq!(json[0]["emptied"], 18.0);
}

#[test]
fn describes_each_quarters_blocks_from_a_log_and_the_manifest() {
    // Heights 0-8: 10 transactions a block to height 6, 30 after; the set
    // grows by 100 coins a block to height 6, then shrinks by 10.
    let points = (0..=8u32)
        .map(|height| {
            let transactions = match height {
                0..=6 => 1 + 10 * u64::from(height),
                _ => 61 + 30 * u64::from(height - 6),
            };
            tip(height, transactions, 0.0, 0)
        })
        .collect();
    let run = series(points);
    let counts = UtxoCounts::new(vec![(0, 0), (6, 600), (8, 580)]).expect("increasing heights");
    let table = quarter_table(&[("ibexd".to_owned(), vec![&run])], "ibexd", 0, 8);
    let quarters = chain_quarters(&table, Some(&run), Some(&counts));
    assert_eq!(quarters.len(), QUARTER_COUNT);
    assert_eq!((quarters[0].first_height, quarters[0].last_height), (1, 2));
    assert_eq!(quarters[0].transactions_per_block, Some(10.0));
    assert_eq!(quarters[0].utxo_count_at_end, Some(200.0));
    assert_eq!(quarters[0].coins_added_per_block, Some(100.0));
    assert_eq!((quarters[3].first_height, quarters[3].last_height), (7, 8));
    assert_eq!(quarters[3].transactions_per_block, Some(30.0));
    assert_eq!(quarters[3].utxo_count_at_end, Some(580.0));
    assert_eq!(quarters[3].coins_added_per_block, Some(-10.0));
    let text = chain_markdown(&quarters, "ibexd-1");
    assert!(text.contains("from `ibexd-1`'s log"), "{text}");
    assert!(text.contains("| 1 | 1-2 | 10 | 0.00 | 100 |"), "{text}");
    assert!(text.contains("| 4 | 7-8 | 30 | 0.00 | -10 |"), "{text}");
    let json = chain_json(&quarters);
    assert_eq!(json[3]["coins_added_per_block"], -10.0);
    // Without a manifest, or a log missing a quarter's end, those cells are empty.
    let short = series(run.points[..5].to_vec());
    let bare = chain_quarters(&table, Some(&short), None);
    assert_eq!(bare[1].transactions_per_block, Some(10.0));
    assert_eq!(bare[2].transactions_per_block, None);
    assert_eq!(bare[0].utxo_count_at_end, None);
    assert!(chain_markdown(&bare, "ibexd-1").contains("| 3 | 5-6 | - | - | - |"));
}
