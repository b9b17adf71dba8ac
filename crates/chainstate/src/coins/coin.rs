//! The coin (an unspent output with its height and coinbase flag) and its
//! database encoding, byte for byte Bitcoin Core's.
//!
//! - Value: `VARINT(height * 2 + is_coinbase)`, `VARINT(compress_amount(value))`,
//!   compressed script (see [`crate::coins::compress`]).
//! - Key: `'C' || txid (32 bytes, internal order) || VARINT(vout)`, Core's
//!   `CoinEntry`, so RocksDB's bytewise order is Core's LevelDB order and
//!   `hash_serialized_3` can walk the database as Core does.
//!
//! A typical P2WPKH coin is 1-4 bytes of height code, 1-5 of amount and 23 of
//! script: ~30 bytes on disk against 38 bytes for a plain `CTxOut` + height.

use ibex_primitives::encode::{write_varint, Reader};
use ibex_primitives::{Amount, Height, OutPoint, PackedAmount, SpentCoin, Txid};

use crate::coins::coin_script::CoinScript;
use crate::coins::compress::{
    compress_amount, read_amount, read_script, read_script_into, write_script,
};
use crate::error::{ChainstateError, CoinDecodeError};

/// Core's `DB_COIN` key prefix.
pub const COIN_KEY_PREFIX: u8 = b'C';
/// Largest height a coin can carry: Core packs it in 31 bits.
pub const COIN_HEIGHT_MAX: u32 = (1 << 31) - 1;
/// Longest coin key: prefix, txid and a 5-byte VARINT of a 32-bit index.
pub const COIN_KEY_BYTES_MAX: usize = 1 + 32 + 5;

/// An unspent transaction output as the chainstate keeps it: a
/// [`SpentCoin`]'s fields packed for the cache (the amount in halves, the
/// script inline when short, the coinbase flag beside the cache's bits), and
/// read back as one with [`Coin::as_spent_coin`] when an input spends it.
///
/// 48 bytes in memory, alignment 4; scripts over `INLINE_SCRIPT_BYTES_MAX` (34) bytes add a
/// heap allocation (the crate's `coin_script` module). Equality, `Debug` and
/// the encoding see the output, its height and coinbase flag only, never
/// the coins cache's bits.
#[derive(Clone)]
pub struct Coin {
    /// The value, in halves of alignment 4 so that a cache entry with its
    /// outpoint packs into 84 bytes instead of 88.
    amount: PackedAmount,
    script_pubkey: CoinScript,
    height: u32,
    /// [`COINBASE_BIT`], and above it the coins cache's flags for the entry
    /// that holds the coin ([`Coin::cache_bits`]).
    bits: u8,
}

/// The bit of [`Coin`]'s `bits` that says a coinbase made the coin.
const COINBASE_BIT: u8 = 1;
/// Largest value [`Coin::set_cache_bits`] takes: the bits above
/// [`COINBASE_BIT`].
pub(crate) const CACHE_BITS_MAX: u8 = u8::MAX >> 1;

impl PartialEq for Coin {
    fn eq(&self, other: &Coin) -> bool {
        self.amount() == other.amount()
            && self.script_pubkey == other.script_pubkey
            && self.height == other.height
            && self.is_coinbase() == other.is_coinbase()
    }
}

impl Eq for Coin {}

impl std::fmt::Debug for Coin {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Coin")
            .field("amount", &self.amount())
            .field("script_pubkey", &self.script_pubkey)
            .field("height", &self.height)
            .field("is_coinbase", &self.is_coinbase())
            .finish()
    }
}

