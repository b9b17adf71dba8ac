//! The snapshot format: round trips, and a table of malformed files that
//! each end in their own error without a panic.

use std::io::Cursor;

use ibex_primitives::encode::{write_compact_size, write_varint};
use ibex_primitives::{Amount, BlockHash, Height, OutPoint, Params, Txid};

use super::*;
use crate::coins::coin::Coin;
use crate::coins::database::key_order::key_order;

const BASE_HEIGHT: u32 = 200;

fn p2wpkh(seed: u8) -> Vec<u8> {
    let mut script = vec![0x00, 0x14];
    script.extend_from_slice(&[seed; 20]);
    script
}

fn coin(satoshis: u32, height: u32, seed: u8) -> Coin {
    Coin::new(Amount::from_sat_u32(satoshis), p2wpkh(seed), height, seed % 2 == 0).unwrap()
}

/// Coins of three transactions in key order, one with outputs on both
/// sides of 16,511 where the key order and the numeric order part.
fn sample_coins() -> Vec<(OutPoint, Coin)> {
    let mut coins = vec![
        (OutPoint { txid: Txid([1; 32]), vout: 0 }, coin(5_000, 10, 1)),
        (OutPoint { txid: Txid([1; 32]), vout: 3 }, coin(7_000, 10, 2)),
        (OutPoint { txid: Txid([2; 32]), vout: 16_512 }, coin(1, 150, 3)),
        (OutPoint { txid: Txid([2; 32]), vout: 16_000 }, coin(2, 150, 4)),
        (OutPoint { txid: Txid([9; 32]), vout: 1 }, coin(u32::MAX, BASE_HEIGHT, 5)),
    ];
    coins.sort_by(|left, right| key_order(&left.0, &right.0));
    coins
}

fn metadata(coin_count: u64) -> SnapshotMetadata {
    SnapshotMetadata {
        message_start: Params::regtest().message_start,
        base_block: BlockHash([0xab; 32]),
        coin_count,
    }
}

fn encode(coins: &[(OutPoint, Coin)]) -> Vec<u8> {
    let mut writer = SnapshotWriter::new(Vec::new(), &metadata(coins.len() as u64)).unwrap();
    for (outpoint, coin) in coins {
        writer.add(outpoint, coin).unwrap();
    }
    let (bytes, written) = writer.finish().unwrap();
    assert_eq!(written, coins.len() as u64);
    bytes
}

fn read_all(bytes: &[u8]) -> Result<Vec<(OutPoint, Coin)>, SnapshotError> {
    let params = Params::regtest();
    let length = bytes.len() as u64;
    let mut reader =
        SnapshotReader::new(Cursor::new(bytes), &params, Some(length), Height::new(BASE_HEIGHT))?;
    let mut coins = Vec::new();
    while let Some(coin) = reader.next_coin()? {
        coins.push(coin);
    }
    Ok(coins)
}

#[test]
fn written_coins_read_back_in_key_order_grouped_by_transaction() {
    let coins = sample_coins();
    let bytes = encode(&coins);
    assert_eq!(&bytes[..5], b"utxo\xff");
    assert_eq!(&bytes[5..7], &[2, 0]);
    assert_eq!(u64::from_le_bytes(bytes[43..51].try_into().unwrap()), 5);
    // Three groups: each txid written once.
    let txid_count = [1u8, 2, 9]
        .iter()
        .filter(|byte| bytes.windows(32).any(|window| window == [**byte; 32]))
        .count();
    assert_eq!(txid_count, 3);
    assert_eq!(read_all(&bytes).unwrap(), coins);
    // The key order puts output 16,512 (VARINT 80 80 00) before 16,000
    // (VARINT fc 00).
    assert_eq!(coins[2].0.vout, 16_512);
}

#[test]
fn reading_in_small_pieces_gives_the_same_coins() {
    /// Hands out at most three bytes a read, so every field crosses a
    /// buffer refill somewhere.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let count = out.len().min(3).min(self.0.len());
            out[..count].copy_from_slice(&self.0[..count]);
            self.0 = &self.0[count..];
            Ok(count)
        }
    }
    let coins = sample_coins();
    let bytes = encode(&coins);
    let params = Params::regtest();
    let mut reader =
        SnapshotReader::new(Trickle(&bytes), &params, None, Height::new(BASE_HEIGHT)).unwrap();
    let mut read = Vec::new();
    while let Some(coin) = reader.next_coin().unwrap() {
        read.push(coin);
    }
    assert_eq!(read, coins);
}

