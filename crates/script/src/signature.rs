//! Signature and public key handling on libsecp256k1, as Core's `CPubKey` and
//! `XOnlyPubKey` do it.
//!
//! - ECDSA: signatures are parsed with Core's lax DER parser
//!   ([`parse_der_lax`], our own port of `ecdsa_signature_parse_der_lax`), so
//!   pre-BIP66 encodings still verify; S is normalised to the lower half before
//!   verifying because libsecp256k1 only accepts low S and Core normalises.
//!   Public keys follow `CPubKey`: the first byte fixes the length (0x02/0x03:
//!   33, 0x04/0x06/0x07: 65), then libsecp256k1 parses it, which accepts the
//!   hybrid 0x06/0x07 forms when the parity byte matches Y.
//! - Schnorr: BIP340 over 32-byte x-only keys and 64-byte signatures.
//! - Encoding rules the interpreter applies under DERSIG/LOW_S/STRICTENC live
//!   in [`crate::interpreter::encoding`]; [`is_valid_signature_encoding`],
//!   [`has_low_s`] and the key-format predicates are re-exported here for
//!   callers that check signatures outside the interpreter.
//!
//! Napkin math: an ECDSA verification is ~55 µs and a Schnorr one ~50 µs on
//! one core here; a block's ~6,000 inputs are ~0.3 s of one core, the
//! dominant cost of IBD once assumevalid ends, hence checking inputs on all
//! cores (a signature cache would not help: see the crate docs).

use std::sync::OnceLock;

use secp256k1::{ecdsa, schnorr, Message, PublicKey, Secp256k1, VerifyOnly, XOnlyPublicKey};

pub use crate::interpreter::encoding::{
    has_low_s, is_compressed_or_uncompressed_public_key, is_compressed_public_key,
    is_defined_hash_type, is_valid_signature_encoding,
};

/// Length of an uncompressed (or hybrid) public key.
pub const PUBLIC_KEY_UNCOMPRESSED_BYTES: usize = 65;
/// Length of a compressed public key.
pub const PUBLIC_KEY_COMPRESSED_BYTES: usize = 33;
/// Length of a BIP340 x-only public key.
pub const X_ONLY_PUBLIC_KEY_BYTES: usize = 32;
/// Length of a BIP340 signature without hash type.
pub const SCHNORR_SIGNATURE_BYTES: usize = 64;

/// The process-wide verification context (immutable, shared by all threads).
pub fn verification_context() -> &'static Secp256k1<VerifyOnly> {
    static CONTEXT: OnceLock<Secp256k1<VerifyOnly>> = OnceLock::new();
    CONTEXT.get_or_init(Secp256k1::verification_only)
}

/// The length `CPubKey` expects for a key starting with `header` (0: invalid).
fn public_key_length_for_header(header: u8) -> usize {
    match header {
        0x02 | 0x03 => PUBLIC_KEY_COMPRESSED_BYTES,
        0x04 | 0x06 | 0x07 => PUBLIC_KEY_UNCOMPRESSED_BYTES,
        _ => 0,
    }
}

/// Whether `CPubKey(bytes).IsValid()`: the header is known and fixes this length.
/// (Whether the point is on the curve is only found when verifying, as in Core.)
pub fn is_valid_public_key_length(public_key: &[u8]) -> bool {
    public_key
        .first()
        .is_some_and(|&header| public_key_length_for_header(header) == public_key.len())
}

