//! The `utxo-heavy` profile's wallet: tens of millions of coins in compact
//! records, kept by the height of the block that created them, so that a
//! spend can ask for a coin of a given age.
//!
//! Napkin math: 25 M coins of 24 bytes are 600 MB, plus one txid (32 bytes)
//! per transaction that created a kept coin (a few million transactions,
//! ~100 MB): a full `Coin` of 64 bytes would need 1.6 GB. A pick is O(1):
//! the bucket of the wanted height (or the nearest one holding coins, a
//! scan over at most a few thousand heights), a random index, a
//! `swap_remove`. Coins of at least [`TREASURY_VALUE_MIN`] (coinbases, an
//! exchange's change, large sweeps) are kept apart as the treasury that
//! funds batch payouts, newest first, like a hot wallet spending its change.

use std::collections::VecDeque;

use ibex_primitives::{Amount, OutPoint, Txid};

use crate::coin::{Coin, COINBASE_MATURITY_BLOCKS};
use crate::random::DeterministicRng;
use crate::script_kind::ScriptKind;
use crate::spend_age::SpendAgeModel;

/// Coins worth this much or more fund batch payouts instead of waiting for
/// ordinary spends.
pub const TREASURY_VALUE_MIN: Amount = Amount::from_sat_u32(5_000_000);
/// A bucket whose length falls under a quarter of its capacity gives the
/// rest back, once its capacity is at least this many coins.
const BUCKET_SHRINK_CAPACITY_MIN: usize = 256;

/// A kept coin: its transaction is an index into the txid table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CompactCoin {
    value: Amount,
    transaction: u32,
    vout: u32,
    key_index: u32,
    kind: ScriptKind,
    is_coinbase: bool,
}

const _: () = assert!(std::mem::size_of::<CompactCoin>() == 24);

/// What a consolidation sweeps: coins created at least `age_min_blocks`
/// ago, starting `start_age_blocks` back and walking to older blocks, then
/// younger ones; each worth at most `value_max`; at most `count` of them
/// and at most `weight_max` of signed inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepRequest {
    /// Age of the first block swept.
    pub start_age_blocks: u32,
    /// Youngest coin taken.
    pub age_min_blocks: u32,
    /// Coins wanted.
    pub count: usize,
    /// Largest coin taken.
    pub value_max: Amount,
    /// Weight the signed inputs may take.
    pub weight_max: usize,
}

/// The coins of a `utxo-heavy` chain.
#[derive(Debug, Clone)]
pub struct AgedCoins {
    model: SpendAgeModel,
    /// Txid of every transaction that created a kept coin, by index.
    txids: Vec<Txid>,
    /// Kept coins by the height that created them.
    by_height: Vec<Vec<CompactCoin>>,
    /// Coins in `by_height`.
    kept_count: usize,
    /// No bucket below this height holds a coin.
    oldest_height: usize,
    treasury: Vec<Coin>,
    maturing: VecDeque<Coin>,
    dust_count: usize,
    /// Height of the block being planned.
    next_height: u32,
}

impl AgedCoins {
    /// No coins yet; spends will follow `model`.
    pub fn new(model: SpendAgeModel) -> AgedCoins {
        AgedCoins {
            model,
            txids: Vec::new(),
            by_height: Vec::new(),
            kept_count: 0,
            oldest_height: 0,
            treasury: Vec::new(),
            maturing: VecDeque::new(),
            dust_count: 0,
            next_height: 1,
        }
    }

    /// Every coin: the chain's UTXO set size.
    pub fn coin_count(&self) -> usize {
        self.kept_count + self.treasury.len() + self.maturing.len() + self.dust_count
    }

    /// Coins that may be spent now.
    pub fn spendable_count(&self) -> usize {
        self.kept_count + self.treasury.len()
    }

    /// Coins in the treasury.
    pub fn treasury_count(&self) -> usize {
        self.treasury.len()
    }

