//! The header's `nBits`: a 256-bit target in four bytes, with Core's odd
//! sign bit and overflow rules (`arith_uint256::SetCompact` / `GetCompact`).

use super::u256::U256;

/// Sign bit of the compact form's mantissa.
const SIGN_BIT: u32 = 0x0080_0000;
/// The mantissa without its sign bit.
const MANTISSA_MASK: u32 = 0x007f_ffff;

/// A target in compact form, as a header's `nBits` holds it: one byte of
/// size (in bytes) and a 3-byte mantissa whose top bit is a sign.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CompactTarget(pub u32);

/// What a compact target stands for, flags included (Core's `SetCompact`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpandedCompact {
    /// The number, the sign ignored. Bits shifted past 2^256 are dropped.
    pub value: U256,
    /// The sign bit is set and the mantissa is not zero.
    pub negative: bool,
    /// The mantissa is not zero and the number does not fit in 256 bits.
    pub overflow: bool,
}

impl CompactTarget {
    /// The `nBits` value.
    pub const fn to_consensus(self) -> u32 {
        self.0
    }

    /// The number this stands for, with Core's sign and overflow flags.
    pub const fn expand(self) -> ExpandedCompact {
        let size = self.0 >> 24;
        let mut mantissa = self.0 & MANTISSA_MASK;
        let value = if size <= 3 {
            mantissa >>= 8 * (3 - size);
            U256::from_u64(mantissa as u64)
        } else {
            U256::from_u64(mantissa as u64).shl(8 * (size - 3))
        };
        let negative = mantissa != 0 && (self.0 & SIGN_BIT) != 0;
        let overflow = mantissa != 0
            && (size > 34 || (mantissa > 0xff && size > 33) || (mantissa > 0xffff && size > 32));
        ExpandedCompact { value, negative, overflow }
    }

    /// The compact form of a non-negative number, rounded down to three
    /// significant bytes (Core's `GetCompact()`).
    pub const fn from_value(value: U256) -> CompactTarget {
        CompactTarget::from_signed_value(value, false)
    }

    /// The compact form with the sign bit set when `negative` and the
    /// mantissa is not zero (Core's `GetCompact(negative)`).
    pub const fn from_signed_value(value: U256, negative: bool) -> CompactTarget {
        let mut size = value.bits().div_ceil(8);
        let mut compact = if size <= 3 {
            (value.low_u64() << (8 * (3 - size))) as u32
        } else {
            value.shr(8 * (size - 3)).low_u64() as u32
        };
        // A mantissa with its top bit set would read as negative: move it one
        // byte down and make the number one byte longer.
        if compact & SIGN_BIT != 0 {
            compact >>= 8;
            size += 1;
        }
        // `size` is at most 33, so it fits the top byte.
        compact |= size << 24;
        if negative && compact & MANTISSA_MASK != 0 {
            compact |= SIGN_BIT;
        }
        CompactTarget(compact)
    }
}

impl From<u32> for CompactTarget {
    fn from(bits: u32) -> CompactTarget {
        CompactTarget(bits)
    }
}

impl std::fmt::Debug for CompactTarget {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "CompactTarget(0x{:08x})", self.0)
    }
}

impl std::fmt::Display for CompactTarget {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{:08x}", self.0)
    }
}

/// A proof-of-work target that a block hash must not exceed: positive,
/// not zero and within 256 bits. The only ways to get one are from a pow
/// limit or by [`Target::from_compact`], which applies Core's `DeriveTarget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target(U256);

impl Target {
    /// A chain's pow limit (the easiest target it allows).
    pub const fn from_pow_limit(limit: U256) -> Target {
        Target(limit)
    }

    /// The target `bits` stands for, or `None` when Core's `DeriveTarget`
    /// rejects it: negative, zero, overflowing, or easier than `pow_limit`.
    pub fn from_compact(bits: CompactTarget, pow_limit: Target) -> Option<Target> {
        let expanded = bits.expand();
        if expanded.negative
            || expanded.overflow
            || expanded.value.is_zero()
            || expanded.value > pow_limit.0
        {
            return None;
        }
        Some(Target(expanded.value))
    }

    /// The number.
    pub const fn to_u256(self) -> U256 {
        self.0
    }

