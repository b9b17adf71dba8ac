//! The engine's narrow interface: every source of blocks (the import
//! reader, peers, an RPC `submitblock`) offers them here, and every reader
//! goes through a [`ChainReader`](super::reader::ChainReader).
//!
//! - [`Chainstate::offer_headers`]: headers first (from a peer's `headers`
//!   message or the headers-first pass of an import); indexed when they pass
//!   the header checks, so the best header, `-assumevalid` and the download
//!   window are known before the blocks come.
//! - [`Chainstate::offer_block`]: a block parsed once by its source
//!   ([`PreparedBlock`]: bytes, view, hash, txids, the `CheckBlock`
//!   verdict), accepted, then the chain is advanced as far as it makes
//!   possible. Its verdict comes back as the [`AcceptOutcome`] (known at
//!   once: a header or `CheckBlock` failure, an unknown parent) and as
//!   [`ChainEvent`](super::ChainEvent)s for what connecting finds later
//!   (`BlockInvalid` with Core's reject reason, `TipUpdated`): the source
//!   keeps the hashes it offered to learn which were its own.
//! - Once a stream of blocks ends, [`Chainstate::activate_best_chain`]
//!   settles every verdict and reaches the fixed point.
//! - Between blocks, [`Chainstate::serve_reads`] answers the queries of
//!   other threads; an idle engine waits for them with
//!   [`Chainstate::wait_and_serve_reads`].

use ibex_primitives::Header;

use super::accept::AcceptOutcome;
use super::Chainstate;
use crate::error::ChainstateError;
use crate::prepared::PreparedBlock;

pub use crate::block_source::BlockSource;

impl Chainstate {
    /// Offers a block from `source`: accepts it and, if it was new, moves
    /// the tip towards the best chain, leaving the last blocks' scripts
    /// running (see [`Chainstate::advance_best_chain`]; from a file, only
    /// along the best header's chain); then answers the
    /// reads waiting. A block from a peer or a local submission is written
    /// to the block files when accepted; one from a file is not written
    /// again when it carries its position.
    pub fn offer_block(
        &mut self,
        block: PreparedBlock,
        source: BlockSource,
    ) -> Result<AcceptOutcome, ChainstateError> {
        // A block from the network has no position of its own: a source
        // that claims one for it is a broken invariant, not a pass.
        assert!(
            source == BlockSource::File || block.position.is_none(),
            "only a block read from a file has a file position"
        );
        let outcome = match source {
            BlockSource::File => self.accept_block(block)?,
            BlockSource::Peer(_) | BlockSource::Local => self.process_new_block(block)?,
        };
        if let AcceptOutcome::Accepted(_) = outcome {
            self.publish_headers();
            match source {
                // Core's `LoadExternalBlockFile` activates nothing per
                // block: only the best header's chain, which its import
                // ends up connecting, is followed meanwhile.
                BlockSource::File => self.advance_along_best_header()?,
                // Core's `ProcessNewBlock` activates after each block.
                BlockSource::Peer(_) | BlockSource::Local => self.advance_best_chain()?,
            }
        }
        self.serve_reads()?;
        Ok(outcome)
    }

    /// Offers headers (in any order): those that connect to the index and
    /// pass the header checks are indexed. Returns how many were added.
    pub fn offer_headers(&mut self, headers: &[Header]) -> Result<usize, ChainstateError> {
        let added = self.accept_headers(headers)?;
        if added > 0 {
            self.publish_headers();
        }
        Ok(added)
    }
}
