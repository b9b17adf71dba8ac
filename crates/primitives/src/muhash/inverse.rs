//! Modular inverse modulo the MuHash prime, by the binary extended Euclidean
//! algorithm.
//!
//! Only [`super::MuHash3072::finalize`] needs it, once per digest. Each of the at
//! most ~2 × 3072 steps halves or subtracts 48-limb numbers, about 0.2 ms in all:
//! far slower than a multiplication, far faster than Fermat's `x^(p-2)` (3,072
//! squarings). The inputs are public set digests, so the data-dependent timing
//! does not matter.

use super::num3072::{Num3072, LIMBS};

/// Upper bound on the outer steps: each step makes `u` or `v` even and the next
/// one halves it, and `u · v < 2^6144` at the start.
const STEPS_MAX: usize = 4 * 3072 + 4;

type Limbs = [u64; LIMBS];

/// `x^-1 mod p` for `x` below the modulus; zero maps to zero, as in Core.
pub(crate) fn inverse(value: &Num3072) -> Num3072 {
    if value.limbs.iter().all(|&limb| limb == 0) {
        return *value;
    }
    // Invariants: value · x1 ≡ u and value · x2 ≡ v (mod p); x1, x2 < p.
    let mut u = value.limbs;
    let mut v = Num3072::MODULUS.limbs;
    let mut x1 = Num3072::ONE.limbs;
    let mut x2 = [0u64; LIMBS];
    for _ in 0..STEPS_MAX {
        if is_one(&u) {
            return Num3072 { limbs: x1 };
        }
        if is_one(&v) {
            return Num3072 { limbs: x2 };
        }
        halve_while_even(&mut u, &mut x1);
        halve_while_even(&mut v, &mut x2);
        if at_least(&u, &v) {
            subtract(&mut u, &v);
            subtract_modular(&mut x1, &x2);
        } else {
            subtract(&mut v, &u);
            subtract_modular(&mut x2, &x1);
        }
    }
    // Unreachable for a prime modulus and a non-zero input below it.
    debug_assert!(false, "modular inverse did not converge");
    Num3072 { limbs: [0; LIMBS] }
}

fn is_one(number: &Limbs) -> bool {
    let mut limbs = number.iter();
    limbs.next() == Some(&1) && limbs.all(|&limb| limb == 0)
}

fn is_zero(number: &Limbs) -> bool {
    number.iter().all(|&limb| limb == 0)
}

/// Divides `number` by two while it is even, halving `coefficient` modulo p
/// alongside.
fn halve_while_even(number: &mut Limbs, coefficient: &mut Limbs) {
    if is_zero(number) {
        return;
    }
    while number.first().is_some_and(|&low| low & 1 == 0) {
        shift_right_one(number, false);
        halve_modular(coefficient);
    }
}

/// `x / 2 mod p`: `x >> 1` when even, `(x + p) >> 1` when odd (p is odd).
fn halve_modular(number: &mut Limbs) {
    let odd = number.first().is_some_and(|&low| low & 1 == 1);
    let carry = odd && add(number, &Num3072::MODULUS.limbs);
    shift_right_one(number, carry);
}

/// `number >>= 1`, shifting `top_bit` into bit 3071.
fn shift_right_one(number: &mut Limbs, top_bit: bool) {
    let mut incoming = u64::from(top_bit);
    for limb in number.iter_mut().rev() {
        let outgoing = *limb & 1;
        *limb = (*limb >> 1) | (incoming << 63);
        incoming = outgoing;
    }
}

/// `left += right`; returns the carry out of bit 3072.
fn add(left: &mut Limbs, right: &Limbs) -> bool {
    let mut carry = false;
    for (left_limb, &right_limb) in left.iter_mut().zip(right.iter()) {
        let (sum, first) = left_limb.overflowing_add(right_limb);
        let (sum, second) = sum.overflowing_add(u64::from(carry));
        *left_limb = sum;
        carry = first || second;
    }
    carry
}

/// `left -= right`; returns the borrow.
fn subtract(left: &mut Limbs, right: &Limbs) -> bool {
    let mut borrow = false;
    for (left_limb, &right_limb) in left.iter_mut().zip(right.iter()) {
        let (difference, first) = left_limb.overflowing_sub(right_limb);
        let (difference, second) = difference.overflowing_sub(u64::from(borrow));
        *left_limb = difference;
        borrow = first || second;
    }
    borrow
}

/// `left = left - right mod p` for both below p.
fn subtract_modular(left: &mut Limbs, right: &Limbs) {
    if subtract(left, right) {
        add(left, &Num3072::MODULUS.limbs);
    }
}

/// `left >= right`.
fn at_least(left: &Limbs, right: &Limbs) -> bool {
    for (&left_limb, &right_limb) in left.iter().rev().zip(right.iter().rev()) {
        if left_limb != right_limb {
            return left_limb > right_limb;
        }
    }
    true
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
    fn zero_has_zero_inverse() {
        let zero = Num3072 { limbs: [0; LIMBS] };
        assert!(inverse(&zero) == zero);
    }
}
