//! The whole-set walk of `gettxoutsetinfo` (Core's `ComputeUTXOStats`).

use super::serialized::starts_transaction;
use super::{bogo_size, serialize_coin, Coin, SerializedCoins};
use crate::hash::{Hash256, Sha256dWriter};
use crate::muhash::MuHash3072;
use crate::transaction::OutPoint;

/// Which hash `gettxoutsetinfo` computes (its `hash_type` argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxOutSetHashType {
    /// `hash_serialized_3`: double SHA-256 of the coins in database order.
    HashSerialized3,
    /// `muhash`: the order-independent [`MuHash3072`] digest.
    MuHash,
    /// Statistics only.
    None,
}

/// A coin given out of database order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("coin {next_txid}:{next_vout} given after {previous_txid}:{previous_vout}, out of database order")]
pub struct CoinOrderError {
    /// Txid of the coin given before.
    pub previous_txid: crate::hash::Txid,
    /// Output index of the coin given before.
    pub previous_vout: u32,
    /// Txid of the coin out of order.
    pub next_txid: crate::hash::Txid,
    /// Output index of the coin out of order.
    pub next_vout: u32,
}

/// What `gettxoutsetinfo` reports about a set of coins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxOutSetStats {
    /// The hash computed.
    pub hash_type: TxOutSetHashType,
    /// `hash_serialized_3` or `muhash` per `hash_type`; `None` for
    /// [`TxOutSetHashType::None`].
    pub hash: Option<Hash256>,
    /// Distinct txids among the coins.
    pub transactions: u64,
    /// Coins.
    pub txouts: u64,
    /// Sum of [`bogo_size`] over the coins.
    pub bogosize: u64,
    /// Sum of the values in satoshis; `None` if it overflowed `i64`.
    pub total_amount: Option<i64>,
}

enum HashState {
    Serialized(Sha256dWriter),
    MuHash(Box<MuHash3072>),
    None,
}

/// Walks a coin set in Core's database order and computes its statistics and
/// hash, exactly as `gettxoutsetinfo` does.
///
/// **Order.** Coins must come sorted by txid in internal byte order, ascending
/// byte by byte (LevelDB's order of the `'C' || txid || VARINT(vout)` keys),
/// then by output index ascending as a number. Core groups a txid's coins in a
/// `std::map<uint32_t, Coin>` before hashing them, so within a txid the order is
/// numeric even where the database's VARINT keys are not (indices of 16,512 and
/// more sort before smaller ones there). This is [`OutPoint`]'s `Ord`. Out of
/// order coins are refused: `hash_serialized_3` would differ, and
/// `transactions` counts txid changes.
pub struct TxOutSetHasher {
    state: HashState,
    previous: Option<OutPoint>,
    stats: TxOutSetStats,
    buffer: Vec<u8>,
}

impl TxOutSetHasher {
    /// An empty walk computing `hash_type`.
    pub fn new(hash_type: TxOutSetHashType) -> Self {
        let state = match hash_type {
            TxOutSetHashType::HashSerialized3 => HashState::Serialized(Sha256dWriter::new()),
            TxOutSetHashType::MuHash => HashState::MuHash(Box::default()),
            TxOutSetHashType::None => HashState::None,
        };
        let stats = TxOutSetStats {
            hash_type,
            hash: None,
            transactions: 0,
            txouts: 0,
            bogosize: 0,
            total_amount: Some(0),
        };
        Self { state, previous: None, stats, buffer: Vec::with_capacity(128) }
    }

    /// Adds the next coin in database order.
    pub fn add_coin(&mut self, coin: &Coin<'_>) -> Result<(), CoinOrderError> {
        let new_transaction = starts_transaction(self.previous, coin.outpoint)?;
        self.previous = Some(coin.outpoint);
        self.count(coin, new_transaction);
        self.buffer.clear();
        match &mut self.state {
            HashState::Serialized(writer) => {
                serialize_coin(coin, &mut self.buffer);
                writer.update(&self.buffer);
            }
            HashState::MuHash(muhash) => {
                serialize_coin(coin, &mut self.buffer);
                muhash.insert(&self.buffer);
            }
            HashState::None => {}
        }
        Ok(())
    }

    /// Adds a run of coins serialised elsewhere, which must follow the
    /// last coin added in database order: the same statistics and hash as
    /// adding its coins one by one.
    pub fn add_serialized(&mut self, coins: &SerializedCoins) -> Result<(), CoinOrderError> {
        let Some((first, last)) = coins.bounds() else { return Ok(()) };
        let continues_transaction = !starts_transaction(self.previous, first)?;
        self.previous = Some(last);
        let stats = &mut self.stats;
        stats.transactions += coins.transactions - u64::from(continues_transaction);
        stats.txouts += coins.txouts;
        stats.bogosize += coins.bogosize;
        stats.total_amount = match (stats.total_amount, coins.total_amount) {
            (Some(total), Some(run)) => total.checked_add(run),
            _ => None,
        };
        match &mut self.state {
            HashState::Serialized(writer) => writer.update(coins.bytes()),
            HashState::MuHash(muhash) => coins.coins().for_each(|coin| muhash.insert(coin)),
            HashState::None => {}
        }
        Ok(())
    }

    fn count(&mut self, coin: &Coin<'_>, new_transaction: bool) {
        let stats = &mut self.stats;
        stats.transactions += u64::from(new_transaction);
        stats.txouts += 1;
        stats.bogosize += bogo_size(coin.script_pubkey);
        stats.total_amount =
            stats.total_amount.and_then(|total| total.checked_add(coin.value.to_sat()));
    }

    /// The statistics and hash of every coin added.
    pub fn finish(self) -> TxOutSetStats {
        let hash = match self.state {
            HashState::Serialized(writer) => Some(Hash256(writer.finalize())),
            HashState::MuHash(muhash) => Some(muhash.finalize()),
            HashState::None => None,
        };
        TxOutSetStats { hash, ..self.stats }
    }
}
