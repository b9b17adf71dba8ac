//! Modular inverse modulo the MuHash prime by Bernstein–Yang divsteps, batched
//! 62 at a time ("safegcd", as in libsecp256k1's `safegcd_implementation.md`
//! and Core's `Num3072::GetInverse`).
//!
//! Only [`super::MuHash3072::finalize`] needs it, once per digest. `f` starts as
//! the modulus and `g` as the input; each divstep halves `g` after making it
//! even with `g ± f`, and the gcd (1) is reached in at most ~8,900 divsteps for
//! 3072 bits. 62 divsteps depend only on the low 62 bits of `f` and `g`, so they
//! are computed on one word as a 2×2 matrix, which is then applied to the full
//! numbers `f`, `g` and to the coefficients `d`, `e` (`f ≡ d·x`, `g ≡ e·x mod p`),
//! the latter made divisible by 2^62 by adding a multiple of p. Numbers are
//! 50 signed limbs of 62 bits so products fit in `i128`. About 145 batches of
//! ~50×8 multiplies at most. The inputs are public set digests, so the
//! data-dependent timing does not matter. Array indices here are loop counters
//! below the fixed array lengths.

use super::num3072::{Num3072, LIMBS, PRIME_DIFFERENCE};

/// Bits per signed limb.
const LIMB_BITS: u32 = 62;
/// Signed limbs: 50 × 62 = 3,100 bits hold a 3072-bit number and its sign.
const SIGNED_LIMBS: usize = 50;
const LIMB_MASK: u64 = (1 << LIMB_BITS) - 1;
/// The modulus is `-1103717 + 2^TOP_BITS · 2^(62·49)`.
const TOP_BITS: u32 = 3072 - 62 * (SIGNED_LIMBS as u32 - 1);
/// Upper bound on batches: Bernstein and Yang prove `(49·d + 57) / 17` divsteps
/// (8,858 for d = 3072) enough for this variant (δ starting at 1); 9,000 leaves
/// a margin. The loop stops as soon as `g` is zero, after ~75 batches typically.
const BATCHES_MAX: usize = 9_000 / LIMB_BITS as usize + 1;

const _: () = assert!(SIGNED_LIMBS as u32 * LIMB_BITS > 3072 + 1);
const _: () = assert!(TOP_BITS == 34);

/// `p^-1 mod 2^62`: `p ≡ -1103717`, and `1103717^-1` by Newton's iteration
/// (each round doubles the correct low bits, from 3 for any odd number).
const MODULUS_INVERSE: u64 = {
    let mut inverse = PRIME_DIFFERENCE;
    let mut round = 0;
    while round < 5 {
        inverse = inverse.wrapping_mul(2u64.wrapping_sub(PRIME_DIFFERENCE.wrapping_mul(inverse)));
        round += 1;
    }
    inverse.wrapping_neg() & LIMB_MASK
};
const _: () =
    assert!((PRIME_DIFFERENCE.wrapping_neg().wrapping_mul(MODULUS_INVERSE)) & LIMB_MASK == 1);

type Signed = [i64; SIGNED_LIMBS];

/// The transition matrix of 62 divsteps, scaled by 2^62:
/// `2^62 · (f', g') = (u·f + v·g, q·f + r·g)`.
#[derive(Clone, Copy)]
struct Matrix {
    u: i64,
    v: i64,
    q: i64,
    r: i64,
}

/// `x^-1 mod p` for `x` below the modulus; zero maps to zero, as in Core.
pub(crate) fn inverse(value: &Num3072) -> Num3072 {
    let mut f = modulus_signed();
    let mut g = to_signed(value);
    let mut d = [0i64; SIGNED_LIMBS];
    let mut e = [0i64; SIGNED_LIMBS];
    e[0] = 1;
    let mut delta = 1i64;
    for _ in 0..BATCHES_MAX {
        if g.iter().all(|&limb| limb == 0) {
            break;
        }
        let (next_delta, matrix) = divsteps(delta, low_bits(&f), low_bits(&g));
        delta = next_delta;
        update_fg(&mut f, &mut g, matrix);
        update_de(&mut d, &mut e, matrix);
    }
    // g = 0 and f = ±gcd = ±1 (for x = 0, f = p and d = 0, so the result is 0).
    debug_assert!(g.iter().all(|&limb| limb == 0));
    let f_negative = f[SIGNED_LIMBS - 1] < 0;
    normalize(&mut d, f_negative);
    from_signed(&d)
}

