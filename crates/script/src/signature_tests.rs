use super::*;

/// A small deterministic generator for the differential tests.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

fn der(r: &[u8], s: &[u8]) -> Vec<u8> {
    let mut out = vec![0x30, (4 + r.len() + s.len()) as u8, 0x02, r.len() as u8];
    out.extend_from_slice(r);
    out.extend_from_slice(&[0x02, s.len() as u8]);
    out.extend_from_slice(s);
    out
}

fn compact(r: &[u8], s: &[u8]) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[32 - r.len()..32].copy_from_slice(r);
    out[64 - s.len()..].copy_from_slice(s);
    out
}

#[test]
fn lax_parses_strict_der() {
    assert_eq!(parse_der_lax(&der(&[1], &[2])), Some(compact(&[1], &[2])));
}

#[test]
fn lax_accepts_padding_negative_values_and_garbage() {
    // Excess zero padding and a "negative" R are fine for the lax parser.
    assert_eq!(parse_der_lax(&der(&[0, 0, 0, 5], &[0x80])), Some(compact(&[5], &[0x80])));
    // Wrong sequence length and trailing bytes are ignored.
    let mut encoded = der(&[7], &[9]);
    encoded[1] = 0x7f;
    encoded.extend_from_slice(&[0xde, 0xad]);
    assert_eq!(parse_der_lax(&encoded), Some(compact(&[7], &[9])));
    // Long-form lengths, with leading zero length bytes.
    let encoded = [0x30, 0x82, 0, 0, 0x02, 0x83, 0, 0, 1, 0x11, 0x02, 0x81, 1, 0x22];
    assert_eq!(parse_der_lax(&encoded), Some(compact(&[0x11], &[0x22])));
    // Zero-length integers are zero.
    assert_eq!(parse_der_lax(&der(&[], &[])), Some([0; 64]));
}

#[test]
fn lax_rejects_structure_errors() {
    assert_eq!(parse_der_lax(&[]), None);
    assert_eq!(parse_der_lax(&[0x31, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01]), None);
    assert_eq!(parse_der_lax(&[0x30]), None);
    // Missing integer tags.
    assert_eq!(parse_der_lax(&[0x30, 0x06, 0x03, 0x01, 0x01, 0x02, 0x01, 0x01]), None);
    assert_eq!(parse_der_lax(&[0x30, 0x06, 0x02, 0x01, 0x01, 0x03, 0x01, 0x01]), None);
    // S runs past the end.
    assert_eq!(parse_der_lax(&[0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x02, 0x01]), None);
    // Long-form length with four significant bytes.
    assert_eq!(parse_der_lax(&[0x30, 0x00, 0x02, 0x84, 1, 0, 0, 0, 0x02, 0x01, 0x01]), None);
    // Sequence long-form length running past the end.
    assert_eq!(parse_der_lax(&[0x30, 0x85, 0, 0]), None);
}

#[test]
fn lax_overflowing_values_become_zero() {
    let long = [0x01; 33];
    assert_eq!(parse_der_lax(&der(&long, &[1])), Some([0; 64]));
    assert_eq!(parse_der_lax(&der(&[1], &long)), Some([0; 64]));
    // 33 bytes with a leading zero fit.
    let mut padded = [0x01; 33];
    padded[0] = 0;
    assert_eq!(parse_der_lax(&der(&padded, &[1])), Some(compact(&[1; 32], &[1])));
}

#[test]
fn lax_matches_libsecp256k1_contrib_parser() {
    // libsecp256k1's contrib parser (exposed by the crate) is Core's function;
    // ours must parse exactly the same inputs to the same values.
    let mut random = Lcg(7);
    for round in 0..20_000 {
        let mut encoded = der(
            &(0..random.next() % 36).map(|_| random.byte()).collect::<Vec<_>>(),
            &(0..random.next() % 36).map(|_| random.byte()).collect::<Vec<_>>(),
        );
        // Mutate a few bytes, sometimes truncate.
        for _ in 0..random.next() % 4 {
            let index = random.next() as usize % encoded.len();
            encoded[index] = match random.next() % 4 {
                0 => 0x80 | (random.byte() & 0x07),
                1 => 0,
                _ => random.byte(),
            };
        }
        if round % 5 == 0 {
            encoded.truncate(random.next() as usize % (encoded.len() + 1));
        }
        let ours = parse_der_lax(&encoded);
        let theirs = ecdsa::Signature::from_der_lax(&encoded).ok();
        match (ours, theirs) {
            (None, None) => {}
            (Some(ours), Some(theirs)) => {
                let ours = ecdsa::Signature::from_compact(&ours)
                    .map(|signature| signature.serialize_compact())
                    .unwrap_or([0; 64]);
                assert_eq!(ours, theirs.serialize_compact(), "{encoded:02x?}");
            }
            (ours, theirs) => panic!("{encoded:02x?}: ours {ours:?} theirs {theirs:?}"),
        }
    }
}

