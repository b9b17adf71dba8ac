//! The 6144-bit product of two 3072-bit numbers.
//!
//! Schoolbook multiplication of 48 limbs is 2,304 64×64→128-bit multiplies.
//! Karatsuba's identity `a0·b1 + a1·b0 = a0·b0 + a1·b1 - (a0 - a1)·(b0 - b1)`
//! replaces the four half-size products by three; applied twice (48 → 24 → 12
//! limbs) it needs 9 × 144 = 1,296 multiplies plus a few hundred limb additions;
//! a third level costs more in additions than it saves (measured: 48-limb
//! schoolbook ~1.9 µs, one level ~1.7 µs, two levels with a fixed-size 12-limb
//! base ~1.3 µs, three levels ~2.2 µs). The subtractive form keeps every
//! operand at half size: the differences are taken in absolute value and the
//! sign is applied when combining.

use super::num3072::LIMBS;

/// Operands of at most this many limbs (or of odd length) use schoolbook rows.
const SCHOOLBOOK_LIMBS_MAX: usize = 12;
/// Where the recursion from 48 limbs bottoms out.
const BASE_LIMBS: usize = LIMBS / 4;
const _: () = assert!(BASE_LIMBS == SCHOOLBOOK_LIMBS_MAX);

/// `left × right` for 48-limb operands.
pub(crate) fn wide_product(left: &[u64; LIMBS], right: &[u64; LIMBS]) -> [u64; 2 * LIMBS] {
    let mut product = [0u64; 2 * LIMBS];
    multiply_into(left, right, &mut product);
    product
}

/// Writes `left × right` into `out`; `left` and `right` have equal lengths of
/// at most [`LIMBS`] and `out` twice that.
fn multiply_into(left: &[u64], right: &[u64], out: &mut [u64]) {
    let length = left.len();
    debug_assert!(right.len() == length && out.len() == 2 * length && length <= LIMBS);
    if length <= SCHOOLBOOK_LIMBS_MAX || length % 2 == 1 {
        schoolbook(left, right, out);
        return;
    }
    let half = length / 2;
    let (left_low, left_high) = left.split_at(half);
    let (right_low, right_high) = right.split_at(half);
    let mut left_difference = [0u64; LIMBS / 2];
    let mut right_difference = [0u64; LIMBS / 2];
    let mut cross = [0u64; LIMBS];
    let left_difference = left_difference.get_mut(..half).unwrap_or(&mut []);
    let right_difference = right_difference.get_mut(..half).unwrap_or(&mut []);
    let cross = cross.get_mut(..length).unwrap_or(&mut []);
    let left_negative = absolute_difference(left_low, left_high, left_difference);
    let right_negative = absolute_difference(right_low, right_high, right_difference);
    multiply_into(left_difference, right_difference, cross);
    let (low, high) = out.split_at_mut(length);
    multiply_into(left_low, right_low, low);
    multiply_into(left_high, right_high, high);
    // middle = a0·b0 + a1·b1 ∓ |a0 - a1|·|b0 - b1| = a0·b1 + a1·b0 < 2^(128·half + 1).
    let mut middle = [0u64; LIMBS];
    let middle = middle.get_mut(..length).unwrap_or(&mut []);
    middle.copy_from_slice(low);
    let mut middle_top = u64::from(add_assign(middle, high));
    if left_negative == right_negative {
        middle_top -= u64::from(subtract_assign(middle, cross));
    } else {
        middle_top += u64::from(add_assign(middle, cross));
    }
    let shifted = out.get_mut(half..).unwrap_or(&mut []);
    let (overlapped, above) = shifted.split_at_mut(length.min(shifted.len()));
    let carry = add_assign(overlapped, middle);
    let carried_out = add_limb_assign(above, middle_top + u64::from(carry));
    debug_assert!(!carried_out);
}

/// Row-by-row multiplication; each row is a carry chain the compiler turns into
/// `mul`/`adc` sequences.
fn schoolbook(left: &[u64], right: &[u64], out: &mut [u64]) {
    if let (Ok(left), Ok(right)) = (<&[u64; BASE_LIMBS]>::try_from(left), right.try_into()) {
        out.copy_from_slice(&schoolbook_fixed(left, right));
        return;
    }
    out.fill(0);
    let length = right.len();
    for (offset, &left_limb) in left.iter().enumerate() {
        let left_wide = u128::from(left_limb);
        let mut carry = 0u64;
        let row = out.iter_mut().skip(offset);
        for (slot, &right_limb) in row.zip(right.iter()) {
            let wide = left_wide * u128::from(right_limb) + u128::from(*slot) + u128::from(carry);
            *slot = wide as u64;
            carry = (wide >> 64) as u64;
        }
        if let Some(slot) = out.get_mut(offset + length) {
            *slot = carry;
        }
    }
}

