//! Reading a snapshot from a stranger: a stream of coins, each checked as
//! it is read (see [`SnapshotReader::next_coin`]), in a buffer of fixed size
//! whatever counts the file claims.

use std::io::Read;

use ibex_primitives::encode::Reader;
use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{DecodeError, Height, OutPoint, Params, Txid};

use super::error::{BadCoinReason, SnapshotError};
use super::metadata::{SnapshotMetadata, METADATA_BYTES};
use crate::coins::coin::Coin;
use crate::coins::database::key_order::key_order;
use crate::error::CoinDecodeError;

/// Bytes the reader buffers from the file.
pub const READ_BUFFER_BYTES: usize = 1 << 20;
/// Longest coin record a writer can produce: a compact-size output index
/// (9), a VARINT height code (10), a VARINT amount (10), a VARINT script
/// length (5) and a script of at most 10,000 bytes. Anything longer is
/// refused without buffering it.
pub const COIN_RECORD_BYTES_MAX: usize = 9 + 10 + 10 + 5 + 10_000;
/// Bytes of a group's header: the transaction id and a compact-size count.
const GROUP_HEADER_BYTES_MAX: usize = 32 + 9;
/// Most coins one transaction's group can hold: the most outputs a
/// transaction can have, each at least 9 bytes (36 weight units) in a
/// block of 4,000,000. Core's reader takes any count up to 2^25; a writer
/// of real coins never exceeds this, and it bounds the one group a
/// loader's hash holds at a time.
pub const GROUP_COINS_MAX: u64 = 4_000_000 / 36;
/// Fewest bytes a coin takes: one each for its index, height code, amount
/// and script code.
pub const COIN_BYTES_MIN: u64 = 4;

/// A snapshot being read: its header, then [`SnapshotReader::next_coin`]
/// until `None`.
#[derive(Debug)]
pub struct SnapshotReader<R> {
    source: R,
    buffer: Vec<u8>,
    /// The unread bytes are `buffer[start..end]`.
    start: usize,
    end: usize,
    /// File offset of `buffer[0]`.
    buffer_offset: u64,
    source_ended: bool,
    metadata: SnapshotMetadata,
    base_height: Height,
    coins_read: u64,
    /// The current transaction's id and its coins still to read.
    group: Option<(Txid, u64)>,
    previous: Option<OutPoint>,
}

impl<R: Read> SnapshotReader<R> {
    /// Reads and checks the header of the snapshot in `source` for
    /// `params`'s network. `file_bytes` (the file's length, when known)
    /// refuses a coin count the file cannot hold before reading any coin;
    /// `base_height` is the height of the header's base block, looked up
    /// by the caller ([`SnapshotReader::metadata_only`] reads the header
    /// first).
    pub fn new(
        source: R,
        params: &Params,
        file_bytes: Option<u64>,
        base_height: Height,
    ) -> Result<SnapshotReader<R>, SnapshotError> {
        let mut reader = SnapshotReader {
            source,
            buffer: vec![0; READ_BUFFER_BYTES],
            start: 0,
            end: 0,
            buffer_offset: 0,
            source_ended: false,
            metadata: SnapshotMetadata {
                message_start: [0; 4],
                base_block: ibex_primitives::BlockHash::ZERO,
                coin_count: 0,
            },
            base_height,
            coins_read: 0,
            group: None,
            previous: None,
        };
        reader.fill(METADATA_BYTES)?;
        reader.metadata = SnapshotMetadata::decode(reader.unread(), params)?;
        reader.start += METADATA_BYTES;
        if let Some(file_bytes) = file_bytes {
            let data_bytes = file_bytes.saturating_sub(METADATA_BYTES as u64);
            if reader.metadata.coin_count.saturating_mul(COIN_BYTES_MIN) > data_bytes {
                return Err(SnapshotError::CoinCountBeyondFile {
                    coin_count: reader.metadata.coin_count,
                    data_bytes,
                    coin_bytes_min: COIN_BYTES_MIN,
                });
            }
        }
        Ok(reader)
    }

