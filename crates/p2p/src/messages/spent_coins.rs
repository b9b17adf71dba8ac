//! BIP 455 (draft): `getbspent` asks a peer for the coins a block spent,
//! `bspent` answers with them, so a SwiftSync node can validate a block
//! without its UTXO set (the aggregate at the terminal height proves the
//! answers honest, BIP 457).
//!
//! - `getbspent`: the block hash (32 bytes) and `cutoff`, a 32-bit
//!   little-endian height: above zero, only coins created below it are
//!   wanted (the asker keeps younger ones itself).
//! - `bspent`: the block hash, a CompactSize count, then each coin: the
//!   index of its input among the block's inputs with the coinbase's left
//!   out (u32 LE), the height code `height << 1 | coinbase` (u32 LE; the
//!   draft says 32 bits and its predecessor little-endian), the script in
//!   the reconstructable form below, and the amount as
//!   `CompactSize(CompressAmount(value))`.
//! - Reconstructable script: a prefix byte, then `00` CompactSize length
//!   and the bytes (any script); `01` P2PKH's 20-byte hash; `02`/`03` a
//!   compressed P2PK key's x coordinate (the prefix is its parity byte);
//!   `04` an uncompressed P2PK key's 64 bytes; `05` P2SH's hash; `06`
//!   P2WSH's 32 bytes; `07` P2WPKH's 20; `08` P2TR's 32. The forms are
//!   byte templates: no key is checked to be on the curve, so every
//!   script maps to one encoding and back to itself.
//! - Support is announced with BIP 434's `feature blockspentcoinsv1` and
//!   data `0x00`.
//!
//! Decoding reads a stranger's bytes: the count is bounded by the most
//! inputs a block can hold, each script by the most a spendable output can
//! have (10,000 bytes: a longer one fails every script check, so no valid
//! block spends it, and Core never stores one as a coin), each amount by
//! `MAX_MONEY`, and an unknown script prefix is refused.

use ibex_primitives::amount::{compress_amount, decompress_amount};
use ibex_primitives::encode::{compact_size_len, write_compact_size, write_var_bytes};
use ibex_primitives::limits::SCRIPT_BYTES_MAX;
use ibex_primitives::{Amount, BlockHash, Height, SpentCoin, SpentCoinBuf};

use crate::messages::error::{Field, MessageError};
use crate::messages::wire::{LimitCheck, ListRule, PayloadReader};

/// The BIP 434 feature id that announces serving `bspent`.
pub const BLOCK_SPENT_COINS_FEATURE_ID: &[u8] = b"blockspentcoinsv1";
/// Its feature data (BIP 455: one zero byte).
pub const BLOCK_SPENT_COINS_FEATURE_DATA: &[u8] = &[0];

/// The most coins one `bspent` may list: the most inputs a block can hold
/// (4,000,000 weight units over the 164 of the smallest input, 41 bytes of
/// non-witness data).
pub const SPENT_COINS_PER_MESSAGE_MAX: usize = 4_000_000 / 164;

/// Fewest bytes a coin takes: index 4, height code 4, an empty script of
/// the unknown form 2, an amount 1.
const SPENT_COIN_BYTES_MIN: usize = 11;

const SPENT_COINS_LIST: ListRule = ListRule {
    field: Field::SpentCoins,
    limit: SPENT_COINS_PER_MESSAGE_MAX,
    check: LimitCheck::BeforeEntries,
    entry_bytes_min: SPENT_COIN_BYTES_MIN,
};

/// Script form prefixes (BIP 455 "Reconstructable Script Format").
const FORM_UNKNOWN: u8 = 0x00;
const FORM_P2PKH: u8 = 0x01;
const FORM_P2PK_EVEN: u8 = 0x02;
const FORM_P2PK_ODD: u8 = 0x03;
const FORM_P2PK_UNCOMPRESSED: u8 = 0x04;
const FORM_P2SH: u8 = 0x05;
const FORM_P2WSH: u8 = 0x06;
const FORM_P2WPKH: u8 = 0x07;
const FORM_P2TR: u8 = 0x08;