fn low_bits(number: &Signed) -> u64 {
    number[0] as u64
}

/// 62 divsteps on the low words of `f` (odd) and `g`.
fn divsteps(mut delta: i64, mut f: u64, mut g: u64) -> (i64, Matrix) {
    let (mut u, mut v, mut q, mut r) = (1i64, 0i64, 0i64, 1i64);
    for _ in 0..LIMB_BITS {
        if g & 1 == 0 {
            delta += 1;
            g >>= 1;
            u <<= 1;
            v <<= 1;
        } else if delta > 0 {
            delta = 1 - delta;
            let old_f = f;
            f = g;
            g = g.wrapping_sub(old_f) >> 1;
            (u, v, q, r) = (q << 1, r << 1, q - u, r - v);
        } else {
            delta += 1;
            g = g.wrapping_add(f) >> 1;
            (u, v, q, r) = (u << 1, v << 1, q + u, r + v);
        }
    }
    (delta, Matrix { u, v, q, r })
}

/// `(f, g) = M · (f, g) / 2^62`, exact by construction of the matrix.
fn update_fg(f: &mut Signed, g: &mut Signed, matrix: Matrix) {
    let Matrix { u, v, q, r } = matrix;
    let (mut carry_f, mut carry_g) = (0i128, 0i128);
    for index in 0..SIGNED_LIMBS {
        let (f_limb, g_limb) = (i128::from(f[index]), i128::from(g[index]));
        carry_f += i128::from(u) * f_limb + i128::from(v) * g_limb;
        carry_g += i128::from(q) * f_limb + i128::from(r) * g_limb;
        if index > 0 {
            f[index - 1] = (carry_f as u64 & LIMB_MASK) as i64;
            g[index - 1] = (carry_g as u64 & LIMB_MASK) as i64;
        } else {
            debug_assert!(carry_f as u64 & LIMB_MASK == 0 && carry_g as u64 & LIMB_MASK == 0);
        }
        carry_f >>= LIMB_BITS;
        carry_g >>= LIMB_BITS;
    }
    f[SIGNED_LIMBS - 1] = carry_f as i64;
    g[SIGNED_LIMBS - 1] = carry_g as i64;
}

/// `(d, e) = (M · (d, e) + p · (md, me)) / 2^62`, with `md`, `me` chosen to make
/// the division exact. Inputs in `(-2p, p)` give outputs in `(-2p, p)`: adding
/// the matrix column of a negative input first keeps the range (the safegcd
/// write-up's argument).
fn update_de(d: &mut Signed, e: &mut Signed, matrix: Matrix) {
    let Matrix { u, v, q, r } = matrix;
    let d_negative = d[SIGNED_LIMBS - 1] < 0;
    let e_negative = e[SIGNED_LIMBS - 1] < 0;
    let mut md = if d_negative { u } else { 0 } + if e_negative { v } else { 0 };
    let mut me = if d_negative { q } else { 0 } + if e_negative { r } else { 0 };
    let mut carry_d = i128::from(u) * i128::from(d[0]) + i128::from(v) * i128::from(e[0]);
    let mut carry_e = i128::from(q) * i128::from(d[0]) + i128::from(r) * i128::from(e[0]);
    md -= (MODULUS_INVERSE.wrapping_mul(carry_d as u64).wrapping_add(md as u64) & LIMB_MASK) as i64;
    me -= (MODULUS_INVERSE.wrapping_mul(carry_e as u64).wrapping_add(me as u64) & LIMB_MASK) as i64;
    // The modulus's low limb is -1103717.
    carry_d -= i128::from(PRIME_DIFFERENCE) * i128::from(md);
    carry_e -= i128::from(PRIME_DIFFERENCE) * i128::from(me);
    debug_assert!(carry_d as u64 & LIMB_MASK == 0 && carry_e as u64 & LIMB_MASK == 0);
    carry_d >>= LIMB_BITS;
    carry_e >>= LIMB_BITS;
    for index in 1..SIGNED_LIMBS {
        let (d_limb, e_limb) = (i128::from(d[index]), i128::from(e[index]));
        carry_d += i128::from(u) * d_limb + i128::from(v) * e_limb;
        carry_e += i128::from(q) * d_limb + i128::from(r) * e_limb;
        if index == SIGNED_LIMBS - 1 {
            // The modulus's top limb is 2^34.
            carry_d += i128::from(md) << TOP_BITS;
            carry_e += i128::from(me) << TOP_BITS;
        }
        d[index - 1] = (carry_d as u64 & LIMB_MASK) as i64;
        e[index - 1] = (carry_e as u64 & LIMB_MASK) as i64;
        carry_d >>= LIMB_BITS;
        carry_e >>= LIMB_BITS;
    }
    d[SIGNED_LIMBS - 1] = carry_d as i64;
    e[SIGNED_LIMBS - 1] = carry_e as i64;
}

