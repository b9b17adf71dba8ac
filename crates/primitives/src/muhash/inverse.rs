//! Modular inverse modulo the MuHash prime, by the binary extended Euclidean
//! algorithm.
//!
//! Only [`super::MuHash3072::finalize`] needs it, once per digest. The invariants
//! are `x · a ≡ u` and `y · a ≡ v (mod p)`, starting from `u = a`, `v = p`; each
//! step strips the factors of two from `u` and `v` (dividing `x` or `y` by the
//! same power of two modulo p in one pass) and subtracts the smaller from the
//! larger, until one of them is 1. `u · v` loses at least one bit per step, so
//! there are at most 6,144 steps; `u` and `v` shrink, and only their live limbs
//! are touched. About 0.3–0.7 ms on this machine: far slower than a
//! multiplication, far faster than Fermat's `a^(p-2)` (3,072 squarings at ~2 µs).
//! The inputs are public set digests, so the data-dependent timing does not
//! matter.

use super::num3072::{Num3072, LIMBS, PRIME_DIFFERENCE};

/// Upper bound on the steps: `u · v < 2^6144` at the start and loses a bit per step.
const STEPS_MAX: usize = 2 * 3072 + 2;

/// `1103717^-1 mod 2^64`, by Newton's iteration (each round doubles the correct
/// low bits, from 3 for any odd number).
const PRIME_DIFFERENCE_INVERSE: u64 = {
    let mut inverse = PRIME_DIFFERENCE;
    let mut round = 0;
    while round < 5 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(PRIME_DIFFERENCE.wrapping_mul(inverse)));
        round += 1;
    }
    inverse
};
const _: () = assert!(PRIME_DIFFERENCE.wrapping_mul(PRIME_DIFFERENCE_INVERSE) == 1);

/// `a^-1 mod p` for `a` below the modulus; zero maps to zero, as in Core.
pub(crate) fn inverse(value: &Num3072) -> Num3072 {
    let mut u = Shrinking::new(value.limbs);
    if u.length == 0 {
        return *value;
    }
    let mut v = Shrinking::new(Num3072::MODULUS.limbs);
    let mut x = Num3072::ONE;
    let mut y = Num3072 { limbs: [0; LIMBS] };
    for _ in 0..STEPS_MAX {
        remove_factors_of_two(&mut u, &mut x);
        remove_factors_of_two(&mut v, &mut y);
        if u.is_one() {
            return x;
        }
        if v.is_one() {
            return y;
        }
        if u.at_least(&v) {
            u.subtract(&v);
            subtract_modular(&mut x, &y);
        } else {
            v.subtract(&u);
            subtract_modular(&mut y, &x);
        }
    }
    // Unreachable for a prime modulus and a non-zero input below it.
    debug_assert!(false, "modular inverse did not converge");
    Num3072 { limbs: [0; LIMBS] }
}

/// A number whose limbs from `length` up are zero.
struct Shrinking {
    limbs: [u64; LIMBS],
    length: usize,
}

impl Shrinking {
    fn new(limbs: [u64; LIMBS]) -> Self {
        let mut number = Self { limbs, length: LIMBS };
        number.trim();
        number
    }

    fn live(&self) -> &[u64] {
        self.limbs.get(..self.length).unwrap_or(&[])
    }

    fn trim(&mut self) {
        while self.length > 0 && self.limbs.get(self.length - 1) == Some(&0) {
            self.length -= 1;
        }
    }

    fn is_one(&self) -> bool {
        self.length == 1 && self.limbs.first() == Some(&1)
    }

    fn at_least(&self, other: &Shrinking) -> bool {
        if self.length != other.length {
            return self.length > other.length;
        }
        for (&mine, &theirs) in self.live().iter().rev().zip(other.live().iter().rev()) {
            if mine != theirs {
                return mine > theirs;
            }
        }
        true
    }

    /// `self -= other` for `self >= other`.
    fn subtract(&mut self, other: &Shrinking) {
        let length = self.length;
        let mut borrow = false;
        let mut others = other.live().iter();
        for limb in self.limbs.iter_mut().take(length) {
            let theirs = others.next().copied().unwrap_or(0);
            let (difference, first) = limb.overflowing_sub(theirs);
            let (difference, second) = difference.overflowing_sub(u64::from(borrow));
            *limb = difference;
            borrow = first || second;
        }
        debug_assert!(!borrow);
        self.trim();
    }

