//! Proof of work at a real network's difficulty (signet's pow limit needs
//! ~4.8 M header hashes a block), where regtest's grinder
//! ([`crate::block_builder::grind`], one full double hash per nonce) would
//! take seconds a block.
//!
//! Per nonce only the header's second 64-byte block (its last 16 bytes,
//! the nonce among them, and the padding) and the outer hash are
//! compressed: the state after the first 64 bytes is computed once. Nonces
//! are split over `threads` scoped threads, each taking every
//! `threads`-th nonce, and the lowest nonce found wins, so the result does
//! not depend on the thread count or timing.

use std::sync::atomic::{AtomicU64, Ordering};

use ibex_primitives::hash::SHA256_INITIAL_STATE;
use ibex_primitives::pow::U256;
use ibex_primitives::{BlockHash, CompactTarget, Header, Target};
use sha2::digest::generic_array::GenericArray;

use crate::error::GeneratorError;

/// Sets `header.nonce` to the lowest nonce whose hash meets
/// `header.bits`; fails when no nonce does (the caller changes the time or
/// the coinbase and tries again).
pub fn grind_header(
    header: &mut Header,
    threads: usize,
    height: u32,
) -> Result<BlockHash, GeneratorError> {
    let target =
        Target::from_compact(CompactTarget(header.bits), Target::from_pow_limit(U256::MAX))
            .ok_or(GeneratorError::ProofOfWork { height })?
            .to_u256();
    let (midstate, tail) = midstate_and_tail(header);
    let threads = threads.clamp(1, 64) as u32;
    // The lowest winning nonce so far (u64::MAX: none).
    let found = AtomicU64::new(u64::MAX);
    std::thread::scope(|scope| {
        for first in 0..threads {
            let found = &found;
            scope.spawn(move || search(&midstate, tail, &target, first, threads, found));
        }
    });
    let nonce = u32::try_from(found.load(Ordering::Relaxed))
        .map_err(|_| GeneratorError::ProofOfWork { height })?;
    header.nonce = nonce;
    let hash = header.block_hash();
    assert!(U256::from_le_bytes(hash.0) <= target, "the grinder's hash is the header's");
    Ok(hash)
}

/// The SHA-256 state after the header's first 64 bytes, and its last 16.
fn midstate_and_tail(header: &Header) -> ([u32; 8], [u8; 16]) {
    let encoded = header.encode();
    let mut first_block = [0u8; 64];
    first_block.copy_from_slice(&encoded[..64]);
    let mut midstate = SHA256_INITIAL_STATE;
    sha2::compress256(&mut midstate, &[GenericArray::from(first_block)]);
    let mut tail = [0u8; 16];
    tail.copy_from_slice(&encoded[64..]);
    (midstate, tail)
}

/// Tries nonces `first`, `first + step`, ... until one meets `target` or
/// another thread found a lower one.
fn search(
    midstate: &[u32; 8],
    mut tail: [u8; 16],
    target: &U256,
    first: u32,
    step: u32,
    found: &AtomicU64,
) {
    let mut nonce = u64::from(first);
    while nonce <= u64::from(u32::MAX) {
        // Another thread's find below this nonce ends the search: every
        // later nonce here is higher. (A relaxed load: ~1 ns a nonce.)
        if found.load(Ordering::Relaxed) < nonce {
            return;
        }
        tail[12..16].copy_from_slice(&(nonce as u32).to_le_bytes());
        let hash = double_hash(midstate, &tail);
        if U256::from_le_bytes(hash) <= *target {
            found.fetch_min(nonce, Ordering::Relaxed);
            return;
        }
        nonce += u64::from(step);
    }
}

/// SHA-256d of the 80-byte header whose first 64 bytes left `midstate`
/// and whose last 16 are `tail`.
fn double_hash(midstate: &[u32; 8], tail: &[u8; 16]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..16].copy_from_slice(tail);
    block[16] = 0x80;
    block[56..].copy_from_slice(&(80u64 * 8).to_be_bytes());
    let mut state = *midstate;
    sha2::compress256(&mut state, &[GenericArray::from(block)]);
    let mut outer = [0u8; 64];
    for (chunk, word) in outer[..32].chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    outer[32] = 0x80;
    outer[56..].copy_from_slice(&(32u64 * 8).to_be_bytes());
    let mut state = SHA256_INITIAL_STATE;
    sha2::compress256(&mut state, &[GenericArray::from(outer)]);
    let mut hash = [0u8; 32];
    for (chunk, word) in hash.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::hash::sha256d;

    #[test]
    fn the_kept_state_hashes_as_the_whole_header_does() {
        let mut header = Header {
            version: 0x2000_0000,
            previous_block_hash: BlockHash([7; 32]),
            merkle_root: ibex_primitives::Hash256([9; 32]),
            time: 1_600_000_000,
            bits: 0x1e03_77ae,
            nonce: 0,
        };
        for nonce in [0, 1, 0xdead_beef, u32::MAX] {
            header.nonce = nonce;
            let (midstate, tail) = midstate_and_tail(&header);
            assert_eq!(double_hash(&midstate, &tail), sha256d(&header.encode()));
        }
    }

    #[test]
    fn the_nonce_found_does_not_depend_on_the_threads() {
        // A target of about one hash in 4,096: quick, and several nonces
        // below 2^16 meet it, so the lowest must win.
        let mut header = Header {
            version: 1,
            previous_block_hash: BlockHash([1; 32]),
            merkle_root: ibex_primitives::Hash256([2; 32]),
            time: 1,
            bits: 0x200f_ffff,
            nonce: 0,
        };
        let alone = grind_header(&mut header.clone(), 1, 1).unwrap();
        let together = grind_header(&mut header, 3, 1).unwrap();
        assert_eq!(alone, together);
        let limit =
            Target::from_compact(CompactTarget(0x200f_ffff), Target::from_pow_limit(U256::MAX))
                .unwrap()
                .to_u256();
        assert!(U256::from_le_bytes(together.0) <= limit);
        for nonce in 0..header.nonce {
            let mut lower = header;
            lower.nonce = nonce;
            let hash = lower.block_hash();
            assert!(U256::from_le_bytes(hash.0) > limit, "nonce {nonce} is lower and wins");
        }
    }
}
