//! Block heights: [`Height`], the number of blocks below a block in its chain.
//!
//! Core keeps heights in a C `int`; a block's height is never negative, so
//! its heights are `0..=i32::MAX`. Ibex keeps them unsigned, and admits the
//! whole of `u32` (see [`Height`] for why). At one block per ten minutes a
//! chain needs ~40,800 years to reach `i32::MAX`, so the ranges never differ
//! on a real chain; they differ only for corrupt or hostile input, which the
//! limits below catch where they bind.

use std::fmt;

/// A block's height: the genesis block is 0, each block one above its parent.
///
/// Admits every `u32`. Core's valid range is `0..=i32::MAX` (a C `int`, never
/// negative), and the coins database packs a coin's height with its coinbase
/// flag into 31 bits; those bounds are checked where a height is packed (the
/// chainstate's `Coin::new` refuses heights above `2^31 - 1`; Core's
/// `TxOutSer`, in [`crate::txoutset::serialize_coin`], shifts the top bit
/// out). Admitting every `u32` lets heights still carried as bare `u32`
/// convert in with [`From`], without a check that no chain can fail.
///
/// Arithmetic that could leave the range is checked ([`Height::checked_add`],
/// [`Height::checked_sub`], [`Height::next`]) or stops at genesis where
/// Core clamps ([`Height::saturating_sub`]); a distance between two heights
/// saturates at zero ([`Height::blocks_since`]), as Core's maturity check
/// reads it.
///
/// `#[repr(transparent)]` over `u32`: a slice of heights is a slice of `u32`s
/// in memory, and passing one costs what a bare `u32` does.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Height(u32);

impl Height {
    /// The genesis block's height.
    pub const ZERO: Height = Height(0);
    /// The largest height this type holds.
    pub const MAX: Height = Height(u32::MAX);

    /// The height `blocks` above genesis.
    #[inline]
    pub const fn new(blocks: u32) -> Height {
        Height(blocks)
    }

    /// The height as a bare `u32`.
    #[inline]
    pub const fn to_u32(self) -> u32 {
        self.0
    }

    /// The height `blocks` above this one, or `None` past [`Height::MAX`].
    #[inline]
    pub const fn checked_add(self, blocks: u32) -> Option<Height> {
        match self.0.checked_add(blocks) {
            Some(height) => Some(Height(height)),
            None => None,
        }
    }

    /// The height `blocks` below this one, or `None` below genesis.
    #[inline]
    pub const fn checked_sub(self, blocks: u32) -> Option<Height> {
        match self.0.checked_sub(blocks) {
            Some(height) => Some(Height(height)),
            None => None,
        }
    }

    /// The height `blocks` below this one, or genesis when that would be
    /// below it (Core's `std::max(height - blocks, 0)`).
    #[inline]
    pub const fn saturating_sub(self, blocks: u32) -> Height {
        Height(self.0.saturating_sub(blocks))
    }

    /// The height of a child of the block at this height.
    #[inline]
    pub const fn next(self) -> Option<Height> {
        self.checked_add(1)
    }

    /// Blocks from `earlier` up to this height (a coin created at `earlier`
    /// and spent here has this depth); zero when `earlier` is not below.
    #[inline]
    pub const fn blocks_since(self, earlier: Height) -> u32 {
        self.0.saturating_sub(earlier.0)
    }
}

impl From<u32> for Height {
    #[inline]
    fn from(blocks: u32) -> Height {
        Height(blocks)
    }
}

impl From<Height> for u32 {
    #[inline]
    fn from(height: Height) -> u32 {
        height.0
    }
}

impl From<Height> for u64 {
    #[inline]
    fn from(height: Height) -> u64 {
        u64::from(height.0)
    }
}

impl From<Height> for i64 {
    #[inline]
    fn from(height: Height) -> i64 {
        i64::from(height.0)
    }
}

impl fmt::Display for Height {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, formatter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_is_checked_at_the_ends() {
        assert_eq!(Height::new(7).checked_add(3), Some(Height::new(10)));
        assert_eq!(Height::MAX.checked_add(1), None);
        assert_eq!(Height::MAX.next(), None);
        assert_eq!(Height::ZERO.next(), Some(Height::new(1)));
        assert_eq!(Height::new(7).checked_sub(7), Some(Height::ZERO));
        assert_eq!(Height::ZERO.checked_sub(1), None);
        assert_eq!(Height::new(7).saturating_sub(3), Height::new(4));
        assert_eq!(Height::new(7).saturating_sub(8), Height::ZERO);
    }

    #[test]
    fn distances_saturate_at_zero() {
        assert_eq!(Height::new(200).blocks_since(Height::new(101)), 99);
        assert_eq!(Height::new(101).blocks_since(Height::new(200)), 0);
    }

    #[test]
    fn heights_order_print_and_convert_as_their_numbers() {
        assert!(Height::new(1) < Height::new(2));
        assert_eq!(Height::new(840_000).to_string(), "840000");
        assert_eq!(u32::from(Height::from(5u32)), 5);
        assert_eq!(i64::from(Height::MAX), i64::from(u32::MAX));
        assert_eq!(std::mem::size_of::<Height>(), 4);
    }
}