impl Coin {
    /// The coin as the rules, sighash and RPC read it (borrows the script).
    #[inline]
    pub fn as_spent_coin(&self) -> SpentCoin<'_> {
        SpentCoin {
            value: self.amount(),
            script_pubkey: self.script_pubkey(),
            height: Height::new(self.height),
            is_coinbase: self.is_coinbase(),
        }
    }

    /// A coin created at `height`; fails when the height exceeds 31 bits.
    pub fn new(
        amount: Amount,
        script_pubkey: impl AsRef<[u8]>,
        height: u32,
        is_coinbase: bool,
    ) -> Result<Coin, ChainstateError> {
        if height > COIN_HEIGHT_MAX {
            return Err(ChainstateError::HeightOutOfRange { height });
        }
        let script_pubkey = CoinScript::new(script_pubkey.as_ref());
        let amount = PackedAmount::from(amount);
        Ok(Coin { amount, script_pubkey, height, bits: u8::from(is_coinbase) })
    }

    /// The output's value.
    pub fn amount(&self) -> Amount {
        Amount::from(self.amount)
    }

    /// The output's locking script.
    pub fn script_pubkey(&self) -> &[u8] {
        self.script_pubkey.as_slice()
    }

    /// Height of the block that created the coin.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Whether a coinbase transaction created the coin.
    pub fn is_coinbase(&self) -> bool {
        self.bits & COINBASE_BIT != 0
    }

    /// An empty coin (no value, no script, height 0) that only carries
    /// cache bits: what a spent entry of the coins cache holds.
    pub(crate) fn placeholder(cache_bits: u8) -> Coin {
        let script_pubkey = CoinScript::empty();
        let mut coin = Coin { amount: PackedAmount::default(), script_pubkey, height: 0, bits: 0 };
        coin.set_cache_bits(cache_bits);
        coin
    }

    /// The coins cache's bits for the entry holding this coin
    /// ([`crate::coins::cache`]): kept in the byte beside the coinbase flag, which
    /// would otherwise be padding, so that an entry is the coin alone.
    pub(crate) fn cache_bits(&self) -> u8 {
        self.bits >> 1
    }

    /// Sets the bits [`Coin::cache_bits`] returns (at most [`CACHE_BITS_MAX`]).
    pub(crate) fn set_cache_bits(&mut self, cache_bits: u8) {
        assert!(cache_bits <= CACHE_BITS_MAX, "cache bits {cache_bits:#x} do not fit");
        self.bits = (self.bits & COINBASE_BIT) | (cache_bits << 1);
    }

    /// Heap bytes the script takes (none when inline), counted like Core's
    /// `MallocUsage` (rounded up to 16 with a 16-byte header) so the cache
    /// limit reflects the allocator's real cost.
    pub fn heap_bytes(&self) -> usize {
        if self.script_pubkey.is_on_heap() {
            heap_bytes_for(self.script_pubkey.as_slice().len())
        } else {
            0
        }
    }

    /// Appends Core's serialisation of the coin.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let code = u64::from(self.height) * 2 + u64::from(self.is_coinbase());
        write_varint(out, code);
        write_varint(out, compress_amount(self.amount().to_sat() as u64));
        write_script(out, self.script_pubkey());
    }

    /// Core's serialisation of the coin.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.script_pubkey().len());
        self.encode_into(&mut out);
        out
    }

    /// Decodes Core's serialisation; the whole input must be used.
    pub fn decode(bytes: &[u8]) -> Result<Coin, CoinDecodeError> {
        let mut reader = Reader::new(bytes);
        let coin = Coin::read(&mut reader)?;
        reader.finish()?;
        Ok(coin)
    }

    /// Decodes Core's serialisation from the front of `reader`, leaving the
    /// bytes after it (a UTXO snapshot holds coins one after another).
    pub fn read(reader: &mut Reader<'_>) -> Result<Coin, CoinDecodeError> {
        let code = reader.read_varint()?;
        let code =
            u32::try_from(code).map_err(|_| CoinDecodeError::HeightCodeOutOfRange { code })?;
        let satoshis = read_amount(reader)?;
        let amount = Amount::from_sat(satoshis)
            .map_err(|_| CoinDecodeError::AmountOutOfRange { compressed: satoshis as u64 })?;
        let script_pubkey = CoinScript::new(&read_script(reader)?);
        let amount = PackedAmount::from(amount);
        Ok(Coin { amount, script_pubkey, height: code >> 1, bits: (code & 1) as u8 })
    }
}

