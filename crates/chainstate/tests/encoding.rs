#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Coin encoding: Core's vectors (`compress_tests.cpp`, `coins_tests.cpp`
//! `ccoins_serialization`), special script forms, keys, round trips and
//! malformed input.

use ibex_chainstate::compress::{
    compress_amount, decompress_amount, read_script, script_encoded_bytes, write_script,
};
use ibex_chainstate::{Coin, CoinDecodeError, CoinKey};
use ibex_primitives::encode::Reader;
use ibex_primitives::{hex, Amount, OutPoint, Txid, COIN};
use proptest::prelude::*;

const CENT: u64 = 1_000_000;

#[test]
fn amount_pairs_from_core() {
    let coin = COIN as u64;
    let pairs = [
        (0, 0x0),
        (1, 0x1),
        (CENT, 0x7),
        (coin, 0x9),
        (50 * coin, 0x32),
        (21_000_000 * coin, 0x1406f40),
    ];
    for (satoshis, compressed) in pairs {
        assert_eq!(compress_amount(satoshis), compressed, "compress {satoshis}");
        assert_eq!(decompress_amount(compressed), Some(satoshis), "decompress {compressed}");
    }
}

#[test]
fn amount_ranges_from_core_round_trip() {
    let coin = COIN as u64;
    for i in 1..=100_000u64 {
        assert_eq!(decompress_amount(compress_amount(i)), Some(i));
    }
    for i in 1..=10_000u64 {
        assert_eq!(decompress_amount(compress_amount(i * CENT)), Some(i * CENT));
        assert_eq!(decompress_amount(compress_amount(i * coin)), Some(i * coin));
    }
    for i in (1..=420_000u64).step_by(7) {
        assert_eq!(decompress_amount(compress_amount(i * 50 * coin)), Some(i * 50 * coin));
    }
    for i in 0..100_000u64 {
        assert_eq!(compress_amount(decompress_amount(i).unwrap()), i);
    }
}

#[test]
fn amount_decompression_overflow_is_none() {
    assert_eq!(decompress_amount(u64::MAX), None);
    // A record whose amount decompresses above MAX_MONEY.
    let mut record = vec![0x00];
    ibex_primitives::encode::write_varint(
        &mut record,
        compress_amount(ibex_primitives::MAX_MONEY as u64 + 1),
    );
    record.push(0x06);
    assert!(matches!(Coin::decode(&record), Err(CoinDecodeError::AmountOutOfRange { .. })));
}

#[test]
fn core_coin_serialization_vectors() {
    let first =
        Coin::decode(&hex::decode("97f23c835800816115944e077fe7c803cfa57f29b36bf87c1d35").unwrap())
            .unwrap();
    assert!(!first.is_coinbase());
    assert_eq!(first.height(), 203_998);
    assert_eq!(first.amount().to_sat(), 60_000_000_000);
    assert_eq!(
        hex::encode(first.script_pubkey()),
        "76a914816115944e077fe7c803cfa57f29b36bf87c1d3588ac"
    );

    let second = Coin::decode(
        &hex::decode("8ddf77bbd123008c988f1a4a4de2161e0f50aac7f17e7f9555caa4").unwrap(),
    )
    .unwrap();
    assert!(second.is_coinbase());
    assert_eq!(second.height(), 120_891);
    assert_eq!(second.amount().to_sat(), 110_397);
    assert_eq!(
        hex::encode(second.script_pubkey()),
        "76a9148c988f1a4a4de2161e0f50aac7f17e7f9555caa488ac"
    );

    let smallest = Coin::decode(&hex::decode("000006").unwrap()).unwrap();
    assert!(!smallest.is_coinbase());
    assert_eq!(smallest.height(), 0);
    assert_eq!(smallest.amount(), Amount::ZERO);
    assert!(smallest.script_pubkey().is_empty());

    // Re-encoding gives Core's bytes back.
    assert_eq!(
        hex::encode(&first.encode()),
        "97f23c835800816115944e077fe7c803cfa57f29b36bf87c1d35"
    );
    assert_eq!(
        hex::encode(&second.encode()),
        "8ddf77bbd123008c988f1a4a4de2161e0f50aac7f17e7f9555caa4"
    );
    assert_eq!(hex::encode(&smallest.encode()), "000006");
}

#[test]
fn core_truncated_scripts_fail() {
    // A script running past the end, and Core's 3*10^9-byte script size.
    assert!(matches!(
        Coin::decode(&hex::decode("000007").unwrap()),
        Err(CoinDecodeError::Bytes(_))
    ));
    assert!(matches!(
        Coin::decode(&hex::decode("00008a95c0bb00").unwrap()),
        Err(CoinDecodeError::Bytes(_))
    ));
}

fn script_round_trip(script: &[u8]) -> Vec<u8> {
    let mut encoded = Vec::new();
    write_script(&mut encoded, script);
    assert_eq!(encoded.len(), script_encoded_bytes(script));
    let mut reader = Reader::new(&encoded);
    let decoded = read_script(&mut reader).unwrap();
    reader.finish().unwrap();
    assert_eq!(decoded, script);
    encoded
}

/// Generator point G, uncompressed (on the curve).
const G_UNCOMPRESSED: &str = "0479be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8";

