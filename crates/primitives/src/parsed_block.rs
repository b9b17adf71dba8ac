//! A block parsed once and owned: its bytes, the [`BlockView`] over them
//! (every transaction's layout, inputs and outputs), its hash and its
//! transaction ids, built once by whoever receives the block (the file
//! reader, the network code) and then read by every stage without walking
//! the bytes again.
//!
//! # Why a self-referential cell
//! A [`BlockView`] borrows the bytes it describes. Holding both in one
//! value that moves between threads (reader, connecting thread, script
//! threads) needs either offsets that every accessor turns back into
//! slices (a change of every input and output accessor on the script hot
//! path) or a view that borrows from a heap buffer owned by the same
//! value. The `self_cell` crate provides the latter with a safe API (the
//! buffer never moves while the view exists); it is small, has no
//! dependencies and is widely used, so it is preferred to hand-written
//! `unsafe`.
//!
//! # Napkin math
//! Parsing a 1 MB block costs 224-258 us (fresh vectors; ~50 us with
//! reused [`BlockBuffers`]); the connecting thread has ~4 ms per block
//! with scripts skipped, and parsing each block four more times (accept,
//! prefetch, connect, script job) would take ~1 ms, a quarter of its time.
//! [`ParsedBlock::view`] is a reference: 0 us.

use crate::block::{BlockBuffers, BlockView};
use crate::error::BlockDecodeError;
use crate::hash::{BlockHash, Txid};
use crate::header::Header;

self_cell::self_cell!(
    /// The bytes and the view borrowing them.
    struct BlockCell {
        owner: Vec<u8>,
        #[covariant]
        dependent: BlockView,
    }
    impl {Debug}
);

/// A block's bytes with their parse, hash and transaction ids.
#[derive(Debug)]
pub struct ParsedBlock {
    cell: BlockCell,
    hash: BlockHash,
    txids: Vec<Txid>,
}

impl ParsedBlock {
    /// Parses `bytes` (a whole block, nothing after it), taking the vectors
    /// of `buffers` (left empty; see [`ParsedBlock::into_parts`] to give
    /// them back), and computes the hash and the transaction ids.
    pub fn parse(
        bytes: Vec<u8>,
        buffers: &mut BlockBuffers,
    ) -> Result<ParsedBlock, BlockDecodeError> {
        let taken = std::mem::take(buffers);
        let cell = BlockCell::try_new(bytes, |bytes| BlockView::parse_with_buffers(bytes, taken))?;
        let view = cell.borrow_dependent();
        let hash = view.block_hash();
        let txids = view.txids();
        Ok(ParsedBlock { cell, hash, txids })
    }

    /// The parsed block (no work: the parse is kept).
    #[inline]
    pub fn view(&self) -> &BlockView<'_> {
        self.cell.borrow_dependent()
    }

    /// The serialisation.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        self.cell.borrow_owner()
    }

    /// The header.
    #[inline]
    pub fn header(&self) -> &Header {
        self.view().header()
    }

    /// The block hash.
    #[inline]
    pub fn hash(&self) -> BlockHash {
        self.hash
    }

    /// The transaction ids, in block order.
    #[inline]
    pub fn txids(&self) -> &[Txid] {
        &self.txids
    }

    /// Gives back the bytes, and the view's vectors for the next parse.
    pub fn into_parts(self) -> (Vec<u8>, BlockBuffers) {
        let mut cell = self.cell;
        let buffers = cell.with_dependent_mut(|_, view| view.take_buffers());
        (cell.into_owner(), buffers)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::owned::Block;

    fn sample_block() -> Vec<u8> {
        crate::params::Params::regtest().genesis.encode()
    }

    fn assert_send_and_sync<T: Send + Sync>() {}

    #[test]
    fn parses_once_and_answers_as_a_fresh_parse() {
        assert_send_and_sync::<ParsedBlock>();
        let bytes = sample_block();
        let mut buffers = BlockBuffers::default();
        let parsed = ParsedBlock::parse(bytes.clone(), &mut buffers).unwrap();
        let fresh = BlockView::parse(&bytes).unwrap();
        assert_eq!(parsed.bytes(), &bytes[..]);
        assert_eq!(parsed.hash(), fresh.block_hash());
        assert_eq!(parsed.txids(), &fresh.txids()[..]);
        assert_eq!(parsed.view().transaction_count(), fresh.transaction_count());
        assert_eq!(parsed.view().input_count(), fresh.input_count());
        assert_eq!(Block::decode(parsed.bytes()).unwrap().block_hash(), parsed.hash());
        let (returned, buffers) = parsed.into_parts();
        assert_eq!(returned, bytes);
        // The vectors come back, empty, for the next block.
        let mut buffers = buffers;
        let again = ParsedBlock::parse(returned, &mut buffers).unwrap();
        assert_eq!(again.hash(), fresh.block_hash());
    }

    #[test]
    fn undecodable_bytes_are_an_error() {
        let mut bytes = sample_block();
        bytes.push(0);
        let mut buffers = BlockBuffers::default();
        assert!(matches!(
            ParsedBlock::parse(bytes, &mut buffers),
            Err(BlockDecodeError::TrailingBytes { .. })
        ));
        assert!(ParsedBlock::parse(vec![1, 2, 3], &mut buffers).is_err());
    }
}