#[test]
fn the_writer_refuses_coins_out_of_key_order() {
    let coins = sample_coins();
    let mut writer = SnapshotWriter::new(Vec::new(), &metadata(2)).unwrap();
    writer.add(&coins[1].0, &coins[1].1).unwrap();
    assert!(matches!(
        writer.add(&coins[0].0, &coins[0].1),
        Err(SnapshotError::WriterOutOfOrder { .. })
    ));
    assert!(matches!(
        writer.add(&coins[1].0, &coins[1].1),
        Err(SnapshotError::WriterOutOfOrder { .. })
    ));
}

/// A file of one group (`txid`, `count`) followed by `records` (each an
/// output index and a coin's bytes), claiming `coin_count` coins.
fn hand_made(coin_count: u64, txid: [u8; 32], count: u64, records: &[(u64, Vec<u8>)]) -> Vec<u8> {
    let mut bytes = metadata(coin_count).encode().to_vec();
    bytes.extend_from_slice(&txid);
    write_compact_size(&mut bytes, count);
    for (vout, coin) in records {
        write_compact_size(&mut bytes, *vout);
        bytes.extend_from_slice(coin);
    }
    bytes
}

fn good_coin_bytes() -> Vec<u8> {
    coin(1_000, 5, 7).encode()
}

/// A coin's bytes with a raw script: `VARINT(len + 6)` then the script.
fn coin_with_script(script: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_varint(&mut bytes, 5 * 2);
    write_varint(&mut bytes, 1);
    write_varint(&mut bytes, script.len() as u64 + 6);
    bytes.extend_from_slice(script);
    bytes
}

/// What a malformed case's error must match.
type ExpectedError = fn(&SnapshotError) -> bool;