    /// The header alone, read from the front of `source` and checked for
    /// `params`'s network.
    pub fn metadata_only(
        source: &mut R,
        params: &Params,
    ) -> Result<SnapshotMetadata, SnapshotError> {
        let mut header = [0u8; METADATA_BYTES];
        let mut length_bytes = 0;
        while length_bytes < METADATA_BYTES {
            match source.read(&mut header[length_bytes..])? {
                0 => break,
                read => length_bytes += read,
            }
        }
        SnapshotMetadata::decode(&header[..length_bytes], params)
    }

    /// The header.
    pub fn metadata(&self) -> &SnapshotMetadata {
        &self.metadata
    }

    /// Coins read so far.
    pub fn coins_read(&self) -> u64 {
        self.coins_read
    }

    /// The next coin, or `None` after the last one the header counts (and
    /// no byte after it). Each coin is checked: its group's count against
    /// the coins left, its encoding (canonical counts, amount in range),
    /// its height against the base block's, its output index, a spendable
    /// script, and that it follows the coin before it in the database's
    /// key order (no duplicates).
    pub fn next_coin(&mut self) -> Result<Option<(OutPoint, Coin)>, SnapshotError> {
        if self.coins_read == self.metadata.coin_count {
            return self.check_end().map(|()| None);
        }
        let txid = self.group_txid()?;
        let offset = self.offset();
        self.fill(COIN_RECORD_BYTES_MAX)?;
        let available = self.end - self.start;
        let mut reader = Reader::new(self.unread());
        let decoded = read_record(&mut reader);
        let (vout, coin) = match decoded {
            Ok(record) => record,
            Err(RecordError::Bytes(DecodeError::Truncated { .. }))
            | Err(RecordError::Coin(CoinDecodeError::Bytes(DecodeError::Truncated { .. }))) => {
                if self.source_ended {
                    return Err(SnapshotError::Truncated { offset, coins_read: self.coins_read });
                }
                // The buffer held a whole record's worth and it did not end.
                debug_assert!(available >= COIN_RECORD_BYTES_MAX);
                let outpoint = OutPoint { txid, vout: 0 };
                return Err(self.bad_coin(outpoint, offset, BadCoinReason::Oversized));
            }
            Err(RecordError::Bytes(source)) => return Err(self.corrupt(offset, source.into())),
            Err(RecordError::Coin(source)) => return Err(self.corrupt(offset, source)),
        };
        self.start += reader.position();
        let outpoint = OutPoint { txid, vout };
        self.check_coin(outpoint, &coin, offset)?;
        self.previous = Some(outpoint);
        self.coins_read += 1;
        if let Some((_, left)) = self.group.as_mut() {
            *left -= 1;
            if *left == 0 {
                self.group = None;
            }
        }
        Ok(Some((outpoint, coin)))
    }

    /// The transaction id of the group the next coin is in, reading the
    /// next group's header when the last one is done.
    fn group_txid(&mut self) -> Result<Txid, SnapshotError> {
        if let Some((txid, _)) = self.group {
            return Ok(txid);
        }
        let offset = self.offset();
        self.fill(GROUP_HEADER_BYTES_MAX)?;
        let mut reader = Reader::new(self.unread());
        let truncated = SnapshotError::Truncated { offset, coins_read: self.coins_read };
        let txid = match reader.take_array::<32>() {
            Ok(bytes) => Txid(*bytes),
            Err(_) => return Err(truncated),
        };
        let count_offset = offset + 32;
        let group_count = match reader.read_compact_size() {
            Ok(count) => count,
            Err(DecodeError::Truncated { .. }) => return Err(truncated),
            Err(source) => return Err(self.corrupt(count_offset, source.into())),
        };
        let coins_left = self.metadata.coin_count - self.coins_read;
        if group_count == 0 {
            return Err(SnapshotError::EmptyGroup { txid, offset: count_offset });
        }
        if group_count > GROUP_COINS_MAX {
            return Err(SnapshotError::GroupTooLarge { txid, offset: count_offset, group_count });
        }
        if group_count > coins_left {
            return Err(SnapshotError::CoinCountMismatch {
                txid,
                offset: count_offset,
                group_count,
                coins_left,
            });
        }
        self.start += reader.position();
        self.group = Some((txid, group_count));
        Ok(txid)
    }

