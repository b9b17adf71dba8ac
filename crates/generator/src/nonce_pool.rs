//! Fast signing from a pool of precomputed nonces.
//!
//! A signature's cost is one elliptic-curve multiplication `R = k·G` (~25 µs);
//! everything else is scalar arithmetic (~1 µs). The generator's keys are
//! throwaway test keys derived from a public seed, so it may reuse nonces:
//! the pool holds a few hundred `(k, k⁻¹, R)` triples made once per run, and
//! each signature picks one by its message hash. The signatures are ordinary
//! valid ECDSA (low-S, strict DER) and BIP340 signatures, verifying at the
//! same cost as any other; only their nonces repeat (which would leak a real
//! wallet's keys, and here leaks keys that are public anyway).
//!
//! Napkin math: ~3 µs per signature instead of ~25 µs, so a 4 MWU block's
//! ~8,000 signatures take ~25 ms on one core, and signing stops being the
//! bottleneck (hashing and encoding ~1.6 MB per block come next).
//!
//! ECDSA: `s = k⁻¹ (z + r d) mod n`, negated when above n/2 (low S).
//! BIP340: `R` has even y (else `k` is negated), `s = k + e d mod n` with `d`
//! negated when its public key has odd y and `e` the BIP0340/challenge hash.

use ibex_script::sighash::tagged_hash;
use secp256k1::ecdsa::Signature;
use secp256k1::{Keypair, Parity, PublicKey, Scalar, Secp256k1, SecretKey};

use crate::random::DeterministicRng;

/// The secp256k1 group order n, big-endian.
const GROUP_ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
    0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];
/// Nonces in the pool.
pub const NONCE_POOL_SIZE: usize = 256;

/// One precomputed nonce.
#[derive(Debug, Clone, Copy)]
struct Nonce {
    /// k⁻¹ mod n.
    inverse: Scalar,
    /// r = R.x (below n).
    r: Scalar,
    /// R.x as bytes.
    r_bytes: [u8; 32],
    /// k, or n - k, so that k·G has even y (BIP340).
    schnorr_secret: Scalar,
}

/// Precomputed nonces.
#[derive(Debug, Clone)]
pub struct NoncePool {
    nonces: Vec<Nonce>,
}

/// `value` as a scalar, reduced once modulo n (enough for any 256-bit value).
fn reduce(mut value: [u8; 32]) -> Scalar {
    if let Ok(scalar) = Scalar::from_be_bytes(value) {
        return scalar;
    }
    let mut borrow = 0i16;
    for index in (0..32).rev() {
        let difference = i16::from(value[index]) - i16::from(GROUP_ORDER[index]) - borrow;
        borrow = i16::from(difference < 0);
        value[index] = (difference + 256 * borrow) as u8;
    }
    Scalar::from_be_bytes(value).unwrap_or(Scalar::ZERO)
}

fn scalar_of(key: &SecretKey) -> Scalar {
    reduce(key.secret_bytes())
}

/// k^(n-2) mod n by square and multiply: the inverse, by Fermat.
fn invert(key: &SecretKey) -> Option<Scalar> {
    let mut exponent = GROUP_ORDER;
    exponent[31] -= 2;
    let mut result: Option<SecretKey> = None;
    for byte in exponent {
        for bit in (0..8).rev() {
            if let Some(value) = result {
                result = Some(value.mul_tweak(&scalar_of(&value)).ok()?);
            }
            if byte >> bit & 1 == 1 {
                result = Some(match result {
                    Some(value) => value.mul_tweak(&scalar_of(key)).ok()?,
                    None => *key,
                });
            }
        }
    }
    result.map(|value| scalar_of(&value))
}

fn make_nonce(secp: &Secp256k1<secp256k1::All>, rng: &mut DeterministicRng) -> Option<Nonce> {
    let secret = SecretKey::from_byte_array(rng.bytes_32()).ok()?;
    let point = PublicKey::from_secret_key(secp, &secret);
    let (x_only, parity) = point.x_only_public_key();
    let r_bytes = x_only.serialize();
    let r = Scalar::from_be_bytes(r_bytes).ok()?;
    let schnorr_secret =
        if parity == Parity::Odd { scalar_of(&secret.negate()) } else { scalar_of(&secret) };
    Some(Nonce { inverse: invert(&secret)?, r, r_bytes, schnorr_secret })
}

