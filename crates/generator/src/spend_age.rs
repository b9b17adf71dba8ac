//! How old the coins a block spends are: the `utxo-heavy` profile's age
//! model, the integer log-uniform draw it rests on, and the five-range
//! histogram the manifest records.
//!
//! The model is a mixture, chosen for the shape an IBD's coin cache meets
//! on the main chain: a hot head (change and hot-wallet coins spent within
//! minutes to hours, which a cache of recent coins serves) and a long cold
//! tail (coins held for months or years, which miss the cache and go to the
//! database).
//! - With chance `young_per_mille` (700) the coin is young: age 1, then one
//!   block older with chance `young_older_per_mille` (650) at each step, at
//!   most `young_age_max_blocks` (20): a geometric head, 35 % of young
//!   spends in the next block, 98.7 % within 10 blocks.
//! - Otherwise the age is log-uniform from 1 to the oldest coin's age:
//!   equal mass for each doubling of age, so on a 2,000-block chain a tail
//!   spend is as likely 1,000-2,000 blocks old as 1-2 blocks old.
//! - Consolidations sweep coins at least `consolidation_age_min_blocks`
//!   (101) old, from a log-uniform start age (see [`crate::aged_coins`]).
//!
//! Everything is integer arithmetic on the seeded generator, so a chain is
//! the same bytes on every platform (no floating-point `ln`/`exp`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::named_counts::NamedCounts;
use crate::random::DeterministicRng;

/// Relative weight of one whole octave in [`log_uniform`].
const OCTAVE_WEIGHT: u64 = 1 << 20;
/// Octaves a `u64` range can span.
const OCTAVES_MAX: usize = 64;

/// A number in `low..=high` (`low` at least 1), log-uniform by octaves:
/// each doubling `[low * 2^k, low * 2^(k+1))` gets the same chance (a last,
/// partial octave a share in proportion to its width), and the number is
/// uniform within its octave.
pub fn log_uniform(rng: &mut DeterministicRng, low: u64, high: u64) -> u64 {
    let low = low.max(1);
    if high <= low {
        return low;
    }
    let mut starts = [0u64; OCTAVES_MAX];
    let mut weights = [0u64; OCTAVES_MAX];
    let mut octaves = 0;
    let mut start = low;
    while start <= high && octaves < OCTAVES_MAX {
        let width = start;
        let covered = (high - start + 1).min(width);
        starts[octaves] = start;
        weights[octaves] = (OCTAVE_WEIGHT as u128 * covered as u128 / width as u128).max(1) as u64;
        octaves += 1;
        start = start.saturating_add(width);
    }
    let octave = rng.weighted(&weights[..octaves]);
    let start = starts[octave];
    let end = start.saturating_add(start - 1).min(high);
    rng.between(start, end)
}

/// The ages of the coins ordinary spends take (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpendAgeModel {
    /// Share of spends that take a young coin, per mille.
    pub young_per_mille: u64,
    /// Chance, per mille, that a young coin is one block older still.
    pub young_older_per_mille: u64,
    /// Oldest age a young coin has.
    pub young_age_max_blocks: u32,
    /// Youngest coin a consolidation sweeps.
    pub consolidation_age_min_blocks: u32,
}

impl SpendAgeModel {
    /// The model the `utxo-heavy` profile uses.
    pub fn mainnet_like() -> SpendAgeModel {
        SpendAgeModel {
            young_per_mille: 700,
            young_older_per_mille: 650,
            young_age_max_blocks: 20,
            consolidation_age_min_blocks: 101,
        }
    }

    /// The age, in blocks, of the coin a spend wants, when the oldest coin
    /// is `age_max` blocks old.
    pub fn draw_age(&self, rng: &mut DeterministicRng, age_max: u32) -> u32 {
        let age_max = age_max.max(1);
        if rng.chance_per_mille(self.young_per_mille) {
            self.draw_young_age(rng).min(age_max)
        } else {
            log_uniform(rng, 1, u64::from(age_max)) as u32
        }
    }

    /// A young age: 1, then one more with `young_older_per_mille` each time.
    pub fn draw_young_age(&self, rng: &mut DeterministicRng) -> u32 {
        let mut age = 1;
        while age < self.young_age_max_blocks && rng.chance_per_mille(self.young_older_per_mille) {
            age += 1;
        }
        age
    }
}

