//! The block subsidy: Core's `GetBlockSubsidy`.

use ibex_primitives::{Amount, Height};

/// The subsidy of the first halving period.
pub const INITIAL_BLOCK_SUBSIDY: Amount = Amount::from_int_btc(50);

/// What a coinbase may create at `height` besides fees: 50 BTC halved every
/// `halving_interval` blocks, zero after 64 halvings (the shift would be undefined).
pub fn block_subsidy(height: Height, halving_interval: u32) -> Amount {
    INITIAL_BLOCK_SUBSIDY.halved(height.to_u32() / halving_interval.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibex_primitives::COIN;

    fn subsidy_satoshis(height: u32, halving_interval: u32) -> i64 {
        block_subsidy(Height::new(height), halving_interval).to_sat()
    }

    #[test]
    fn halvings() {
        assert_eq!(subsidy_satoshis(0, 210_000), 50 * COIN);
        assert_eq!(subsidy_satoshis(209_999, 210_000), 50 * COIN);
        assert_eq!(subsidy_satoshis(210_000, 210_000), 25 * COIN);
        assert_eq!(subsidy_satoshis(840_000, 210_000), 3 * COIN + COIN / 8);
        assert_eq!(subsidy_satoshis(150, 150), 25 * COIN);
        assert_eq!(subsidy_satoshis(64 * 150, 150), 0);
        assert_eq!(subsidy_satoshis(33 * 210_000, 210_000), 0, "shifted to zero before 64");
    }
}
