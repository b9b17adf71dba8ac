//! `gettxoutsetinfo` over the coins database: the walk of Core's
//! `ComputeUTXOStats`, in Core's order (txid bytes ascending, then output
//! index ascending as a number; the database's VARINT keys order indices
//! of 16,512 and above differently, so each txid's coins are gathered and
//! sorted before hashing).

use ibex_primitives::txoutset::{Coin as SetCoin, TxOutSetHashType, TxOutSetHasher, TxOutSetStats};
use ibex_primitives::{OutPoint, Txid};

use crate::coin::Coin;
use crate::database::CoinsDatabase;
use crate::error::ChainstateError;

/// Statistics and hash of every coin in `database` (flush the cache first).
pub fn txoutset_stats(
    database: &CoinsDatabase,
    hash_type: TxOutSetHashType,
) -> Result<TxOutSetStats, ChainstateError> {
    let mut hasher = TxOutSetHasher::new(hash_type);
    let mut group: Vec<(OutPoint, Coin)> = Vec::new();
    let mut group_txid: Option<Txid> = None;
    for item in database.iter_coins() {
        let (outpoint, coin) = item?;
        if group_txid != Some(outpoint.txid) {
            add_group(&mut hasher, &mut group)?;
            group_txid = Some(outpoint.txid);
        }
        group.push((outpoint, coin));
    }
    add_group(&mut hasher, &mut group)?;
    Ok(hasher.finish())
}

/// Hashes one txid's coins in output index order and empties `group`.
fn add_group(
    hasher: &mut TxOutSetHasher,
    group: &mut Vec<(OutPoint, Coin)>,
) -> Result<(), ChainstateError> {
    group.sort_unstable_by_key(|(outpoint, _)| outpoint.vout);
    for (outpoint, coin) in group.drain(..) {
        let set_coin = SetCoin {
            outpoint,
            height: coin.height(),
            is_coinbase: coin.is_coinbase(),
            value: coin.amount(),
            script_pubkey: coin.script_pubkey(),
        };
        hasher.add_coin(&set_coin).map_err(|source| ChainstateError::CoinOrder { source })?;
    }
    Ok(())
}
