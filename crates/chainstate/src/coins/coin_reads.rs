//! Where connect found the coins it spent, by the coin's age, for measuring
//! before tuning: in memory (the live map, or the frozen map a
//! background flush is writing) or from the coins database (read ahead by
//! the prefetch, or read at the spend itself), counted in the age ranges
//! of the generator's spend-age histogram so an import's figures can be
//! set beside the chain's manifest. BIP30's lookups are counted too, and
//! those that reached the database.
//!
//! # Where the counting happens, and what it costs
//! The prefetch marks the entries it inserts (a spare bit of the entry's
//! flags, `crate::coins::cache`); the spend, which finds the entry anyway and
//! has the coin's height, reads the bit and adds one to a plain counter of
//! the block's [`CoinReadCounts`] on the connecting thread: an array index
//! and an add per input, no atomic, no extra map probe (~1 ns against the
//! ~250 ns of the spend's own cache miss). The block's counts go into the
//! engine's statistics when its verdict is in, with its inputs, so the
//! spends counted always add up to the inputs connected. BIP30's lookups
//! run on the script threads: each thread sums its own and the sums are
//! added once per block.

/// Highest age (blocks) of each range but the last: 0-1, 2-10, 11-100,
/// 101-1,000, 1,001-10,000 and 10,001 or more. The first four are the
/// generator's spend-age histogram's (`ibex_generator::spend_age`), whose
/// last range, 1,001+, is split here in two.
pub const COIN_AGE_RANGE_HIGHS_BLOCKS: [u32; 5] = [1, 10, 100, 1_000, 10_000];
/// Number of age ranges.
pub const COIN_AGE_RANGES: usize = COIN_AGE_RANGE_HIGHS_BLOCKS.len() + 1;
/// The age ranges' names (Prometheus' `age` label, the log).
pub const COIN_AGE_RANGE_NAMES: [&str; COIN_AGE_RANGES] =
    ["0-1", "2-10", "11-100", "101-1000", "1001-10000", "10001+"];

const _: () = {
    let mut index = 1;
    while index < COIN_AGE_RANGE_HIGHS_BLOCKS.len() {
        assert!(COIN_AGE_RANGE_HIGHS_BLOCKS[index - 1] < COIN_AGE_RANGE_HIGHS_BLOCKS[index]);
        index += 1;
    }
};

/// Where a spent coin was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoinSource {
    /// In the cache's live map, put there by connect (a coin created since
    /// the last flush, or kept by a flush that keeps coins).
    LiveMap,
    /// In the map a background flush is writing (copied back, no read).
    FrozenMap,
    /// Read from the database ahead of connect (the prefetch's `MultiGet`).
    Prefetch,
    /// Read from the database at the spend (one point read).
    DirectRead,
}

/// Number of [`CoinSource`]s.
pub const COIN_SOURCES: usize = 4;

impl CoinSource {
    /// Every source, in index order.
    pub const ALL: [CoinSource; COIN_SOURCES] =
        [CoinSource::LiveMap, CoinSource::FrozenMap, CoinSource::Prefetch, CoinSource::DirectRead];

    /// The source's index in [`CoinReadCounts::spends`].
    pub const fn index(self) -> usize {
        match self {
            CoinSource::LiveMap => 0,
            CoinSource::FrozenMap => 1,
            CoinSource::Prefetch => 2,
            CoinSource::DirectRead => 3,
        }
    }

    /// Its name (Prometheus' `source` label).
    pub const fn name(self) -> &'static str {
        match self {
            CoinSource::LiveMap => "live_map",
            CoinSource::FrozenMap => "frozen_map",
            CoinSource::Prefetch => "prefetch",
            CoinSource::DirectRead => "direct_read",
        }
    }

    /// Whether the coin was in memory (no database read for it).
    pub const fn is_memory(self) -> bool {
        matches!(self, CoinSource::LiveMap | CoinSource::FrozenMap)
    }
}

/// The age range of a coin `age_blocks` old.
pub fn age_range_of(age_blocks: u32) -> usize {
    COIN_AGE_RANGE_HIGHS_BLOCKS.iter().take_while(|&&high| age_blocks > high).count()
}

/// Spends by age range and source, and BIP30's lookups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoinReadCounts {
    /// Spent coins per age range ([`COIN_AGE_RANGE_NAMES`]), then per
    /// source ([`CoinSource::index`]).
    pub spends: [[u64; COIN_SOURCES]; COIN_AGE_RANGES],
    /// BIP30 lookups (one per output of a block BIP30 applies to).
    pub bip30_lookups: u64,
    /// Those found in neither map, answered by the database.
    pub bip30_database_lookups: u64,
}

impl CoinReadCounts {
    /// Counts a spend at `spend_height` of a coin made at `coin_height`,
    /// found in `source`.
    #[inline]
    pub fn count_spend(&mut self, spend_height: u32, coin_height: u32, source: CoinSource) {
        let range = age_range_of(spend_height.saturating_sub(coin_height));
        self.spends[range][source.index()] += 1;
    }

