//! The estimator against synthetic syncs whose real end is known.

use super::*;

fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() <= tolerance * expected.abs().max(1e-9)
}

#[test]
fn a_steady_rate_is_measured_exactly_whatever_the_sampling() {
    for interval_ms in [100u64, 1_000, 10_000, 45_000] {
        let mut rate = SmoothedRate::default();
        assert_eq!(rate.per_second(), None);
        for step in 0..=20u64 {
            let elapsed_ms = step * interval_ms;
            rate.observe(elapsed_ms, elapsed_ms as f64 * 0.25);
        }
        let per_second = rate.per_second().unwrap();
        assert!(close(per_second, 250.0, 1e-9), "{interval_ms} ms: {per_second}");
        assert!(close(rate.seconds_for(500.0).unwrap(), 2.0, 1e-9));
        assert_eq!(rate.seconds_for(0.0), Some(0.0));
    }
}

#[test]
fn early_on_the_rate_is_the_average_since_the_start_not_the_first_sample() {
    let mut rate = SmoothedRate::default();
    rate.observe(0, 0.0);
    rate.observe(1_000, 100.0);
    rate.observe(2_000, 300.0);
    let decay = (-1.0f64 / 30.0).exp();
    let expected = (100.0 * decay + 200.0) / (decay + 1.0);
    assert!(close(rate.per_second().unwrap(), expected, 1e-12));
    assert!((rate.per_second().unwrap() - 150.0).abs() < 1.0, "about the plain average");
}

#[test]
fn a_step_in_the_rate_is_followed_within_the_smoothing_time() {
    let mut rate = SmoothedRate::default();
    let mut work = 0.0;
    // Ten minutes at 100 units/s, then 200 units/s, sampled each second.
    for second in 0..=600u64 {
        rate.observe(second * 1_000, work);
        work += 100.0;
    }
    assert!(close(rate.per_second().unwrap(), 100.0, 1e-6));
    let mut seen = Vec::new();
    work -= 100.0;
    for second in 601..=720u64 {
        work += 200.0;
        rate.observe(second * 1_000, work);
        seen.push((second - 600, rate.per_second().unwrap()));
    }
    // One time constant after the step: 1 - 1/e of the way, as an
    // exponential average goes; three: 95 %.
    let at = |seconds: u64| seen.iter().find(|(after, _)| *after == seconds).unwrap().1;
    assert!((at(30) - (100.0 + 100.0 * (1.0 - (-1.0f64).exp()))).abs() < 0.01, "{}", at(30));
    assert!((at(90) - (100.0 + 100.0 * (1.0 - (-3.0f64).exp()))).abs() < 0.01, "{}", at(90));
    // Work going back (a reorganisation) counts as none, not negative.
    rate.observe(721_000, 0.0);
    assert!(rate.per_second().unwrap() > 150.0);
}

fn plan(first_height: u32, block_bytes: Vec<u32>) -> ImportPlan {
    let best_header_height = first_height + block_bytes.len() as u32 - 1;
    ImportPlan { best_header_height, first_height, block_bytes }
}

#[test]
fn planned_bytes_are_running_totals() {
    let planned = PlannedBytes::from_plan(&plan(5, vec![10, 20, 30])).unwrap();
    assert_eq!(planned.last_height(), 7);
    assert_eq!(planned.bytes_through(4), 0);
    assert_eq!(planned.bytes_through(5), 10);
    assert_eq!(planned.bytes_through(7), 60);
    assert_eq!(planned.bytes_through(100), 60);
    assert!(planned.covers(4, 7), "tip just below the plan");
    assert!(!planned.covers(3, 7), "a gap below the plan");
    assert!(!planned.covers(5, 8), "a target past the plan");
    let empty = ImportPlan { best_header_height: 0, first_height: 0, block_bytes: Vec::new() };
    assert_eq!(PlannedBytes::from_plan(&empty), None);
}

