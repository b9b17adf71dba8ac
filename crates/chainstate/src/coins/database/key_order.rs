//! The database's key order for a flush's writes: a flush table must
//! hold its keys sorted, and the writes point into the UTXO maps, in hash
//! order ([`sort_in_key_order`] has the napkin math).

use ibex_primitives::OutPoint;

use crate::coins::coin::{Coin, CoinKey};

/// A coin write (`Some`) or erasure (`None`) of a flush.
pub type CoinWrite<'a> = (&'a OutPoint, Option<&'a Coin>);

/// The database's key order of two outpoints (`'C' || txid ||
/// VARINT(vout)`): by transaction id, then by the encoded output index
/// (Core's VARINT does not sort as the numbers do past 16,511).
pub fn key_order(left: &OutPoint, right: &OutPoint) -> std::cmp::Ordering {
    left.txid.0.cmp(&right.txid.0).then_with(|| {
        if left.vout == right.vout {
            return std::cmp::Ordering::Equal;
        }
        CoinKey::new(left).as_ref().cmp(CoinKey::new(right).as_ref())
    })
}

/// A coin write with a number that sorts nearly as its key does: `'C'`, the
/// first ten bytes of the transaction id and the output index's VARINT
/// (five bytes at most, zero-padded: the VARINT is prefix-free, so padded
/// numbers compare as the bytes do).
pub type KeyedCoinWrite<'a> = (u128, CoinWrite<'a>);

/// Bytes of the transaction id in a [`KeyedCoinWrite`]'s number.
const SORT_TXID_BYTES: usize = 10;

/// `write` with its sort number, for [`sort_in_key_order`].
pub fn keyed(write: CoinWrite<'_>) -> KeyedCoinWrite<'_> {
    let key = CoinKey::new(write.0);
    let key = key.padded_bytes();
    let mut number = [0u8; 16];
    number[..1 + SORT_TXID_BYTES].copy_from_slice(&key[..1 + SORT_TXID_BYTES]);
    number[1 + SORT_TXID_BYTES..].copy_from_slice(&key[33..38]);
    (u128::from_be_bytes(number), write)
}

/// Sorts `writes` in key order ([`key_order`]).
///
/// # Napkin math
/// The writes point into the UTXO maps, scattered in memory: a comparison
/// through the pointers is a cache miss (~100 ns), ~20 a write for a sort,
/// which took 9 s of the flush thread over an import. The
/// inline numbers decide every comparison but those between transactions
/// whose ids share their first ten bytes (a chance of 2^-80 a pair, or
/// made on purpose): a pass over the sorted writes finds those runs and
/// sorts them again through the pointers.
pub fn sort_in_key_order(writes: &mut [KeyedCoinWrite<'_>]) {
    writes.sort_unstable_by_key(|(number, _)| *number);
    let prefix_of = |number: u128| number >> 40;
    let mut start = 0;
    while start < writes.len() {
        let prefix = prefix_of(writes[start].0);
        let mut end = start + 1;
        let mut one_transaction = true;
        while end < writes.len() && prefix_of(writes[end].0) == prefix {
            one_transaction &= writes[end].1 .0.txid == writes[start].1 .0.txid;
            end += 1;
        }
        if !one_transaction {
            writes[start..end]
                .sort_unstable_by(|(_, (left, _)), (_, (right, _))| key_order(left, right));
        }
        start = end;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use ibex_primitives::Txid;

    use super::*;

    /// Outpoints whose keys are hard to sort: output indexes across each
    /// VARINT length (127/128, 16,511/16,512), transaction ids equal in
    /// their first ten bytes and different after, and ordinary ones.
    pub(in crate::coins::database) fn awkward_outpoints() -> Vec<OutPoint> {
        let mut outpoints = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for transaction in 0..40u64 {
            let mut txid = [0u8; 32];
            for chunk in txid.chunks_mut(8) {
                chunk.copy_from_slice(&next().to_le_bytes());
            }
            if transaction % 3 == 0 {
                // The first ten bytes of the transaction before (one run).
                txid[..10].fill(0x5a);
            }
            for vout in [0, 1, 127, 128, 255, 16_511, 16_512, 2_113_663, 2_113_664, u32::MAX] {
                outpoints.push(OutPoint { txid: Txid(txid), vout });
            }
        }
        outpoints
    }

    #[test]
    fn writes_sort_as_their_keys_do() {
        let outpoints = awkward_outpoints();
        let mut writes: Vec<KeyedCoinWrite<'_>> =
            outpoints.iter().rev().map(|outpoint| keyed((outpoint, None))).collect();
        sort_in_key_order(&mut writes);
        let sorted: Vec<CoinKey> =
            writes.iter().map(|(_, (outpoint, _))| CoinKey::new(outpoint)).collect();
        let mut expected: Vec<CoinKey> = outpoints.iter().map(CoinKey::new).collect();
        expected.sort_by(|left, right| left.as_ref().cmp(right.as_ref()));
        assert_eq!(sorted, expected);
        // The VARINT's order is not the numbers' past 16,511.
        let low = OutPoint { txid: Txid([1; 32]), vout: 16_511 };
        let high = OutPoint { txid: Txid([1; 32]), vout: 16_512 };
        assert_eq!(key_order(&low, &high), std::cmp::Ordering::Greater);
    }
}
