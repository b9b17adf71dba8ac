//! A 256-bit unsigned integer with exactly the arithmetic Bitcoin Core's
//! `arith_uint256` gives proof of work: wrapping addition and multiplication,
//! long division, shifts that drop bits, and Core's limb-by-limb conversion
//! to `f64`.

use std::cmp::Ordering;

/// A 256-bit unsigned integer, stored as four little-endian 64-bit limbs.
///
/// Hashes read as numbers little-endian, as Core's `UintToArith256` does: the
/// block hash displayed `0000...e26f` is the number `0x0000...e26f`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct U256([u64; 4]);

const LIMBS: usize = 4;
const BITS: u32 = 256;

impl U256 {
    /// Zero.
    pub const ZERO: U256 = U256([0; LIMBS]);
    /// One.
    pub const ONE: U256 = U256([1, 0, 0, 0]);
    /// 2^256 - 1.
    pub const MAX: U256 = U256([u64::MAX; LIMBS]);

    /// The number with these limbs, least significant first.
    pub const fn from_limbs(limbs: [u64; 4]) -> U256 {
        U256(limbs)
    }

    /// The limbs, least significant first.
    pub const fn to_limbs(self) -> [u64; 4] {
        self.0
    }

    /// A number that fits in 64 bits.
    pub const fn from_u64(value: u64) -> U256 {
        U256([value, 0, 0, 0])
    }

    /// Reads 32 little-endian bytes (a hash's internal byte order).
    pub const fn from_le_bytes(bytes: [u8; 32]) -> U256 {
        let mut limbs = [0u64; LIMBS];
        let mut limb = 0;
        while limb < LIMBS {
            let mut chunk = [0u8; 8];
            let mut byte = 0;
            while byte < 8 {
                chunk[byte] = bytes[limb * 8 + byte];
                byte += 1;
            }
            limbs[limb] = u64::from_le_bytes(chunk);
            limb += 1;
        }
        U256(limbs)
    }