#[test]
fn special_script_forms() {
    let hash = [0x11u8; 20];
    let p2pkh = [&[0x76, 0xa9, 20][..], &hash, &[0x88, 0xac]].concat();
    assert_eq!(script_round_trip(&p2pkh), [&[0x00][..], &hash].concat());
    let p2sh = [&[0xa9, 20][..], &hash, &[0x87]].concat();
    assert_eq!(script_round_trip(&p2sh), [&[0x01][..], &hash].concat());
    // Compressed P2PK: not checked against the curve, as in Core.
    let key = [0x22u8; 32];
    let p2pk = [&[33, 0x03][..], &key, &[0xac]].concat();
    assert_eq!(script_round_trip(&p2pk), [&[0x03][..], &key].concat());
    // Uncompressed P2PK on the curve: tag 4 | parity of y (G's y is even).
    let g = hex::decode(G_UNCOMPRESSED).unwrap();
    let p2pk_uncompressed = [&[65][..], &g, &[0xac]].concat();
    let encoded = script_round_trip(&p2pk_uncompressed);
    assert_eq!(encoded.len(), 33);
    assert_eq!(encoded[0], 0x04);
    assert_eq!(&encoded[1..], &g[1..33]);
}

#[test]
fn uncompressed_key_off_the_curve_is_stored_whole() {
    let mut g = hex::decode(G_UNCOMPRESSED).unwrap();
    g[64] ^= 1; // y no longer matches x
    let script = [&[65][..], &g, &[0xac]].concat();
    let encoded = script_round_trip(&script);
    assert_eq!(encoded.len(), 1 + 67);
    assert_eq!(encoded[0], 67 + 6);
}

#[test]
fn compressed_form_of_off_curve_x_fails_to_decode() {
    // x = 5 has no point on secp256k1 (5^3 + 7 = 132 is not a square mod p).
    let mut encoded = vec![0x04];
    encoded.extend_from_slice(&[0u8; 31]);
    encoded.push(5);
    let mut reader = Reader::new(&encoded);
    assert_eq!(read_script(&mut reader), Err(CoinDecodeError::InvalidPublicKey));
}

#[test]
fn oversized_script_reads_as_op_return() {
    let script = [0x51u8; 10_001];
    let mut encoded = Vec::new();
    write_script(&mut encoded, &script);
    let mut reader = Reader::new(&encoded);
    assert_eq!(read_script(&mut reader).unwrap(), [0x6a]);
    reader.finish().unwrap();
}

#[test]
fn keys_match_core_layout() {
    let txid = Txid([0xab; 32]);
    for (vout, varint) in [
        (0u32, "00"),
        (127, "7f"),
        (128, "8000"),
        (255, "807f"),
        (16_511, "ff7f"),
        (u32::MAX, "8efefefe7f"),
    ] {
        let outpoint = OutPoint { txid, vout };
        let key = CoinKey::new(&outpoint);
        let expected = format!("43{}{}", "ab".repeat(32), varint);
        assert_eq!(hex::encode(key.as_ref()), expected, "vout {vout}");
        assert_eq!(CoinKey::decode(key.as_ref()).unwrap(), outpoint);
    }
    assert_eq!(CoinKey::decode(b"B"), Err(CoinDecodeError::NotCoinKey));
    assert!(CoinKey::decode(&[b'C'; 10]).is_err());
}

#[test]
fn height_above_31_bits_is_rejected() {
    assert!(Coin::new(Amount::ZERO, Vec::new(), 1 << 31, false).is_err());
    let coin = Coin::new(Amount::ZERO, Vec::new(), (1 << 31) - 1, true).unwrap();
    assert_eq!(Coin::decode(&coin.encode()).unwrap(), coin);
}

fn arbitrary_script() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..200),
        proptest::array::uniform20(any::<u8>()).prop_map(|hash| [
            &[0x76, 0xa9, 20][..],
            &hash,
            &[0x88, 0xac]
        ]
        .concat()),
        proptest::array::uniform20(any::<u8>())
            .prop_map(|hash| [&[0xa9, 20][..], &hash, &[0x87]].concat()),
        proptest::array::uniform32(any::<u8>())
            .prop_map(|x| [&[33, 0x02][..], &x, &[0xac]].concat()),
    ]
}

proptest! {
    #[test]
    fn coins_round_trip(
        satoshis in 0..=ibex_primitives::MAX_MONEY,
        script in arbitrary_script(),
        height in 0..=ibex_chainstate::COIN_HEIGHT_MAX,
        is_coinbase in any::<bool>(),
    ) {
        let coin = Coin::new(Amount::from_sat(satoshis).unwrap(), script, height, is_coinbase).unwrap();
        prop_assert_eq!(Coin::decode(&coin.encode()).unwrap(), coin);
    }

    #[test]
    fn amounts_round_trip(satoshis in 0..=(ibex_primitives::MAX_MONEY as u64 * 100)) {
        prop_assert_eq!(decompress_amount(compress_amount(satoshis)), Some(satoshis));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        if let Ok(coin) = Coin::decode(&bytes) {
            // Whatever decodes re-encodes to a record that decodes the same.
            prop_assert_eq!(Coin::decode(&coin.encode()).unwrap(), coin);
        }
        let _ = CoinKey::decode(&bytes);
    }
}