    /// Coins left unspent for good (still in the UTXO set).
    pub fn dust_count(&self) -> usize {
        self.dust_count
    }

    /// Records `count` taken coins as dust.
    pub fn retire_dust(&mut self, count: usize) {
        self.dust_count += count;
    }

    /// Transactions in the txid table (a measure of its memory).
    pub fn transaction_count(&self) -> usize {
        self.txids.len()
    }

    /// Adds a coin a block created (coinbases wait for maturity).
    pub fn add(&mut self, coin: Coin) {
        if coin.is_coinbase {
            self.maturing.push_back(coin);
        } else {
            self.keep(coin);
        }
    }

    /// Returns coins taken for a transaction that was then abandoned.
    pub fn put_back(&mut self, coins: impl IntoIterator<Item = Coin>) {
        for coin in coins {
            self.keep(coin);
        }
    }

    /// Starts the block at `height`: coinbases it may spend become
    /// spendable, and the previous block's bucket, complete now, gives back
    /// the capacity its growth left over.
    pub fn release_matured(&mut self, height: u32) {
        self.next_height = height;
        if let Some(bucket) = self.by_height.get_mut(height.saturating_sub(1) as usize) {
            bucket.shrink_to_fit();
        }
        while let Some(coin) = self.maturing.front() {
            if coin.height + COINBASE_MATURITY_BLOCKS > height {
                break;
            }
            if let Some(coin) = self.maturing.pop_front() {
                self.keep(coin);
            }
        }
    }

    /// The newest maturing coinbase, if any.
    pub fn youngest_maturing(&self) -> Option<Coin> {
        self.maturing.back().copied()
    }

    fn keep(&mut self, coin: Coin) {
        if coin.value >= TREASURY_VALUE_MIN {
            self.treasury.push(coin);
            return;
        }
        if self.txids.last() != Some(&coin.outpoint.txid) {
            assert!(self.txids.len() < u32::MAX as usize, "txid table full (2^32 transactions)");
            self.txids.push(coin.outpoint.txid);
        }
        let transaction = (self.txids.len() - 1) as u32;
        let height = coin.height as usize;
        if self.by_height.len() <= height {
            self.by_height.resize_with(height + 1, Vec::new);
        }
        self.by_height[height].push(CompactCoin {
            value: coin.value,
            transaction,
            vout: coin.outpoint.vout,
            key_index: coin.key_index,
            kind: coin.kind,
            is_coinbase: coin.is_coinbase,
        });
        self.kept_count += 1;
        self.oldest_height = self.oldest_height.min(height);
    }

    fn expand(&self, compact: CompactCoin, height: usize) -> Coin {
        Coin {
            outpoint: OutPoint {
                txid: self.txids[compact.transaction as usize],
                vout: compact.vout,
            },
            value: compact.value,
            kind: compact.kind,
            key_index: compact.key_index,
            height: height as u32,
            is_coinbase: compact.is_coinbase,
        }
    }

    /// The lowest height holding a kept coin.
    fn oldest_kept_height(&mut self) -> Option<usize> {
        while self.by_height.get(self.oldest_height).is_some_and(Vec::is_empty) {
            self.oldest_height += 1;
        }
        (self.oldest_height < self.by_height.len()).then_some(self.oldest_height)
    }

    /// Age of the oldest kept coin at the block being planned.
    pub fn oldest_age(&mut self) -> Option<u32> {
        let oldest = self.oldest_kept_height()?;
        Some((self.next_height as usize).saturating_sub(oldest).max(1) as u32)
    }

    /// The height holding coins nearest to `wanted` (older first on ties).
    fn nearest_kept_height(&mut self, wanted: usize) -> Option<usize> {
        let oldest = self.oldest_kept_height()?;
        let youngest = self.by_height.len() - 1;
        let wanted = wanted.clamp(oldest, youngest);
        let has_coins = |height: usize| !self.by_height[height].is_empty();
        (0..=youngest - oldest).find_map(|distance| {
            let older = wanted.checked_sub(distance).filter(|&height| height >= oldest);
            let younger = Some(wanted + distance).filter(|&height| height <= youngest);
            older.filter(|&height| has_coins(height)).or(younger.filter(|&h| has_coins(h)))
        })
    }

