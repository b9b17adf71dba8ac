use super::*;
use crate::command::Command;
use crate::messages::NetworkMessage;
use ibex_primitives::MAX_MONEY;

fn encoded(script: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_reconstructable_script(script, &mut out);
    out
}

fn decoded(bytes: &[u8]) -> Result<Vec<u8>, MessageError> {
    let mut reader = PayloadReader::new(Command::SPENT_COINS, bytes);
    let script = decode_reconstructable_script(&mut reader)?;
    assert!(reader.is_empty(), "the form's bytes are read exactly");
    Ok(script)
}

fn with(prefix: &[u8], middle: &[u8], suffix: &[u8]) -> Vec<u8> {
    [prefix, middle, suffix].concat()
}

#[test]
fn each_template_takes_its_short_form_and_expands_back() {
    let hash20 = [0x11; 20];
    let key32 = [0x22; 32];
    let key64 = [0x33; 64];
    let cases: [(Vec<u8>, u8, &[u8]); 8] = [
        (with(&[OP_DUP, OP_HASH160, 20], &hash20, &[OP_EQUALVERIFY, OP_CHECKSIG]), 0x01, &hash20),
        (with(&[33, 0x02], &key32, &[OP_CHECKSIG]), 0x02, &key32),
        (with(&[33, 0x03], &key32, &[OP_CHECKSIG]), 0x03, &key32),
        (with(&[65, 0x04], &key64, &[OP_CHECKSIG]), 0x04, &key64),
        (with(&[OP_HASH160, 20], &hash20, &[OP_EQUAL]), 0x05, &hash20),
        (with(&[OP_0, 32], &key32, &[]), 0x06, &key32),
        (with(&[OP_0, 20], &hash20, &[]), 0x07, &hash20),
        (with(&[OP_1, 32], &key32, &[]), 0x08, &key32),
    ];
    for (script, form, payload) in cases {
        let bytes = encoded(&script);
        assert_eq!(reconstructable_script_bytes(&script), bytes.len());
        assert_eq!(bytes[0], form, "{script:02x?}");
        assert_eq!(&bytes[1..], payload);
        assert_eq!(decoded(&bytes), Ok(script));
    }
}

#[test]
fn scripts_off_the_templates_are_sent_whole() {
    // BIP 455's vector: OP_RETURN is the unknown form `00 01 6a`.
    assert_eq!(encoded(&[0x6a]), [0x00, 0x01, 0x6a]);
    let hash20 = [0x11; 20];
    let near_misses = [
        Vec::new(),
        // P2PKH ending in OP_EQUAL, P2PK of a key with the wrong first
        // byte, a 19-byte witness program, a v1 program of 20 bytes.
        with(&[OP_DUP, OP_HASH160, 20], &hash20, &[OP_EQUALVERIFY, OP_EQUAL]),
        with(&[33, 0x05], &[0x22; 32], &[OP_CHECKSIG]),
        with(&[OP_0, 19], &[0x44; 19], &[]),
        with(&[OP_1, 20], &hash20, &[]),
        with(&[OP_HASH160, 20], &hash20, &[OP_EQUAL, OP_EQUAL]),
        vec![0xab; SCRIPT_BYTES_MAX],
    ];
    for script in near_misses {
        let bytes = encoded(&script);
        assert_eq!(reconstructable_script_bytes(&script), bytes.len());
        assert_eq!(bytes[0], 0x00);
        assert_eq!(decoded(&bytes), Ok(script));
    }
}

#[test]
fn a_broken_script_is_refused() {
    assert!(matches!(
        decoded(&[0x09]),
        Err(MessageError::InvalidValue { field: Field::ScriptForm, value: 9, .. })
    ));
    let mut too_long = vec![0x00];
    write_compact_size(&mut too_long, SCRIPT_BYTES_MAX as u64 + 1);
    too_long.resize(too_long.len() + SCRIPT_BYTES_MAX + 1, 0);
    assert!(matches!(decoded(&too_long), Err(MessageError::TooLong { .. })));
    assert!(matches!(decoded(&[0x01, 0x11]), Err(MessageError::Malformed { .. })));
    assert!(matches!(decoded(&[0x00, 0x05, 0x6a]), Err(MessageError::Malformed { .. })));
}

