//! [`FastRandom`]: the address manager's non-cryptographic random numbers
//! (Core's `FastRandomContext` role): xoshiro256** seeded from 32 bytes of
//! the operating system's random source. What must stay secret (the
//! bucket key) comes from the seed through SHA-256, never from here.

/// 32 bytes from the operating system's random source (for the address
/// manager's secret key).
pub fn os_random_bytes() -> Result<[u8; 32], getrandom::Error> {
    let mut bytes = [0; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes)
}

/// xoshiro256**, a fast generator with a 256-bit state.
#[derive(Debug, Clone)]
pub struct FastRandom {
    state: [u64; 4],
}

impl FastRandom {
    /// A generator from `seed` (hashed, so no seed gives the all-zero
    /// state xoshiro cannot leave).
    pub fn from_seed(seed: &[u8; 32]) -> FastRandom {
        let hash = ibex_primitives::hash::sha256_parts(&[&b"ibex addrman random"[..], &seed[..]]);
        let mut state = [0u64; 4];
        for (word, chunk) in state.iter_mut().zip(hash.chunks_exact(8)) {
            let mut bytes = [0; 8];
            bytes.copy_from_slice(chunk);
            *word = u64::from_le_bytes(bytes);
        }
        if state == [0; 4] {
            state[0] = 1;
        }
        FastRandom { state }
    }

    /// A generator seeded from the operating system.
    pub fn from_os() -> Result<FastRandom, getrandom::Error> {
        let mut seed = [0; 32];
        getrandom::fill(&mut seed)?;
        Ok(FastRandom::from_seed(&seed))
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

    /// A number in `0..bound` (0 when `bound` is 0), without modulo bias.
    pub fn below(&mut self, bound: u64) -> u64 {
        if bound == 0 {
            return 0;
        }
        // Lemire's multiply-and-reject.
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(bound);
            if (product as u64) >= threshold {
                return (product >> 64) as u64;
            }
        }
    }

    /// An index in `0..length` (0 when `length` is 0).
    pub fn index(&mut self, length: usize) -> usize {
        self.below(length as u64) as usize
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A fair coin.
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }

    /// An exponentially distributed duration in seconds with this mean
    /// (Core's `rand_exp_duration`, for Poisson timers).
    pub fn exponential_seconds(&mut self, mean_seconds: f64) -> f64 {
        -(1.0 - self.unit()).ln() * mean_seconds
    }

    /// Shuffles `items` (Fisher-Yates).
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
}
