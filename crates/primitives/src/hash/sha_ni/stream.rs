//! SHA-256 of many messages of any length, two at a time on SHA-NI: the
//! first hash of every txid and wtxid of a block.
//!
//! Napkin math: a block's transactions are its bytes, so their first hashes
//! cost what the block weighs: ~1 MB of a full block (twice for a segwit
//! block, once without witnesses for the txids, once whole for the wtxids)
//! at 0.57 ns a byte single-lane, ~1.2 ms. Measured in an IBD over P2P of the
//! `utxo-heavy` chain, `sha2`'s one-message path took 17 % of the client's
//! CPU, all of it on the thread that checks each arriving block before the
//! next. Two messages interleaved fill the gaps of each one's round
//! dependency chain (module docs of [`super`]): Core's two-way merkle
//! hashing runs at ~1.7x the one-way rate on this machine kind. Measured
//! here (`cargo bench -p ibex-primitives --bench block --
//! transaction_hashes`): a block's txids 1.56-1.61x as fast as one at a
//! time, its witness root 1.5x.
//!
//! Both lanes stay busy until the last message: when one message ends, its
//! lane takes the next message while the other lane goes on, so only the
//! tail of the longest message runs alone. A message is up to three byte
//! slices hashed as their concatenation (a txid skips the marker, flag and
//! witnesses). Whole 64-byte blocks inside one slice are loaded where they
//! lie; a block that straddles slices, and the padding, go through a copy.

use core::arch::x86_64::__m128i;

use super::{block_words, compress, initial_state, state_to_bytes, State};

/// A message as byte slices hashed as their concatenation.
pub(in crate::hash) type MessageParts<'a> = [&'a [u8]; 3];

/// Where a message's next block comes from.
struct Cursor<'a> {
    parts: MessageParts<'a>,
    /// The slice being read, and how far.
    part: usize,
    offset: usize,
    /// Message length in bytes (the padding's length field is in bits).
    length_bytes: u64,
    tail: Tail,
}

/// How much of the padding was emitted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// Message bytes remain (or the 0x80 marker is still to come).
    Data,
    /// The marker went out; a block of zeros and the length is due.
    LengthBlock,
    /// Every block went out.
    Done,
}

impl<'a> Cursor<'a> {
    fn new(parts: MessageParts<'a>) -> Cursor<'a> {
        let length_bytes = parts.iter().map(|part| part.len() as u64).sum();
        Cursor { parts, part: 0, offset: 0, length_bytes, tail: Tail::Data }
    }

    /// The whole 64-byte blocks left in the slice being read (none once
    /// the padding started).
    fn whole_blocks(&self) -> &'a [[u8; 64]] {
        match (self.tail, self.parts.get(self.part)) {
            (Tail::Data, Some(part)) => as_blocks(part.get(self.offset..).unwrap_or_default()),
            _ => &[],
        }
    }

    /// Moves past `count` whole blocks of the slice being read.
    fn skip_blocks(&mut self, count: usize) {
        self.offset += count * 64;
        if self.parts.get(self.part).is_some_and(|part| self.offset >= part.len()) {
            self.part += 1;
            self.offset = 0;
        }
    }

    /// Copies message bytes into `block` from `filled` on; the new fill.
    fn copy_data(&mut self, block: &mut [u8; 64], mut filled: usize) -> usize {
        while filled < 64 && self.part < self.parts.len() {
            let rest = &self.parts[self.part][self.offset..];
            let taken = rest.len().min(64 - filled);
            block[filled..filled + taken].copy_from_slice(&rest[..taken]);
            filled += taken;
            self.offset += taken;
            if self.offset == self.parts[self.part].len() {
                self.part += 1;
                self.offset = 0;
            }
        }
        filled
    }