#[test]
fn malformed_snapshots_each_fail_with_their_reason() {
    let good = encode(&sample_coins());
    let mut cases: Vec<(&str, Vec<u8>, ExpectedError)> = Vec::new();
    cases.push(("empty", Vec::new(), |e| matches!(e, SnapshotError::TruncatedHeader { .. })));
    cases.push(("header cut", good[..30].to_vec(), |e| {
        matches!(e, SnapshotError::TruncatedHeader { length_bytes: 30 })
    }));
    let mut bad_magic = good.clone();
    bad_magic[4] = 0xfe;
    cases.push(("magic", bad_magic, |e| matches!(e, SnapshotError::BadMagic)));
    let mut version_one = good.clone();
    version_one[5] = 1;
    cases.push(("version", version_one, |e| {
        matches!(e, SnapshotError::UnsupportedVersion { version: 1 })
    }));
    let mut mainnet = good.clone();
    mainnet[7..11].copy_from_slice(&Params::main().message_start);
    cases.push(("mainnet", mainnet, |e| {
        matches!(e, SnapshotError::WrongNetwork { snapshot: "main", node: "regtest" })
    }));
    let mut unknown = good.clone();
    unknown[7..11].copy_from_slice(&[1, 2, 3, 4]);
    cases.push(("unknown network", unknown, |e| matches!(e, SnapshotError::UnknownNetwork { .. })));
    let mut huge_count = good.clone();
    huge_count[43..51].copy_from_slice(&u64::MAX.to_le_bytes());
    cases.push(("count beyond file", huge_count, |e| {
        matches!(e, SnapshotError::CoinCountBeyondFile { coin_count: u64::MAX, .. })
    }));
    cases.push(("cut inside a coin", good[..good.len() - 3].to_vec(), |e| {
        matches!(e, SnapshotError::Truncated { coins_read: 4, .. })
    }));
    cases.push(("cut inside a txid", good[..51 + 20].to_vec(), |e| {
        matches!(e, SnapshotError::Truncated { coins_read: 0, offset: 51 })
    }));
    let mut extra = good.clone();
    extra.push(0);
    cases.push(("bytes left over", extra, |e| {
        matches!(e, SnapshotError::CoinsLeftOver { coin_count: 5, .. })
    }));
    let mut fewer_claimed = good.clone();
    fewer_claimed[43] = 4;
    cases.push(("group beyond the count", fewer_claimed, |e| {
        matches!(e, SnapshotError::CoinCountMismatch { .. } | SnapshotError::CoinsLeftOver { .. })
    }));
    cases.push(("group count beyond coins left", hand_made(1, [1; 32], 2, &[]), |e| {
        matches!(e, SnapshotError::CoinCountMismatch { group_count: 2, coins_left: 1, .. })
    }));
    cases.push(("empty group", hand_made(1, [1; 32], 0, &[]), |e| {
        matches!(e, SnapshotError::EmptyGroup { .. })
    }));
    let records = [(3, good_coin_bytes()), (1, good_coin_bytes())];
    cases.push(("unsorted outputs", hand_made(2, [1; 32], 2, &records), |e| {
        matches!(e, SnapshotError::OutOfOrder { .. })
    }));
    let records = [(1, good_coin_bytes()), (1, good_coin_bytes())];
    cases.push(("duplicate output", hand_made(2, [1; 32], 2, &records), |e| {
        matches!(e, SnapshotError::OutOfOrder { .. })
    }));
    let records = [(0, coin(1, BASE_HEIGHT + 1, 2).encode())];
    cases.push(("coin above the base", hand_made(1, [1; 32], 1, &records), |e| {
        matches!(e, SnapshotError::BadCoin { reason: BadCoinReason::AboveBase { .. }, .. })
    }));
    let records = [(u64::from(u32::MAX), good_coin_bytes())];
    cases.push(("output index u32::MAX", hand_made(1, [1; 32], 1, &records), |e| {
        matches!(e, SnapshotError::CorruptCoin { .. })
    }));
    let records = [(0, coin_with_script(&[0x6a, 1, 2]))];
    cases.push(("OP_RETURN coin", hand_made(1, [1; 32], 1, &records), |e| {
        matches!(e, SnapshotError::BadCoin { reason: BadCoinReason::Unspendable, .. })
    }));
    let records = [(0, coin_with_script(&[0x51; 10_001]))];
    cases.push(("script over 10,000 bytes", hand_made(1, [1; 32], 1, &records), |e| {
        matches!(e, SnapshotError::BadCoin { reason: BadCoinReason::Unspendable, .. })
    }));
    let mut oversized = coin_with_script(&[0x51; 40_000]);
    oversized.truncate(20_000);
    cases.push(("script longer than any coin", hand_made(1, [1; 32], 1, &[(0, oversized)]), |e| {
        matches!(e, SnapshotError::BadCoin { reason: BadCoinReason::Oversized, .. })
    }));
    let mut too_much = Vec::new();
    write_varint(&mut too_much, 10);
    write_varint(&mut too_much, u64::MAX >> 8);
    too_much.push(0x10);
    cases.push(("amount beyond MAX_MONEY", hand_made(1, [1; 32], 1, &[(0, too_much)]), |e| {
        matches!(e, SnapshotError::CorruptCoin { .. })
    }));
    let mut non_canonical = metadata(1).encode().to_vec();
    non_canonical.extend_from_slice(&[1; 32]);
    non_canonical.extend_from_slice(&[0xfd, 1, 0]);
    cases.push(("non-canonical count", non_canonical, |e| {
        matches!(e, SnapshotError::CorruptCoin { .. })
    }));
    for (name, bytes, expected) in cases {
        let error = read_all(&bytes).expect_err(name);
        assert!(expected(&error), "{name}: {error}");
        // Every reason renders a message for the operator.
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn a_group_larger_than_any_transaction_is_refused_before_its_coins() {
    let bytes = hand_made(GROUP_COINS_MAX + 1, [1; 32], GROUP_COINS_MAX + 1, &[]);
    let params = Params::regtest();
    // No file length: the header's count alone does not refuse it.
    let mut reader =
        SnapshotReader::new(Cursor::new(bytes), &params, None, Height::new(BASE_HEIGHT)).unwrap();
    let error = reader.next_coin().unwrap_err();
    assert!(matches!(error, SnapshotError::GroupTooLarge { offset: 83, .. }), "{error}");
}

#[test]
fn a_txid_group_out_of_order_is_refused() {
    let coins = sample_coins();
    let mut reversed = encode(&coins[4..]);
    // The same coins with a smaller txid after them, claimed in the count.
    reversed[43] = 2;
    reversed.extend_from_slice(&[1; 32]);
    write_compact_size(&mut reversed, 1);
    write_compact_size(&mut reversed, 0);
    reversed.extend_from_slice(&good_coin_bytes());
    assert!(matches!(read_all(&reversed), Err(SnapshotError::OutOfOrder { .. })));
}

mod dump_and_load {
    use std::sync::Arc;

    use ibex_primitives::params::AssumeUtxoEntry;
    use ibex_primitives::Hash256;

    use super::*;
    use crate::coins::cache::{CoinsCache, FlushMode};
    use crate::coins::database::{CoinsDatabase, DatabaseOptions};
    use crate::error::ChainstateError;

    fn database(directory: &std::path::Path) -> CoinsDatabase {
        CoinsDatabase::open(directory, &DatabaseOptions::default()).unwrap()
    }

    /// A snapshot file of the coins of a cache (some flushed, some not),
    /// and what writing it reported.
    fn dumped(
        root: &std::path::Path,
    ) -> (std::path::PathBuf, WrittenSnapshot, Vec<(OutPoint, Coin)>) {
        let mut cache = CoinsCache::new(Arc::new(database(&root.join("source"))), 8 << 20);
        let coins = sample_coins();
        for (outpoint, coin) in &coins[..3] {
            cache.add(outpoint, coin.clone(), false).unwrap();
        }
        cache.flush(BlockHash([1; 32]), FlushMode::EmptyCache).unwrap();
        for (outpoint, coin) in &coins[3..] {
            cache.add(outpoint, coin.clone(), false).unwrap();
        }
        let view = cache.coin_set_view();
        let path = root.join("utxo.dat");
        let file = std::fs::File::create(&path).unwrap();
        let written = write_snapshot(&view, metadata(0), file, true).unwrap();
        (path, written, coins)
    }

    fn entry(hash_serialized: Hash256) -> AssumeUtxoEntry {
        AssumeUtxoEntry {
            height: BASE_HEIGHT,
            block_hash: BlockHash([0xab; 32]),
            hash_serialized,
            chain_transaction_count: 1,
        }
    }

    fn reader(path: &std::path::Path) -> SnapshotReader<std::fs::File> {
        let file = std::fs::File::open(path).unwrap();
        let length = file.metadata().unwrap().len();
        SnapshotReader::new(file, &Params::regtest(), Some(length), Height::new(BASE_HEIGHT))
            .unwrap()
    }

    #[test]
    fn a_dumped_view_loads_into_an_empty_database_with_the_same_coins_and_hash() {
        let root = tempfile::tempdir().unwrap();
        let (path, written, coins) = dumped(root.path());
        assert_eq!(written.coins_written, 5);
        // The header's count was written after the walk.
        assert_eq!(read_all(&std::fs::read(&path).unwrap()).unwrap(), coins);
        let target = database(&root.path().join("target"));
        let hash = written.stats.hash.unwrap();
        let mut calls = 0;
        let loaded = load_snapshot(reader(&path), &target, &entry(hash), |_| calls += 1).unwrap();
        assert_eq!(loaded.coins_loaded, 5);
        assert_eq!(loaded.stats, written.stats);
        assert_eq!(calls, 0);
        let stored: Vec<(OutPoint, Coin)> = target.iter_coins().map(Result::unwrap).collect();
        assert_eq!(stored, coins);
        assert_eq!(target.best_block().unwrap(), Some(BlockHash([0xab; 32])));
        // The same hash as the database's own walk.
        let walked = crate::coins::txoutset::txoutset_stats(
            &target,
            ibex_primitives::txoutset::TxOutSetHashType::HashSerialized3,
        )
        .unwrap();
        assert_eq!(walked, written.stats);
    }

    #[test]
    fn coins_that_do_not_hash_to_the_entry_leave_no_best_block() {
        let root = tempfile::tempdir().unwrap();
        let (path, written, _) = dumped(root.path());
        let target = database(&root.path().join("target"));
        let wrong = Hash256([7; 32]);
        let error = load_snapshot(reader(&path), &target, &entry(wrong), |_| {}).unwrap_err();
        let expected = written.stats.hash.unwrap();
        assert!(
            matches!(error, ChainstateError::Snapshot(SnapshotError::ContentHashMismatch { got, .. }) if got == expected),
            "{error}"
        );
        assert_eq!(target.best_block().unwrap(), None);
        // One script changed (the last coin's last byte): the file still
        // reads, the hash differs.
        let mut bytes = std::fs::read(&path).unwrap();
        let mut altered_entry = entry(expected);
        let last = bytes.len() - 1;
        bytes[last] ^= 0x01;
        std::fs::write(&path, &bytes).unwrap();
        let other = database(&root.path().join("other"));
        let error = load_snapshot(reader(&path), &other, &altered_entry, |_| {}).unwrap_err();
        assert!(
            matches!(error, ChainstateError::Snapshot(SnapshotError::ContentHashMismatch { .. })),
            "{error}"
        );
        assert_eq!(other.best_block().unwrap(), None);
        // A snapshot of another block than the entry's.
        altered_entry.block_hash = BlockHash([1; 32]);
        let third = database(&root.path().join("third"));
        let error = load_snapshot(reader(&path), &third, &altered_entry, |_| {}).unwrap_err();
        assert!(matches!(
            error,
            ChainstateError::Snapshot(SnapshotError::NotAssumeUtxoBlock { .. })
        ));
    }
}
