//! The UTXO-set statistics and hashes of Core's `gettxoutsetinfo`
//! (`src/kernel/coinstats.cpp`), independent of any database.
//!
//! - `hash_serialized_3`: double SHA-256 over every coin's [`serialize_coin`]
//!   bytes, in Core's database order (see [`TxOutSetHasher`]). Order matters.
//! - `muhash`: [`crate::muhash::MuHash3072`] of the same per-coin bytes. Order does not matter,
//!   and coins can be removed, so [`RunningTxOutSetStats`] keeps it per block.
//! - `txouts` (coins), `bogosize` (50 + script bytes per coin), `total_amount`
//!   (satoshis, `None` once the sum leaves `i64` as Core's `CheckedAdd` does) and
//!   `transactions` (distinct txids among the coins).
//!
//! # Napkin math
//! Serialising a coin is ~70-80 bytes; hashing ~180M mainnet coins is ~14 GB
//! through SHA-256, measured at 0.1-0.2 µs a coin (`docs/benchmarks.md`), so
//! ~20-35 s of CPU: reading the coins database is the bottleneck for
//! `hash_serialized_3`. MuHash costs ~2 µs a coin instead (see
//! [`crate::muhash`]), ~6 minutes for the whole set on one core.

use crate::amount::Amount;
use crate::encode::write_compact_size;
use crate::height::Height;
use crate::limits::SCRIPT_BYTES_MAX;
use crate::spent_coin::SpentCoin;
use crate::transaction::OutPoint;

/// `OP_RETURN`: an output script starting with it is provably unspendable.
const OP_RETURN: u8 = 0x6a;
/// Core's `GetBogoSize` without the script: txid 32, vout 4, height and coinbase
/// flag 4, amount 8, script length 2.
pub const BOGO_SIZE_FIXED_BYTES: u64 = 32 + 4 + 4 + 8 + 2;

/// One unspent output as Core's coins database holds it: a
/// [`SpentCoin`]'s fields with the outpoint that finds it, which the hashes
/// cover ([`Coin::from_spent`] and [`Coin::spent_coin`] convert).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coin<'a> {
    /// Where the output is.
    pub outpoint: OutPoint,
    /// Height of the block that created it.
    pub height: Height,
    /// Whether a coinbase transaction created it.
    pub is_coinbase: bool,
    /// Its value.
    pub value: Amount,
    /// Its locking script.
    pub script_pubkey: &'a [u8],
}

impl<'a> Coin<'a> {
    /// The coin `coin` at `outpoint`.
    #[inline]
    pub fn from_spent(outpoint: OutPoint, coin: SpentCoin<'a>) -> Coin<'a> {
        Coin {
            outpoint,
            height: coin.height,
            is_coinbase: coin.is_coinbase,
            value: coin.value,
            script_pubkey: coin.script_pubkey,
        }
    }

    /// The coin without its outpoint, as an input spending it sees it.
    #[inline]
    pub fn spent_coin(&self) -> SpentCoin<'a> {
        SpentCoin {
            value: self.value,
            script_pubkey: self.script_pubkey,
            height: self.height,
            is_coinbase: self.is_coinbase,
        }
    }
}

/// Core's `CScript::IsUnspendable`: an `OP_RETURN` first byte or more than
/// [`SCRIPT_BYTES_MAX`] bytes. Core never adds such outputs to the UTXO set.
pub fn is_unspendable(script_pubkey: &[u8]) -> bool {
    script_pubkey.first() == Some(&OP_RETURN) || script_pubkey.len() > SCRIPT_BYTES_MAX
}

/// Core's `GetBogoSize`: a database-independent size of one coin.
pub fn bogo_size(script_pubkey: &[u8]) -> u64 {
    BOGO_SIZE_FIXED_BYTES + script_pubkey.len() as u64
}

/// Core's `TxOutSer`: outpoint (txid, vout LE), `height << 1 | coinbase` as u32
/// LE (the top bit of the height is shifted out, as in Core), value as i64 LE,
/// then the script with its compact-size length. Appends to `out`.
pub fn serialize_coin(coin: &Coin<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(&coin.outpoint.to_bytes());
    let code = (coin.height.to_u32() << 1) | u32::from(coin.is_coinbase);
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&coin.value.to_sat().to_le_bytes());
    write_compact_size(out, coin.script_pubkey.len() as u64);
    out.extend_from_slice(coin.script_pubkey);
}

mod hasher;
mod running;
mod serialized;

pub use hasher::{CoinOrderError, TxOutSetHashType, TxOutSetHasher, TxOutSetStats};
pub use running::RunningTxOutSetStats;
pub use serialized::SerializedCoins;

#[cfg(test)]
mod tests;
