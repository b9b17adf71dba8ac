//! Numbers below 2^3072, multiplied modulo the MuHash prime `2^3072 - 1103717`.
//!
//! The prime is the largest 3072-bit safe prime; its special form makes reduction
//! cheap: `2^3072 ≡ 1103717 (mod p)`, so the high half of a 6144-bit product is
//! folded into the low half with one 64×64-bit multiply per limb instead of a
//! division.

/// Limbs of 64 bits in a 3072-bit number.
pub(crate) const LIMBS: usize = 48;
/// Bytes in a 3072-bit number.
pub const NUMBER_BYTES: usize = 384;
/// `2^3072 - p`: the modulus is `2^3072 - PRIME_DIFFERENCE`.
pub(crate) const PRIME_DIFFERENCE: u64 = 1_103_717;

const _: () = assert!(LIMBS * 8 == NUMBER_BYTES);

/// A number in `0..2^3072` as little-endian 64-bit limbs. Results of
/// [`Num3072::multiply`] are always fully reduced (below the modulus); numbers
/// made from bytes may not be, which every operation accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Num3072 {
    pub(crate) limbs: [u64; LIMBS],
}

impl Num3072 {
    /// The number 1.
    pub(crate) const ONE: Num3072 = {
        let mut limbs = [0u64; LIMBS];
        limbs[0] = 1;
        Num3072 { limbs }
    };

    /// The modulus `2^3072 - 1103717` itself (as a number below 2^3072).
    #[cfg(test)]
    pub(crate) const MODULUS: Num3072 = {
        let mut limbs = [u64::MAX; LIMBS];
        limbs[0] = u64::MAX - PRIME_DIFFERENCE + 1;
        Num3072 { limbs }
    };