    /// The message's next 64-byte block, padding included; `None` after
    /// the last.
    ///
    /// Caller must have checked the CPU features (module docs of
    /// [`super`]).
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    #[inline]
    unsafe fn next_block(&mut self) -> Option<[__m128i; 4]> {
        match self.tail {
            Tail::Done => return None,
            Tail::LengthBlock => {
                let mut block = [0u8; 64];
                block[56..].copy_from_slice(&(self.length_bytes * 8).to_be_bytes());
                self.tail = Tail::Done;
                return Some(block_words(&block));
            }
            Tail::Data => {}
        }
        if let Some(whole) = self.whole_blocks().first() {
            self.skip_blocks(1);
            return Some(block_words(whole));
        }
        let mut block = [0u8; 64];
        let filled = self.copy_data(&mut block, 0);
        if filled < 64 {
            // The message ends in this block: the marker, then the length
            // here if eight bytes remain after it, else in a block of its own.
            block[filled] = 0x80;
            if filled < 56 {
                block[56..].copy_from_slice(&(self.length_bytes * 8).to_be_bytes());
                self.tail = Tail::Done;
            } else {
                self.tail = Tail::LengthBlock;
            }
        }
        Some(block_words(&block))
    }
}

/// `bytes` as whole 64-byte blocks, the rest left out (`<[u8]>::as_chunks`
/// without its Rust 1.88, above the workspace's minimum version).
fn as_blocks(bytes: &[u8]) -> &[[u8; 64]] {
    // SAFETY: `[u8; 64]` has the alignment of `u8` and no padding, and the
    // `len / 64` blocks lie within `bytes`, whose lifetime the result keeps.
    unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<[u8; 64]>(), bytes.len() / 64) }
}

/// One lane: the message it hashes (its index and cursor); its state is
/// kept beside, in the array the compression takes.
struct Lane<'a> {
    index: usize,
    cursor: Cursor<'a>,
}

/// The messages not yet started, and where the digests go.
struct Queue<'a, 'm> {
    messages: &'m [MessageParts<'a>],
    next: usize,
    digests: &'m mut [[u8; 32]],
}

impl<'a> Queue<'a, '_> {
    /// The next block of the lane in `slot`: when its message has no more,
    /// its digest (from `state`) is stored and the lane takes the next
    /// message. `None` when the slot is (left) empty.
    ///
    /// Caller must have checked the CPU features.
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    #[inline]
    unsafe fn next_block(
        &mut self,
        slot: &mut Option<Lane<'a>>,
        state: &mut State,
    ) -> Option<[__m128i; 4]> {
        loop {
            if let Some(lane) = slot.as_mut() {
                if let Some(block) = lane.cursor.next_block() {
                    return Some(block);
                }
                self.digests[lane.index] = state_to_bytes(*state);
                *slot = None;
            }
            let index = self.next;
            let parts = self.messages.get(index)?;
            self.next += 1;
            *slot = Some(Lane { index, cursor: Cursor::new(*parts) });
            *state = initial_state();
            // A message has at least one block (the padding's), so the
            // loop returns on its next turn.
        }
    }
}

/// SHA-256 of each of `messages` into `digests` (one each, same order).
///
/// Caller must have checked the CPU features (see [`super::available`]).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
pub(super) unsafe fn sha256_each_shani(messages: &[MessageParts<'_>], digests: &mut [[u8; 32]]) {
    assert_eq!(messages.len(), digests.len(), "one digest per message");
    let mut queue = Queue { messages, next: 0, digests };
    let mut lanes: [Option<Lane<'_>>; 2] = [None, None];
    let mut states = [initial_state(); 2];
    loop {
        // The common case first: both lanes inside their messages, their
        // blocks loaded where they lie, no cursor logic between them.
        if let [Some(first), Some(second)] = &mut lanes {
            let (first_blocks, second_blocks) =
                (first.cursor.whole_blocks(), second.cursor.whole_blocks());
            let count = first_blocks.len().min(second_blocks.len());
            for (first_block, second_block) in first_blocks.iter().zip(second_blocks) {
                compress(&mut states, [block_words(first_block), block_words(second_block)]);
            }
            first.cursor.skip_blocks(count);
            second.cursor.skip_blocks(count);
        }
        let [first_state, second_state] = &mut states;
        let first = queue.next_block(&mut lanes[0], first_state);
        let second = queue.next_block(&mut lanes[1], second_state);
        match (first, second) {
            (Some(first), Some(second)) => compress(&mut states, [first, second]),
            (Some(block), None) => compress_one(&mut states[0], block),
            (None, Some(block)) => compress_one(&mut states[1], block),
            (None, None) => return,
        }
    }
}

/// One compression on one lane (the other lane has no message left).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
#[inline]
unsafe fn compress_one(state: &mut State, block: [__m128i; 4]) {
    let mut one = [*state];
    compress(&mut one, [block]);
    *state = one[0];
}