    /// Spends in age range `range`.
    pub fn spends_in_range(&self, range: usize) -> u64 {
        self.spends.get(range).map_or(0, |sources| sources.iter().sum())
    }

    /// Spends in age range `range` whose coin was in memory.
    pub fn memory_spends_in_range(&self, range: usize) -> u64 {
        let Some(sources) = self.spends.get(range) else { return 0 };
        CoinSource::ALL
            .iter()
            .filter(|source| source.is_memory())
            .map(|source| sources[source.index()])
            .sum()
    }

    /// Spends found in `source`, all ages.
    pub fn spends_from(&self, source: CoinSource) -> u64 {
        self.spends.iter().map(|sources| sources[source.index()]).sum()
    }

    /// Every spend counted.
    pub fn total_spends(&self) -> u64 {
        self.spends.iter().flatten().sum()
    }

    /// Spends whose coin came from the database.
    pub fn database_spends(&self) -> u64 {
        self.spends_from(CoinSource::Prefetch) + self.spends_from(CoinSource::DirectRead)
    }
}

impl std::ops::AddAssign<&CoinReadCounts> for CoinReadCounts {
    fn add_assign(&mut self, other: &CoinReadCounts) {
        for (mine, theirs) in self.spends.iter_mut().flatten().zip(other.spends.iter().flatten()) {
            *mine += theirs;
        }
        self.bip30_lookups += other.bip30_lookups;
        self.bip30_database_lookups += other.bip30_database_lookups;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_fall_in_the_generators_ranges_and_two_more() {
        let expect = [
            (0, 0),
            (1, 0),
            (2, 1),
            (10, 1),
            (11, 2),
            (100, 2),
            (101, 3),
            (1_000, 3),
            (1_001, 4),
            (10_000, 4),
            (10_001, 5),
            (u32::MAX, 5),
        ];
        for (age, range) in expect {
            assert_eq!(age_range_of(age), range, "age {age}");
        }
        // The generator's ranges are the first four and a last one that
        // holds the two beyond: compare with its own boundaries.
        let generator = ibex_generator::spend_age::SPEND_AGE_RANGE_HIGHS;
        assert_eq!(
            &COIN_AGE_RANGE_HIGHS_BLOCKS[..generator.len()],
            &generator.map(|high| high as u32)
        );
        for age in [0u32, 1, 2, 9, 10, 11, 99, 100, 101, 999, 1_000, 1_001, 20_000] {
            let ours = age_range_of(age).min(generator.len());
            let theirs = ibex_generator::spend_age::SpendAgeHistogram::range_of(u64::from(age));
            assert_eq!(ours, theirs, "age {age}");
        }
        assert_eq!(COIN_AGE_RANGE_NAMES.len(), COIN_AGE_RANGES);
    }

    #[test]
    fn spends_are_counted_by_age_and_source_and_add_up() {
        let mut counts = CoinReadCounts::default();
        counts.count_spend(100, 100, CoinSource::LiveMap);
        counts.count_spend(100, 99, CoinSource::FrozenMap);
        counts.count_spend(100, 95, CoinSource::Prefetch);
        counts.count_spend(5_000, 1, CoinSource::DirectRead);
        counts.count_spend(20_000, 2, CoinSource::Prefetch);
        // A coin higher than its spend (never in a valid chain) is age 0.
        counts.count_spend(1, 2, CoinSource::LiveMap);
        assert_eq!(counts.spends[0], [2, 1, 0, 0]);
        assert_eq!(counts.spends[1], [0, 0, 1, 0]);
        assert_eq!(counts.spends[4], [0, 0, 0, 1]);
        assert_eq!(counts.spends[5], [0, 0, 1, 0]);
        assert_eq!((counts.spends_in_range(0), counts.memory_spends_in_range(0)), (3, 3));
        assert_eq!((counts.spends_in_range(1), counts.memory_spends_in_range(1)), (1, 0));
        assert_eq!(counts.spends_in_range(COIN_AGE_RANGES), 0, "no such range");
        assert_eq!(counts.total_spends(), 6);
        assert_eq!(counts.database_spends(), 3);
        assert_eq!(counts.spends_from(CoinSource::Prefetch), 2);

        let mut total = CoinReadCounts { bip30_lookups: 10, bip30_database_lookups: 4, ..counts };
        total += &counts;
        assert_eq!(total.total_spends(), 12);
        assert_eq!(total.spends[0], [4, 2, 0, 0]);
        assert_eq!((total.bip30_lookups, total.bip30_database_lookups), (10, 4));
    }

    #[test]
    fn sources_have_distinct_indexes_and_names() {
        for (position, source) in CoinSource::ALL.iter().enumerate() {
            assert_eq!(source.index(), position);
        }
        let names: std::collections::BTreeSet<&str> =
            CoinSource::ALL.iter().map(|source| source.name()).collect();
        assert_eq!(names.len(), COIN_SOURCES);
        assert!(CoinSource::LiveMap.is_memory() && CoinSource::FrozenMap.is_memory());
        assert!(!CoinSource::Prefetch.is_memory() && !CoinSource::DirectRead.is_memory());
    }
}
