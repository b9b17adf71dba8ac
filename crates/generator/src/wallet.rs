//! The wallet model: every coin the chain has created and not spent, with its
//! script type, key and age, and the choice of which coins to spend.
//!
//! Napkin math: a coin is ~64 bytes; the bench profile's few million coins
//! take a few hundred MB at most. Picking is O(1) (`swap_remove` at a random
//! index), so the wallet never limits speed. Picks are split between recent
//! coins (the vector's tail: change spent soon after) and uniform picks over
//! the whole set, which reach far back the way old coins on the main chain
//! do, so a node's UTXO cache misses as it would on mainnet.
//!
//! The `utxo-heavy` profile keeps its coins in [`AgedCoins`] instead
//! (compact records by height, picked by an age model); [`Wallet`] hides
//! which of the two a chain uses.

use std::collections::VecDeque;

use crate::aged_coins::AgedCoins;
use crate::coin::{Coin, COINBASE_MATURITY_BLOCKS};
use crate::random::DeterministicRng;
use crate::spend_age::SpendAgeModel;

/// How many of the newest coins count as "recent" for picking.
const RECENT_COINS_WINDOW: usize = 4_096;
/// Share of picks taken from the recent window, per mille.
const RECENT_PICK_PER_MILLE: u64 = 350;

/// The coins of a chain and the choice of which to spend.
#[derive(Debug, Clone)]
pub struct Wallet {
    coins: Coins,
}

/// The two ways of keeping coins.
#[derive(Debug, Clone)]
enum Coins {
    /// Every profile but `utxo-heavy`.
    Mixed(MixedCoins),
    /// `utxo-heavy`: compact, by age.
    Aged(Box<AgedCoins>),
}

impl Default for Wallet {
    fn default() -> Wallet {
        Wallet::new()
    }
}

impl Wallet {
    /// An empty wallet spending recent coins or coins from anywhere.
    pub fn new() -> Wallet {
        Wallet { coins: Coins::Mixed(MixedCoins::default()) }
    }

    /// An empty wallet spending coins of the ages `model` draws.
    pub fn with_ages(model: SpendAgeModel) -> Wallet {
        Wallet { coins: Coins::Aged(Box::new(AgedCoins::new(model))) }
    }

    /// The aged coins, when the wallet keeps its coins by age.
    pub fn aged_mut(&mut self) -> Option<&mut AgedCoins> {
        match &mut self.coins {
            Coins::Aged(coins) => Some(coins),
            Coins::Mixed(_) => None,
        }
    }

    /// Number of coins, spendable or maturing: the chain's UTXO set size as
    /// Core counts it (OP_RETURN outputs are never added).
    pub fn coin_count(&self) -> usize {
        match &self.coins {
            Coins::Mixed(coins) => coins.coin_count(),
            Coins::Aged(coins) => coins.coin_count(),
        }
    }

    /// Coins left unspent for good because they are worth less than spending
    /// them costs (still in the UTXO set).
    pub fn dust_count(&self) -> usize {
        match &self.coins {
            Coins::Mixed(coins) => coins.dust_count,
            Coins::Aged(coins) => coins.dust_count(),
        }
    }

    /// Records `count` taken coins as dust: never spent, still counted.
    pub fn retire_dust(&mut self, count: usize) {
        match &mut self.coins {
            Coins::Mixed(coins) => coins.dust_count += count,
            Coins::Aged(coins) => coins.retire_dust(count),
        }
    }

    /// Number of coins that may be spent now.
    pub fn spendable_count(&self) -> usize {
        match &self.coins {
            Coins::Mixed(coins) => coins.spendable.len(),
            Coins::Aged(coins) => coins.spendable_count(),
        }
    }

    /// Adds a coin a block created (coinbase outputs wait for maturity).
    pub fn add(&mut self, coin: Coin) {
        match &mut self.coins {
            Coins::Mixed(coins) => coins.add(coin),
            Coins::Aged(coins) => coins.add(coin),
        }
    }

