//! Signature and public key encoding rules applied before any ECDSA check
//! (Core's `CheckSignatureEncoding`, `CheckPubKeyEncoding`): BIP66 strict DER,
//! low S, defined hash types, key formats. This is the crate's only copy of
//! these rules; [`crate::signature`] re-exports the predicates.

use crate::checker::SigVersion;
use crate::error::ScriptError;
use crate::flags::VerifyFlags;
use crate::sighash::SIGHASH_ANYONECANPAY;
use crate::signature::{PUBLIC_KEY_COMPRESSED_BYTES, PUBLIC_KEY_UNCOMPRESSED_BYTES};

/// Half the secp256k1 group order, big-endian: S above this is "high".
const HALF_ORDER: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0x5d, 0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
];

/// The secp256k1 group order, big-endian.
const ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];

/// Core's `CheckSignatureEncoding`. The empty signature is always allowed (a
/// compact way to fail a check).
pub fn check_signature_encoding(signature: &[u8], flags: VerifyFlags) -> Result<(), ScriptError> {
    if signature.is_empty() {
        return Ok(());
    }
    let strict =
        VerifyFlags(VerifyFlags::DERSIG.0 | VerifyFlags::LOW_S.0 | VerifyFlags::STRICTENC.0);
    if flags.0 & strict.0 != 0 && !is_valid_signature_encoding(signature) {
        return Err(ScriptError::SigDer);
    }
    if flags.contains(VerifyFlags::LOW_S) && !has_low_s(signature) {
        return Err(ScriptError::SigHighS);
    }
    if flags.contains(VerifyFlags::STRICTENC) && !is_defined_hash_type(signature) {
        return Err(ScriptError::SigHashtype);
    }
    Ok(())
}

/// Core's `CheckPubKeyEncoding`.
pub fn check_public_key_encoding(
    public_key: &[u8],
    flags: VerifyFlags,
    sig_version: SigVersion,
) -> Result<(), ScriptError> {
    if flags.contains(VerifyFlags::STRICTENC)
        && !is_compressed_or_uncompressed_public_key(public_key)
    {
        return Err(ScriptError::Pubkeytype);
    }
    if flags.contains(VerifyFlags::WITNESS_PUBKEYTYPE)
        && sig_version == SigVersion::WitnessV0
        && !is_compressed_public_key(public_key)
    {
        return Err(ScriptError::WitnessPubkeytype);
    }
    Ok(())
}

/// Core's `IsCompressedOrUncompressedPubKey` (STRICTENC): 33 bytes with 0x02
/// or 0x03, or 65 bytes with 0x04.
pub fn is_compressed_or_uncompressed_public_key(public_key: &[u8]) -> bool {
    match public_key.first() {
        Some(0x04) => public_key.len() == PUBLIC_KEY_UNCOMPRESSED_BYTES,
        Some(0x02 | 0x03) => public_key.len() == PUBLIC_KEY_COMPRESSED_BYTES,
        _ => false,
    }
}

/// Core's `IsCompressedPubKey` (WITNESS_PUBKEYTYPE): 33 bytes with 0x02 or 0x03.
pub fn is_compressed_public_key(public_key: &[u8]) -> bool {
    public_key.len() == PUBLIC_KEY_COMPRESSED_BYTES
        && matches!(public_key.first(), Some(0x02 | 0x03))
}

/// Core's `IsDefinedHashtypeSignature`: the last byte, without
/// ANYONECANPAY, is ALL, NONE or SINGLE.
pub fn is_defined_hash_type(signature: &[u8]) -> bool {
    match signature.last() {
        Some(last) => matches!(last & !SIGHASH_ANYONECANPAY, 1..=3),
        None => false,
    }
}

/// BIP66's `IsValidSignatureEncoding`: `0x30 len 0x02 lenR R 0x02 lenS S
/// hashtype`, with minimal positive integers, 9 to 73 bytes in all.
pub fn is_valid_signature_encoding(signature: &[u8]) -> bool {
    let size = signature.len();
    if !(9..=73).contains(&size) {
        return false;
    }
    let byte = |index: usize| signature.get(index).copied().unwrap_or(0);
    if byte(0) != 0x30 || usize::from(byte(1)) != size - 3 {
        return false;
    }
    let length_r = usize::from(byte(3));
    if 5 + length_r >= size {
        return false;
    }
    let length_s = usize::from(byte(5 + length_r));
    if length_r + length_s + 7 != size {
        return false;
    }
    is_minimal_positive_integer(signature, 2, length_r)
        && is_minimal_positive_integer(signature, length_r + 4, length_s)
}

/// Checks the DER integer whose tag is at `tag_index` and whose value has
/// `length` bytes (the caller checked the bounds).
fn is_minimal_positive_integer(signature: &[u8], tag_index: usize, length: usize) -> bool {
    let value = signature.get(tag_index + 2..tag_index + 2 + length).unwrap_or_default();
    if signature.get(tag_index) != Some(&0x02) {
        return false;
    }
    match value {
        [] => false,
        [first, ..] if first & 0x80 != 0 => false,
        [0x00, second, ..] if second & 0x80 == 0 => false,
        _ => true,
    }
}

