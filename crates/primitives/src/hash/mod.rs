//! SHA-256 based hashes: double SHA-256 (txid, wtxid, block hash, merkle nodes)
//! and the 32-byte hash newtypes.
//!
//! Napkin math: hashing is the bulk of parse + txid + merkle. `sha2` detects
//! SHA-NI at run time (about 1.75 GB/s here, 0.57 ns/byte), so the ~1 MB of a
//! full block costs ~0.6 ms for its txids one at a time, ~0.36 ms two at a
//! time ([`sha256_each`]). The second SHA-256 of a double hash
//! always hashes 32 bytes, one compression: [`sha256d`] feeds it straight to the
//! compression function with a precomputed padding instead of going through the
//! buffering hasher. Merkle nodes hash exactly 64 bytes: [`sha256d_64`] runs the
//! three compressions (data, constant padding block, second hash) directly.
//!
//! Batches: [`sha256d_64_pair`] hashes two merkle nodes at once,
//! [`sha256_each`] the first hash of a block's transactions (txids, wtxids)
//! and [`sha256_each_32_in_place`] the second hash of many txids, two at a
//! time with interleaved SHA-NI where the CPU has it (`sha_ni`, the crate's
//! only `unsafe` code) and the single-message `sha2` path otherwise.

#[cfg(target_arch = "x86_64")]
mod sha_ni;

use sha2::digest::generic_array::GenericArray;
use sha2::{Digest, Sha256};

/// SHA-256's initial state (for callers that run the compression
/// function themselves, as a grinder keeping a midstate does).
pub const SHA256_INITIAL_STATE: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// The padding block that follows exactly 64 bytes of message: 0x80, zeros, and
/// the bit length 512 big-endian.
const PADDING_AFTER_64_BYTES: [u8; 64] = {
    let mut block = [0u8; 64];
    block[0] = 0x80;
    block[62] = 0x02;
    block
};

