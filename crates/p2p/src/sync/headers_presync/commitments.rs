//! The presync phase's memory: one secret bit per commitment period, pushed
//! during presync and popped (oldest first) during redownload (Core's
//! `bitdeque<>` of `m_header_commitments`), and the salted hash that makes
//! the bits.

use ibex_primitives::hash::sha256;
use ibex_primitives::BlockHash;

/// Bits in a word of the queue.
const WORD_BITS: u64 = 64;

/// The secret a headers sync is salted with. The caller draws it from a
/// strong random source (the state machines own no randomness); it picks
/// both the commitment offset and the hash key, so a peer cannot predict
/// which headers are committed to or what their bits are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SyncSecret(pub [u8; 32]);

impl std::fmt::Debug for SyncSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("SyncSecret(..)")
    }
}

impl SyncSecret {
    /// The height offset within each period at which commitments are made
    /// (Core: `randrange(commitment_period)`); the modulo bias of a 64-bit
    /// value over a period of ~600 is below 2^-53.
    pub fn commitment_offset(&self, commitment_period: u32) -> u32 {
        let mut first = [0u8; 8];
        first.copy_from_slice(&self.0[..8]);
        (u64::from_le_bytes(first) % u64::from(commitment_period.max(1))) as u32
    }

    /// The commitment bit of `hash`: the low bit of SHA-256(secret || hash).
    /// Core takes the low bit of a salted SipHash; any keyed hash the peer
    /// cannot predict does the same job. One commitment per ~600 headers
    /// makes its cost (two SHA-256 compressions, ~0.2 us) negligible.
    pub fn commitment_bit(&self, hash: &BlockHash) -> bool {
        let mut input = [0u8; 64];
        input[..32].copy_from_slice(&self.0);
        input[32..].copy_from_slice(&hash.0);
        sha256(&input)[0] & 1 == 1
    }
}

/// A first-in first-out queue of bits, 64 to a word. Bits are only pushed
/// while nothing has been popped (presync, then redownload), so the queue
/// is a vector and a read position.
#[derive(Debug, Clone, Default)]
pub struct CommitmentBits {
    words: Vec<u64>,
    pushed_bits: u64,
    popped_bits: u64,
}

impl CommitmentBits {
    /// Appends a bit.
    pub fn push(&mut self, bit: bool) {
        let word = (self.pushed_bits / WORD_BITS) as usize;
        if word == self.words.len() {
            self.words.push(0);
        }
        if bit {
            if let Some(slot) = self.words.get_mut(word) {
                *slot |= 1 << (self.pushed_bits % WORD_BITS);
            }
        }
        self.pushed_bits += 1;
    }

    /// Removes and returns the oldest bit.
    pub fn pop(&mut self) -> Option<bool> {
        if self.popped_bits == self.pushed_bits {
            return None;
        }
        let word = self.words.get((self.popped_bits / WORD_BITS) as usize)?;
        let bit = word >> (self.popped_bits % WORD_BITS) & 1 == 1;
        self.popped_bits += 1;
        Some(bit)
    }

    /// Bits pushed and not yet popped.
    pub fn len(&self) -> u64 {
        self.pushed_bits - self.popped_bits
    }

    /// Whether every pushed bit has been popped.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.words.capacity() * std::mem::size_of::<u64>()
    }

    /// Frees everything.
    pub fn clear(&mut self) {
        *self = CommitmentBits::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_come_out_in_order() {
        let mut bits = CommitmentBits::default();
        let pattern: Vec<bool> =
            (0..200u32).map(|index| index % 3 == 0 || index % 7 == 1).collect();
        for bit in &pattern {
            bits.push(*bit);
        }
        assert_eq!(bits.len(), 200);
        let popped: Vec<bool> = std::iter::from_fn(|| bits.pop()).collect();
        assert_eq!(popped, pattern);
        assert!(bits.is_empty());
    }

    #[test]
    fn offsets_stay_within_the_period() {
        for seed in 0..50u8 {
            let secret = SyncSecret([seed.wrapping_mul(37); 32]);
            assert!(secret.commitment_offset(632) < 632);
        }
        assert_eq!(SyncSecret([9; 32]).commitment_offset(1), 0);
    }
}