impl NoncePool {
    /// Makes the pool from `rng`.
    pub fn new(secp: &Secp256k1<secp256k1::All>, rng: &mut DeterministicRng) -> NoncePool {
        let mut nonces = Vec::with_capacity(NONCE_POOL_SIZE);
        while nonces.len() < NONCE_POOL_SIZE {
            if let Some(nonce) = make_nonce(secp, rng) {
                nonces.push(nonce);
            }
        }
        NoncePool { nonces }
    }

    fn pick(&self, message: &[u8; 32]) -> Option<&Nonce> {
        let mut index = [0u8; 8];
        index.copy_from_slice(&message[..8]);
        self.nonces.get(u64::from_le_bytes(index) as usize % self.nonces.len().max(1))
    }

    /// A low-S ECDSA signature of `sighash` by `secret_key`; `None` in the
    /// astronomically rare cases the arithmetic hits zero (callers then sign
    /// the slow way).
    pub fn sign_ecdsa(&self, sighash: &[u8; 32], secret_key: &SecretKey) -> Option<Signature> {
        let nonce = self.pick(sighash)?;
        let z = Scalar::from_be_bytes(*sighash).ok()?;
        let s = secret_key
            .mul_tweak(&nonce.r)
            .ok()?
            .add_tweak(&z)
            .ok()?
            .mul_tweak(&nonce.inverse)
            .ok()?;
        let mut compact = [0u8; 64];
        compact[..32].copy_from_slice(&nonce.r_bytes);
        compact[32..].copy_from_slice(&s.secret_bytes());
        let mut signature = Signature::from_compact(&compact).ok()?;
        signature.normalize_s();
        Some(signature)
    }

    /// A BIP340 signature of `message` by `keypair`; `None` when the
    /// arithmetic hits zero.
    pub fn sign_schnorr(&self, message: &[u8; 32], keypair: &Keypair) -> Option<[u8; 64]> {
        let nonce = self.pick(message)?;
        let (public_key, parity) = keypair.x_only_public_key();
        let secret = SecretKey::from_keypair(keypair);
        let secret = if parity == Parity::Odd { secret.negate() } else { secret };
        let mut challenge_input = [0u8; 96];
        challenge_input[..32].copy_from_slice(&nonce.r_bytes);
        challenge_input[32..64].copy_from_slice(&public_key.serialize());
        challenge_input[64..].copy_from_slice(message);
        let challenge = reduce(tagged_hash(b"BIP0340/challenge", &challenge_input));
        let s = secret.mul_tweak(&challenge).ok()?.add_tweak(&nonce.schnorr_secret).ok()?;
        let mut signature = [0u8; 64];
        signature[..32].copy_from_slice(&nonce.r_bytes);
        signature[32..].copy_from_slice(&s.secret_bytes());
        Some(signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_script::signature::{has_low_s, verify_ecdsa, verify_schnorr};

    #[test]
    fn pooled_signatures_verify() {
        let secp = Secp256k1::new();
        let mut rng = DeterministicRng::new(9, 9);
        let pool = NoncePool::new(&secp, &mut rng);
        for _ in 0..64 {
            let secret = SecretKey::from_byte_array(rng.bytes_32()).unwrap();
            let public_key = PublicKey::from_secret_key(&secp, &secret).serialize();
            let message = rng.bytes_32();
            let mut der = pool.sign_ecdsa(&message, &secret).unwrap().serialize_der().to_vec();
            der.push(1);
            assert!(has_low_s(&der));
            assert!(verify_ecdsa(&der, &public_key, &message));
            let keypair = Keypair::from_secret_key(&secp, &secret);
            let signature = pool.sign_schnorr(&message, &keypair).unwrap();
            let x_only = keypair.x_only_public_key().0.serialize();
            assert!(verify_schnorr(&signature, &x_only, &message));
        }
    }

    #[test]
    fn reduce_subtracts_the_order_once() {
        let mut above = GROUP_ORDER;
        above[31] += 5;
        let mut expected = [0u8; 32];
        expected[31] = 5;
        assert_eq!(reduce(above).to_be_bytes(), expected);
    }
}