fn state_to_bytes(state: &[u32; 8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

/// SHA-256 of exactly 32 bytes, as one compression.
#[inline]
pub(crate) fn sha256_of_32(digest: &[u8; 32]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(digest);
    block[32] = 0x80;
    block[62] = 0x01; // 256 bits
    let mut state = SHA256_INITIAL_STATE;
    sha2::compress256(&mut state, &[GenericArray::from(block)]);
    state_to_bytes(&state)
}

/// SHA-256 of `data`.
#[inline]
pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Double SHA-256 of `data`.
#[inline]
pub fn sha256d(data: &[u8]) -> [u8; 32] {
    sha256_of_32(&sha256(data))
}

/// Double SHA-256 of the concatenation of `parts`, without concatenating them.
#[inline]
pub fn sha256d_parts(parts: &[&[u8]]) -> [u8; 32] {
    sha256_of_32(&sha256_parts(parts))
}

/// Double SHA-256 of 64 bytes (a merkle node from its two children).
#[inline]
pub fn sha256d_64(data: &[u8; 64]) -> [u8; 32] {
    let mut state = SHA256_INITIAL_STATE;
    sha2::compress256(
        &mut state,
        &[GenericArray::from(*data), GenericArray::from(PADDING_AFTER_64_BYTES)],
    );
    sha256_of_32(&state_to_bytes(&state))
}

/// Double SHA-256 of two independent 64-byte inputs (two merkle nodes): the same
/// as [`sha256d_64`] on each, computed together with interleaved SHA-NI when the
/// CPU has it.
#[inline]
pub fn sha256d_64_pair(first: &[u8; 64], second: &[u8; 64]) -> [[u8; 32]; 2] {
    #[cfg(target_arch = "x86_64")]
    if let Some(hashes) = sha_ni::sha256d_64_pair(first, second) {
        return hashes;
    }
    [sha256d_64(first), sha256d_64(second)]
}

/// Replaces each 32-byte value with its SHA-256 (the second hash of a batch of
/// double hashes), two at a time with interleaved SHA-NI when the CPU has it.
pub fn sha256_each_32_in_place(values: &mut [[u8; 32]]) {
    let mut pairs = values.chunks_exact_mut(2);
    for pair in &mut pairs {
        if let [first, second] = pair {
            [*first, *second] = sha256_32_pair(first, second);
        }
    }
    for value in pairs.into_remainder() {
        *value = sha256_of_32(value);
    }
}

#[inline]
fn sha256_32_pair(first: &[u8; 32], second: &[u8; 32]) -> [[u8; 32]; 2] {
    #[cfg(target_arch = "x86_64")]
    if let Some(hashes) = sha_ni::sha256_32_pair(first, second) {
        return hashes;
    }
    [sha256_of_32(first), sha256_of_32(second)]
}

/// The state after one compression of `block` from `start` (a message
/// whose first blocks gave `start`), as the digest's bytes when `block`
/// is the message's last, padded.
#[inline]
pub fn compress_from(start: &[u32; 8], block: &[u8; 64]) -> [u8; 32] {
    let mut state = *start;
    sha2::compress256(&mut state, &[GenericArray::from(*block)]);
    state_to_bytes(&state)
}

/// [`compress_from`] of two blocks from the same `start`, together with
/// interleaved SHA-NI when the CPU has it.
#[inline]
pub fn compress_pair_from(start: &[u32; 8], blocks: [&[u8; 64]; 2]) -> [[u8; 32]; 2] {
    #[cfg(target_arch = "x86_64")]
    if let Some(digests) = sha_ni::compress_pair_from(start, blocks[0], blocks[1]) {
        return digests;
    }
    [compress_from(start, blocks[0]), compress_from(start, blocks[1])]
}

/// SHA-256 of each message (the concatenation of its three parts, any of
/// them empty) into `digests`, one each in the same order: two messages at
/// a time with interleaved SHA-NI where the CPU has it (`sha_ni::stream`),
/// one at a time with `sha2` otherwise. Panics when the lengths differ.
pub fn sha256_each(messages: &[[&[u8]; 3]], digests: &mut [[u8; 32]]) {
    assert_eq!(messages.len(), digests.len(), "one digest per message");
    #[cfg(target_arch = "x86_64")]
    if sha_ni::sha256_each(messages, digests) {
        return;
    }
    for (parts, digest) in messages.iter().zip(digests) {
        *digest = sha256_parts(parts);
    }
}

/// SHA-256 of the concatenation of `parts`, without concatenating them.
#[inline]
pub fn sha256_parts(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// An incremental double SHA-256, for data produced piece by piece.
#[derive(Clone, Default)]
pub struct Sha256dWriter {
    inner: Sha256,
}

impl Sha256dWriter {
    /// An empty hasher.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes.
    #[inline]
    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
    }

    /// The double SHA-256 of everything added.
    pub fn finalize(self) -> [u8; 32] {
        sha256_of_32(&self.inner.finalize().into())
    }
}

macro_rules! hash_newtype {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        /// Stored in internal byte order; displayed reversed, as Bitcoin does.
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub [u8; 32]);

        impl $name {
            /// All zeros.
            pub const ZERO: Self = Self([0; 32]);

            /// The bytes in internal order.
            #[inline]
            pub const fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }

            /// The reversed-hex display form.
            pub fn to_hex(&self) -> String {
                let mut reversed = self.0;
                reversed.reverse();
                crate::hex::encode(&reversed)
            }

            /// Parses the reversed-hex display form.
            pub fn from_hex(text: &str) -> Result<Self, crate::hex::HexError> {
                let mut bytes = crate::hex::decode_array::<32>(text)?;
                bytes.reverse();
                Ok(Self(bytes))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(&self.to_hex())
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(formatter, "{}({})", stringify!($name), self.to_hex())
            }
        }

        impl std::str::FromStr for $name {
            type Err = crate::hex::HexError;
            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::from_hex(text)
            }
        }
    };
}