    /// `self >>= shift` for `shift` in `1..64`.
    fn shift_right(&mut self, shift: u32) {
        let length = self.length;
        let mut incoming = 0u64;
        for limb in self.limbs.iter_mut().take(length).rev() {
            let outgoing = *limb;
            *limb = (*limb >> shift) | (incoming << (64 - shift));
            incoming = outgoing;
        }
        self.trim();
    }
}

/// Makes `number` odd by dividing out its factors of two, dividing
/// `coefficient` by the same powers of two modulo p.
fn remove_factors_of_two(number: &mut Shrinking, coefficient: &mut Num3072) {
    while number.length > 0 {
        let low = number.limbs.first().copied().unwrap_or(1);
        let shift = low.trailing_zeros().min(63);
        if shift == 0 {
            return;
        }
        number.shift_right(shift);
        divide_by_power_of_two(coefficient, shift);
    }
}

/// `x / 2^shift mod p` for `x < p` and `shift` in `1..64`: adds the multiple
/// `m · p` that clears the low `shift` bits (`m = x · 1103717^-1 mod 2^shift`,
/// since `p ≡ -1103717`), then shifts. `x + m · p = x - m · 1103717 + m · 2^3072`
/// and the quotient is below `p + p / 2^shift`, so one subtraction of p at most
/// brings it back below p.
fn divide_by_power_of_two(number: &mut Num3072, shift: u32) {
    let low = number.limbs.first().copied().unwrap_or(0);
    let multiple = low.wrapping_mul(PRIME_DIFFERENCE_INVERSE) & ((1u64 << shift) - 1);
    let mut owed = u128::from(multiple) * u128::from(PRIME_DIFFERENCE);
    for limb in number.limbs.iter_mut() {
        if owed == 0 {
            break;
        }
        let (difference, borrowed) = limb.overflowing_sub(owed as u64);
        *limb = difference;
        owed = (owed >> 64) + u128::from(borrowed);
    }
    debug_assert!(number.limbs.first().is_some_and(|&low| low & ((1u64 << shift) - 1) == 0));
    // A borrow out of bit 3072 is paid from the `m · 2^3072` term (m >= 1 then).
    let mut incoming = multiple - owed as u64;
    for limb in number.limbs.iter_mut().rev() {
        let outgoing = *limb;
        *limb = (*limb >> shift) | (incoming << (64 - shift));
        incoming = outgoing;
    }
    number.reduce_below_modulus();
}

/// `left = left - right mod p` for both below p.
fn subtract_modular(left: &mut Num3072, right: &Num3072) {
    let mut borrow = false;
    for (left_limb, &right_limb) in left.limbs.iter_mut().zip(right.limbs.iter()) {
        let (difference, first) = left_limb.overflowing_sub(right_limb);
        let (difference, second) = difference.overflowing_sub(u64::from(borrow));
        *left_limb = difference;
        borrow = first || second;
    }
    if borrow {
        // left - right + p = left - right + 2^3072 - 1103717: the wrapped value
        // already holds the 2^3072.
        let mut owed = PRIME_DIFFERENCE;
        for limb in left.limbs.iter_mut() {
            let (difference, borrowed) = limb.overflowing_sub(owed);
            *limb = difference;
            if !borrowed {
                break;
            }
            owed = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_inverse(number: Num3072) {
        let mut product = inverse(&number);
        product.multiply(&number);
        assert!(product == Num3072::ONE);
    }

    #[test]
    fn inverses_multiply_to_one() {
        let mut number = Num3072 { limbs: [0; LIMBS] };
        for value in [1u64, 2, 3, 1_103_717, u64::MAX] {
            number.limbs[0] = value;
            check_inverse(number);
        }
        let mut minus_one = Num3072::MODULUS;
        minus_one.limbs[0] -= 1;
        check_inverse(minus_one);
        let mut dense = Num3072 { limbs: [0x0123_4567_89ab_cdef; LIMBS] };
        dense.limbs[7] = 42;
        check_inverse(dense);
    }

    #[test]
    fn powers_of_two_invert() {
        for bit in [1usize, 63, 64, 65, 200, 3071] {
            let mut power = Num3072 { limbs: [0; LIMBS] };
            power.limbs[bit / 64] = 1 << (bit % 64);
            check_inverse(power);
        }
    }

    #[test]
    fn zero_has_zero_inverse() {
        let zero = Num3072 { limbs: [0; LIMBS] };
        assert!(inverse(&zero) == zero);
    }
}