/// A synthetic import: block `h` holds `h` KB, and the node connects a
/// steady 1 MB/s. A blocks-per-second estimate is 3x too short at a
/// tenth of the height; the plan's bytes give the real end.
#[test]
fn an_import_of_growing_blocks_is_timed_by_its_bytes() {
    const BLOCKS: u32 = 2_000;
    let sizes: Vec<u32> = (0..=BLOCKS).map(|height| height * 1_000).collect();
    let total: f64 = sizes.iter().map(|&bytes| f64::from(bytes)).sum();
    let mut estimator = SyncEstimator::new(None, false);
    estimator.set_plan(&plan(0, sizes.clone()));
    let bytes_per_ms = 1_000.0;
    let mut done = 0.0;
    let mut checked = 0;
    for height in 0..=BLOCKS {
        done += f64::from(sizes[height as usize]);
        let elapsed_ms = (done / bytes_per_ms) as u64;
        let position = ChainPosition {
            elapsed_ms,
            height,
            chain_transactions: u64::from(height) * 10,
            best_header_height: BLOCKS,
            verification_progress: 0.0,
        };
        let estimate = estimator.observe(position);
        assert_eq!(estimate.target_height, BLOCKS);
        if height >= BLOCKS / 10 {
            let real_seconds = (total - done) / bytes_per_ms / 1000.0;
            let estimated = estimate.remaining_seconds.unwrap();
            assert!(close(estimated, real_seconds, 0.01), "{height}: {estimated} {real_seconds}");
            let blocks_estimate =
                f64::from(BLOCKS - height) * elapsed_ms as f64 / 1000.0 / f64::from(height.max(1));
            if height == BLOCKS / 10 {
                assert!(blocks_estimate < real_seconds / 3.0, "blocks would say {blocks_estimate}");
            }
            checked += 1;
        }
    }
    assert!(checked > 1_000);
}

#[test]
fn the_target_is_the_stop_height_when_lower_and_the_end_is_zero() {
    let mut estimator = SyncEstimator::new(Some(120), false);
    estimator.set_plan(&plan(0, vec![1_000; 201]));
    let at = |elapsed_ms: u64, height: u32| ChainPosition {
        elapsed_ms,
        height,
        chain_transactions: u64::from(height),
        best_header_height: 200,
        verification_progress: 0.5,
    };
    assert_eq!(estimator.observe(at(0, 0)).remaining_seconds, None, "no rate yet");
    let estimate = estimator.observe(at(1_000, 20));
    assert_eq!(estimate.target_height, 120);
    // 20 blocks of 1,000 bytes a second: 100 blocks left take 5 s.
    assert!(close(estimate.remaining_seconds.unwrap(), 5.0, 1e-9));
    assert_eq!(estimator.observe(at(6_000, 120)).remaining_seconds, Some(0.0));
    assert_eq!(estimator.observe(at(6_500, 130)).target_height, 130, "never below the tip");
}

#[test]
fn a_sync_from_peers_counts_transactions_left() {
    // Mainnet-like: Core's progress 0.25 at 3,000 transactions means 9,000
    // more; at 300 transactions/s that is 30 s.
    let mut forecast = SyncEstimator::new(None, true);
    let position = |elapsed_ms: u64, height: u32, transactions: u64| ChainPosition {
        elapsed_ms,
        height,
        chain_transactions: transactions,
        best_header_height: 1_000,
        verification_progress: 0.25,
    };
    forecast.observe(position(0, 0, 0));
    let estimate = forecast.observe(position(10_000, 100, 3_000));
    assert!(close(estimate.remaining_seconds.unwrap(), 30.0, 1e-9));
    // Regtest: no real statistics, so the 900 blocks left times the 30
    // transactions per block seen: 27,000 at 300/s, 90 s.
    let mut by_blocks = SyncEstimator::new(None, false);
    by_blocks.observe(position(0, 0, 0));
    let estimate = by_blocks.observe(position(10_000, 100, 3_000));
    assert!(close(estimate.remaining_seconds.unwrap(), 90.0, 1e-9));
    // A stop height below the best header: the blocks rule again.
    let mut stopping = SyncEstimator::new(Some(400), true);
    stopping.observe(position(0, 0, 0));
    let estimate = stopping.observe(position(10_000, 100, 3_000));
    assert!(close(estimate.remaining_seconds.unwrap(), 30.0, 1e-9), "300 blocks x 30 tx");
}

#[test]
fn durations_read_like_a_clock() {
    assert_eq!(format_duration(0.0), "0s");
    assert_eq!(format_duration(0.04), "0.0s");
    assert_eq!(format_duration(4.26), "4.3s");
    assert_eq!(format_duration(9.96), "10s");
    assert_eq!(format_duration(41.6), "42s");
    assert_eq!(format_duration(185.0), "3m05s");
    assert_eq!(format_duration(7_380.0), "2h03m");
    assert_eq!(format_duration(-3.0), "0s");
    assert_eq!(format_duration(f64::INFINITY), "?");
}
