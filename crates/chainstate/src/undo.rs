//! Block undo data in Bitcoin Core's format (`CBlockUndo` / `CTxUndo`), the
//! payload of each `rev?????.dat` record (framing and checksum live in
//! `ibex_blockstore::undo_files`).
//!
//! - Block: compact-size count of transaction undos, one per transaction
//!   except the coinbase, in block order.
//! - Transaction: compact-size count of spent coins, one per input, in input order.
//! - Coin (Core's `TxInUndoFormatter`): `VARINT(height * 2 + is_coinbase)`,
//!   then, when the height is not 0, a `VARINT` "version" that old Core
//!   versions filled with the spent transaction's version and Core now writes
//!   as 0, then the compressed output: `VARINT(compressed amount)` and the
//!   compressed script, the same compression as the coins database.
//!
//! So a spent coin is its coins-database encoding ([`Coin::encode_into`]) with
//! one zero byte after the height code. Like Core, decoding reads the dummy as
//! any 32-bit VARINT and ignores it; encoding always writes 0, so re-encoding
//! undo data written by Core before 0.15 may differ in those bytes (its
//! checksum was verified over the bytes read, as Core's `HashVerifier` does).
//!
//! Napkin math: ~5,000 spent coins per mainnet block at ~31 bytes each is
//! ~150 KB per block; encoding is a copy per coin (~1 us per 30 coins), far
//! below the cost of the SHA256d checksum the block store computes over it.

use ibex_primitives::encode::{compact_size_len, varint_len, write_compact_size, Reader};
use ibex_primitives::{Amount, DecodeError, Field};

use crate::coins::coin::Coin;
use crate::coins::compress::{compress_amount, read_amount, read_script, script_encoded_bytes};
use crate::error::CoinDecodeError;
pub use crate::error::UndoDecodeError;

/// Fewest bytes a spent coin takes: a height code of height 0 (no dummy),
/// a 1-byte amount and the 1-byte code of an empty script.
const SPENT_COIN_BYTES_MIN: u64 = 3;
/// Fewest bytes a transaction undo takes: its coin count.
const TRANSACTION_UNDO_BYTES_MIN: u64 = 1;

/// The coins one transaction spent (Core's `CTxUndo`): one per input, in input order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransactionUndo {
    /// The spent coins, with the height and coinbase flag they had.
    pub spent: Vec<Coin>,
}

/// The coins a block spent (Core's `CBlockUndo`): one [`TransactionUndo`] per
/// transaction except the coinbase, in block order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlockUndo {
    /// The transactions' undo records.
    pub transactions: Vec<TransactionUndo>,
}

impl BlockUndo {
    /// Appends Core's serialisation of the block undo.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.reserve(self.encoded_bytes());
        write_compact_size(out, self.transactions.len() as u64);
        for transaction in &self.transactions {
            write_compact_size(out, transaction.spent.len() as u64);
            for coin in &transaction.spent {
                encode_spent_coin(coin, out);
            }
        }
        debug_assert_eq!(out.len() - start, self.encoded_bytes());
    }

    /// Core's serialisation of the block undo.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        out
    }

    /// Bytes [`BlockUndo::encode_into`] appends, computed without writing.
    pub fn encoded_bytes(&self) -> usize {
        let transactions = self.transactions.iter().map(|transaction| {
            let coins: usize = transaction.spent.iter().map(spent_coin_encoded_bytes).sum();
            compact_size_len(transaction.spent.len() as u64) + coins
        });
        compact_size_len(self.transactions.len() as u64) + transactions.sum::<usize>()
    }

    /// Decodes Core's serialisation; the whole input must be used. Counts are
    /// checked against the bytes left before anything is reserved.
    pub fn decode(bytes: &[u8]) -> Result<BlockUndo, UndoDecodeError> {
        let mut reader = Reader::new(bytes);
        let transaction_count = reader
            .read_count(Field::Transactions, TRANSACTION_UNDO_BYTES_MIN)
            .map_err(UndoDecodeError::TransactionCount)?;
        let mut transactions = Vec::with_capacity(transaction_count);
        for transaction_index in 0..transaction_count {
            let coin_count = reader
                .read_count(Field::Inputs, SPENT_COIN_BYTES_MIN)
                .map_err(|source| UndoDecodeError::CoinCount { transaction_index, source })?;
            let mut spent = Vec::with_capacity(coin_count);
            for input_index in 0..coin_count {
                spent.push(decode_spent_coin(&mut reader, transaction_index, input_index)?);
            }
            transactions.push(TransactionUndo { spent });
        }
        if reader.remaining() != 0 {
            return Err(UndoDecodeError::TrailingBytes {
                offset: reader.position(),
                count: reader.remaining(),
            });
        }
        Ok(BlockUndo { transactions })
    }
}

