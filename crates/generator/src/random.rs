//! The generator's only source of randomness: xoshiro256** seeded from the
//! user's `--seed` through SplitMix64. No system randomness anywhere, so one
//! seed and one set of options always give the same bytes. Written here rather
//! than taken from a crate so a dependency upgrade can never change a chain.

/// SplitMix64 step: expands one 64-bit seed into well-mixed state words.
fn split_mix_64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut mixed = *state;
    mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    mixed ^ (mixed >> 31)
}

/// A deterministic pseudo-random generator (xoshiro256**): fast, small, and
/// good enough statistically for shaping chains (not for secrets that matter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeterministicRng {
    state: [u64; 4],
}

impl DeterministicRng {
    /// A generator for `seed`; `stream` separates independent uses of one seed
    /// (keys, chain shape, obfuscation key) so changing one leaves the others.
    pub fn new(seed: u64, stream: u64) -> DeterministicRng {
        let mut mixer = seed ^ stream.wrapping_mul(0xd605_bbb5_8c8a_bbd3);
        let state = [
            split_mix_64(&mut mixer),
            split_mix_64(&mut mixer),
            split_mix_64(&mut mixer),
            split_mix_64(&mut mixer),
        ];
        DeterministicRng { state }
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

    /// A number in `0..bound` (0 when `bound` is 0), by Lemire's multiply-shift
    /// (its tiny bias is irrelevant for shaping chains).
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// A number in `low..=high` (`low` when `high < low`).
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        if high <= low {
            return low;
        }
        low + self.below(high - low + 1)
    }

    /// An index into a collection of `length` items (0 for an empty one).
    pub fn index(&mut self, length: usize) -> usize {
        self.below(length as u64) as usize
    }

    /// True with probability `per_mille` / 1000.
    pub fn chance_per_mille(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    /// 32 random bytes.
    pub fn bytes_32(&mut self) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        for chunk in bytes.chunks_exact_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        bytes
    }

    /// Fills `out` with random bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }

    /// An index drawn from `weights` in proportion to each weight (0 when all
    /// weights are zero).
    pub fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut draw = self.below(total);
        for (index, &weight) in weights.iter().enumerate() {
            if draw < weight {
                return index;
            }
            draw -= weight;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut first = DeterministicRng::new(7, 1);
        let mut second = DeterministicRng::new(7, 1);
        let mut other = DeterministicRng::new(7, 2);
        let a: Vec<u64> = (0..16).map(|_| first.next_u64()).collect();
        let b: Vec<u64> = (0..16).map(|_| second.next_u64()).collect();
        let c: Vec<u64> = (0..16).map(|_| other.next_u64()).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bounds_hold() {
        let mut rng = DeterministicRng::new(1, 0);
        for _ in 0..10_000 {
            assert!(rng.below(10) < 10);
            let value = rng.between(5, 9);
            assert!((5..=9).contains(&value));
        }
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.weighted(&[0, 0, 5]), 2);
    }
}
