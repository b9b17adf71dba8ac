//! Signature hashes: what a signature commits to.
//!
//! - [`legacy`]: the original scheme for `SigVersion::Base` (Core's
//!   `SignatureHash` without a witness version): a re-serialisation of the whole
//!   transaction per signature, quadratic in the input count.
//! - [`segwit_v0`]: BIP143 for `SigVersion::WitnessV0`: per-transaction
//!   midstates from [`crate::precomputed`], constant work per signature.
//! - [`taproot`]: BIP341/342 for `SigVersion::Taproot` and `Tapscript`.
//!
//! The hash writers take a [`HashSink`], so the same code produces the 32-byte
//! hash on the hot path and the full preimage in tests (BIP341's `sigMsg`).

pub mod legacy;
pub mod segwit_v0;
pub mod taproot;

use sha2::{Digest, Sha256};

/// Sign all inputs and all outputs.
pub const SIGHASH_ALL: u8 = 0x01;
/// Sign no outputs.
pub const SIGHASH_NONE: u8 = 0x02;
/// Sign the output at the signed input's index only.
pub const SIGHASH_SINGLE: u8 = 0x03;
/// Sign this input only (combines with the three above).
pub const SIGHASH_ANYONECANPAY: u8 = 0x80;
/// BIP341: a 64-byte Schnorr signature without a hash type byte; means ALL.
pub const SIGHASH_DEFAULT: u8 = 0x00;

/// The low five bits select ALL, NONE or SINGLE in the legacy and BIP143 schemes
/// (Core masks with 0x1f; other bits than 0x80 are signed but ignored).
const BASE_TYPE_MASK: i32 = 0x1f;

/// Where serialised preimage bytes go: a hasher, or a buffer in tests.
pub trait HashSink {
    /// Appends bytes.
    fn write(&mut self, bytes: &[u8]);

    /// Appends a compact-size integer.
    fn write_compact_size(&mut self, value: u64) {
        let mut buffer = [0u8; 9];
        let length = match value {
            0..=0xfc => {
                buffer[0] = value as u8;
                1
            }
            0xfd..=0xffff => {
                buffer[0] = 0xfd;
                buffer[1..3].copy_from_slice(&(value as u16).to_le_bytes());
                3
            }
            0x1_0000..=0xffff_ffff => {
                buffer[0] = 0xfe;
                buffer[1..5].copy_from_slice(&(value as u32).to_le_bytes());
                5
            }
            _ => {
                buffer[0] = 0xff;
                buffer[1..9].copy_from_slice(&value.to_le_bytes());
                9
            }
        };
        self.write(buffer.get(..length).unwrap_or_default());
    }

    /// Appends a compact-size length and the bytes (Core's `CScript` serialisation).
    fn write_var_bytes(&mut self, bytes: &[u8]) {
        self.write_compact_size(bytes.len() as u64);
        self.write(bytes);
    }
}

impl HashSink for Sha256 {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

impl HashSink for Vec<u8> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// SHA-256 of the bytes a closure writes.
pub(crate) fn sha256_of(write: impl FnOnce(&mut Sha256)) -> [u8; 32] {
    let mut hasher = Sha256::new();
    write(&mut hasher);
    hasher.finalize().into()
}

/// SHA-256 of a 32-byte value: the second round of a double SHA-256.
#[inline]
pub(crate) fn sha256_of_hash(hash: &[u8; 32]) -> [u8; 32] {
    Sha256::digest(hash).into()
}

/// A BIP340 tagged hasher: SHA-256 primed with `SHA256(tag) || SHA256(tag)`.
/// The 64-byte prefix is one compression, so callers keep a primed hasher
/// and clone it (see [`taproot::tap_sighash_hasher`]).
pub fn tagged_hasher(tag: &[u8]) -> Sha256 {
    let tag_hash: [u8; 32] = Sha256::digest(tag).into();
    let mut hasher = Sha256::new();
    hasher.update(tag_hash);
    hasher.update(tag_hash);
    hasher
}

/// A BIP340 tagged hash of `data`.
pub fn tagged_hash(tag: &[u8], data: &[u8]) -> [u8; 32] {
    let mut hasher = tagged_hasher(tag);
    hasher.update(data);
    hasher.finalize().into()
}

/// Core's `uint256::ONE` as bytes: what the legacy sighash returns for
/// SIGHASH_SINGLE without a matching output (and an out-of-range input).
pub const SIGHASH_ONE: [u8; 32] = {
    let mut one = [0u8; 32];
    one[0] = 1;
    one
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_size_boundaries() {
        for (value, expected) in [
            (0u64, vec![0u8]),
            (0xfc, vec![0xfc]),
            (0xfd, vec![0xfd, 0xfd, 0]),
            (0xffff, vec![0xfd, 0xff, 0xff]),
            (0x1_0000, vec![0xfe, 0, 0, 1, 0]),
            (0x1_0000_0000, vec![0xff, 0, 0, 0, 0, 1, 0, 0, 0]),
        ] {
            let mut out = Vec::new();
            out.write_compact_size(value);
            assert_eq!(out, expected, "value {value}");
        }
    }

    #[test]
    fn tagged_hash_matches_definition() {
        let tag_hash: [u8; 32] = Sha256::digest(b"TapLeaf").into();
        let mut manual = Sha256::new();
        manual.update(tag_hash);
        manual.update(tag_hash);
        manual.update(b"abc");
        let expected: [u8; 32] = manual.finalize().into();
        assert_eq!(tagged_hash(b"TapLeaf", b"abc"), expected);
    }
}
