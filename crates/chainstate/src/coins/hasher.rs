//! The cache's salted hasher: foldhash keyed from the operating system's
//! randomness (see the napkin math in [`crate::coins::cache`]).

use std::sync::OnceLock;

use foldhash::fast::SeedableRandomState;
use foldhash::SharedSeed;

static SHARED_SEED: OnceLock<SharedSeed> = OnceLock::new();

/// A random 64-bit key from the OS; foldhash's own address-and-time seed if
/// the OS source fails (still unknown to a remote peer).
fn random_u64() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        use std::hash::BuildHasher;
        foldhash::fast::RandomState::default().hash_one(0u64)
    })
}

/// A hash builder for outpoints keyed with secret random seeds.
pub fn salted_hash_builder() -> SeedableRandomState {
    let shared = SHARED_SEED.get_or_init(|| SharedSeed::from_u64(random_u64()));
    SeedableRandomState::with_seed(random_u64(), shared)
}