    /// Removes the coin at `index` of the bucket at `height`.
    fn remove(&mut self, height: usize, index: usize) -> Coin {
        let bucket = &mut self.by_height[height];
        let compact = bucket.swap_remove(index);
        if bucket.len() * 4 < bucket.capacity() && bucket.capacity() >= BUCKET_SHRINK_CAPACITY_MIN {
            bucket.shrink_to(bucket.len() * 2);
        }
        self.kept_count -= 1;
        self.expand(compact, height)
    }

    /// Takes a coin of an age drawn from the model (the treasury's newest
    /// when no other coin is left).
    pub fn take(&mut self, rng: &mut DeterministicRng) -> Option<Coin> {
        let Some(age_max) = self.oldest_age() else { return self.treasury.pop() };
        let age = self.model.draw_age(rng, age_max);
        self.take_aged(rng, age)
    }

    /// Takes a random coin created `age` blocks before the block being
    /// planned, or from the nearest height that has one.
    pub fn take_aged(&mut self, rng: &mut DeterministicRng, age: u32) -> Option<Coin> {
        let wanted = (self.next_height as usize).saturating_sub(age as usize);
        let height = self.nearest_kept_height(wanted)?;
        let index = rng.index(self.by_height[height].len());
        Some(self.remove(height, index))
    }

    /// Takes the treasury's newest coin.
    pub fn take_treasury(&mut self) -> Option<Coin> {
        self.treasury.pop()
    }

    /// Takes the coins `request` describes (see [`SweepRequest`]); fewer
    /// when the chain has fewer.
    pub fn sweep(&mut self, request: &SweepRequest) -> Vec<Coin> {
        let next = self.next_height as usize;
        let Some(youngest) = next.checked_sub(request.age_min_blocks as usize) else {
            return Vec::new();
        };
        let start = next.saturating_sub(request.start_age_blocks as usize).min(youngest);
        let oldest = self.oldest_kept_height().unwrap_or(usize::MAX);
        let older = (oldest..=start).rev();
        let younger = (start + 1)..=youngest.min(self.by_height.len().saturating_sub(1));
        let mut swept = Vec::new();
        let mut weight = 0usize;
        for height in older.chain(younger) {
            if self.sweep_bucket(height, request, &mut swept, &mut weight) {
                break;
            }
        }
        swept
    }

