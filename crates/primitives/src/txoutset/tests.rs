//! Coin serialisation, bogosize, unspendability and the set walks.

use super::*;
use crate::hash::{Hash256, Sha256dWriter, Txid};
use crate::muhash::MuHash3072;

fn coin(txid_byte: u8, vout: u32, value: i64, script_pubkey: &[u8]) -> Coin<'_> {
    Coin {
        outpoint: OutPoint { txid: Txid([txid_byte; 32]), vout },
        height: crate::Height::new(0x0102_0304),
        is_coinbase: true,
        value: Amount::from_sat(value).unwrap(),
        script_pubkey,
    }
}

#[test]
fn coin_serialisation_is_core_txoutser() {
    let mut bytes = Vec::new();
    serialize_coin(&coin(0xab, 7, 5_000_000_000, &[0x51, 0x52]), &mut bytes);
    let mut expected = vec![0xab; 32];
    expected.extend_from_slice(&[7, 0, 0, 0]);
    // (0x01020304 << 1) | 1 = 0x02040609, little-endian.
    expected.extend_from_slice(&[0x09, 0x06, 0x04, 0x02]);
    expected.extend_from_slice(&5_000_000_000i64.to_le_bytes());
    expected.extend_from_slice(&[2, 0x51, 0x52]);
    assert_eq!(bytes, expected);
}

#[test]
fn bogo_size_and_unspendable_scripts() {
    assert_eq!(bogo_size(&[]), 50);
    assert_eq!(bogo_size(&[0u8; 25]), 75);
    assert!(!is_unspendable(&[]));
    assert!(is_unspendable(&[OP_RETURN]));
    assert!(!is_unspendable(&[0x00, OP_RETURN]));
    assert!(!is_unspendable(&vec![0x51; SCRIPT_BYTES_MAX]));
    assert!(is_unspendable(&vec![0x51; SCRIPT_BYTES_MAX + 1]));
}

#[test]
fn walk_counts_transactions_and_hashes_in_order() {
    let script = [0x51];
    let coins = [coin(1, 0, 10, &script), coin(1, 5, 20, &script), coin(2, 1, 30, &script)];
    let mut serialized = TxOutSetHasher::new(TxOutSetHashType::HashSerialized3);
    let mut writer = Sha256dWriter::new();
    let mut muhash = MuHash3072::new();
    let mut bytes = Vec::new();
    for coin in &coins {
        serialized.add_coin(coin).unwrap();
        bytes.clear();
        serialize_coin(coin, &mut bytes);
        writer.update(&bytes);
        muhash.insert(&bytes);
    }
    let stats = serialized.finish();
    assert_eq!(stats.hash, Some(Hash256(writer.finalize())));
    assert_eq!((stats.transactions, stats.txouts, stats.bogosize), (2, 3, 153));
    assert_eq!(stats.total_amount, Some(60));

    let mut walk = TxOutSetHasher::new(TxOutSetHashType::MuHash);
    let mut running = RunningTxOutSetStats::new();
    for coin in coins.iter().rev() {
        running.add_coin(coin);
    }
    for coin in &coins {
        walk.add_coin(coin).unwrap();
    }
    assert_eq!(walk.finish().hash, Some(muhash.finalize()));
    assert_eq!(running.muhash(), muhash.finalize());
}

#[test]
fn walk_refuses_coins_out_of_order() {
    let script = [0x51];
    let mut walk = TxOutSetHasher::new(TxOutSetHashType::None);
    walk.add_coin(&coin(2, 3, 1, &script)).unwrap();
    let error = walk.add_coin(&coin(2, 3, 1, &script)).unwrap_err();
    assert_eq!((error.previous_vout, error.next_vout), (3, 3));
    assert!(walk.add_coin(&coin(2, 2, 1, &script)).is_err());
    assert!(walk.add_coin(&coin(1, 9, 1, &script)).is_err());
    walk.add_coin(&coin(2, 4, 1, &script)).unwrap();
    let stats = walk.finish();
    assert_eq!((stats.hash, stats.transactions, stats.txouts), (None, 1, 2));
}

#[test]
fn total_amount_overflow_is_none_as_in_core() {
    let script = [0x51];
    let mut walk = TxOutSetHasher::new(TxOutSetHashType::None);
    // 4,393 coins of MAX_MONEY exceed i64::MAX satoshis.
    for vout in 0..4_393 {
        walk.add_coin(&coin(1, vout, crate::amount::MAX_MONEY, &script)).unwrap();
    }
    assert_eq!(walk.finish().total_amount, None);
}

#[test]
fn running_stats_return_to_empty() {
    let script = [0x51, 0x52];
    let mut running = RunningTxOutSetStats::new();
    running.add_coin(&coin(1, 0, 10, &script));
    running.add_coin(&coin(1, 1, 20, &script));
    assert_eq!((running.txouts(), running.bogosize(), running.total_amount()), (2, 104, Some(30)));
    running.remove_coin(&coin(1, 1, 20, &script));
    running.remove_coin(&coin(1, 0, 10, &script));
    assert_eq!((running.txouts(), running.bogosize(), running.total_amount()), (0, 0, Some(0)));
    assert_eq!(running.muhash(), MuHash3072::new().finalize());
}

#[test]
fn runs_serialised_apart_hash_as_the_coins_one_by_one() {
    let scripts: [&[u8]; 3] = [&[0x51], &[0x52, 0x53], &[0x6a; 40]];
    let coins: Vec<Coin<'_>> = (0..12u8)
        .map(|index| {
            let value = i64::from(index) * 1_000 + 1;
            coin(index / 3, u32::from(index % 3), value, scripts[usize::from(index % 3)])
        })
        .collect();
    for hash_type in
        [TxOutSetHashType::HashSerialized3, TxOutSetHashType::MuHash, TxOutSetHashType::None]
    {
        let mut one_by_one = TxOutSetHasher::new(hash_type);
        coins.iter().for_each(|coin| one_by_one.add_coin(coin).unwrap());
        // Runs cut inside a transaction (after 4 and 7 coins) and an empty one.
        let mut in_runs = TxOutSetHasher::new(hash_type);
        for range in [0..4, 4..4, 4..7, 7..12] {
            let mut run = SerializedCoins::new();
            coins[range].iter().for_each(|coin| run.push(coin).unwrap());
            in_runs.add_serialized(&run).unwrap();
        }
        assert_eq!(in_runs.finish(), one_by_one.finish());
    }
}

#[test]
fn runs_out_of_order_are_refused() {
    let script = [0x51];
    let mut run = SerializedCoins::new();
    run.push(&coin(2, 1, 1, &script)).unwrap();
    assert!(run.push(&coin(2, 1, 1, &script)).is_err());
    assert!(run.push(&coin(1, 7, 1, &script)).is_err());
    assert_eq!(run.len(), 1);
    let mut walk = TxOutSetHasher::new(TxOutSetHashType::HashSerialized3);
    walk.add_coin(&coin(2, 1, 1, &script)).unwrap();
    let error = walk.add_serialized(&run).unwrap_err();
    assert_eq!((error.previous_vout, error.next_vout), (1, 1));
    let mut later = SerializedCoins::new();
    later.push(&coin(2, 2, 5, &script)).unwrap();
    walk.add_serialized(&later).unwrap();
    let stats = walk.finish();
    assert_eq!((stats.transactions, stats.txouts, stats.total_amount), (1, 2, Some(6)));
}
