//! xoshiro256** (Blackman and Vigna, 2018), the workspace's one
//! non-cryptographic pseudo-random generator, and SplitMix64 to seed it.
//!
//! Two users with different needs share it:
//! - the chain generator (`ibex gen`) seeds it from the user's `--seed`
//!   through SplitMix64, so one seed always gives the same chain: nothing
//!   here may change a single output bit, and the known-answer tests below
//!   pin the sequence to the reference C code;
//! - the address manager seeds it from the operating system (Core's
//!   `FastRandomContext` role) for bucket choices, shuffles and timers.
//!
//! Written here rather than taken from a crate so a dependency upgrade can
//! never change a generated chain. Not for secrets: its state can be
//! recovered from four outputs.
//!
//! Napkin math: one output is a multiply, a rotate and five xors on four
//! words, ~1 ns; the generator draws a few per transaction (~10 µs of
//! signing each), the address manager a few per message.

/// One SplitMix64 step: advances `state` and returns the next well-mixed
/// word (Vigna's `splitmix64.c`, the seeding the xoshiro authors advise).
pub fn split_mix_64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut mixed = *state;
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mixed ^ (mixed >> 31)
}

/// xoshiro256**: 256 bits of state, period 2^256 - 1, fast and good enough
/// statistically for shaping chains and spreading addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xoshiro256StarStar {
    state: [u64; 4],
}

impl Xoshiro256StarStar {
    /// A generator in `state`. The all-zero state, which xoshiro never
    /// leaves, becomes `[1, 0, 0, 0]`.
    pub const fn from_state(state: [u64; 4]) -> Xoshiro256StarStar {
        if state[0] == 0 && state[1] == 0 && state[2] == 0 && state[3] == 0 {
            return Xoshiro256StarStar { state: [1, 0, 0, 0] };
        }
        Xoshiro256StarStar { state }
    }

