//! Tests for the cost-growth windows, interpolation, line fit and manifest
//! reading.

use super::*;
use crate::plot::parse::TipPoint;

/// A run whose tip reaches height `h` at `h` s + 5 ms x h²: block `h`
/// costs 1,000 + 10 x h - 5 ms, so a window `(a, b]` costs 1,000 + 5 x
/// (a + b) ms per block, 1,000 + 10 x its middle height.
fn growing_run(final_height: u32) -> RunSeries {
    let points = (0..=final_height)
        .map(|height| {
            let height_micros = i64::from(height);
            TipPoint {
                elapsed_micros: height_micros * 1_000_000 + 5_000 * height_micros * height_micros,
                height,
                transaction_count: u64::from(height) + 1,
                cache_mebibytes: 0.0,
                cache_coin_count: 0,
            }
        })
        .collect();
    RunSeries { name: "growing".to_owned(), points, ..RunSeries::default() }
}

/// 10,000 coins per block, recorded every 10 heights to 100.
fn linear_counts() -> UtxoCounts {
    UtxoCounts::new((0..=10).map(|step| (step * 10, u64::from(step) * 100_000)).collect())
        .expect("increasing heights")
}

fn close(left: f64, right: f64) -> bool {
    (left - right).abs() < 1e-6
}

#[test]
fn interpolates_between_entries_and_refuses_outside_them() {
    let counts = UtxoCounts::new(vec![(0, 0), (10, 1_000), (20, 1_500)]).expect("valid");
    assert_eq!(counts.at_height(0.0), Some(0.0));
    assert_eq!(counts.at_height(10.0), Some(1_000.0));
    assert_eq!(counts.at_height(5.5), Some(550.0));
    assert_eq!(counts.at_height(15.0), Some(1_250.0));
    assert_eq!(counts.at_height(20.0), Some(1_500.0));
    assert_eq!(counts.at_height(20.5), None);
    assert_eq!(counts.at_height(-1.0), None);
    let shrinking = UtxoCounts::new(vec![(4, 100), (6, 50)]).expect("valid");
    assert_eq!(shrinking.at_height(5.0), Some(75.0));
    assert_eq!(shrinking.at_height(3.0), None);
    assert!(UtxoCounts::new(Vec::new()).is_err());
    assert!(UtxoCounts::new(vec![(0, 0), (5, 1), (5, 2)]).is_err());
    assert!(UtxoCounts::new(vec![(6, 0), (5, 1)]).is_err());
}

#[test]
fn windows_start_after_the_first_tip_and_end_at_the_last() {
    let windows = cost_windows(&growing_run(100), &linear_counts(), 20);
    let bounds: Vec<(u32, u32)> =
        windows.iter().map(|window| (window.first_height, window.last_height)).collect();
    // Block 1's time (Core's indexing on -reindex) is left out; the last
    // window has the 19 blocks left.
    assert_eq!(bounds, [(2, 21), (22, 41), (42, 61), (62, 81), (82, 100)]);
    let middles = [11.0, 31.0, 51.0, 71.0, 90.5];
    for (window, middle) in windows.iter().zip(middles) {
        assert!(close(window.utxo_count, 10_000.0 * middle), "{window:?}");
        assert!(close(window.milliseconds_per_block, 1_000.0 + 10.0 * middle), "{window:?}");
    }
    // Counts recorded only to height 50: windows past them are left out.
    let short = UtxoCounts::new(vec![(0, 0), (50, 500_000)]).expect("valid");
    assert_eq!(cost_windows(&growing_run(100), &short, 20).len(), 2);
    let single = RunSeries { points: growing_run(0).points, ..RunSeries::default() };
    assert!(cost_windows(&single, &linear_counts(), 20).is_empty());
    assert!(cost_windows(&RunSeries::default(), &linear_counts(), 20).is_empty());
}

#[test]
fn windows_skip_heights_missing_from_the_log() {
    let mut run = growing_run(100);
    // Heights 35-44 were never logged: the window ending at 41 is timed to
    // the next tip logged (height 45), and the next one from there.
    run.points.retain(|point| !(35..45).contains(&point.height));
    let windows = cost_windows(&run, &linear_counts(), 20);
    assert_eq!(windows.len(), 5);
    // (24 s + 5 ms x (45² - 21²)) / 20 and (16 s + 5 ms x (61² - 45²)) / 20.
    assert!(close(windows[1].milliseconds_per_block, 1_596.0), "{:?}", windows[1]);
    assert!(close(windows[2].milliseconds_per_block, 1_224.0), "{:?}", windows[2]);
    assert!(close(windows[3].milliseconds_per_block, 1_000.0 + 5.0 * 142.0));
}