/// Core's `IsLowDERSignature` after the DER check passed (`CPubKey::CheckLowS`):
/// the S value, as libsecp256k1's lax parser reads it, is at most half the
/// group order. The lax parser turns an R or S above 32 significant bytes or
/// not below the order into the all-zero signature, which counts as low.
/// Takes a strict DER signature with or without its hash type byte; anything
/// too short to hold the R and S lengths is not low S.
pub fn has_low_s(signature: &[u8]) -> bool {
    let Some(length_r) = signature.get(3).map(|&length| usize::from(length)) else {
        return false;
    };
    let Some(length_s) = signature.get(5 + length_r).map(|&length| usize::from(length)) else {
        return false;
    };
    let r = strip_leading_zeros(signature.get(4..4 + length_r).unwrap_or_default());
    let s = strip_leading_zeros(
        signature.get(6 + length_r..6 + length_r + length_s).unwrap_or_default(),
    );
    let (Some(r), Some(s)) = (to_32_bytes(r), to_32_bytes(s)) else {
        return true;
    };
    if r >= ORDER || s >= ORDER {
        return true;
    }
    s <= HALF_ORDER
}

fn strip_leading_zeros(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|byte| *byte != 0).unwrap_or(bytes.len());
    bytes.get(start..).unwrap_or_default()
}

fn to_32_bytes(bytes: &[u8]) -> Option<[u8; 32]> {
    let offset = 32usize.checked_sub(bytes.len())?;
    let mut out = [0u8; 32];
    out.get_mut(offset..)?.copy_from_slice(bytes);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(r: &[u8], s: &[u8]) -> Vec<u8> {
        let mut out = vec![0x30, (4 + r.len() + s.len()) as u8, 0x02, r.len() as u8];
        out.extend_from_slice(r);
        out.extend_from_slice(&[0x02, s.len() as u8]);
        out.extend_from_slice(s);
        out.push(0x01);
        out
    }

    #[test]
    fn der_rules() {
        assert!(is_valid_signature_encoding(&signature(&[1], &[1])));
        assert!(!is_valid_signature_encoding(&signature(&[0x80], &[1])));
        assert!(is_valid_signature_encoding(&signature(&[0x00, 0x80], &[1])));
        assert!(!is_valid_signature_encoding(&signature(&[0x00, 0x01], &[1])));
        assert!(!is_valid_signature_encoding(&signature(&[], &[1])));
        let mut wrong_total = signature(&[1], &[1]);
        wrong_total[1] += 1;
        assert!(!is_valid_signature_encoding(&wrong_total));
        assert!(!is_valid_signature_encoding(&[0x30; 8]));
    }

    #[test]
    fn low_s_rule() {
        let flags = VerifyFlags::LOW_S;
        assert_eq!(check_signature_encoding(&signature(&[1], &HALF_ORDER), flags), Ok(()));
        let mut high = HALF_ORDER;
        high[31] += 1;
        assert_eq!(check_signature_encoding(&signature(&[1], &[0x00, 0xff]), flags), Ok(()));
        assert_eq!(
            check_signature_encoding(&signature(&[1], &[&[0x00][..], &[0xff; 32]].concat()), flags),
            Ok(()),
            "an S at or above the order parses as zero"
        );
        assert_eq!(
            check_signature_encoding(&signature(&[1], &high), flags),
            Err(ScriptError::SigHighS)
        );
        let mut padded_high = vec![0x00];
        padded_high.extend_from_slice(&high);
        assert_eq!(
            check_signature_encoding(&signature(&[1], &padded_high), flags),
            Err(ScriptError::SigDer)
        );
    }

    #[test]
    fn hash_types_and_keys() {
        let mut undefined = signature(&[1], &[1]);
        *undefined.last_mut().unwrap() = 0x84;
        assert_eq!(
            check_signature_encoding(&undefined, VerifyFlags::STRICTENC),
            Err(ScriptError::SigHashtype)
        );
        assert_eq!(check_signature_encoding(&[], VerifyFlags::STRICTENC), Ok(()));
        let compressed = [&[0x02][..], &[0u8; 32]].concat();
        let uncompressed = [&[0x04][..], &[0u8; 64]].concat();
        assert_eq!(
            check_public_key_encoding(&compressed, VerifyFlags::STRICTENC, SigVersion::Base),
            Ok(())
        );
        assert_eq!(
            check_public_key_encoding(
                &uncompressed[..64],
                VerifyFlags::STRICTENC,
                SigVersion::Base
            ),
            Err(ScriptError::Pubkeytype)
        );
        assert_eq!(
            check_public_key_encoding(
                &uncompressed,
                VerifyFlags::WITNESS_PUBKEYTYPE,
                SigVersion::WitnessV0
            ),
            Err(ScriptError::WitnessPubkeytype)
        );
        assert_eq!(
            check_public_key_encoding(
                &uncompressed,
                VerifyFlags::WITNESS_PUBKEYTYPE,
                SigVersion::Base
            ),
            Ok(())
        );
    }
}