    /// A generator whose state is `bytes` read as four little-endian words.
    pub fn from_bytes(bytes: &[u8; 32]) -> Xoshiro256StarStar {
        let mut state = [0u64; 4];
        for (word, chunk) in state.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut word_bytes = [0; 8];
            word_bytes.copy_from_slice(chunk);
            *word = u64::from_le_bytes(word_bytes);
        }
        Xoshiro256StarStar::from_state(state)
    }

    /// A generator whose state is the first four SplitMix64 outputs from
    /// `seed` (never all zero: SplitMix64 gives zero for one state only).
    pub fn from_split_mix_64(seed: u64) -> Xoshiro256StarStar {
        let mut mixer = seed;
        let state = [
            split_mix_64(&mut mixer),
            split_mix_64(&mut mixer),
            split_mix_64(&mut mixer),
            split_mix_64(&mut mixer),
        ];
        Xoshiro256StarStar::from_state(state)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.state[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let shifted = self.state[1] << 17;
        self.state[2] ^= self.state[0];
        self.state[3] ^= self.state[1];
        self.state[1] ^= self.state[2];
        self.state[0] ^= self.state[3];
        self.state[2] ^= shifted;
        self.state[3] = self.state[3].rotate_left(45);
        result
    }

    /// A number in `0..bound` (0 when `bound` is 0), without bias: Lemire's
    /// multiply-shift, drawing again when the low word falls in the biased
    /// sliver (`2^64 mod bound` values; rare unless `bound` is huge).
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(bound);
            if (product as u64) >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// A number in `0..bound` (0 when `bound` is 0) from exactly one draw:
    /// Lemire's multiply-shift without the rejection step. Some values are
    /// likelier by at most `bound / 2^64`, irrelevant for shaping chains,
    /// and the fixed one draw per call keeps a seeded sequence simple.
    pub fn below_multiply_shift(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// An index in `0..length` (0 when `length` is 0), without bias.
    pub fn index(&mut self, length: usize) -> usize {
        self.below(length as u64) as usize
    }

    /// A number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A fair coin (the top bit, xoshiro's best).
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// Fills `out` with random bytes, eight per draw (little-endian; the
    /// last draw's unused bytes are dropped).
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// Shuffles `items` (Fisher-Yates, unbiased).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for last in (1..items.len()).rev() {
            let other = self.index(last + 1);
            items.swap(last, other);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference `xoshiro256starstar.c` from state {1, 2, 3, 4} (the
    /// values rand_xoshiro's `reference` test records from it).
    #[test]
    fn matches_the_reference_implementation() {
        let mut random = Xoshiro256StarStar::from_state([1, 2, 3, 4]);
        let expected: [u64; 10] = [
            11520,
            0,
            1509978240,
            1215971899390074240,
            1216172134540287360,
            607988272756665600,
            16172922978634559625,
            8476171486693032832,
            10595114339597558777,
            2904607092377533576,
        ];
        let outputs: Vec<u64> = (0..10).map(|_| random.next_u64()).collect();
        assert_eq!(outputs, expected);
    }

    /// The reference `splitmix64.c` from seed 1477776061723855037 (rand_xoshiro's
    /// `reference` test), and from seed 0.
    #[test]
    fn split_mix_matches_the_reference_implementation() {
        let mut state = 1_477_776_061_723_855_037u64;
        let expected: [u64; 5] = [
            1985237415132408290,
            2979275885539914483,
            13511426838097143398,
            8488337342461049707,
            15141737807933549159,
        ];
        let outputs: Vec<u64> = (0..5).map(|_| split_mix_64(&mut state)).collect();
        assert_eq!(outputs, expected);
        let mut zero = 0u64;
        assert_eq!(split_mix_64(&mut zero), 0xe220_a839_7b1d_cdaf);
        assert_eq!(split_mix_64(&mut zero), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn seeding_reads_the_state_it_is_given() {
        let mut bytes = [0u8; 32];
        for (index, word) in [1u64, 2, 3, 4].iter().enumerate() {
            bytes[index * 8..index * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
        assert_eq!(
            Xoshiro256StarStar::from_bytes(&bytes),
            Xoshiro256StarStar::from_state([1, 2, 3, 4])
        );
        let mut mixer = 99u64;
        let words = [(); 4].map(|()| split_mix_64(&mut mixer));
        assert_eq!(
            Xoshiro256StarStar::from_split_mix_64(99),
            Xoshiro256StarStar::from_state(words)
        );
        // The all-zero state would give zeros forever.
        let mut zero = Xoshiro256StarStar::from_bytes(&[0; 32]);
        assert_eq!(zero, Xoshiro256StarStar::from_state([1, 0, 0, 0]));
        assert!((0..4).any(|_| zero.next_u64() != 0));
    }

    #[test]
    fn bounded_draws_stay_in_range_and_spread() {
        let mut random = Xoshiro256StarStar::from_split_mix_64(3);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let value = random.below(10);
            assert!(value < 10);
            seen[value as usize] += 1;
            assert!(random.below_multiply_shift(10) < 10);
        }
        assert!(seen.iter().all(|&count| (800..1200).contains(&count)), "{seen:?}");
        assert_eq!(random.below(0), 0);
        assert_eq!(random.below_multiply_shift(0), 0);
        assert_eq!(random.index(0), 0);
        assert!((0.0..1.0).contains(&random.unit()));
    }

    /// The multiply-shift draw is the high word of `next_u64() * bound`: one
    /// draw, nothing else (a seeded chain depends on it).
    #[test]
    fn multiply_shift_uses_exactly_one_draw() {
        let mut drawn = Xoshiro256StarStar::from_split_mix_64(7);
        let mut reference = drawn.clone();
        for bound in [1u64, 2, 10, 1_000, u64::MAX] {
            let word = reference.next_u64();
            let expected = ((u128::from(word) * u128::from(bound)) >> 64) as u64;
            assert_eq!(drawn.below_multiply_shift(bound), expected);
        }
        assert_eq!(drawn, reference);
    }

    #[test]
    fn fill_takes_little_endian_words() {
        let mut random = Xoshiro256StarStar::from_split_mix_64(5);
        let mut reference = random.clone();
        let mut bytes = [0u8; 11];
        random.fill(&mut bytes);
        assert_eq!(bytes[..8], reference.next_u64().to_le_bytes());
        assert_eq!(bytes[8..], reference.next_u64().to_le_bytes()[..3]);
        assert_eq!(random, reference);
    }

    #[test]
    fn shuffle_permutes() {
        let mut random = Xoshiro256StarStar::from_split_mix_64(11);
        let mut items: Vec<u32> = (0..50).collect();
        random.shuffle(&mut items);
        assert_ne!(items, (0..50).collect::<Vec<u32>>());
        items.sort_unstable();
        assert_eq!(items, (0..50).collect::<Vec<u32>>());
    }
}