const OP_0: u8 = 0x00;
const OP_1: u8 = 0x51;
const OP_DUP: u8 = 0x76;
const OP_EQUAL: u8 = 0x87;
const OP_EQUALVERIFY: u8 = 0x88;
const OP_HASH160: u8 = 0xa9;
const OP_CHECKSIG: u8 = 0xac;

/// A `getbspent` request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetSpentCoins {
    /// The block whose spent coins are wanted.
    pub block_hash: BlockHash,
    /// Above zero: only coins created below this height.
    pub cutoff_height: u32,
}

impl GetSpentCoins {
    /// Appends the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.block_hash.0);
        out.extend_from_slice(&self.cutoff_height.to_le_bytes());
    }

    pub(crate) fn decode(reader: &mut PayloadReader<'_>) -> Result<GetSpentCoins, MessageError> {
        let block_hash = BlockHash(reader.array(Field::BlockHash)?);
        let cutoff_height = reader.u32(Field::CutoffHeight)?;
        Ok(GetSpentCoins { block_hash, cutoff_height })
    }

    /// Whether a coin created at `height` is wanted.
    pub fn wants(&self, height: Height) -> bool {
        self.cutoff_height == 0 || height.to_u32() < self.cutoff_height
    }
}

/// One coin of a `bspent`: the input that spent it and the coin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedSpentCoin {
    /// The input's place among the block's inputs, the coinbase's left out.
    pub input_index: u32,
    /// The coin it spent.
    pub coin: SpentCoinBuf,
}

/// A `bspent` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpentCoins {
    /// The block the coins were spent in.
    pub block_hash: BlockHash,
    /// The coins, in input order.
    pub coins: Vec<IndexedSpentCoin>,
}

impl SpentCoins {
    /// Appends the payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.block_hash.0);
        write_compact_size(out, self.coins.len() as u64);
        for coin in &self.coins {
            encode_spent_coin(coin.input_index, &coin.coin.as_spent_coin(), out);
        }
    }

    /// Bytes [`SpentCoins::encode`] appends, counted without encoding (a
    /// send queue measures every message it takes).
    pub fn encoded_bytes(&self) -> usize {
        let coins: usize = self
            .coins
            .iter()
            .map(|coin| {
                let value = coin.coin.value.to_sat().unsigned_abs();
                8 + reconstructable_script_bytes(&coin.coin.script_pubkey)
                    + compact_size_len(compress_amount(value))
            })
            .sum();
        32 + compact_size_len(self.coins.len() as u64) + coins
    }

    pub(crate) fn decode(reader: &mut PayloadReader<'_>) -> Result<SpentCoins, MessageError> {
        let block_hash = BlockHash(reader.array(Field::BlockHash)?);
        let coins = reader.list(SPENT_COINS_LIST, decode_spent_coin)?;
        Ok(SpentCoins { block_hash, coins })
    }
}

/// Appends one coin of a `bspent`.
pub fn encode_spent_coin(input_index: u32, coin: &SpentCoin<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(&input_index.to_le_bytes());
    let height_code = coin.height.to_u32() << 1 | u32::from(coin.is_coinbase);
    out.extend_from_slice(&height_code.to_le_bytes());
    encode_reconstructable_script(coin.script_pubkey, out);
    // A coin's value is in the money range, never negative.
    write_compact_size(out, compress_amount(coin.value.to_sat().unsigned_abs()));
}

fn decode_spent_coin(reader: &mut PayloadReader<'_>) -> Result<IndexedSpentCoin, MessageError> {
    let input_index = reader.u32(Field::InputIndex)?;
    let height_code = reader.u32(Field::HeightCode)?;
    let script_pubkey = decode_reconstructable_script(reader)?;
    let compressed = reader.compact_size_unbounded(Field::Amount)?;
    let value = decompress_amount(compressed)
        .and_then(|satoshis| i64::try_from(satoshis).ok())
        .and_then(|satoshis| Amount::from_sat(satoshis).ok())
        .ok_or(MessageError::InvalidValue {
            command: reader.command(),
            field: Field::Amount,
            value: compressed,
        })?;
    let coin = SpentCoinBuf {
        value,
        script_pubkey,
        height: Height::new(height_code >> 1),
        is_coinbase: height_code & 1 == 1,
    };
    Ok(IndexedSpentCoin { input_index, coin })
}

