//! The block subsidy: Core's `GetBlockSubsidy`.

use ibex_primitives::COIN;

/// Satoshis a coinbase may create at `height` besides fees: 50 BTC halved every
/// `halving_interval` blocks, zero after 64 halvings (the shift would be undefined).
pub fn block_subsidy(height: u32, halving_interval: u32) -> i64 {
    let halvings = height / halving_interval.max(1);
    if halvings >= 64 {
        return 0;
    }
    (50 * COIN) >> halvings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halvings() {
        assert_eq!(block_subsidy(0, 210_000), 50 * COIN);
        assert_eq!(block_subsidy(209_999, 210_000), 50 * COIN);
        assert_eq!(block_subsidy(210_000, 210_000), 25 * COIN);
        assert_eq!(block_subsidy(840_000, 210_000), 3 * COIN + COIN / 8);
        assert_eq!(block_subsidy(150, 150), 25 * COIN);
        assert_eq!(block_subsidy(64 * 150, 150), 0);
        assert_eq!(block_subsidy(33 * 210_000, 210_000), 0, "shifted to zero before 64");
    }
}