    /// The 32 little-endian bytes (a hash's internal byte order).
    pub fn to_le_bytes(self) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        for (chunk, limb) in bytes.chunks_exact_mut(8).zip(self.0) {
            chunk.copy_from_slice(&limb.to_le_bytes());
        }
        bytes
    }

    /// 64 lower-case hex digits, most significant first (Core's `GetHex`).
    pub fn to_hex(self) -> String {
        let mut bytes = self.to_le_bytes();
        bytes.reverse();
        crate::hex::encode(&bytes)
    }

    /// Parses 64 hex digits, most significant first.
    pub fn from_hex(text: &str) -> Result<U256, crate::hex::HexError> {
        let mut bytes = crate::hex::decode_array::<32>(text)?;
        bytes.reverse();
        Ok(U256::from_le_bytes(bytes))
    }

    /// The low 64 bits (Core's `GetLow64`).
    pub const fn low_u64(self) -> u64 {
        self.0[0]
    }

    /// Whether the number is zero.
    pub const fn is_zero(self) -> bool {
        self.0[0] == 0 && self.0[1] == 0 && self.0[2] == 0 && self.0[3] == 0
    }

    /// Bits needed to write the number: 0 for zero, else one more than the
    /// position of the highest set bit (Core's `bits()`).
    pub const fn bits(self) -> u32 {
        let mut limb = LIMBS;
        while limb > 0 {
            limb -= 1;
            if self.0[limb] != 0 {
                return limb as u32 * 64 + (64 - self.0[limb].leading_zeros());
            }
        }
        0
    }

    /// Every bit flipped (Core's `operator~`).
    pub const fn not(self) -> U256 {
        U256([!self.0[0], !self.0[1], !self.0[2], !self.0[3]])
    }

    /// Sum modulo 2^256.
    pub const fn wrapping_add(self, other: U256) -> U256 {
        let mut result = [0u64; LIMBS];
        let mut carry = false;
        let mut limb = 0;
        while limb < LIMBS {
            let (sum, overflow_first) = self.0[limb].overflowing_add(other.0[limb]);
            let (sum, overflow_second) = sum.overflowing_add(carry as u64);
            result[limb] = sum;
            carry = overflow_first || overflow_second;
            limb += 1;
        }
        U256(result)
    }

    /// Difference modulo 2^256.
    pub const fn wrapping_sub(self, other: U256) -> U256 {
        let mut result = [0u64; LIMBS];
        let mut borrow = false;
        let mut limb = 0;
        while limb < LIMBS {
            let (difference, borrow_first) = self.0[limb].overflowing_sub(other.0[limb]);
            let (difference, borrow_second) = difference.overflowing_sub(borrow as u64);
            result[limb] = difference;
            borrow = borrow_first || borrow_second;
            limb += 1;
        }
        U256(result)
    }

    /// Product modulo 2^256, as Core's `arith_uint256 *= uint64_t` gives it.
    pub const fn wrapping_mul_u64(self, factor: u64) -> U256 {
        let mut result = [0u64; LIMBS];
        let mut carry: u128 = 0;
        let mut limb = 0;
        while limb < LIMBS {
            let product = self.0[limb] as u128 * factor as u128 + carry;
            result[limb] = product as u64;
            carry = product >> 64;
            limb += 1;
        }
        U256(result)
    }

    /// Shifted towards the most significant bit; bits pushed past 2^256 are
    /// dropped and a shift of 256 or more gives zero.
    pub const fn shl(self, shift: u32) -> U256 {
        if shift >= BITS {
            return U256::ZERO;
        }
        let limb_shift = (shift / 64) as usize;
        let bit_shift = shift % 64;
        let mut result = [0u64; LIMBS];
        let mut limb = limb_shift;
        while limb < LIMBS {
            let source = limb - limb_shift;
            result[limb] = self.0[source] << bit_shift;
            if bit_shift != 0 && source > 0 {
                result[limb] |= self.0[source - 1] >> (64 - bit_shift);
            }
            limb += 1;
        }
        U256(result)
    }

    /// Shifted towards the least significant bit; a shift of 256 or more
    /// gives zero.
    pub const fn shr(self, shift: u32) -> U256 {
        if shift >= BITS {
            return U256::ZERO;
        }
        let limb_shift = (shift / 64) as usize;
        let bit_shift = shift % 64;
        let mut result = [0u64; LIMBS];
        let mut limb = 0;
        while limb + limb_shift < LIMBS {
            let source = limb + limb_shift;
            result[limb] = self.0[source] >> bit_shift;
            if bit_shift != 0 && source + 1 < LIMBS {
                result[limb] |= self.0[source + 1] << (64 - bit_shift);
            }
            limb += 1;
        }
        U256(result)
    }

    /// The quotient rounded down, or `None` when dividing by zero (where
    /// Core's `operator/=` throws).
    pub fn checked_div(self, divisor: U256) -> Option<U256> {
        if divisor.is_zero() {
            return None;
        }
        let numerator_bits = self.bits();
        let divisor_bits = divisor.bits();
        if divisor_bits > numerator_bits {
            return Some(U256::ZERO);
        }
        // Binary long division: align the divisor under the numerator's top
        // bit, then subtract it wherever it fits, one bit of quotient a step.
        let mut shift = numerator_bits - divisor_bits;
        let mut remainder = self;
        let mut shifted_divisor = divisor.shl(shift);
        let mut quotient = U256::ZERO;
        loop {
            if remainder >= shifted_divisor {
                remainder = remainder.wrapping_sub(shifted_divisor);
                quotient.0[(shift / 64) as usize] |= 1u64 << (shift % 64);
            }
            if shift == 0 {
                return Some(quotient);
            }
            shifted_divisor = shifted_divisor.shr(1);
            shift -= 1;
        }
    }

    /// The nearest `f64` as Core's `getdouble` computes it: 32-bit limbs,
    /// least significant first, each scaled by its power of 2^32 and summed
    /// in that order (so the rounding is Core's too).
    pub fn to_f64_like_core(self) -> f64 {
        const LIMB_32_SCALE: f64 = 4_294_967_296.0;
        let mut total = 0.0;
        let mut scale = 1.0;
        for limb in self.0 {
            for half in [limb & 0xffff_ffff, limb >> 32] {
                total += scale * half as f64;
                scale *= LIMB_32_SCALE;
            }
        }
        total
    }
}