fn coin(value: i64, script: &[u8], height: u32, is_coinbase: bool) -> SpentCoinBuf {
    SpentCoinBuf {
        value: Amount::from_sat(value).unwrap(),
        script_pubkey: script.to_vec(),
        height: Height::new(height),
        is_coinbase,
    }
}

fn sample() -> SpentCoins {
    let p2wpkh = with(&[OP_0, 20], &[0x11; 20], &[]);
    SpentCoins {
        block_hash: BlockHash([7; 32]),
        coins: vec![
            IndexedSpentCoin { input_index: 0, coin: coin(50 * 100_000_000, &p2wpkh, 1, true) },
            IndexedSpentCoin { input_index: 3, coin: coin(0, &[0x51], 0x7fff_ffff, false) },
            IndexedSpentCoin { input_index: 70_000, coin: coin(MAX_MONEY, &[], 12, false) },
        ],
    }
}

#[test]
fn bspent_and_getbspent_round_trip() {
    let message = sample();
    let mut payload = Vec::new();
    message.encode(&mut payload);
    assert_eq!(message.encoded_bytes(), payload.len(), "counted as written");
    // The first coin: index 0, height 1 from a coinbase (code 3), the
    // P2WPKH form, 50 BTC compressed to 50.
    assert_eq!(payload[32], 3, "three coins");
    assert_eq!(payload[33..41], [0, 0, 0, 0, 3, 0, 0, 0]);
    assert_eq!(payload[41], 0x07);
    assert_eq!(payload[62], 50);
    let decoded = NetworkMessage::decode(Command::SPENT_COINS, &payload);
    assert_eq!(decoded, Ok(NetworkMessage::SpentCoins(message)));

    let request = GetSpentCoins { block_hash: BlockHash([9; 32]), cutoff_height: 0x0102_0304 };
    let mut payload = Vec::new();
    request.encode(&mut payload);
    assert_eq!(payload[32..], [4, 3, 2, 1]);
    let decoded = NetworkMessage::decode(Command::GET_SPENT_COINS, &payload);
    assert_eq!(decoded, Ok(NetworkMessage::GetSpentCoins(request)));
    assert!(request.wants(Height::new(0x0102_0303)));
    assert!(!request.wants(Height::new(0x0102_0304)));
    assert!(GetSpentCoins { cutoff_height: 0, ..request }.wants(Height::MAX));
}

#[test]
fn a_broken_bspent_is_refused_before_it_allocates() {
    let mut payload = Vec::new();
    sample().encode(&mut payload);
    for cut in 0..payload.len() {
        let result = NetworkMessage::decode(Command::SPENT_COINS, &payload[..cut]);
        assert!(matches!(result, Err(MessageError::Malformed { .. })), "cut at {cut}");
    }
    let mut too_many = vec![7; 32];
    write_compact_size(&mut too_many, SPENT_COINS_PER_MESSAGE_MAX as u64 + 1);
    assert!(matches!(
        NetworkMessage::decode(Command::SPENT_COINS, &too_many),
        Err(MessageError::TooMany { .. })
    ));
    // An amount above MAX_MONEY (compressed 21,000,001 decompresses past it).
    let mut rich = vec![7; 32];
    write_compact_size(&mut rich, 1);
    rich.extend_from_slice(&[0; 8]);
    rich.extend_from_slice(&[0x00, 0x00]);
    write_compact_size(&mut rich, 21_000_010);
    let error = NetworkMessage::decode(Command::SPENT_COINS, &rich).unwrap_err();
    assert!(matches!(error, MessageError::InvalidValue { field: Field::Amount, .. }));
    assert_eq!(error.core_response(), crate::messages::error::CoreResponse::Disconnect);
}