/// Brings `d` from `(-2p, p)` to `[0, p)`, negated first if `negate`.
fn normalize(d: &mut Signed, negate: bool) {
    add_modulus_if_negative(d);
    if negate {
        for limb in d.iter_mut() {
            *limb = -*limb;
        }
        propagate_carries(d);
    }
    add_modulus_if_negative(d);
}

fn add_modulus_if_negative(number: &mut Signed) {
    propagate_carries(number);
    if number[SIGNED_LIMBS - 1] < 0 {
        number[0] -= PRIME_DIFFERENCE as i64;
        number[SIGNED_LIMBS - 1] += 1 << TOP_BITS;
        propagate_carries(number);
    }
}

/// Makes every limb but the top one lie in `[0, 2^62)`; the top one keeps the sign.
fn propagate_carries(number: &mut Signed) {
    for index in 0..SIGNED_LIMBS - 1 {
        let carry = number[index] >> LIMB_BITS;
        number[index] &= LIMB_MASK as i64;
        number[index + 1] += carry;
    }
}

fn modulus_signed() -> Signed {
    let mut modulus = [0i64; SIGNED_LIMBS];
    modulus[0] = -(PRIME_DIFFERENCE as i64);
    modulus[SIGNED_LIMBS - 1] = 1 << TOP_BITS;
    modulus
}

/// Repacks 64-bit limbs into 62-bit ones.
fn to_signed(number: &Num3072) -> Signed {
    let mut out = [0i64; SIGNED_LIMBS];
    let mut window = 0u128;
    let mut window_bits = 0u32;
    let mut limbs = number.limbs.iter();
    for slot in out.iter_mut() {
        if window_bits < LIMB_BITS {
            if let Some(&limb) = limbs.next() {
                window |= u128::from(limb) << window_bits;
                window_bits += 64;
            }
        }
        *slot = (window as u64 & LIMB_MASK) as i64;
        window >>= LIMB_BITS;
        window_bits = window_bits.saturating_sub(LIMB_BITS);
    }
    out
}

/// Repacks normalised, non-negative 62-bit limbs below 2^3072 into 64-bit ones.
fn from_signed(number: &Signed) -> Num3072 {
    let mut out = Num3072 { limbs: [0; LIMBS] };
    let mut slots = out.limbs.iter_mut();
    let mut window = 0u128;
    let mut window_bits = 0u32;
    for &limb in number.iter() {
        window |= u128::from(limb as u64) << window_bits;
        window_bits += LIMB_BITS;
        if window_bits >= 64 {
            if let Some(slot) = slots.next() {
                *slot = window as u64;
            }
            window >>= 64;
            window_bits -= 64;
        }
    }
    debug_assert!(window == 0);
    out
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