impl Ord for U256 {
    fn cmp(&self, other: &U256) -> Ordering {
        self.0.iter().rev().cmp(other.0.iter().rev())
    }
}

impl PartialOrd for U256 {
    fn partial_cmp(&self, other: &U256) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for U256 {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "U256(0x{})", self.to_hex())
    }
}

impl std::fmt::Display for U256 {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.to_hex())
    }
}

impl From<u64> for U256 {
    fn from(value: u64) -> U256 {
        U256::from_u64(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(text: &str) -> U256 {
        U256::from_hex(text).unwrap()
    }

    const SAMPLE: &str = "7d1de5eaf9b156d53208f033b5aa8122d2d2355d5e12292b121156cfdb4a529c";

    #[test]
    fn hex_round_trips_and_orders_numerically() {
        let value = hex(SAMPLE);
        assert_eq!(value.to_hex(), SAMPLE);
        assert!(U256::from_u64(1).shl(255) > U256::from_u64(u64::MAX));
        assert!(U256::ZERO < U256::ONE);
        assert_eq!(U256::MAX.bits(), 256);
        assert_eq!(U256::ZERO.bits(), 0);
        assert_eq!(U256::from_u64(0x80).bits(), 8);
    }

    #[test]
    fn shifts_move_and_drop_bits() {
        let value = U256::from_u64(0xdead_beef_1234_5678);
        for shift in 0..192u32 {
            assert_eq!(value.shl(shift).shr(shift), value, "shift {shift}");
            assert_eq!(value.shl(shift).bits(), value.bits() + shift);
        }
        for shift in 256..260u32 {
            assert_eq!(value.shl(shift), U256::ZERO);
        }
        assert_eq!(U256::ONE.shl(64), U256([0, 1, 0, 0]));
        assert_eq!(U256::ONE.shl(255).shr(255), U256::ONE);
        assert_eq!(U256([0, 1, 0, 0]).shr(1), U256([1 << 63, 0, 0, 0]));
        assert_eq!(U256::MAX.shl(256), U256::ZERO);
        assert_eq!(U256::MAX.shr(300), U256::ZERO);
        assert_eq!(U256::MAX.shr(252), U256::from_u64(0xf));
    }

    #[test]
    fn addition_and_multiplication_wrap_like_core() {
        assert_eq!(U256::MAX.wrapping_add(U256::ONE), U256::ZERO);
        assert_eq!(U256::ZERO.wrapping_sub(U256::ONE), U256::MAX);
        assert_eq!(U256::MAX.wrapping_mul_u64(2), U256::MAX.wrapping_sub(U256::ONE));
        let value = hex(SAMPLE);
        assert_eq!(value.wrapping_mul_u64(1 << 20), value.shl(20));
    }

    #[test]
    fn division_matches_multiplication() {
        let value = hex(SAMPLE);
        for divisor in [1u64, 2, 3, 600, 1_209_600, u64::MAX] {
            let quotient = value.checked_div(U256::from_u64(divisor)).unwrap();
            let product = quotient.wrapping_mul_u64(divisor);
            assert!(product <= value);
            assert!(value.wrapping_sub(product) < U256::from_u64(divisor));
        }
        assert_eq!(value.checked_div(U256::ZERO), None);
        assert_eq!(U256::ONE.checked_div(value), Some(U256::ZERO));
        assert_eq!(value.checked_div(value), Some(U256::ONE));
    }

    #[test]
    fn conversion_to_f64_is_exact_for_powers_of_two() {
        for shift in 0..256 {
            assert_eq!(U256::ONE.shl(shift).to_f64_like_core(), 2f64.powi(shift as i32));
        }
        assert_eq!(U256::ZERO.to_f64_like_core(), 0.0);
    }
}
