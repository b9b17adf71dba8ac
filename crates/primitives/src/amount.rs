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

    /// `satoshis` as an amount: every `u32` is within the money range.
    #[inline]
    pub const fn from_sat_u32(satoshis: u32) -> Amount {
        Amount(satoshis as i64)
    }

    /// `bitcoins` whole bitcoins: every `u16` of them is within the money range.
    #[inline]
    pub const fn from_int_btc(bitcoins: u16) -> Amount {
        Amount(bitcoins as i64 * COIN)
    }

    /// The value in satoshis.
    #[inline]
    pub const fn to_sat(self) -> i64 {
        self.0
    }

    /// The amount halved `halvings` times, rounding down (Core's
    /// `nSubsidy >>= halvings`); zero from 64 halvings, where the shift
    /// would be undefined.
    #[inline]
    pub const fn halved(self, halvings: u32) -> Amount {
        if halvings >= 64 {
            Amount::ZERO
        } else {
            // A non-negative value shifted right stays within 0..=self.
            Amount(self.0 >> halvings)
        }
    }

    /// The sum of `amounts`, if every partial sum stays within the money
    /// range (Core checks `MoneyRange` after each addition).
    pub fn checked_sum(amounts: impl IntoIterator<Item = Amount>) -> Option<Amount> {
        amounts.into_iter().try_fold(Amount::ZERO, Amount::checked_add)
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

/// An [`Amount`] as two 32-bit halves: the same value with alignment 4
/// instead of 8, for records that pack it among 4-byte fields (the coins
/// cache's entries, where an 8-byte alignment would pad each by 4 bytes).
/// Made only from an [`Amount`], so it is always within the money range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PackedAmount([u32; 2]);

impl From<Amount> for PackedAmount {
    #[inline]
    fn from(amount: Amount) -> PackedAmount {
        // Within the money range, so non-negative: the cast keeps the value.
        let satoshis = amount.0 as u64;
        PackedAmount([satoshis as u32, (satoshis >> 32) as u32])
    }
}

impl From<PackedAmount> for Amount {
    #[inline]
    fn from(packed: PackedAmount) -> Amount {
        let [low, high] = packed.0;
        Amount(((u64::from(high) << 32) | u64::from(low)) as i64)
    }
}

// The infallible constructors stay within the money range.
const _: () = assert!(u32::MAX as i64 <= MAX_MONEY);
const _: () = assert!(u16::MAX as i64 * COIN <= MAX_MONEY);

/// Core's `MoneyRange`.
#[inline]
pub const fn money_range(satoshis: i64) -> bool {
    satoshis >= 0 && satoshis <= MAX_MONEY
}

// Core's amount compression (`compressor.cpp`), shared by the coins
// database, undo data (both as VARINT) and BIP 455's `bspent` (as
// CompactSize): trailing decimal zeros fold into an exponent.

/// Core's `CompressAmount`: satoshis to the compact integer stored as VARINT.
/// Wraps like Core's `uint64_t` arithmetic above ~2^60 satoshis, a range no
/// valid amount reaches (coins hold at most `MAX_MONEY`).
pub fn compress_amount(satoshis: u64) -> u64 {
    if satoshis == 0 {
        return 0;
    }
    let mut mantissa = satoshis;
    let mut exponent = 0u64;
    while mantissa % 10 == 0 && exponent < 9 {
        mantissa /= 10;
        exponent += 1;
    }
    if exponent < 9 {
        let last_digit = mantissa % 10;
        debug_assert!((1..=9).contains(&last_digit));
        mantissa /= 10;
        mantissa
            .wrapping_mul(9)
            .wrapping_add(last_digit - 1)
            .wrapping_mul(10)
            .wrapping_add(1 + exponent)
    } else {
        (mantissa - 1).wrapping_mul(10).wrapping_add(10)
    }
}

/// Core's `DecompressAmount`, checked: `None` when the result overflows 64 bits.
pub fn decompress_amount(compressed: u64) -> Option<u64> {
    if compressed == 0 {
        return Some(0);
    }
    let mut rest = compressed - 1;
    let mut exponent = rest % 10;
    rest /= 10;
    let mut mantissa = if exponent < 9 {
        let last_digit = rest % 9 + 1;
        (rest / 9).checked_mul(10)?.checked_add(last_digit)?
    } else {
        rest.checked_add(1)?
    };
    while exponent > 0 {
        mantissa = mantissa.checked_mul(10)?;
        exponent -= 1;
    }
    Some(mantissa)
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

    #[test]
    fn packed_amounts_keep_their_value_at_alignment_four() {
        assert_eq!(std::mem::align_of::<PackedAmount>(), 4);
        for satoshis in [0, 1, u32::MAX as i64, u32::MAX as i64 + 1, 5_000_000_000, MAX_MONEY] {
            let amount = Amount::from_sat(satoshis).unwrap();
            assert_eq!(Amount::from(PackedAmount::from(amount)), amount, "{satoshis}");
        }
    }

    #[test]
    fn arithmetic_stays_in_range() {
        let one = Amount::from_sat_u32(1);
        assert_eq!(
            Amount::MAX.checked_sub(one).and_then(|a| a.checked_add(one)),
            Some(Amount::MAX)
        );
        assert_eq!(Amount::ZERO.checked_add(Amount::ZERO), Some(Amount::ZERO));
        assert_eq!(Amount::MAX.checked_sub(Amount::MAX), Some(Amount::ZERO));
        assert_eq!(Amount::from_sat_u32(u32::MAX).to_sat(), i64::from(u32::MAX));
        assert_eq!(Amount::from_int_btc(50).to_sat(), 50 * COIN);
        assert_eq!(Amount::from_int_btc(u16::MAX).to_sat(), i64::from(u16::MAX) * COIN);
    }

    #[test]
    fn halvings_round_down_and_end_at_zero() {
        let fifty = Amount::from_int_btc(50);
        assert_eq!(fifty.halved(0), fifty);
        assert_eq!(fifty.halved(1), Amount::from_int_btc(25));
        assert_eq!(fifty.halved(4).to_sat(), 3 * COIN + COIN / 8);
        assert_eq!(Amount::from_sat_u32(3).halved(1), Amount::from_sat_u32(1));
        assert_eq!(fifty.halved(33), Amount::ZERO);
        assert_eq!(Amount::MAX.halved(63), Amount::ZERO);
        assert_eq!(Amount::MAX.halved(64), Amount::ZERO);
        assert_eq!(Amount::MAX.halved(u32::MAX), Amount::ZERO);
    }

    #[test]
    fn checked_sum_fails_once_a_partial_sum_leaves_the_range() {
        let half = Amount::from_sat(MAX_MONEY / 2).unwrap();
        assert_eq!(Amount::checked_sum([]), Some(Amount::ZERO));
        assert_eq!(
            Amount::checked_sum([half, half]),
            Some(Amount::from_sat(MAX_MONEY / 2 * 2).unwrap())
        );
        assert_eq!(Amount::checked_sum([Amount::MAX, Amount::from_sat_u32(1)]), None);
        assert_eq!(Amount::checked_sum([Amount::MAX, Amount::MAX, Amount::MAX]), None);
    }
    #[test]
    fn amount_compression_round_trips_and_matches_cores_examples() {
        // Core's compress_tests: 0, 1 satoshi, 0.01 BTC, 1 BTC, 50 BTC, 21M BTC.
        for (satoshis, compressed) in [
            (0, 0),
            (1, 1),
            (1_000_000, 7),
            (COIN as u64, 9),
            (50 * COIN as u64, 50),
            (2_100_000_000_000_000, 21_000_000),
        ] {
            assert_eq!(compress_amount(satoshis), compressed, "{satoshis}");
            assert_eq!(decompress_amount(compressed), Some(satoshis));
        }
        for satoshis in (0..100_000u64).chain((0..1_000).map(|step| step * 999_999_937)) {
            assert_eq!(decompress_amount(compress_amount(satoshis)), Some(satoshis));
        }
        assert_eq!(decompress_amount(u64::MAX), None, "overflow is refused, not wrapped");
    }
}
