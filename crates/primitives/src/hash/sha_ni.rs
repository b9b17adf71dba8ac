//! Two independent SHA-256 computations interleaved on x86-64 SHA extensions
//! (SHA-NI): merkle nodes (double SHA-256 of 64 bytes), the second hash of
//! txids (SHA-256 of a 32-byte digest), two at a time, and the first hash of
//! a block's transactions, two streams at a time ([`stream`]).
//!
//! Why `unsafe` here, and only here: SHA-NI is reached through `core::arch`
//! intrinsics compiled for CPU features that must be checked at run time, which
//! Rust only allows in `unsafe` code. The `sha2` crate already uses SHA-NI, but
//! one message at a time, and no well-kept crate offers a multi-message
//! ("multi-way") SHA-NI API. Bitcoin Core does exactly this for merkle trees
//! (`sha256d64_x86_shani::Transform_2way`); this module is our own Rust take
//! on the technique.
//!
//! Napkin math: a compression is 32 `sha256rnds2` instructions, each waiting for
//! the previous one's result, so a single message is latency-bound (~36 ns per
//! compression here, ~116 ns per merkle node of three compressions). Two
//! independent messages interleaved fill the gaps of that dependency chain:
//! Core's merkle root costs 60.5 ns per leaf on this machine kind, about half.
//! Block 413567's 1,563 merkle nodes (4,689 compressions) and 1,557 second txid
//! hashes are ~240 us single-lane; two-way should save ~100 us of it.
//!
//! Layout: the SHA-NI round instruction keeps the eight state words in two
//! registers, `ABEF` and `CDGH` (lane 3 holds the first letter). Message words
//! are loaded big-endian, four per register, and the schedule for words 16..63
//! is computed on the fly with `sha256msg1`/`sha256msg2`. The 64-byte
//! padding block of a merkle node is the same for every node, so its schedule
//! plus the round constants is computed at compile time.
//!
//! Every entry point checks the CPU once ([`available`], cached) and returns
//! `None` without it, so callers fall back to the portable `sha2` path.
#![allow(unsafe_code)]

use core::arch::x86_64::{
    __m128i, _mm_add_epi32, _mm_alignr_epi8, _mm_loadu_si128, _mm_set_epi32, _mm_set_epi8,
    _mm_sha256msg1_epu32, _mm_sha256msg2_epu32, _mm_sha256rnds2_epu32, _mm_shuffle_epi32,
    _mm_shuffle_epi8, _mm_storeu_si128, _mm_unpackhi_epi64, _mm_unpacklo_epi64,
};
use std::sync::OnceLock;

use super::SHA256_INITIAL_STATE;

mod stream;

pub(super) use stream::MessageParts;

/// SHA-256's round constants.
const ROUND_CONSTANTS: [u32; 64] = [
    0x428a_2f98,
    0x7137_4491,
    0xb5c0_fbcf,
    0xe9b5_dba5,
    0x3956_c25b,
    0x59f1_11f1,
    0x923f_82a4,
    0xab1c_5ed5,
    0xd807_aa98,
    0x1283_5b01,
    0x2431_85be,
    0x550c_7dc3,
    0x72be_5d74,
    0x80de_b1fe,
    0x9bdc_06a7,
    0xc19b_f174,
    0xe49b_69c1,
    0xefbe_4786,
    0x0fc1_9dc6,
    0x240c_a1cc,
    0x2de9_2c6f,
    0x4a74_84aa,
    0x5cb0_a9dc,
    0x76f9_88da,
    0x983e_5152,
    0xa831_c66d,
    0xb003_27c8,
    0xbf59_7fc7,
    0xc6e0_0bf3,
    0xd5a7_9147,
    0x06ca_6351,
    0x1429_2967,
    0x27b7_0a85,
    0x2e1b_2138,
    0x4d2c_6dfc,
    0x5338_0d13,
    0x650a_7354,
    0x766a_0abb,
    0x81c2_c92e,
    0x9272_2c85,
    0xa2bf_e8a1,
    0xa81a_664b,
    0xc24b_8b70,
    0xc76c_51a3,
    0xd192_e819,
    0xd699_0624,
    0xf40e_3585,
    0x106a_a070,
    0x19a4_c116,
    0x1e37_6c08,
    0x2748_774c,
    0x34b0_bcb5,
    0x391c_0cb3,
    0x4ed8_aa4a,
    0x5b9c_ca4f,
    0x682e_6ff3,
    0x748f_82ee,
    0x78a5_636f,
    0x84c8_7814,
    0x8cc7_0208,
    0x90be_fffa,
    0xa450_6ceb,
    0xbef9_a3f7,
    0xc671_78f2,
];