/// A coin's fields as Core serialises them, decoded without building a
/// [`Coin`]: the whole-set walks read every coin once and keep none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoinFields {
    /// `height * 2 + is_coinbase`, Core's code (the hashes' `TxOutSer` code).
    pub height_code: u32,
    /// The value, checked to be within `MAX_MONEY`.
    pub amount: Amount,
}

/// Decodes Core's serialisation of a coin, the whole of `bytes`, its script
/// into `script` (cleared first): [`Coin::decode`]'s checks, without the
/// allocations.
pub fn decode_coin_fields(
    bytes: &[u8],
    script: &mut Vec<u8>,
) -> Result<CoinFields, CoinDecodeError> {
    let mut reader = Reader::new(bytes);
    let code = reader.read_varint()?;
    let height_code =
        u32::try_from(code).map_err(|_| CoinDecodeError::HeightCodeOutOfRange { code })?;
    let satoshis = read_amount(&mut reader)?;
    let amount = Amount::from_sat(satoshis)
        .map_err(|_| CoinDecodeError::AmountOutOfRange { compressed: satoshis as u64 })?;
    read_script_into(&mut reader, script)?;
    reader.finish()?;
    Ok(CoinFields { height_code, amount })
}

/// Core's `MallocUsage` for an allocation of `bytes` (0 for none).
pub fn heap_bytes_for(bytes: usize) -> usize {
    if bytes == 0 {
        0
    } else {
        (bytes + 31) & !15
    }
}

/// A coin key, stored inline (no allocation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoinKey {
    bytes: [u8; COIN_KEY_BYTES_MAX],
    length: u8,
}

impl CoinKey {
    /// The key of `outpoint`: `'C' || txid || VARINT(vout)`.
    pub fn new(outpoint: &OutPoint) -> CoinKey {
        let mut bytes = [0u8; COIN_KEY_BYTES_MAX];
        bytes[0] = COIN_KEY_PREFIX;
        bytes[1..33].copy_from_slice(outpoint.txid.as_bytes());
        // Core's VARINT without allocating: base-128 digits, least significant
        // first, each higher digit less one, then reversed.
        let mut digits = [0u8; 5];
        let mut digit_count = 0;
        let mut value = outpoint.vout;
        loop {
            let continuation = if digit_count == 0 { 0 } else { 0x80 };
            digits[digit_count] = (value & 0x7f) as u8 | continuation;
            digit_count += 1;
            if value <= 0x7f {
                break;
            }
            value = (value >> 7) - 1;
        }
        for (slot, digit) in bytes[33..].iter_mut().zip(digits[..digit_count].iter().rev()) {
            *slot = *digit;
        }
        CoinKey { bytes, length: (33 + digit_count) as u8 }
    }

    /// The key's bytes followed by zeros, `COIN_KEY_BYTES_MAX` in all.
    pub fn padded_bytes(&self) -> &[u8; COIN_KEY_BYTES_MAX] {
        &self.bytes
    }

    /// Decodes a key read from the database.
    pub fn decode(bytes: &[u8]) -> Result<OutPoint, CoinDecodeError> {
        let mut reader = Reader::new(bytes);
        if reader.read_u8()? != COIN_KEY_PREFIX {
            return Err(CoinDecodeError::NotCoinKey);
        }
        let txid = Txid(*reader.take_array::<32>()?);
        let vout = reader.read_varint()?;
        let vout = u32::try_from(vout).map_err(|_| CoinDecodeError::VoutOutOfRange { vout })?;
        reader.finish()?;
        Ok(OutPoint { txid, vout })
    }
}

impl AsRef<[u8]> for CoinKey {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.length)]
    }
}
