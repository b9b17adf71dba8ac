use super::*;
use crate::params::BIP30_UNSPENDABLE_BLOCKS;

/// A file of `blocks` with both codings.
fn written(version: HintsVersion, blocks: &[Vec<u32>]) -> Vec<u8> {
    let mut writer = HintsWriter::new(version, blocks.len() as u32);
    for indices in blocks {
        writer.push_block(indices);
    }
    writer.finish().expect("every block written")
}

fn sample_blocks() -> Vec<Vec<u32>> {
    vec![vec![0], vec![], vec![1, 2, 5], (0..500).step_by(3).collect(), vec![0, 70_000]]
}

#[test]
fn files_round_trip_in_both_codings() {
    for version in [HintsVersion::EliasFano, HintsVersion::GapList] {
        let blocks = sample_blocks();
        let bytes = written(version, &blocks);
        assert_eq!(&bytes[..4], b"UTXO");
        assert_eq!(bytes[4], version.byte());
        assert_eq!(bytes[5..9], 5u32.to_le_bytes());
        let file = HintsFile::parse(bytes, Some(5)).unwrap();
        assert_eq!(file.version(), version);
        assert_eq!(file.terminal_height(), 5);
        assert_eq!(file.unspent_count(), blocks.iter().map(|b| b.len() as u64).sum::<u64>());
        let mut indices = Vec::new();
        for (position, expected) in blocks.iter().enumerate() {
            file.unspent_indices(position as u32 + 1, &mut indices).unwrap();
            assert_eq!(&indices, expected);
        }
        for height in [0, 6] {
            assert_eq!(
                file.unspent_indices(height, &mut indices),
                Err(HintsError::HeightNotCovered { height, terminal_height: 5 })
            );
        }
    }
}

#[test]
fn header_errors_are_named() {
    let good = written(HintsVersion::EliasFano, &sample_blocks());
    let mut magic = good.clone();
    magic[0] = b'X';
    assert!(matches!(HintsFile::parse(magic, None), Err(HintsError::BadMagic { .. })));
    let mut version = good.clone();
    version[4] = 2;
    assert_eq!(
        HintsFile::parse(version, None).unwrap_err(),
        HintsError::UnknownVersion { version: 2 }
    );
    assert_eq!(
        HintsFile::parse(good.clone(), Some(6)).unwrap_err(),
        HintsError::WrongHeight { found: 5, expected: 6 }
    );
    assert!(matches!(HintsFile::parse(good[..7].to_vec(), None), Err(HintsError::Decode { .. })));
    // A height no body of this size can hold is refused before any table.
    let mut huge = good.clone();
    huge[5..9].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(HintsFile::parse(huge, None), Err(HintsError::TooFewBytes { .. })));
}

#[test]
fn record_counts_must_match_the_height() {
    for version in [HintsVersion::EliasFano, HintsVersion::GapList] {
        let mut bytes = written(version, &sample_blocks());
        // One record too many.
        bytes.push(0);
        assert!(matches!(
            HintsFile::parse(bytes.clone(), None),
            Err(HintsError::TrailingBytes { count: 1, .. })
        ));
        // Truncated: the last record cut.
        bytes.truncate(bytes.len() - 2);
        assert!(HintsFile::parse(bytes.clone(), None).is_err());
        // A height one lower leaves the last record as trailing bytes.
        let mut lower = written(version, &sample_blocks());
        lower[5..9].copy_from_slice(&4u32.to_le_bytes());
        assert!(matches!(HintsFile::parse(lower, None), Err(HintsError::TrailingBytes { .. })));
        // A height one higher runs out of records.
        let mut higher = written(version, &sample_blocks());
        higher[5..9].copy_from_slice(&6u32.to_le_bytes());
        assert!(matches!(
            HintsFile::parse(higher, None),
            Err(HintsError::TooFewBytes { .. } | HintsError::Decode { height: 6, .. })
        ));
    }
}

#[test]
fn truncations_at_every_length_are_errors() {
    for version in [HintsVersion::EliasFano, HintsVersion::GapList] {
        let bytes = written(version, &sample_blocks());
        for length in 0..bytes.len() {
            assert!(HintsFile::parse(bytes[..length].to_vec(), None).is_err(), "{length}");
        }
    }
}

#[test]
fn the_writer_refuses_to_finish_early() {
    let mut writer = HintsWriter::new(HintsVersion::GapList, 2);
    writer.push_block(&[1]);
    assert_eq!(writer.blocks_written(), 1);
    assert!(writer.finish().is_none());
}

#[test]
fn numbering_skips_unspendable_outputs_and_overwritten_coinbases() {
    let plain = HintNumbering::for_block(5, &BlockHash([7; 32]));
    let payment = OutputView { value: 1, script_pubkey: &[0x51] };
    let empty = OutputView { value: 1, script_pubkey: &[] };
    let data = OutputView { value: 0, script_pubkey: &[0x6a, 0x01, 0x02] };
    let oversized_script = vec![0x51; 10_001];
    let oversized = OutputView { value: 1, script_pubkey: &oversized_script };
    assert!(plain.numbers(0, &payment));
    assert!(plain.numbers(0, &empty));
    assert!(!plain.numbers(1, &data));
    assert!(!plain.numbers(1, &oversized));
    let overwritten = BIP30_UNSPENDABLE_BLOCKS[0];
    let bip30 = HintNumbering::for_block(overwritten.height, &overwritten.hash);
    assert!(!bip30.numbers(0, &payment));
    assert!(bip30.numbers(1, &payment));
    // The same hash at another height is an ordinary block.
    assert!(
        HintNumbering::for_block(overwritten.height + 1, &overwritten.hash).numbers(0, &payment)
    );
}

#[test]
fn indices_are_checked_against_the_block() {
    assert_eq!(HintNumbering::check(9, &[0, 3], 4), Ok(()));
    assert_eq!(HintNumbering::check(9, &[], 0), Ok(()));
    assert_eq!(
        HintNumbering::check(9, &[0, 4], 4),
        Err(HintsError::IndexBeyondBlock { height: 9, index: 4, spendable_count: 4 })
    );
}