hash_newtype!(
    /// A 32-byte hash with no more specific meaning (a merkle node, a commitment).
    Hash256
);
hash_newtype!(
    /// A transaction id: double SHA-256 of the transaction without witness data.
    Txid
);
hash_newtype!(
    /// A witness transaction id: double SHA-256 of the full serialisation.
    Wtxid
);
hash_newtype!(
    /// A block hash: double SHA-256 of the 80-byte header.
    BlockHash
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_paths_agree_with_the_plain_hasher() {
        let data: Vec<u8> = (0..64u8).collect();
        let plain: [u8; 32] = Sha256::digest(Sha256::digest(&data)).into();
        assert_eq!(sha256d(&data), plain);
        let array: [u8; 64] = data.clone().try_into().unwrap();
        assert_eq!(sha256d_64(&array), plain);
        assert_eq!(sha256d_parts(&[&data[..10], &data[10..]]), plain);
        let mut writer = Sha256dWriter::new();
        writer.update(&data[..3]);
        writer.update(&data[3..]);
        assert_eq!(writer.finalize(), plain);
    }

    /// The plain two-pass double SHA-256, the reference for the fast paths.
    fn reference_sha256d(data: &[u8]) -> [u8; 32] {
        Sha256::digest(Sha256::digest(data)).into()
    }

    fn edge_case_blocks() -> Vec<[u8; 64]> {
        let mut counting = [0u8; 64];
        for (index, byte) in counting.iter_mut().enumerate() {
            *byte = index as u8;
        }
        let mut single_bit = [0u8; 64];
        single_bit[63] = 1;
        vec![[0; 64], [0xff; 64], [0x80; 64], counting, single_bit, PADDING_AFTER_64_BYTES]
    }

    #[test]
    fn pair_of_64_byte_double_hashes_matches_on_edge_cases() {
        let blocks = edge_case_blocks();
        for first in &blocks {
            for second in &blocks {
                let expected = [reference_sha256d(first), reference_sha256d(second)];
                assert_eq!(sha256d_64_pair(first, second), expected);
                assert_eq!(expected, [sha256d_64(first), sha256d_64(second)]);
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn sha_ni_paths_run_and_agree_when_the_cpu_has_them() {
        let blocks = edge_case_blocks();
        let pair = sha_ni::sha256d_64_pair(&blocks[3], &blocks[1]);
        let digests = sha_ni::sha256_32_pair(&[0x11; 32], &[0; 32]);
        if !sha_ni::available() {
            assert_eq!((pair, digests), (None, None));
            return;
        }
        assert_eq!(pair, Some([reference_sha256d(&blocks[3]), reference_sha256d(&blocks[1])]));
        let plain = |data: &[u8]| -> [u8; 32] { Sha256::digest(data).into() };
        assert_eq!(digests, Some([plain(&[0x11; 32]), plain(&[0; 32])]));
    }

    #[test]
    fn second_hashes_in_place_match_for_every_small_count() {
        for count in 0..7usize {
            let values: Vec<[u8; 32]> = (0..count).map(|index| [index as u8 * 37; 32]).collect();
            let mut hashed = values.clone();
            sha256_each_32_in_place(&mut hashed);
            let expected: Vec<[u8; 32]> =
                values.iter().map(|value| Sha256::digest(value).into()).collect();
            assert_eq!(hashed, expected, "count {count}");
        }
    }

    /// Hashes `messages` with [`sha256_each`] and with `sha2` on each
    /// concatenation.
    fn each_and_reference(messages: &[[&[u8]; 3]]) -> (Vec<[u8; 32]>, Vec<[u8; 32]>) {
        let mut digests = vec![[0xee; 32]; messages.len()];
        sha256_each(messages, &mut digests);
        let expected = messages.iter().map(|parts| Sha256::digest(parts.concat()).into()).collect();
        (digests, expected)
    }

    #[test]
    fn each_message_hashes_as_alone_across_padding_edges_and_lane_changes() {
        // Every length up to three blocks and a few more, in order: each
        // padding case (the length in the last data block or a block of
        // its own, a message ending on a block boundary), and lanes that
        // end at different times and take the next message while the
        // other goes on.
        let data: Vec<u8> = (0..2_000u32).map(|index| (index * 7 + index / 13) as u8).collect();
        let lengths: Vec<usize> = (0..=200).chain([255, 256, 257, 1_000, 1_999]).collect();
        let whole: Vec<[&[u8]; 3]> =
            lengths.iter().map(|&length| [&data[..length], &[], &[]]).collect();
        let (digests, expected) = each_and_reference(&whole);
        assert_eq!(digests, expected);
        // The same bytes in three slices, split inside and across blocks.
        let split: Vec<[&[u8]; 3]> = lengths
            .iter()
            .map(|&length| {
                let (first, rest) = data[..length].split_at(length / 3);
                let (second, third) = rest.split_at(rest.len() / 2);
                [first, second, third]
            })
            .collect();
        let (digests, _) = each_and_reference(&split);
        assert_eq!(digests, expected);
        for count in 0..4 {
            let (digests, expected) = each_and_reference(&whole[..count]);
            assert_eq!(digests, expected, "{count} messages");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        #[test]
        fn each_message_in_parts_matches_its_concatenation(
            messages in proptest::collection::vec(
                (proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
                 proptest::prelude::any::<u16>(), proptest::prelude::any::<u16>()),
                0..12,
            ),
        ) {
            let parts: Vec<[&[u8]; 3]> = messages
                .iter()
                .map(|(bytes, first_cut, second_cut)| {
                    let first = usize::from(*first_cut) % (bytes.len() + 1);
                    let second = first + usize::from(*second_cut) % (bytes.len() - first + 1);
                    [&bytes[..first], &bytes[first..second], &bytes[second..]]
                })
                .collect();
            let (digests, expected) = each_and_reference(&parts);
            proptest::prop_assert_eq!(digests, expected);
        }

        #[test]
        fn pair_of_64_byte_double_hashes_matches_single(
            first in proptest::array::uniform32(proptest::prelude::any::<u16>()),
            second in proptest::array::uniform32(proptest::prelude::any::<u16>()),
        ) {
            let to_bytes = |words: [u16; 32]| -> [u8; 64] {
                let mut bytes = [0u8; 64];
                for (chunk, word) in bytes.chunks_exact_mut(2).zip(words) {
                    chunk.copy_from_slice(&word.to_le_bytes());
                }
                bytes
            };
            let (first, second) = (to_bytes(first), to_bytes(second));
            let expected = [reference_sha256d(&first), reference_sha256d(&second)];
            proptest::prop_assert_eq!(sha256d_64_pair(&first, &second), expected);
            proptest::prop_assert_eq!([sha256d_64(&first), sha256d_64(&second)], expected);
        }

        #[test]
        fn second_hashes_in_place_match_single(
            values in proptest::collection::vec(proptest::prelude::any::<[u8; 32]>(), 0..9),
        ) {
            let mut hashed = values.clone();
            sha256_each_32_in_place(&mut hashed);
            let expected: Vec<[u8; 32]> =
                values.iter().map(|value| Sha256::digest(value).into()).collect();
            proptest::prop_assert_eq!(hashed, expected);
        }
    }

    #[test]
    fn known_double_sha256_of_empty_input() {
        assert_eq!(
            crate::hex::encode(&sha256d(b"")),
            "5df6e0e2761359d30a8275058e299fcc0381534545f55cf43e41983f5d4c9456"
        );
    }

    #[test]
    fn display_is_reversed() {
        let mut bytes = [0u8; 32];
        bytes[0] = 0xab;
        let hash = Txid(bytes);
        assert!(hash.to_hex().ends_with("ab"));
        assert_eq!(Txid::from_hex(&hash.to_hex()), Ok(hash));
    }
}