    /// Sweeps the bucket at `height` from its end; true once the request is
    /// met (count or weight).
    fn sweep_bucket(
        &mut self,
        height: usize,
        request: &SweepRequest,
        swept: &mut Vec<Coin>,
        weight: &mut usize,
    ) -> bool {
        let mut index = self.by_height.get(height).map_or(0, Vec::len);
        while index > 0 {
            index -= 1;
            if swept.len() >= request.count {
                return true;
            }
            let coin = self.by_height[height][index];
            if coin.value > request.value_max {
                continue;
            }
            let input_weight = coin.kind.input_weight_max();
            if *weight + input_weight > request.weight_max {
                return true;
            }
            *weight += input_weight;
            // The last coin moves into `index`; it was looked at already.
            swept.push(self.remove(height, index));
        }
        swept.len() >= request.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coin(height: u32, vout: u32, value: u32, is_coinbase: bool) -> Coin {
        Coin {
            outpoint: OutPoint { txid: Txid([height as u8; 32]), vout },
            value: Amount::from_sat_u32(value),
            kind: ScriptKind::P2wpkh,
            key_index: vout,
            height,
            is_coinbase,
        }
    }

    /// Ten coins at each of heights 1..=`heights`.
    fn filled(heights: u32) -> AgedCoins {
        let mut coins = AgedCoins::new(SpendAgeModel::mainnet_like());
        for height in 1..=heights {
            for vout in 0..10 {
                coins.add(coin(height, vout, 10_000, false));
            }
        }
        coins.release_matured(heights + 1);
        coins
    }

    #[test]
    fn coins_come_back_whole_and_one_txid_serves_a_transaction() {
        let mut coins = filled(3);
        assert_eq!(coins.transaction_count(), 3);
        assert_eq!(coins.coin_count(), 30);
        let mut rng = DeterministicRng::new(1, 1);
        let taken = coins.take_aged(&mut rng, 2).unwrap();
        assert_eq!(taken.height, 2);
        assert_eq!(taken.outpoint.txid, Txid([2; 32]));
        assert_eq!(taken.key_index, taken.outpoint.vout);
        assert_eq!(coins.coin_count(), 29);
        coins.put_back([taken]);
        assert_eq!(coins.coin_count(), 30);
        let mut all = Vec::new();
        while let Some(coin) = coins.take(&mut rng) {
            all.push(coin);
        }
        all.sort_by_key(|coin| (coin.height, coin.outpoint.vout));
        let expected: Vec<Coin> = (1..=3)
            .flat_map(|height| (0..10).map(move |vout| coin(height, vout, 10_000, false)))
            .collect();
        assert_eq!(all, expected);
    }

    #[test]
    fn an_empty_height_gives_the_nearest_coins() {
        let mut coins = filled(5);
        let mut rng = DeterministicRng::new(2, 2);
        for _ in 0..10 {
            assert_eq!(coins.take_aged(&mut rng, 3).unwrap().height, 3);
        }
        // Height 3 is empty now: older first on a tie.
        assert_eq!(coins.take_aged(&mut rng, 3).unwrap().height, 2);
        assert_eq!(coins.take_aged(&mut rng, 500).unwrap().height, 1);
        assert_eq!(coins.oldest_age(), Some(5));
    }

    #[test]
    fn large_coins_and_coinbases_go_to_the_treasury_when_due() {
        let mut coins = AgedCoins::new(SpendAgeModel::mainnet_like());
        coins.add(coin(1, 0, 50_000_000, true));
        coins.add(coin(2, 0, 6_000_000, false));
        assert_eq!(coins.treasury_count(), 1);
        assert_eq!(coins.youngest_maturing().unwrap().height, 1);
        coins.release_matured(100);
        assert_eq!(coins.treasury_count(), 1);
        coins.release_matured(101);
        assert_eq!(coins.treasury_count(), 2);
        assert_eq!(coins.take_treasury().unwrap().height, 1, "newest first");
        assert_eq!(coins.coin_count(), 1);
    }

    #[test]
    fn sweeps_take_old_small_coins_within_their_weight() {
        let mut coins = filled(300);
        coins.add(coin(50, 99, 900_000, false));
        let request = SweepRequest {
            start_age_blocks: 250,
            age_min_blocks: 101,
            count: 45,
            value_max: Amount::from_sat_u32(800_000),
            weight_max: usize::MAX,
        };
        let swept = coins.sweep(&request);
        assert_eq!(swept.len(), 45);
        assert!(swept.iter().all(|coin| coin.value.to_sat() <= 800_000));
        // Start at height 51, then older: 51, 50, 49, 48, 47 (five coins).
        assert!(swept.iter().all(|coin| (47..=51).contains(&coin.height)), "{swept:?}");
        let input_weight = ScriptKind::P2wpkh.input_weight_max();
        let light = SweepRequest { weight_max: 3 * input_weight, ..request };
        assert_eq!(coins.sweep(&light).len(), 3);
        let young = SweepRequest { start_age_blocks: 1, count: 10_000, ..request };
        assert!(coins.sweep(&young).iter().all(|coin| coin.height <= 301 - 101));
    }
}