/// The histogram's ranges: highest age of each but the last (`1001+`).
pub const SPEND_AGE_RANGE_HIGHS: [u64; 4] = [1, 10, 100, 1_000];
/// The manifest's names of the ranges (zero-padded so they sort in order).
pub const SPEND_AGE_RANGE_NAMES: [&str; SPEND_AGE_RANGES] =
    ["00000-00001", "00002-00010", "00011-00100", "00101-01000", "01001+"];
/// Number of ranges.
pub const SPEND_AGE_RANGES: usize = 5;

/// Spends counted by the age of their coin in five ranges: 0-1, 2-10,
/// 11-100, 101-1,000 and 1,001 blocks or more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpendAgeHistogram {
    /// Spends per range.
    pub counts: [u64; SPEND_AGE_RANGES],
}

impl SpendAgeHistogram {
    /// The range `age_blocks` falls in.
    pub fn range_of(age_blocks: u64) -> usize {
        SPEND_AGE_RANGE_HIGHS.iter().take_while(|&&high| age_blocks > high).count()
    }

    /// Counts one spend of a coin `age_blocks` old.
    pub fn add(&mut self, age_blocks: u64) {
        self.counts[Self::range_of(age_blocks)] += 1;
    }

    /// Spends counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The counts by range name.
    pub fn named(&self) -> NamedCounts {
        let counts: BTreeMap<String, u64> = SPEND_AGE_RANGE_NAMES
            .iter()
            .zip(self.counts)
            .map(|(name, count)| ((*name).to_owned(), count))
            .collect();
        NamedCounts(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRAWS: u32 = 200_000;

    /// The share of draws in each histogram range.
    fn shares(mut draw: impl FnMut() -> u64) -> [f64; SPEND_AGE_RANGES] {
        let mut histogram = SpendAgeHistogram::default();
        for _ in 0..DRAWS {
            histogram.add(draw());
        }
        histogram.counts.map(|count| count as f64 / f64::from(DRAWS))
    }

    /// Continuous log-uniform mass of `low..=high` within `1..=age_max`.
    fn log_mass(low: f64, high: f64, age_max: f64) -> f64 {
        let clamp = |value: f64| value.clamp(1.0, age_max + 1.0);
        ((clamp(high + 1.0)).ln() - clamp(low).ln()) / (age_max + 1.0).ln()
    }

    #[test]
    fn ranges_split_where_the_manifest_says() {
        let ranges: Vec<usize> = [0, 1, 2, 10, 11, 100, 101, 1_000, 1_001, 50_000]
            .map(SpendAgeHistogram::range_of)
            .into();
        assert_eq!(ranges, vec![0, 0, 1, 1, 2, 2, 3, 3, 4, 4]);
    }

    #[test]
    fn log_uniform_stays_in_range_and_spreads_over_octaves() {
        let mut rng = DeterministicRng::new(3, 3);
        assert_eq!(log_uniform(&mut rng, 7, 7), 7);
        assert_eq!(log_uniform(&mut rng, 9, 2), 9);
        for _ in 0..10_000 {
            let value = log_uniform(&mut rng, 100, 2_000);
            assert!((100..=2_000).contains(&value));
        }
        // 1..=4095 is twelve whole octaves: each gets 1/12.
        let mut per_octave = [0u32; 12];
        for _ in 0..120_000 {
            let value = log_uniform(&mut rng, 1, 4_095);
            per_octave[63 - value.leading_zeros() as usize] += 1;
        }
        for count in per_octave {
            assert!((9_400..=10_600).contains(&count), "{per_octave:?}");
        }
    }

    #[test]
    fn drawn_ages_follow_the_mixture() {
        let model = SpendAgeModel::mainnet_like();
        let age_max = 2_000u32;
        let mut rng = DeterministicRng::new(5, 5);
        let measured = shares(|| u64::from(model.draw_age(&mut rng, age_max)));
        // Young part: geometric with p = 0.35, capped at 20.
        let older = 0.65f64;
        let young = [0.35, older - older.powi(10), older.powi(10), 0.0, 0.0];
        let bounds = [(1.0, 1.0), (2.0, 10.0), (11.0, 100.0), (101.0, 1_000.0), (1_001.0, 2_000.0)];
        for (range, (low, high)) in bounds.into_iter().enumerate() {
            let tail = log_mass(low, high, f64::from(age_max));
            let expected = 0.7 * young[range] + 0.3 * tail;
            // Octaves approximate the continuous log-uniform law within a
            // few tenths of a percent of all draws here.
            assert!(
                (measured[range] - expected).abs() < 0.012,
                "range {range}: measured {measured:?}, expected {expected}"
            );
        }
        assert!(measured[0] + measured[1] > 0.75, "most spends are young: {measured:?}");
    }
}
