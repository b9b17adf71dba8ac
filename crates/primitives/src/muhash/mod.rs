//! MuHash3072: Bitcoin Core's order-independent hash of a set
//! (`src/crypto/muhash.{h,cpp}`), used by `gettxoutsetinfo` and the coin
//! statistics index.
//!
//! Each element becomes a number below 2^3072 (SHA-256 of its bytes keys a
//! ChaCha20 stream; 384 bytes of keystream read little-endian), and the set is
//! the product of its elements modulo the prime `2^3072 - 1103717`. Insertions
//! multiply into a numerator and removals into a denominator, so neither needs
//! an inverse; [`MuHash3072::finalize`] divides once and hashes the 384-byte
//! little-endian quotient with SHA-256.
//!
//! # Napkin math
//! Mainnet holds ~180M coins, and IBD creates ~3 billion outputs and spends most
//! of them, one insert or remove each. An insert is SHA-256 of ~70 bytes
//! (~0.2 µs), 6 ChaCha20 blocks (the `chacha20` crate's AVX2 backend makes 8,
//! ~0.4 µs) and one 3072-bit modular multiply (two Karatsuba levels: 1,296
//! 64×64→128-bit multiplies plus a 48-multiply fold, ~1.3–2.5 µs): 2.9–3.9 µs
//! in criterion on this 2-core Zen 4 machine under a shared load of ~5
//! (`docs/benchmarks.md`, "UTXO set hashes"), ~2 µs when it runs alone.
//! Hashing the whole mainnet set from scratch is then ~180M × ~2 µs ≈ 6 minutes
//! on one core (it splits across cores: [`MuHash3072::combine`] merges partial
//! sets); keeping it per block during IBD is ~3 billion × ~2 µs ≈ 1.7
//! core-hours, which is why it belongs in an optional index off the critical
//! path. The multiply is the bottleneck; finalizing (one ~30 µs inverse) is
//! rare: once per block in an index is ~25 s over mainnet's ~900k blocks.

mod inverse;
mod num3072;
mod product;

pub use num3072::NUMBER_BYTES;

use chacha20::rand_core::{Rng, SeedableRng};
use chacha20::ChaCha20Rng;
use num3072::Num3072;

use crate::hash::{sha256, Hash256};

/// Bytes of a serialised [`MuHash3072`]: numerator then denominator.
pub const MUHASH_BYTES: usize = 2 * NUMBER_BYTES;

/// A set hash supporting insertion and removal in any order.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MuHash3072 {
    numerator: Num3072,
    denominator: Num3072,
}

impl Default for MuHash3072 {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MuHash3072 {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "MuHash3072({})", self.finalize())
    }
}

impl MuHash3072 {
    /// The empty set.
    pub fn new() -> Self {
        Self { numerator: Num3072::ONE, denominator: Num3072::ONE }
    }

    /// The set holding only `element` (Core's `MuHash3072(span)` constructor).
    pub fn singleton(element: &[u8]) -> Self {
        Self { numerator: element_to_number(element), denominator: Num3072::ONE }
    }

    /// Adds `element` to the set.
    pub fn insert(&mut self, element: &[u8]) {
        self.numerator.multiply(&element_to_number(element));
    }

    /// Removes `element` from the set.
    pub fn remove(&mut self, element: &[u8]) {
        self.denominator.multiply(&element_to_number(element));
    }

    /// Union with `other` (Core's `operator*=`).
    pub fn combine(&mut self, other: &MuHash3072) {
        self.numerator.multiply(&other.numerator);
        self.denominator.multiply(&other.denominator);
    }

    /// Difference with `other` (Core's `operator/=`).
    pub fn subtract(&mut self, other: &MuHash3072) {
        self.numerator.multiply(&other.denominator);
        self.denominator.multiply(&other.numerator);
    }

    /// The 32-byte digest: SHA-256 of the 384-byte little-endian
    /// `numerator / denominator mod p`. Displayed reversed, as Core displays it.
    pub fn finalize(&self) -> Hash256 {
        let mut denominator = self.denominator;
        denominator.reduce_below_modulus();
        let mut quotient = inverse::inverse(&denominator);
        // `multiply` accepts an unreduced numerator and returns a reduced result.
        quotient.multiply(&self.numerator);
        Hash256(sha256(&quotient.to_le_bytes()))
    }

    /// Core's serialisation: the numerator then the denominator, each 384 bytes
    /// little-endian.
    pub fn to_bytes(&self) -> [u8; MUHASH_BYTES] {
        let mut bytes = [0u8; MUHASH_BYTES];
        let (numerator, denominator) = bytes.split_at_mut(NUMBER_BYTES);
        numerator.copy_from_slice(&self.numerator.to_le_bytes());
        denominator.copy_from_slice(&self.denominator.to_le_bytes());
        bytes
    }

    /// Reads [`MuHash3072::to_bytes`]. Any 3072-bit values are accepted, even at
    /// or above the modulus, as in Core.
    pub fn from_bytes(bytes: &[u8; MUHASH_BYTES]) -> Self {
        let mut numerator = [0u8; NUMBER_BYTES];
        let mut denominator = [0u8; NUMBER_BYTES];
        let (numerator_bytes, denominator_bytes) = bytes.split_at(NUMBER_BYTES);
        numerator.copy_from_slice(numerator_bytes);
        denominator.copy_from_slice(denominator_bytes);
        Self {
            numerator: Num3072::from_le_bytes(&numerator),
            denominator: Num3072::from_le_bytes(&denominator),
        }
    }
}

/// Core's `MuHash3072::ToNum3072`: SHA-256 of the element keys ChaCha20 (zero
/// nonce, block counter from 0); the first 384 keystream bytes, little-endian,
/// are the number. `ChaCha20Rng` runs the original 64-bit-counter ChaCha20 with
/// a zero stream id, whose first six blocks equal RFC 8439's with a zero nonce,
/// which is what Core's `ChaCha20Aligned` produces.
fn element_to_number(element: &[u8]) -> Num3072 {
    let mut keystream = ChaCha20Rng::from_seed(sha256(element));
    let mut bytes = [0u8; NUMBER_BYTES];
    keystream.fill_bytes(&mut bytes);
    Num3072::from_le_bytes(&bytes)
}

#[cfg(test)]
mod tests;