    /// Makes coinbases spendable once a block at `height` may spend them
    /// (called as each block's planning starts).
    pub fn release_matured(&mut self, height: u32) {
        match &mut self.coins {
            Coins::Mixed(coins) => coins.release_matured(height),
            Coins::Aged(coins) => coins.release_matured(height),
        }
    }

    /// The newest maturing coinbase (one too young to spend), if any.
    pub fn youngest_maturing(&self) -> Option<Coin> {
        match &self.coins {
            Coins::Mixed(coins) => coins.maturing.back().copied(),
            Coins::Aged(coins) => coins.youngest_maturing(),
        }
    }

    /// Takes a coin to spend, as the wallet's way of keeping coins picks.
    pub fn take(&mut self, rng: &mut DeterministicRng) -> Option<Coin> {
        match &mut self.coins {
            Coins::Mixed(coins) => coins.take(rng),
            Coins::Aged(coins) => coins.take(rng),
        }
    }

    /// Returns coins taken for a transaction that was then abandoned.
    pub fn put_back(&mut self, coins: impl IntoIterator<Item = Coin>) {
        match &mut self.coins {
            Coins::Mixed(mixed) => mixed.spendable.extend(coins),
            Coins::Aged(aged) => aged.put_back(coins),
        }
    }
}

/// Spendable coins and coinbases still maturing, picked recent or uniform.
#[derive(Debug, Clone, Default)]
struct MixedCoins {
    spendable: Vec<Coin>,
    maturing: VecDeque<Coin>,
    dust_count: usize,
}

impl MixedCoins {
    fn coin_count(&self) -> usize {
        self.spendable.len() + self.maturing.len() + self.dust_count
    }

    fn add(&mut self, coin: Coin) {
        if coin.is_coinbase {
            self.maturing.push_back(coin);
        } else {
            self.spendable.push(coin);
        }
    }

    fn release_matured(&mut self, height: u32) {
        while let Some(coin) = self.maturing.front() {
            if coin.height + COINBASE_MATURITY_BLOCKS > height {
                break;
            }
            if let Some(coin) = self.maturing.pop_front() {
                self.spendable.push(coin);
            }
        }
    }

    /// Takes a coin: recent or from anywhere.
    fn take(&mut self, rng: &mut DeterministicRng) -> Option<Coin> {
        let length = self.spendable.len();
        if length == 0 {
            return None;
        }
        let index = if rng.chance_per_mille(RECENT_PICK_PER_MILLE) {
            let window = length.min(RECENT_COINS_WINDOW);
            length - 1 - rng.index(window)
        } else {
            rng.index(length)
        };
        Some(self.spendable.swap_remove(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script_kind::ScriptKind;
    use ibex_primitives::{Amount, OutPoint, Txid};

    fn coin(height: u32, is_coinbase: bool) -> Coin {
        Coin {
            outpoint: OutPoint { txid: Txid([height as u8; 32]), vout: 0 },
            value: Amount::from_sat_u32(1_000),
            kind: ScriptKind::P2wpkh,
            key_index: 0,
            height,
            is_coinbase,
        }
    }

    #[test]
    fn coinbases_wait_for_maturity() {
        let mut wallet = Wallet::new();
        wallet.add(coin(5, true));
        wallet.release_matured(104);
        assert_eq!(wallet.spendable_count(), 0);
        wallet.release_matured(105);
        assert_eq!(wallet.spendable_count(), 1);
        assert_eq!(wallet.coin_count(), 1);
    }

    #[test]
    fn take_empties_the_wallet() {
        let mut wallet = Wallet::new();
        let mut rng = DeterministicRng::new(1, 1);
        for height in 0..10 {
            wallet.add(coin(height, false));
        }
        let taken: Vec<Coin> = std::iter::from_fn(|| wallet.take(&mut rng)).collect();
        assert_eq!(taken.len(), 10);
        assert_eq!(wallet.coin_count(), 0);
    }
}