/// Core's height-and-coinbase code.
fn height_code(coin: &Coin) -> u64 {
    u64::from(coin.height()) * 2 + u64::from(coin.is_coinbase())
}

/// Appends a spent coin in undo form: the coins-database encoding with the
/// zero dummy version after the height code when the height is not 0.
fn encode_spent_coin(coin: &Coin, out: &mut Vec<u8>) {
    let start = out.len();
    coin.encode_into(out);
    if coin.height() > 0 {
        // Shifts only this coin's amount and script (~25 bytes typically).
        out.insert(start + varint_len(height_code(coin)), 0);
    }
}

fn spent_coin_encoded_bytes(coin: &Coin) -> usize {
    varint_len(height_code(coin))
        + usize::from(coin.height() > 0)
        + varint_len(compress_amount(coin.amount().to_sat() as u64))
        + script_encoded_bytes(coin.script_pubkey())
}

/// Decodes one spent coin as Core's `TxInUndoFormatter` does.
fn decode_spent_coin(
    reader: &mut Reader<'_>,
    transaction_index: usize,
    input_index: usize,
) -> Result<Coin, UndoDecodeError> {
    let coin_error =
        |source: CoinDecodeError| UndoDecodeError::Coin { transaction_index, input_index, source };
    let bytes_error = |source: DecodeError| coin_error(CoinDecodeError::Bytes(source));
    // Core reads the code as a 32-bit VARINT and fails above that.
    let code = reader.read_varint().map_err(bytes_error)?;
    let code = u32::try_from(code)
        .map_err(|_| coin_error(CoinDecodeError::HeightCodeOutOfRange { code }))?;
    let height = code >> 1;
    if height > 0 {
        // The old format's transaction version: a 32-bit VARINT, ignored.
        let value = reader.read_varint().map_err(bytes_error)?;
        if u32::try_from(value).is_err() {
            return Err(UndoDecodeError::VersionDummyOutOfRange {
                transaction_index,
                input_index,
                value,
            });
        }
    }
    let satoshis = read_amount(reader).map_err(coin_error)?;
    let amount = Amount::from_sat(satoshis).map_err(|_| {
        coin_error(CoinDecodeError::AmountOutOfRange { compressed: satoshis as u64 })
    })?;
    let script_pubkey = read_script(reader).map_err(coin_error)?;
    // A 32-bit code always leaves a 31-bit height, which Coin::new accepts.
    Coin::new(amount, script_pubkey, height, code & 1 == 1)
        .map_err(|_| coin_error(CoinDecodeError::HeightCodeOutOfRange { code: u64::from(code) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p2pkh(byte: u8) -> Vec<u8> {
        [&[0x76, 0xa9, 20][..], &[byte; 20], &[0x88, 0xac]].concat()
    }

    fn coin(satoshis: i64, script: Vec<u8>, height: u32, is_coinbase: bool) -> Coin {
        Coin::new(Amount::from_sat(satoshis).unwrap(), script, height, is_coinbase).unwrap()
    }

    /// Two coins written out by hand from Core's `TxInUndoFormatter`.
    fn sample() -> (BlockUndo, Vec<u8>) {
        let undo = BlockUndo {
            transactions: vec![TransactionUndo {
                spent: vec![coin(5_000_000_000, p2pkh(0x11), 100, true), coin(0, vec![], 0, false)],
            }],
        };
        let mut bytes = vec![0x01, 0x02];
        // VARINT(201), dummy 0, VARINT(compressed 50 BTC), P2PKH tag and hash.
        bytes.extend_from_slice(&[0x80, 0x49, 0x00, 0x32, 0x00]);
        bytes.extend_from_slice(&[0x11; 20]);
        // Height 0: no dummy; amount 0; empty script as VARINT(0 + 6).
        bytes.extend_from_slice(&[0x00, 0x00, 0x06]);
        (undo, bytes)
    }

    #[test]
    fn hand_written_core_encoding_round_trips() {
        let (undo, bytes) = sample();
        assert_eq!(undo.encode(), bytes);
        assert_eq!(undo.encoded_bytes(), bytes.len());
        assert_eq!(BlockUndo::decode(&bytes).unwrap(), undo);
        assert_eq!(BlockUndo::default().encode(), [0x00]);
        assert_eq!(BlockUndo::decode(&[0x00]).unwrap(), BlockUndo::default());
    }

    #[test]
    fn any_32_bit_dummy_version_is_accepted_and_ignored() {
        let (undo, mut bytes) = sample();
        // VARINT(2) as the old format's transaction version, then the largest 32-bit one.
        bytes[4] = 0x02;
        assert_eq!(BlockUndo::decode(&bytes).unwrap(), undo);
        let mut widest = bytes[..4].to_vec();
        let mut dummy = Vec::new();
        ibex_primitives::encode::write_varint(&mut dummy, u64::from(u32::MAX));
        widest.extend_from_slice(&dummy);
        widest.extend_from_slice(&bytes[5..]);
        assert_eq!(BlockUndo::decode(&widest).unwrap(), undo);
        let mut too_wide = bytes[..4].to_vec();
        dummy.clear();
        ibex_primitives::encode::write_varint(&mut dummy, u64::from(u32::MAX) + 1);
        too_wide.extend_from_slice(&dummy);
        too_wide.extend_from_slice(&bytes[5..]);
        assert_eq!(
            BlockUndo::decode(&too_wide),
            Err(UndoDecodeError::VersionDummyOutOfRange {
                transaction_index: 0,
                input_index: 0,
                value: u64::from(u32::MAX) + 1
            })
        );
    }

    #[test]
    fn malformed_payloads_are_typed_errors() {
        let (_, bytes) = sample();
        for length in 0..bytes.len() {
            assert!(BlockUndo::decode(&bytes[..length]).is_err(), "prefix of {length} bytes");
        }
        let trailing = [&bytes[..], &[0x00]].concat();
        assert_eq!(
            BlockUndo::decode(&trailing),
            Err(UndoDecodeError::TrailingBytes { offset: bytes.len(), count: 1 })
        );
        // Counts larger than the bytes left fail before anything is reserved.
        let huge_transactions = [0xfe, 0x00, 0x00, 0x00, 0x02];
        assert!(matches!(
            BlockUndo::decode(&huge_transactions),
            Err(UndoDecodeError::TransactionCount(DecodeError::CountTooLarge { .. }))
        ));
        let huge_coins = [0x01, 0xfd, 0xff, 0xff, 0x00, 0x00, 0x06];
        assert!(matches!(
            BlockUndo::decode(&huge_coins),
            Err(UndoDecodeError::CoinCount { transaction_index: 0, .. })
        ));
        // A height code above 32 bits (Core reads it as uint32_t).
        let mut wide_code = vec![0x01, 0x01];
        ibex_primitives::encode::write_varint(&mut wide_code, 1 << 32);
        wide_code.extend_from_slice(&[0x00, 0x00, 0x06]);
        assert!(matches!(
            BlockUndo::decode(&wide_code),
            Err(UndoDecodeError::Coin {
                source: CoinDecodeError::HeightCodeOutOfRange { code: 0x1_0000_0000 },
                ..
            })
        ));
    }

    fn arbitrary_coin() -> impl Strategy<Value = Coin> {
        let script = prop_oneof![
            any::<u8>().prop_map(p2pkh),
            proptest::collection::vec(any::<u8>(), 0..80),
        ];
        (0..=ibex_primitives::MAX_MONEY, script, 0..=crate::COIN_HEIGHT_MAX, any::<bool>())
            .prop_map(|(satoshis, script, height, is_coinbase)| {
                coin(satoshis, script, height, is_coinbase)
            })
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips(
            transactions in proptest::collection::vec(
                proptest::collection::vec(arbitrary_coin(), 0..6), 0..6),
        ) {
            let undo = BlockUndo {
                transactions: transactions.into_iter().map(|spent| TransactionUndo { spent }).collect(),
            };
            let bytes = undo.encode();
            prop_assert_eq!(bytes.len(), undo.encoded_bytes());
            prop_assert_eq!(BlockUndo::decode(&bytes).unwrap(), undo);
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(undo) = BlockUndo::decode(&bytes) {
                // Whatever decodes survives a round trip through the canonical form.
                let canonical = undo.encode();
                prop_assert_eq!(canonical.len(), undo.encoded_bytes());
                prop_assert_eq!(BlockUndo::decode(&canonical).unwrap(), undo);
            }
        }
    }
}