/// The short form of `script` (its prefix and the bytes kept), or `None`
/// when it fits no template and goes whole.
fn short_form(script: &[u8]) -> Option<(u8, &[u8])> {
    let form = match script {
        [OP_DUP, OP_HASH160, 20, hash @ .., OP_EQUALVERIFY, OP_CHECKSIG] if hash.len() == 20 => {
            (FORM_P2PKH, hash)
        }
        [33, parity @ (0x02 | 0x03), x @ .., OP_CHECKSIG] if x.len() == 32 => (*parity, x),
        [65, 0x04, key @ .., OP_CHECKSIG] if key.len() == 64 => (FORM_P2PK_UNCOMPRESSED, key),
        [OP_HASH160, 20, hash @ .., OP_EQUAL] if hash.len() == 20 => (FORM_P2SH, hash),
        [OP_0, 32, program @ ..] if program.len() == 32 => (FORM_P2WSH, program),
        [OP_0, 20, program @ ..] if program.len() == 20 => (FORM_P2WPKH, program),
        [OP_1, 32, key @ ..] if key.len() == 32 => (FORM_P2TR, key),
        _ => return None,
    };
    Some(form)
}

/// Appends `script` in BIP 455's reconstructable form.
pub fn encode_reconstructable_script(script: &[u8], out: &mut Vec<u8>) {
    match short_form(script) {
        Some((form, payload)) => {
            out.push(form);
            out.extend_from_slice(payload);
        }
        None => {
            out.push(FORM_UNKNOWN);
            write_var_bytes(out, script);
        }
    }
}

/// Bytes [`encode_reconstructable_script`] appends for `script`.
fn reconstructable_script_bytes(script: &[u8]) -> usize {
    match short_form(script) {
        Some((_, payload)) => 1 + payload.len(),
        None => 1 + compact_size_len(script.len() as u64) + script.len(),
    }
}

/// Reads a script in the reconstructable form and expands it.
fn decode_reconstructable_script(reader: &mut PayloadReader<'_>) -> Result<Vec<u8>, MessageError> {
    let form = reader.u8(Field::ScriptForm)?;
    let (prefix, payload_bytes, suffix): (&[u8], usize, &[u8]) = match form {
        FORM_UNKNOWN => {
            let length_bytes = reader.compact_size(Field::Script)?;
            if length_bytes > SCRIPT_BYTES_MAX as u64 {
                return Err(MessageError::TooLong {
                    command: reader.command(),
                    field: Field::Script,
                    length_bytes,
                    limit_bytes: SCRIPT_BYTES_MAX,
                });
            }
            // At most SCRIPT_BYTES_MAX, a usize.
            return Ok(reader.bytes(length_bytes as usize, Field::Script)?.to_vec());
        }
        FORM_P2PKH => (&[OP_DUP, OP_HASH160, 20], 20, &[OP_EQUALVERIFY, OP_CHECKSIG]),
        FORM_P2PK_EVEN => (&[33, 0x02], 32, &[OP_CHECKSIG]),
        FORM_P2PK_ODD => (&[33, 0x03], 32, &[OP_CHECKSIG]),
        FORM_P2PK_UNCOMPRESSED => (&[65, 0x04], 64, &[OP_CHECKSIG]),
        FORM_P2SH => (&[OP_HASH160, 20], 20, &[OP_EQUAL]),
        FORM_P2WSH => (&[OP_0, 32], 32, &[]),
        FORM_P2WPKH => (&[OP_0, 20], 20, &[]),
        FORM_P2TR => (&[OP_1, 32], 32, &[]),
        unknown => {
            return Err(MessageError::InvalidValue {
                command: reader.command(),
                field: Field::ScriptForm,
                value: u64::from(unknown),
            })
        }
    };
    let payload = reader.bytes(payload_bytes, Field::Script)?;
    let mut script = Vec::with_capacity(prefix.len() + payload_bytes + suffix.len());
    script.extend_from_slice(prefix);
    script.extend_from_slice(payload);
    script.extend_from_slice(suffix);
    Ok(script)
}

#[cfg(test)]
mod tests;