/// [`schoolbook`] at the size the recursion bottoms out at: with fixed lengths
/// the compiler unrolls the rows and drops the bounds checks (~25% faster).
fn schoolbook_fixed(left: &[u64; BASE_LIMBS], right: &[u64; BASE_LIMBS]) -> [u64; 2 * BASE_LIMBS] {
    let mut product = [0u64; 2 * BASE_LIMBS];
    for (offset, &left_limb) in left.iter().enumerate() {
        let left_wide = u128::from(left_limb);
        let mut carry = 0u64;
        for (slot, &right_limb) in product.iter_mut().skip(offset).zip(right.iter()) {
            let wide = left_wide * u128::from(right_limb) + u128::from(*slot) + u128::from(carry);
            *slot = wide as u64;
            carry = (wide >> 64) as u64;
        }
        if let Some(slot) = product.get_mut(offset + BASE_LIMBS) {
            *slot = carry;
        }
    }
    product
}

/// Writes `|low - high|` into `out`; returns whether `low < high`.
fn absolute_difference(low: &[u64], high: &[u64], out: &mut [u64]) -> bool {
    out.copy_from_slice(low);
    if subtract_assign(out, high) {
        out.copy_from_slice(high);
        subtract_assign(out, low);
        return true;
    }
    false
}

/// `target += addend` for equal lengths; returns the carry out.
fn add_assign(target: &mut [u64], addend: &[u64]) -> bool {
    let mut carry = false;
    for (limb, &other) in target.iter_mut().zip(addend.iter()) {
        let (sum, first) = limb.overflowing_add(other);
        let (sum, second) = sum.overflowing_add(u64::from(carry));
        *limb = sum;
        carry = first || second;
    }
    carry
}

/// `target -= subtrahend` for equal lengths; returns the borrow out.
fn subtract_assign(target: &mut [u64], subtrahend: &[u64]) -> bool {
    let mut borrow = false;
    for (limb, &other) in target.iter_mut().zip(subtrahend.iter()) {
        let (difference, first) = limb.overflowing_sub(other);
        let (difference, second) = difference.overflowing_sub(u64::from(borrow));
        *limb = difference;
        borrow = first || second;
    }
    borrow
}

/// `target += value`, carrying through `target`; returns the carry out.
fn add_limb_assign(target: &mut [u64], value: u64) -> bool {
    let mut carry = value;
    for limb in target.iter_mut() {
        let (sum, overflow) = limb.overflowing_add(carry);
        *limb = sum;
        if !overflow {
            return false;
        }
        carry = 1;
    }
    carry != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain schoolbook product, by the slice path (48 limbs is not the
    /// fixed size).
    fn schoolbook_product(left: &[u64; LIMBS], right: &[u64; LIMBS]) -> [u64; 2 * LIMBS] {
        let mut product = [0u64; 2 * LIMBS];
        schoolbook(left, right, &mut product);
        product
    }

    fn limbs(values: Vec<u64>) -> [u64; LIMBS] {
        let mut limbs = [0u64; LIMBS];
        limbs.copy_from_slice(&values);
        limbs
    }

    #[test]
    fn extremes_match_schoolbook() {
        let all_ones = [u64::MAX; LIMBS];
        let mut halves = [0u64; LIMBS];
        halves[LIMBS / 2..].fill(u64::MAX);
        for (left, right) in [(all_ones, all_ones), (halves, all_ones), (all_ones, halves)] {
            assert_eq!(wide_product(&left, &right), schoolbook_product(&left, &right));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn karatsuba_matches_schoolbook(
            left in proptest::collection::vec(any::<u64>(), LIMBS),
            right in proptest::collection::vec(any::<u64>(), LIMBS),
            mask in any::<u64>(),
        ) {
            // Zero some limbs (by the mask's bits) so that differences of either
            // sign and zero halves occur.
            let mut left = limbs(left);
            let mut right = limbs(right);
            for (index, limb) in left.iter_mut().chain(right.iter_mut()).enumerate() {
                if mask >> (index % 64) & 1 == 1 && index % 3 == 0 {
                    *limb = 0;
                }
            }
            prop_assert_eq!(wide_product(&left, &right), schoolbook_product(&left, &right));
        }
    }
}