/// The full message schedule of a constant block, each word plus its round
/// constant (what the round instruction consumes), computed at compile time.
const fn schedule_plus_round_constants(block: [u32; 16]) -> [u32; 64] {
    let mut words = [0u32; 64];
    let mut index = 0;
    while index < 16 {
        words[index] = block[index];
        index += 1;
    }
    while index < 64 {
        let early = words[index - 15];
        let late = words[index - 2];
        let sigma0 = early.rotate_right(7) ^ early.rotate_right(18) ^ (early >> 3);
        let sigma1 = late.rotate_right(17) ^ late.rotate_right(19) ^ (late >> 10);
        words[index] = words[index - 16]
            .wrapping_add(sigma0)
            .wrapping_add(words[index - 7])
            .wrapping_add(sigma1);
        index += 1;
    }
    index = 0;
    while index < 64 {
        words[index] = words[index].wrapping_add(ROUND_CONSTANTS[index]);
        index += 1;
    }
    words
}

/// The padding block after exactly 64 bytes of message (0x80, zeros, bit length
/// 512), as schedule plus round constants.
const PADDING_AFTER_64_BYTES_PLUS_ROUND_CONSTANTS: [u32; 64] = {
    let mut block = [0u32; 16];
    block[0] = 0x8000_0000;
    block[15] = 512;
    schedule_plus_round_constants(block)
};

/// The second half of the only block of a 32-byte message: 0x80, zeros, bit
/// length 256, as message words 8..11 and 12..15 (lane 0 first).
const PADDING_AFTER_32_BYTES: [[u32; 4]; 2] = [[0x8000_0000, 0, 0, 0], [0, 0, 0, 256]];

/// Whether this CPU has SHA-NI and the SSE levels the code below is compiled
/// for; detected once.
pub(super) fn available() -> bool {
    static DETECTED: OnceLock<bool> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        is_x86_feature_detected!("sha")
            && is_x86_feature_detected!("sse2")
            && is_x86_feature_detected!("ssse3")
            && is_x86_feature_detected!("sse4.1")
    })
}

/// Double SHA-256 of two independent 64-byte inputs, or `None` without SHA-NI.
#[inline]
pub(super) fn sha256d_64_pair(first: &[u8; 64], second: &[u8; 64]) -> Option<[[u8; 32]; 2]> {
    if !available() {
        return None;
    }
    // SAFETY: `available()` has just confirmed that this CPU supports every
    // feature `sha256d_64_pair_shani` is compiled for (sha, sse2, ssse3,
    // sse4.1); it only reads through the two array references it is given.
    Some(unsafe { sha256d_64_pair_shani(first, second) })
}

/// SHA-256 of two independent 32-byte inputs, or `None` without SHA-NI.
#[inline]
pub(super) fn sha256_32_pair(first: &[u8; 32], second: &[u8; 32]) -> Option<[[u8; 32]; 2]> {
    if !available() {
        return None;
    }
    // SAFETY: `available()` has just confirmed that this CPU supports every
    // feature `sha256_32_pair_shani` is compiled for (sha, sse2, ssse3,
    // sse4.1); it only reads through the two array references it is given.
    Some(unsafe { sha256_32_pair_shani(first, second) })
}

/// SHA-256 of each of `messages` into `digests` (one each), two messages
/// at a time; `false` without SHA-NI (nothing written).
#[inline]
pub(super) fn sha256_each(messages: &[MessageParts<'_>], digests: &mut [[u8; 32]]) -> bool {
    if !available() {
        return false;
    }
    // SAFETY: `available()` has just confirmed that this CPU supports every
    // feature `sha256_each_shani` is compiled for (sha, sse2, ssse3,
    // sse4.1); it reads only the given slices and writes only `digests`.
    unsafe { stream::sha256_each_shani(messages, digests) };
    true
}

/// One compression each of `first` and `second` from the same `start`
/// state (two messages sharing their first blocks), or `None` without
/// SHA-NI.
#[inline]
pub(super) fn compress_pair_from(
    start: &[u32; 8],
    first: &[u8; 64],
    second: &[u8; 64],
) -> Option<[[u8; 32]; 2]> {
    if !available() {
        return None;
    }
    // SAFETY: `available()` has just confirmed that this CPU supports every
    // feature `compress_pair_from_shani` is compiled for (sha, sse2, ssse3,
    // sse4.1); it only reads through the references it is given.
    Some(unsafe { compress_pair_from_shani(start, first, second) })
}

/// The eight state words as the round instruction wants them.
#[derive(Clone, Copy)]
struct State {
    abef: __m128i,
    cdgh: __m128i,
}

/// Caller must have checked the CPU features (as every function below).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn initial_state() -> State {
    let [a, b, c, d, e, f, g, h] = SHA256_INITIAL_STATE.map(|word| word as i32);
    State { abef: _mm_set_epi32(a, b, e, f), cdgh: _mm_set_epi32(c, d, g, h) }
}