#[test]
fn fits_a_line_in_milliseconds_per_million_coins() {
    let growth = cost_growth(&[growing_run(100)], &linear_counts(), 20);
    let fit = growth.runs[0].fit.expect("five windows");
    // 1,000 ms + 10 ms a height, 10,000 coins a height: 1,000 ms per M.
    assert!(close(fit.slope_milliseconds_per_million_coins, 1_000.0), "{fit:?}");
    assert!(close(fit.intercept_milliseconds, 1_000.0), "{fit:?}");
    assert!(close(fit.r_squared.expect("spread"), 1.0));
    assert_eq!(fit.window_count, 5);
    assert!(close(fit.milliseconds_per_block_at(MAINNET_UTXO_COUNT_MILLIONS), 181_000.0));
    let text = cost_summary(&growth);
    assert!(text.contains("over 20-block windows"), "{text}");
    assert!(
        text.contains("growing (0.11-0.91 M coins): 1000.000 ms/block + 1000.000 ms per million coins (least squares over 5 windows of typical blocks, r² 1.000; at 180 M coins the line gives 181000.0 ms/block)"),
        "{text}"
    );
    // A slow window in the middle (a flush) lowers r² and lifts the line,
    // but hardly tilts it (the middle window is at about the mean count).
    let mut windows = growth.runs[0].windows.clone();
    windows[2].milliseconds_per_block += 100.0;
    let noisy = fit_line(&windows).expect("fit");
    assert!(noisy.r_squared.expect("spread") < 0.999);
    assert!((noisy.slope_milliseconds_per_million_coins - 1_000.0).abs() < 1.0, "{noisy:?}");
    assert!(
        close(
            noisy.intercept_milliseconds + noisy.slope_milliseconds_per_million_coins * 0.509,
            1_000.0 + 509.0 + 20.0
        ),
        "{noisy:?}"
    );
    let flat: Vec<CostWindow> = windows
        .iter()
        .map(|window| CostWindow { milliseconds_per_block: 7.0, ..*window })
        .collect();
    let flat_fit = fit_line(&flat).expect("fit");
    assert_eq!((flat_fit.slope_milliseconds_per_million_coins, flat_fit.r_squared), (0.0, None));
    assert_eq!(fit_line(&windows[..1]), None);
    let same_count: Vec<CostWindow> =
        windows.iter().map(|window| CostWindow { utxo_count: 5.0, ..*window }).collect();
    assert_eq!(fit_line(&same_count), None);
}

#[test]
fn fits_only_windows_of_typical_blocks() {
    // Coinbase-only blocks at first (1 transaction, almost free), then
    // full ones whose cost grows 1 ms per 1,000 coins.
    let window = |coins: f64, milliseconds: f64, transactions: f64| CostWindow {
        first_height: 1,
        last_height: 2,
        utxo_count: coins,
        milliseconds_per_block: milliseconds,
        transactions_per_block: transactions,
    };
    let windows = [
        window(0.0, 0.1, 1.0),
        window(100.0, 0.1, 1.0),
        window(1_000_000.0, 101.0, 1_000.0),
        window(2_000_000.0, 102.0, 1_200.0),
        window(3_000_000.0, 103.0, 600.0),
        window(4_000_000.0, 104.0, 499.0),
    ];
    // Median 600 transactions a block: windows under 300 are left out.
    let typical = typical_windows(&windows);
    assert_eq!(typical.len(), 4);
    assert!(typical.iter().all(|window| window.transactions_per_block >= 300.0));
    let fit = fit_line(&typical).expect("fit");
    assert!(close(fit.slope_milliseconds_per_million_coins, 1.0), "{fit:?}");
    assert!(close(fit.intercept_milliseconds, 100.0), "{fit:?}");
    let everything = fit_line(&windows).expect("fit");
    assert!(everything.intercept_milliseconds < 50.0, "pulled down: {everything:?}");
    assert!(typical_windows(&[]).is_empty());
    let growth = CostGrowth {
        window_blocks: 1,
        runs: vec![RunCost { name: "r".to_owned(), windows: windows.to_vec(), fit: Some(fit) }],
    };
    let text = cost_summary(&growth);
    assert!(text.contains("r (1.00-4.00 M coins): 100.000 ms/block + 1.000 ms per"), "{text}");
}

#[test]
fn writes_one_csv_line_per_window() {
    let growth = cost_growth(&[growing_run(100)], &linear_counts(), 50);
    let mut bytes = Vec::new();
    write_cost_csv(&growth, &mut bytes).expect("in memory");
    let text = String::from_utf8(bytes).expect("UTF-8");
    assert_eq!(
        text,
        "run,first_height,last_height,utxo_count,milliseconds_per_block,transactions_per_block\n\
         growing,2,51,260000,1260.000,1.0\ngrowing,52,100,755000,1755.000,1.0\n"
    );
}

#[test]
fn reads_counts_from_a_manifest_and_says_what_is_wrong() {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("manifest.json");
    let read = |text: &str| {
        std::fs::write(&path, text).expect("write");
        read_utxo_counts(&path)
    };
    let counts =
        read("{\"block_count\": 20, \"utxo_count_by_height\": [[0, 0], [10, 7], [20, 9]]}")
            .expect("valid");
    assert_eq!(counts.entries(), [(0, 0), (10, 7), (20, 9)]);
    let message = |text: &str| read(text).expect_err("refused").to_string();
    assert!(message("{\"block_count\": 20}").contains("no utxo_count_by_height"));
    assert!(message("{\"utxo_count_by_height\": [[0, 0], [0, 1]]}").contains("do not increase"));
    assert!(message("{\"utxo_count_by_height\": [[0, 0, 1]]}").contains("non-[height, count]"));
    assert!(message("{\"utxo_count_by_height\": [[-1, 0]]}").contains("non-[height, count]"));
    assert!(message("{\"utxo_count_by_height\": [[4294967296, 0]]}").contains("non-[height"));
    assert!(message("{\"utxo_count_by_height\": []}").contains("is empty"));
    assert!(message("not json").contains("manifest.json"));
    let huge = format!("{{\"x\": \"{}\"}}", "a".repeat(MANIFEST_BYTES_MAX as usize));
    assert!(message(&huge).contains("larger than"));
    let missing = read_utxo_counts(&directory.path().join("missing.json"));
    assert!(missing.expect_err("no file").to_string().contains("cannot read"));
}
