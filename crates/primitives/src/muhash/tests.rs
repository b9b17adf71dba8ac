//! MuHash3072 against Core's `muhash_tests` (src/test/crypto_tests.cpp) and
//! ChaCha20 against RFC 8439.

use super::*;

/// Core's `FromInt(i)`: the singleton of 32 bytes `{i, 0, ...}`.
fn from_int(value: u8) -> MuHash3072 {
    let mut element = [0u8; 32];
    element[0] = value;
    MuHash3072::singleton(&element)
}

fn element(value: u8) -> [u8; 32] {
    let mut element = [0u8; 32];
    element[0] = value;
    element
}

/// The digest of `{0, 1} / {2}` in Core's test.
const CORE_DIGEST: &str = "10d312b100cbd32ada024a6646e40d3482fcff103668d2625f10002a607d5863";

#[test]
fn combine_and_subtract_match_core() {
    let mut accumulator = from_int(0);
    accumulator.combine(&from_int(1));
    accumulator.subtract(&from_int(2));
    assert_eq!(accumulator.finalize().to_hex(), CORE_DIGEST);
}

#[test]
fn insert_and_remove_match_core() {
    let mut accumulator = from_int(0);
    accumulator.insert(&element(1));
    accumulator.remove(&element(2));
    assert_eq!(accumulator.finalize().to_hex(), CORE_DIGEST);
}

#[test]
fn serialisation_matches_core_prefix() {
    // Core's `ser_exp` for FromInt(1) *= FromInt(2) starts with these bytes.
    let mut set = from_int(1);
    set.combine(&from_int(2));
    let bytes = set.to_bytes();
    let prefix = crate::hex::encode(&bytes[..18]);
    assert_eq!(prefix, "1fa093295ea30a6a3acdc7b3f770fa538eff");
    assert_eq!(bytes[NUMBER_BYTES], 1);
    assert!(bytes[NUMBER_BYTES + 1..].iter().all(|&byte| byte == 0));
    assert_eq!(MuHash3072::from_bytes(&bytes), set);
}

#[test]
fn order_does_not_matter_and_removal_cancels() {
    let mut forward = MuHash3072::new();
    let mut backward = MuHash3072::new();
    for value in 0..10u8 {
        forward.insert(&element(value));
        backward.insert(&element(9 - value));
    }
    assert_eq!(forward.finalize(), backward.finalize());
    for value in 0..10u8 {
        forward.remove(&element(value));
    }
    assert_eq!(forward.finalize(), MuHash3072::new().finalize());
}

#[test]
fn chacha20_keystream_matches_rfc_8439() {
    // RFC 8439 appendix A.1, test vector #1: zero key, zero nonce, counter 0.
    let mut keystream = ChaCha20Rng::from_seed([0u8; 32]);
    let mut bytes = [0u8; 64];
    keystream.fill_bytes(&mut bytes);
    assert_eq!(
        crate::hex::encode(&bytes),
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7\
         da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
    );
}

#[test]
fn overflowing_state_matches_core() {
    // Core's overflow check: a numerator of 384 0xff bytes (above the modulus)
    // over 1. Core prints this digest with HexStr, in internal byte order.
    let mut bytes = [0u8; MUHASH_BYTES];
    bytes[..NUMBER_BYTES].fill(0xff);
    bytes[NUMBER_BYTES] = 1;
    let digest = MuHash3072::from_bytes(&bytes).finalize();
    assert_eq!(
        crate::hex::encode(digest.as_bytes()),
        "3a31e6903aff0de9f62f9a9f7f8b861de76ce2cda09822b90014319ae5dc2271"
    );
}

#[test]
fn empty_set_digest_matches_core() {
    // `gettxoutsetinfo muhash` at regtest height 0, where the set is empty.
    assert_eq!(
        MuHash3072::new().finalize().to_hex(),
        "dd5ad2a105c2d29495f577245c357409002329b9f4d6182c0af3dc2f462555c8"
    );
}