/// Four message words from `bytes[OFFSET..OFFSET + 16]`, big-endian, the first
/// word in lane 0. The bounds are checked at compile time.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn load_words<const OFFSET: usize, const LENGTH: usize>(bytes: &[u8; LENGTH]) -> __m128i {
    const { assert!(OFFSET + 16 <= LENGTH) };
    let swap_each_word = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
    // SAFETY (unaligned load): `bytes` is a valid reference to LENGTH bytes and
    // OFFSET + 16 <= LENGTH, checked above.
    let words = _mm_loadu_si128(bytes.as_ptr().add(OFFSET).cast());
    _mm_shuffle_epi8(words, swap_each_word)
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn words_from_array(words: [u32; 4]) -> __m128i {
    let [w0, w1, w2, w3] = words.map(|word| word as i32);
    _mm_set_epi32(w3, w2, w1, w0)
}

/// Round constants (or schedule plus constants) for the four rounds of `group`.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn group_words(table: &[u32; 64], group: usize) -> __m128i {
    let base = 4 * (group % 16);
    words_from_array([table[base], table[base + 1], table[base + 2], table[base + 3]])
}

/// Four rounds: two `sha256rnds2`, each taking two words of `words_plus_k`.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn four_rounds(state: &mut State, words_plus_k: __m128i) {
    // After the first pair of rounds the new ABEF is in `cdgh` and the old ABEF
    // is the new CDGH, so the second call swaps the roles back.
    state.cdgh = _mm_sha256rnds2_epu32(state.cdgh, state.abef, words_plus_k);
    state.abef =
        _mm_sha256rnds2_epu32(state.abef, state.cdgh, _mm_shuffle_epi32(words_plus_k, 0x0e));
}

/// Message words 4i..4i+3 from the previous sixteen: `w[i-4]`, `w[i-3]`,
/// `w[i-2]`, `w[i-1]` (four words each).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn next_words(
    minus_four: __m128i,
    minus_three: __m128i,
    minus_two: __m128i,
    minus_one: __m128i,
) -> __m128i {
    // msg1: w[t-16] + sigma0(w[t-15]); plus w[t-7] (lanes 1..3 of w[i-2] and
    // lane 0 of w[i-1]); msg2 adds sigma1(w[t-2]).
    let partial = _mm_add_epi32(
        _mm_sha256msg1_epu32(minus_four, minus_three),
        _mm_alignr_epi8(minus_one, minus_two, 4),
    );
    _mm_sha256msg2_epu32(partial, minus_one)
}

/// Repeats `$body` for `$group` = 0..16 as literal constants, so the ring
/// indices and constant loads below fold at compile time (LLVM does not fully
/// unroll the 16-step loop by itself, and a rolled loop keeps the message ring
/// on the stack).
macro_rules! for_each_group {
    ($group:ident, $body:block) => {
        for_each_group!(@expand $group, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@expand $group:ident, $body:block, $($value:literal)*) => {
        $({
            let $group: usize = $value;
            $body
        })*
    };
}

/// One compression per lane, the lanes interleaved round by round.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn compress<const LANES: usize>(states: &mut [State; LANES], blocks: [[__m128i; 4]; LANES]) {
    let start = *states;
    let mut ring = blocks;
    for_each_group!(group, {
        let constants = group_words(&ROUND_CONSTANTS, group);
        for (state, words) in states.iter_mut().zip(ring.iter_mut()) {
            let message = if group < 4 {
                words[group]
            } else {
                let next = next_words(
                    words[group % 4],
                    words[(group + 1) % 4],
                    words[(group + 2) % 4],
                    words[(group + 3) % 4],
                );
                words[group % 4] = next;
                next
            };
            four_rounds(state, _mm_add_epi32(message, constants));
        }
    });
    add_start(states, &start);
}

