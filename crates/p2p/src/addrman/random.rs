//! [`FastRandom`]: the address manager's non-cryptographic random numbers
//! (Core's `FastRandomContext` role): the workspace's xoshiro256**
//! ([`ibex_primitives::random`]) seeded from 32 bytes of the operating
//! system's random source, with the timers' exponential draw. What must stay
//! secret (the bucket key) comes from the seed through SHA-256, never from
//! here.

use ibex_primitives::random::Xoshiro256StarStar;

/// 32 bytes from the operating system's random source (for the address
/// manager's secret key).
pub fn os_random_bytes() -> Result<[u8; 32], getrandom::Error> {
    let mut bytes = [0; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes)
}

/// xoshiro256** seeded for the address manager; every bounded draw is
/// unbiased.
#[derive(Debug, Clone)]
pub struct FastRandom {
    inner: Xoshiro256StarStar,
}

impl FastRandom {
    /// A generator from `seed` (hashed with a tag, so the generator's state
    /// tells nothing of a seed that is also the bucket key; no seed gives
    /// the all-zero state xoshiro cannot leave).
    pub fn from_seed(seed: &[u8; 32]) -> FastRandom {
        let hash = ibex_primitives::hash::sha256_parts(&[&b"ibex addrman random"[..], &seed[..]]);
        FastRandom { inner: Xoshiro256StarStar::from_bytes(&hash) }
    }

    /// A generator seeded from the operating system.
    pub fn from_os() -> Result<FastRandom, getrandom::Error> {
        Ok(FastRandom::from_seed(&os_random_bytes()?))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// A number in `0..bound` (0 when `bound` is 0), without modulo bias.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.inner.below(bound)
    }

    /// An index in `0..length` (0 when `length` is 0).
    pub fn index(&mut self, length: usize) -> usize {
        self.inner.index(length)
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.inner.unit()
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.inner.coin()
    }

    /// An exponentially distributed duration in seconds with this mean
    /// (Core's `rand_exp_duration`, for Poisson timers).
    pub fn exponential_seconds(&mut self, mean_seconds: f64) -> f64 {
        -(1.0 - self.unit()).ln() * mean_seconds
    }

    /// Shuffles `items` (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        self.inner.shuffle(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_spread() {
        let mut random = FastRandom::from_seed(&[3; 32]);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            let value = random.below(10);
            assert!(value < 10);
            seen[value as usize] += 1;
        }
        assert!(seen.iter().all(|&count| (800..1200).contains(&count)), "{seen:?}");
        assert_eq!(random.below(0), 0);
        let unit = random.unit();
        assert!((0.0..1.0).contains(&unit));
        let mut other = FastRandom::from_seed(&[4; 32]);
        assert_ne!(FastRandom::from_seed(&[3; 32]).next_u64(), other.next_u64());
    }

    /// The state is the tagged SHA-256 of the seed read as four
    /// little-endian words.
    #[test]
    fn seeded_through_tagged_sha256() {
        let seed = [9u8; 32];
        let hash = ibex_primitives::hash::sha256_parts(&[&b"ibex addrman random"[..], &seed[..]]);
        let mut reference = Xoshiro256StarStar::from_bytes(&hash);
        let mut random = FastRandom::from_seed(&seed);
        for _ in 0..8 {
            assert_eq!(random.next_u64(), reference.next_u64());
        }
    }

    #[test]
    fn exponential_draws_are_positive_with_the_mean_asked() {
        let mut random = FastRandom::from_seed(&[6; 32]);
        let draws: Vec<f64> = (0..20_000).map(|_| random.exponential_seconds(30.0)).collect();
        assert!(draws.iter().all(|&seconds| seconds >= 0.0));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((28.5..31.5).contains(&mean), "{mean}");
    }
}
