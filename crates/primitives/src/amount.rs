//! Amounts in satoshis, checked against MAX_MONEY as Core's `MoneyRange` does.

use thiserror::Error;

/// Satoshis per bitcoin.
pub const COIN: i64 = 100_000_000;

/// Core's MAX_MONEY: no amount, output or sum of outputs may exceed 21 million BTC.
pub const MAX_MONEY: i64 = 21_000_000 * COIN;

/// A value that is not a valid amount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AmountError {
    /// Below zero.
    #[error("amount {0} is negative")]
    Negative(i64),
    /// Above MAX_MONEY.
    #[error("amount {0} exceeds MAX_MONEY")]
    TooLarge(i64),
}

/// A number of satoshis in `0..=MAX_MONEY`. Serialised outputs carry a raw `i64`
/// that may be anything; converting it here is the consensus range check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Amount(i64);

impl Amount {
    /// Zero satoshis.
    pub const ZERO: Amount = Amount(0);
    /// MAX_MONEY.
    pub const MAX: Amount = Amount(MAX_MONEY);

    /// Checks `satoshis` against the money range.
    #[inline]
    pub const fn from_sat(satoshis: i64) -> Result<Amount, AmountError> {
        if satoshis < 0 {
            Err(AmountError::Negative(satoshis))
        } else if satoshis > MAX_MONEY {
            Err(AmountError::TooLarge(satoshis))
        } else {
            Ok(Amount(satoshis))
        }
    }

    /// The value in satoshis.
    #[inline]
    pub const fn to_sat(self) -> i64 {
        self.0
    }

    /// The sum, if it stays within the money range.
    #[inline]
    pub const fn checked_add(self, other: Amount) -> Option<Amount> {
        // Both are <= MAX_MONEY, so the i64 sum cannot overflow.
        match Amount::from_sat(self.0 + other.0) {
            Ok(sum) => Some(sum),
            Err(_) => None,
        }
    }

    /// The difference, if not negative.
    #[inline]
    pub const fn checked_sub(self, other: Amount) -> Option<Amount> {
        match Amount::from_sat(self.0 - other.0) {
            Ok(difference) => Some(difference),
            Err(_) => None,
        }
    }

    /// Core's `ValueFromAmount` form: bitcoins with exactly eight decimals.
    pub fn to_btc_string(self) -> String {
        format!("{}.{:08}", self.0 / COIN, self.0 % COIN)
    }
}

/// Core's `MoneyRange`.
#[inline]
pub const fn money_range(satoshis: i64) -> bool {
    satoshis >= 0 && satoshis <= MAX_MONEY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_checks() {
        assert_eq!(Amount::from_sat(-1), Err(AmountError::Negative(-1)));
        assert_eq!(Amount::from_sat(MAX_MONEY + 1), Err(AmountError::TooLarge(MAX_MONEY + 1)));
        assert_eq!(Amount::from_sat(MAX_MONEY), Ok(Amount::MAX));
        assert_eq!(Amount::MAX.checked_add(Amount::from_sat(1).unwrap()), None);
        assert_eq!(Amount::ZERO.checked_sub(Amount::from_sat(1).unwrap()), None);
        assert!(money_range(0) && !money_range(-5));
        assert_eq!(Amount::from_sat(123_456_789).unwrap().to_btc_string(), "1.23456789");
    }
}