/// Core's `ecdsa_signature_parse_der_lax`: reads R and S from a DER-like
/// encoding, tolerating wrong lengths, padding and trailing garbage. Returns
/// the 64-byte compact form, `None` where Core's parser fails. Values longer
/// than 32 bytes give the all-zero signature, which parses but never verifies,
/// as in Core.
pub fn parse_der_lax(input: &[u8]) -> Option<[u8; 64]> {
    let mut reader = LaxReader { input, position: 0 };
    // Sequence tag and length; the length (short or long form) is ignored.
    reader.expect_byte(0x30)?;
    let sequence_length = reader.byte()?;
    if sequence_length & 0x80 != 0 {
        reader.skip(usize::from(sequence_length - 0x80))?;
    }
    let (r_start, r_length) = reader.integer()?;
    let (s_start, s_length) = reader.integer()?;
    let r_value = strip_leading_zeros(input.get(r_start..r_start + r_length)?);
    let s_value = strip_leading_zeros(input.get(s_start..s_start + s_length)?);
    let mut compact = [0u8; 64];
    if r_value.len() > 32 || s_value.len() > 32 {
        return Some(compact);
    }
    compact.get_mut(32 - r_value.len()..32)?.copy_from_slice(r_value);
    compact.get_mut(64 - s_value.len()..64)?.copy_from_slice(s_value);
    Some(compact)
}

fn strip_leading_zeros(value: &[u8]) -> &[u8] {
    let zeros = value.iter().take_while(|&&byte| byte == 0).count();
    value.get(zeros..).unwrap_or_default()
}

/// A cursor with the lax parser's bounds checks.
struct LaxReader<'a> {
    input: &'a [u8],
    position: usize,
}

impl LaxReader<'_> {
    fn remaining(&self) -> usize {
        self.input.len() - self.position
    }

    fn byte(&mut self) -> Option<u8> {
        let byte = *self.input.get(self.position)?;
        self.position += 1;
        Some(byte)
    }

    fn expect_byte(&mut self, expected: u8) -> Option<()> {
        (self.byte()? == expected).then_some(())
    }

    fn skip(&mut self, count: usize) -> Option<()> {
        if count > self.remaining() {
            return None;
        }
        self.position += count;
        Some(())
    }

    /// An integer tag, its length (short form, or long form of under four
    /// significant bytes after leading zeros), and the value's range.
    fn integer(&mut self) -> Option<(usize, usize)> {
        self.expect_byte(0x02)?;
        let length_byte = self.byte()?;
        let length = if length_byte & 0x80 != 0 {
            let mut length_bytes = usize::from(length_byte - 0x80);
            if length_bytes > self.remaining() {
                return None;
            }
            while length_bytes > 0 && self.input.get(self.position) == Some(&0) {
                self.position += 1;
                length_bytes -= 1;
            }
            if length_bytes >= 4 {
                return None;
            }
            let mut length = 0usize;
            for _ in 0..length_bytes {
                length = (length << 8) + usize::from(self.byte()?);
            }
            length
        } else {
            usize::from(length_byte)
        };
        let start = self.position;
        self.skip(length)?;
        Some((start, length))
    }
}

/// `CPubKey::Verify`: ECDSA check of a DER (lax) signature without hash type
/// byte against a public key in any form Core accepts.
pub fn verify_ecdsa(signature_der: &[u8], public_key: &[u8], sighash: &[u8; 32]) -> bool {
    if !is_valid_public_key_length(public_key) {
        return false;
    }
    let Ok(key) = PublicKey::from_slice(public_key) else {
        return false;
    };
    if signature_der.is_empty() {
        return false;
    }
    let Some(compact) = parse_der_lax(signature_der) else {
        return false;
    };
    // A compact form with R or S at or above the curve order parses as the
    // zero signature in Core, which never verifies.
    let Ok(mut signature) = ecdsa::Signature::from_compact(&compact) else {
        return false;
    };
    signature.normalize_s();
    verification_context().verify_ecdsa(Message::from_digest(*sighash), &signature, &key).is_ok()
}

/// `XOnlyPubKey::VerifySchnorr`: BIP340 check of a 64-byte signature.
pub fn verify_schnorr(
    signature: &[u8; SCHNORR_SIGNATURE_BYTES],
    public_key: &[u8; X_ONLY_PUBLIC_KEY_BYTES],
    sighash: &[u8; 32],
) -> bool {
    let Ok(key) = XOnlyPublicKey::from_byte_array(*public_key) else {
        return false;
    };
    let signature = schnorr::Signature::from_byte_array(*signature);
    verification_context().verify_schnorr(&signature, sighash, &key).is_ok()
}

#[cfg(test)]
#[path = "signature_tests.rs"]
mod tests;