    /// The compact form (rounded down to three significant bytes).
    pub const fn to_compact(self) -> CompactTarget {
        CompactTarget::from_value(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Case {
        bits: u32,
        value_hex: &'static str,
        negative: bool,
        overflow: bool,
        /// `GetCompact(negative)` of the expanded value.
        compact_again: u32,
    }

    const fn case(bits: u32, value_hex: &'static str, negative: bool, compact_again: u32) -> Case {
        Case { bits, value_hex, negative, overflow: false, compact_again }
    }

    // Core's arith_uint256_tests `bignum_SetCompact`.
    const CASES: [Case; 18] = [
        case(0, "0", false, 0),
        case(0x0012_3456, "0", false, 0),
        case(0x0100_3456, "0", false, 0),
        case(0x0200_0056, "0", false, 0),
        case(0x0300_0000, "0", false, 0),
        case(0x0400_0000, "0", false, 0),
        case(0x0092_3456, "0", false, 0),
        case(0x0180_3456, "0", false, 0),
        case(0x0280_0056, "0", false, 0),
        case(0x0380_0000, "0", false, 0),
        case(0x0480_0000, "0", false, 0),
        case(0x0112_3456, "12", false, 0x0112_0000),
        case(0x01fe_dcba, "7e", true, 0x01fe_0000),
        case(0x0212_3456, "1234", false, 0x0212_3400),
        case(0x0312_3456, "123456", false, 0x0312_3456),
        case(0x0412_3456, "12345600", false, 0x0412_3456),
        case(0x0492_3456, "12345600", true, 0x0492_3456),
        case(0x0500_9234, "92340000", false, 0x0500_9234),
    ];

    fn padded(value_hex: &str) -> U256 {
        U256::from_hex(&format!("{value_hex:0>64}")).unwrap()
    }

    #[test]
    fn core_set_compact_vectors() {
        for case in &CASES {
            let expanded = CompactTarget(case.bits).expand();
            assert_eq!(expanded.value, padded(case.value_hex), "{:08x}", case.bits);
            assert_eq!(expanded.negative, case.negative, "{:08x}", case.bits);
            assert_eq!(expanded.overflow, case.overflow, "{:08x}", case.bits);
            let again = CompactTarget::from_signed_value(expanded.value, case.negative);
            assert_eq!(again, CompactTarget(case.compact_again), "{:08x}", case.bits);
        }
    }

    #[test]
    fn largest_sizes_and_overflow() {
        let expanded = CompactTarget(0x2012_3456).expand();
        assert_eq!(
            expanded.value,
            padded("1234560000000000000000000000000000000000000000000000000000000000")
        );
        assert_eq!(CompactTarget::from_value(expanded.value), CompactTarget(0x2012_3456));
        let overflowing = CompactTarget(0xff12_3456).expand();
        assert!(!overflowing.negative);
        assert!(overflowing.overflow);
        // The edges of Core's overflow rule: a one-byte mantissa may reach
        // size 34, two bytes size 33, three bytes size 32.
        assert!(!CompactTarget(0x2200_00ff).expand().overflow);
        assert!(CompactTarget(0x2300_00ff).expand().overflow);
        assert!(!CompactTarget(0x2100_ffff).expand().overflow);
        assert!(CompactTarget(0x2200_ffff).expand().overflow);
        assert!(!CompactTarget(0x207f_ffff).expand().overflow);
        assert!(CompactTarget(0x2101_0000).expand().overflow);
        // A zero mantissa never overflows and is never negative.
        let zero = CompactTarget(0xff80_0000).expand();
        assert!(!zero.overflow && !zero.negative && zero.value.is_zero());
    }

    #[test]
    fn never_makes_a_mantissa_with_the_sign_bit() {
        assert_eq!(CompactTarget::from_value(U256::from_u64(0x80)), CompactTarget(0x0200_8000));
        assert_eq!(CompactTarget::from_value(U256::ZERO), CompactTarget(0));
        assert_eq!(CompactTarget::from_signed_value(U256::ZERO, true), CompactTarget(0));
    }

    #[test]
    fn derive_target_rejects_what_core_rejects() {
        let limit = Target::from_pow_limit(padded(
            "00000000ffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
        ));
        assert_eq!(limit.to_compact(), CompactTarget(0x1d00_ffff));
        assert!(Target::from_compact(CompactTarget(0x1d00_ffff), limit).is_some());
        assert!(Target::from_compact(CompactTarget(0x1d01_0000), limit).is_none());
        assert!(Target::from_compact(CompactTarget(0), limit).is_none());
        assert!(Target::from_compact(CompactTarget(0x1d80_ffff), limit).is_none());
        assert!(Target::from_compact(CompactTarget(!0x0080_0000), limit).is_none());
    }
}