    /// Reads 384 little-endian bytes.
    pub(crate) fn from_le_bytes(bytes: &[u8; NUMBER_BYTES]) -> Num3072 {
        let mut limbs = [0u64; LIMBS];
        for (limb, chunk) in limbs.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            *limb = u64::from_le_bytes(word);
        }
        Num3072 { limbs }
    }

    /// Writes 384 little-endian bytes.
    pub(crate) fn to_le_bytes(self) -> [u8; NUMBER_BYTES] {
        let mut bytes = [0u8; NUMBER_BYTES];
        for (chunk, limb) in bytes.chunks_exact_mut(8).zip(self.limbs.iter()) {
            chunk.copy_from_slice(&limb.to_le_bytes());
        }
        bytes
    }

    /// Whether the number is at least the modulus (only possible for numbers made
    /// from bytes, or in the middle of a reduction).
    pub(crate) fn is_at_least_modulus(&self) -> bool {
        let mut limbs = self.limbs.iter();
        let lowest_high_enough = limbs.next().is_some_and(|&low| low > u64::MAX - PRIME_DIFFERENCE);
        lowest_high_enough && limbs.all(|&limb| limb == u64::MAX)
    }

    /// Adds a single limb; returns whether it carried out of bit 3072.
    fn add_limb(&mut self, value: u64) -> bool {
        let mut carry = value;
        for limb in self.limbs.iter_mut() {
            let (sum, overflow) = limb.overflowing_add(carry);
            *limb = sum;
            if !overflow {
                return false;
            }
            carry = 1;
        }
        true
    }

    /// Adds `value * 2^3072` (that is, `value * 1103717` modulo p) and brings the
    /// result below the modulus.
    fn fold_and_reduce(&mut self, high: u64) {
        // `high` is the carry of a sum of `high_limb * 1103717` terms, so it is at
        // most 1103717 and `high * 1103717` stays below 2^42.
        debug_assert!(high <= PRIME_DIFFERENCE);
        let mut pending = high.wrapping_mul(PRIME_DIFFERENCE);
        // A carry out of bit 3072 is worth 1103717 again. After one wrap the number
        // is smaller than `pending`, so the second addition cannot carry: the loop
        // runs at most twice.
        for _ in 0..2 {
            if pending == 0 || !self.add_limb(pending) {
                break;
            }
            pending = PRIME_DIFFERENCE;
        }
        self.reduce_below_modulus();
    }

    /// Subtracts the modulus once if the number is at least the modulus.
    pub(crate) fn reduce_below_modulus(&mut self) {
        if self.is_at_least_modulus() {
            // n - p = n + 1103717 - 2^3072: the carry out of bit 3072 is dropped.
            let carried = self.add_limb(PRIME_DIFFERENCE);
            debug_assert!(carried);
        }
    }

    /// `self = self * other mod p`, fully reduced. Either input may be any number
    /// below 2^3072.
    pub(crate) fn multiply(&mut self, other: &Num3072) {
        let product = super::product::wide_product(&self.limbs, &other.limbs);
        let (low, high) = product.split_at(LIMBS);
        // low + high * 2^3072 ≡ low + high * 1103717.
        let mut carry = 0u64;
        for ((out, &low_limb), &high_limb) in self.limbs.iter_mut().zip(low).zip(high) {
            let wide = u128::from(high_limb) * u128::from(PRIME_DIFFERENCE)
                + u128::from(low_limb)
                + u128::from(carry);
            *out = wide as u64;
            carry = (wide >> 64) as u64;
        }
        self.fold_and_reduce(carry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(value: u64) -> Num3072 {
        let mut number = Num3072 { limbs: [0; LIMBS] };
        number.limbs[0] = value;
        number
    }

    #[test]
    fn small_products_are_exact() {
        let mut number = small(u64::MAX);
        number.multiply(&small(u64::MAX));
        assert_eq!(number.limbs[0], 1);
        assert_eq!(number.limbs[1], u64::MAX - 1);
        assert!(number.limbs[2..].iter().all(|&limb| limb == 0));
    }

    #[test]
    fn modulus_minus_one_squared_is_one() {
        // (p - 1)^2 = p^2 - 2p + 1 ≡ 1.
        let mut minus_one = Num3072::MODULUS;
        minus_one.limbs[0] -= 1;
        let mut square = minus_one;
        square.multiply(&minus_one);
        assert!(square == Num3072::ONE);
    }

    #[test]
    fn unreduced_inputs_are_reduced() {
        // 2^3072 - 1 ≡ 1103716, and 1103716 * 1 must come out reduced.
        let all_ones = Num3072 { limbs: [u64::MAX; LIMBS] };
        let mut number = all_ones;
        number.multiply(&Num3072::ONE);
        assert!(number == small(PRIME_DIFFERENCE - 1));
        let mut modulus = Num3072::MODULUS;
        modulus.multiply(&Num3072::ONE);
        assert!(modulus == small(0));
    }

    #[test]
    fn bytes_round_trip() {
        let mut bytes = [0u8; NUMBER_BYTES];
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = index as u8;
        }
        assert_eq!(Num3072::from_le_bytes(&bytes).to_le_bytes(), bytes);
        assert_eq!(Num3072::ONE.to_le_bytes()[0], 1);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Any 3072-bit number, biased towards the edges: small, near the modulus
    /// and above it.
    fn any_number() -> impl Strategy<Value = Num3072> {
        (proptest::collection::vec(any::<u64>(), LIMBS), 0..4u8).prop_map(|(limbs, shape)| {
            let mut number = Num3072 { limbs: [0; LIMBS] };
            number.limbs.copy_from_slice(&limbs);
            match shape {
                0 => number.limbs[1..].fill(0),
                1 => number.limbs[1..].fill(u64::MAX),
                _ => {}
            }
            number
        })
    }

    fn product(left: &Num3072, right: &Num3072) -> Num3072 {
        let mut result = *left;
        result.multiply(right);
        result
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn products_are_reduced_and_commute(left in any_number(), right in any_number()) {
            let forward = product(&left, &right);
            prop_assert!(!forward.is_at_least_modulus());
            prop_assert!(forward == product(&right, &left));
        }

        #[test]
        fn products_associate(a in any_number(), b in any_number(), c in any_number()) {
            prop_assert!(product(&product(&a, &b), &c) == product(&a, &product(&b, &c)));
        }

        #[test]
        fn inverses_multiply_to_one(number in any_number()) {
            let mut reduced = number;
            reduced.reduce_below_modulus();
            prop_assume!(reduced.limbs.iter().any(|&limb| limb != 0));
            let inverse = super::super::inverse::inverse(&reduced);
            prop_assert!(!inverse.is_at_least_modulus());
            prop_assert!(product(&inverse, &number) == Num3072::ONE);
        }
    }
}