fn signing_key() -> (secp256k1::SecretKey, PublicKey, Secp256k1<secp256k1::All>) {
    let context = Secp256k1::new();
    let secret = secp256k1::SecretKey::from_byte_array([0x42; 32]).unwrap();
    let public = PublicKey::from_secret_key(&context, &secret);
    (secret, public, context)
}

#[test]
fn ecdsa_verifies_high_s_and_hybrid_keys() {
    let (secret, public, context) = signing_key();
    let sighash = [0x11; 32];
    let signature = context.sign_ecdsa(Message::from_digest(sighash), &secret);
    let der = signature.serialize_der();
    assert!(verify_ecdsa(&der, &public.serialize(), &sighash));
    assert!(verify_ecdsa(&der, &public.serialize_uncompressed(), &sighash));
    assert!(has_low_s(&der));
    assert!(!verify_ecdsa(&der, &public.serialize(), &[0x12; 32]));

    // The high-S twin: S' = n - S verifies after normalisation.
    const ORDER: [u8; 32] = secp256k1::constants::CURVE_ORDER;
    let compact = signature.serialize_compact();
    let mut high_s = [0u8; 32];
    let mut borrow = 0i16;
    for index in (0..32).rev() {
        let difference = i16::from(ORDER[index]) - i16::from(compact[32 + index]) - borrow;
        borrow = i16::from(difference < 0);
        high_s[index] = difference.rem_euclid(256) as u8;
    }
    let mut high = compact;
    high[32..].copy_from_slice(&high_s);
    let high_der = ecdsa::Signature::from_compact(&high).unwrap().serialize_der();
    assert!(!has_low_s(&high_der));
    assert!(verify_ecdsa(&high_der, &public.serialize(), &sighash));

    // Hybrid encoding: 0x06/0x07 with the Y parity, accepted as in Core.
    let mut hybrid = public.serialize_uncompressed();
    let odd = hybrid[64] & 1 == 1;
    hybrid[0] = if odd { 0x07 } else { 0x06 };
    assert!(verify_ecdsa(&der, &hybrid, &sighash));
    hybrid[0] = if odd { 0x06 } else { 0x07 };
    assert!(!verify_ecdsa(&der, &hybrid, &sighash));

    // Header and length must agree.
    let compressed = public.serialize();
    assert!(!verify_ecdsa(&der, &compressed[..32], &sighash));
    assert!(!verify_ecdsa(&der, &[], &sighash));
    assert!(!verify_ecdsa(&[], &compressed, &sighash));
}

#[test]
fn schnorr_verifies() {
    let (secret, _, context) = signing_key();
    let keypair = secp256k1::Keypair::from_secret_key(&context, &secret);
    let (x_only, _) = keypair.x_only_public_key();
    let sighash = [0x33; 32];
    let signature = context.sign_schnorr_no_aux_rand(&sighash, &keypair);
    let signature = signature.to_byte_array();
    assert!(verify_schnorr(&signature, &x_only.serialize(), &sighash));
    assert!(!verify_schnorr(&signature, &x_only.serialize(), &[0x34; 32]));
    // Not an x coordinate on the curve (x = 5 has no point).
    let mut not_on_curve = [0u8; 32];
    not_on_curve[31] = 5;
    assert!(!verify_schnorr(&signature, &not_on_curve, &sighash));
}

#[test]
fn strict_encoding_rules() {
    let mut strict = der(&[1], &[2]);
    strict.push(0x01);
    assert!(is_valid_signature_encoding(&strict));
    let mut padded = der(&[0, 1], &[2]);
    padded.push(0x01);
    assert!(!is_valid_signature_encoding(&padded));
    let mut negative = der(&[0x80], &[2]);
    negative.push(0x01);
    assert!(!is_valid_signature_encoding(&negative));
    let mut needed_padding = der(&[0, 0x80], &[2]);
    needed_padding.push(0x01);
    assert!(is_valid_signature_encoding(&needed_padding));
    assert!(!is_valid_signature_encoding(&strict[..strict.len() - 1]));

    assert!(is_compressed_or_uncompressed_public_key(&[2; 33]));
    assert!(!is_compressed_or_uncompressed_public_key(&[6; 65]));
    assert!(is_defined_hash_type(&[0x30, 0x83]));
    assert!(!is_defined_hash_type(&[0x30, 0x84]));
    assert!(!is_defined_hash_type(&[]));
}