    /// Core's checks of a decoded coin, and the key order.
    fn check_coin(
        &self,
        outpoint: OutPoint,
        coin: &Coin,
        offset: u64,
    ) -> Result<(), SnapshotError> {
        if coin.height() > self.base_height.to_u32() {
            let reason = BadCoinReason::AboveBase {
                height: coin.height(),
                base_height: self.base_height.to_u32(),
            };
            return Err(self.bad_coin(outpoint, offset, reason));
        }
        // Core: "Avoid integer wrap-around in coinstats.cpp:ApplyHash".
        if outpoint.vout == u32::MAX {
            return Err(self.bad_coin(outpoint, offset, BadCoinReason::OutputIndexMax));
        }
        if is_unspendable(coin.script_pubkey()) {
            return Err(self.bad_coin(outpoint, offset, BadCoinReason::Unspendable));
        }
        if let Some(previous) = self.previous {
            if key_order(&previous, &outpoint) != std::cmp::Ordering::Less {
                return Err(SnapshotError::OutOfOrder { outpoint, previous, offset });
            }
        }
        Ok(())
    }

    /// After the last coin: the file must end.
    fn check_end(&mut self) -> Result<(), SnapshotError> {
        self.fill(1)?;
        if self.end > self.start {
            return Err(SnapshotError::CoinsLeftOver {
                coin_count: self.metadata.coin_count,
                offset: self.offset(),
            });
        }
        Ok(())
    }

    fn bad_coin(&self, outpoint: OutPoint, offset: u64, reason: BadCoinReason) -> SnapshotError {
        SnapshotError::BadCoin { outpoint, offset, coins_read: self.coins_read, reason }
    }

    fn corrupt(&self, offset: u64, source: CoinDecodeError) -> SnapshotError {
        SnapshotError::CorruptCoin { offset, coins_read: self.coins_read, source }
    }

    /// File offset of the next unread byte.
    fn offset(&self) -> u64 {
        self.buffer_offset + self.start as u64
    }

    fn unread(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }

    /// Makes at least `bytes` unread bytes available, fewer only where the
    /// source ends.
    fn fill(&mut self, bytes: usize) -> Result<(), SnapshotError> {
        debug_assert!(bytes <= self.buffer.len());
        if self.end - self.start >= bytes || self.source_ended {
            return Ok(());
        }
        self.buffer.copy_within(self.start..self.end, 0);
        self.buffer_offset += self.start as u64;
        self.end -= self.start;
        self.start = 0;
        while self.end < bytes {
            match self.source.read(&mut self.buffer[self.end..]) {
                Ok(0) => {
                    self.source_ended = true;
                    break;
                }
                Ok(read) => self.end += read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(())
    }
}

/// Why one coin's record did not decode.
enum RecordError {
    /// Its output index.
    Bytes(DecodeError),
    /// The coin.
    Coin(CoinDecodeError),
}

/// A coin's record: its output index (compact size) and Core's coin
/// serialisation.
fn read_record(reader: &mut Reader<'_>) -> Result<(u32, Coin), RecordError> {
    let offset = reader.position();
    let vout = reader.read_compact_size().map_err(RecordError::Bytes)?;
    // A compact size is at most 2^25 (Core's `MAX_SIZE`): this cannot fail.
    let vout = u32::try_from(vout).map_err(|_| {
        RecordError::Bytes(DecodeError::CompactSizeTooLarge { offset, value: vout })
    })?;
    let coin = Coin::read(reader).map_err(RecordError::Coin)?;
    Ok((vout, coin))
}