/// One compression per lane of the constant block whose schedule plus round
/// constants is `table`.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn compress_constant_block<const LANES: usize>(
    states: &mut [State; LANES],
    table: &[u32; 64],
) {
    let start = *states;
    for_each_group!(group, {
        let words_plus_k = group_words(table, group);
        for state in states.iter_mut() {
            four_rounds(state, words_plus_k);
        }
    });
    add_start(states, &start);
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn add_start<const LANES: usize>(states: &mut [State; LANES], start: &[State; LANES]) {
    for (state, start) in states.iter_mut().zip(start) {
        state.abef = _mm_add_epi32(state.abef, start.abef);
        state.cdgh = _mm_add_epi32(state.cdgh, start.cdgh);
    }
}

/// The state as message words 0..3 and 4..7 (`a..d`, `e..h`, lane 0 first),
/// for hashing a digest again.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn state_as_words(state: State) -> [__m128i; 2] {
    // unpackhi gives lanes [d, c, b, a], unpacklo [h, g, f, e]; reverse lanes.
    [
        _mm_shuffle_epi32(_mm_unpackhi_epi64(state.cdgh, state.abef), 0x1b),
        _mm_shuffle_epi32(_mm_unpacklo_epi64(state.cdgh, state.abef), 0x1b),
    ]
}

/// The state as the 32-byte big-endian digest.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn state_to_bytes(state: State) -> [u8; 32] {
    // Lanes [d, c, b, a] with all 16 bytes reversed are a, b, c, d big-endian.
    let reverse_bytes = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let first = _mm_shuffle_epi8(_mm_unpackhi_epi64(state.cdgh, state.abef), reverse_bytes);
    let second = _mm_shuffle_epi8(_mm_unpacklo_epi64(state.cdgh, state.abef), reverse_bytes);
    let mut digest = [0u8; 32];
    let (first_half, second_half) = digest.split_at_mut(16);
    // SAFETY (unaligned stores): each half is a valid, exclusive 16-byte slice.
    _mm_storeu_si128(first_half.as_mut_ptr().cast(), first);
    _mm_storeu_si128(second_half.as_mut_ptr().cast(), second);
    digest
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn block_words(block: &[u8; 64]) -> [__m128i; 4] {
    [
        load_words::<0, 64>(block),
        load_words::<16, 64>(block),
        load_words::<32, 64>(block),
        load_words::<48, 64>(block),
    ]
}

/// Message block of a 32-byte message: the data then the constant padding.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn padded_32_byte_block(data: [__m128i; 2]) -> [__m128i; 4] {
    [
        data[0],
        data[1],
        words_from_array(PADDING_AFTER_32_BYTES[0]),
        words_from_array(PADDING_AFTER_32_BYTES[1]),
    ]
}

/// Caller must have checked the CPU features (see [`available`]).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn compress_pair_from_shani(
    start: &[u32; 8],
    first: &[u8; 64],
    second: &[u8; 64],
) -> [[u8; 32]; 2] {
    let [a, b, c, d, e, f, g, h] = start.map(|word| word as i32);
    let state = State { abef: _mm_set_epi32(a, b, e, f), cdgh: _mm_set_epi32(c, d, g, h) };
    let mut states = [state; 2];
    compress(&mut states, [block_words(first), block_words(second)]);
    [state_to_bytes(states[0]), state_to_bytes(states[1])]
}

/// Caller must have checked the CPU features (see [`available`]).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn sha256d_64_pair_shani(first: &[u8; 64], second: &[u8; 64]) -> [[u8; 32]; 2] {
    let mut states = [initial_state(); 2];
    compress(&mut states, [block_words(first), block_words(second)]);
    compress_constant_block(&mut states, &PADDING_AFTER_64_BYTES_PLUS_ROUND_CONSTANTS);
    let blocks = [
        padded_32_byte_block(state_as_words(states[0])),
        padded_32_byte_block(state_as_words(states[1])),
    ];
    let mut outer = [initial_state(); 2];
    compress(&mut outer, blocks);
    [state_to_bytes(outer[0]), state_to_bytes(outer[1])]
}

/// Caller must have checked the CPU features (see [`available`]).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
unsafe fn sha256_32_pair_shani(first: &[u8; 32], second: &[u8; 32]) -> [[u8; 32]; 2] {
    let mut states = [initial_state(); 2];
    compress(
        &mut states,
        [
            padded_32_byte_block([load_words::<0, 32>(first), load_words::<16, 32>(first)]),
            padded_32_byte_block([load_words::<0, 32>(second), load_words::<16, 32>(second)]),
        ],
    );
    [state_to_bytes(states[0]), state_to_bytes(states[1])]
}
